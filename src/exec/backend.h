/*
 * The backend ops table (internal).  A backend moves contiguous bytes
 * among the devices of one mesh-axis group; the executor (program.c,
 * assign.c, bind.c, runtime.c) does everything else with the shared
 * kernels (kernels.h).
 *
 * This interface is not exported from libredist.so (hidden visibility):
 * a backend library links the executor's objects it needs statically
 * (src/meson.build, redist_internal), so a backend is built inside this
 * tree, against the same sources.
 *
 * One endpoint (struct redist_backend) is one rank.  Every op is
 * collective over the devices it names and is called by all of them in
 * the same order (the executor is SPMD); within one call every device of
 * the mesh runs the same op on its own group, so a backend may also
 * synchronise the whole mesh at each op (the sim backend does).
 *
 * Adding a backend (src/backend/mpi/, src/backend/shmem/):
 *  - fill an rd_backend_ops and give users a constructor returning a
 *    redist_backend_t whose ops, ctx, rank and size are set;
 *  - `agree` must combine the ranks' local statuses and plan hashes so
 *    that every rank learns the outcome (MPI: an allreduce);
 *  - send and receive buffers of one op never overlap, and never change
 *    until the op returns on this rank;
 *  - `alloc`/`free` (optional) provide the executor's scratch, e.g. from
 *    a symmetric heap: every rank calls them with the same sizes in the
 *    same order, `alloc` before `agree` (so that a failed allocation is
 *    reported by `agree` on every rank), `free` after the last op;
 *  - RD_CAP_RECV_IN_SCRATCH: exchanges may only write into scratch the
 *    backend allocated (e.g. symmetric memory for one-sided puts); the
 *    executor then never passes the caller's buffers as receive buffers;
 *  - `exchange` (optional): the point-to-point exchange step; without it
 *    the executor refuses plans with exchange steps (REDIST_ERR_INVALID,
 *    on every rank, before any data moves);
 *  - `step` with `fused_ops` (optional): run a whole step (pack, exchange,
 *    unpack) from the device's block before the step to its block after
 *    it, writing straight into the final places (SHMEM puts to final
 *    offsets, MPI derived datatypes).  rd_xstep gives the layout.
 */
#ifndef REDIST_EXEC_BACKEND_H
#define REDIST_EXEC_BACKEND_H

#include "redist/exec.h"

/* The devices that differ from this one only in their coordinate on
 * `axis`: member k has rank base + k * stride; this device is `index`. */
typedef struct rd_group {
    int axis;
    int64_t size;
    int64_t index;
    int64_t base;
    int64_t stride;
} rd_group;

static inline int64_t rd_group_rank(const rd_group *g, int64_t k)
{
    return g->base + k * g->stride;
}

/* A whole step as the executor sees it on this device (for `step`). */
typedef struct rd_xstep {
    redist_op_t op;
    int index;                 /* step index in the plan */
    int dim, from_dim, to_dim; /* as in redist_step_view_t */
    rd_group group;            /* not for permute */
    int ndims;
    int64_t in_shape[REDIST_MAX_DIMS];  /* local shape before the step */
    int64_t out_shape[REDIST_MAX_DIMS]; /* local shape after it */
    size_t elem;
    redist_dtype_t dtype;
    redist_reduce_t reduce;
    int64_t send_to, recv_from; /* permute peers (may be this rank) */
    /* an uneven reduce_scatter run whole (uneven_rs): in_shape and
     * out_shape are this device's boxes before and after the step, and
     * the box after sits at box_off in the box before, the same box in
     * every member's block (the members differ only on the reduced axis,
     * which shards nothing before the step) */
    int boxed;
    /* ... and every device's box after it is empty or the first elements
     * of its box before (rd_boxed_prefix): it may write its output over
     * its own input */
    int boxed_inplace;
    int64_t box_off[REDIST_MAX_DIMS];
    /* ... and every member's box after the step, in member order: offset
     * in the box before, then shape (ndims each; bind.c) */
    const int64_t *mbox;
    const struct rd_xchg *xchg; /* exchange: geometry and this device's
                                   transfers (exchange.c) */
} rd_xstep;

enum {
    /* exchanges may only receive into backend-allocated scratch */
    RD_CAP_RECV_IN_SCRATCH = 1u << 0
};

