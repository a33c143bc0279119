/*
 * redist/exec.h - execute plans on real data.
 *
 * Layer above redist/plan.h: types <- spec <- plan <- exec <- backends.
 * Needs jansson and POSIX threads (the sim backend); never MPI or
 * OpenSHMEM (their backends add their own headers and constructors).
 *
 * Execution model (SPMD).  Every device (rank) of the mesh calls
 * redist_plan_execute with the same plan, its own backend endpoint, its
 * source block and a destination block, both row-major local arrays of
 * the spec's dtype: the source has the local shape of the spec's `from`
 * type, the destination that of `to`.  The executor runs the plan's steps
 * on this device: local data kernels (sub-block slice, pack of the chunks
 * an all_to_all or reduce_scatter sends, unpack after all_gather or
 * all_to_all) are shared by every backend; the backend only moves
 * contiguous bytes among the devices of one mesh-axis group (all_gather,
 * all_to_all, reduce_scatter, all_reduce) and does one point-to-point
 * exchange per permute.  Every device must make the same calls in the
 * same order (the calls are collective over the whole mesh).
 *
 * Step semantics on a device with coordinate c on the step's axis (s its
 * size); "the group" is the s devices that differ only in that coordinate:
 *   slice(dim i)        keep chunk c of s along local dim i
 *   all_gather(dim i)   the group's blocks concatenated along dim i in
 *                       coordinate order
 *   all_to_all(i -> j)  split along j into s chunks, chunk k goes to member
 *                       k; the pieces received are concatenated along i in
 *                       member order
 *   reduce_scatter(i)   split along i, member k gets chunk k reduced over
 *                       the group
 *   all_reduce          the reduction over the group
 *   permute             for each block, the devices holding it before (same
 *                       coordinates on the partial axes) are paired with
 *                       those needing it after: a device that keeps its
 *                       block pairs with itself, the others in rank order;
 *                       each device sends one block and receives one.
 *   exchange            point to point, in one round: each device receives
 *                       every piece of its new block it lacks from the
 *                       holder that agrees with it on every axis the old
 *                       type does not shard (so partial contributions stay
 *                       on their coordinates), and keeps what it holds.
 *                       Backends without it (the ops table says) refuse
 *                       such plans on every rank before any data moves.
 *
 * Reductions (reduce_scatter, all_reduce) combine the group's values in
 * member order (coordinate 0 first).  f16 and bf16 are converted to f32,
 * reduced in f32 and rounded once, to nearest even, at the end; the other
 * dtypes are reduced in their own type (integers wrap modulo 2^bits).
 * max and min propagate NaN.  For c64 and c128, sum and prod are the
 * complex ones and max / min use the lexicographic order (real part, then
 * imaginary part; numpy's order for complex numbers), so the result is
 * always one of the inputs.
 *
 * MEMORY PROMISE.  Beyond the caller's source and destination buffers the
 * executor allocates only its scratch, all of it through one counting
 * allocator, and reports the high-water mark.  redist_plan_scratch_bytes
 * gives the exact figure before running; it depends only on the plan, the
 * options and the backend's capabilities, so it is the same on every rank.
 * With the default options and a memory-efficient plan (peak <= max(src
 * bytes, dst bytes), doc/spec-format.md section 2) it is at most max(src
 * bytes, dst bytes) per device; a plan of slices only (or of no steps) needs
 * none.  To keep that bound the executor may use the source buffer as work
 * space once its data has been consumed (like FFTW's "destroy input"): after
 * a call without REDIST_EXEC_PRESERVE_SRC the source contents are
 * UNSPECIFIED.  redist_plan_exec_info says whether a given plan will write
 * the source.  With REDIST_EXEC_PRESERVE_SRC the source is never written, at
 * the price of up to one more buffer of at most max(src, dst) bytes (for a
 * memory-efficient plan, at most 2 * max(src, dst) in all).  For any plan the
 * figure is at most 2 * peak.  Using less scratch can cost one extra local
 * copy pass (the default mode prefers memory to that copy).  Besides the
 * scratch the executor keeps O(steps) bytes of bookkeeping.
 *
 * Buffers: src and dst must not overlap; they are only used during the
 * call (never retained).  The library never prints and never aborts on
 * user input.
 */
#ifndef REDIST_EXEC_H
#define REDIST_EXEC_H

