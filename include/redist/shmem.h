/*
 * redist/shmem.h - the OpenSHMEM backend: execute plans across the PEs of
 * an OpenSHMEM job with one-sided puts into the final places.
 *
 * This is the only redist header that includes <shmem.h>; redist.h never
 * does, and libredist never links OpenSHMEM.  Programs that use it link
 * libredist_shmem (pkg-config redist-shmem), which links libredist and
 * OpenSHMEM (Open MPI's liboshmem; OpenSHMEM 1.4, no teams).
 *
 * MODEL.  PE r is mesh device r (row-major over the mesh axes, the first axis
 * varying slowest, doc/spec-format.md section 1); the job must have exactly
 * the mesh's device count of PEs.  Each PE holds its own source block and
 * receives its own destination block, row-major local arrays of the spec's
 * dtype, exactly as with the sim backend (redist/exec.h).
 *
 *   shmem_init();
 *   redist_shmem_t *sx;
 *   redist_shmem_create(mesh, NULL, &sx, &err);         collective
 *   redist_plan_create(spec, NULL, &plan, &err);         same plan everywhere
 *   src = shmem_malloc(S); dst = shmem_malloc(T);        (or any memory)
 *   for (...)
 *       redist_shmem_execute(sx, plan, src, dst, NULL, &rep, &err); collective
 *   redist_shmem_free(sx);                               collective
 *   shmem_finalize();
 *
 * PLAN ONCE, RUN MANY: redist_shmem_prepare binds src and dst and does
 * the set-up once; redist_shmem_run only moves data, and
 * redist_shmem_start / _test / _wait run it on a progress thread while
 * the caller computes (PREPARED OBJECTS, below).
 *
 * HOW A STEP RUNS.  Every exchange runs as one whole step (all_gather,
 * all_to_all, reduce_scatter and exchange included): each PE writes the
 * pieces it owes its group straight to their final offsets in the
 * receivers' blocks, so nobody packs before sending or unpacks after
 * receiving.  The writes are stores through shmem_ptr when the peer's
 * memory is mapped in this process (PEs on one node), else
 * shmem_putmem_nbi per contiguous run (shmem_iput for strided runs of one
 * element; REDIST_SHMEM_NO_PTR forces the puts).  A step only
 * synchronises the PEs of its own group (the devices that differ only in
 * their coordinate on the step's axis, any size, any stride; or the
 * partners of a permute or exchange), with per-step counters in
 * symmetric memory: each member tells the others it is ready (its input
 * is final and its output free), writes, shmem_quiet, tells them it is
 * done, and waits for their "done" (shmem_wait_until-style polling).
 * There are no global barriers inside a plan.
 *
 * REDUCTIONS (reduce_scatter, all_reduce) combine the members' values in
 * member order with the executor's own kernels, so every dtype and op
 * gives the sim backend's result bit for bit (f16 / bf16 accumulate in
 * f32 and round once; NaN-propagating max / min; lexicographic complex
 * max / min).  When the peers' inputs are reachable by load (shmem_ptr:
 * PEs on one node) a member reduces its part reading them in place (pull);
 * all_reduce then puts each member's reduced part to the others (a
 * reduce-scatter plus all-gather: 2(s-1)/s of the data per member).
 * Otherwise (another node, REDIST_SHMEM_NO_PTR, or an input outside the
 * symmetric heap) the members push their partial chunks, in rounds,
 * into a symmetric work area of the receiver, which reduces them locally.
 * Where no symmetric memory within the bound below is left for that, a
 * reduction uses a protocol with no work space: the receiver reads a
 * symmetric input with shmem_getmem, a block of RD_REDUCE_BLOCK elements
 * at a time (a private input is first copied into its output when that
 * is large enough), or the members push into the receiver's output
 * block one at a time, in member order.
 *
 * BUFFERS.  One-sided puts need their target in the symmetric heap.
 *  - If src and dst are symmetric (shmem_malloc'd, the same objects on
 *    every PE), redist_shmem_execute puts straight into dst and into the
 *    consumed src: the scratch is exactly that of the sim backend with
 *    REDIST_SIM_FUSED, at most max(src bytes, dst bytes) for a
 *    memory-efficient plan with the default options (redist/exec.h), and
 *    often none.
 *  - Otherwise (the caller's data outside the symmetric heap) every
 *    exchange receives into the executor's scratch, which then lives in
 *    the symmetric heap, and a final local copy moves the result to dst.
 *    Consecutive exchanges run in place in one symmetric buffer: each
 *    copies its input to a free caller buffer (the consumed src, or dst)
 *    and puts from there; pulled reductions need no copy (a member writes
 *    only the elements of its own input that nobody else reads; a
 *    reduce_scatter then moves its chunks down into place once the group
 *    is done), and a reduction whose
 *    input is private first copies it into its symmetric output buffer
 *    when that is large enough.  The scratch is then at most peak bytes
 *    (at most max(src, dst) for a memory-efficient plan) where there is a
 *    free caller buffer to stage into, as with the default options.
 * redist_shmem_execute decides between the two on every call (one small
 * collective).
 *
 * MEMORY.  The executor's scratch is allocated per call from the
 * symmetric heap (shmem_malloc, collective, sized from the plan before
 * any data moves) and freed at its end; it is counted by the executor's
 * allocator.  Pushed reductions put into free symmetric scratch of their
 * step when there is room for one element per other member, else into a
 * fixed symmetric work area of the context (options.work_bytes, default
 * REDIST_SHMEM_WORK_BYTES), of which redist_shmem_execute uses at most
 * what max(src, dst) leaves beside the executor's scratch (more rounds);
 * where that is less than one element per other member the reduction
 * runs with no work space (above).  A call that may use the area counts
 * that part in its promise (report.scratch_bytes,
 * redist_shmem_info_t.scratch_bytes) and what it used in its measured
 * high-water mark.  A pushed all_reduce first uses the part of its
 * symmetric output outside each receiver's own range.  So the promise,
 * work area included, is max(src, dst) for a memory-efficient plan
 * (2 max(src, dst) with REDIST_EXEC_PRESERVE_SRC), as for the executor.
 * Besides these the
 * context keeps O(PEs + steps) bytes of symmetric bookkeeping (counters,
 * the reduction work arrays of the agreement).  The symmetric heap must
 * be large enough for the caller's symmetric buffers plus the scratch
 * (Open MPI: SHMEM_SYMMETRIC_SIZE).
 *
 * FAILURE.  Every call here is collective over all PEs and fails together:
 * every check a PE can fail on its own is folded into an agreement (a
 * reduction over all PEs) before any data moves, so a bad argument on one
 * PE (a NULL buffer, src == dst, unknown flags, a work area too small, a
 * plan for another device count), PEs given different meshes, plans,
 * execution flags or options (REDIST_ERR_MISMATCH), and a symmetric
 * allocation that fails on one PE only (the work area, the executor's
 * scratch: a smaller symmetric heap there) make every PE return an error,
 * never hang; `err` on the PE that failed first says why, the others name
 * it ("PE 1 failed: ...", "PE 1 differs from PE 0").  shmem_malloc is
 * collective but may fail on one PE only; every symmetric allocation here
 * is made on every PE and then agreed, and where it failed anywhere the
 * others free theirs, so the heaps stay alike and the PEs in step (Open
 * MPI 4.1 returns NULL from a failed shmem_malloc without the barrier a
 * successful one ends with; the failing PE makes it up).  What no
 * agreement can cover: a PE that does not make the call at all, a NULL
 * context, and redist_shmem_create's first allocation (its control
 * block, about 34 KB of symmetric memory: before it there is nothing
 * symmetric to agree over), which fails on that PE only if its heap,
 * unlike the others', has less than that left (Open MPI's heaps are at
 * least 2 MiB).  A PE that fails in the middle of a plan writes an abort
 * word to every PE: the PEs waiting for it return REDIST_ERR_BACKEND
 * (PEs whose groups never wait for it may finish the plan; their
 * results are right), and the context stays failed: every later call
 * fails on every PE.  After a failure dst is unspecified, and so is src unless
 * REDIST_EXEC_PRESERVE_SRC was given.  NULL `err` is allowed everywhere.
 * The library never prints and never aborts.
 *
 * THREADS.  A context is used by one thread at a time, between
 * shmem_init and shmem_finalize.  Open MPI 4.1.4: run with
 * `oshrun --mca osc ^rdma` (or OMPI_MCA_osc=^rdma), else shmem_finalize
 * segfaults; shmem_finalize also finalizes MPI.
 */
