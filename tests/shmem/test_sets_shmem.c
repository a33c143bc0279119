/*
 * Many arrays over OpenSHMEM (doc/arrays.md): random sets of specs (even
 * and uneven; one array in three between two meshes of the job's PEs) on
 * a mesh of the job's PEs, planned for the OpenSHMEM endpoint (its
 * exchange steps run whole; the two-mesh arrays' transfers of a round
 * are combined, one signalled put series per peer) under budgets from
 * the smallest that works to none (every PE draws the same), prepared
 * once and run twice: every PE checks every element of every array, its
 * scratch high-water mark, the symmetric arena included, against the
 * budget, and the messages against one per peer per combined exchange
 * (rp_set_run_twice).
 * Arguments: CASES [SEED].  Exit 0 when this PE passed.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../common/random_plan.h"

#define MAXA 5

static rp_rng rng = {0x9e3779b97f4a7c15ULL};
static int rank, size, fails;

/* A set planned for no backend (generic programs, whose receives may
 * land outside the symmetric scratch) is refused on every PE before any
 * data moves, not run into shmem_ptr's abort.  Returns this PE's failures. */
static int unplanned_refused(void)
{
    redist_mesh_t *m = rp_mesh_exact(&rng, size, 0);
    redist_spec_t *sp = rp_set_spec(&rng, m, "a0");
    redist_shmem_t *ctx = NULL;
    redist_shmem_create(m, NULL, &ctx, NULL);
    redist_backend_t *be = ctx ? redist_shmem_backend(ctx, 0) : NULL;
    redist_plan_set_t *set = sp ? rp_set_make(&sp, 1, REDIST_NO_BUDGET, NULL) : NULL;
    int bad = 0;
    if (!be || !set) {
        fprintf(stderr, "PE %d: no set planned for no backend\n", rank);
        bad = 1;
    } else {
        size_t bytes = 4096;
        void *src[1] = {NULL}, *dst[1] = {NULL};
        src[0] = shmem_malloc(bytes);
        dst[0] = shmem_malloc(bytes);
        redist_set_prepared_t *p = NULL;
        redist_error_t err = REDIST_ERROR_INIT;
        redist_status_t st = redist_plan_set_prepare(set, be, src, dst, &p, &err);
        if (st != REDIST_ERR_INVALID || p ||
            !strstr(err.text, "planned for no backend")) {
            fprintf(stderr, "PE %d: a set planned for no backend: status %d, "
                    "\"%s\" (want a refusal)\n", rank, (int)st, err.text);
            bad = 1;
        }
        redist_set_prepared_free(p);
        shmem_free(dst[0]);
        shmem_free(src[0]);
    }
    redist_plan_set_free(set);
    redist_shmem_free(ctx);
    redist_spec_free(sp);
    redist_mesh_free(m);
    return bad;
}

int main(int argc, char **argv)
{
    shmem_init();
    int cases = argc > 1 ? atoi(argv[1]) : 20, runs = 0, multi = 0, twos = 0;
    rank = shmem_my_pe();
    size = shmem_n_pes();
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)size);
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
        redist_shmem_t *ctx = NULL;
        redist_shmem_create(m, NULL, &ctx, NULL);
        redist_backend_t *be = ctx ? redist_shmem_backend(ctx, 0) : NULL;
        redist_plan_set_t *set =
            made && be ? rp_set_make_cross(specs, made, REDIST_NO_BUDGET, be,
                                                   c / 2 % 2) : NULL;
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
            set = rp_set_make_cross(specs, made, budget, be, c / 2 % 2);
        }
        if (set) {
            multi += redist_plan_set_num_rounds(set) > 1;
            for (int i = 0; i < made; i++)
                twos += redist_spec_num_meshes(specs[i]) == 2;
            fails += rp_set_run_twice(set, budget, c, be, NULL, NULL);
            runs++;
        }
        redist_plan_set_free(set);
        redist_shmem_free(ctx);
        for (int i = 0; i < made; i++)
            redist_spec_free(specs[i]);
        redist_mesh_free(m);
    }
    fails += unplanned_refused();
    /* two-mesh arrays' phases combined too */
    for (int tight = 0; tight < 2 && size > 1; tight++) {
        redist_mesh_t *m = rp_mesh_exact(&rng, size, 0);
        redist_shmem_t *ctx = NULL;
        redist_shmem_create(m, NULL, &ctx, NULL);
        redist_backend_t *be = ctx ? redist_shmem_backend(ctx, 0) : NULL;
        fails += be ? rp_set_phases(be, 2, tight, 1, 950) +
                          rp_set_phases(be, 25, tight, 1, 975)
                    : 1;
        redist_shmem_free(ctx);
        redist_mesh_free(m);
    }
    /* uneven all_reduces combined too, on their own mesh (y=2,
     * x=size/2: the union's axes, for the one that stays a collective) */
    if (size % 2 == 0 && size >= 4) {
        const char *const names[2] = {"y", "x"};
        const int64_t sizes[2] = {2, size / 2};
        redist_mesh_t *um = NULL;
        redist_shmem_t *uctx = NULL;
        redist_backend_t *ube = NULL;
        if (!redist_mesh_create(2, names, sizes, &um, NULL))
            redist_shmem_create(um, NULL, &uctx, NULL);
        ube = uctx ? redist_shmem_backend(uctx, 0) : NULL;
        fails += ube ? rp_set_uneven_all_reduces(ube, 1, 1, 990) +
                           rp_set_uneven_all_reduces(ube, 25, 1, 995)
                     : 1;
        redist_shmem_free(uctx);
        redist_mesh_free(um);
    }
    if (rank == 0)
        printf("sets over OpenSHMEM at %d PEs: %d sets run (%d in several "
               "rounds), %d two-mesh arrays; PE 0: %d failures\n",
               size, runs, multi, twos, fails);
    shmem_finalize();
    return fails ? 1 : 0;
}
