/*
 * Shared windows of the MPI backend (redist_mpi_alloc, redist_mpi_free_mem)
 * and the direct path of prepared objects through them, under mpirun at
 * any rank count on one node:
 *
 *   mpirun -np N test_window CASES SEED            (MPI_THREAD_MULTIPLE)
 *   mpirun -np N test_window CASES SEED single     (MPI_Init: no start)
 *
 *  - the allocator: any size (0 included) aligned and writable, each
 *    rank's own size; a failure on one rank fails every rank and writes
 *    nothing; free_mem of a foreign pointer or of different allocations
 *    fails on every rank and frees nothing; what is left is freed by
 *    redist_mpi_free (leak-checked under ASan);
 *  - fixed plans (an all_to_all, an all_gather, a bf16 reduce_scatter,
 *    an exchange and a two-step reduce_scatter whose second step reads
 *    scratch at even rank counts from 4, a permute at 4 ranks):
 *    with both buffers from the allocator the step runs direct
 *    (redist_mpi_prepared_direct, the stats of the run), exact;
 *  - ranks on several nodes (nodes of one rank played here): two-sided,
 *    exact;
 *  - random plans (planned, exchange walks, reductions, uneven dims) in
 *    four placements: both buffers in windows, src only, one rank's src
 *    from malloc (the fallback: direct on no rank), none; each prepared
 *    object is run 4 times on two alternating inputs, blocking and
 *    started, and must give redist_mpi_execute's result each time; every
 *    rank reports the same number of direct passes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"
#include "../common/mpi_check.h"
#include "../common/random_plan.h"

static int rank, nranks, failures, checks, runs, started, direct_cases,
    fallback_cases, uneven_cases;
static int g_node_ranks; /* check_plan's contexts: nodes of this many */
static rp_rng rng = {0x9e3779b97f4a7c15ULL};

