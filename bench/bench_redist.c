/*
 * Redistribution benchmark: one redistribution, several implementations,
 * alternated in one MPI run.  Like FFTW's bench it never reports a time
 * for a result it has not checked.
 *
 *   mpirun -np D bench_redist [options] CASE...
 *
 * CASE is a spec file (a .json file of specs/; its shape is scaled to each --sizes
 * entry) or an inline case NAME:MESH:SHAPE:DTYPE:FROM:TO with the syntax
 * of `redistplan plan -` (e.g. "row2col:x=2,y=2:8192x8192:f64:x,y|:|x,y";
 * its shape is used as given).  Cases whose mesh does not have D devices
 * are skipped with a message (the driver script groups cases by D).
 *
 * IMPLEMENTATIONS (--impl, default: all that were built)
 *   redist-mpi        redist_mpi_execute, default options (whole steps
 *                     with derived datatypes, the memory-bounded executor)
 *   redist-mpi-packed the same with REDIST_MPI_PACKED (executor pack /
 *                     unpack kernels, contiguous exchanges)
 *   redist-mpi-time   redist-mpi on the plan of the time objective (default
 *                     cost model; it may use the direct `exchange` step),
 *                     only where that plan differs from the default one
 *   redist-shmem      redist_shmem_execute on symmetric src / dst (needs
 *                     --shmem: the binary calls shmem_init after MPI_Init)
 *   redist-shmem-time redist-shmem on the time objective's plan (as above)
 *   gather            gather-then-slice: MPI_Allgather of the source
 *                     blocks over the sharding axes (the whole array on
 *                     every rank; plus an in-place MPI_Allreduce over the
 *                     partial axes), then one pass cuts the target out
 *   alltoallv         direct exchange: each rank receives exactly what it
 *                     lacks from one holder (the holder that agrees with
 *                     it on the source's replicated axes): pack, one
 *                     MPI_Alltoallv, unpack (reduce for partial sources)
 *   alltoallw         the same exchange with subarray datatypes, no pack
 *                     and no buffers (not for partial sources)
 *   pdgemr2d          ScaLAPACK p?gemr2d for 2-D arrays of f32/f64/c64/
 *                     c128 whose target shards over every mesh axis (the
 *                     source from its replica 0); row-major blocks are
 *                     the column-major blocks of the transpose
 *   memcpy            roofline: every rank copies, with memcpy, the bytes
 *                     it must receive from others (bytes that change
 *                     owner), all ranks at once: one copy of the moved
 *                     data at this machine's copy bandwidth
 *
 * METHOD.  Per case: setup outside the timing (plans, contexts,
 * datatypes, counts, and the hand-written alternatives' workspaces, which
 * are allocated and touched once and reused by every timed call, as a
 * careful code does; --fresh allocates them inside each call instead).
 * redist allocates its scratch inside each call (that is the library).
 * Then `--warmup` rounds and `--reps` timed rounds; a round runs every
 * implementation once, in an order rotated by one each round.  Before
 * each run (untimed) the source block is restored from a pristine copy
 * and the destination is poisoned (0xff bytes); the run is MPI_Barrier,
 * MPI_Wtime, the call, MPI_Wtime; its time is the maximum over the ranks.
 * The page faults of each call are counted (getrusage, max over ranks;
 * median and max over the timed runs are reported; on some virtual
 * machines a first touch of fresh memory costs tens of microseconds per
 * page, printed at start).  Then one memory probe run of each
 * implementation, with every buffer it needs allocated inside the call:
 * its peak RSS (getrusage max RSS = VmHWM, reset through
 * /proc/self/clear_refs just before, after malloc_trim) above the RSS
 * before the call; and Pss (/proc/self/smaps_rollup) after it, above the
 * Pss when the case's buffers were set up: what counts for SHMEM, whose
 * symmetric heap is shared and stays mapped.
 *
 * VERIFICATION.  Every element of every rank's result is checked
 * (src/testing/pattern.h: every value identifies its global index) after the
 * first warm-up run, the last timed run and the memory probe run of each
 * implementation (memcpy excepted: it is not a redistribution).  A wrong
 * value prints the case, implementation, rank, local and global index,
 * expected and actual value, and the program exits 1 at once, or, with
 * --keep-going, after the remaining cases (the row says FAIL).
 * --corrupt IMPL flips a byte of the last rank's result of IMPL after
 * each call, to see the checker fail.

 * OUTPUT.  One line per implementation on rank 0; --csv FILE appends one
 * row per (case, implementation), header first when the file is empty.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../src/testing/pattern.h"

#ifdef BENCH_HAVE_SHMEM
#include "redist/shmem.h"
#endif

/* ------------------------------------------------------ ScaLAPACK */

#ifdef BENCH_HAVE_SCALAPACK
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *ctxt, int *usermap, int ldumap, int nprow,
                    int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow,
                     int *mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_exit(int notdone);
typedef void gemr2d_fn(const int *m, const int *n, const void *a,
                       const int *ia, const int *ja, const int *desca,
                       void *b, const int *ib, const int *jb,
                       const int *descb, const int *ictxt);
