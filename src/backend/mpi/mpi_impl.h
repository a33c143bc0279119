/*
 * The MPI backend's insides (private to src/backend/mpi/): one MPI rank
 * per mesh device, behind the executor's ops table (exec/backend.h).
 * These files are the only ones of redist that include <mpi.h> besides
 * the public redist/mpi.h; they build into libredist_mpi, never into
 * libredist.  The contract is include/redist/mpi.h; each file below
 * opens with its algorithm, cost and memory:
 *   context.c         the context: communicators per axis, options
 *   agree.c           the agreement before any data moves
 *   datatypes.c       derived datatypes for any 64-bit size
 *   work.c            scratch accounting and reduction work space
 *   ops.c             the ops table: one entry per step kind, whole
 *                     steps with derived datatypes
 *   allgather_ring.c  all_gather: MPI_Allgather or a ring of Sendrecv
 *   exchange.c        exchange steps, point to point
 *   swap.c            all_to_all and permute in place, by pairwise swaps
 *   reduce_ordered.c  reductions in member order through work space
 *   reduce_stream.c   reductions with less than one element per member
 *   reduce_native.c   MPI_Reduce_scatter_block / MPI_Allreduce
 *   execute.c         sizing the work space, redist_mpi_execute
 *   prepared.c        prepared objects: prepare once, run many,
 *                     start / test / wait on a progress thread
 *   shared.c          redist_mpi_alloc: shared windows per node, and
 *                     the direct path of prepared objects through them
 * Costs use alpha = latency of one MPI call, beta = time per byte, s =
 * group size, L = local bytes before the step.
 */
#ifndef REDIST_BACKEND_MPI_IMPL_H
#define REDIST_BACKEND_MPI_IMPL_H

#include "redist/mpi.h"
#include "../../exec/exec_internal.h"
#include "mpi_internal.h"

#define RD_MPI_TAG 7411
#define RD_MPI_TAG_XCHG 7412

/* All-gathers of blocks at least this large on groups whose size is not
 * a power of two run as a ring (allgather_ring.c). */
#define RD_MPI_RING_BYTES (64ULL << 10)

/* The piece a swap moves per round: what it wants, what it can live with */
#define RD_MPI_SWAP_GOOD (1ULL << 20)

enum { UOP_F16, UOP_BF16, UOP_GEN, UOP_KINDS };

/* What a prepared object built once for one pass of its program
 * (prepared.c): the datatypes of a whole all_gather / all_to_all step,
 * or the persistent requests of a permute or exchange step on the bound
 * buffers. */
typedef struct rd_mpi_cached {
    int valid;
    MPI_Datatype stype, rtype;
    int nreq;
    MPI_Request *req;
    /* the direct path (shared.c): the pass reads its peers' inputs
     * through shared windows; peer_in[r] is rank r's input of the pass in
     * this process (NULL: not read); fence_before: the pass opens with a
     * fence (the previous pass did not end with one) */
    int direct, fence_before;
    const struct rd_pass *ps;
    char **peer_in;
    /* a whole uneven reduce_scatter (reduce_boxed.c): the work space its
     * group agreed on at the first run (0: not yet) */
    unsigned long long boxed_w;
} rd_mpi_cached;

/* One allocation of redist_mpi_alloc (shared.c): a shared window over
 * the ranks of this node, this rank's segment, the caller's pointer. */
typedef struct rd_mpi_win {
    struct rd_mpi_win *next;
    MPI_Win win;
    char *seg, *ptr;
    uint64_t seg_bytes, bytes;
    int64_t seq;
} rd_mpi_win;

