/*
 * Prepared objects of the MPI backend (redist_mpi_prepare .. _free) under
 * mpirun at any rank count:
 *
 *   mpirun -np N test_prepared CASES SEED            (MPI_THREAD_MULTIPLE)
 *   mpirun -np N test_prepared CASES SEED single     (MPI_Init: no start)
 *   mpirun -np 2 test_prepared 0 1 overlap           (+ the overlap test)
 *
 *  - random plans (planned, and walks with exchange steps) in random
 *    modes: every run of a prepared object, blocking or started and
 *    waited for, repeated, gives redist_mpi_execute's result byte for
 *    byte, with the same scratch high-water mark every run, within the
 *    promise;
 *  - misuse caught on every rank together, no hang (a NULL buffer or
 *    another plan on one rank, an allocation failing on one rank at
 *    prepare; wait / test with nothing started, start or run while in
 *    flight; start without MPI_THREAD_MULTIPLE);
 *  - overlap: the time of start; compute; wait against run + compute,
 *    medians of 7, where compute is a sleep (an accelerator's work: the
 *    cores stay free) of the run's length; the hidden fraction must be
 *    at least 0.5 (measured about 0.9); CPU-bound compute is reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"
#include "../common/overlap.h"
#include "../common/mpi_check.h"
#include "../common/random_plan.h"

static int rank, nranks, failures, checks, runs, started, uneven_cases;
static rp_rng rng = {0x9e3779b97f4a7c15ULL};


/* One plan: the one-shot result, then prepared runs of every kind. */
static void check_plan(const redist_plan_t *plan, int async)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    /* this rank's own block (uneven dims: up to T; the rest of the
     * buffer is not written) */
    uint64_t mine = redist_spec_device_bytes(s, 1, rank);
    redist_mpi_options_t mo = {(unsigned)rp_in(&rng, 0, 3), 0};
    redist_exec_options_t eo = {rp_in(&rng, 0, 2) ? 0u
                                                  : REDIST_EXEC_PRESERVE_SRC};
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), &mo, &mx,
                          &err)) {
        CHECK(0, "create: %s", err.text);
        return;
    }
    uint64_t seed = rp_next(&rng);
    unsigned char *src = malloc(S ? S : 1), *dst = malloc(T ? T : 1),
                  *ref = malloc(T ? T : 1);
    rp_fill_bits(src, S, seed, rank);
    memset(ref, 0x5c, T);
    redist_exec_report_t rep;
    redist_status_t st = redist_mpi_execute(mx, plan, src, ref, &eo, &rep,
                                            &err);
    CHECK(!st, "execute: %s", err.text);
    redist_mpi_prepared_t *pr = NULL;
    st = redist_mpi_prepare(mx, plan, src, dst, &eo, &pr, &err);
    CHECK(!st, "prepare: %s", err.text);
    if (!st) {
        uint64_t high = 0;
        for (int k = 0; k < 3; k++) {
            rp_fill_bits(src, S, seed, rank);
            memset(dst, 0xA5, T);
            int nb = async && (k == 1 || rp_in(&rng, 0, 1));
            int poll = (int)rp_in(&rng, 0, 1); /* else wait at once */
            if (nb) {
                int done = 0;
                st = redist_mpi_start(pr, &err);
                CHECK(!st, "start: %s", err.text);
                while (poll && !st && !done)
                    st = redist_mpi_test(pr, &done, &err);
                if (!st)
                    st = redist_mpi_wait(pr, &rep, &err);
                started++;
            } else {
                st = redist_mpi_run(pr, &rep, &err);
            }
            runs++;
            CHECK(!st, "%s: %s", nb ? "start/wait" : "run", err.text);
            CHECK(!st && !memcmp(dst, ref, mine),
                  "run %d (%s) differs from redist_mpi_execute", k,
                  nb ? "start/wait" : "run");
            CHECK(rep.scratch_high_water <= rep.scratch_bytes &&
                      (k == 0 || rep.scratch_high_water == high),
                  "high-water %llu (promise %llu, before %llu)",
                  (unsigned long long)rep.scratch_high_water,
                  (unsigned long long)rep.scratch_bytes,
                  (unsigned long long)high);
            high = rep.scratch_high_water;
        }
        redist_mpi_prepared_free(pr);
    }
    free(src);
    free(dst);
    free(ref);
    redist_mpi_free(mx);
}

