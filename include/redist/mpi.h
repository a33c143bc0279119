/*
 * redist/mpi.h - the MPI backend: execute plans across the ranks of an MPI
 * communicator.
 *
 * This is the only redist header that includes <mpi.h>; redist.h never
 * does, and libredist never links MPI.  Programs that use it link
 * libredist_mpi (pkg-config redist-mpi), which links libredist and MPI.
 *
 * MODEL.  One MPI rank is one device of the mesh: rank r of the communicator
 * is mesh device r, whose coordinates are row-major over the mesh axes, the
 * first axis varying slowest (doc/spec-format.md section 1).  If your devices
 * are numbered differently, reorder the communicator first (MPI_Comm_split
 * with the mesh rank as the key).  Each rank holds its own source block and
 * receives its own destination block, row-major local arrays of the spec's
 * dtype, exactly as with the sim backend (redist/exec.h).
 *
 *   redist_mpi_t *mx;
 *   redist_mpi_create(comm, mesh, NULL, &mx, &err);      collective on comm
 *   redist_plan_create(spec, NULL, &plan, &err);          same plan everywhere
 *   for (...)
 *       redist_mpi_execute(mx, plan, src, dst, NULL, &rep, &err);  collective
 *   redist_mpi_free(mx);                                  collective
 *
 * PLAN ONCE, RUN MANY.  A prepared object does the set-up of an execution
 * once, on buffers bound to it (like a persistent request), and then
 * runs it as often as wanted, blocking or not:
 *
 *   redist_mpi_prepared_t *pr;
 *   redist_mpi_prepare(mx, plan, src, dst, NULL, &pr, &err);  collective
 *   for (...) {
 *       (fill src)
 *       redist_mpi_run(pr, &rep, &err);                       collective
 *   }
 *   redist_mpi_start(pr, &err);      collective, returns at once
 *   (compute; redist_mpi_test(pr, &done, &err) polls)
 *   redist_mpi_wait(pr, &rep, &err);                          the result
 *   redist_mpi_prepared_free(pr);                             collective
 *
 * See PREPARED OBJECTS below the functions of the one-shot call.
 *
 * WHAT IT CREATES.  redist_mpi_create duplicates `comm` (redist's traffic
 * never mixes with yours, and you may free `comm` afterwards) and splits
 * the duplicate once per mesh axis into the groups of devices that differ
 * only in their coordinate on that axis; the collectives of a step run on
 * those sub-communicators.  All of them are created once, kept in the
 * context and freed by redist_mpi_free.  The context copies what it needs
 * of the mesh; the caller keeps and frees its own mesh.  A context serves
 * any plan on a mesh with the same axis sizes.
 *
 * COLLECTIVES.  all_gather -> MPI_Allgather, all_to_all -> MPI_Alltoall,
 * permute -> MPI_Sendrecv; a prepared object (redist_mpi_prepare) runs an
 * even all_gather or all_to_all as a point-to-point exchange instead (one
 * message per peer, straight into the final places: no scratch), unless every
 * rank's src lies in a shared window (the direct path then reads the
 * peers' blocks).  By default a step is one call with MPI derived
 * datatypes that read the blocks from where they lie in the input and
 * write them straight to their final places (no pack, no unpack, no
 * scratch); REDIST_MPI_PACKED uses the executor's pack/unpack kernels and
 * contiguous exchanges instead.  Counts beyond INT_MAX elements are
 * expressed as nested derived datatypes (one MPI call; no chunking is
 * visible to the caller).
 *
 * REDUCTIONS (reduce_scatter, all_reduce).  By default they combine the
 * members' values in member order (coordinate 0 first) with the executor's
 * own reduction kernels, so every dtype and op gives the sim backend's result
 * bit for bit (f16 / bf16 accumulate in f32 and round once; NaN-propagating
 * max / min; lexicographic complex max / min): the contributions are
 * exchanged with MPI_Alltoall and reduced locally (reduce_scatter), followed
 * by an in-place MPI_Allgather (all_reduce); the traffic is that of
 * doc/spec-format.md section 2.  This runs in rounds through a bounded work
 * buffer (see MEMORY).  Where it fits, a reduce_scatter runs instead as
 * one point-to-point exchange of the contributions into slabs (the block
 * before the step, in scratch) and one ordered sum, and consecutive
 * reduce_scatter steps along one dim (a sum pending over two axes
 * scattered over both) as one exchange and one sum that adds in the
 * steps' order, so the bits are the same: it is chosen when the whole
 * scratch stays within the bound and within the larger of what the
 * rounds take and REDIST_MPI_ROUND_BYTES (redist_mpi_info_t.exchanges
 * counts its one exchange), and not for a prepared object whose every
 * rank's src lies in a shared window (the direct path reduces from the
 * members' inputs).  REDIST_MPI_NATIVE_REDUCE calls
 * MPI_Reduce_scatter_block and MPI_Allreduce instead, with the predefined MPI
 * ops where they compute the same function and user-defined MPI_Ops built on
 * the same kernels otherwise (f16, bf16, complex prod / max / min, floating
 * max / min).  MPI then chooses the order of the combination: integer results
 * and max / min are still identical to the sim's; floating sums and products
 * may differ in the last bits, and f16 / bf16 are rounded after every
 * pairwise step.  MPI's own temporary buffers are then outside redist's
 * accounting.
 *
 * MEMORY.  Beyond the caller's src and dst, a rank uses the executor's
 * scratch buffers (redist/exec.h; usually none here, since whole steps
 * write straight into their final places) plus, for reductions only, a
 * work buffer.  redist_mpi_exec_info gives the exact total before running
 * and redist_mpi_execute reports the measured high-water mark of both
 * together.  Reductions first use the free part of the executor's
 * buffers during their step (a buffer the step does not touch, such as the
 * consumed source, or an unused tail) and allocate only what that lacks.
 * The default bound is max(src bytes, dst bytes), the executor's promise
 * for a memory-efficient plan, and it always holds: the work buffer takes
 * what the executor's buffers leave, in rounds of at most
 * REDIST_MPI_ROUND_BYTES.  With less than s elements of work space (s the
 * group size) a reduction streams: each member in turn scatters (or
 * broadcasts) its pieces and the receivers fold them in member order, one
 * element of work space at the least, same results.  `max_scratch`
 * bounds the total lower: reductions run in more rounds and, when the
 * executor's buffers alone exceed the bound, exchanges run in place (send
 * buffer = receive buffer; redist_exec_info_t.inplace_passes counts them):
 * reductions over input already sent, all_gather with MPI_IN_PLACE,
 * all_to_all and permute by pairwise swaps in rounds through work space.
 * The least possible bound is redist_mpi_info_t.min_scratch_bytes (often
 * 0); a smaller one fails with REDIST_ERR_LIMIT on every rank.
 *
 * FAILURE.  Every call here is collective over the context's ranks and
 * fails together: every check a rank can fail on its own is folded into
 * one agreement over the communicator before any data moves, so a bad
 * argument on one rank (a NULL buffer, src == dst, unknown flags, a plan
 * on another mesh, a max_scratch below the plan's least), an allocation
 * failure on one rank (the context, the executor's scratch, the reduction
 * work space), a communicator whose size is not the mesh's device count,
 * ranks given different meshes, plans, execution flags or options
 * (REDIST_ERR_MISMATCH) make every rank return an error, never hang.
 * `err` on the rank that failed first says why; the other ranks' messages
 * name that rank ("device 1 failed: ...", "device 1 differs from device
 * 0").  What no agreement can cover: a rank that does not make the call
 * at all, a NULL context, or MPI_COMM_NULL (there is nothing to agree
 * over) — those fail on that rank only.  MPI errors are
 * returned (the context's communicators use MPI_ERRORS_RETURN) as
 * REDIST_ERR_BACKEND with MPI's message; MPI itself cannot make an error
 * of one rank in the middle of a collective visible to the others, so
 * after a REDIST_ERR_BACKEND the state of the communicators is MPI's to
 * define.  After a failure dst is unspecified, and so is src unless
 * REDIST_EXEC_PRESERVE_SRC was given.  NULL `err` is allowed everywhere.
 * The rule for what no agreement can reach: a rank whose op fails alone
 * in the middle of a plan (after the agreements, data already moving: an
 * MPI call failing, REDIST_ERR_BACKEND, or a datatype it cannot
 * allocate, REDIST_ERR_NOMEM), of a prepared run, a two-mesh phase or
 * transfer, or a set run, cannot tell the others, which wait in a
 * collective MPI cannot interrupt.  (Failures that follow from the agreed
 * plan and options, such as a work-space bound, happen at the same op on
 * every rank and are returned on every rank.)  Rather than let them hang, that rank
 * prints one line on stderr ("redist: device R failed in the middle of a
 * plan ...: <error>") and calls MPI_Abort on the context's communicator:
 * the job ends, never silently.  With REDIST_MPI_NO_ABORT it returns the
 * error on that rank only and the others' fate is the caller's.  Apart
 * from that line before MPI_Abort the library never prints and never
 * aborts: every other failure is returned on every rank.
 *
 * THREADS.  A context is used by one thread at a time.  Distinct contexts
 * may be used by concurrent threads when MPI provides
 * MPI_THREAD_MULTIPLE.  Every call must come between MPI_Init and
 * MPI_Finalize.
 */
