/*
 * redist/plan.h - plans: the solver, read-only step views, statistics, the
 * independent verifier and the JSON / text writers.  Depends on jansson
 * only; never on MPI or OpenSHMEM.
 *
 * A plan is a sequence of typed steps (doc/spec-format.md section 2) from the
 * spec's source type to its target type.  redist_plan_create returns the
 * optimum of its objective (redist_objective_t; doc/spec-format.md section 9).
 * The default, REDIST_OBJECTIVE_TIME: minimal peak local bytes, then
 * minimal modelled time under the built-in cost model (every step,
 * exchange included), then minimal total received bytes, then fewest
 * collectives.
 * REDIST_OBJECTIVE_BYTES (version 1's default): minimal peak, then minimal
 * total received bytes, then fewest collectives, over the six steps
 * slice to permute.  Planning is a pure function of the spec and options
 * (nothing is probed: the built-in model unless a cost model is given):
 * every rank computes the same plan.
 *
 * SIZE-1 AXES.  Types are compared up to their size-1 mesh axes
 * (redist_type_equivalent): such an axis never changes a local shape or a
 * block, and a reduction over it is none.  So a size-1 axis costs nothing
 * and adds no step: the solver's plans never move one; the type after
 * each step is given in full, and the last step's `after` is exactly the
 * target (a plan whose source is equivalent to its target has no step).
 * The replay (verifier, redist_plan_from_steps, plan files) checks a
 * step's precondition on the type before it, or, if that fails, on that
 * type without its size-1 axes, and accepts a stated `after` equivalent to
 * the effect; a step on a size-1 axis only relabels (legal from any type,
 * 0 bytes; it still counts as the collective it names).  An outside
 * checker replays a plan by the same rule: drop the size-1 axes from
 * every type, and doc/spec-format.md section 2 applies as written.
 *
 * UNEVEN DIMS (doc/spec-format.md section 7, doc/uneven.md).  For a spec whose
 * source or target does not split evenly, every step has a layout (the
 * plan JSON states it as "split" or "blocks" in the step's `after`),
 * preconditions are locality checks on the devices' boxes, and figures
 * are per device: a view's local_shape is the longest block of each dim,
 * local_bytes and recv_bytes the most any device holds and receives;
 * stats.recv_bytes is the most any device receives over the plan, and
 * memory_efficient means every device d stays within max(src_d, dst_d).
 * redist_plan_from_steps gives each step the ceil layout of its type.
 *
 * OPTIMALITY.  The search has a budget (max_states).  When it runs out,
 * redist_plan_create does not fail: it returns a constructive plan (valid,
 * built without search) with stats.optimal 0 and lower bounds on what an
 * optimal plan achieves; the text and JSON writers say so.
 */
#ifndef REDIST_PLAN_H
#define REDIST_PLAN_H

#include <stdio.h>

#include "redist/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum redist_op {
    REDIST_OP_SLICE,
    REDIST_OP_ALL_GATHER,
    REDIST_OP_ALL_TO_ALL,
    REDIST_OP_REDUCE_SCATTER,
    REDIST_OP_ALL_REDUCE,
    REDIST_OP_PERMUTE,
    /** Direct point-to-point redistribution to any type with the same
     *  partial set: each device receives exactly what it lacks.  Only the
     *  time objective (the default) uses it; the bytes objective's
     *  vocabulary is the six ops above. */
    REDIST_OP_EXCHANGE,
    /** Between the two meshes of a two-mesh spec (doc/spec-format.md
     *  section 8): every device of the target mesh receives its block of
     *  `after` from devices of the source mesh holding it, each byte once
     *  (senders taken in turn among replicas).  No partial axis before or
     *  after.  Only two-mesh plans have it. */
    REDIST_OP_TRANSFER,
    REDIST_OP_COUNT
} redist_op_t;