#ifndef REDIST_SHMEM_H
#define REDIST_SHMEM_H

#include <shmem.h>

#include "redist/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default size of the context's symmetric work area. */
#define REDIST_SHMEM_WORK_BYTES (1ULL << 20)

/** Flags of redist_shmem_options_t. */
enum {
    /** Pack / unpack with the executor's kernels and put contiguous
     *  chunks, instead of whole steps into the final places (for
     *  comparison; costs local passes and sometimes scratch). */
    REDIST_SHMEM_PACKED = 1u << 0,
    /** Never address a peer's memory directly (shmem_ptr): data moves by
     *  shmem_putmem_nbi / shmem_iput, reductions push their chunks
     *  through the work area (the path between nodes). */
    REDIST_SHMEM_NO_PTR = 1u << 1
};

typedef struct redist_shmem_options {
    unsigned flags;      /**< REDIST_SHMEM_* */
    /** Symmetric work area of pushed reductions, in bytes; 0: the
     *  default.  At least 16 bytes per PE. */
    uint64_t work_bytes;
} redist_shmem_options_t;

/** The OpenSHMEM backend of one PE (a context over all PEs). */
typedef struct redist_shmem redist_shmem_t;

/**
 * Create the context of this PE.  Collective over all PEs, after
 * shmem_init: every PE must call it with the same mesh (axis sizes) and
 * options.  The mesh's device count must be shmem_n_pes() (else
 * REDIST_ERR_INVALID on every PE); `opts` may be NULL (defaults).  The
 * context keeps nothing of the mesh: it serves any plan whose mesh has
 * shmem_n_pes() devices (the groups of a step come from the plan).  Only
 * one context's call may run at a time.  *out is written only on
 * success and belongs to the caller (redist_shmem_free).  Errors:
 * REDIST_ERR_INVALID (bad arguments, device count, unknown flags, work
 * area too small), REDIST_ERR_MISMATCH (PEs passed different meshes or
 * options), REDIST_ERR_NOMEM (memory or symmetric heap).  A NULL `out`
 * fails at once on that PE only.
 */