void psgemr2d_(const int *m, const int *n, const float *a, const int *ia,
               const int *ja, const int *desca, float *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia,
               const int *ja, const int *desca, double *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pcgemr2d_(const int *m, const int *n, const float *a, const int *ia,
               const int *ja, const int *desca, float *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pzgemr2d_(const int *m, const int *n, const double *a, const int *ia,
               const int *ja, const int *desca, double *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
#endif

/* ---------------------------------------------------------- global */

static int g_rank, g_size;
static int g_shmem;        /* shmem_init was called */
static int g_keep_going;
static int g_failures;     /* verification failures (all ranks agree) */
#ifdef BENCH_HAVE_SCALAPACK
static int g_blacs;        /* BLACS initialised */
static int g_blacs_sys = -1;
#endif
static int g_corrupt = -1;  /* --corrupt IMPL: test the checker */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_redist: rank %d: ", g_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void say(const char *fmt, ...)
{
    if (g_rank != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void fmt_bytes(uint64_t b, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int k = 0;
    while (v >= 1024.0 && k < 4) {
        v /= 1024.0;
        k++;
    }
    if (k == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, n, "%.4g %s", v, u[k]);
}

static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return -1;
    uint64_t mul = 1;
    if (*end) {
        const char *units = "KMGT", *p = strchr(units, toupper(*end));
        if (!p)
            return -1;
        mul = 1ULL << (10 * (p - units + 1));
        end++;
        if (*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0)
            return -1;
    }
    *out = (uint64_t)v * mul;
    return 0;
}

/* ------------------------------------------------- memory readings */

/* A "Key:   123 kB" line of a /proc file, in bytes; 0 if absent. */
static uint64_t proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t kl = strlen(key);
    uint64_t v = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0) {
            v = strtoull(line + kl, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

static uint64_t rss_now(void) { return proc_kb("/proc/self/status", "VmRSS:"); }
static uint64_t rss_hwm(void) { return proc_kb("/proc/self/status", "VmHWM:"); }
static uint64_t pss_now(void)
{
    return proc_kb("/proc/self/smaps_rollup", "Pss:");
}

/* Reset the peak RSS (VmHWM) to the current RSS (Linux >= 4.0). */
static int hwm_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, "5", 1);
    close(fd);
    return w == 1 ? 0 : -1;
}

/* ------------------------------------------------------- geometry */

typedef struct rect {
    int64_t lo[REDIST_MAX_DIMS], ext[REDIST_MAX_DIMS];
} rect_t;

static void type_rect(const redist_spec_t *spec, const redist_type_t *t,
                      int64_t rank, rect_t *r)
{
    const redist_mesh_t *m = redist_spec_mesh(spec);
    const int64_t *shape = redist_spec_shape(spec);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(m, rank, c);
    for (int i = 0; i < redist_spec_ndims(spec); i++) {
        int64_t b = 0, n = 1;
        for (int j = 0; j < t->dim_naxes[i]; j++) {
            int a = t->dims[i][j];
            int64_t s = redist_mesh_axis_size(m, a);
            b = b * s + c[a];
            n *= s;
        }
        r->ext[i] = shape[i] / n;
        r->lo[i] = b * r->ext[i];
    }
}

static int64_t rect_elems(const rect_t *r, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= r->ext[i];
    return n;
}

/* a ∩ b into *o; 0 when empty. */
static int rect_meet(const rect_t *a, const rect_t *b, int nd, rect_t *o)
{
    for (int i = 0; i < nd; i++) {
        int64_t lo = a->lo[i] > b->lo[i] ? a->lo[i] : b->lo[i];
        int64_t ha = a->lo[i] + a->ext[i], hb = b->lo[i] + b->ext[i];
        int64_t hi = ha < hb ? ha : hb;
        if (hi <= lo)
            return 0;
        o->lo[i] = lo;
        o->ext[i] = hi - lo;
    }
    return 1;
}

enum { OP_COPY = -1 };

static void reduce_run(char *d, const char *s, int64_t n, redist_dtype_t dt,
                       int op)
{
    if (dt == REDIST_F32) {
        float *x = (float *)d;
        const float *y = (const float *)s;
        for (int64_t i = 0; i < n; i++)
            x[i] = op == REDIST_REDUCE_SUM    ? x[i] + y[i]
                   : op == REDIST_REDUCE_PROD ? x[i] * y[i]
                   : op == REDIST_REDUCE_MAX  ? (y[i] > x[i] ? y[i] : x[i])
                                              : (y[i] < x[i] ? y[i] : x[i]);
    } else {
        double *x = (double *)d;
        const double *y = (const double *)s;
        for (int64_t i = 0; i < n; i++)
            x[i] = op == REDIST_REDUCE_SUM    ? x[i] + y[i]
                   : op == REDIST_REDUCE_PROD ? x[i] * y[i]
                   : op == REDIST_REDUCE_MAX  ? (y[i] > x[i] ? y[i] : x[i])
                                              : (y[i] < x[i] ? y[i] : x[i]);
    }
}

/*
 * Copy (op == OP_COPY) or reduce the global region `reg` from buffer `s`
 * (a row-major block holding global region `sf`) into buffer `d`
 * (holding `df`).  Trailing dims that the region spans whole in both
 * frames are folded into one contiguous run.
 */
static void rect_move(char *d, const rect_t *df, const char *s,
                      const rect_t *sf, const rect_t *reg, int nd,
                      size_t elem, redist_dtype_t dt, int op)
{
    int64_t dstr[REDIST_MAX_DIMS], sstr[REDIST_MAX_DIMS];
    int64_t ds = 1, ss = 1;
    for (int i = nd - 1; i >= 0; i--) {
        dstr[i] = ds;
        sstr[i] = ss;
        ds *= df->ext[i];
        ss *= sf->ext[i];
    }
    int k = nd - 1;
    int64_t run = reg->ext[k];
    while (k > 0 && reg->ext[k] == df->ext[k] && reg->ext[k] == sf->ext[k]) {
        k--;
        run *= reg->ext[k];
    }
    /* dims 0..k-1 are iterated; dim k..nd-1 form the run */
    int64_t idx[REDIST_MAX_DIMS] = {0};
    int64_t doff0 = 0, soff0 = 0;
    for (int i = 0; i < nd; i++) {
        doff0 += (reg->lo[i] - df->lo[i]) * dstr[i];
        soff0 += (reg->lo[i] - sf->lo[i]) * sstr[i];
    }
    for (;;) {
        int64_t doff = doff0, soff = soff0;
        for (int i = 0; i < k; i++) {
            doff += idx[i] * dstr[i];
            soff += idx[i] * sstr[i];
        }
        if (op == OP_COPY)
            memcpy(d + (size_t)doff * elem, s + (size_t)soff * elem,
                   (size_t)run * elem);
        else
            reduce_run(d + (size_t)doff * elem, s + (size_t)soff * elem, run,
                       dt, op);
        int i = k - 1;
        while (i >= 0 && ++idx[i] == reg->ext[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
}

/* ------------------------------------------------------------ case */

enum {
    I_REDIST_MPI, I_REDIST_MPI_PACKED, I_REDIST_MPI_TIME, I_REDIST_SHMEM,
    I_REDIST_SHMEM_TIME, I_GATHER,
    I_ALLTOALLV, I_ALLTOALLW, I_PDGEMR2D, I_MEMCPY, I_COUNT
};
static const char *const impl_names[I_COUNT] = {
    "redist-mpi",   "redist-mpi-packed", "redist-mpi-time",
    "redist-shmem", "redist-shmem-time", "gather",
    "alltoallv",    "alltoallw",         "pdgemr2d",
    "memcpy"};

static int is_mpi_impl(int k)
{
    return k == I_REDIST_MPI || k == I_REDIST_MPI_PACKED ||
           k == I_REDIST_MPI_TIME;
}

static int is_shmem_impl(int k)
{
    return k == I_REDIST_SHMEM || k == I_REDIST_SHMEM_TIME;
}

typedef struct impl {
    int on;           /* runs in this case */
    char why[160];    /* why not, when !on */
    uint64_t est;     /* estimated extra bytes per rank (memory check) */
    double *t;        /* times of the timed runs (max over ranks) */
    uint64_t own;     /* own allocations, max over runs (this rank) */
    uint64_t faults;  /* page faults of the last run (this rank) */
    double *fl;       /* page faults of the timed runs (max over ranks) */
    /* the memory probe (one run, fresh allocations): */
    uint64_t rss_extra, hwm, pss;
    const redist_plan_t *plan; /* redist: the plan it runs */
    int checked;      /* verified runs */
    int failed;
    /* state */
    redist_mpi_t *mx;
#ifdef BENCH_HAVE_SHMEM
    redist_shmem_t *sx;
#endif
    redist_mpi_info_t minfo;
#ifdef BENCH_HAVE_SHMEM
    redist_shmem_info_t sinfo;
#endif
    int gemr_src_ctxt, gemr_dst_ctxt;
    int desca[9], descb[9], gm, gn;
} impl_t;

typedef struct bcase {
    char name[512];
    redist_spec_t *spec;
    redist_plan_t *plan;
    redist_plan_t *plan_time; /* the time objective's plan (or NULL) */
    char time_why[160];       /* why there is no different time plan */
    double plan_us;
    const redist_mesh_t *mesh;
    int nd, naxes;
    size_t elem;
    redist_dtype_t dt;
    redist_reduce_t red;
    uint32_t src_axes, red_axes, rep_axes; /* source sharding / reduced
                                              partial / replicated */
    int partial;                /* the source has axes to reduce */
    rect_t srect, drect;        /* this rank's blocks */
    uint64_t src_bytes, dst_bytes;
    char *src, *dst, *pristine;
    /* direct exchange: pieces this rank sends / receives, per peer */
    int *has_send, *has_recv;
    rect_t *send_piece, *recv_piece;
    int *scount, *sdispl, *rcount, *rdispl; /* in elements */
    uint64_t send_elems, recv_elems;        /* to / from others */
    uint64_t lack_bytes;  /* bytes this rank receives from others */
    uint64_t lack_max;    /* max over ranks */
    MPI_Datatype et;      /* one element */
    MPI_Datatype *wst, *wrt; /* alltoallw types */
    int *wcount0, *wcount1, *wdispl0;
    /* gather */
    MPI_Comm gcomm, rcomm;
    int gsize;
    int64_t *gmember;     /* world ranks of the gather group, in order */
    /* persistent workspaces of the hand-written alternatives (allocated
     * and touched at setup; NULL: allocate per call) */
    char *gbuf, *sbuf, *rbuf;
    int fresh;            /* allocate per call (memory probe, --fresh) */
    uint64_t pss_base;    /* Pss once the buffers are set up */
    int symmetric;        /* src and dst come from shmem_malloc */
    impl_t im[I_COUNT];
} bcase_t;

static uint32_t axes_of(const redist_type_t *t)
{
    uint32_t m = 0;
    for (int i = 0; i < t->ndims; i++)
        for (int j = 0; j < t->dim_naxes[i]; j++)
            m |= 1u << t->dims[i][j];
    return m;
}

/* Linear index of `rank`'s coordinates on the axes of `mask` (the other
 * coordinates set to 0): a colour for MPI_Comm_split. */
static int color_of(const redist_mesh_t *m, int64_t rank, uint32_t mask)
{
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(m, rank, c);
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (!(mask >> a & 1u))
            c[a] = 0;
    return (int)redist_mesh_rank(m, c);
}

/* ------------------------------------------------------ scaling */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t split_count(const redist_mesh_t *m, const redist_type_t *t,
                           int dim)
{
    int64_t p = 1;
    for (int j = 0; j < t->dim_naxes[dim]; j++)
        p *= redist_mesh_axis_size(m, t->dims[dim][j]);
    return p;
}

static uint64_t local_bytes(const redist_spec_t *spec, const int64_t *shape,
                            const redist_type_t *t)
{
    uint64_t n = redist_dtype_size(redist_spec_dtype(spec));
    for (int i = 0; i < redist_spec_ndims(spec); i++)
        n *= (uint64_t)(shape[i] / split_count(redist_spec_mesh(spec), t, i));
    return n;
}

static int64_t smallest_factor(int64_t r)
{
    for (int64_t p = 2; p * p <= r; p++)
        if (r % p == 0)
            return p;
    return r;
}

/* The spec at about `target` bytes per rank (max of source and target
 * block): dims stay multiples of every split count on the plan's path,
 * so the same plan remains possible.  Shrinks the dim with the largest
 * ratio to its multiple by its smallest prime factor, then doubles the
 * smallest dim while that stays within the target. */
static redist_status_t scale_spec(const redist_spec_t *spec, uint64_t target,
                                  redist_spec_t **out, redist_error_t *err)
{
    redist_plan_t *plan;
    redist_status_t st = redist_plan_create(spec, NULL, &plan, err);
    if (st)
        return st;
    const redist_mesh_t *m = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec), n = redist_plan_num_steps(plan);
    int64_t q[REDIST_MAX_DIMS], cur[REDIST_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        q[i] = 1;
        cur[i] = redist_spec_shape(spec)[i];
    }
    for (int k = -1; k <= n; k++) {
        redist_type_t t;
        redist_step_view_t v;
        if (k < 0)
            t = *redist_spec_from(spec);
        else if (k == n)
            t = *redist_spec_to(spec);
        else {
            redist_plan_step(plan, k, &v);
            t = v.after;
        }
        for (int i = 0; i < nd; i++) {
            int64_t p = split_count(m, &t, i);
            q[i] = q[i] / (int64_t)gcd64((uint64_t)q[i], (uint64_t)p) * p;
        }
    }
    redist_plan_free(plan);
    const redist_type_t *f = redist_spec_from(spec), *t = redist_spec_to(spec);
#define METRIC() umax(local_bytes(spec, cur, f), local_bytes(spec, cur, t))
    while (METRIC() > target) {
        int best = -1;
        for (int i = 0; i < nd; i++)
            if (cur[i] / q[i] > 1 &&
                (best < 0 || cur[i] / q[i] > cur[best] / q[best]))
                best = i;
        if (best < 0)
            break;
        cur[best] /= smallest_factor(cur[best] / q[best]);
    }
    for (;;) {
        int best = 0;
        for (int i = 1; i < nd; i++)
            if (cur[i] < cur[best])
                best = i;
        if (METRIC() * 2 > target)
            break;
        cur[best] *= 2;
    }
#undef METRIC
    const char *name = redist_spec_name(spec);
    return redist_spec_create(m, nd, cur, redist_spec_dtype(spec), f, t,
                              redist_spec_reduce(spec), name[0] ? name : NULL,
                              out, err);
}

/* ------------------------------------------------------ options */

typedef struct opts {
    int reps, warmup;
    uint64_t sizes[32];
    int nsizes;
    unsigned impl_mask;
    const char *csv;
    uint64_t mem_budget;
    int fresh;
} opts_t;

/* ------------------------------------------------ implementations */

static uint64_t umax_over_ranks(uint64_t v)
{
    uint64_t r;
    MPI_Allreduce(&v, &r, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return r;
}

static int all_ok(int ok)
{
    int r;
    MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return r;
}

/* Fill `buf` (n elements of f32/f64) with the neutral value of op. */
static void fill_neutral(char *buf, int64_t n, redist_dtype_t dt, int op)
{
    double v = op == REDIST_REDUCE_SUM    ? 0.0
               : op == REDIST_REDUCE_PROD ? 1.0
               : op == REDIST_REDUCE_MAX  ? -INFINITY
                                          : INFINITY;
    if (dt == REDIST_F32) {
        float *x = (float *)buf, fv = (float)v;
        for (int64_t i = 0; i < n; i++)
            x[i] = fv;
    } else {
        double *x = (double *)buf;
        for (int64_t i = 0; i < n; i++)
            x[i] = v;
    }
}

static MPI_Op mpi_op(redist_reduce_t r)
{
    return r == REDIST_REDUCE_SUM    ? MPI_SUM
           : r == REDIST_REDUCE_PROD ? MPI_PROD
           : r == REDIST_REDUCE_MAX  ? MPI_MAX
                                     : MPI_MIN;
}

/* gather-then-slice */
static uint64_t gather_bytes(const bcase_t *c)
{
    return (uint64_t)c->gsize * c->src_bytes;
}

static uint64_t run_gather(bcase_t *c)
{
    uint64_t bytes = gather_bytes(c);
    char *all = c->fresh ? xmalloc(bytes) : c->gbuf;
    int cnt = (int)(c->src_bytes / c->elem);
    MPI_Allgather(c->src, cnt, c->et, all, cnt, c->et, c->gcomm);
    if (c->partial)
        MPI_Allreduce(MPI_IN_PLACE, all, (int)(bytes / c->elem),
                      c->dt == REDIST_F32 ? MPI_FLOAT : MPI_DOUBLE,
                      mpi_op(c->red), c->rcomm);
    for (int k = 0; k < c->gsize; k++) {
        rect_t sr, piece;
        type_rect(c->spec, redist_spec_from(c->spec), c->gmember[k], &sr);
        if (rect_meet(&sr, &c->drect, c->nd, &piece))
            rect_move(c->dst, &c->drect, all + (size_t)k * c->src_bytes, &sr,
                      &piece, c->nd, c->elem, c->dt, OP_COPY);
    }
    if (c->fresh)
        free(all);
    return bytes;
}

/* direct exchange: pack, MPI_Alltoallv, unpack */
static uint64_t run_alltoallv(bcase_t *c)
{
    int P = g_size;
    char *sb = c->fresh ? xmalloc(c->send_elems * c->elem) : c->sbuf;
    char *rb = c->fresh ? xmalloc(c->recv_elems * c->elem) : c->rbuf;
    for (int p = 0; p < P; p++)
        if (p != g_rank && c->has_send[p])
            rect_move(sb + (size_t)c->sdispl[p] * c->elem, &c->send_piece[p],
                      c->src, &c->srect, &c->send_piece[p], c->nd, c->elem,
                      c->dt, OP_COPY);
    if (c->partial)
        fill_neutral(c->dst, rect_elems(&c->drect, c->nd), c->dt, c->red);
    if (c->has_recv[g_rank])
        rect_move(c->dst, &c->drect, c->src, &c->srect,
                  &c->recv_piece[g_rank], c->nd, c->elem, c->dt,
                  c->partial ? (int)c->red : OP_COPY);
    MPI_Alltoallv(sb, c->scount, c->sdispl, c->et, rb, c->rcount, c->rdispl,
                  c->et, MPI_COMM_WORLD);
    for (int p = 0; p < P; p++)
        if (p != g_rank && c->has_recv[p])
            rect_move(c->dst, &c->drect, rb + (size_t)c->rdispl[p] * c->elem,
                      &c->recv_piece[p], &c->recv_piece[p], c->nd, c->elem,
                      c->dt, c->partial ? (int)c->red : OP_COPY);
    if (c->fresh) {
        free(sb);
        free(rb);
    }
    return (c->send_elems + c->recv_elems) * c->elem;
}

/* direct exchange with subarray datatypes: no pack, no buffers */
static uint64_t run_alltoallw(bcase_t *c)
{
    if (c->has_recv[g_rank])
        rect_move(c->dst, &c->drect, c->src, &c->srect,
                  &c->recv_piece[g_rank], c->nd, c->elem, c->dt, OP_COPY);
    MPI_Alltoallw(c->src, c->wcount0, c->wdispl0, c->wst, c->dst, c->wcount1,
                  c->wdispl0, c->wrt, MPI_COMM_WORLD);
    return 0;
}

static uint64_t run_memcpy(bcase_t *c)
{
    /* copy lack_bytes from src to dst, wrapping around both buffers */
    uint64_t left = c->lack_bytes, so = 0, doff = 0;
    while (left) {
        uint64_t n = left;
        if (n > c->src_bytes - so)
            n = c->src_bytes - so;
        if (n > c->dst_bytes - doff)
            n = c->dst_bytes - doff;
        memcpy(c->dst + doff, c->src + so, n);
        left -= n;
        so = (so + n) % c->src_bytes;
        doff = (doff + n) % c->dst_bytes;
    }
    return 0;
}

/* ---------------------------------------------------------- setup */

static void setup_exchange(bcase_t *c)
{
    int P = g_size;
    const redist_type_t *from = redist_spec_from(c->spec),
                        *to = redist_spec_to(c->spec);
    c->has_send = calloc((size_t)P, sizeof(int));
    c->has_recv = calloc((size_t)P, sizeof(int));
    c->send_piece = calloc((size_t)P, sizeof(rect_t));
    c->recv_piece = calloc((size_t)P, sizeof(rect_t));
    c->scount = calloc((size_t)P, sizeof(int));
    c->sdispl = calloc((size_t)P, sizeof(int));
    c->rcount = calloc((size_t)P, sizeof(int));
    c->rdispl = calloc((size_t)P, sizeof(int));
    if (!c->has_send || !c->has_recv || !c->send_piece || !c->recv_piece ||
        !c->scount || !c->sdispl || !c->rcount || !c->rdispl)
        die("out of memory");
    int64_t me[REDIST_MAX_AXES], pc[REDIST_MAX_AXES];
    redist_mesh_coords(c->mesh, g_rank, me);
    uint64_t lack_max = 0;
    c->send_elems = c->recv_elems = 0;
    /* pieces p -> r exist iff p and r agree on the source's replicated
     * axes and p's source block meets r's target block */
    for (int64_t r = 0; r < P; r++) {
        rect_t dr;
        type_rect(c->spec, to, r, &dr);
        int64_t rc[REDIST_MAX_AXES];
        redist_mesh_coords(c->mesh, r, rc);
        uint64_t lack = 0;
        for (int64_t p = 0; p < P; p++) {
            redist_mesh_coords(c->mesh, p, pc);
            int agree = 1;
            for (int a = 0; a < c->naxes; a++)
                if (c->rep_axes >> a & 1u && pc[a] != rc[a])
                    agree = 0;
            rect_t sr, piece;
            type_rect(c->spec, from, p, &sr);
            if (!agree || !rect_meet(&sr, &dr, c->nd, &piece))
                continue;
            int64_t n = rect_elems(&piece, c->nd);
            if (p != r)
                lack += (uint64_t)n * c->elem;
            if (r == g_rank) {
                c->has_recv[p] = 1;
                c->recv_piece[p] = piece;
                if (p != g_rank) {
                    if ((uint64_t)n > INT_MAX || c->recv_elems > INT_MAX)
                        die("alltoallv count over INT_MAX");
                    c->rcount[p] = (int)n;
                    c->rdispl[p] = (int)c->recv_elems;
                    c->recv_elems += (uint64_t)n;
                }
            }
            if (p == g_rank) {
                c->has_send[r] = 1;
                c->send_piece[r] = piece;
                if (r != g_rank) {
                    if ((uint64_t)n > INT_MAX || c->send_elems > INT_MAX)
                        die("alltoallv count over INT_MAX");
                    c->scount[r] = (int)n;
                    c->sdispl[r] = (int)c->send_elems;
                    c->send_elems += (uint64_t)n;
                }
            }
        }
        if (r == g_rank)
            c->lack_bytes = lack;
        lack_max = umax(lack_max, lack);
    }
    (void)me;
    c->lack_max = lack_max;
}

static void setup_alltoallw(bcase_t *c)
{
    int P = g_size;
    c->wst = calloc((size_t)P, sizeof(MPI_Datatype));
    c->wrt = calloc((size_t)P, sizeof(MPI_Datatype));
    c->wcount0 = calloc((size_t)P, sizeof(int));
    c->wcount1 = calloc((size_t)P, sizeof(int));
    c->wdispl0 = calloc((size_t)P, sizeof(int));
    if (!c->wst || !c->wrt || !c->wcount0 || !c->wcount1 || !c->wdispl0)
        die("out of memory");
    int sizes[REDIST_MAX_DIMS], sub[REDIST_MAX_DIMS], st[REDIST_MAX_DIMS];
    for (int p = 0; p < P; p++) {
        c->wst[p] = c->wrt[p] = c->et;
        if (p != g_rank && c->has_send[p]) {
            for (int i = 0; i < c->nd; i++) {
                sizes[i] = (int)c->srect.ext[i];
                sub[i] = (int)c->send_piece[p].ext[i];
                st[i] = (int)(c->send_piece[p].lo[i] - c->srect.lo[i]);
            }
            MPI_Type_create_subarray(c->nd, sizes, sub, st, MPI_ORDER_C,
                                     c->et, &c->wst[p]);
            MPI_Type_commit(&c->wst[p]);
            c->wcount0[p] = 1;
        }
        if (p != g_rank && c->has_recv[p]) {
            for (int i = 0; i < c->nd; i++) {
                sizes[i] = (int)c->drect.ext[i];
                sub[i] = (int)c->recv_piece[p].ext[i];
                st[i] = (int)(c->recv_piece[p].lo[i] - c->drect.lo[i]);
            }
            MPI_Type_create_subarray(c->nd, sizes, sub, st, MPI_ORDER_C,
                                     c->et, &c->wrt[p]);
            MPI_Type_commit(&c->wrt[p]);
            c->wcount1[p] = 1;
        }
    }
}

static void free_alltoallw(bcase_t *c)
{
    if (!c->wst)
        return;
    for (int p = 0; p < g_size; p++) {
        if (c->wst[p] != c->et)
            MPI_Type_free(&c->wst[p]);
        if (c->wrt[p] != c->et)
            MPI_Type_free(&c->wrt[p]);
    }
    free(c->wst);
    free(c->wrt);
    free(c->wcount0);
    free(c->wcount1);
    free(c->wdispl0);
    c->wst = c->wrt = NULL;
}

static void setup_gather(bcase_t *c)
{
    /* group: the ranks that differ only on the source's sharding axes */
    uint32_t keep = c->red_axes | c->rep_axes;
    MPI_Comm_split(MPI_COMM_WORLD, color_of(c->mesh, g_rank, keep), g_rank,
                   &c->gcomm);
    MPI_Comm_size(c->gcomm, &c->gsize);
    c->gmember = xmalloc(sizeof(int64_t) * (size_t)c->gsize);
    int k = 0;
    int mycolor = color_of(c->mesh, g_rank, keep);
    for (int64_t p = 0; p < g_size; p++)
        if (color_of(c->mesh, p, keep) == mycolor)
            c->gmember[k++] = p;
    c->rcomm = MPI_COMM_NULL;
    if (c->partial)
        MPI_Comm_split(MPI_COMM_WORLD,
                       color_of(c->mesh, g_rank, c->src_axes | c->rep_axes),
                       g_rank, &c->rcomm);
}

#ifdef BENCH_HAVE_SCALAPACK
static gemr2d_fn *gemr2d_for(redist_dtype_t dt)
{
    switch (dt) {
    case REDIST_F32: return (gemr2d_fn *)psgemr2d_;
    case REDIST_F64: return (gemr2d_fn *)pdgemr2d_;
    case REDIST_C64: return (gemr2d_fn *)pcgemr2d_;
    case REDIST_C128: return (gemr2d_fn *)pzgemr2d_;
    default: return NULL;
    }
}

/* A BLACS grid for type t: the transpose of the row-major array, rows
 * = dim 1 over nprow = c1 processes, columns = dim 0 over npcol = c0; the
 * process with block (b0, b1) sits at (b1, b0).  Only the ranks whose
 * coordinates on the axes outside `t` are 0 take part. */
static void gemr_grid(bcase_t *c, const redist_type_t *t, int *ctxt,
                      int desc[9])
{
    int c0 = (int)split_count(c->mesh, t, 0),
        c1 = (int)split_count(c->mesh, t, 1);
    uint32_t used = axes_of(t);
    int *map = xmalloc(sizeof(int) * (size_t)(c0 * c1));
    for (int64_t p = 0; p < g_size; p++) {
        int64_t pc[REDIST_MAX_AXES];
        redist_mesh_coords(c->mesh, p, pc);
        int out = 0;
        for (int a = 0; a < c->naxes; a++)
            if (!(used >> a & 1u) && pc[a] != 0)
                out = 1;
        if (out)
            continue;
        rect_t r;
        type_rect(c->spec, t, p, &r);
        int b0 = (int)(r.lo[0] / r.ext[0]), b1 = (int)(r.lo[1] / r.ext[1]);
        map[b1 + b0 * c1] = (int)p;
    }
    int ctx;
    Cblacs_get(-1, 0, &ctx);
    Cblacs_gridmap(&ctx, map, c1, c1, c0);
    free(map);
    int npr, npc, myr = -1, myc = -1;
    if (ctx >= 0)
        Cblacs_gridinfo(ctx, &npr, &npc, &myr, &myc);
    const int64_t *shape = redist_spec_shape(c->spec);
    desc[0] = 1;
    desc[1] = (ctx >= 0 && myr >= 0) ? ctx : -1;
    desc[2] = (int)shape[1];
    desc[3] = (int)shape[0];
    desc[4] = (int)(shape[1] / c1);
    desc[5] = (int)(shape[0] / c0);
    desc[6] = 0;
    desc[7] = 0;
    desc[8] = desc[4] > 1 ? desc[4] : 1;
    *ctxt = desc[1];
}

static void run_pdgemr2d(bcase_t *c)
{
    impl_t *im = &c->im[I_PDGEMR2D];
    int one = 1;
    gemr2d_fn *fn = gemr2d_for(c->dt);
    fn(&im->gm, &im->gn, c->src, &one, &one, im->desca, c->dst, &one, &one,
       im->descb, &g_blacs_sys);
}
#endif

/* Decide which implementations run, with their estimated extra memory. */
static void choose_impls(bcase_t *c, const opts_t *o)
{
    const redist_type_t *to = redist_spec_to(c->spec);
    int pflt = c->dt == REDIST_F32 || c->dt == REDIST_F64;
    for (int k = 0; k < I_COUNT; k++) {
        impl_t *im = &c->im[k];
        im->on = (o->impl_mask >> k & 1u) != 0;
        if (!im->on)
            snprintf(im->why, sizeof im->why, "not selected");
    }
    if (to->partial) {
        for (int k = I_GATHER; k < I_COUNT; k++)
            if (c->im[k].on && k != I_MEMCPY) {
                c->im[k].on = 0;
                snprintf(c->im[k].why, sizeof c->im[k].why,
                         "target keeps partial axes");
            }
    }
    if (c->partial && !pflt) {
        for (int k = I_GATHER; k <= I_ALLTOALLV; k++)
            if (c->im[k].on) {
                c->im[k].on = 0;
                snprintf(c->im[k].why, sizeof c->im[k].why,
                         "reduction of %s not written",
                         redist_dtype_name(c->dt));
            }
    }
    if (c->partial && c->im[I_ALLTOALLW].on) {
        c->im[I_ALLTOALLW].on = 0;
        snprintf(c->im[I_ALLTOALLW].why, sizeof c->im[I_ALLTOALLW].why,
                 "partial source: needs a reduction");
    }
    for (int k = I_REDIST_SHMEM; k <= I_REDIST_SHMEM_TIME; k += 1) {
        if (!is_shmem_impl(k) || !c->im[k].on || g_shmem)
            continue;
        c->im[k].on = 0;
        snprintf(c->im[k].why, sizeof c->im[k].why,
#ifdef BENCH_HAVE_SHMEM
                 "run without --shmem"
#else
                 "not built (no OpenSHMEM backend)"
#endif
        );
    }
    for (int k = I_REDIST_MPI_TIME; k <= I_REDIST_SHMEM_TIME; k++)
        if ((k == I_REDIST_MPI_TIME || k == I_REDIST_SHMEM_TIME) &&
            c->im[k].on && !c->plan_time) {
            c->im[k].on = 0;
            snprintf(c->im[k].why, sizeof c->im[k].why, "%s", c->time_why);
        }
    impl_t *g = &c->im[I_PDGEMR2D];
    if (g->on) {
#ifdef BENCH_HAVE_SCALAPACK
        uint32_t all = (1u << c->naxes) - 1;
        if (c->nd != 2)
            snprintf(g->why, sizeof g->why, "not a 2-D array"), g->on = 0;
        else if (c->partial)
            snprintf(g->why, sizeof g->why, "partial source"), g->on = 0;
        else if (!gemr2d_for(c->dt))
            snprintf(g->why, sizeof g->why, "dtype %s (p?gemr2d: s d c z)",
                     redist_dtype_name(c->dt)),
                g->on = 0;
        else if (axes_of(to) != all)
            snprintf(g->why, sizeof g->why,
                     "replicated target (one call cannot express it)"),
                g->on = 0;
#else
        snprintf(g->why, sizeof g->why, "not built (no ScaLAPACK)");
        g->on = 0;
#endif
    }
    /* memory estimates (extra bytes per rank beyond src, dst, pristine) */
    c->im[I_REDIST_MPI].est = c->im[I_REDIST_MPI].minfo.scratch_bytes;
    c->im[I_REDIST_MPI_PACKED].est =
        c->im[I_REDIST_MPI_PACKED].minfo.scratch_bytes;
    c->im[I_REDIST_MPI_TIME].est = c->im[I_REDIST_MPI_TIME].minfo.scratch_bytes;
    c->im[I_REDIST_SHMEM].est = umax(c->src_bytes, c->dst_bytes);
    c->im[I_REDIST_SHMEM_TIME].est = umax(c->src_bytes, c->dst_bytes);
    /* group size is the product of the sharding axes (+ partial) */
    int64_t gs = 1;
    for (int a = 0; a < c->naxes; a++)
        if (c->src_axes >> a & 1u)
            gs *= redist_mesh_axis_size(c->mesh, a);
    c->im[I_GATHER].est = (uint64_t)gs * c->src_bytes;
    c->im[I_ALLTOALLV].est = 2 * c->dst_bytes * (c->partial ? 4 : 1);
    c->im[I_ALLTOALLW].est = 0;
    c->im[I_PDGEMR2D].est = c->src_bytes + c->dst_bytes;
    c->im[I_MEMCPY].est = 0;
    uint64_t base = c->src_bytes * 2 + c->dst_bytes + (64ULL << 20);
    for (int k = 0; k < I_COUNT; k++) {
        impl_t *im = &c->im[k];
        if (im->on && o->mem_budget &&
            (base + im->est) * (uint64_t)g_size > o->mem_budget) {
            char b[32], t[32];
            fmt_bytes((base + im->est) * (uint64_t)g_size, b, sizeof b);
            fmt_bytes(o->mem_budget, t, sizeof t);
            snprintf(im->why, sizeof im->why,
                     "memory: needs ~%s on the node, budget %s", b, t);
            im->on = 0;
        }
    }
}

/* --------------------------------------------------- run one case */

static void plan_ops(const redist_plan_t *plan, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int k = 0; k < redist_plan_num_steps(plan) && pos < n; k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        pos += (size_t)snprintf(buf + pos, n - pos, "%s%s", k ? "+" : "",
                                redist_op_name(v.op));
    }
    if (!buf[0])
        snprintf(buf, n, "none");
}

/* Same steps (op, dims, axis, type after) in the same order. */
static int plans_equal(const redist_plan_t *a, const redist_plan_t *b)
{
    int n = redist_plan_num_steps(a);
    if (n != redist_plan_num_steps(b))
        return 0;
    for (int k = 0; k < n; k++) {
        redist_step_view_t x, y;
        redist_plan_step(a, k, &x);
        redist_plan_step(b, k, &y);
        if (x.op != y.op || x.dim != y.dim || x.from_dim != y.from_dim ||
            x.to_dim != y.to_dim || x.axis != y.axis ||
            !redist_type_equal(&x.after, &y.after))
            return 0;
    }
    return 1;
}

static void csv_header(FILE *f)
{
    fprintf(f, "case,spec,devices,oversub,shape,dtype,src_bytes,dst_bytes,"
               "lack_bytes,impl,status,reps,median_s,min_s,max_s,gbps,"
               "own_bytes,rss_extra_bytes,peak_rss_bytes,pss_extra_bytes,"
               "faults_median,faults_max,plan_ops,plan_recv_bytes,plan_us,passes,exchanges,note\n");
}

static void shape_str(const redist_spec_t *s, char *buf, size_t n)
{
    size_t pos = 0;
    for (int i = 0; i < redist_spec_ndims(s) && pos < n; i++)
        pos += (size_t)snprintf(buf + pos, n - pos, "%s%lld", i ? "x" : "",
                                (long long)redist_spec_shape(s)[i]);
}

/* One run of implementation k (untimed prologue + timed body). */
static uint64_t faults_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* One run of implementation k: untimed prologue (restore the source,
 * poison the destination), the timed call, optional check.  `probe`:
 * the memory probe run (peak RSS from a reset high-water mark). */
static double run_once(bcase_t *c, int k, int verify, const char *phase,
                       int probe)
{
    impl_t *im = &c->im[k];
    memcpy(c->src, c->pristine, c->src_bytes);
    memset(c->dst, 0xff, c->dst_bytes);
    uint64_t before = 0;
    if (probe) {
        malloc_trim(0);
        hwm_reset();
        before = rss_now();
    }
    uint64_t f0 = faults_now();
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = REDIST_OK;
    uint64_t own = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    switch (k) {
    case I_REDIST_MPI:
    case I_REDIST_MPI_PACKED:
    case I_REDIST_MPI_TIME:
        st = redist_mpi_execute(im->mx, im->plan, c->src, c->dst, NULL, &rep,
                                &err);
        own = rep.scratch_high_water;
        break;
#ifdef BENCH_HAVE_SHMEM
    case I_REDIST_SHMEM:
    case I_REDIST_SHMEM_TIME:
        st = redist_shmem_execute(im->sx, im->plan, c->src, c->dst, NULL,
                                  &rep, &err);
        own = rep.scratch_high_water;
        break;
#endif
    case I_GATHER: own = run_gather(c); break;
    case I_ALLTOALLV: own = run_alltoallv(c); break;
    case I_ALLTOALLW: own = run_alltoallw(c); break;
#ifdef BENCH_HAVE_SCALAPACK
    case I_PDGEMR2D: run_pdgemr2d(c); break;
#endif
    case I_MEMCPY: own = run_memcpy(c); break;
    default: break;
    }
    double t1 = MPI_Wtime();
    uint64_t f1 = faults_now();
    if (probe) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        uint64_t hwm = umax((uint64_t)ru.ru_maxrss * 1024, rss_hwm());
        im->hwm = hwm;
        im->rss_extra = hwm > before ? hwm - before : 0;
        uint64_t pss = pss_now();
        im->pss = pss > c->pss_base ? pss - c->pss_base : 0;
    } else
        im->faults = f1 - f0;
    if (st != REDIST_OK) {
        char msg[600];
        die("%s: %s failed: %s", c->name, impl_names[k],
            redist_error_format(&err, msg, sizeof msg));
    }
    im->own = umax(im->own, own);
    if (k == g_corrupt && g_rank == g_size - 1 && c->dst_bytes)
        c->dst[c->dst_bytes - 1] ^= 0x5a;
    if (verify && k != I_MEMCPY) {
        rd_mismatch mm;
        int bad = rd_pattern_check(c->spec, g_rank, c->dst, &mm);
        if (bad) {
            char loc[256] = "", glob[256] = "";
            size_t lp = 0, gp = 0;
            for (int i = 0; i < c->nd; i++) {
                lp += (size_t)snprintf(loc + lp, sizeof loc - lp, "%s%lld",
                                       i ? "," : "", (long long)mm.local[i]);
                gp += (size_t)snprintf(glob + gp, sizeof glob - gp, "%s%lld",
                                       i ? "," : "", (long long)mm.global[i]);
            }
            fprintf(stderr,
                    "bench_redist: VERIFICATION FAILED: case %s, %s (%s run), "
                    "rank %d: local index %llu [%s], global index %llu "
                    "[%s]: expected %s, got %s\n",
                    c->name, impl_names[k], phase, g_rank,
                    (unsigned long long)mm.local_index, loc,
                    (unsigned long long)mm.global_index, glob, mm.expected,
                    mm.got);
            fflush(stderr);
        }
        if (!all_ok(!bad)) {
            im->failed = 1;
            if (!g_keep_going) {
                if (g_rank == 0)
                    fprintf(stderr, "bench_redist: %s: %s gave a wrong "
                                    "result; stopping (exit 1)\n",
                            c->name, impl_names[k]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        im->checked++;
    }
    return t1 - t0;
}

static void free_case(bcase_t *c)
{
    for (int k = 0; k < I_COUNT; k++) {
        impl_t *im = &c->im[k];
        free(im->t);
        free(im->fl);
        redist_mpi_free(im->mx);
#ifdef BENCH_HAVE_SHMEM
        redist_shmem_free(im->sx);
#endif
#ifdef BENCH_HAVE_SCALAPACK
        if (im->gemr_src_ctxt >= 0 && k == I_PDGEMR2D && im->on)
            Cblacs_gridexit(im->gemr_src_ctxt);
        if (im->gemr_dst_ctxt >= 0 && k == I_PDGEMR2D && im->on)
            Cblacs_gridexit(im->gemr_dst_ctxt);
#endif
    }
    free_alltoallw(c);
    if (c->gcomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->gcomm);
    if (c->rcomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->rcomm);
    if (c->et != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->et);
    free(c->gmember);
    free(c->has_send);
    free(c->has_recv);
    free(c->send_piece);
    free(c->recv_piece);
    free(c->scount);
    free(c->sdispl);
    free(c->rcount);
    free(c->rdispl);
#ifdef BENCH_HAVE_SHMEM
    if (c->symmetric) {
        shmem_free(c->src);
        shmem_free(c->dst);
    } else
#endif
    {
        free(c->src);
        free(c->dst);
    }
    free(c->pristine);
    redist_plan_free(c->plan);
    redist_plan_free(c->plan_time);
    redist_spec_free(c->spec);
}

static void *buf_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1))
        die("out of memory (%zu bytes)", n);
    return p;
}

/* src and dst: symmetric (shmem_malloc) when the SHMEM implementation
 * runs, so that its puts land straight in them; else page-aligned. */
static void alloc_buffers(bcase_t *c)
{
#ifdef BENCH_HAVE_SHMEM
    if (c->im[I_REDIST_SHMEM].on || c->im[I_REDIST_SHMEM_TIME].on) {
        c->src = shmem_malloc(c->src_bytes ? c->src_bytes : 1);
        c->dst = shmem_malloc(c->dst_bytes ? c->dst_bytes : 1);
        if (all_ok(c->src && c->dst)) {
            c->symmetric = 1;
            return;
        }
        shmem_free(c->src);
        shmem_free(c->dst);
        c->src = c->dst = NULL;
        for (int k = I_REDIST_SHMEM; k <= I_REDIST_SHMEM_TIME; k++) {
            if (!is_shmem_impl(k) || !c->im[k].on)
                continue;
            c->im[k].on = 0;
            snprintf(c->im[k].why, sizeof c->im[k].why,
                     "symmetric heap too small for src + dst "
                     "(SHMEM_SYMMETRIC_HEAP_SIZE)");
        }
    }
#endif
    c->src = buf_alloc(c->src_bytes);
    c->dst = buf_alloc(c->dst_bytes);
}

/* Run one case (spec already sized).  Takes ownership of spec. */
static void run_case(redist_spec_t *spec, const char *label,
                     const char *specname, const opts_t *o, FILE *csv)
{
    bcase_t cs, *c = &cs;
    memset(c, 0, sizeof *c);
    c->gcomm = c->rcomm = MPI_COMM_NULL;
    c->et = MPI_DATATYPE_NULL;
    for (int k = 0; k < I_COUNT; k++)
        c->im[k].gemr_src_ctxt = c->im[k].gemr_dst_ctxt = -1;
    c->spec = spec;
    c->mesh = redist_spec_mesh(spec);
    char shp[128];
    shape_str(spec, shp, sizeof shp);
    snprintf(c->name, sizeof c->name, "%s@%s", label, shp);
    c->nd = redist_spec_ndims(spec);
    c->naxes = redist_mesh_num_axes(c->mesh);
    c->dt = redist_spec_dtype(spec);
    c->elem = redist_dtype_size(c->dt);
    c->red = redist_spec_reduce(spec);
    const redist_type_t *from = redist_spec_from(spec),
                        *to = redist_spec_to(spec);
    c->src_axes = axes_of(from);
    c->red_axes = from->partial & ~to->partial;
    c->partial = c->red_axes != 0;
    c->rep_axes = ((1u << c->naxes) - 1) & ~c->src_axes & ~from->partial;
    c->src_bytes = redist_spec_src_bytes(spec);
    c->dst_bytes = redist_spec_dst_bytes(spec);
    type_rect(spec, from, g_rank, &c->srect);
    type_rect(spec, to, g_rank, &c->drect);

    /* plan: median of 5 plans (the first is kept) */
    redist_error_t err;
    redist_error_clear(&err);
    double pt[5];
    for (int i = 0; i < 5; i++) {
        redist_plan_t *p = NULL;
        double t0 = MPI_Wtime();
        redist_status_t st = redist_plan_create(spec, NULL, &p, &err);
        pt[i] = MPI_Wtime() - t0;
        if (st) {
            char msg[600];
            say("%-44s skipped: no plan: %s\n", c->name,
                redist_error_format(&err, msg, sizeof msg));
            redist_spec_free(spec);
            return;
        }
        if (i == 0)
            c->plan = p;
        else
            redist_plan_free(p);
    }
    qsort(pt, 5, sizeof pt[0], cmp_double);
    c->plan_us = pt[2] * 1e6;
    /* the time objective's plan (default cost model), run by the *-time
     * implementations only where it differs from the bytes plan */
    {
        redist_plan_options_t po;
        memset(&po, 0, sizeof po);
        po.objective = REDIST_OBJECTIVE_TIME;
        redist_error_t terr;
        redist_error_clear(&terr);
        if (redist_plan_create(spec, &po, &c->plan_time, &terr)) {
            char msg[600];
            snprintf(c->time_why, sizeof c->time_why, "time objective: %s",
                     redist_error_format(&terr, msg, sizeof msg));
            c->plan_time = NULL;
        } else if (plans_equal(c->plan, c->plan_time)) {
            snprintf(c->time_why, sizeof c->time_why,
                     "time objective gives the same plan");
            redist_plan_free(c->plan_time);
            c->plan_time = NULL;
        }
    }
    for (int k = 0; k < I_COUNT; k++)
        c->im[k].plan = (k == I_REDIST_MPI_TIME || k == I_REDIST_SHMEM_TIME)
                            ? c->plan_time
                            : c->plan;
    char ops[256];
    plan_ops(c->plan, ops, sizeof ops);
    redist_plan_stats_t pst;
    redist_plan_stats(c->plan, &pst);

    MPI_Type_contiguous((int)c->elem, MPI_BYTE, &c->et);
    MPI_Type_commit(&c->et);
    setup_exchange(c);

    /* redist contexts (collective) */
    {
        for (int k = I_REDIST_MPI; k <= I_REDIST_MPI_TIME; k++) {
            if (!(o->impl_mask >> k & 1u) || !c->im[k].plan)
                continue;
            redist_mpi_options_t mo = {0, 0};
            if (k == I_REDIST_MPI_PACKED)
                mo.flags = REDIST_MPI_PACKED;
            if (redist_mpi_create(MPI_COMM_WORLD, c->mesh, &mo, &c->im[k].mx,
                                  &err) ||
                redist_mpi_exec_info(c->im[k].mx, c->im[k].plan, NULL,
                                     &c->im[k].minfo, &err)) {
                char msg[600];
                die("redist_mpi: %s", redist_error_format(&err, msg,
                                                          sizeof msg));
            }
        }
    }
    choose_impls(c, o);
    uint64_t base = (c->src_bytes * 2 + c->dst_bytes) * (uint64_t)g_size;
    if (o->mem_budget && base > o->mem_budget) {
        char b[32];
        fmt_bytes(base, b, sizeof b);
        say("%-44s skipped: buffers need %s on the node\n", c->name, b);
        for (int k = 0; k < I_COUNT; k++)
            c->im[k].on = 0;
    }
    int any = 0;
    for (int k = 0; k < I_COUNT; k++)
        any |= c->im[k].on;
    if (any) {
        alloc_buffers(c);
        c->pristine = xmalloc(c->src_bytes);
        rd_pattern_fill(spec, g_rank, c->pristine);
        memset(c->dst, 0, c->dst_bytes); /* touch */
    }
#ifdef BENCH_HAVE_SHMEM
    for (int k = I_REDIST_SHMEM; k <= I_REDIST_SHMEM_TIME; k++) {
        impl_t *im = &c->im[k];
        if (!is_shmem_impl(k) || !im->on)
            continue;
        if (redist_shmem_create(c->mesh, NULL, &im->sx, &err) ||
            redist_shmem_exec_info(im->sx, im->plan, c->src, c->dst, NULL,
                                   &im->sinfo, &err)) {
            char msg[600];
            die("redist_shmem: %s",
                redist_error_format(&err, msg, sizeof msg));
        }
    }
#endif
    if (c->im[I_GATHER].on)
        setup_gather(c);
    if (c->im[I_ALLTOALLW].on)
        setup_alltoallw(c);
#ifdef BENCH_HAVE_SCALAPACK
    if (c->im[I_PDGEMR2D].on) {
        impl_t *im = &c->im[I_PDGEMR2D];
        gemr_grid(c, from, &im->gemr_src_ctxt, im->desca);
        gemr_grid(c, to, &im->gemr_dst_ctxt, im->descb);
        im->gm = (int)redist_spec_shape(spec)[1];
        im->gn = (int)redist_spec_shape(spec)[0];
    }
#endif

    int n = 0, order[I_COUNT];
    for (int k = 0; k < I_COUNT; k++)
        if (c->im[k].on) {
            order[n++] = k;
            c->im[k].t = xmalloc(sizeof(double) * (size_t)o->reps);
            c->im[k].fl = xmalloc(sizeof(double) * (size_t)o->reps);
        }
    /* the alternatives' workspaces: allocated and touched once, reused
     * by every timed call (what a careful hand-written code does) */
    c->pss_base = pss_now();
    c->fresh = o->fresh;
    if (!c->fresh && c->im[I_GATHER].on) {
        c->gbuf = xmalloc(gather_bytes(c));
        memset(c->gbuf, 0, gather_bytes(c));
    }
    if (!c->fresh && c->im[I_ALLTOALLV].on) {
        c->sbuf = xmalloc(c->send_elems * c->elem);
        c->rbuf = xmalloc(c->recv_elems * c->elem);
        memset(c->sbuf, 0, c->send_elems * c->elem);
        memset(c->rbuf, 0, c->recv_elems * c->elem);
    }
    double wall0 = MPI_Wtime();
    for (int round = -o->warmup; round < o->reps; round++) {
        int shift = (round + o->warmup) % (n ? n : 1);
        for (int j = 0; j < n; j++) {
            int k = order[(j + shift) % n];
            int verify = round == -o->warmup || round == o->reps - 1;
            double v[2];
            v[0] = run_once(c, k, verify,
                            round < 0 ? "warm-up" : "last timed", 0);
            v[1] = (double)c->im[k].faults;
            MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
            if (round >= 0) {
                c->im[k].t[round] = v[0];
                c->im[k].fl[round] = v[1];
            }
        }
    }
    /* memory probe: one more checked run of each, every buffer it needs
     * allocated inside the call, peak RSS from a reset high-water mark */
    free(c->gbuf);
    free(c->sbuf);
    free(c->rbuf);
    c->gbuf = c->sbuf = c->rbuf = NULL;
    c->fresh = 1;
    for (int j = 0; j < n; j++)
        run_once(c, order[j], 1, "memory probe", 1);
    double wall = MPI_Wtime() - wall0;

    /* report */
    char sb[32], db[32], lb[32];
    fmt_bytes(c->src_bytes, sb, sizeof sb);
    fmt_bytes(c->dst_bytes, db, sizeof db);
    fmt_bytes(c->lack_max, lb, sizeof lb);
    char pb[32];
    fmt_bytes(pst.recv_bytes, pb, sizeof pb);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int oversub = g_size > cores;
    char tf[256], tt[256];
    redist_type_format(from, c->mesh, tf, sizeof tf);
    redist_type_format(to, c->mesh, tt, sizeof tt);
    say("\n== %s  (%s, %d ranks%s)\n   %s %s -> %s; per rank src %s, dst %s, "
        "must receive %s (max)\n   plan %s (%.1f us), receives %s per "
        "rank\n",
        c->name, specname, g_size, oversub ? ", oversubscribed" : "",
        redist_dtype_name(c->dt), tf, tt, sb, db, lb, ops, c->plan_us, pb);
    if (c->plan_time) {
        char tops[256], tb[32];
        redist_plan_stats_t tst;
        plan_ops(c->plan_time, tops, sizeof tops);
        redist_plan_stats(c->plan_time, &tst);
        fmt_bytes(tst.recv_bytes, tb, sizeof tb);
        say("   time-objective plan %s, receives %s per rank\n", tops, tb);
    }
    for (int k = 0; k < I_COUNT; k++) {
        impl_t *im = &c->im[k];
        uint64_t own = 0, extra = 0, hwm = 0, pss = 0, flt = 0, flt_max = 0;
        double med = 0, mn = 0, mx = 0;
        if (im->on) {
            qsort(im->t, (size_t)o->reps, sizeof(double), cmp_double);
            med = o->reps % 2 ? im->t[o->reps / 2]
                              : 0.5 * (im->t[o->reps / 2 - 1] +
                                       im->t[o->reps / 2]);
            mn = im->t[0];
            mx = im->t[o->reps - 1];
            own = umax_over_ranks(im->own);
            extra = umax_over_ranks(im->rss_extra);
            hwm = umax_over_ranks(im->hwm);
            pss = umax_over_ranks(im->pss);
            qsort(im->fl, (size_t)o->reps, sizeof(double), cmp_double);
            flt = (uint64_t)im->fl[o->reps / 2];
            flt_max = (uint64_t)im->fl[o->reps - 1];
        }
        int passes = 0;
        long long exch = 0;
        if (is_mpi_impl(k) && im->mx) {
            passes = im->minfo.exec.passes;
            exch = (long long)im->minfo.exchanges;
        }
#ifdef BENCH_HAVE_SHMEM
        if (is_shmem_impl(k) && im->sx) {
            passes = im->sinfo.exec.passes;
            exch = im->sinfo.exec.collectives;
        }
#endif
        const char *status = !im->on ? "skip" : im->failed ? "FAIL" : "ok";
        char iops[256];
        redist_plan_stats_t ist = pst;
        snprintf(iops, sizeof iops, "%s", ops);
        if (im->plan && im->plan != c->plan) {
            plan_ops(im->plan, iops, sizeof iops);
            redist_plan_stats(im->plan, &ist);
        }
        double gbps = med > 0 ? (double)c->lack_max / med * 1e-9 : 0;
        if (im->on) {
            char ob[32], eb[32];
            fmt_bytes(own, ob, sizeof ob);
            fmt_bytes(extra, eb, sizeof eb);
            say("   %-18s %10.3f ms  [%8.3f .. %8.3f]  %6.2f GB/s  own %10s  "
                "rss+ %10s  faults %6llu (max %llu)%s\n",
                impl_names[k], med * 1e3, mn * 1e3, mx * 1e3, gbps, ob, eb,
                (unsigned long long)flt, (unsigned long long)flt_max,
                im->failed ? "  WRONG RESULT" : "");
        } else if (strcmp(im->why, "not selected") != 0)
            say("   %-18s skipped: %s\n", impl_names[k], im->why);
        if (csv && g_rank == 0 && strcmp(im->why, "not selected") != 0)
            fprintf(csv,
                    "%s,%s,%d,%d,%s,%s,%llu,%llu,%llu,%s,%s,%d,%.6e,%.6e,"
                    "%.6e,%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%s,%llu,%.1f,%d,"
                    "%lld,"
                    "\"%s\"\n",
                    label, specname, g_size, oversub, shp,
                    redist_dtype_name(c->dt),
                    (unsigned long long)c->src_bytes,
                    (unsigned long long)c->dst_bytes,
                    (unsigned long long)c->lack_max, impl_names[k], status,
                    im->on ? o->reps : 0, med, mn, mx, gbps,
                    (unsigned long long)own, (unsigned long long)extra,
                    (unsigned long long)hwm, (unsigned long long)pss,
                    (unsigned long long)flt, (unsigned long long)flt_max, iops,
                    (unsigned long long)ist.recv_bytes,
                    c->plan_us, passes, exch, im->on ? "" : im->why);
        if (im->failed)
            g_failures++;
    }
    say("   (%d warm-up + %d timed rounds in %.1f s)\n", o->warmup, o->reps,
        wall);
    if (csv && g_rank == 0)
        fflush(csv);
    free_case(c);
}

/* ------------------------------------------------------------ main */

/* Rank 0, alone: first-touch cost of fresh pages and one-core memcpy
 * bandwidth (warm buffers), the two local costs behind the results. */
static void machine_probe(void)
{
    if (g_rank == 0) {
        size_t n = 64u << 20;
        char *a = xmalloc(n), *b = xmalloc(n);
        double t0 = MPI_Wtime();
        memset(a, 1, n);
        double t1 = MPI_Wtime();
        memset(b, 1, n);
        double best = 1e9;
        for (int i = 0; i < 5; i++) {
            double u0 = MPI_Wtime();
            memcpy(b, a, n);
            double u = MPI_Wtime() - u0;
            best = u < best ? u : best;
        }
        printf("machine: first touch of fresh memory %.2f us per 4 KiB page "
               "(%.2f GB/s); memcpy %.1f GB/s on one core (warm, 64 MiB)\n",
               (t1 - t0) * 1e6 / (double)(n / 4096),
               (double)n / (t1 - t0) * 1e-9, (double)n / best * 1e-9);
        fflush(stdout);
        free(a);
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned parse_impls(const char *s)
{
    unsigned m = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        if (strcmp(tok, "all") == 0) {
            m |= (1u << I_COUNT) - 1;
            continue;
        }
        for (k = 0; k < I_COUNT; k++)
            if (strcmp(tok, impl_names[k]) == 0)
                break;
        if (k == I_COUNT)
            die("unknown implementation '%s'", tok);
        m |= 1u << k;
    }
    return m;
}

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr,
                "usage: mpirun -np D bench_redist [--reps N] [--warmup N]\n"
                "         [--sizes 1M,16M,...] [--impl LIST|all] [--csv FILE]\n"
                "         [--mem-budget BYTES] [--shmem] [--keep-going] "
                "[--fresh] [--corrupt IMPL] CASE...\n"
                "       bench_redist --features\n"
                "  CASE: SPEC.json (scaled to each size per rank) or\n"
                "        NAME:MESH:SHAPE:DTYPE:FROM:TO (as given)\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    opts_t o;
    memset(&o, 0, sizeof o);
    o.reps = 10;
    o.warmup = 1;
    o.sizes[o.nsizes++] = 1ULL << 20;
    o.impl_mask = (1u << I_COUNT) - 1;
    int first_case = argc;
    int want_shmem = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--reps") == 0 && i + 1 < argc)
            o.reps = atoi(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && i + 1 < argc)
            o.warmup = atoi(argv[++i]);
        else if (strcmp(a, "--sizes") == 0 && i + 1 < argc) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            o.nsizes = 0;
            for (char *t = strtok(buf, ","); t && o.nsizes < 32;
                 t = strtok(NULL, ","))
                if (parse_bytes(t, &o.sizes[o.nsizes++]))
                    die("bad size '%s'", t);
        } else if (strcmp(a, "--impl") == 0 && i + 1 < argc)
            o.impl_mask = parse_impls(argv[++i]);
        else if (strcmp(a, "--csv") == 0 && i + 1 < argc)
            o.csv = argv[++i];
        else if (strcmp(a, "--mem-budget") == 0 && i + 1 < argc) {
            if (parse_bytes(argv[++i], &o.mem_budget))
                die("bad --mem-budget");
        } else if (strcmp(a, "--shmem") == 0)
            want_shmem = 1;
        else if (strcmp(a, "--keep-going") == 0)
            g_keep_going = 1;
        else if (strcmp(a, "--fresh") == 0)
            o.fresh = 1;
        else if (strcmp(a, "--corrupt") == 0 && i + 1 < argc) {
            unsigned m = parse_impls(argv[++i]);
            for (g_corrupt = 0; g_corrupt < I_COUNT; g_corrupt++)
                if (m >> g_corrupt & 1u)
                    break;
        }
        else if (strcmp(a, "--features") == 0) {
            /* what this binary was built with, for scripts */
            if (g_rank == 0)
                printf("mpi%s%s\n",
#ifdef BENCH_HAVE_SHMEM
                       " shmem",
#else
                       "",
#endif
#ifdef BENCH_HAVE_SCALAPACK
                       " scalapack"
#else
                       ""
#endif
                );
            MPI_Finalize();
            return 0;
        }
        else if (a[0] == '-' && a[1] == '-') {
            usage();
            MPI_Finalize();
            return 2;
        } else {
            first_case = i;
            break;
        }
    }
    if (first_case >= argc || o.reps < 1 || o.warmup < 1) {
        usage();
        MPI_Finalize();
        return 2;
    }
    if (!o.mem_budget) {
        /* 80% of what the node has available now (rank 0's view) */
        uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable:");
        MPI_Bcast(&avail, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        o.mem_budget = avail / 10 * 8;
    }
    if (want_shmem) {
#ifdef BENCH_HAVE_SHMEM
        shmem_init();
        g_shmem = 1;
#else
        die("--shmem: this bench_redist was built without OpenSHMEM");
#endif
    } else
        o.impl_mask &= ~(1u << I_REDIST_SHMEM | 1u << I_REDIST_SHMEM_TIME);
#ifdef BENCH_HAVE_SCALAPACK
    if (o.impl_mask >> I_PDGEMR2D & 1u) {
        int me, np;
        Cblacs_pinfo(&me, &np);
        Cblacs_get(-1, 0, &g_blacs_sys);
        Cblacs_gridinit(&g_blacs_sys, "R", 1, np);
        g_blacs = 1;
    }
#endif
    FILE *csv = NULL;
    if (o.csv && g_rank == 0) {
        csv = fopen(o.csv, "a");
        if (!csv)
            die("%s: %s", o.csv, strerror(errno));
        if (ftell(csv) == 0)
            csv_header(csv);
    }
    machine_probe();
    if (hwm_reset() != 0)
        say("note: /proc/self/clear_refs not writable; peak RSS figures "
            "are cumulative\n");

    for (int i = first_case; i < argc; i++) {
        const char *arg = argv[i];
        redist_error_t err;
        redist_error_clear(&err);
        char msg[600];
        if (strchr(arg, ':') && !strstr(arg, ".json")) {
            /* inline NAME:MESH:SHAPE:DTYPE:FROM:TO */
            char buf[512], *f[6];
            int nf = 0;
            snprintf(buf, sizeof buf, "%s", arg);
            char *p = buf;
            f[nf++] = p;
            while (nf < 6 && (p = strchr(p, ':'))) {
                *p++ = '\0';
                f[nf++] = p;
            }
            if (nf != 6)
                die("inline case '%s': NAME:MESH:SHAPE:DTYPE:FROM:TO", arg);
            redist_spec_t *spec;
            if (redist_spec_from_strings(f[1], f[2], f[3], f[4], NULL, f[5],
                                         NULL, NULL, f[0], 0, &spec, &err))
                die("inline case '%s': %s", arg,
                    redist_error_format(&err, msg, sizeof msg));
            if (redist_mesh_num_devices(redist_spec_mesh(spec)) != g_size) {
                say("%-44s skipped: %lld devices, %d ranks\n", f[0],
                    (long long)redist_mesh_num_devices(redist_spec_mesh(spec)),
                    g_size);
                redist_spec_free(spec);
                continue;
            }
            run_case(spec, f[0], "inline", &o, csv);
            continue;
        }
        redist_spec_t *spec;
        if (redist_spec_load_file(arg, 0, &spec, &err)) {
            say("%-44s skipped: %s\n", arg,
                redist_error_format(&err, msg, sizeof msg));
            continue;
        }
        const char *base = strrchr(arg, '/');
        base = base ? base + 1 : arg;
        char sname[256];
        snprintf(sname, sizeof sname, "%s", base);
        char *dot = strstr(sname, ".json");
        if (dot)
            *dot = '\0';
        if (redist_mesh_num_devices(redist_spec_mesh(spec)) != g_size) {
            say("%-44s skipped: %lld devices, %d ranks\n", sname,
                (long long)redist_mesh_num_devices(redist_spec_mesh(spec)),
                g_size);
            redist_spec_free(spec);
            continue;
        }
        for (int s = 0; s < o.nsizes; s++) {
            redist_spec_t *sized;
            if (scale_spec(spec, o.sizes[s], &sized, &err)) {
                say("%-44s skipped: %s\n", sname,
                    redist_error_format(&err, msg, sizeof msg));
                break;
            }
            run_case(sized, sname, sname, &o, csv);
        }
        redist_spec_free(spec);
    }
    if (csv)
        fclose(csv);
    int fails = g_failures;
    if (g_rank == 0 && fails)
        fprintf(stderr, "bench_redist: %d implementation run(s) gave WRONG "
                        "results (see above)\n",
                fails);
#ifdef BENCH_HAVE_SCALAPACK
    if (g_blacs) {
        Cblacs_gridexit(g_blacs_sys);
        Cblacs_exit(1);
    }
#endif
#ifdef BENCH_HAVE_SHMEM
    if (g_shmem)
        shmem_finalize();
#endif
    int fin;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
    return fails ? 1 : 0;
}