/* 1 when v is the same on every rank */
static int same_everywhere(int v)
{
    int lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static void allocator(void)
{
    redist_mesh_t *m = NULL;
    int64_t n = nranks;
    const char *names[] = {"x"};
    redist_mesh_create(1, names, &n, &m, NULL);
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    CHECK(!redist_mpi_create(MPI_COMM_WORLD, m, NULL, &mx, &err), "create: %s",
          err.text);
    /* each rank its own size, 0 on rank 0 */
    void *a = NULL, *b = NULL, *c = NULL;
    uint64_t mine = (uint64_t)rank * 1000 + 3;
    CHECK(!redist_mpi_alloc(mx, rank ? mine : 0, &a, &err), "alloc: %s",
          err.text);
    CHECK(a && (uintptr_t)a % REDIST_MPI_ALIGN == 0, "alloc: %p not aligned",
          a);
    if (a && rank)
        memset(a, 0x3c, mine);
    /* a failure on one rank: every rank fails, *out untouched */
    if (rank == nranks - 1)
        rd_mpi_fail_allocs(1);
    void *sentinel = &sentinel;
    b = sentinel;
    redist_status_t st = redist_mpi_alloc(mx, 64, &b, &err);
    rd_mpi_fail_allocs(0);
    CHECK(all_fail(st) && b == sentinel,
          "alloc failing on rank %d: not every rank failed", nranks - 1);
    b = NULL;
    CHECK(all_fail(redist_mpi_alloc(mx, 64, rank ? &b : NULL, &err)),
          "a NULL out on rank 0: not every rank failed");
    CHECK(!redist_mpi_alloc(mx, 4096, &b, &err), "alloc: %s", err.text);
    CHECK(!redist_mpi_alloc(mx, 100, &c, &err), "alloc: %s", err.text);
    /* a foreign pointer on one rank, then different allocations */
    char local[8];
    st = redist_mpi_free_mem(mx, rank == nranks - 1 ? (void *)local : b, &err);
    CHECK(all_fail(st), "free_mem of a foreign pointer: not every rank "
          "failed");
    if (nranks > 1) {
        st = redist_mpi_free_mem(mx, rank == 0 ? c : b, &err);
        CHECK(all_fail(st) && st == REDIST_ERR_MISMATCH,
              "free_mem of different allocations: status %d", st);
    }
    CHECK(!redist_mpi_free_mem(mx, NULL, &err), "free_mem(NULL): %s",
          err.text);
    /* b is still allocated (nothing was freed): use it, free it */
    memset(b, 0x11, 4096);
    CHECK(!redist_mpi_free_mem(mx, b, &err), "free_mem: %s", err.text);
    CHECK(redist_mpi_free_mem(mx, b, &err) == REDIST_ERR_INVALID,
          "free_mem twice");
    /* a and c are left to redist_mpi_free */
    redist_mpi_free(mx);
    redist_mesh_free(m);
}

/* Buffers of one placement: 0 both in windows, 1 src only, 2 one rank's
 * src from malloc, 3 none. */
typedef struct bufs {
    unsigned char *src, *dst;
    int src_win, dst_win;
} bufs;

static int get_bufs(redist_mpi_t *mx, int place, uint64_t S, uint64_t T,
                    bufs *b)
{
    redist_error_t err;
    void *p = NULL;
    b->src_win = place == 0 || place == 1 || (place == 2 && rank != 0);
    b->dst_win = place == 0;
    /* the allocation is collective: every rank takes part */
    if (redist_mpi_alloc(mx, S ? S : 1, &p, &err) ||
        (b->src = p, redist_mpi_alloc(mx, T ? T : 1, &p, &err))) {
        CHECK(0, "alloc: %s", err.text);
        return -1;
    }
    b->dst = p;
    if (!b->src_win) /* its window stays allocated, unused */
        b->src = malloc(S ? S : 1);
    if (!b->dst_win)
        b->dst = malloc(T ? T : 1);
    return 0;
}

static void put_bufs(redist_mpi_t *mx, bufs *b)
{
    /* free the windows in the same order on every rank: a rank whose
     * buffer is from malloc frees nothing of its window here, which is
     * left to redist_mpi_free (every rank then frees the rest) */
    int sw = 0, dw = 0;
    MPI_Allreduce(&b->src_win, &sw, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&b->dst_win, &dw, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (sw)
        redist_mpi_free_mem(mx, b->src, NULL);
    else if (!b->src_win)
        free(b->src);
    if (dw)
        redist_mpi_free_mem(mx, b->dst, NULL);
    else if (!b->dst_win)
        free(b->dst);
}

/* One plan in one placement: returns the direct passes (-1: failed). */
static int check_plan(const redist_plan_t *plan, int place, int async,
                      unsigned mflags)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t mine = redist_spec_device_bytes(s, 1, rank);
    redist_mpi_options_t mo = {mflags, 0};
    redist_exec_options_t eo = {rp_in(&rng, 0, 2) ? 0u
                                                  : REDIST_EXEC_PRESERVE_SRC};
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), &mo, &mx,
                          &err)) {
        CHECK(0, "create: %s", err.text);
        return -1;
    }
    rd_mpi_set_node_ranks(mx, g_node_ranks);
    uint64_t seed[2] = {rp_next(&rng), rp_next(&rng)};
    unsigned char *in = malloc(S ? S : 1), *ref[2];
    for (int k = 0; k < 2; k++) {
        ref[k] = malloc(T ? T : 1);
        rp_fill_bits(in, S, seed[k], rank);
        memset(ref[k], 0x5c, T);
        redist_status_t st = redist_mpi_execute(mx, plan, in, ref[k], &eo,
                                                NULL, &err);
        CHECK(!st, "execute: %s", err.text);
    }
    bufs b = {0};
    int direct = -1;
    if (get_bufs(mx, place, S, T, &b) == 0) {
        redist_mpi_prepared_t *pr = NULL;
        redist_status_t st = redist_mpi_prepare(mx, plan, b.src, b.dst, &eo,
                                                &pr, &err);
        CHECK(!st, "prepare: %s", err.text);
        direct = st ? -1 : redist_mpi_prepared_direct(pr);
        CHECK(same_everywhere(direct), "ranks report different direct "
              "passes (%d here)", direct);
        if (place >= 2)
            CHECK(direct == 0, "placement %d (not every rank's src in a "
                  "window): %d direct passes", place, direct);
        for (int k = 0; !st && k < 4; k++) {
            int which = k % 2;
            rp_fill_bits(b.src, S, seed[which], rank);
            memset(b.dst, 0xA5, T);
            int nb = async && (k == 1 || rp_in(&rng, 0, 1));
            int poll = (int)rp_in(&rng, 0, 1); /* else wait at once */
            redist_exec_report_t rep;
            if (nb) {
                int done = 0;
                st = redist_mpi_start(pr, &err);
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
            CHECK(!st && !memcmp(b.dst, ref[which], mine),
                  "run %d (%s, placement %d, %d direct) differs from "
                  "redist_mpi_execute",
                  k, nb ? "start/wait" : "run", place, direct);
            CHECK(redist_mpi_prepared_stats(pr).direct == direct,
                  "stats: %lld direct passes, prepared %d",
                  (long long)redist_mpi_prepared_stats(pr).direct, direct);
        }
        redist_mpi_prepared_free(pr);
        put_bufs(mx, &b);
    }
    free(in);
    free(ref[0]);
    free(ref[1]);
    redist_mpi_free(mx);
    return direct;
}

/* Ranks on several nodes (nodes of one rank, played on this machine):
 * the memory works, every pass is two-sided, the result exact. */