#include "redist/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Flags of redist_exec_options_t. */
enum {
    /** Never write the source buffer (may need more scratch, see above). */
    REDIST_EXEC_PRESERVE_SRC = 1u << 0
};

typedef struct redist_exec_options {
    unsigned flags; /**< REDIST_EXEC_* */
} redist_exec_options_t;

/**
 * A per-rank endpoint of a communication backend: one device of the mesh.
 * Created by a backend's constructor (redist_sim_backend below; the MPI
 * and OpenSHMEM backends add theirs) and owned as that constructor says.
 */
typedef struct redist_backend redist_backend_t;

/** "sim", "mpi", ....  NULL: NULL. */
REDIST_API const char *redist_backend_name(const redist_backend_t *backend);
/** Its rank.  NULL: -1. */
REDIST_API int64_t redist_backend_rank(const redist_backend_t *backend);
/** The number of ranks it connects.  NULL: 0. */
REDIST_API int64_t redist_backend_size(const redist_backend_t *backend);

/** What executing a plan will take, known before running. */
typedef struct redist_exec_info {
    uint64_t scratch_bytes;  /**< executor scratch per device (exact) */
    uint64_t bound_bytes;    /**< max(src bytes, dst bytes) */
    uint64_t src_bytes, dst_bytes;
    int writes_src;          /**< 1: the source is used as work space */
    int passes;              /**< local passes (kernels and exchanges) */
    int collectives;         /**< backend exchanges */
    int inplace_passes;      /**< exchanges run in place (backends that
                                  can, when asked to save memory) */
} redist_exec_info_t;

/**
 * The scratch and buffer use of executing `plan` with `opts` (NULL: the
 * defaults) on `backend` (NULL: a backend without placement constraints,
 * such as sim and mpi).  REDIST_ERR_INVALID for a NULL plan or out.
 */
REDIST_API redist_status_t redist_plan_exec_info(const redist_plan_t *plan,
                                      const redist_backend_t *backend,
                                      const redist_exec_options_t *opts,
                                      redist_exec_info_t *out,
                                      redist_error_t *err);

/** Shorthand: redist_plan_exec_info(...).scratch_bytes, which makes the
 *  arguments invalid when it fails.  NULL or invalid: 0. */
REDIST_API uint64_t redist_plan_scratch_bytes(const redist_plan_t *plan,
                                   const redist_backend_t *backend,
                                   const redist_exec_options_t *opts);

/**
 * A 64-bit hash of everything about a plan that the ranks executing it
 * must agree on: the mesh's axis sizes (two meshes: the source's), the
 * shape, dtype and reduction, the source and target types, every step
 * (op, dims, axis, type after) and the block boundaries of uneven dims.  Two processes of the same
 * build holding the same plan get the same hash; compare it across ranks
 * before any data moves (the MPI and OpenSHMEM backends do).  Not stable
 * across versions of redist: never store it.  NULL: 0.
 */
REDIST_API uint64_t redist_plan_hash(const redist_plan_t *plan);

/** What one execution did, on one device (or, from redist_exec_sim_run,
 *  the maximum over the devices). */
typedef struct redist_exec_report {
    uint64_t scratch_bytes;      /**< the promise (redist_plan_scratch_bytes) */
    uint64_t scratch_high_water; /**< measured: most scratch held at once */
    uint64_t scratch_allocations;
    uint64_t sent_bytes;         /**< bytes this device sent to others */
    uint64_t recv_bytes;         /**< bytes it received from others */
    double seconds;              /**< wall time of the call */
    int writes_src;              /**< the source buffer was used as work space */
    int steps_done;              /**< plan steps completed */
    int failed_step;             /**< step that failed, -1 if none */
} redist_exec_report_t;

/**
 * Execute `plan` on this device: `backend` is this rank's endpoint (its
 * size must equal the mesh's device count), `src` its source block
 * (redist_spec_src_bytes bytes), `dst` its destination block
 * (redist_spec_dst_bytes bytes).  Collective: every rank of the backend
 * must call it with an identical plan.
 *
 * Failure is collective too: a bad argument on one rank, a plan that
 * differs between ranks (REDIST_ERR_MISMATCH), an allocation failure or a
 * backend error makes every rank return an error (no hang); `err` on the
 * rank that failed first says why, the others name that rank.  After a
 * failure dst is unspecified, and so is src unless
 * REDIST_EXEC_PRESERVE_SRC was given.  `report` (may be NULL) is filled in
 * both cases.  Thread-safe for distinct backend endpoints.
 */