#ifndef REDIST_MPI_H
#define REDIST_MPI_H

#include <mpi.h>

#include "redist/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest work buffer of one reduction round with the default bound. */
#define REDIST_MPI_ROUND_BYTES (16ULL << 20)

/** Flags of redist_mpi_options_t. */
enum {
    /** Pack / unpack with the executor's kernels and exchange contiguous
     *  chunks, instead of whole steps with derived datatypes. */
    REDIST_MPI_PACKED = 1u << 0,
    /** MPI_Reduce_scatter_block / MPI_Allreduce (see REDUCTIONS). */
    REDIST_MPI_NATIVE_REDUCE = 1u << 1,
    /** A failure in the middle of a plan returns the error on the rank
     *  that failed instead of ending the job (see FAILURE): the other
     *  ranks may then wait for it forever. */
    REDIST_MPI_NO_ABORT = 1u << 2
};

typedef struct redist_mpi_options {
    unsigned flags;       /**< REDIST_MPI_* */
    /** Bound, in bytes per rank, on the executor's scratch plus the
     *  backend's work buffer; 0: the default (see MEMORY). */
    uint64_t max_scratch;
} redist_mpi_options_t;

/** A (communicator, mesh) context: the MPI backend of one rank. */
typedef struct redist_mpi redist_mpi_t;

