#ifndef REDIST_PLAN_INTERNAL_H
#define REDIST_PLAN_INTERNAL_H

#include "solver.h"

/* What a plan of an uneven spec adds: the layout after each step and the
 * per-device totals (indexed by rank). */
typedef struct rd_uplan {
    rd_layout *lays;
    int nlays;
    uint64_t *dev_recv; /* bytes received over the plan, rounded up */
    uint64_t *dev_peak; /* most bytes held at any point */
    int64_t ndevices;
} rd_uplan;
void rd_uplan_free(rd_uplan *up);

struct redist_plan {
    redist_spec_t *spec;
    int nsteps;
    redist_step_view_t *steps;
    redist_plan_stats_t stats;
    uint64_t states; /* types the solver visited (0 for given steps) */
    int has_cost;    /* steps carry modelled times */
    redist_cost_model_t cost;
    redist_objective_t objective;
    int solved; /* made by the solver (not from given steps) */
    int unproven; /* RD_UNPROVEN_* (solver.h) when stats.optimal is 0 */
    uint64_t max_states; /* the solver's budget */
    rd_uplan u; /* uneven specs only (else zeroed) */
};

/* 1 when the plan's cost model is the built-in one (cost.c), axis links
 * included. */
int rd_cost_is_builtin(const redist_plan_t *plan);
/* The layout after step i of an uneven plan (what the executor consumes
 * with rd_layout_box); NULL for an even plan or i out of range. */
const rd_layout *rd_plan_step_layout(const redist_plan_t *plan, int i);

/* Replay steps from spec->from (the verifier).  views (may be NULL) gets
 * one view per step.  res is always filled.  For an uneven spec, up (may
 * be NULL) gets the layouts and per-device figures (free with
 * rd_uplan_free). */
redist_status_t rd_replay(const redist_spec_t *spec, const rd_step *steps,
                          int n, const redist_cost_model_t *cm,
                          redist_step_view_t *views,
                          redist_verify_result_t *res, rd_uplan *up,
                          redist_error_t *err);
/* A step of the replay from a view; `mode` (RD_AFTER_*) says what the
 * view's `after` means for kinds that do not need one. */
void rd_step_from_view(rd_step *s, const redist_step_view_t *v, int mode);

/* Shrinking a spec's shape while its plan stays valid (`redistplan run
 * --shrink`, the benchmarks' sizes).  rd_plan_path_multiples: per dim,
 * the lcm q of the split counts of every type on the plan's path (source,
 * each step's `after`, target); a shape keeps the plan valid iff each dim
 * stays a multiple of it.  rd_shrink_step: divides the dim of `shape`
 * with the largest ratio shape / q by that ratio's smallest prime factor
 * and returns the factor; 1 (shape unchanged) when every ratio is 1. */
void rd_plan_path_multiples(const redist_plan_t *plan,
                            int64_t q[REDIST_MAX_DIMS]);
int64_t rd_shrink_step(int64_t shape[], const int64_t q[], int ndims);

#endif