static void random_cases(int n, int async)
{
    for (int i = 0; i < n; i++) {
        redist_mesh_t *m = rp_mesh_exact(&rng, nranks, i % 2);
        redist_plan_t *plan = NULL;
        int uneven = 0;
        rp_mixed_plan(&rng, m, i, &plan, &uneven);
        uneven_cases += uneven;
        /* every rank drew the same: either all have a plan or none */
        if (plan && redist_spec_src_bytes(redist_plan_spec(plan)) < (8 << 20))
            check_plan(plan, async);
        redist_plan_free(plan);
        redist_mesh_free(m);
    }
}

static void misuse(int async)
{
    redist_plan_t *plan = ov_a2a_plan(nranks, 8 * nranks, 8 * nranks, 0);
    redist_plan_t *other = ov_a2a_plan(nranks, 16 * nranks, 8 * nranks, 0);
    const redist_spec_t *s = redist_plan_spec(plan);
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), NULL, &mx, NULL);
    char *src = calloc(1, redist_spec_src_bytes(redist_plan_spec(other)));
    char *dst = calloc(1, redist_spec_dst_bytes(redist_plan_spec(other)));
    redist_mpi_prepared_t *pr = NULL;
    int last = nranks - 1;
    redist_status_t st;
    /* a NULL buffer, the same buffer twice, another plan on one rank */
    st = redist_mpi_prepare(mx, plan, rank == last ? NULL : src, dst, NULL,
                            &pr, &err);
    CHECK(all_fail(st) && !pr, "a NULL src on rank %d: not every rank "
          "failed", last);
    st = redist_mpi_prepare(mx, plan, src, rank == last ? src : dst, NULL,
                            &pr, &err);
    CHECK(all_fail(st) && !pr, "src == dst on one rank");
    st = redist_mpi_prepare(mx, rank == last ? other : plan, src, dst, NULL,
                            &pr, &err);
    if (nranks > 1)
        CHECK(all_fail(st) && st == REDIST_ERR_MISMATCH,
              "another plan on one rank: status %d (%s)", st, err.text);
    redist_mpi_prepared_free(pr);
    pr = NULL;
    if (rank == 0)
        rd_mpi_fail_allocs(1); /* its prepared object */
    st = redist_mpi_prepare(mx, plan, src, dst, NULL, &pr, &err);
    CHECK(all_fail(st), "an allocation failing on rank 0 at prepare");
    if (rank == 0)
        rd_mpi_fail_allocs(2); /* deeper: the program's buffers */
    st = redist_mpi_prepare(mx, plan, src, dst, NULL, &pr, &err);
    CHECK(all_fail(st), "allocations failing on rank 0 at prepare");
    rd_mpi_fail_allocs(0);
    /* the call sequence */
    st = redist_mpi_prepare(mx, plan, src, dst, NULL, &pr, &err);
    CHECK(!st, "prepare: %s", err.text);
    int done = 0;
    CHECK(redist_mpi_wait(pr, NULL, &err) == REDIST_ERR_INVALID,
          "wait with nothing started");
    CHECK(redist_mpi_test(pr, &done, &err) == REDIST_ERR_INVALID,
          "test with nothing started");
    CHECK(redist_mpi_prepared_async(pr) == async, "async %d, expected %d",
          redist_mpi_prepared_async(pr), async);
    if (async) {
        CHECK(!redist_mpi_start(pr, &err), "start: %s", err.text);
        CHECK(redist_mpi_start(pr, &err) == REDIST_ERR_INVALID,
              "start while in flight");
        CHECK(redist_mpi_run(pr, NULL, &err) == REDIST_ERR_INVALID,
              "run while in flight");
        CHECK(!redist_mpi_wait(pr, NULL, &err), "wait: %s", err.text);
        CHECK(!redist_mpi_run(pr, NULL, &err), "run after wait: %s",
              err.text);
        /* freeing an object whose run is in flight waits for it */
        CHECK(!redist_mpi_start(pr, &err), "start: %s", err.text);
    } else {
        redist_error_clear(&err);
        st = redist_mpi_start(pr, &err);
        CHECK(st == REDIST_ERR_INVALID &&
                  strstr(err.text, "MPI_THREAD_MULTIPLE"),
              "start without MPI_THREAD_MULTIPLE: %d %s", st, err.text);
        CHECK(!redist_mpi_run(pr, NULL, &err), "run: %s", err.text);
    }
    redist_mpi_prepared_free(pr);
    free(src);
    free(dst);
    redist_mpi_free(mx);
    redist_plan_free(plan);
    redist_plan_free(other);
}