/**
 * Create the context of this rank.  Collective over `comm`: every rank
 * must call it with the same mesh (axis sizes) and options.  `comm`'s
 * size must be the mesh's device count (else REDIST_ERR_INVALID on every
 * rank); `opts` may be NULL (defaults).  *out is written only on success
 * and belongs to the caller (redist_mpi_free).  Errors: REDIST_ERR_INVALID
 * (NULL or bad arguments, size mismatch, unknown flags), REDIST_ERR_MISMATCH
 * (ranks passed different meshes or options), REDIST_ERR_NOMEM,
 * REDIST_ERR_BACKEND (an MPI call failed).  A NULL `out` or MPI_COMM_NULL
 * fails at once on that rank only (nothing to agree over).
 */
REDIST_API redist_status_t redist_mpi_create(MPI_Comm comm, const redist_mesh_t *mesh,
                                  const redist_mpi_options_t *opts,
                                  redist_mpi_t **out, redist_error_t *err);

/** Free the context and its communicators and MPI ops.  Collective over
 *  the context's ranks (MPI_Comm_free); NULL is accepted.  After
 *  MPI_Finalize only the memory is released. */
REDIST_API void redist_mpi_free(redist_mpi_t *ctx);

/** Change the options for later executions (local: every rank must make
 *  the same change before its next redist_mpi_execute, which otherwise
 *  fails with REDIST_ERR_MISMATCH everywhere). */
REDIST_API redist_status_t redist_mpi_set_options(redist_mpi_t *ctx,
                                       const redist_mpi_options_t *opts,
                                       redist_error_t *err);
/** The options in force.  NULL: zeros. */
REDIST_API redist_mpi_options_t redist_mpi_get_options(const redist_mpi_t *ctx);

/** What the last redist_mpi_execute on this rank did (this rank's
 *  counts; doc/mpi.md describes each algorithm). */
typedef struct redist_mpi_stats_t {
    int64_t exchanges; /**< MPI exchange calls made */
    int64_t streamed;  /**< reductions that streamed (work space below s
                            elements) */
    int64_t swaps;     /**< in-place swaps (permute, all_to_all) */
    int64_t rings;     /**< all-gathers that ran as a ring */
    int64_t direct;    /**< passes of a prepared run that read their peers'
                            input through shared windows (SHARED WINDOWS;
                            also counted in `exchanges`) */
} redist_mpi_stats_t;