REDIST_API redist_status_t redist_shmem_create(const redist_mesh_t *mesh,
                                    const redist_shmem_options_t *opts,
                                    redist_shmem_t **out,
                                    redist_error_t *err);

/** Free the context and its symmetric memory.  Collective (shmem_free);
 *  NULL is accepted (on every PE). */
REDIST_API void redist_shmem_free(redist_shmem_t *ctx);

/** The options in force (work_bytes resolved).  NULL: zeros. */
REDIST_API redist_shmem_options_t redist_shmem_get_options(const redist_shmem_t *ctx);

/** The protocols of a reduction over more than one PE (doc/shmem.md). */
typedef enum redist_shmem_protocol_t {
    REDIST_SHMEM_RED_PULL,      /**< peers' inputs read by load (shmem_ptr) */
    REDIST_SHMEM_RED_GET,       /**< peers' inputs read by shmem_getmem */
    REDIST_SHMEM_RED_COPY_PULL, /**< private input copied into the output,
                                     then pulled */
    REDIST_SHMEM_RED_COPY_GET,  /**< the same, read with gets */
    REDIST_SHMEM_RED_PUSH,      /**< pushed into free symmetric memory */
    REDIST_SHMEM_RED_PUSH_WORK, /**< pushed into the context's work area */
    REDIST_SHMEM_RED_SERIAL,    /**< pushed into the output block, one
                                     member at a time */
    REDIST_SHMEM_RED_COUNT
} redist_shmem_protocol_t;

/** What the context has run on this PE since redist_shmem_create. */
typedef struct redist_shmem_stats_t {
    /** reductions over more than one PE, per protocol */
    uint64_t reductions[REDIST_SHMEM_RED_COUNT];
} redist_shmem_stats_t;

/** The counts of this PE so far (take two and subtract for one call).
 *  NULL: zeros. */
REDIST_API redist_shmem_stats_t redist_shmem_stats(const redist_shmem_t *ctx);