/** "all_to_all", ....  Out of range: NULL. */
REDIST_API const char *redist_op_name(redist_op_t op);
/** As redist_dtype_from_name. */
REDIST_API redist_status_t redist_op_from_name(const char *name, redist_op_t *out);
/** 1 for a collective (everything but slice).  Out of range: 0. */
REDIST_API int redist_op_is_collective(redist_op_t op);

/** One step of a plan, a read-only copy. */
typedef struct redist_step_view {
    redist_op_t op;
    int dim;      /**< slice, all_gather, reduce_scatter; else -1 */
    int from_dim; /**< all_to_all; else -1 */
    int to_dim;   /**< all_to_all; else -1 */
    int axis;     /**< mesh axis; -1 for permute */
    redist_type_t after;                /**< type after the step */
    int64_t local_shape[REDIST_MAX_DIMS]; /**< local shape after it */
    uint64_t local_bytes;               /**< bytes per device after it */
    /** bytes received per device (rounded up): the most any device
     *  receives (a permute: L, or 0 when every device keeps its block) */
    uint64_t recv_bytes;
    double time_s; /**< modelled time (seconds); 0 without a cost model */
    /** The mesh of `after` (REDIST_SIDE_FROM: the source's, REDIST_SIDE_TO:
     *  the target's): the mesh a step runs on; a transfer runs from the
     *  source's mesh to the target's (1).  Always 0 for one-mesh specs. */
    int mesh;
} redist_step_view_t;

typedef struct redist_plan_stats {
    uint64_t src_bytes;  /**< local bytes of the source type */
    uint64_t dst_bytes;  /**< local bytes of the target type */
    uint64_t peak_bytes; /**< largest local size on the path */
    uint64_t recv_bytes; /**< total received per device (rounded up) */
    int collectives;     /**< steps other than slice */
    int steps;
    int memory_efficient; /**< peak <= max(src, dst) */
    double time_s; /**< modelled time (seconds); 0 without a cost model */
    /** 1: redist_plan_create proved the plan optimal for its objective
     *  (by its search, or because the constructive plan meets every lower
     *  bound).  0: not proven: the search budget (max_states) ran out and
     *  this is the constructive plan (or a permute group was too large to
     *  enumerate); also 0 for a plan built from given steps. */
    int optimal;
    /** Lower bounds, for a plan of redist_plan_create (0 otherwise; equal
     *  to the plan's own figures when optimal): no plan has a smaller
     *  peak than bound_peak_bytes, and no plan with this plan's peak
     *  receives fewer than bound_recv_bytes (bytes objective) or takes
     *  less than bound_time_s (time objective; the other one is 0). */
    uint64_t bound_peak_bytes;
    uint64_t bound_recv_bytes;
    double bound_time_s;
} redist_plan_stats_t;

/* ------------------------------------------------------ cost model */

/** Link levels, fastest first: the slowest level a group of devices spans
 *  decides what its collectives cost. */
typedef enum redist_link {
    REDIST_LINK_CACHE,   /**< devices share a cache (cores of one L3) */
    REDIST_LINK_NUMA,    /**< same NUMA node */
    REDIST_LINK_PACKAGE, /**< same package (socket), across NUMA nodes */
    REDIST_LINK_NODE,    /**< same host, across packages */
    REDIST_LINK_NETWORK, /**< across hosts */
    REDIST_LINK_COUNT
} redist_link_t;

/** "cache", "numa", "package", "node", "network".  Out of range: NULL. */
REDIST_API const char *redist_link_name(redist_link_t link);
/** As redist_dtype_from_name. */
REDIST_API redist_status_t redist_link_from_name(const char *name, redist_link_t *out);