/** The counts of the last redist_mpi_execute on this rank.  NULL:
 *  zeros. */
REDIST_API redist_mpi_stats_t redist_mpi_last_stats(const redist_mpi_t *ctx);

/**
 * This rank's endpoint, owned by the context (valid until
 * redist_mpi_free), for redist_plan_execute and redist_plan_exec_info.
 * redist_plan_execute on it works, but sizes the reduction work buffer
 * per step (at most REDIST_MPI_ROUND_BYTES, or what `max_scratch` leaves)
 * and its report counts only the executor's scratch: prefer
 * redist_mpi_execute, which reports both.  NULL: NULL.
 */
REDIST_API redist_backend_t *redist_mpi_backend(redist_mpi_t *ctx);

/** The context's duplicate of the caller's communicator, and the
 *  communicator of mesh axis `axis` (member k has coordinate k on it);
 *  owned by the context.  NULL or out of range: MPI_COMM_NULL. */
REDIST_API MPI_Comm redist_mpi_comm(const redist_mpi_t *ctx);
REDIST_API MPI_Comm redist_mpi_axis_comm(const redist_mpi_t *ctx, int axis);
/** This rank (= mesh device).  NULL: -1. */
REDIST_API int redist_mpi_rank(const redist_mpi_t *ctx);
/** The number of ranks.  NULL: 0. */
REDIST_API int redist_mpi_size(const redist_mpi_t *ctx);

/** What executing a plan through a context takes, known before running
 *  (the same on every rank, except `exchanges`: this rank's MPI calls). */
typedef struct redist_mpi_info {
    redist_exec_info_t exec;    /**< the executor's figures on this backend */
    uint64_t work_bytes;        /**< backend work buffer (reductions) */
    uint64_t scratch_bytes;     /**< exec.scratch_bytes + work_bytes */
    uint64_t bound_bytes;       /**< the bound in force (max_scratch or the
                                     default) */
    uint64_t min_scratch_bytes; /**< the least max_scratch that runs it */
    int64_t exchanges;          /**< MPI exchange calls (rounds included;
                                     uneven dims: at most, rounds being
                                     counted for the largest device) */
} redist_mpi_info_t;

/**
 * The memory and exchanges of executing `plan` with `opts` (NULL:
 * defaults) through `ctx`.  Local (no communication).  REDIST_ERR_INVALID
 * for NULL arguments or a plan on another mesh, REDIST_ERR_LIMIT when
 * max_scratch is below min_scratch_bytes (*out is filled all the same).
 */
REDIST_API redist_status_t redist_mpi_exec_info(const redist_mpi_t *ctx,
                                     const redist_plan_t *plan,
                                     const redist_exec_options_t *opts,
                                     redist_mpi_info_t *out,
                                     redist_error_t *err);

/**
 * Execute `plan` on this rank: `src` is its source block
 * (redist_spec_src_bytes bytes), `dst` its destination block
 * (redist_spec_dst_bytes bytes); they must not overlap and are used only
 * during the call.  Collective over the context: every rank calls it with
 * an identical plan (the plan's mesh must have the context's axis sizes)
 * and the same `opts`.  Failure is collective, as described above.
 * `report` (may be NULL) is filled in both cases: scratch_bytes is the
 * promise (redist_mpi_info_t.scratch_bytes), scratch_high_water the
 * measured high-water mark of the executor's scratch and the work buffer
 * together, on this rank.
 */
REDIST_API redist_status_t redist_mpi_execute(redist_mpi_t *ctx,
                                   const redist_plan_t *plan, void *src,
                                   void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_exec_report_t *report,
                                   redist_error_t *err);

/* ------------------------------------------------ two meshes */