/* ov_measure's operations on a prepared MPI object */
static void op_run(void *c) { redist_mpi_run(c, NULL, NULL); }
static void op_start(void *c) { redist_mpi_start(c, NULL); }
static void op_wait(void *c) { redist_mpi_wait(c, NULL, NULL); }
static void op_barrier(void *c) { (void)c; MPI_Barrier(MPI_COMM_WORLD); }
static void op_max(double *v, int n, void *c)
{
    (void)c;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

/* start; compute; wait against run + compute (the slowest rank's time). */
static void overlap(void)
{
    enum { REPS = 7 };
    /* 64 MiB per rank */
    redist_plan_t *plan = ov_a2a_plan(nranks, 4096, 4096 * nranks, 0);
    const redist_spec_t *s = redist_plan_spec(plan);
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), NULL, &mx, NULL);
    char *src = calloc(1, redist_spec_src_bytes(s));
    char *dst = calloc(1, redist_spec_dst_bytes(s));
    redist_mpi_prepared_t *pr = NULL;
    if (redist_mpi_prepare(mx, plan, src, dst, NULL, &pr, &err)) {
        CHECK(0, "prepare: %s", err.text);
        return;
    }
    ov_ops_t ops = {op_run, op_start, op_wait, op_barrier, op_max, pr};
    ov_result_t r = ov_measure(&ops, REPS, OV_ATTEMPTS, 0.5);
    char what[64];
    snprintf(what, sizeof what, "%d ranks, all_to_all 64 MiB per rank", nranks);
    if (rank == 0)
        ov_print(what, REPS, &r);
    CHECK(r.hidden >= 0.5, "only %.0f%% of the redistribution hidden behind "
          "a sleeping compute phase", r.hidden * 100);
    redist_mpi_prepared_free(pr);
    free(src);
    free(dst);
    redist_mpi_free(mx);
    redist_plan_free(plan);
}

int main(int argc, char **argv)
{
    int single = argc > 3 && !strcmp(argv[3], "single");
    int provided = MPI_THREAD_SINGLE;
    if (single)
        MPI_Init(&argc, &argv);
    else
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)nranks);
    int async = !single && provided >= MPI_THREAD_MULTIPLE;
    double t0 = MPI_Wtime();
    misuse(async);
    random_cases(argc > 1 ? atoi(argv[1]) : 20, async);
    if (argc > 3 && !strcmp(argv[3], "overlap") && async)
        overlap();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi prepared, %d rank%s%s: %d runs (%d started, %d uneven plans), %d "
               "checks, %d failed; %.2f s\n",
               nranks, nranks == 1 ? "" : "s",
               single ? " (MPI_Init)" : "", runs, started, uneven_cases, checks, total,
               MPI_Wtime() - t0);
    MPI_Finalize();
    return total ? 1 : 0;
}