/**
 * An alpha-beta cost model.  A message of n bytes over link level l takes
 * alpha[l] + n * beta[l] seconds.  Steps are modelled as the algorithms the
 * backends run: ring all_gather ((s-1) messages of L), pairwise all_to_all
 * and reduce_scatter ((s-1) messages of L/s, plus gamma per reduced byte),
 * ring all_reduce (twice that), permute (one message of L) and exchange (one
 * message per peer, the bytes a device lacks).  Local copies are not
 * charged (every plan writes its result once; slices merge into the next
 * pass).  Permute and exchange use the slowest link among the axes along
 * which they move data (redist_plan_step_link).  axis_link[a] is the
 * slowest level the groups of mesh axis a span (from a topology;
 * REDIST_LINK_NODE by default).
 */
typedef struct redist_cost_model {
    double alpha[REDIST_LINK_COUNT]; /**< seconds per message */
    double beta[REDIST_LINK_COUNT];  /**< seconds per byte */
    double gamma;                    /**< seconds per byte reduced */
    uint8_t axis_link[REDIST_MAX_AXES];
    /** Two-mesh plans: the level of a message between a device of the
     *  source mesh and a device outside it (a transfer's).
     *  REDIST_LINK_DERIVED, what redist_cost_model_default sets: the
     *  slowest of the source mesh's axis links, at least
     *  REDIST_LINK_NODE.  `redistplan --mesh-link LEVEL`. */
    uint8_t mesh_link;
} redist_cost_model_t;

/** redist_cost_model_t.mesh_link: derived from the axis links. */
#define REDIST_LINK_DERIVED 255

/** The built-in model, what the time objective uses when no model is
 *  given: the numbers and the measurements behind them are at the top of
 *  src/plan/cost.c.  Every axis on REDIST_LINK_NODE.  NULL: nothing. */
REDIST_API void redist_cost_model_default(redist_cost_model_t *model);

/**
 * Read link costs from a JSON file such as `redistplan calibrate` writes:
 * {"links": {"numa": {"alpha": 1e-6, "beta": 1e-10}, ...}, "gamma": ...}.
 * Values are seconds from 0 to 1000 (redist_cost_model_validate).  Levels
 * not named keep their current values, so initialise *model first
 * (redist_cost_model_default).  The file: a regular file of at most
 * 1 MiB.
 */
REDIST_API redist_status_t redist_cost_model_load_file(const char *path,
                                            redist_cost_model_t *model,
                                            redist_error_t *err);
REDIST_API redist_status_t redist_cost_model_load_buffer(const char *text, size_t len,
                                              const char *source,
                                              redist_cost_model_t *model,
                                              redist_error_t *err);
/**
 * Check a cost model filled in C: every alpha, beta and gamma a number of
 * seconds from 0 to 1000 (the range the file loader accepts; NaN is not),
 * and axis_link[a] a redist_link_t for each axis of `mesh` (all
 * REDIST_MAX_AXES entries when mesh is NULL).  redist_plan_create runs it
 * on the options' model.  REDIST_ERR_INVALID naming the field
 * ("cost.axis_link[1]").
 */
REDIST_API redist_status_t redist_cost_model_validate(const redist_cost_model_t *model,
                                           const redist_mesh_t *mesh,
                                           redist_error_t *err);
/** Set model->mesh_link from a level name ("network").  Errors name
 *  `source` and `path` (the caller's: "<command line>" and "--mesh-link",
 *  say; NULL: none); *model is unchanged on error. */
REDIST_API redist_status_t redist_cost_model_set_mesh_link(redist_cost_model_t *model,
                                                 const char *level,
                                                 const char *source,
                                                 const char *path,
                                                 redist_error_t *err);
/** Set axis links from text such as "data=network,model=numa" (each axis
 *  at most once; *model is unchanged on error). */
REDIST_API redist_status_t redist_cost_model_set_axis_links(redist_cost_model_t *model,
                                                 const redist_mesh_t *mesh,
                                                 const char *text,
                                                 redist_error_t *err);

