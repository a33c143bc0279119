/*
 * Prepared objects of the OpenSHMEM backend (redist_shmem_prepare ..
 * _free) under oshrun at any PE count:
 *
 *   oshrun -np N test_prepared_shmem CASES SEED         (THREAD_MULTIPLE)
 *   oshrun -np N test_prepared_shmem CASES SEED single  (shmem_init)
 *   oshrun -np 2 test_prepared_shmem 0 1 overlap        (+ the overlap)
 *
 * As tests/mpi/test_prepared.c: repeated runs, blocking and started, on
 * symmetric and private buffers, against redist_shmem_execute byte for
 * byte; misuse on every PE together; start without
 * SHMEM_THREAD_MULTIPLE; a PE failing in the middle of a started run
 * (every PE's wait fails, no hang); the overlap of a started run with a
 * sleeping compute phase (at least 0.5 hidden).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../../src/backend/shmem/shmem_internal.h"
#include "../common/overlap.h"
#include "../common/random_plan.h"

static int rank, nranks, failures, checks, runs, started, uneven_cases;
static rp_rng rng = {0x9e3779b97f4a7c15ULL};

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL (rank %d): ", rank);                       \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static double dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long red_in, red_out;
static double dred_in[5], dred_out[5];

static long reduce_long(long v, int max)
{
    red_in = v;
    shmem_barrier_all();
    if (max)
        shmem_long_max_to_all(&red_out, &red_in, 1, 0, 0, nranks, pwrk,
                              psync);
    else
        shmem_long_min_to_all(&red_out, &red_in, 1, 0, 0, nranks, pwrk,
                              psync);
    shmem_barrier_all();
    return red_out;
}

static int all_fail(redist_status_t st)
{
    return (int)reduce_long(st != REDIST_OK, 0);
}

static void max_doubles(double *v, int n)
{
    memcpy(dred_in, v, (size_t)n * sizeof *v);
    shmem_barrier_all();
    shmem_double_max_to_all(dred_out, dred_in, n, 0, 0, nranks, dwrk, psync);
    shmem_barrier_all();
    memcpy(v, dred_out, (size_t)n * sizeof *v);
}

static void *buf_alloc(uint64_t n, int sym)
{
    return sym ? shmem_calloc(1, n ? n : 1) : calloc(1, n ? n : 1);
}

static void buf_free(void *p, int sym)
{
    if (sym)
        shmem_free(p);
    else
        free(p);
}

/* One plan: the one-shot result, then prepared runs of every kind. */
static void check_plan(const redist_plan_t *plan, int async)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    /* this rank's own block (uneven dims: up to T; the rest of the
     * buffer is not written) */
    uint64_t mine = redist_spec_device_bytes(s, 1, rank);
    redist_shmem_options_t mo = {(unsigned)rp_in(&rng, 0, 3), 0};
    int sym = (int)rp_in(&rng, 0, 1);
    redist_exec_options_t eo = {rp_in(&rng, 0, 2) ? 0u
                                                  : REDIST_EXEC_PRESERVE_SRC};
    redist_shmem_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_create(redist_spec_mesh(s), &mo, &mx, &err)) {
        CHECK(0, "create: %s", err.text);
        return;
    }
    uint64_t seed = rp_next(&rng);
    unsigned char *src = buf_alloc(S, sym), *dst = buf_alloc(T, sym),
                  *ref = buf_alloc(T, sym);
    rp_fill_bits(src, S, seed, rank);
    memset(ref, 0x5c, T);
    redist_exec_report_t rep;
    redist_status_t st = redist_shmem_execute(mx, plan, src, ref, &eo, &rep,
                                            &err);
    CHECK(!st, "execute: %s", err.text);
    redist_shmem_prepared_t *pr = NULL;
    st = redist_shmem_prepare(mx, plan, src, dst, &eo, &pr, &err);
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
                st = redist_shmem_start(pr, &err);
                CHECK(!st, "start: %s", err.text);
                while (poll && !st && !done)
                    st = redist_shmem_test(pr, &done, &err);
                if (!st)
                    st = redist_shmem_wait(pr, &rep, &err);
                started++;
            } else {
                st = redist_shmem_run(pr, &rep, &err);
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
        redist_shmem_prepared_free(pr);
    }
    buf_free(src, sym);
    buf_free(dst, sym);
    buf_free(ref, sym);
    redist_shmem_free(mx);
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
    redist_shmem_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_shmem_create(redist_spec_mesh(s), NULL, &mx, NULL);
    char *src = calloc(1, redist_spec_src_bytes(redist_plan_spec(other)));
    char *dst = calloc(1, redist_spec_dst_bytes(redist_plan_spec(other)));
    redist_shmem_prepared_t *pr = NULL;
    int last = nranks - 1;
    redist_status_t st;
    /* a NULL buffer, the same buffer twice, another plan on one rank */
    st = redist_shmem_prepare(mx, plan, rank == last ? NULL : src, dst, NULL,
                            &pr, &err);
    CHECK(all_fail(st) && !pr, "a NULL src on rank %d: not every rank "
          "failed", last);
    st = redist_shmem_prepare(mx, plan, src, rank == last ? src : dst, NULL,
                            &pr, &err);
    CHECK(all_fail(st) && !pr, "src == dst on one rank");
    st = redist_shmem_prepare(mx, rank == last ? other : plan, src, dst, NULL,
                            &pr, &err);
    if (nranks > 1)
        CHECK(all_fail(st) && st == REDIST_ERR_MISMATCH,
              "another plan on one rank: status %d (%s)", st, err.text);
    redist_shmem_prepared_free(pr);
    pr = NULL;
    /* the call sequence */
    st = redist_shmem_prepare(mx, plan, src, dst, NULL, &pr, &err);
    CHECK(!st, "prepare: %s", err.text);
    int done = 0;
    CHECK(redist_shmem_wait(pr, NULL, &err) == REDIST_ERR_INVALID,
          "wait with nothing started");
    CHECK(redist_shmem_test(pr, &done, &err) == REDIST_ERR_INVALID,
          "test with nothing started");
    CHECK(redist_shmem_prepared_async(pr) == async, "async %d, expected %d",
          redist_shmem_prepared_async(pr), async);
    if (async) {
        CHECK(!redist_shmem_start(pr, &err), "start: %s", err.text);
        CHECK(redist_shmem_start(pr, &err) == REDIST_ERR_INVALID,
              "start while in flight");
        CHECK(redist_shmem_run(pr, NULL, &err) == REDIST_ERR_INVALID,
              "run while in flight");
        CHECK(!redist_shmem_wait(pr, NULL, &err), "wait: %s", err.text);
        CHECK(!redist_shmem_run(pr, NULL, &err), "run after wait: %s",
              err.text);
        /* the context is occupied by a started run */
        CHECK(!redist_shmem_start(pr, &err), "start: %s", err.text);
        CHECK(redist_shmem_execute(mx, plan, src, dst, NULL, NULL, &err) ==
                  REDIST_ERR_INVALID,
              "execute on a context with a run in flight");
        CHECK(!redist_shmem_wait(pr, NULL, &err), "wait: %s", err.text);
        /* a PE failing in the middle of a started run: every wait fails */
        if (nranks > 1) {
            if (rank == last)
                rd_shmem_inject_failure(mx, 0);
            CHECK(!redist_shmem_start(pr, &err), "start: %s", err.text);
            st = redist_shmem_wait(pr, NULL, &err);
            CHECK(all_fail(st), "a PE failing in a started run: not every "
                  "wait failed (%d)", st);
            rd_shmem_inject_failure(mx, -1);
        }
        /* freeing an object whose run is in flight waits for it */
        CHECK(!redist_shmem_start(pr, &err) || nranks > 1, "start: %s",
              err.text);
    } else {
        redist_error_clear(&err);
        st = redist_shmem_start(pr, &err);
        CHECK(st == REDIST_ERR_INVALID &&
                  strstr(err.text, "SHMEM_THREAD_MULTIPLE"),
              "start without MPI_THREAD_MULTIPLE: %d %s", st, err.text);
        CHECK(!redist_shmem_run(pr, NULL, &err), "run: %s", err.text);
    }
    redist_shmem_prepared_free(pr);
    free(src);
    free(dst);
    redist_shmem_free(mx);
    redist_plan_free(plan);
    redist_plan_free(other);
}