/**
 * Execute a plan of a two-mesh spec (doc/meshes.md) on `comm`, a
 * communicator over the union of its meshes: rank d is global device d,
 * and comm has at least redist_spec_num_devices ranks.  Every rank of comm
 * calls it; a rank passes its source block (redist_spec_device_bytes(spec,
 * REDIST_SIDE_FROM, rank) bytes) and its target block (the same with
 * REDIST_SIDE_TO); either may be NULL when that block is empty (a rank
 * outside a mesh holds nothing of it; a rank in neither only takes part
 * in the agreements).  The call runs the source mesh's phase on its
 * ranks, the transfer between the meshes point to point, and the target
 * mesh's phase.  Collective, failing together on every rank of comm as
 * redist_mpi_execute does.  opts: REDIST_EXEC_PRESERVE_SRC only (or
 * NULL).  `report` (may be NULL): this rank's figures; scratch_bytes is
 * the promise, scratch_high_water the measure (one region per rank laid
 * out by lifetime: the S and R blocks, the phases' scratch and a summing
 * transfer's work area, src/backend/mpi/meshes.c).  It is prepare, one
 * run and free of the prepared form below.  (redist_mpi_exec_info
 * refuses a two-mesh plan: the promise is the report's.)
 *
 * MEMORY.  The contract bounds rank d by max(src_d, dst_d) (0 on a mesh
 * it is not in).  A rank holds at most max(phase A's scratch + S, S + R +
 * work area, R + phase B's scratch): the parts whose lifetimes do not
 * overlap share memory.  A rank on both meshes, both phases non-empty,
 * keeps its S block in dst and its R block in src where they fit (R only
 * without REDIST_EXEC_PRESERVE_SRC; the report then says writes_src), and
 * one whose target phase is empty and whose R block is its own S block
 * keeps S in dst.  A source phase of even all-reduces, or of one uneven
 * reduce-scatter whose every box after it is empty or the first elements
 * of its rank's block, followed by no target phase, runs in place in
 * src, which then holds S (without REDIST_EXEC_PRESERVE_SRC; the report
 * says writes_src).  An uneven reduce-scatter runs whole, with no buffer
 * sized by the largest device.  A phase whose
 * scratch would exceed the room the bound leaves beside the block held
 * with it runs under max_scratch = that room (the least over its mesh),
 * when every rank of the mesh can.  The bound may still be exceeded, and
 * the promise says by how much: by a phase whose own program needs more
 * than the room beside its S or R block (rare: small uneven blocks), and
 * under REDIST_EXEC_PRESERVE_SRC (an all-reduce whose output is as large
 * as the source, beside its work space); doc/meshes.md, "Not yet".
 */
REDIST_API redist_status_t redist_mpi_execute_meshes(
    MPI_Comm comm, const redist_plan_t *plan, void *src, void *dst,
    const redist_exec_options_t *opts, redist_exec_report_t *report,
    redist_error_t *err);

/** A prepared two-mesh execution (one rank's part). */
typedef struct redist_mpi_meshes redist_mpi_meshes_t;

/**
 * Prepare a two-mesh plan once on bound buffers, as redist_mpi_execute_meshes
 * takes them (they stay bound until the object is freed): the
 * communicators of each mesh, each phase's context and prepared object
 * (PREPARED OBJECTS below), the S and R blocks, and the transfer's
 * persistent requests.  Collective over comm, failing together (a NULL
 * buffer for a non-empty block, a NULL plan or output, a plan of one
 * mesh, different plans, an allocation; its first call is the agreement
 * redist_mpi_create begins with, so a rank making a context meanwhile
 * fails every rank too).  The
 * plan may be freed afterwards.  *out belongs to the caller.
 */
REDIST_API redist_status_t redist_mpi_prepare_meshes(
    MPI_Comm comm, const redist_plan_t *plan, void *src, void *dst,
    const redist_exec_options_t *opts, redist_mpi_meshes_t **out,
    redist_error_t *err);

/**
 * Run it once (blocking; collective over the object's communicator).
 * Only data moves, and one allreduce of an int after the source phase:
 * a failure there fails the run on every rank (the target mesh's ranks
 * would otherwise wait for it).  MPI's errors: REDIST_ERR_BACKEND.
 * `report` (may be NULL) as for redist_mpi_execute_meshes.
 */
REDIST_API redist_status_t redist_mpi_run_meshes(redist_mpi_meshes_t *prep,
                                                 redist_exec_report_t *report,
                                                 redist_error_t *err);

/**
 * Non-blocking runs of a prepared two-mesh object, as redist_mpi_start
 * .. redist_mpi_wait for one mesh (NON-BLOCKING below): start hands the
 * run (the same as redist_mpi_run_meshes) to the object's progress
 * thread, test sets *done, wait returns the run's status and report.
 * Collective over the object's communicator.  start needs
 * MPI_THREAD_MULTIPLE on every rank (agreed at prepare;
 * redist_mpi_meshes_async says whether start is available, else it
 * fails on every rank).  REDIST_ERR_INVALID, alike on every rank: a
 * start or run while a run is in flight, a test or wait with none
 * started, a NULL object.  A failure of the run is returned by wait.
 * redist_mpi_meshes_free waits for a run in flight first.
 */