/** The objective (doc/spec-format.md section 9).  Changed in 0.2: the default is
 *  now TIME, and it is the zero value, so options zeroed with `= {0}` or
 *  memset (and NULL options) plan for time.  Earlier versions numbered
 *  BYTES 0 and TIME 1: code that relied on zeroed options for the
 *  version-1 plans must now set REDIST_OBJECTIVE_BYTES; code that named
 *  the enumerators needs no change (recompile: the values moved). */
typedef enum redist_objective {
    /** The default: least peak, then least modelled time (the options'
     *  cost model, else the built-in one), then received bytes, then
     *  collectives; every step, exchange included. */
    REDIST_OBJECTIVE_TIME = 0,
    /** doc/spec-format.md section 2 (version 1's default): least peak, then least
     *  received bytes, then fewest collectives, over the six steps slice
     *  to permute (no exchange). */
    REDIST_OBJECTIVE_BYTES = 1
} redist_objective_t;

typedef struct redist_plan_options {
    /** 0: none.  Else plans whose peak exceeds it are refused
     *  (REDIST_ERR_INFEASIBLE). */
    uint64_t max_peak_bytes;
    /** Search budget in visited types; 0: the default (4 million).  When
     *  it runs out the plan is the constructive one, not proven optimal
     *  (stats.optimal 0), or REDIST_ERR_LIMIT if that one exceeds
     *  max_peak_bytes. */
    uint64_t max_states;
    /** REDIST_OBJECTIVE_TIME (0, the default) or REDIST_OBJECTIVE_BYTES. */
    redist_objective_t objective;
    /** Cost model (copied, checked by redist_cost_model_validate); NULL:
     *  the built-in one for the time objective, none for the bytes
     *  objective.
     *  With a model, steps and stats carry modelled times. */
    const redist_cost_model_t *cost;
    /** Two-mesh specs only.  0 (the default): the planner also tries
     *  plans whose transfer sums the source's pending partial axes as it
     *  lands (a reduce-scatter across the meshes, doc/meshes.md); every
     *  backend and the set runner run those.  1: every pending sum is
     *  resolved on the source mesh before the transfer (the plans of
     *  version 2's first release). */
    int no_cross_sums;
} redist_plan_options_t;

typedef struct redist_plan redist_plan_t;

/**
 * Plan `spec` (opts may be NULL: the time objective, built-in cost model,
 * default budget).  The plan keeps its own copy of the spec;
 * the caller may free `spec` afterwards.  Errors: REDIST_ERR_INVALID (an
 * unknown objective, a cost model out of range), REDIST_ERR_INFEASIBLE
 * when no plan exists (a target partial axis the source lacks, or
 * max_peak_bytes too small), REDIST_ERR_LIMIT when the search budget ran
 * out and the constructive plan exceeds max_peak_bytes, REDIST_ERR_NOMEM,
 * REDIST_ERR_OVERFLOW.  A budget that runs out otherwise still gives a
 * plan: see stats.optimal.
 */
REDIST_API redist_status_t redist_plan_create(const redist_spec_t *spec,
                                   const redist_plan_options_t *opts,
                                   redist_plan_t **out, redist_error_t *err);
REDIST_API void redist_plan_free(redist_plan_t *plan);

/** The plan's own copy of its spec.  NULL: NULL. */
REDIST_API const redist_spec_t *redist_plan_spec(const redist_plan_t *plan);
/** Number of steps.  NULL: 0. */
REDIST_API int redist_plan_num_steps(const redist_plan_t *plan);
/** Copy step i (0-based) into *view; REDIST_ERR_INVALID if out of range. */
REDIST_API redist_status_t redist_plan_step(const redist_plan_t *plan, int i,
                                 redist_step_view_t *view);