REDIST_API redist_status_t redist_plan_execute(const redist_plan_t *plan,
                                    redist_backend_t *backend, void *src,
                                    void *dst,
                                    const redist_exec_options_t *opts,
                                    redist_exec_report_t *report,
                                    redist_error_t *err);

/**
 * dst[e] = inputs[0][e] op inputs[1][e] op ... op inputs[n-1][e] for
 * e < count, with the reduction kernel every backend uses (inputs
 * combined in order 0..n-1; f16 and bf16 accumulated in f32 and rounded
 * once to nearest even, other types in their own type, integers
 * wrapping; max/min propagate NaN, complex max/min are lexicographic).
 * dst may not overlap an input.  For timing that kernel locally
 * (`redistplan calibrate` measures gamma with it).  Errors:
 * REDIST_ERR_INVALID for a NULL dst, inputs or input, n < 1 or count < 0,
 * an out-of-range dtype or op, or count bytes that overflow.
 */
REDIST_API redist_status_t redist_reduce_local(redist_dtype_t dtype,
                                    redist_reduce_t op, int n,
                                    const void *const inputs[], void *dst,
                                    int64_t count, redist_error_t *err);


/* ------------------------------------------- many arrays (spec §10) */
/**
 * A plan of many arrays (doc/spec-format.md section 10, doc/arrays.md):
 * every array's plan and the rounds the set runs in.  The arrays of a
 * round run together: their exchanges go as one message per peer (in a
 * set of two or more arrays, their all_gather, all_to_all and permute
 * steps too: the set runs them as exchanges), and their scratch is held
 * at once, so a round's scratch is the sum of its
 * arrays' (each array's: its executor program's scratch with the given
 * execution options, the most any device needs).  No round's scratch
 * exceeds the set's budget_bytes; without a budget there is one round.
 */
typedef struct redist_plan_set redist_plan_set_t;

/** A round's figures.  recv and peak are the sums of its arrays' plan
 *  figures (each the most any device has), so they bound the round's
 *  per-device figures; scratch is the sum of its arrays'.  time is the
 *  round's modelled time: its arrays' plan times with each combined
 *  exchange costed as one message per peer (the model: the top of
 *  src/exec/set.c); arrays_time the plan times added up. */
typedef struct redist_round_stats {
    int narrays;
    uint64_t scratch_bytes; /**< executor scratch per device, at most */
    uint64_t recv_bytes;    /**< bytes received per device, at most */
    uint64_t peak_bytes;    /**< bytes of the round's arrays held, at most */
    double time_s;          /**< modelled, messages combined per peer */
    int collectives;        /**< the arrays' collectives, added up */
    int exchanges;          /**< combined exchanges the run makes, one
                                 message per peer each: the most any of
                                 its arrays stops at (exchange steps,
                                 transfers, and the collectives the set
                                 runs as exchanges: a set's all_gather,
                                 all_to_all, permute, an uneven plan's) */
    double arrays_time_s;   /**< the arrays' modelled times, added up */
} redist_round_stats_t;

/** The whole set's figures. */
typedef struct redist_plan_set_stats {
    int narrays, nrounds;
    uint64_t budget_bytes;  /**< REDIST_NO_BUDGET when none */
    uint64_t scratch_bytes; /**< the largest round's scratch */
    uint64_t peak_bytes;    /**< the largest round's peak */
    uint64_t recv_bytes;    /**< added up over the rounds */
    double time_s;          /**< added up over the rounds */
    int collectives, exchanges;
    int memory_efficient;   /**< every array's plan is */
    double arrays_time_s;   /**< the arrays' modelled times, added up */
} redist_plan_set_stats_t;

/**
 * Plan every array of `arrays` (popts as redist_plan_create; NULL: the
 * defaults) and group them into rounds under its budget, with the
 * scratch the executor needs under `eopts` (NULL: the defaults) on
 * `backend`'s kind: its endpoint (e.g. redist_mpi_backend, or
 * redist_shmem_backend, which needs it), or NULL for backends without
 * placement constraints that run exchange steps (sim, mpi: generic
 * programs).  A set planned for an endpoint runs on endpoints of that
 * kind and options only; a set planned for NULL runs on sim and mpi
 * endpoints, and redist_plan_set_prepare refuses it on OpenSHMEM
 * (REDIST_ERR_INVALID on every rank).
 * Errors: those of redist_plan_create for an array (the message names
 * the array); REDIST_ERR_INFEASIBLE when an array alone needs more
 * scratch than the budget (the message names it and the smallest budget
 * that works); REDIST_ERR_INVALID for NULL arguments.
 */
