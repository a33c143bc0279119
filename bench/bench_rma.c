/*
 * One-sided MPI (MPI-3 RMA and shared-memory windows) against the
 * two-sided path the MPI backend uses, on the pattern where they differ
 * most: one exchange in which every rank sends the j-th of its P chunks
 * of N bytes to rank j (an all-to-all; the single-exchange cases of
 * bench_redist).  Five ways, side by side in one run, each checked
 * element by element before its time counts:
 *
 *   alltoall  MPI_Alltoall on the caller's buffers (two-sided: what
 *             redist_mpi_execute and a prepared run call for such a step)
 *   put       MPI_Put of each chunk into a window over the caller's dst
 *             (MPI_Win_create once, outside the timing, as a prepared
 *             object would; MPI_Win_fence around each run)
 *   shm       the destination is a shared window (MPI_Win_allocate_shared):
 *             each rank stores its chunks straight into the peers'
 *             segments (MPI_Win_shared_query, memcpy), fences around; the
 *             caller's dst would have to be that window
 *   shm+copy  the same, then each rank copies its segment out to the
 *             caller's dst (a backend on the caller's own buffers)
 *   memcpy    one local copy of N bytes (the roofline)
 *
 *   mpirun -np P bench_rma [--reps R] [--mib N ...]
 *
 * Each run starts after a barrier; its time is the slowest rank's; the
 * table gives, per size and way, the median over R runs, the spread
 * (p90 / median), the bandwidth of the bytes a rank receives
 * (N (P-1) / P) and the ratio to alltoall.  Memory per rank: src, dst
 * and a window of N bytes each.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W_ALLTOALL, W_PUT, W_SHM, W_SHM_COPY, W_MEMCPY, W_COUNT };
static const char *const way_name[W_COUNT] = {"alltoall", "put", "shm",
                                              "shm+copy", "memcpy"};

typedef struct {
    int rank, size;
    size_t n, chunk;       /* bytes per rank, per peer */
    uint64_t *src, *dst;   /* the caller's buffers */
    uint64_t *seg;         /* this rank's segment of the shared window */
    uint64_t **peer;       /* every rank's segment, mapped here */
    MPI_Win put_win, shm_win;
} bench;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Word w of rank r's source: r * words + w (unique per byte moved). */
static void fill(bench *b)
{
    size_t words = b->n / 8;
    for (size_t w = 0; w < words; w++)
        b->src[w] = (uint64_t)b->rank * words + w;
}

/* After an exchange, chunk s of `out` is chunk `rank` of rank s's source. */
static int check(const bench *b, const uint64_t *out)
{
    size_t words = b->n / 8, cw = b->chunk / 8;
    for (int s = 0; s < b->size; s++)
        for (size_t k = 0; k < cw; k++)
            if (out[(size_t)s * cw + k] !=
                (uint64_t)s * words + (size_t)b->rank * cw + k)
                return 0;
    return 1;
}

static void run_way(bench *b, int way)
{
    int P = b->size;
    size_t c = b->chunk;
    switch (way) {
    case W_ALLTOALL:
        MPI_Alltoall(b->src, (int)c, MPI_BYTE, b->dst, (int)c, MPI_BYTE,
                     MPI_COMM_WORLD);
        break;
    case W_PUT:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, b->put_win);
        for (int k = 0; k < P; k++) {
            int j = (b->rank + k) % P; /* spread the targets */
            MPI_Put((char *)b->src + (size_t)j * c, (int)c, MPI_BYTE, j,
                    (MPI_Aint)((size_t)b->rank * c), (int)c, MPI_BYTE,
                    b->put_win);
        }
        MPI_Win_fence(MPI_MODE_NOSUCCEED, b->put_win);
        break;
    case W_SHM:
    case W_SHM_COPY:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, b->shm_win);
        for (int k = 0; k < P; k++) {
            int j = (b->rank + k) % P;
            memcpy((char *)b->peer[j] + (size_t)b->rank * c,
                   (char *)b->src + (size_t)j * c, c);
        }
        MPI_Win_fence(MPI_MODE_NOSUCCEED, b->shm_win);
        if (way == W_SHM_COPY)
            memcpy(b->dst, b->seg, b->n);
        break;
    default:
        memcpy(b->dst, b->src, b->n);
        break;
    }
}