/** The link level (a redist_link_t) step i of a one-mesh plan is charged
 *  at under cost model cm (NULL: the built-in one): its axis's for a
 *  collective on one axis, for a permute or an exchange the slowest among
 *  the axes along which it moves data (those the type before shards whose
 *  coordinate shifts a device's block differently after).  -1 for a step
 *  that moves nothing between devices (a slice, a collective on a size-1
 *  axis, nothing received), for a two-mesh plan and for a cost model
 *  redist_cost_model_validate refuses.  NULL or out of range: -1. */
REDIST_API int redist_plan_step_link(const redist_plan_t *plan, int i,
                                     const redist_cost_model_t *cm);
/** The statistics (*out zeroed for a NULL plan). */
REDIST_API void redist_plan_stats(const redist_plan_t *plan, redist_plan_stats_t *out);
/** The largest local size on the path (what a device must be able to
 *  hold).  NULL: 0. */
REDIST_API uint64_t redist_plan_peak_bytes(const redist_plan_t *plan);
/** How many sharding types the solver visited to find this plan (0 for a
 *  plan built from given steps): a measure of planning effort.  NULL: 0. */
REDIST_API uint64_t redist_plan_states_visited(const redist_plan_t *plan);
/**
 * One step of shrinking a global shape while the plan stays valid for it
 * (`redistplan run --shrink`: the same steps at a size that fits).
 * Every type on the plan's path (source, each step's `after`, target)
 * splits dim i; a shape keeps the plan valid when each dim stays a
 * multiple of the lcm q_i of those split counts.  This divides the dim
 * of `shape` (one entry per dim of the plan's spec) with the largest
 * ratio shape_i / q_i by that ratio's smallest prime factor and returns
 * the factor; 1, with `shape` unchanged, when every ratio is 1.  Replay
 * the steps on a spec of the new shape with redist_plan_from_steps.
 * NULL: 0.
 */
REDIST_API int64_t redist_plan_shrink_shape(const redist_plan_t *plan, int64_t shape[]);

/**
 * Build a plan from explicit steps (for verification of hand-written or
 * foreign plans).  Each step needs `op` and its fields; for permute and
 * exchange, `after` is the target type.  For the other ops `after` is
 * optional: it is kept as the step's type when it is a type of the spec
 * equivalent to the step's effect (so a plan rebuilt from its own views is
 * the same plan) and ignored otherwise.  Every field is checked before it
 * is used, and the steps are replayed through the verifier: an unknown
 * op, a malformed `after` (ndims, axis counts, axis indices, partial bits
 * beyond the mesh) or an illegal step gives REDIST_ERR_PLAN with the place
 * in err->path ("steps[2]", "steps[0].after.dims").
 */
REDIST_API redist_status_t redist_plan_from_steps(const redist_spec_t *spec, int nsteps,
                                       const redist_step_view_t steps[],
                                       redist_plan_t **out,
                                       redist_error_t *err);

/**
 * The steps of `plan` on `spec` (the same meshes and types; the plan's
 * shape, or another as redist_plan_shrink_shape makes), as
 * redist_plan_from_steps builds them, with the plan's cost model and
 * objective: each step's modelled time under that model, and for two
 * meshes the transfer's senders chosen by it, as the planner chose them
 * (redist_plan_from_steps, which has no model, names them in turn among
 * all replicas).  On the plan's shape the steps keep the plan's blocks
 * (an uneven plan's are the solver's, which the steps' types do not
 * say; on another shape each step gets its type's ceil blocks, which
 * may not apply).  A spec with another number of meshes or dims, or a
 * cost model its mesh refuses: REDIST_ERR_INVALID; steps that do not
 * apply: REDIST_ERR_PLAN as redist_plan_from_steps.  NULL:
 * REDIST_ERR_INVALID.
 */
REDIST_API redist_status_t redist_plan_replay(const redist_plan_t *plan,
                                              const redist_spec_t *spec,
                                              redist_plan_t **out,
                                              redist_error_t *err);

/* ---------------------------------------------------------- verifier */