struct redist_mpi {
    MPI_Comm comm; /* duplicate of the caller's */
    MPI_Comm axis[REDIST_MAX_AXES];
    int rank, size, naxes;
    int64_t axis_size[REDIST_MAX_AXES];
    redist_mpi_options_t opts;
    uint64_t limit; /* largest count of one MPI argument */
    rd_backend_ops ops;
    struct redist_backend be;
    MPI_Op uop[UOP_KINDS][REDIST_REDUCE_COUNT];
    int have_uops;
    /* one redist_mpi_execute */
    int in_call;
    redist_status_t pre_status; /* folded into the first agree */
    redist_error_t pre_err;
    uint64_t work_want;
    int planned; /* redist_mpi_execute sized the work: never allocate */
    /* a prepared object whose every rank's src lies in a shared window
     * (one node): reduce_scatters stay whole steps, which the direct
     * path reduces straight from the members' inputs (execute.c) */
    int keep_rs;
    /* a prepared object's clone: even all_gathers run as point-to-point
     * exchanges unless keep_rs (execute.c) */
    int prepared;
    /* build flags every program of this context gets (meshes.c: a phase
     * ending in its source buffer, RD_BUILD_END_IN_SRC) */
    unsigned build_keep;
    char *work;
    uint64_t work_bytes;
    int work_borrowed; /* work is a plan set's arena (not ours to free) */
    /* a two-mesh object's phase (meshes.c): the executor's scratch and
     * the work buffer are carved, in allocation order, each at a multiple
     * of arena_align, from [arena, arena + arena_bytes), a region of the
     * object's (not ours to free); what does not fit is allocated */
    char *arena;
    uint64_t arena_bytes, arena_used, arena_align;
    /* accounting of this rank's scratch (executor + work) */
    uint64_t cur, high, allocs, exec_cur;
    int64_t exchanges, streamed, swaps, rings;
    MPI_Request *reqs; /* 2 * size, for exchange steps */
    uint64_t ring_bytes; /* allgather: ring from blocks this large */
    /* a prepared object's clone only: per pass of its program */
    rd_mpi_cached *cache;
    int ncache;
    /* shared windows (shared.c): the ranks sharing memory with this one
     * (the context only; MPI_COMM_NULL until the first allocation) and
     * the allocations, oldest first (a prepared object's clone: its
     * scratch in windows) */
    MPI_Comm node;
    int node_size;
    int node_ranks; /* tests: nodes of this many ranks (0: the real ones) */
    rd_mpi_win *wins;
    int64_t win_seq;
    /* a prepared object's clone only: the windows its direct passes read
     * (synchronised by each fence) and the direct passes of its last run */
    int ndwin;
    MPI_Win *dwin;
    int64_t direct;
};

/* The cache entry of the pass running (NULL outside a prepared run). */
static inline rd_mpi_cached *rd_mpi_cache_of(redist_mpi_t *x)
{
    int k = x->be.pass;
    return x->cache && k >= 0 && k < x->ncache &&
                   (x->cache[k].valid || x->cache[k].direct)
               ? &x->cache[k]
               : NULL;
}

/* context.c */
redist_status_t rd_mpi_fail(redist_error_t *err, int rc, const char *call);
/* REDIST_ERR_INVALID unless MPI is initialised and not finalised. */
redist_status_t rd_mpi_running(redist_error_t *err);

/* agree.c */
void *rd_mpi_malloc(size_t bytes);
void *rd_mpi_malloc_agreed(MPI_Comm comm, int rank, size_t bytes,
                           redist_status_t *st, redist_error_t *err);
redist_status_t rd_mpi_agree_comm(MPI_Comm comm, int rank,
                                  redist_status_t local, uint64_t hash,
                                  const char *differ, redist_error_t *err);
redist_status_t rd_mpi_agree(redist_backend_t *be, redist_status_t local,
                             uint64_t plan_hash, redist_error_t *err);

/* abort.c: a failure in the middle of a plan (backend.h `abort`), and
 * the test hook each op checks first (rd_mpi_fail_ops). */
void rd_mpi_abort(redist_backend_t *be, redist_status_t status,
                  const redist_error_t *err);
void rd_mpi_abort_comm(MPI_Comm comm, int rank, redist_status_t status,
                       const redist_error_t *err);
redist_status_t rd_mpi_injected(int rank, redist_error_t *err);

/* datatypes.c */
void rd_mpi_dt_free(MPI_Datatype *t);
int rd_mpi_dt_bytes(uint64_t lim, uint64_t n, MPI_Datatype *out);
int rd_mpi_dt_blocks(uint64_t lim, uint64_t rows, uint64_t row,
                     uint64_t stride, uint64_t extent, MPI_Datatype *out);
int rd_mpi_dt_box(uint64_t lim, int nd, const int64_t shape[],
                  const int64_t box[], size_t elem, MPI_Datatype *out);