/* One transfer of an exchange: `bytes` bytes at byte offset `off` of the
 * send (or receive) buffer go to (come from) rank `peer`. */
typedef struct rd_xfer {
    int64_t peer;
    uint64_t off;
    uint64_t bytes;
} rd_xfer;

/*
 * An exchange step (REDIST_OP_EXCHANGE, doc/spec-format.md extension) from type
 * `a` (local shape la) to type `b` (local shape lb), same partial set.
 * Device d needs its `b` block T(d); each piece of it comes from the
 * device e that holds it in `a` and agrees with d on every mesh axis `a`
 * does not shard (src/plan/exchange_need.c, rd_exchange_need): e sends
 * B(e) & T(d), a box.  Built by exchange.c: the geometry once per
 * program, the transfers per device (rd_program_bind).
 */
struct rd_layout;
typedef struct rd_xchg {
    int ndims, naxes;
    int64_t size[REDIST_MAX_AXES], stride[REDIST_MAX_AXES];
    /* this device's block shapes in `a` and `b` (even blocks: every
     * device's; uneven: set by rd_xchg_bind) */
    int64_t la[REDIST_MAX_DIMS], lb[REDIST_MAX_DIMS];
    redist_type_t a, b;
    /* uneven dims (doc/spec-format.md section 7): the layouts of `a` and `b`
     * (boundaries per dim, src/core/layout.h); NULL: even blocks of
     * shape ua / ub */
    const struct rd_layout *al, *bl;
    int64_t ua[REDIST_MAX_DIMS], ub[REDIST_MAX_DIMS];
    size_t elem;
    /* 1: the send pieces are packed into a buffer first (else each is a
     * contiguous range of the source block); 1: the received pieces are
     * unpacked from a buffer (else each lands contiguous in place) */
    int pack, unpack;
    /* this device (rd_xchg_bind): sends, sorted by peer (several peers
     * may share one range: data replicated on an axis `b` does not
     * shard); receives, sorted by peer (they tile the `b` block); the
     * distinct send pieces to pack (peer: one receiver of the piece) */
    int64_t rank;
    int64_t nsend, nrecv, npack;
    rd_xfer *send, *recv, *packs;
} rd_xchg;

/* The box device `sender` sends to device `receiver` in exchange x: its
 * shape, its origin in the sender's `a` block and in the receiver's `b`
 * block.  Returns 0 when the box is empty. */
int rd_xchg_box(const rd_xchg *x, int64_t sender, int64_t receiver,
                int64_t box[], int64_t off_in_a[], int64_t off_in_b[]);
/* The shape of device `rank`'s block in `a` (side 0) or `b` (side 1):
 * what a sender needs to place a piece in a receiver's block when blocks
 * differ between devices (uneven dims). */
void rd_xchg_extent(const rd_xchg *x, int side, int64_t rank, int64_t ext[]);

struct rd_program;

/* The most work space a backend's slowest algorithms need beside a
 * pass's spare region (one element of 16 bytes at most for a streamed
 * reduction, one byte for a swap in rounds), rounded up: what a plan set
 * keeps of its budget for them (begin_programs). */
#define RD_SET_WORK_LEAST 64

struct rd_tlists;
struct rd_stream;

/* One part of a combined exchange (exchange_multi): byte ranges as
 * `exchange` takes them; or, with `tl`, the pieces of a two-mesh
 * transfer (src/exec/meshes.h): boxes of the send block `send` (shape
 * tl->s_shape) and of the receive block `recv` (tl->r_shape), the own
 * pieces in the same order in both lists; or, with `x`, a whole
 * exchange step (backends with `step` for exchange steps and no
 * `exchange` op: OpenSHMEM) from the block `send` to the block `recv`,
 * to / from then being x->xchg's lists (for counting peers). */
typedef struct rd_xpart {
    const void *send;
    int64_t nto;
    const rd_xfer *to;
    void *recv;
    int64_t nfrom;
    const rd_xfer *from;
    const struct rd_tlists *tl;
    const rd_xstep *x;
    /* a solo two-mesh array's transfer streamed through a window
     * (exec/set_stream.h): a backend with exchange_multi may run it */
    struct rd_stream *stream;
    /* with x: x->xchg's ranks are those of a mesh whose rank r is rank
     * devs[r] of the endpoint (a two-mesh array's lowered phase, whose
     * to / from lists are already in the endpoint's ranks); NULL: the
     * endpoint's own ranks.  A part with no tl, no x and no pieces is
     * empty (a device off such a mesh): nothing to send or receive. */
    const int64_t *devs;
} rd_xpart;