/** 1 if the PEs address each other's symmetric memory directly
 *  (shmem_ptr: stores for data, loads for reductions), agreed by every PE
 *  at creation; 0 otherwise (REDIST_SHMEM_NO_PTR, or PEs on other
 *  nodes).  NULL: 0. */
REDIST_API int redist_shmem_uses_ptr(const redist_shmem_t *ctx);

/**
 * shmem_malloc(bytes) on every PE, for symmetric src and dst buffers:
 * collective, and all or none.  shmem_malloc may fail on one PE only;
 * here the PEs then agree, the others free theirs, and every PE gets
 * NULL, so the heaps stay alike and no PE waits.  `mine` (may be NULL)
 * is set to 1 on the PEs whose own shmem_malloc failed, else 0.  Free
 * the buffer with shmem_free on every PE.  NULL (on every PE) for a NULL
 * context or 0 bytes.  NULL: NULL.
 */
REDIST_API void *redist_shmem_malloc_all(redist_shmem_t *ctx, size_t bytes, int *mine);

/**
 * This PE's endpoint for redist_plan_execute and redist_plan_exec_info,
 * owned by the context.  `symmetric` non-zero: the caller promises that
 * every PE passes the same symmetric objects as src and dst (puts go
 * straight into them); zero: src and dst may be any memory.  Its reports
 * count only the executor's scratch: prefer redist_shmem_execute.
 * NULL: NULL.
 */
REDIST_API redist_backend_t *redist_shmem_backend(redist_shmem_t *ctx, int symmetric);

/** What executing a plan through a context takes (the same on every PE). */
typedef struct redist_shmem_info {
    redist_exec_info_t exec; /**< the executor's figures on this backend */
    int symmetric;           /**< the buffers are symmetric (see BUFFERS) */
    uint64_t work_bytes;     /**< work area the call may use (0 or
                                  options.work_bytes) */
    uint64_t scratch_bytes;  /**< exec.scratch_bytes + work_bytes: the
                                  promise */
} redist_shmem_info_t;

/**
 * The memory of executing `plan` with `opts` (NULL: defaults) on `src`
 * and `dst` through `ctx`.  Local: whether the buffers are symmetric is
 * judged on this PE only (redist_shmem_execute also checks that every PE
 * passes the same objects).  REDIST_ERR_INVALID for NULL arguments or a
 * plan whose mesh does not have shmem_n_pes() devices.
 */
REDIST_API redist_status_t redist_shmem_exec_info(const redist_shmem_t *ctx,
                                       const redist_plan_t *plan,
                                       const void *src, const void *dst,
                                       const redist_exec_options_t *opts,
                                       redist_shmem_info_t *out,
                                       redist_error_t *err);

/**
 * Execute `plan` on this PE: `src` is its source block
 * (redist_spec_src_bytes bytes), `dst` its destination block
 * (redist_spec_dst_bytes bytes); they must not overlap and are used only
 * during the call.  Collective over all PEs: every PE calls it with an
 * identical plan and the same `opts`.  Failure is collective, as described
 * above.  `report` (may be NULL) is filled in both cases: scratch_bytes is
 * the promise (redist_shmem_info_t.scratch_bytes), scratch_high_water the
 * measured high-water mark of the symmetric scratch and work area
 * together, on this PE.
 */
REDIST_API redist_status_t redist_shmem_execute(redist_shmem_t *ctx,
                                     const redist_plan_t *plan, void *src,
                                     void *dst,
                                     const redist_exec_options_t *opts,
                                     redist_exec_report_t *report,
                                     redist_error_t *err);

/* ------------------------------------------------ prepared objects */

/*
 * PREPARED OBJECTS: as in redist/mpi.h (PREPARED OBJECTS there: buffers
 * bound at prepare, what is checked where, the rules of use, the
 * progress thread), with these differences.  Prepare decides once
 * whether the bound buffers are symmetric (same objects on every PE) and
 * allocates the symmetric scratch, collectively, for the object's life;
 * the symmetric heap must hold it beside the context's.  The object
 * shares its context's counters: only one call of a context (its own or
 * one of its objects') runs at a time, and while a started run is in
 * flight, every other call on the context fails alike on every PE
 * (REDIST_ERR_INVALID) until its wait.  start needs
 * SHMEM_THREAD_MULTIPLE (shmem_init_thread; Open MPI 4.1's oshmem
 * provides it), agreed at prepare.  A PE that fails in the middle of a
 * run, started or not, aborts the others as redist_shmem_execute does:
 * every PE's run or wait returns REDIST_ERR_BACKEND and the context
 * stays failed.
 */