REDIST_API redist_status_t redist_mpi_start_meshes(redist_mpi_meshes_t *prep,
                                                   redist_error_t *err);
REDIST_API redist_status_t redist_mpi_test_meshes(redist_mpi_meshes_t *prep,
                                                  int *done,
                                                  redist_error_t *err);
REDIST_API redist_status_t redist_mpi_wait_meshes(redist_mpi_meshes_t *prep,
                                                  redist_exec_report_t *report,
                                                  redist_error_t *err);
/** 1 when redist_mpi_start_meshes is available.  NULL: 0. */
REDIST_API int redist_mpi_meshes_async(const redist_mpi_meshes_t *prep);

/** Free it (collective over its communicator; a non-blocking run in
 *  flight is waited for first).  NULL is accepted. */
REDIST_API void redist_mpi_meshes_free(redist_mpi_meshes_t *prep);

/* ------------------------------------------------ prepared objects */

/*
 * PREPARED OBJECTS.  redist_mpi_prepare does, once and collectively,
 * everything redist_mpi_execute does before data moves: the checks and
 * the agreement of every rank on them (the plan hash, the options, the
 * buffers), the executor's program bound to this rank, the scratch and
 * reduction work space (allocated and touched once), the MPI datatypes
 * of every step and persistent requests (MPI_Send_init / MPI_Recv_init)
 * where a step is point to point.  redist_mpi_run then only moves data:
 * no agreement, no allocation, no datatype built.
 *
 * BUFFERS are bound at prepare: `src` and `dst` (sizes from the plan, as
 * for redist_mpi_execute) are the buffers of every run, and must stay
 * valid until redist_mpi_prepared_free.  The caller changes their
 * contents between runs (src is work space as for redist_mpi_execute
 * unless REDIST_EXEC_PRESERVE_SRC was given).  Binding them is what makes
 * every run safe without a collective check: whatever could differ
 * between ranks (a NULL or shared buffer, another plan, options, a
 * failed allocation) is caught at prepare, on every rank together, as
 * for redist_mpi_execute.  Another pair of buffers takes another
 * prepared object.
 *
 * RULES OF USE.  The plan and the context may be freed after prepare
 * only in this order: the plan any time (the object keeps what it
 * needs), the context after its objects.  run, start and wait are
 * collective: every rank makes the same calls on its object in the same
 * order; they check nothing collectively (that would cost the agreement
 * they avoid), but their local checks (a run or start while a
 * non-blocking run is in flight, a wait or test with none started, start
 * without MPI_THREAD_MULTIPLE) fail alike on every rank of an SPMD
 * program, with REDIST_ERR_INVALID and nothing moved.  An object has its
 * own duplicates of the context's communicators: several objects (and
 * the context's own calls) may be in flight at once, in any order that
 * is the same on every rank, and the caller's own MPI traffic never
 * mixes with theirs.  Buffers of a run in flight belong to it until its
 * wait returns.
 *
 * NON-BLOCKING.  redist_mpi_start hands the run to the object's progress
 * thread and returns; the steps of the plan follow one another on that
 * thread with no further call (real progress while the caller
 * computes); redist_mpi_test says whether it is over, redist_mpi_wait
 * waits for it and returns its status and report.  The thread calls MPI
 * while the caller may, so start needs MPI_THREAD_MULTIPLE
 * (MPI_Init_thread), checked at prepare on every rank:
 * redist_mpi_prepared_async says whether start is available.  The
 * thread polls MPI while a step waits for its peers: a computation on
 * the same core shares it (doc/mpi.md gives the overlap measured).
 * FAILURE of a run is the blocking call's: MPI's errors, returned by
 * run or by wait (REDIST_ERR_BACKEND).
 */

/** A prepared execution of one plan on bound buffers (one rank's part). */
typedef struct redist_mpi_prepared redist_mpi_prepared_t;

/**
 * Prepare `plan` on `src` and `dst` (bound until the object is freed;
 * see PREPARED OBJECTS).  Collective over the context's ranks, failing
 * together as redist_mpi_execute does (a NULL or shared buffer, a plan
 * on another mesh, different plans or options, max_scratch too small,
 * an allocation on one rank).  `opts` may be NULL.  *out is written only
 * on success and belongs to the caller (redist_mpi_prepared_free).  A
 * NULL context or `out` fails at once on that rank only.
 */
