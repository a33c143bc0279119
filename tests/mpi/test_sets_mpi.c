/*
 * Many arrays over MPI (doc/arrays.md): random sets of specs (even and
 * uneven; one array in three between two meshes of the job's ranks) on
 * a mesh of the job's ranks, under budgets from the
 * smallest that works to none (every rank draws the same), prepared once
 * on the MPI backend and run twice.  Every rank checks every element of
 * every array, its scratch high-water mark against the budget, and that
 * each combined exchange sent at most one message per peer.  Then a rank
 * whose set has another budget (other rounds) must make the preparation
 * fail on every rank.  Arguments: CASES [SEED].  Exit 0 when every rank
 * passed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "../common/random_plan.h"
#include "../../src/testing/pattern.h"

#define MAXA 5

static rp_rng rng = {0x9e3779b97f4a7c15ULL};
static int rank, size, fails, work;

/* After each run: did it stream a reduction (informational)? */
static void count_work(void *ctx)
{
    work += redist_mpi_last_stats(ctx).streamed > 0;
}

/* k arrays, each one all_gather of dim 1 over every rank (op 0), one
 * reduce_scatter (op 1) or one all_reduce (op 2) of sums pending over
 * them, planned for the MPI endpoint (odd k) or generic, under no budget
 * and under the three largest arrays' scratch (several rounds, unless that
 * is 0: an all_reduce may run in the caller's buffers): exact, within the budget,
 * and each rank sends size - 1 messages per exchange (an all_reduce: 2)
 * however many arrays (a set lowers its collectives, reductions
 * included, to exchanges, one combined per round); 0 when right on this
 * rank. */