/* The output of a way: the shared segment for shm, else dst. */
static const uint64_t *output(const bench *b, int way)
{
    return way == W_SHM ? b->seg : b->dst;
}

static int setup(bench *b, size_t n)
{
    b->n = n;
    b->chunk = n / (size_t)b->size;
    b->src = malloc(n);
    b->dst = malloc(n);
    b->peer = malloc(sizeof *b->peer * (size_t)b->size);
    int ok = b->src && b->dst && b->peer;
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        return -1;
    memset(b->dst, 0, n);
    fill(b);
    MPI_Win_create(b->dst, (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                   &b->put_win);
    MPI_Win_allocate_shared((MPI_Aint)n, 8, MPI_INFO_NULL, MPI_COMM_WORLD,
                            &b->seg, &b->shm_win);
    memset(b->seg, 0, n);
    for (int j = 0; j < b->size; j++) {
        MPI_Aint sz;
        int disp;
        MPI_Win_shared_query(b->shm_win, j, &sz, &disp, &b->peer[j]);
    }
    return 0;
}

static void teardown(bench *b)
{
    MPI_Win_free(&b->put_win);
    MPI_Win_free(&b->shm_win);
    free(b->src);
    free(b->dst);
    free(b->peer);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bench b;
    memset(&b, 0, sizeof b);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    int reps = 20;
    double mib[16] = {1, 16, 64};
    int nsizes = 3, custom = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
            if (!custom)
                nsizes = 0;
            custom = 1;
            if (nsizes < 16)
                mib[nsizes++] = atof(argv[++i]);
        } else {
            if (b.rank == 0)
                fprintf(stderr, "usage: bench_rma [--reps R] [--mib N ...]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    double *t = malloc(sizeof *t * (size_t)reps);
    int failed = 0;
    if (b.rank == 0)
        printf("ranks %d, %d runs each; time = slowest rank's, median "
               "(spread p90/median); bandwidth of the bytes a rank "
               "receives\n%10s  %-9s %10s %7s %9s %8s\n",
               b.size, reps, "MiB/rank", "way", "median ms", "spread",
               "GB/s", "vs a2a");
    for (int si = 0; si < nsizes && t; si++) {
        size_t align = 8 * (size_t)b.size;
        size_t n = (size_t)(mib[si] * 1048576.0) / align * align;
        if (n == 0 || setup(&b, n)) {
            failed = 1;
            break;
        }
        double base = 0;
        for (int w = 0; w < W_COUNT; w++) {
            /* checked once, on zeroed output, before the timed runs */
            memset(b.dst, 0, n);
            MPI_Win_fence(0, b.shm_win);
            memset(b.seg, 0, n);
            MPI_Win_fence(0, b.shm_win);
            run_way(&b, w);
            int ok = w == W_MEMCPY ? !memcmp(b.dst, b.src, n)
                                   : check(&b, output(&b, w));
            int all_ok = 0;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) {
                if (b.rank == 0)
                    printf("%10.2f  %-9s WRONG RESULT\n", n / 1048576.0,
                           way_name[w]);
                failed = 1;
                continue;
            }
            for (int r = 0; r < reps; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                run_way(&b, w);
                double dt = MPI_Wtime() - t0, mx = 0;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX,
                              MPI_COMM_WORLD);
                t[r] = mx;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            double med = t[reps / 2], p90 = t[(reps * 9) / 10 < reps
                                                  ? (reps * 9) / 10
                                                  : reps - 1];
            if (w == W_ALLTOALL)
                base = med;
            double moved = w == W_MEMCPY
                               ? (double)n
                               : (double)n * (b.size - 1) / b.size;
            if (b.rank == 0)
                printf("%10.2f  %-9s %10.3f %7.2f %9.2f %8.2f\n",
                       n / 1048576.0, way_name[w], med * 1e3, p90 / med,
                       moved / med / 1e9, med / base);
        }
        teardown(&b);
    }
    free(t);
    MPI_Finalize();
    return failed;
}