static void several_nodes(int async)
{
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    char mesh[32], shape[32];
    snprintf(mesh, sizeof mesh, "x=%d", nranks);
    snprintf(shape, sizeof shape, "%dx%d", 8 * nranks, 4 * nranks);
    if (redist_spec_from_strings(mesh, shape, "f32", "x|", NULL, "|x", NULL,
                                 NULL, "nodes", 0, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err)) {
        CHECK(0, "several nodes: %s", err.text);
        redist_spec_free(spec);
        return;
    }
    g_node_ranks = 1;
    int d = check_plan(plan, 0, async, 0);
    g_node_ranks = 0;
    CHECK(d == 0, "nodes of one rank: %d direct passes", d);
    redist_plan_free(plan);
    redist_spec_free(spec);
}

/* A fixed plan that must run direct with both buffers in windows. */
static void fixed(const char *what, const char *mesh, const char *shape,
                  const char *dtype, const char *from, const char *partial,
                  const char *to, const char *reduce, int want, int async)
{
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    if (redist_spec_from_strings(mesh, shape, dtype, from, partial, to, NULL,
                                 reduce, what, 0, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err)) {
        CHECK(0, "%s: %s", what, err.text);
        redist_spec_free(spec);
        return;
    }
    int d = check_plan(plan, 0, async, 0);
    CHECK(d >= want, "%s: %d direct passes with both buffers in windows, "
          "expected %d", what, d, want);
    d = check_plan(plan, 2, async, 0);
    CHECK(d == 0, "%s, one rank's src from malloc: %d direct passes", what,
          d);
    redist_plan_free(plan);
    redist_spec_free(spec);
}

static void random_cases(int n, int async)
{
    for (int i = 0; i < n; i++) {
        redist_mesh_t *m = rp_mesh_exact(&rng, nranks, i % 2);
        redist_plan_t *plan = NULL;
        int uneven = 0;
        rp_mixed_plan(&rng, m, i, &plan, &uneven);
        if (plan &&
            redist_spec_src_bytes(redist_plan_spec(plan)) < (8 << 20)) {
            uneven_cases += uneven;
            /* both buffers in windows half the time */
            static const int places[6] = {0, 0, 0, 1, 2, 3};
            int place = places[rp_in(&rng, 0, 5)];
            unsigned flags = (unsigned)rp_in(&rng, 0, 3);
            int d = check_plan(plan, place, async, flags);
            direct_cases += d > 0;
            fallback_cases += place >= 2;
        }
        redist_plan_free(plan);
        redist_mesh_free(m);
    }
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
    allocator();
    char mesh[64], shape[64];
    snprintf(shape, sizeof shape, "%dx%d", 24 * nranks, 16 * nranks);
    snprintf(mesh, sizeof mesh, "x=%d", nranks);
    if (nranks > 1) {
        fixed("all_to_all", mesh, shape, "f32", "x|", NULL, "|x", NULL, 1,
              async);
        fixed("all_gather", mesh, shape, "f64", "x|", NULL, "|", NULL, 1,
              async);
        /* bf16 sums accumulate in f32: the bits of the ordered path */
        fixed("reduce_scatter", mesh, shape, "bf16", "|", "x", "x|", "sum", 1,
              async);
    }
    if (nranks % 2 == 0 && nranks >= 4) {
        snprintf(mesh, sizeof mesh, "x=2,y=%d", nranks / 2);
        fixed("exchange", mesh, shape, "f32", "x|", NULL, "|x,y", NULL, 1,
              async);
        /* two reduce_scatter steps, the second reading the executor's
         * scratch, which prepare moves into windows: both direct */
        fixed("two-step reduce_scatter", mesh, shape, "f32", "|", "x,y",
              "x,y|", "sum", 2, async);
    }
    if (nranks == 4)
        fixed("permute", "x=2,y=2", shape, "f32", "x|y", NULL, "y|x", NULL, 1,
              async);
    if (nranks > 1)
        several_nodes(async);
    int n = argc > 1 ? atoi(argv[1]) : 20;
    random_cases(n, async);
    int total = 0, dcases = 0;
    MPI_Allreduce(&direct_cases, &dcases, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    /* the random plans exercised the direct path (about 1 in 5 runs some
     * pass direct: a pass must read src or dst; the fixed plans above
     * assert it at any count) */
    if (nranks > 1 && n >= 20)
        CHECK(dcases > 0, "no random plan ran direct");
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi windows, %d rank%s%s: %d runs (%d started), %d random "
               "plans with direct passes, %d fallbacks, %d uneven; %d "
               "checks, %d failed; %.2f s\n",
               nranks, nranks == 1 ? "" : "s", single ? " (MPI_Init)" : "",
               runs, started, direct_cases, fallback_cases, uneven_cases,
               checks, total, MPI_Wtime() - t0);
    MPI_Finalize();
    return total ? 1 : 0;
}