REDIST_API redist_status_t redist_plan_set_create(const redist_arrays_t *arrays,
                                                  const redist_plan_options_t *popts,
                                                  const redist_backend_t *backend,
                                                  const redist_exec_options_t *eopts,
                                                  redist_plan_set_t **out,
                                                  redist_error_t *err);
/**
 * The set of `arrays` with `set`'s plans replayed (redistplan run SET
 * --shrink, or another budget): array i replays set's plan i
 * (redist_plan_replay: its cost model, and on the same shape its blocks
 * too), so each array i of `arrays` must be one the steps are valid for
 * (the same meshes and types; the same shape, or another with each dim a
 * multiple of what the types split it by: redist_plan_shrink_shape);
 * planned for `backend`'s kind (NULL: the set's), with the set's
 * execution options; the budget and rounds of `arrays`.  Errors: those
 * of redist_plan_replay for an array (the message names it), those of
 * redist_plan_set_create for the rounds; REDIST_ERR_INVALID for NULL
 * arguments or another number of arrays.
 */
REDIST_API redist_status_t redist_plan_set_replay(const redist_plan_set_t *set,
                                                  const redist_arrays_t *arrays,
                                                  const redist_backend_t *backend,
                                                  redist_plan_set_t **out,
                                                  redist_error_t *err);
REDIST_API void redist_plan_set_free(redist_plan_set_t *set);
/** Number of arrays.  NULL: 0. */
REDIST_API int redist_plan_set_num_arrays(const redist_plan_set_t *set);
/** Array i's plan (its spec, redist_plan_spec, is named as the array),
 *  owned by the set.  NULL or out of range: NULL. */
REDIST_API const redist_plan_t *redist_plan_set_plan(const redist_plan_set_t *set,
                                                     int i);
/** Array i's executor scratch per device.  NULL or out of range: 0. */
REDIST_API uint64_t redist_plan_set_array_scratch(const redist_plan_set_t *set,
                                                  int i);
/** 1 when step k of array i's plan runs within its round's combined
 *  exchanges (an exchange or transfer step; in a set of two or more
 *  arrays a lowered collective: the all_gather, all_to_all and permute
 *  steps of a one-mesh array or of a two-mesh array's phases, and their
 *  reduce_scatter and (even dims) all_reduce unless the budget keeps
 *  their reductions as collectives; an uneven one-mesh array's
 *  data-moving collectives always),
 *  0 when it runs as its own collective (a set of one two-mesh array:
 *  its phases) or is local (slice); doc/arrays.md.  NULL or out of
 *  range: -1. */
REDIST_API int redist_plan_set_step_combined(const redist_plan_set_t *set,
                                             int i, int k);
/** Number of rounds.  NULL: 0. */
REDIST_API int redist_plan_set_num_rounds(const redist_plan_set_t *set);
/** The round of array i.  NULL or out of range: -1. */
REDIST_API int redist_plan_set_round_of(const redist_plan_set_t *set, int i);
/** Round r's figures; REDIST_ERR_INVALID for NULL or out of range. */
REDIST_API redist_status_t redist_plan_set_round(const redist_plan_set_t *set,
                                                 int r,
                                                 redist_round_stats_t *out);
/** The set's figures (all zero, no budget, for NULL). */
REDIST_API void redist_plan_set_stats(const redist_plan_set_t *set,
                                      redist_plan_set_stats_t *out);
/** The set as JSON (doc/spec-format.md section 10): its name, budget,
 *  rounds and totals, and each array's plan object as
 *  redist_plan_to_json writes it, with its "array" name, "round" and
 *  "scratch_bytes".  malloc'd; NULL on allocation failure.  NULL: NULL. */
REDIST_API char *redist_plan_set_to_json(const redist_plan_set_t *set);
/** The set as a table: the rounds and their figures, the totals, and a
 *  line per array (round, steps, received bytes, peak, scratch); with
 *  `plans` non-zero each array's plan table follows, as
 *  redist_plan_print writes it (without grids).  REDIST_ERR_INVALID for
 *  NULL, REDIST_ERR_IO when writing fails. */
