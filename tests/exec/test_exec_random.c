/*
 * End-to-end execution of random plans under the sim backend, checked
 * exactly (every element of every device) with the pattern of
 * src/testing/pattern.h.
 *
 * Two sources of plans:
 *   - planned: random specs (meshes of 1-4 axes of sizes 1-4, 0-3 dims,
 *     partial axes) solved by redist_plan_create;
 *   - walks: random sequences of legal steps of every kind (from the
 *     planner's step table), which reach layouts an optimal plan never
 *     takes (all_gather then all_to_all, permutes with partial axes, ...),
 *     built with redist_plan_from_steps.
 * Every run uses a random dtype and reduce op, the generic or the fused
 * sim path, and with or without REDIST_EXEC_PRESERVE_SRC, and checks:
 *   - the data is exact on every device;
 *   - the measured scratch high-water mark <= the promise
 *     (redist_plan_scratch_bytes), which is the reported promise, and
 *     every device's <= max(src_d, dst_d) for even memory-efficient
 *     plans with the default options (rp_sim_check; uneven plans are
 *     not held to it: their program is sized by the largest device and
 *     counts the smallest device's buffers, doc/uneven.md);
 *   - promise <= max(src, dst) for memory-efficient plans with the default
 *     options, <= 2 max(src, dst) with PRESERVE_SRC, <= 2 peak always,
 *     0 for plans of slices only;
 *   - the source is intact whenever PRESERVE_SRC is given or the program
 *     says it does not write it.
 *
 *   - uneven: random uneven specs (shapes often smaller than the split,
 *     ceil / balanced / chunk / explicit blocks with zero lengths, each
 *     side its own) solved by redist_plan_create; every device's buffers
 *     are exactly its block (NULL when empty).
 *
 *   test_exec_random [PLANNED [WALKS [SEED [UNEVEN]]]]
 */
#include <stdio.h>
#include <stdlib.h>

#include "redist.h"
#include "../common/random_plan.h"

static rp_rng rng = {0x9e3779b97f4a7c15ULL};
static rp_tally tally;
static int skipped, uneven_runs;
static int op_count[REDIST_OP_COUNT];
static int dtype_count[REDIST_DTYPE_COUNT], reduce_count[REDIST_REDUCE_COUNT];

/* Run one plan with random options (rp_sim_check); count what ran. */
static void run_plan(const char *what, const redist_plan_t *plan)
{
    if (rp_sim_check(&rng, &tally, what, plan, UINT64_MAX))
        return;
    const redist_spec_t *s = redist_plan_spec(plan);
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        op_count[v.op]++;
    }
    dtype_count[redist_spec_dtype(s)]++;
    reduce_count[redist_spec_reduce(s)]++;
}

static void planned_case(void)
{
    /* mostly small meshes (threads are per device), a few large ones */
    redist_mesh_t *m = rp_mesh_upto(&rng, 32, 256);
    rp_problem p;
    rp_planned(&rng, m, 2, &p);
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {.max_states = 200000};
    if (p.elems > 20000 || rp_plan(&p, &po, &plan, NULL))
        skipped++;
    else
        run_plan("planned", plan);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* Uneven dims: random shapes (often n < k), rules and explicit blocks
 * (zero lengths included) on each side, partial axes reduced by
 * reduce_scatter and all_reduce between uneven layouts. */
static void uneven_case(void)
{
    redist_mesh_t *m = rp_mesh_upto(&rng, 12, 24);
    rp_problem p;
    rp_planned(&rng, m, 2, &p);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {.max_states = 200000};
    /* both objectives: the time objective takes exchange steps */
    po.objective = rp_next(&rng) % 2 ? REDIST_OBJECTIVE_TIME
                                     : REDIST_OBJECTIVE_BYTES;
    if (p.nd == 0 || rp_uneven_spec(&rng, &p, &spec, NULL) ||
        redist_plan_create(spec, &po, &plan, NULL))
        skipped++;
    else
        run_plan(redist_spec_is_uneven(spec) ? "uneven" : "uneven (even)",
                 plan);
    if (plan && redist_spec_is_uneven(spec))
        uneven_runs++;
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------- walks */

static void walk_case(void)
{
    redist_mesh_t *m = rp_mesh_upto(&rng, 32, 256);
    rp_problem p;
    rp_walk_start(&rng, m, 2, &p);
    rp_walk w;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    if (p.elems > 20000 || rp_random_walk(&rng, &p, 6, 0, &w))
        skipped++;
    else if (rp_walk_plan(&p, &w, &plan, &err))
        rp_fail(&tally, "walk", NULL, "building the walk's plan: %s",
                err.text);
    else
        run_plan("walk", plan);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

int main(int argc, char **argv)
{
    int planned = argc > 1 ? atoi(argv[1]) : 1500;
    int walks = argc > 2 ? atoi(argv[2]) : 1500;
    int uneven = argc > 4 ? atoi(argv[4]) : 600;
    rp_seed(&rng, argc > 3 ? argv[3] : NULL, 0);
    for (int i = 0; i < uneven; i++)
        uneven_case();
    for (int i = 0; i < planned; i++)
        planned_case();
    for (int i = 0; i < walks; i++)
        walk_case();
    printf("runs %d, %d of them uneven (skipped %d specs: too large or no "
           "plan)\n",
           tally.runs, uneven_runs, skipped);
    printf("steps by op:");
    for (int o = 0; o < REDIST_OP_COUNT; o++)
        printf(" %s %d", redist_op_name((redist_op_t)o), op_count[o]);
    printf("\nruns by dtype:");
    for (int d = 0; d < REDIST_DTYPE_COUNT; d++)
        printf(" %s %d", redist_dtype_name((redist_dtype_t)d), dtype_count[d]);
    printf("\nruns by reduce:");
    for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
        printf(" %s %d", redist_reduce_name((redist_reduce_t)o),
               reduce_count[o]);
    printf("\n%d passed, %d failed\n", tally.runs - tally.failures,
           tally.failures);
    return tally.failures != 0;
}