typedef struct rd_backend_ops {
    const char *name;
    unsigned caps;      /* RD_CAP_* */
    unsigned fused_ops; /* bits 1u << REDIST_OP_*: ops `step` runs whole */

    /* Combine the ranks' local outcome before any data moves.  Returns
     * REDIST_OK on every rank iff every rank passed REDIST_OK and the same
     * hash; else an error on every rank: a failed rank keeps its own
     * `local_err` (already in *err), the others get a message naming the
     * first failed rank (or REDIST_ERR_MISMATCH for differing hashes). */
    redist_status_t (*agree)(redist_backend_t *be, redist_status_t local,
                             uint64_t plan_hash, redist_error_t *err);

    /* all_gather (to_all 0): recv = the members' `bytes`-byte send
     * buffers in member order.  all_to_all (to_all 1): send = s chunks of
     * `bytes`; chunk k goes to member k; recv = the chunks received, in
     * member order. */
    redist_status_t (*blocks)(redist_backend_t *be, const rd_group *g,
                              int to_all, const void *send, void *recv,
                              uint64_t bytes, redist_error_t *err);
    /* reduce_scatter (all 0): send = s chunks of `count` elements; recv
     * (count elements) = the reduction over the members of their chunk
     * number g->index.  all_reduce (all 1): recv (count elements) = the
     * reduction over the members of send.  Use rd_reduce_n (kernels.h) or
     * an equivalent of its semantics. */
    redist_status_t (*reduce)(redist_backend_t *be, const rd_group *g,
                              int all, const void *send, void *recv,
                              uint64_t count, redist_dtype_t dtype,
                              redist_reduce_t op, redist_error_t *err);
    /* Send `bytes` from send to rank `to`, receive `bytes` from rank `from`
     * into recv (to == from == own rank: a local copy).  Every rank calls
     * it once per permute step. */
    redist_status_t (*permute)(redist_backend_t *be, const void *send,
                               int64_t to, void *recv, int64_t from,
                               uint64_t bytes, redist_error_t *err);
    /* Exchange (alltoallv-like, optional: NULL if the backend does not
     * run exchange steps, and the executor refuses such plans before any
     * data moves).  Send to[k].bytes bytes at send + to[k].off to rank
     * to[k].peer, k < nto; receive from[k].bytes bytes from rank
     * from[k].peer into recv + from[k].off, k < nfrom.  Both lists are
     * sorted by peer, each peer at most once; this rank may be among the
     * peers (a local copy).  Send ranges may overlap (one range sent to
     * several peers); receive ranges do not.  The sender's bytes for a
     * pair equal the receiver's.  Every rank of the mesh calls it, also
     * with empty lists. */
    redist_status_t (*exchange)(redist_backend_t *be, const void *send,
                                int64_t nto, const rd_xfer *to, void *recv,
                                int64_t nfrom, const rd_xfer *from,
                                redist_error_t *err);
    /* Optional: several exchanges at once (many arrays, set_run.c), each
     * part as `exchange` takes it, sent as ONE message per peer and
     * direction (the parts' pieces for that peer, in part order).  Every
     * rank of the mesh calls it with the same number of parts.  NULL:
     * the executor runs the parts one `exchange` each. */
    redist_status_t (*exchange_multi)(redist_backend_t *be, int nparts,
                                      const struct rd_xpart *parts,
                                      redist_error_t *err);
    /* Optional: many arrays (set_run.c) run n programs within one
     * preparation, and the backend's ops take their work space (MPI:
     * reductions and swaps where a pass's spare region is too small)
     * from the set's arena, never from an allocation of their own.
     * begin_programs says how much of `room` bytes it wants for any of
     * the programs: at least what the slowest algorithms need (at most
     * RD_SET_WORK_LEAST bytes; the set plans that much for every set
     * with such passes), at most `room`; then use_work hands it that
     * region (the same size on every rank) until end_programs. */
    uint64_t (*begin_programs)(redist_backend_t *be, int n,
                               const struct rd_program *const progs[],
                               uint64_t room);
    void (*use_work)(redist_backend_t *be, void *work, uint64_t bytes);
    void (*end_programs)(redist_backend_t *be);
    /* Optional: an endpoint of this device on the mesh `mesh` whose
     * rank r is global device devices[r] (NULL in *out when this device
     * is not among them), for two-mesh arrays of a set: collective over
     * every rank of `be`, in the same order; the same ops kind and
     * options as `be`.  sub_free releases one (collective over its
     * mesh). */
    redist_status_t (*sub)(redist_backend_t *be, const redist_mesh_t *mesh,
                           const int64_t devices[], redist_backend_t **out,
                           redist_error_t *err);
    /* A backend whose release is collective over every rank of `be`
     * (OpenSHMEM: shmem_free) may give a non-member an endpoint of rank
     * -1 instead of NULL: it runs nothing, and sub_free then releases it
     * on every rank of `be`, in the order they were made. */
    void (*sub_free)(redist_backend_t *sub);
    /* Optional: a set run (redist_set_run) starts on this endpoint
     * (called on the union's and on every mesh endpoint of the set, in
     * the same order on every rank, before any op of the run): per-run
     * state may restart (OpenSHMEM: its signal slots). */
    void (*run_begins)(redist_backend_t *be);
    /* Optional (NULL, fused_ops 0): a whole step, see above. */
    redist_status_t (*step)(redist_backend_t *be, const rd_xstep *x,
                            const void *in, void *out, redist_error_t *err);
    /* 1: `step` also runs an uneven plan's reduce_scatter whole, when
     * fused_ops has it (rd_xstep.boxed; one-array programs only, not a
     * set's): no packed boxes, no all-reduce of them */
    int uneven_rs;
    /* Build flags (RD_BUILD_UNEVEN_RS only) of a set's programs
     * (rd_set_program, which takes the backend's kind, not an endpoint):
     * the same on every rank.  OpenSHMEM: its endpoints' own flag, so a
     * two-mesh phase runs its uneven reduce_scatters whole too. */
    unsigned set_build;

    /* A rank failed in the middle of a plan: make every other rank's
     * pending and later ops fail (no hang).  May be NULL when the backend
     * has no better way than its ops failing by themselves. */
    void (*abort)(redist_backend_t *be, redist_status_t status,
                  const redist_error_t *err);

    /* Optional scratch provider (NULL: malloc / free). */
    void *(*alloc)(redist_backend_t *be, size_t bytes);
    void (*free)(redist_backend_t *be, void *p, size_t bytes);

    /* Optional in-place passes (used only when be->build has
     * RD_BUILD_INPLACE): the ops in `inplace_ops` (bits 1u << REDIST_OP_*)
     * may be asked to run with recv == send (whole steps: out == in),
     * the input at the start of the buffer and the output written from
     * its start.  `inplace_need` says, for one pass (fused: a whole step
     * through `step`), how many bytes of be->spare the op then needs at
     * least; UINT64_MAX when it cannot run this pass in place.  The
     * executor only plans in-place passes whose spare is large enough. */
    unsigned inplace_ops;
    uint64_t (*inplace_need)(const redist_backend_t *be, const rd_xstep *x,
                             int fused, uint64_t in_bytes);

    /* Optional: may a second thread of this rank (a prepared set's
     * progress thread, exec/async.c) call the ops while the caller's
     * thread goes on (MPI_THREAD_MULTIPLE, SHMEM_THREAD_MULTIPLE)?  1 or
     * 0 for this rank alone (the set agrees on it).  *busy (may be left
     * NULL): a flag of the runtime context that its other calls check
     * (OpenSHMEM's: one run in flight per context), set while the set's
     * non-blocking run is in flight.  NULL op: no (start refused). */
    int (*threads)(redist_backend_t *be, int **busy);

    /* Optional (OpenSHMEM): the kind of this backend's endpoints for
     * buffers that every rank passes as the same symmetric objects, and
     * the endpoint of that kind on be's context.  A set of one two-mesh
     * array runs its phase A there when the caller's buffers are such
     * (src/exec/set_two.c, SOLO).  NULL: none. */
    const struct rd_backend_ops *sym_kind;
    redist_backend_t *(*sym_endpoint)(redist_backend_t *be);
} rd_backend_ops;