REDIST_API redist_status_t redist_mpi_prepare(redist_mpi_t *ctx,
                                   const redist_plan_t *plan, void *src,
                                   void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_mpi_prepared_t **out,
                                   redist_error_t *err);

/**
 * Run the prepared plan once (blocking; collective).  `report` (may be
 * NULL) as for redist_mpi_execute; scratch_high_water is what the object
 * holds (the same every run).  REDIST_ERR_INVALID for a NULL object or a
 * non-blocking run in flight; REDIST_ERR_BACKEND for MPI's errors.
 */
REDIST_API redist_status_t redist_mpi_run(redist_mpi_prepared_t *prep,
                               redist_exec_report_t *report,
                               redist_error_t *err);

/**
 * Start a run on the object's progress thread and return at once
 * (collective).  REDIST_ERR_INVALID for a NULL object, a run already in
 * flight (or finished but not waited for), or an MPI without
 * MPI_THREAD_MULTIPLE on some rank (redist_mpi_prepared_async is 0).
 */
REDIST_API redist_status_t redist_mpi_start(redist_mpi_prepared_t *prep,
                                 redist_error_t *err);

/**
 * *done = 1 if the started run is over (redist_mpi_wait then returns at
 * once), else 0.  Local, never blocks.  REDIST_ERR_INVALID for NULL
 * arguments or no run started.
 */
REDIST_API redist_status_t redist_mpi_test(redist_mpi_prepared_t *prep,
                                int *done, redist_error_t *err);

/**
 * Wait for the started run; its status (the run's error, if it failed,
 * in `err`) and `report` (may be NULL; seconds: the run's own time on
 * the progress thread).  REDIST_ERR_INVALID for a NULL object or no run
 * started.
 */
REDIST_API redist_status_t redist_mpi_wait(redist_mpi_prepared_t *prep,
                                redist_exec_report_t *report,
                                redist_error_t *err);

/** 1 if redist_mpi_start is available (MPI_THREAD_MULTIPLE on every
 *  rank, agreed at prepare).  NULL: 0. */
REDIST_API int redist_mpi_prepared_async(const redist_mpi_prepared_t *prep);

/** The counts of the object's last run on this rank.  NULL: zeros. */
REDIST_API redist_mpi_stats_t redist_mpi_prepared_stats(
    const redist_mpi_prepared_t *prep);

/** Free the object (collective: its communicators; a run in flight is
 *  waited for first).  NULL is accepted.  Before the context's
 *  redist_mpi_free. */
REDIST_API void redist_mpi_prepared_free(redist_mpi_prepared_t *prep);

/** The passes of each run of the object that take the direct path
 *  (SHARED WINDOWS below; the same on every rank, decided at prepare),
 *  0 when every pass is two-sided.  NULL: 0. */
REDIST_API int redist_mpi_prepared_direct(const redist_mpi_prepared_t *prep);

/* ------------------------------------------------ shared windows */

/*
 * SHARED WINDOWS.  On one node, MPI ranks can read each other's memory
 * when it comes from a shared window (MPI_Win_allocate_shared).
 * redist_mpi_alloc gives such memory: one window per call over the ranks
 * of the context that share a node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED), this rank's segment of it, NUMA-local where MPI
 * places it so.
 *
 * THE DIRECT PATH.  redist_mpi_prepare looks, once, at where each pass of
 * the plan reads its input: when every rank's input buffer of a pass lies
 * in memory from redist_mpi_alloc and all the context's ranks share one
 * node, that pass runs without MPI messages: each rank copies the pieces
 * it receives straight from its peers' input into its own output (its
 * final place).  Exchange and permute steps do, and so do all_gather,
 * all_to_all and reduce_scatter steps of even plans in their whole-step
 * form (not with REDIST_MPI_PACKED; reduce_scatter not with
 * REDIST_MPI_NATIVE_REDUCE; it reduces in member order, the same bits as
 * the two-sided path); all_reduce and in-place passes stay two-sided.
 * The first pass reads src; when every rank's src is in a window, prepare
 * also puts the executor's scratch (what the passes in between read) in
 * windows of the object, the same bytes as before, freed with it.  Every
 * other case (a rank whose src is not from the allocator, ranks on
 * several nodes) runs the two-sided path on every rank: the choice is
 * made from what every rank reports (one MPI_Allgather at prepare), so
 * the ranks always agree.  redist_mpi_prepared_direct says how many
 * passes took it.  The one-shot redist_mpi_execute is always two-sided.
 *
 * SYNCHRONISATION.  A direct pass is framed by fences (MPI_Win_sync on the
 * windows read, MPI_Barrier on the object's communicator, MPI_Win_sync;
 * the MPI-3 unified memory model): before it, every rank's input is
 * written and visible (the caller's stores into src included); after it,
 * no rank reads a peer's input any more, so the caller may refill src
 * as soon as the run returns.  Consecutive direct passes share one fence.
 * start / test / wait work as for two-sided runs (the fences run on the
 * progress thread).
 *
 * The windows stay locked (MPI_Win_lock_all, MPI_MODE_NOCHECK) from
 * allocation to redist_mpi_free_mem: the caller reads and writes the
 * memory with plain loads and stores, and must not start RMA epochs of
 * its own on it.
 */