/** A prepared execution of one plan on bound buffers (one PE's part). */
typedef struct redist_shmem_prepared redist_shmem_prepared_t;

/**
 * Prepare `plan` on `src` and `dst` (bound until the object is freed).
 * Collective over all PEs, failing together as redist_shmem_execute
 * does.  `opts` may be NULL.  *out is written only on success and
 * belongs to the caller (redist_shmem_prepared_free).  A NULL context or
 * `out` fails at once on that PE only.
 */
REDIST_API redist_status_t redist_shmem_prepare(redist_shmem_t *ctx,
                                     const redist_plan_t *plan, void *src,
                                     void *dst,
                                     const redist_exec_options_t *opts,
                                     redist_shmem_prepared_t **out,
                                     redist_error_t *err);

/** Run it once (blocking; collective); `report` (may be NULL) as for
 *  redist_shmem_execute.  REDIST_ERR_INVALID for a NULL object or a
 *  started run of the context in flight. */
REDIST_API redist_status_t redist_shmem_run(redist_shmem_prepared_t *prep,
                                 redist_exec_report_t *report,
                                 redist_error_t *err);

/** Start a run on the progress thread and return at once (collective).
 *  REDIST_ERR_INVALID for a NULL object, a run of the context in flight,
 *  or no SHMEM_THREAD_MULTIPLE on some PE. */
REDIST_API redist_status_t redist_shmem_start(redist_shmem_prepared_t *prep,
                                   redist_error_t *err);

/** *done = 1 if the started run is over.  Local, never blocks.
 *  REDIST_ERR_INVALID for NULL arguments or no run started. */
REDIST_API redist_status_t redist_shmem_test(redist_shmem_prepared_t *prep,
                                  int *done, redist_error_t *err);

/** Wait for the started run: its status and `report` (may be NULL).
 *  REDIST_ERR_INVALID for a NULL object or no run started. */
REDIST_API redist_status_t redist_shmem_wait(redist_shmem_prepared_t *prep,
                                  redist_exec_report_t *report,
                                  redist_error_t *err);

/** 1 if redist_shmem_start is available (SHMEM_THREAD_MULTIPLE on every
 *  PE, agreed at prepare).  NULL: 0. */
REDIST_API int redist_shmem_prepared_async(
    const redist_shmem_prepared_t *prep);

/** Free the object and its symmetric scratch (collective; a run in
 *  flight is waited for first).  NULL is accepted. */
REDIST_API void redist_shmem_prepared_free(redist_shmem_prepared_t *prep);

/* ------------------------------------------------------------ two meshes */