/* Build flags of an endpoint (struct redist_backend.build). */
enum {
    /* plan in-place passes (rd_backend_ops.inplace_ops) when they lower
     * the executor's scratch: the backend's choice, e.g. to meet a
     * memory bound below the executor's default */
    RD_BUILD_INPLACE = 1u << 0,
    /* a two-mesh run may place a device's S block in its destination
     * buffer and its R block in its source buffer (rd_meshes_usr_blocks):
     * the backend runs each stage on every device before the next (sim) */
    RD_BUILD_MESH_USR = 1u << 1,
    /* a two-mesh phase whose program leaves a device over the bound runs
     * with the sim's whole steps (REDIST_SIM_FUSED) when they leave
     * fewer devices over (src/exec/meshes.c, phase_info) */
    RD_BUILD_MESH_FUSE = 1u << 2,
    /* lower even and uneven reduce_scatter steps to an exchange of the
     * contributions and an ordered sum, consecutive ones along one dim
     * fused into one of each (program.c): fewer, larger messages for a
     * point-to-point backend, at the cost of the slabs (the block before
     * the steps) as scratch; the backend's choice (MPI: execute.c) */
    RD_BUILD_LOWER_RS = 1u << 3,
    /* lower even all_gather and all_to_all steps to an exchange (one
     * point-to-point message per peer, straight into the final places,
     * no scratch):
     * the backend's choice (MPI prepared objects: execute.c) */
    RD_BUILD_LOWER_MOVES = 1u << 4,
    /* uneven dims: this device's own buffers' sizes count in the buffer
     * assignment, not the least any device has (assign.c), so devices
     * may differ in buffers and scratch: a backend whose ops take each
     * device's pointers as they come (a two-mesh phase on the sim,
     * meshes.c; build with be->rank the device's rank) */
    RD_BUILD_OWN_CAPS = 1u << 5,
    /* the caller passes its source buffer as the destination too: the
     * data ends in SRC, DST is never touched, and passes run in place
     * where the backend can (a two-mesh phase of all-reduces ending in
     * the source buffer: src/backend/mpi/meshes.c).  No program exists
     * under REDIST_EXEC_PRESERVE_SRC or with uneven blocks */
    RD_BUILD_END_IN_SRC = 1u << 6,
    /* run an uneven plan's reduce_scatter whole through `step`
     * (rd_xstep.boxed, with mbox), as with uneven_rs: no packed boxes, no
     * all-reduce of them; the backend's choice (MPI: execute.c;
     * OpenSHMEM: context.c, and set_build for its sets' programs) */
    RD_BUILD_UNEVEN_RS = 1u << 7
};