REDIST_API redist_status_t redist_plan_set_print(const redist_plan_set_t *set,
                                                 FILE *out, int plans);

/**
 * A set prepared on this device, run many times: every array's program
 * built and bound, one agreement across the ranks, and one scratch arena
 * as large as the largest round (the arrays of a round use disjoint
 * parts of it), so a run only moves data.  src[i] and dst[i] are this
 * device's blocks of array i (NULL for an empty block), bound until
 * redist_set_prepared_free.  Two-mesh arrays need a backend that makes
 * endpoints on their meshes and combines box pieces: mpi, shmem and sim
 * do (the context may be on any mesh of the union's device count); a
 * two-mesh array whose transfer sums pending partial contributions
 * receives them into prod|P| slabs of its R block in the arena and
 * reduces them in ascending order of sender (bit-identical to the sim
 * one-array run; doc/arrays.md).
 * Failure is collective as for redist_plan_execute.  The report's
 * scratch figures are the arena's: the largest round's buffers and the
 * backend's work space (MPI: reductions whose spare region is too
 * small), all within the budget (doc/arrays.md).
 */
typedef struct redist_set_prepared redist_set_prepared_t;
REDIST_API redist_status_t redist_plan_set_prepare(const redist_plan_set_t *set,
                                                   redist_backend_t *backend,
                                                   void *const src[],
                                                   void *const dst[],
                                                   redist_set_prepared_t **out,
                                                   redist_error_t *err);
/** Run every round in order.  report (may be NULL): traffic of the run,
 *  the arena's scratch, the messages counted by `messages`. */
REDIST_API redist_status_t redist_set_run(redist_set_prepared_t *prep,
                                          redist_exec_report_t *report,
                                          redist_error_t *err);
/**
 * NON-BLOCKING.  redist_set_start hands a run (the same as redist_set_run)
 * to the prepared set's progress thread and returns; the rounds follow
 * one another on that thread with no further call, while the caller
 * computes.  redist_set_test sets *done (1: over); redist_set_wait waits
 * for the run and returns its status, error and report.  Collective:
 * every rank starts and waits.  The thread calls the backend while the
 * caller may call other code, so start needs a backend that allows a
 * second thread on every rank: MPI_THREAD_MULTIPLE (MPI_Init_thread),
 * SHMEM_THREAD_MULTIPLE (shmem_init_thread), or the sim backend (its
 * device threads); prepare agrees on it and redist_set_prepared_async
 * says whether start is available (else start fails on every rank,
 * REDIST_ERR_INVALID; run still works).  Misuse, the same on every rank
 * of an SPMD program and so failing on every rank alike, with
 * REDIST_ERR_INVALID: start or run while a run is in flight, test or
 * wait with none started, a NULL set.  Until wait the set's endpoint
 * (and its MPI context or OpenSHMEM context) runs nothing else: an
 * OpenSHMEM context's other calls fail meanwhile; on MPI that is the
 * caller's rule (prepared MPI objects have their own communicators; a
 * set uses the context's).  redist_set_prepared_free waits for a run in
 * flight first.  A failure of the run is returned by wait.
 */
REDIST_API redist_status_t redist_set_start(redist_set_prepared_t *prep,
                                            redist_error_t *err);
REDIST_API redist_status_t redist_set_test(redist_set_prepared_t *prep,
                                           int *done, redist_error_t *err);
REDIST_API redist_status_t redist_set_wait(redist_set_prepared_t *prep,
                                           redist_exec_report_t *report,
                                           redist_error_t *err);
/** 1 when redist_set_start is available on every rank (see above).
 *  NULL: 0. */
REDIST_API int redist_set_prepared_async(const redist_set_prepared_t *prep);
/** Point-to-point messages this device sent in the last run (each
 *  combined exchange sends one per peer).  NULL: 0. */
REDIST_API uint64_t redist_set_prepared_messages(const redist_set_prepared_t *prep);
/** Combined exchanges of the last run (each sends at most one message
 *  per peer).  NULL: 0. */
REDIST_API uint64_t redist_set_prepared_exchanges(const redist_set_prepared_t *prep);
/** Free (collective when the backend's scratch is, as for a plan); a
 *  non-blocking run in flight is waited for first. */