/*
 * TWO MESHES (doc/meshes.md): a plan of a two-mesh spec (its source on
 * one mesh of devices, its target on another; redist/spec.h) runs with
 * PE d as global device d: the job must have exactly
 * redist_spec_num_devices PEs, and the context may have been created
 * with any mesh of that many devices.  redist_shmem_execute and
 * redist_shmem_exec_info take such plans too (prepare, run once, free);
 * redist_shmem_prepare does not: prepare them with
 * redist_shmem_prepare_meshes.  Each PE passes its source block (NULL
 * outside the source mesh, or for an empty block) and its destination
 * block (NULL outside the target mesh).  The source phase runs on the
 * source mesh's PEs, the transfer as one-sided puts of each piece
 * straight into its place in the receiving PE's block (each byte
 * crosses once), the target phase on the target mesh's PEs; there is no
 * barrier over the job inside a run.  Scratch, allocated once per
 * prepared object and laid out by lifetime (doc/meshes.md): one
 * symmetric part, the same size on every PE, of what other PEs write
 * (the R block, the slabs of a transfer that sums, the phases'
 * scratch); the S block in the destination or the symmetric part's
 * spare end where it fits, else private memory of this PE's size.  When
 * every PE passes the same symmetric src and dst objects (as for one
 * mesh: shmem_malloc'ed, non-NULL even off a mesh), the R block is the
 * destination itself (an empty target phase) or the consumed source
 * (then report.writes_src) where that keeps more PEs within
 * max(src_d, dst_d).  With any buffers, where that keeps more PEs
 * within it, the transfer instead streams through a symmetric window
 * (one fill of the received bytes at a time, each copied or reduced out
 * before the next lands) and R lies in the destination, the consumed
 * source or private memory of this PE's size.  report.scratch_bytes and redist_shmem_info_t's
 * scratch_bytes promise this PE's sum (exec_info judges the buffers on
 * this PE only), scratch_high_water measures it (the context's work
 * area of pushed reductions is not counted here).  The symmetric part
 * is sized for the PE that needs most, so this backend does not always
 * meet the contract's bound of max(src_d, dst_d) on PE d: the promise
 * says by how much it exceeds it (doc/meshes.md, "Not yet").
 * Failure is collective as for one-mesh plans.  A plan whose transfer
 * sums pending partial contributions runs too: they land in prod|P|
 * slabs of the R block in the arena (counted in the scratch figures),
 * or stream through the window, and are reduced in ascending order of
 * sender, as sim does.
 * REDIST_EXEC_PRESERVE_SRC is the only execution
 * flag.  start / test / wait: redist_shmem_start_meshes below.
 */

/** A prepared execution of one two-mesh plan (one PE's part). */
typedef struct redist_shmem_meshes redist_shmem_meshes_t;

/**
 * Prepare a two-mesh `plan` on `src` and `dst` (bound until freed):
 * collective over every PE, failing together as redist_shmem_prepare
 * does.  `opts` may be NULL.  *out is written only on success and
 * belongs to the caller (redist_shmem_meshes_free).  A NULL context or
 * `out` fails at once on that PE only.
 */
REDIST_API redist_status_t redist_shmem_prepare_meshes(
    redist_shmem_t *ctx, const redist_plan_t *plan, void *src, void *dst,
    const redist_exec_options_t *opts, redist_shmem_meshes_t **out,
    redist_error_t *err);

/** Run it once (blocking; collective); `report` (may be NULL) as for
 *  redist_shmem_execute.  REDIST_ERR_INVALID for a NULL object. */
REDIST_API redist_status_t redist_shmem_run_meshes(redist_shmem_meshes_t *m,
                                                   redist_exec_report_t *report,
                                                   redist_error_t *err);

/**
 * Non-blocking runs, as redist_shmem_start .. redist_shmem_wait for one
 * mesh: start hands the run (the same as redist_shmem_run_meshes) to
 * the object's progress thread, test sets *done, wait returns the run's
 * status and report.  Collective.  start needs SHMEM_THREAD_MULTIPLE on
 * every PE (agreed at prepare; redist_shmem_meshes_async says whether
 * start is available, else it fails on every PE).  The context stays
 * occupied until wait: its other calls fail alike on every PE
 * meanwhile.  REDIST_ERR_INVALID, alike on every PE: start or run while
 * a run is in flight, test or wait with none started, a NULL object.  A
 * PE that fails in a started run aborts the others: every PE's wait
 * returns the error.  redist_shmem_meshes_free waits for a run in
 * flight first.
 */
REDIST_API redist_status_t redist_shmem_start_meshes(redist_shmem_meshes_t *m,
                                                     redist_error_t *err);
REDIST_API redist_status_t redist_shmem_test_meshes(redist_shmem_meshes_t *m,
                                                    int *done,
                                                    redist_error_t *err);
REDIST_API redist_status_t redist_shmem_wait_meshes(redist_shmem_meshes_t *m,
                                                    redist_exec_report_t *report,
                                                    redist_error_t *err);
/** 1 when redist_shmem_start_meshes is available.  NULL: 0. */
REDIST_API int redist_shmem_meshes_async(const redist_shmem_meshes_t *m);

/** Free it and its symmetric memory (collective; a non-blocking run in
 *  flight is waited for first).  NULL is accepted. */
REDIST_API void redist_shmem_meshes_free(redist_shmem_meshes_t *m);

#ifdef __cplusplus
}
#endif
#endif