/**
 * Allocate `bytes` bytes (each rank its own count; 0 is allowed) of shared
 * memory for this rank: *out is aligned to REDIST_MPI_ALIGN bytes, never
 * NULL on success, and valid until redist_mpi_free_mem or redist_mpi_free.
 * Collective over the context's ranks, failing together (a NULL `out`,
 * a size MPI cannot express, MPI's failure to allocate, out of memory):
 * *out is written only on success.  Off-node (ranks on several nodes)
 * the memory is still good memory, shared with the node's ranks only;
 * prepared objects then run two-sided.  Errors: REDIST_ERR_INVALID,
 * REDIST_ERR_NOMEM, REDIST_ERR_BACKEND.  A NULL context fails at once on
 * that rank only.
 */
REDIST_API redist_status_t redist_mpi_alloc(redist_mpi_t *ctx, uint64_t bytes,
                                            void **out, redist_error_t *err);

/** Alignment of the memory of redist_mpi_alloc, in bytes. */
#define REDIST_MPI_ALIGN 64

/**
 * Free memory of redist_mpi_alloc: every rank passes its pointer of the
 * same allocation (collective; MPI_Win_free).  Free prepared objects
 * bound to the memory first.  The ranks agree before anything is freed:
 * a pointer not from this context's allocator fails on every rank with
 * REDIST_ERR_INVALID, ranks naming different allocations with
 * REDIST_ERR_MISMATCH, and nothing is freed.  NULL `ptr` on every rank: nothing to do (REDIST_OK).  A NULL
 * context fails at once on that rank only.  What is still allocated when
 * the context is freed, redist_mpi_free frees (in allocation order).
 */
REDIST_API redist_status_t redist_mpi_free_mem(redist_mpi_t *ctx, void *ptr,
                                               redist_error_t *err);

/* ------------------------------------------------------------- hosts */

/**
 * Which host each rank of `comm` runs on, discovered at run time.
 * Collective over `comm`.  A host is a set of ranks that share memory
 * (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED); hosts are numbered 0,
 * 1, ... in the order of their lowest ranks, so hosts[0] is 0 and the
 * number of hosts is the largest entry plus one.  The processor names
 * (MPI_Get_processor_name) must tell the same story: ranks that share
 * memory but report different names, or two hosts with one name, are
 * REDIST_ERR_MISMATCH on every rank.  Every rank gets the same map (it
 * is agreed like a plan).  `nranks` must be comm's size and `hosts` hold
 * that many entries, written only on success.  Use the map for
 * redist_placement_create (redist/topo.h, with each rank's PU) or to put
 * the mesh axes that span hosts on REDIST_LINK_NETWORK; doc/multihost.md.
 * Errors: REDIST_ERR_INVALID (MPI_COMM_NULL, MPI not running: on this
 * rank only; a NULL array or a wrong nranks: on every rank),
 * REDIST_ERR_NOMEM, REDIST_ERR_MISMATCH, REDIST_ERR_BACKEND (an MPI call
 * failed).  O(size) memory and traffic per rank.
 */
REDIST_API redist_status_t redist_mpi_discover_hosts(MPI_Comm comm, int64_t nranks,
                                          int64_t hosts[],
                                          redist_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