struct redist_backend {
    const rd_backend_ops *ops;
    void *ctx;
    int64_t rank;
    int64_t size;
    unsigned build; /* RD_BUILD_* */
    /* During an exchange op (all_gather .. exchange, step), the largest
     * region of the executor's buffers that holds no live data during
     * that pass (a buffer the pass neither reads nor writes, or the unused
     * tail of one it does): the op may use it as work space, e.g. for
     * reductions.  NULL / 0 when there is none.  The same size on every
     * rank (buffer sizes depend only on the plan).  Set by the executor
     * before each op and cleared after. */
    void *spare;
    uint64_t spare_bytes;
    /* The same, within the scratch the backend allocated (`alloc`: e.g.
     * symmetric memory, at the same offset on every rank) and besides
     * `spare`; not for in-place passes. */
    void *spare_scratch;
    uint64_t spare_scratch_bytes;
    /* The index of the program pass running (rd_exec_run; -1 between
     * passes), for backends that prepared something per pass. */
    int pass;
    /* Optional, set by the caller of a run on this device: a region of
     * lend_bytes that holds no live data for the whole run (a two-mesh
     * phase on the sim: the caller's other buffer, meshes.c).  The
     * program takes it as one of its scratch buffers where that lowers
     * what it allocates (assign.c); it is not counted as scratch.  A
     * program built for exec info needs lend_bytes only. */
    void *lend;
    uint64_t lend_bytes;
    /* Optional, with RD_BUILD_OWN_CAPS: the source buffer's size when
     * larger than this device's block (the run's own buffer for the
     * block, which the program may also use; 0: the block's size). */
    uint64_t src_room;
};

#endif