typedef struct redist_verify_result {
    int valid;            /**< every precondition held, the end is the target */
    uint64_t peak_bytes;
    uint64_t recv_bytes;  /**< total, rounded up */
    int collectives;
    int steps;
    int memory_efficient;
    int failed_step;      /**< index of the first bad step, -1 if none */
    /** modelled time (seconds) under the plan's cost model
     *  (redist_plan_verify) or the one given to the *_cost readers; 0
     *  without one */
    double time_s;
    /** 1: the plan document's stats say "optimal": false (its planner's
     *  search budget ran out); 0 otherwise */
    int stated_unproven;
    int exchange_steps; /**< how many steps are exchanges */
} redist_verify_result_t;

/**
 * Replay `plan` step by step against its spec with the step table alone
 * (independent of the solver): check each precondition and effect (up to
 * size-1 axes, see above), recompute local shapes, peak and bytes.
 * Returns REDIST_OK when the plan is valid, REDIST_ERR_PLAN (err says
 * which step and why) otherwise; *out (may be NULL) is filled in both
 * cases.
 */
REDIST_API redist_status_t redist_plan_verify(const redist_plan_t *plan,
                                   redist_verify_result_t *out,
                                   redist_error_t *err);

/**
 * Read a plan JSON document (doc/spec-format.md section 4; only "steps"
 * is required, each step's "after" only for permute) for `spec` and verify
 * it.  Structural problems (not JSON, steps not an array, a field of the
 * wrong JSON type, wherever it is) are REDIST_ERR_PARSE /
 * REDIST_ERR_INVALID; an illegal step (a dim out of range is named as
 * written), an "after", "local_shape", "recv_bytes", "local_bytes" or
 * "stats" value that disagrees with the replay, or a plan that does not
 * end at the target is REDIST_ERR_PLAN.  *out is filled whenever the
 * document was readable.  The file: a regular file of at most 256 MiB
 * (as for redist_spec_load_file).
 */
REDIST_API redist_status_t redist_plan_verify_file(const redist_spec_t *spec,
                                        const char *path,
                                        redist_verify_result_t *out,
                                        redist_error_t *err);
REDIST_API redist_status_t redist_plan_verify_buffer(const redist_spec_t *spec,
                                          const char *text, size_t len,
                                          const char *source,
                                          redist_verify_result_t *out,
                                          redist_error_t *err);
/** As the two above, and with a cost model (NULL: none; else checked by
 *  redist_cost_model_validate) out->time_s is the plan's modelled time
 *  under it: what `redistplan verify` compares with the time objective's
 *  optimum. */
REDIST_API redist_status_t redist_plan_verify_file_cost(
    const redist_spec_t *spec, const char *path,
    const redist_cost_model_t *cost, redist_verify_result_t *out,
    redist_error_t *err);
REDIST_API redist_status_t redist_plan_verify_buffer_cost(
    const redist_spec_t *spec, const char *text, size_t len,
    const char *source, const redist_cost_model_t *cost,
    redist_verify_result_t *out, redist_error_t *err);

/* ---------------------------------------------------------- writers */

/** The plan object of doc/spec-format.md section 4 as a NUL-terminated
 *  string, to be freed with free(); NULL on allocation failure.  Its "stats"
 *  add "objective", "memory_efficient", "time_s" with a cost model and, only
 *  for a plan not proven optimal, "optimal": false, "unproven" ("max_states"
 *  or "permute_group") and "bound_peak_bytes" with "bound_recv_bytes" or
 *  "bound_time_s".  NULL: NULL. */
REDIST_API char *redist_plan_to_json(const redist_plan_t *plan);
/** Print the readable table (and, for meshes of up to 64 devices when
 *  `grid` is non-zero, which block each device holds after each step);
 *  a plan not proven optimal says so and gives its lower bounds. */
REDIST_API redist_status_t redist_plan_print(const redist_plan_t *plan, FILE *out,
                                  int grid);

#ifdef __cplusplus
}
#endif
#endif
