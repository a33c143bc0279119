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

/* Two-mesh plans (meshes.c).  One side of the transfer: a type on side's
 * mesh (0 source, 1 target) and its layout (always built; the ceil rule
 * gives even blocks where they divide). */
typedef struct rd_mside {
    redist_type_t t;
    int side;
    rd_layout lay;
} rd_mside;
void rd_mside_free(rd_mside *m);

/* A two-mesh plan: phase[0] on the source mesh (source -> sent), the
 * transfer sent -> recvd, phase[1] on the target mesh (recvd -> target);
 * the phases are one-mesh plans of derived specs (their steps are copied
 * into the plan's views).  Per-device figures by global device id. */
typedef struct rd_mplan {
    redist_plan_t *phase[2];
    rd_mside sent, recvd;
    uint64_t *dev_peak, *dev_recv;
    int64_t ndevices;
} rd_mplan;
void rd_mplan_free(rd_mplan *m);

/* The pieces of the planner that the reader of two-mesh plan files
 * (json_meshes.c) replays with: side's type `t` and its layout (the side's
 * rule, its lengths where a dim is unchanged); a phase's one-mesh spec
 * (side's mesh, from a to b); the transfer's figures by global device
 * (recv; the modelled time with a cost model); the cost model of side's
 * phase (tmp may receive a copy). */
redist_status_t rd_mside_init(rd_mside *m, const redist_spec_t *s, int side,
                              const redist_type_t *t, redist_error_t *err);
redist_status_t rd_meshes_phase_spec(const redist_spec_t *s, int side,
                                     const redist_type_t *a,
                                     const redist_type_t *b,
                                     redist_spec_t **out,
                                     redist_error_t *err);
redist_status_t rd_meshes_transfer_figures(const redist_spec_t *s,
                                           const rd_mside *S,
                                           const rd_mside *R,
                                           const redist_cost_model_t *cm,
                                           uint64_t *recv, double *time_s);
/* A lower bound on the transfer's figures from the receivers rs[0..nr)
 * (ranks of the target mesh, ascending) alone: recv[k], the bytes rs[k]'s
 * device receives (exact); *time_lb (with cm), the largest of their
 * modelled times counting what they receive only, never above
 * rd_meshes_transfer_figures' time_s.  O(pieces of those receivers +
 * devices).  REDIST_ERR_NOMEM. */
redist_status_t rd_meshes_transfer_bound(const redist_spec_t *s,
                                         const rd_mside *S, const rd_mside *R,
                                         const redist_cost_model_t *cm,
                                         const int64_t *rs, int nr,
                                         uint64_t *recv, double *time_lb);
/* The verifier's count of the transfer S -> R: every device of the
 * target mesh gets prod|P| x its R block in elements (one contribution
 * per coordinate on S's pending axes P, one when there are none).
 * REDIST_ERR_PLAN with *dev, *got and *want (elements) set when one does
 * not; REDIST_ERR_NOMEM. */
redist_status_t rd_meshes_transfer_check(const redist_spec_t *s,
                                         const rd_mside *S,
                                         const rd_mside *R, int64_t *dev,
                                         uint64_t *got, uint64_t *want);
/* The level of a transfer message that leaves the source mesh: the
 * model's mesh_link when given, else the slowest of its axes' levels and
 * at least node (the meshes' devices may be far; transfer.c). */
int rd_transfer_far_link(const redist_spec_t *s, const redist_cost_model_t *cm);
/* The whole plan's per-device figures (arrays by global device), shared
 * by the planner and the reader: add side's phase (per mesh rank from
 * dev_peak / dev_recv, or peak_all / recv_all for every device when they
 * are NULL: an even phase) as peak max and recv sum; then add the
 * transfer's recv and judge: memory-efficient (every device within
 * max(src_d, dst_d)), the largest peak and recv. */
void rd_meshes_add_phase(const redist_spec_t *s, int side,
                         const uint64_t *dev_peak, const uint64_t *dev_recv,
                         uint64_t peak_all, uint64_t recv_all, uint64_t *peak,
                         uint64_t *recv);
void rd_meshes_judge(const redist_spec_t *s, const uint64_t *trecv,
                     const uint64_t *peak, uint64_t *recv, int *efficient,
                     uint64_t *max_peak, uint64_t *max_recv);