uint64_t rd_mpi_box_offset(int nd, const int64_t shape[],
                           const int64_t off[], size_t elem);
uint64_t rd_mpi_prod(const int64_t *shape, int lo, int hi);

/* work.c */
typedef struct work_ref {
    char *p;
    uint64_t bytes;
    int owned;
} work_ref;

void *rd_mpi_scratch_alloc(redist_backend_t *be, size_t bytes);
/* `bytes` from x's arena (NULL: none, or it does not fit); in_arena:
 * does p lie in it? */
void *rd_mpi_arena_take(redist_mpi_t *x, uint64_t bytes);
int rd_mpi_in_arena(const redist_mpi_t *x, const void *p);
void rd_mpi_scratch_free(redist_backend_t *be, void *p, size_t bytes);
redist_status_t rd_mpi_work_get(redist_mpi_t *x, uint64_t good,
                                uint64_t least, uint64_t want, work_ref *w,
                                redist_error_t *err);
void rd_mpi_work_put(redist_mpi_t *x, work_ref *w);

/* ops.c */
extern const rd_backend_ops rd_mpi_ops_template;
unsigned rd_mpi_fused_ops(unsigned flags);
int rd_mpi_step_types(const redist_mpi_t *x, const rd_xstep *xs,
                      MPI_Datatype *stype, MPI_Datatype *rtype);

/* execute.c */
uint64_t rd_mpi_begin(redist_mpi_t *x, const redist_plan_t *plan,
                      const redist_exec_options_t *opts);
/* The arena a prepared object of `plan` on x carves its executor's
 * scratch and work buffer from, each part rounded up to `align` bytes
 * (0: the plan does not run on x; its prepare then fails). */
uint64_t rd_mpi_arena_need(const redist_mpi_t *x, const redist_plan_t *plan,
                           const redist_exec_options_t *opts,
                           uint64_t align);
void rd_mpi_end(redist_mpi_t *x);

/* shared.c */
void rd_mpi_windows_free(redist_mpi_t *x);
int rd_mpi_owns_window(const redist_mpi_t *x, const void *p);
/* Does this rank's `src` lie in a shared window of ctx, every rank of
 * ctx on one node (the direct path's condition for its first pass)? */
int rd_mpi_src_in_window(const redist_mpi_t *ctx, const void *src);
redist_status_t rd_mpi_direct_scratch(redist_mpi_t *ctx, redist_mpi_t *x,
                                      rd_exec_prep *xp, redist_error_t *err);
redist_status_t rd_mpi_direct_setup(const redist_mpi_t *ctx, redist_mpi_t *x,
                                    const rd_exec_prep *xp,
                                    redist_error_t *err);
void rd_mpi_direct_free(redist_mpi_t *x);
redist_status_t rd_mpi_direct_pass(redist_mpi_t *x, rd_mpi_cached *cc,
                                   const void *in, void *out,
                                   redist_error_t *err);

/* prepared.c */
redist_status_t rd_mpi_start_wait(rd_mpi_cached *cc, int start,
                                  redist_error_t *err);

/* allgather_ring.c */
int rd_mpi_allgather(redist_mpi_t *x, MPI_Comm comm, int64_t s, int64_t idx,
                     const void *send, MPI_Datatype stype, char *recv,
                     MPI_Datatype rtype, uint64_t slot, uint64_t block);
redist_status_t rd_mpi_gather_inplace(redist_mpi_t *x, MPI_Comm comm,
                                      int64_t s, int64_t idx, char *buf,
                                      uint64_t bytes, redist_error_t *err);

/* exchange.c */
uint64_t rd_mpi_begin_programs(redist_backend_t *be, int n,
                               const struct rd_program *const progs[],
                               uint64_t room);
void rd_mpi_use_work(redist_backend_t *be, void *work, uint64_t bytes);
redist_status_t rd_mpi_sub(redist_backend_t *be, const redist_mesh_t *mesh,
                           const int64_t devices[], redist_backend_t **out,
                           redist_error_t *err);
void rd_mpi_sub_free(redist_backend_t *sub);
/* rd_backend_ops.threads (prepared.c): MPI_THREAD_MULTIPLE. */
int rd_mpi_threads(redist_backend_t *be, int **busy);
/* prepared.c: the scratch a prepared object holds for its life (its
 * promise: the executor's buffers and work space); NULL: 0. */