/* ov_measure's operations on a prepared OpenSHMEM object */
static void op_run(void *c) { redist_shmem_run(c, NULL, NULL); }
static void op_start(void *c) { redist_shmem_start(c, NULL); }
static void op_wait(void *c) { redist_shmem_wait(c, NULL, NULL); }
static void op_barrier(void *c) { (void)c; shmem_barrier_all(); }
static void op_max(double *v, int n, void *c)
{
    (void)c;
    max_doubles(v, n);
}

/* start; compute; wait against run + compute (the slowest PE's time). */
static void overlap(void)
{
    enum { REPS = 7 };
    /* 64 MiB per PE */
    redist_plan_t *plan = ov_a2a_plan(nranks, 4096, 4096 * nranks, 0);
    const redist_spec_t *s = redist_plan_spec(plan);
    redist_shmem_t *mx = NULL;
    redist_error_t err;
    redist_shmem_create(redist_spec_mesh(s), NULL, &mx, NULL);
    char *src = shmem_calloc(1, redist_spec_src_bytes(s));
    char *dst = shmem_calloc(1, redist_spec_dst_bytes(s));
    redist_shmem_prepared_t *pr = NULL;
    if (redist_shmem_prepare(mx, plan, src, dst, NULL, &pr, &err)) {
        CHECK(0, "prepare: %s", err.text);
        return;
    }
    ov_ops_t ops = {op_run, op_start, op_wait, op_barrier, op_max, pr};
    ov_result_t r = ov_measure(&ops, REPS, OV_ATTEMPTS, 0.5);
    char what[64];
    snprintf(what, sizeof what, "%d PEs, all_to_all 64 MiB per PE", nranks);
    if (rank == 0)
        ov_print(what, REPS, &r);
    CHECK(r.hidden >= 0.5, "only %.0f%% of the redistribution hidden behind "
          "a sleeping compute phase", r.hidden * 100);
    redist_shmem_prepared_free(pr);
    shmem_free(src);
    shmem_free(dst);
    redist_shmem_free(mx);
    redist_plan_free(plan);
}

int main(int argc, char **argv)
{
    int single = argc > 3 && !strcmp(argv[3], "single");
    int provided = SHMEM_THREAD_SINGLE;
    if (single)
        shmem_init();
    else
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    rank = shmem_my_pe();
    nranks = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)nranks);
    int async = !single && provided >= SHMEM_THREAD_MULTIPLE;
    double t0 = ov_now();
    misuse(async);
    random_cases(argc > 1 ? atoi(argv[1]) : 20, async);
    if (argc > 3 && !strcmp(argv[3], "overlap") && async)
        overlap();
    long total = reduce_long(failures, 1);
    if (rank == 0)
        printf("shmem prepared, %d PE%s%s: %d runs (%d started, %d uneven plans), %d "
               "checks, %ld failed (max per PE); %.2f s\n",
               nranks, nranks == 1 ? "" : "s",
               single ? " (shmem_init)" : "", runs, started, uneven_cases, checks, total,
               ov_now() - t0);
    shmem_finalize();
    return total ? 1 : 0;
}