const redist_cost_model_t *rd_meshes_phase_cost(
    const redist_spec_t *s, const redist_cost_model_t *cm, int side,
    redist_cost_model_t *tmp);
/* Replay a two-mesh plan document (json_meshes.c). */
struct json_t;
redist_status_t rd_meshes_verify_doc(const redist_spec_t *spec,
                                     struct json_t *root, const char *source,
                                     const redist_cost_model_t *cost,
                                     redist_verify_result_t *res,
                                     redist_error_t *err);
/* The plan reader's parts that the two-mesh reader uses (json_read.c):
 * a type stated against a one-mesh spec; a one-mesh plan document read
 * and replayed (*res filled; up, may be NULL, gets the per-device figures
 * of an uneven spec); a stated count (absent: *has 0; else an integer
 * >= 0 or a bad-input error); the stats stated against res's figures. */
redist_status_t rd_json_read_type(const redist_spec_t *spec,
                                  struct json_t *v, const char *source,
                                  const char *path, redist_type_t *t,
                                  redist_error_t *err);
redist_status_t rd_json_verify_root(const redist_spec_t *spec,
                                    struct json_t *root, const char *source,
                                    const redist_cost_model_t *cost,
                                    redist_verify_result_t *res,
                                    rd_uplan *up, redist_error_t *err);
redist_status_t rd_json_read_count(const redist_spec_t *spec,
                                   const char *source, struct json_t *o,
                                   const char *key, const char *path,
                                   int *has, uint64_t *out,
                                   redist_error_t *err);
redist_status_t rd_json_check_stats(const redist_spec_t *spec,
                                    const char *source, struct json_t *stats,
                                    const redist_verify_result_t *res,
                                    redist_error_t *err);

/* redist_plan_from_steps with cost model cm (NULL: none: its steps carry
 * no times) and stating `objective` (redist_plan_replay). */
redist_status_t rd_plan_from_steps_cost(const redist_spec_t *spec,
                                        int nsteps,
                                        const redist_step_view_t steps[],
                                        const redist_cost_model_t *cm,
                                        redist_objective_t objective,
                                        redist_plan_t **out,
                                        redist_error_t *err);
/* redist_plan_from_steps for a two-mesh spec: the steps split at their
 * one transfer into the phases' one-mesh plans; with cost model cm (NULL:
 * none) the figures and the transfer's senders are that model's, and the
 * plan states `objective`; with `like` (a plan of this shape, NULL: none)
 * the phases are its phases replayed, layouts and all
 * (redist_plan_replay). */
redist_status_t rd_plan_meshes_from_steps(const redist_spec_t *spec, int n,
                                          const redist_step_view_t v[],
                                          const redist_cost_model_t *cm,
                                          redist_objective_t objective,
                                          const redist_plan_t *like,
                                          redist_plan_t **out,
                                          redist_error_t *err);
/* Plan a two-mesh spec (redist_plan_create's path for them). */
redist_status_t rd_plan_meshes(const redist_spec_t *spec,
                               const redist_plan_options_t *opts,
                               redist_plan_t **out, redist_error_t *err);

/* Every piece of the transfer S -> R of a two-mesh spec: receiver `r`
 * (a rank of the target mesh) gets the global box [lo, hi) from sender
 * `q` (a rank of the source mesh; the same device when it holds the
 * piece itself).  Pieces come in receiver order, per receiver in the
 * row-major order of the S blocks; the senders among replicas in turn,
 * among the replicas nearest the receiver by cm's axis links (cm NULL:
 * among all; transfer.c).  A plan's executors pass the plan's own cost
 * model, so they name the senders its figures counted.  REDIST_ERR_NOMEM. */
typedef void (*rd_piece_fn)(void *user, int64_t r, int64_t q,
                            const int64_t lo[], const int64_t hi[]);
redist_status_t rd_transfer_walk(const redist_spec_t *s, const rd_mside *S,
                                 const rd_mside *R,
                                 const redist_cost_model_t *cm,
                                 rd_piece_fn fn, void *user);

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
    rd_mplan *m; /* two-mesh specs only (else NULL) */
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