uint64_t rd_mpi_prepared_promise(const redist_mpi_prepared_t *p);
void rd_mpi_end_programs(redist_backend_t *be);
redist_status_t rd_mpi_exchange_multi(redist_backend_t *be, int nparts,
                                      const rd_xpart *parts,
                                      redist_error_t *err);
redist_status_t rd_mpi_exchange(redist_backend_t *be, const void *send,
                                int64_t nto, const rd_xfer *to, void *recv,
                                int64_t nfrom, const rd_xfer *from,
                                redist_error_t *err);
redist_status_t rd_mpi_xchg_step(redist_mpi_t *x, const rd_xstep *xs,
                                 const char *in, char *out,
                                 redist_error_t *err);
int rd_mpi_xchg_prepare(redist_mpi_t *x, const rd_xstep *xs, const char *in,
                        char *out, rd_mpi_cached *cc);

/* swap.c */
redist_status_t rd_mpi_swap_rounds(redist_mpi_t *x, MPI_Comm comm, int to,
                                   int from, char *mine, uint64_t bytes,
                                   const work_ref *w, redist_error_t *err);
redist_status_t rd_mpi_alltoall_inplace(redist_mpi_t *x, MPI_Comm comm,
                                        int64_t s, int64_t idx, char *buf,
                                        uint64_t bytes, redist_error_t *err);

/* reduce_ordered.c */
void rd_mpi_reduce_one(redist_dtype_t dtype, redist_reduce_t op, void *out,
                       const void *in, uint64_t count);
int64_t rd_mpi_rs_rounds(uint64_t pre, uint64_t chunk, uint64_t per);
uint64_t rd_mpi_ar_min_work(uint64_t s, uint64_t count, size_t elem);
uint64_t rd_mpi_ar_inplace_work(uint64_t s, uint64_t count, size_t elem);
void rd_mpi_ar_need_upto(uint64_t s, uint64_t count, size_t elem,
                         uint64_t *good, uint64_t *want);
int64_t rd_mpi_ar_exchanges(uint64_t s, uint64_t count, size_t elem,
                            uint64_t work, int inplace);
redist_status_t rd_mpi_rs_with_work(redist_mpi_t *x, MPI_Comm c, int64_t s,
                                    int64_t idx, const char *in, char *out,
                                    uint64_t pre, uint64_t chunk, size_t elem,
                                    redist_dtype_t dtype, redist_reduce_t op,
                                    redist_error_t *err);
redist_status_t rd_mpi_ar_ordered(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                  int64_t idx, const char *in, char *out,
                                  uint64_t count, size_t elem,
                                  redist_dtype_t dtype, redist_reduce_t op,
                                  redist_error_t *err);

/* reduce_boxed.c */
redist_status_t rd_mpi_rs_boxed(redist_mpi_t *x, MPI_Comm comm,
                                const rd_xstep *xs, const char *in, char *out,
                                redist_error_t *err);
uint64_t rd_mpi_boxed_rounds(const rd_xstep *xs, uint64_t work);

/* reduce_stream.c */
redist_status_t rd_mpi_rs_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t pre, uint64_t chunk, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per,
                                 redist_error_t *err);
redist_status_t rd_mpi_ar_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t count, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per,
                                 redist_error_t *err);

/* reduce_native.c */
extern MPI_User_function *const rd_mpi_uop_fns[UOP_KINDS]
                                               [REDIST_REDUCE_COUNT];
int rd_mpi_native_ok(const redist_mpi_t *x, uint64_t count);
redist_status_t rd_mpi_native_reduce_scatter(redist_mpi_t *x, MPI_Comm c,
                                             const void *send, void *recv,
                                             uint64_t count,
                                             redist_dtype_t dtype,
                                             redist_reduce_t op,
                                             redist_error_t *err);
redist_status_t rd_mpi_native_all_reduce(redist_mpi_t *x, MPI_Comm c,
                                         const void *send, void *recv,
                                         uint64_t count, redist_dtype_t dtype,
                                         redist_reduce_t op,
                                         redist_error_t *err);

#endif