static int gathers(int k, int tight, int op)
{
    static const char *const from[3] = {"|x", "|", "|"},
                             *const part[3] = {NULL, "x", "x"},
                             *const to[3] = {"|", "x|", "|"};
    redist_spec_t *specs[32];
    redist_mpi_t *ctx = NULL;
    int made = 0, bad = 0;
    char mesh[32], shape[32], name[16];
    snprintf(mesh, sizeof mesh, "x=%d", size);
    for (int i = 0; i < k; i++) {
        /* one array in four of 2 size - 1 rows: an uneven reduce_scatter
         * (every block non-empty: a message to every other rank) */
        snprintf(shape, sizeof shape, "%dx%d", 2 * size - (i % 4 == 3),
                 size * (4 + i % 3));
        snprintf(name, sizeof name, "g%d", i);
        if (!redist_spec_from_strings(mesh, shape, "f32", from[op], part[op],
                                      to[op], NULL, NULL, name, 0,
                                      &specs[made], NULL))
            made++;
    }
    if (made == k)
        redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(specs[0]), NULL,
                          &ctx, NULL);
    const redist_backend_t *kind = ctx && k % 2 ? redist_mpi_backend(ctx)
                                                : NULL;
    redist_plan_set_t *set =
        ctx ? rp_set_make(specs, made, REDIST_NO_BUDGET, kind) : NULL;
    uint64_t budget = REDIST_NO_BUDGET, msgs = 0;
    if (set && tight) {
        budget = rp_set_largest(set, 3);
        redist_plan_set_free(set);
        set = rp_set_make(specs, made, budget, kind);
    }
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    int per = op == 2 ? 2 : 1; /* exchanges per array and round */
    if (!set || t.exchanges != per * t.nrounds ||
        (tight && k > 3 && budget > 0 && t.nrounds < 2)) {
        fprintf(stderr, "rank %d: %d arrays of op %d%s: %d rounds, %d "
                        "exchanges\n",
                rank, k, op, tight ? " under a budget" : "", t.nrounds,
                t.exchanges);
        bad = 1;
    } else {
        bad = rp_set_run_counted(set, budget, 900 + k,
                                 redist_mpi_backend(ctx), NULL, NULL, &msgs);
        if (msgs != (uint64_t)(per * t.nrounds) * (uint64_t)(size - 1)) {
            fprintf(stderr, "rank %d: %d arrays of op %d in %d rounds: %llu "
                            "messages, want %d per exchange\n",
                    rank, k, op, t.nrounds, (unsigned long long)msgs,
                    size - 1);
            bad = 1;
        }
    }
    redist_plan_set_free(set);
    redist_mpi_free(ctx);
    for (int i = 0; i < made; i++)
        redist_spec_free(specs[i]);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int cases = argc > 1 ? atoi(argv[1]) : 30, runs = 0, multi = 0, twos = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)size);
    redist_spec_t *last[MAXA] = {0};
    int nlast = 0;
    uint64_t last_most = 0;
    for (int c = 0; c < cases; c++) {
        redist_mesh_t *m = rp_mesh_exact(&rng, size, (int)rp_in(&rng, 0, 1));
        int n = (int)rp_in(&rng, 1, MAXA), made = 0;
        redist_spec_t *specs[MAXA] = {0};
        for (int i = 0; i < n; i++) {
            char name[16];
            snprintf(name, sizeof name, "a%d", i);
            /* one array in three moves between two meshes */
            if ((specs[made] = size > 1 && rp_in(&rng, 0, 2) == 0
                                   ? rp_set_two_spec(&rng, size, name)
                                   : rp_set_spec(&rng, m, name)))
                made++;
        }
        redist_mpi_t *ctx = NULL;
        redist_mpi_create(MPI_COMM_WORLD, m, NULL, &ctx, NULL);
        const redist_backend_t *kind =
            c % 2 && ctx ? redist_mpi_backend(ctx) : NULL;
        redist_plan_set_t *set = made && ctx
                                     ? rp_set_make_cross(specs, made, REDIST_NO_BUDGET, kind,
                                                   c / 2 % 2)
                                     : NULL;
        uint64_t most = 0, sum = 0;
        if (set)
            rp_set_budgets(set, &most, &sum);
        int which = (int)rp_in(&rng, 0, 3);
        uint64_t budget = which == 0   ? most
                          : which == 1 ? most + (sum - most) / 2
                          : which == 2 ? sum
                                       : REDIST_NO_BUDGET;
        if (set && budget != REDIST_NO_BUDGET) {
            redist_plan_set_free(set);
            set = rp_set_make_cross(specs, made, budget, kind, c / 2 % 2);
        }
        if (set) {
            multi += redist_plan_set_num_rounds(set) > 1;
            for (int i = 0; i < made; i++)
                twos += redist_spec_num_meshes(specs[i]) == 2;
            fails += rp_set_run_twice(set, budget, c,
                                      redist_mpi_backend(ctx), count_work,
                                      ctx);
            runs++;
        }
        redist_plan_set_free(set);
        redist_mpi_free(ctx);
        if (made && most > 0) { /* keep one with scratch for the mismatch */
            for (int i = 0; i < nlast; i++)
                redist_spec_free(last[i]);
            memcpy(last, specs, sizeof specs);
            nlast = made;
            last_most = most;
        } else {
            for (int i = 0; i < made; i++)
                redist_spec_free(specs[i]);
        }
        redist_mesh_free(m);
    }
    /* rank 0 with another budget: other rounds, another hash */
    int mismatch_ok = 1;
    if (nlast && size > 1) {
        redist_plan_set_t *set =
            rp_set_make(last, nlast, rank == 0 ? last_most : REDIST_NO_BUDGET, NULL);
        redist_mpi_t *ctx = NULL;
        redist_set_prepared_t *p = NULL;
        redist_error_t e = REDIST_ERROR_INIT;
        void *bufs[MAXA][2] = {{0}};
        void *src[MAXA], *dst[MAXA];
        for (int i = 0; i < nlast; i++) {
            uint64_t sb = redist_spec_device_bytes(last[i], 0, rank),
                     db = redist_spec_device_bytes(last[i], 1, rank);
            src[i] = bufs[i][0] = sb ? calloc(1, sb) : NULL;
            dst[i] = bufs[i][1] = db ? calloc(1, db) : NULL;
        }
        redist_status_t st =
            redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(last[0]), NULL,
                              &ctx, &e);
        if (!st) {
            /* every rank prepares, a rank without a set too (its
             * failure is agreed like any other) */
            st = redist_plan_set_prepare(set, redist_mpi_backend(ctx), src,
                                         dst, &p, &e);
            /* the same rounds everywhere (one array): nothing to catch */
            int rounds = redist_plan_set_num_rounds(set), most_r = rounds;
            MPI_Allreduce(&rounds, &most_r, 1, MPI_INT, MPI_MAX,
                          MPI_COMM_WORLD);
            int least_r = rounds;
            MPI_Allreduce(&rounds, &least_r, 1, MPI_INT, MPI_MIN,
                          MPI_COMM_WORLD);
            if (most_r != least_r && st == REDIST_OK) {
                fprintf(stderr, "rank %d: diverging sets prepared\n", rank);
                mismatch_ok = 0;
            }
        }
        redist_set_prepared_free(p);
        redist_mpi_free(ctx);
        redist_plan_set_free(set);
        for (int i = 0; i < nlast; i++) {
            free(bufs[i][0]);
            free(bufs[i][1]);
        }
    }
    for (int i = 0; i < nlast; i++)
        redist_spec_free(last[i]);
    fails += !mismatch_ok;
    for (int tight = 0; tight < 2 && size > 1; tight++) {
        for (int op = 0; op < 3; op++) {
            fails += gathers(2, tight, op);
            fails += gathers(25, tight, op);
        }
    }
    /* two-mesh arrays' phases combined too */
    for (int tight = 0; tight < 2 && size > 1; tight++) {
        redist_mpi_t *ctx = NULL;
        redist_mesh_t *m = rp_mesh_exact(&rng, size, 0);
        if (redist_mpi_create(MPI_COMM_WORLD, m, NULL, &ctx, NULL)) {
            fails++;
        } else {
            fails += rp_set_phases(redist_mpi_backend(ctx), 2, tight, tight,
                                   950);
            fails += rp_set_phases(redist_mpi_backend(ctx), 25, tight,
                                   !tight, 975);

        }
        redist_mpi_free(ctx);
        redist_mesh_free(m);
    }
    /* uneven all_reduces combined too, on their own mesh (y=2,
     * x=size/2: the union's axes, for the one that stays a collective) */
    if (size % 2 == 0 && size >= 4) {
        const char *const names[2] = {"y", "x"};
        const int64_t sizes[2] = {2, size / 2};
        redist_mesh_t *um = NULL;
        redist_mpi_t *uctx = NULL;
        if (redist_mesh_create(2, names, sizes, &um, NULL) ||
            redist_mpi_create(MPI_COMM_WORLD, um, NULL, &uctx, NULL)) {
            fails++;
        } else {
            redist_backend_t *ube = redist_mpi_backend(uctx);
            fails += rp_set_uneven_all_reduces(ube, 1, 0, 990) +
                     rp_set_uneven_all_reduces(ube, 2, 0, 992) +
                     rp_set_uneven_all_reduces(ube, 25, 1, 995);
        }
        redist_mpi_free(uctx);
        redist_mesh_free(um);
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sets over MPI at %d ranks: %d sets run (%d in several "
               "rounds, %d two-mesh arrays; %d runs on rank 0 streamed a "
               "reduction in the work space left by the budget), %d "
               "failures\n",
               size, runs, multi, twos, work, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
