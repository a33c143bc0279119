/*
 * bench_call: the per-call cost of redist_mpi_execute from C, the
 * baseline of bench/bench_python.py (doc/python.md, "Overhead").  Under
 * mpirun: one mesh axis over all ranks, an f64 array dim 0 sharded ->
 * dim 1 sharded (one all_to_all), ELEMS elements per rank; REPS calls
 * timed one by one after a barrier and 3 warm-up calls, in ROUNDS rounds;
 * rank 0 prints the median of each round, in microseconds, one line:
 *   c ELEMS us_round1 us_round2 ...
 * usage: bench_call ELEMS REPS ROUNDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "redist.h"
#include "redist/mpi.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long long elems = argc > 1 ? atoll(argv[1]) : 64;
    int reps = argc > 2 ? atoi(argv[2]) : 1000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (elems < 1 || reps < 1 || rounds < 1) {
        if (me == 0)
            fprintf(stderr, "usage: bench_call ELEMS REPS ROUNDS\n");
        MPI_Finalize();
        return 2;
    }
    /* local [rows, cols] with rows * cols = elems; global [rows*n, cols] */
    long long cols = n;
    while (cols * cols < elems / n * n && elems % (cols * 2) == 0)
        cols *= 2;
    if (elems % cols) {
        if (me == 0)
            fprintf(stderr, "bench_call: ELEMS must be a multiple of the rank count\n");
        MPI_Finalize();
        return 2;
    }
    char mesh[64], shape[64];
    snprintf(mesh, sizeof mesh, "x=%d", n);
    snprintf(shape, sizeof shape, "%lldx%lld", elems / cols * n, cols);
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_mpi_t *mx = NULL;
    if (redist_spec_from_strings(mesh, shape, "f64", "x|", NULL, "|x", NULL,
                                 NULL, "bench", 0, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err) ||
        redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(spec), NULL, &mx,
                          &err)) {
        char msg[512];
        fprintf(stderr, "bench_call: %s\n", redist_error_format(&err, msg, sizeof msg));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t sb = redist_spec_src_bytes(spec), db = redist_spec_dst_bytes(spec);
    double *src = calloc(sb / 8 + 1, 8), *dst = calloc(db / 8 + 1, 8);
    double *t = malloc(sizeof *t * (size_t)reps);
    redist_exec_options_t eo = {REDIST_EXEC_PRESERVE_SRC};
    if (!src || !dst || !t)
        MPI_Abort(MPI_COMM_WORLD, 2);
    /* line "c": redist_mpi_execute per call; line "p": redist_mpi_run of
     * an object prepared once */
    redist_mpi_prepared_t *pr = NULL;
    if (redist_mpi_prepare(mx, plan, src, dst, &eo, &pr, &err))
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int prepared = 0; prepared < 2; prepared++) {
        if (me == 0)
            printf("%c %lld", prepared ? 'p' : 'c', elems);
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < 3 + reps; i++) {
                if (i == 3)
                    MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (prepared ? redist_mpi_run(pr, NULL, &err)
                             : redist_mpi_execute(mx, plan, src, dst, &eo,
                                                  NULL, &err))
                    MPI_Abort(MPI_COMM_WORLD, 1);
                if (i >= 3)
                    t[i - 3] = MPI_Wtime() - t0;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            if (me == 0)
                printf(" %.2f", t[reps / 2] * 1e6);
        }
        if (me == 0)
            printf("\n");
    }
    redist_mpi_prepared_free(pr);
    free(t);
    free(src);
    free(dst);
    redist_mpi_free(mx);
    redist_plan_free(plan);
    redist_spec_free(spec);
    MPI_Finalize();
    return 0;
}