REDIST_API void redist_set_prepared_free(redist_set_prepared_t *prep);
/** prepare + run + free. */
REDIST_API redist_status_t redist_plan_set_execute(const redist_plan_set_t *set,
                                                   redist_backend_t *backend,
                                                   void *const src[],
                                                   void *const dst[],
                                                   redist_exec_report_t *report,
                                                   redist_error_t *err);

/* ------------------------------------------------------ sim backend */

/**
 * The simulated backend: all devices of a mesh inside one process, each
 * run by its own thread through redist_plan_execute; exchanges go through
 * shared memory and barriers.  It uses the same executor and kernels as
 * the real backends.  If any device fails, every device's call returns an
 * error.
 */
typedef struct redist_sim redist_sim_t;

/** Largest device count of the sim backend (one thread per device). */
#define REDIST_SIM_MAX_DEVICES 4096

/** Flags of the sim backend. */
enum {
    /** Run all_gather, all_to_all, reduce_scatter and exchange as whole
     *  steps that read the peers' blocks and write straight into the
     *  final places (no pack or unpack pass): the path a one-sided backend
     *  takes.  An uneven plan's reduce_scatter too (no packed boxes, so
     *  less scratch).  Without it the sim takes the generic pack /
     *  exchange / unpack path, except in a two-mesh phase that needs it
     *  to stay within its room (redist_exec_sim_run). */
    REDIST_SIM_FUSED = 1u << 0
};

/** A world of `ndevices` (1..REDIST_SIM_MAX_DEVICES) simulated devices.
 *  Free with redist_sim_free once no device uses it. */
REDIST_API redist_status_t redist_sim_create(int64_t ndevices, unsigned flags,
                                  redist_sim_t **out, redist_error_t *err);
REDIST_API void redist_sim_free(redist_sim_t *sim);
/** The endpoint of device `rank`, owned by the world (NULL or out of
 *  range: NULL).  Each endpoint may be used by one thread at a time. */
REDIST_API redist_backend_t *redist_sim_backend(redist_sim_t *sim, int64_t rank);

/**
 * Run `plan` on every device of its mesh with the sim backend, one thread
 * per device: src[r] and dst[r] are device r's blocks (arrays of
 * redist_mesh_num_devices entries).  `report` (may be NULL) receives the
 * maximum over the devices of each figure (writes_src: any), filled in
 * both cases; `per_device` (may be NULL) an array of one report per
 * device.  On failure `err` holds the first device's error.
 *
 * A two-mesh plan (doc/meshes.md) runs its stages one after the other on
 * every device, so a device on both meshes, when both phases have steps,
 * keeps its S block in its dst buffer when S fits there, and its R block
 * in its src buffer when R fits there and REDIST_EXEC_PRESERVE_SRC is not
 * set (the source is then work space: writes_src).  Device d's scratch is
 * at most max(A_d + S_d, S_d + R_d, R_d + B_d) (+ nothing for a transfer
 * that sums), A_d and B_d the phases' scratch on d (0 off their mesh),
 * S_d and R_d its S and R blocks where they are not so placed (0 off
 * their mesh or for an empty phase); redist_plan_exec_info on a sim
 * backend promises the largest device's figure.  A phase whose scratch
 * would exceed the room max(src_d, dst_d) leaves beside the block held
 * with it (the least over its mesh) runs with REDIST_SIM_FUSED when that
 * needs less, whatever sim_flags say; the promise counts that choice.
 * Without REDIST_EXEC_PRESERVE_SRC, a device whose phases have at most
 * one step each is then within max(src_d, dst_d) (doc/meshes.md).
 */
REDIST_API redist_status_t redist_exec_sim_run(const redist_plan_t *plan,
                                    void *const src[], void *const dst[],
                                    unsigned sim_flags,
                                    const redist_exec_options_t *opts,
                                    redist_exec_report_t *report,
                                    redist_exec_report_t *per_device,
                                    redist_error_t *err);


/**
 * Run a set on the sim backend: src[i][d] and dst[i][d] are device d's
 * blocks of array i.  report: the most over the devices (the scratch
 * high-water mark measured); per_device (may be NULL) one per device.
 */
REDIST_API redist_status_t redist_exec_sim_run_set(const redist_plan_set_t *set,
                                                   void *const *const src[],
                                                   void *const *const dst[],
                                                   unsigned sim_flags,
                                                   redist_exec_report_t *report,
                                                   redist_exec_report_t *per_device,
                                                   redist_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
