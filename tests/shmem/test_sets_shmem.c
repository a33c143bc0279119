/*
 * Many arrays over OpenSHMEM (doc/arrays.md): random sets of one-mesh
 * specs (even and uneven) on a mesh of the job's PEs, planned for the
 * OpenSHMEM endpoint (its exchange steps run whole: no combined
 * exchanges, doc/arrays.md) under budgets from the smallest that works
 * to none (every PE draws the same), prepared once and run twice: every
 * PE checks every element of every array and its scratch high-water
 * mark, the symmetric arena included, against the budget.
 * Arguments: CASES [SEED].  Exit 0 when this PE passed.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../common/random_plan.h"
#include "../../src/testing/pattern.h"

#define MAXA 5

static rp_rng rng = {0x9e3779b97f4a7c15ULL};
static int rank, size, fails;

/* Prepare, run twice, check; 0 when exact on this PE. */
static int run(const redist_plan_set_t *set, uint64_t budget, int c,
               redist_backend_t *be)
{
    int n = redist_plan_set_num_arrays(set), bad = 0;
    void *src[MAXA] = {0}, *dst[MAXA] = {0};
    for (int i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        uint64_t sb = redist_spec_device_bytes(s, 0, rank),
                 db = redist_spec_device_bytes(s, 1, rank);
        src[i] = sb ? malloc(sb) : NULL;
        dst[i] = db ? malloc(db) : NULL;
    }
    redist_error_t e = REDIST_ERROR_INIT;
    redist_set_prepared_t *p = NULL;
    redist_status_t st = redist_plan_set_prepare(set, be, src, dst, &p, &e);
    for (int k = 0; k < 2 && !st; k++) {
        for (int i = 0; i < n; i++) {
            const redist_spec_t *s =
                redist_plan_spec(redist_plan_set_plan(set, i));
            if (src[i])
                rd_pattern_fill(s, rank, src[i]);
            if (dst[i])
                memset(dst[i], 0xEE, redist_spec_device_bytes(s, 1, rank));
        }
        redist_exec_report_t rep;
        if ((st = redist_set_run(p, &rep, &e)))
            break;
        if (budget != REDIST_NO_BUDGET && rep.scratch_high_water > budget) {
            fprintf(stderr, "PE %d case %d: scratch %llu > budget %llu\n",
                    rank, c, (unsigned long long)rep.scratch_high_water,
                    (unsigned long long)budget);
            bad = 1;
        }
        for (int i = 0; i < n && !bad; i++) {
            const redist_spec_t *s =
                redist_plan_spec(redist_plan_set_plan(set, i));
            rd_mismatch mm;
            if (dst[i] && rd_pattern_check(s, rank, dst[i], &mm)) {
                fprintf(stderr, "PE %d case %d run %d: array %s element "
                                "%llu: expected %s, got %s\n",
                        rank, c, k, redist_spec_name(s),
                        (unsigned long long)mm.local_index, mm.expected,
                        mm.got);
                bad = 1;
            }
        }
    }
    if (st) {
        fprintf(stderr, "PE %d case %d: %s\n", rank, c, e.text);
        bad = 1;
    }
    redist_set_prepared_free(p);
    for (int i = 0; i < n; i++) {
        free(src[i]);
        free(dst[i]);
    }
    return bad;
}

int main(int argc, char **argv)
{
    shmem_init();
    int cases = argc > 1 ? atoi(argv[1]) : 20, runs = 0, multi = 0;
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
            if ((specs[made] = rp_set_spec(&rng, m, name)))
                made++;
        }
        redist_shmem_t *ctx = NULL;
        redist_shmem_create(m, NULL, &ctx, NULL);
        redist_backend_t *be = ctx ? redist_shmem_backend(ctx, 0) : NULL;
        redist_plan_set_t *set =
            made && be ? rp_set_make(specs, made, REDIST_NO_BUDGET, be) : NULL;
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
            set = rp_set_make(specs, made, budget, be);
        }
        if (set) {
            multi += redist_plan_set_num_rounds(set) > 1;
            fails += run(set, budget, c, be);
            runs++;
        }
        redist_plan_set_free(set);
        redist_shmem_free(ctx);
        for (int i = 0; i < made; i++)
            redist_spec_free(specs[i]);
        redist_mesh_free(m);
    }
    if (rank == 0)
        printf("sets over OpenSHMEM at %d PEs: %d sets run (%d in several "
               "rounds); PE 0: %d failures\n",
               size, runs, multi, fails);
    shmem_finalize();
    return fails ? 1 : 0;
}
