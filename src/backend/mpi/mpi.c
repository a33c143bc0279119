/*
 * The MPI backend: one MPI rank per mesh device, behind the executor's
 * ops table (backend.h).  The only file of the library that includes
 * <mpi.h>; it is built into libredist_mpi, never into libredist.
 *
 * CONTEXT.  redist_mpi_create duplicates the caller's communicator and
 * splits the duplicate once per mesh axis (color: the rank with its
 * coordinate on the axis set to 0, key: the coordinate), so member k of a
 * group is sub-rank k.  The communicators live as long as the context.
 *
 * STEPS.  alpha = latency of one MPI call, beta = time per byte; s = group
 * size, L = local bytes before the step.
 *   all_gather   one MPI_Allgather; the receive datatype puts member k's
 *                block at slot k along the gathered dim of the output
 *                ([pre][s][chunk] with extent chunk), so no unpack pass.
 *                ~ alpha log s + beta (s-1) L.  Scratch 0.  Groups whose
 *                size is not a power of two, blocks of RD_MPI_RING_BYTES
 *                or more: a ring of s - 1 MPI_Sendrecv with the same
 *                datatypes (Open MPI's Bruck allocates the whole result;
 *                see allgather).  ~ alpha (s-1) + beta (s-1) L.
 *   all_to_all   one MPI_Alltoall; the send datatype picks chunk k along
 *                the split dim of the input, the receive datatype writes
 *                the piece of member k to slot k along the gathered dim.
 *                ~ alpha s + beta (s-1)/s L.  Scratch 0.
 *   permute      one MPI_Sendrecv of L contiguous bytes (a local memcpy
 *                for a device that keeps its block).  alpha + beta L.
 *   exchange     (time-objective plans) a whole step (xchg_step): per
 *                peer one MPI_Irecv and one MPI_Isend of a box datatype
 *                (nested hvectors) straight in the blocks, the own box by
 *                rd_kernel_box, then MPI_Waitall; the requests live in the
 *                context (nothing is allocated mid-plan).  ~ alpha peers +
 *                beta received bytes.  Scratch 0, no pack or unpack pass.
 *                REDIST_MPI_PACKED: the executor packs, contiguous pieces
 *                (mpi_exchange).
 *   reduce_scatter (ordered, the default) rounds of MPI_Alltoall: member k
 *                receives, from every member, the next `per` elements of
 *                chunk k, into a work buffer of s * per elements, and
 *                reduces them in member order with rd_reduce_n, straight
 *                into its output.  The result is the sim's bit for bit.
 *                ~ rounds * alpha s + beta (s-1)/s L.  Work: s * per
 *                elements, per >= 1 (see "work" below).
 *   all_reduce   (ordered) the same reduce-scatter on s equal parts of the
 *                array, then an in-place MPI_Allgather of the parts; the
 *                count % s trailing elements are all-gathered and reduced
 *                by everyone first.  The work space of the rounds is the
 *                part of the output that is not yet written when it is
 *                large enough (s/2 parts), so usually no memory at all.
 *                ~ alpha (rounds + 1) s + beta 2 (s-1)/s L.
 *   native reductions (REDIST_MPI_NATIVE_REDUCE) MPI_Reduce_scatter_block
 *                and MPI_Allreduce with predefined or user-defined ops;
 *                MPI's algorithms, MPI's memory.  A reduce_scatter of more
 *                than INT_MAX elements per member falls back to the ordered
 *                one (MPI_Reduce_scatter_block takes an int count).
 * With REDIST_MPI_PACKED the executor packs and unpacks with its kernels
 * and the exchanges are contiguous (the same calls with plain byte types).
 *
 * COUNTS.  Every message is described as one derived datatype of bytes
 * built from counts of at most `limit` (INT_MAX): a longer run is a
 * vector of limit-sized blocks plus a remainder (a struct), recursively,
 * so any 64-bit size is one MPI call with count 1.
 *
 * WORK.  Reductions (and in-place swaps) take the larger of the step's
 * spare region (be->spare: dead memory of the executor's buffers) and a
 * work buffer sized before the call (redist_mpi_execute, from the
 * executor's program: what the passes' spare regions lack, within the
 * bound: max_scratch, by default max(src, dst) bytes, minus the
 * executor's scratch; at most REDIST_MPI_ROUND_BYTES by default).  It is
 * allocated at the executor's first `agree`, so an allocation failure on
 * any rank fails every rank before data moves.  Less than s elements:
 * the streamed reductions (rs_stream, ar_stream).  Through
 * redist_plan_execute directly, a work buffer is allocated per step with
 * a mesh-wide check when the spare region is too small.
 *
 * IN PLACE.  When max_scratch is below what the executor's buffers need,
 * mpi_info re-plans them with RD_BUILD_INPLACE: the passes of
 * mpi_inplace_need may get send == recv (see the ops).
 *
 * AGREE.  One MPI_Allreduce(MIN) of (this rank if it failed, the plan
 * hash, its complement) over the whole communicator; on a failure the
 * first failed rank broadcasts its message, on differing hashes rank 0's
 * hash is broadcast to name the first rank that differs.  The hash covers
 * the plan, the execution flags and this backend's options.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "../../exec/exec_internal.h"
#include "../../exec/kernels.h"
#include "mpi_internal.h"
#include "../../core/internal.h"

#define RD_MPI_TAG 7411
#define RD_MPI_TAG_XCHG 7412

enum { UOP_F16, UOP_BF16, UOP_GEN, UOP_KINDS };

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
    char *work;
    uint64_t work_bytes;
    /* accounting of this rank's scratch (executor + work) */
    uint64_t cur, high, allocs, exec_cur;
    int64_t exchanges, streamed, swaps, rings;
    MPI_Request *reqs; /* 2 * size, for exchange steps */
    uint64_t ring_bytes; /* allgather: ring from blocks this large */
};

/* ------------------------------------------------------------ errors */

static redist_status_t mpi_fail(redist_error_t *err, int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error code %d", rc);
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL, "mpi: %s failed: %s",
                    call, msg);
}

/* --------------------------------------------------------- datatypes */

static void t_free(MPI_Datatype *t)
{
    if (*t != MPI_DATATYPE_NULL)
        MPI_Type_free(t);
    *t = MPI_DATATYPE_NULL;
}

/* n copies of t (extent text), copy k at byte k * stride; n may exceed
 * `lim`: then limit-sized vectors of vectors plus a remainder. */
static int t_rep(uint64_t lim, uint64_t n, MPI_Aint stride, MPI_Datatype t,
                 MPI_Aint text, MPI_Datatype *out)
{
    *out = MPI_DATATYPE_NULL;
    if (lim < 2) /* the recursion below needs q < n */
        lim = 2;
    if (n <= lim)
        return stride == text
                   ? MPI_Type_contiguous((int)n, t, out)
                   : MPI_Type_create_hvector((int)n, 1, stride, t, out);
    uint64_t q = n / lim, r = n % lim;
    MPI_Datatype blk = MPI_DATATYPE_NULL, outer = MPI_DATATYPE_NULL,
                 rem = MPI_DATATYPE_NULL;
    MPI_Aint bstride = stride * (MPI_Aint)lim;
    int rc = t_rep(lim, lim, stride, t, text, &blk);
    if (rc == MPI_SUCCESS)
        rc = t_rep(lim, q, bstride, blk, (MPI_Aint)(lim - 1) * stride + text,
                   &outer);
    if (rc == MPI_SUCCESS && r) {
        rc = t_rep(lim, r, stride, t, text, &rem);
        if (rc == MPI_SUCCESS) {
            int bl[2] = {1, 1};
            MPI_Aint disp[2] = {0, bstride * (MPI_Aint)q};
            MPI_Datatype ts[2] = {outer, rem};
            rc = MPI_Type_create_struct(2, bl, disp, ts, out);
        }
    } else if (rc == MPI_SUCCESS) {
        *out = outer;
        outer = MPI_DATATYPE_NULL;
    }
    t_free(&blk);
    t_free(&outer);
    t_free(&rem);
    return rc;
}

/* n contiguous bytes, committed. */
static int t_bytes(uint64_t lim, uint64_t n, MPI_Datatype *out)
{
    int rc = t_rep(lim, n, 1, MPI_BYTE, 1, out);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(out);
    if (rc != MPI_SUCCESS)
        t_free(out);
    return rc;
}

/* `rows` runs of `row` bytes, `stride` bytes apart, with extent `extent`
 * (so that in a collective, member k's block starts at k * extent);
 * committed. */
static int t_blocks(uint64_t lim, uint64_t rows, uint64_t row,
                    uint64_t stride, uint64_t extent, MPI_Datatype *out)
{
    if (rows == 1 && row == extent)
        return t_bytes(lim, row, out);
    MPI_Datatype r = MPI_DATATYPE_NULL, v = MPI_DATATYPE_NULL;
    *out = MPI_DATATYPE_NULL;
    int rc = t_rep(lim, row, 1, MPI_BYTE, 1, &r);
    if (rc == MPI_SUCCESS)
        rc = t_rep(lim, rows, (MPI_Aint)stride, r, (MPI_Aint)row, &v);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_create_resized(v, 0, (MPI_Aint)extent, out);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(out);
    if (rc != MPI_SUCCESS)
        t_free(out);
    t_free(&r);
    t_free(&v);
    return rc;
}

int rd_mpi_type_bytes(uint64_t limit, uint64_t n, MPI_Datatype *out)
{
    return t_bytes(limit ? limit : INT_MAX, n, out);
}

int rd_mpi_type_blocks(uint64_t limit, uint64_t rows, uint64_t row_bytes,
                       uint64_t stride, uint64_t extent, MPI_Datatype *out)
{
    return t_blocks(limit ? limit : INT_MAX, rows, row_bytes, stride, extent,
                    out);
}

/* ------------------------------------------------------------ agree */

/* Tests: the next `fail_allocs` allocations of this process fail
 * (rd_mpi_fail_allocs), to check that a failure on one rank is an error
 * on every rank. */
static int fail_allocs;

void rd_mpi_fail_allocs(int n) { fail_allocs = n > 0 ? n : 0; }

static void *x_malloc(size_t bytes)
{
    if (fail_allocs > 0) {
        fail_allocs--;
        return NULL;
    }
    return malloc(bytes);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Every rank of comm learns whether all passed OK with the same hash. */
static redist_status_t agree_comm(MPI_Comm comm, int rank,
                                  redist_status_t local, uint64_t hash,
                                  const char *differ, redist_error_t *err)
{
    uint64_t v[3] = {local ? (uint64_t)rank : UINT64_MAX, hash, ~hash}, r[3];
    int rc = MPI_Allreduce(v, r, 3, MPI_UINT64_T, MPI_MIN, comm);
    if (rc != MPI_SUCCESS)
        return local ? local : mpi_fail(err, rc, "MPI_Allreduce (agree)");
    if (r[0] != UINT64_MAX) {
        struct {
            int32_t status;
            char text[REDIST_ERROR_TEXT_LENGTH + REDIST_ERROR_PATH_LENGTH];
        } msg;
        int root = (int)r[0];
        memset(&msg, 0, sizeof msg);
        if (rank == root) {
            msg.status = local;
            if (err && err->status)
                redist_error_format(err, msg.text, sizeof msg.text);
            else
                rd_strlcpy(msg.text, redist_status_string(local),
                           sizeof msg.text);
        }
        rc = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, root, comm);
        if (local)
            return local;
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Bcast (agree)");
        return rd_error(err, (redist_status_t)msg.status, NULL, NULL,
                        "device %d failed: %s", root, msg.text);
    }
    if (r[1] != ~r[2]) {
        uint64_t h0 = hash, me, first = 0;
        rc = MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, comm);
        me = hash != h0 ? (uint64_t)rank : UINT64_MAX;
        if (rc == MPI_SUCCESS)
            rc = MPI_Allreduce(&me, &first, 1, MPI_UINT64_T, MPI_MIN, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Allreduce (agree)");
        return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                        "%s (device %llu differs from device 0)", differ,
                        (unsigned long long)first);
    }
    return REDIST_OK;
}

static uint64_t config_hash(const redist_mpi_t *x)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv_u64(h, x->opts.flags);
    h = fnv_u64(h, x->opts.max_scratch);
    h = fnv_u64(h, x->limit);
    return h;
}

static redist_status_t mpi_agree(redist_backend_t *be, redist_status_t local,
                                 uint64_t plan_hash, redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    if (x->in_call && x->pre_status) {
        if (!local) {
            local = x->pre_status;
            if (err && !err->status)
                *err = x->pre_err;
        }
        x->pre_status = REDIST_OK;
    }
    if (!local && x->in_call && x->work_want && !x->work) {
        x->work = x_malloc((size_t)x->work_want);
        if (!x->work || x->work_want > SIZE_MAX)
            local = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                             "cannot allocate %llu bytes of reduction work "
                             "space on device %d",
                             (unsigned long long)x->work_want, x->rank);
        else {
            x->work_bytes = x->work_want;
            x->cur += x->work_bytes;
            x->allocs++;
            if (x->cur > x->high)
                x->high = x->cur;
        }
    }
    uint64_t h = fnv_u64(plan_hash, config_hash(x));
    return agree_comm(x->comm, x->rank, local, h,
                      "the devices were given different plans or options",
                      err);
}

/* ------------------------------------------------- scratch and work */

static void *mpi_alloc(redist_backend_t *be, size_t bytes)
{
    redist_mpi_t *x = be->ctx;
    void *p = x_malloc(bytes);
    if (p) {
        x->cur += bytes;
        x->exec_cur += bytes;
        x->allocs++;
        if (x->cur > x->high)
            x->high = x->cur;
    }
    return p;
}

static void mpi_free_scratch(redist_backend_t *be, void *p, size_t bytes)
{
    redist_mpi_t *x = be->ctx;
    if (!p)
        return;
    free(p);
    x->cur -= bytes;
    x->exec_cur -= bytes;
}

typedef struct work_ref {
    char *p;
    uint64_t bytes;
    int owned;
} work_ref;

/*
 * Work space for one op, the same size on every rank: the larger of the
 * pass's spare region (dead memory of the executor's buffers, be->spare)
 * and the context's work buffer (sized by redist_mpi_execute).  `good` is
 * what the op's fast algorithm needs, `least` what its slowest one needs
 * (0: none), `want` the most it can use.  Outside redist_mpi_execute,
 * when neither region has `good` bytes, a buffer of up to `want` bytes is
 * allocated for this op within the budget, with a mesh-wide check: every
 * rank runs the same op of the same plan, so either all get one or all
 * fail.  Failing that, a region of `least` bytes will do.
 */
static redist_status_t work_get(redist_mpi_t *x, uint64_t good,
                                uint64_t least, uint64_t want, work_ref *w,
                                redist_error_t *err)
{
    memset(w, 0, sizeof *w);
    if (x->be.spare && x->be.spare_bytes) {
        w->p = x->be.spare;
        w->bytes = x->be.spare_bytes;
    }
    if (x->work && x->work_bytes > w->bytes) {
        w->p = x->work;
        w->bytes = x->work_bytes;
    }
    if (w->bytes >= good || x->planned)
        return w->bytes >= least
                   ? REDIST_OK
                   : rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                              "internal error: %llu bytes of work space "
                              "planned, an op needs %llu",
                              (unsigned long long)w->bytes,
                              (unsigned long long)least);
    uint64_t budget = REDIST_MPI_ROUND_BYTES;
    if (x->opts.max_scratch)
        budget = x->opts.max_scratch > x->cur ? x->opts.max_scratch - x->cur
                                              : 0;
    if (want < good)
        want = good;
    uint64_t size = want < budget ? want : budget;
    if (size < good && w->bytes >= least)
        return REDIST_OK; /* the slow algorithm in the spare region */
    if (size < least) {
        uint64_t have = w->bytes;
        memset(w, 0, sizeof *w);
        /* every rank has the same figures: all fail here */
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "max_scratch %llu bytes leaves %llu bytes for the "
                        "work space of a step, which needs %llu (%llu "
                        "spare)",
                        (unsigned long long)x->opts.max_scratch,
                        (unsigned long long)budget,
                        (unsigned long long)least, (unsigned long long)have);
    }
    redist_status_t st = REDIST_OK;
    char *p = NULL;
    if (size > SIZE_MAX || !(p = x_malloc((size_t)size)))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                      "cannot allocate %llu bytes of work space on device "
                      "%d",
                      (unsigned long long)size, x->rank);
    int ok = st == REDIST_OK, all = 0;
    int rc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, x->comm);
    if (rc != MPI_SUCCESS || !all) {
        free(p);
        memset(w, 0, sizeof *w);
        if (st)
            return st;
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Allreduce (work space)");
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "another device could not allocate its work space");
    }
    w->p = p;
    w->bytes = size;
    w->owned = 1;
    x->cur += size;
    x->allocs++;
    if (x->cur > x->high)
        x->high = x->cur;
    return REDIST_OK;
}

static void work_put(redist_mpi_t *x, work_ref *w)
{
    if (w->owned) {
        free(w->p);
        x->cur -= w->bytes;
    }
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------- reductions */

typedef struct strided_in {
    const char *base;
    uint64_t stride;
} strided_in;

static const void *strided_input(void *u, int64_t m)
{
    strided_in *si = u;
    return si->base + (uint64_t)m * si->stride;
}

/* The reduction over a group of one: the kernel's, not a memcpy (f16 and
 * bf16 go through f32 as in the sim: a signalling NaN comes out quiet). */
static void reduce_one(redist_dtype_t dtype, redist_reduce_t op, void *out,
                       const void *in, uint64_t count)
{
    strided_in si = {in, 0};
    rd_reduce_n(dtype, op, out, count, 1, strided_input, &si);
}

static uint64_t div_up(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Exchanges of an ordered reduce-scatter of [pre][s][chunk] elements with
 * `per` elements per member per round. */
/* All-gathers of blocks at least this large on groups whose size is not
 * a power of two run as a ring of MPI_Sendrecv into the final places:
 * there Open MPI 4.1's MPI_Allgather picks Bruck's algorithm, which
 * allocates a buffer for the whole result on every rank but the first,
 * so every call pays fresh pages (at 64 MiB on 3 ranks: 10 923 page
 * faults and 150 to 170 ms on rank 1, against 10 to 14 ms by ring). */
#define RD_MPI_RING_BYTES (64ULL << 10)

/* All-gather: member k's block (`block` bytes) to slot k of recv, slot k
 * starting `slot` bytes after slot k - 1, described by rtype; `send`
 * (stype) is this member's block, or NULL when it is already in its slot
 * (in place).  One exchange. */
static int allgather(redist_mpi_t *x, MPI_Comm comm, int64_t s, int64_t idx,
                     const void *send, MPI_Datatype stype, char *recv,
                     MPI_Datatype rtype, uint64_t slot, uint64_t block)
{
    x->exchanges++;
    if (block < x->ring_bytes || (s & (s - 1)) == 0)
        return MPI_Allgather(send ? send : MPI_IN_PLACE, send ? 1 : 0,
                             send ? stype : MPI_DATATYPE_NULL, recv, 1, rtype,
                             comm);
    int rc = MPI_SUCCESS;
    x->rings++;
    if (send)
        rc = MPI_Sendrecv(send, 1, stype, (int)idx, RD_MPI_TAG,
                          recv + (uint64_t)idx * slot, 1, rtype, (int)idx,
                          RD_MPI_TAG, comm, MPI_STATUS_IGNORE);
    int next = (int)((idx + 1) % s), prev = (int)((idx + s - 1) % s);
    for (int64_t t = 0; t + 1 < s && rc == MPI_SUCCESS; t++) {
        /* pass on the block received last (mine first), receive the
         * one before it */
        uint64_t ks = (uint64_t)((idx - t + s) % s);
        uint64_t kr = (uint64_t)((idx - t - 1 + s) % s);
        rc = MPI_Sendrecv(recv + ks * slot, 1, rtype, next, RD_MPI_TAG,
                          recv + kr * slot, 1, rtype, prev, RD_MPI_TAG, comm,
                          MPI_STATUS_IGNORE);
    }
    return rc;
}

static int64_t rs_rounds(uint64_t pre, uint64_t chunk, uint64_t per)
{
    if (pre == 0 || chunk == 0)
        return 0;
    if (per >= chunk)
        return (int64_t)div_up(pre, per / chunk);
    return (int64_t)(pre * div_up(chunk, per));
}

/* One round: member k sends `rows` runs of `bytes` from in + k * cb (runs
 * `rowstride` apart); the s contributions land in work and are reduced,
 * in member order, to out (rows * bytes contiguous bytes).  `st`/`rt`
 * cache the datatypes of the last round shape. */
typedef struct rs_types {
    uint64_t rows, bytes;
    MPI_Datatype st, rt;
} rs_types;

static redist_status_t rs_round(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                const char *in, char *out, uint64_t rows,
                                uint64_t bytes, uint64_t rowstride,
                                uint64_t cb, char *work, size_t elem,
                                redist_dtype_t dtype, redist_reduce_t op,
                                rs_types *tc, redist_error_t *err)
{
    int rc = MPI_SUCCESS;
    if (tc->st == MPI_DATATYPE_NULL || tc->rows != rows ||
        tc->bytes != bytes) {
        t_free(&tc->st);
        t_free(&tc->rt);
        rc = t_blocks(x->limit, rows, bytes, rowstride, cb, &tc->st);
        if (rc == MPI_SUCCESS)
            rc = t_bytes(x->limit, rows * bytes, &tc->rt);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "building a datatype");
        tc->rows = rows;
        tc->bytes = bytes;
    }
    rc = MPI_Alltoall(in, 1, tc->st, work, 1, tc->rt, comm);
    x->exchanges++;
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Alltoall (reduce_scatter)");
    strided_in si = {work, rows * bytes};
    rd_reduce_n(dtype, op, out, rows * bytes / elem, s, strided_input, &si);
    return REDIST_OK;
}

/* Ordered reduce-scatter: in is [pre][s][chunk] elements, member k gets
 * [pre][k][chunk] reduced over the members in member order, into out
 * ([pre][chunk]).  work holds s * per elements (per >= 1). */
static redist_status_t rs_ordered(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                  const char *in, char *out, uint64_t pre,
                                  uint64_t chunk, size_t elem,
                                  redist_dtype_t dtype, redist_reduce_t op,
                                  char *work, uint64_t per,
                                  redist_error_t *err)
{
    uint64_t cb = chunk * elem, rowstride = (uint64_t)s * cb;
    rs_types tc = {0, 0, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    redist_status_t st = REDIST_OK;
    if (per >= chunk) {
        uint64_t R = per / chunk;
        for (uint64_t p0 = 0; p0 < pre && !st; p0 += R) {
            uint64_t n = pre - p0 < R ? pre - p0 : R;
            st = rs_round(x, comm, s, in + p0 * rowstride, out + p0 * cb, n,
                          cb, rowstride, cb, work, elem, dtype, op, &tc, err);
        }
    } else {
        for (uint64_t p = 0; p < pre && !st; p++)
            for (uint64_t c0 = 0; c0 < chunk && !st; c0 += per) {
                uint64_t n = chunk - c0 < per ? chunk - c0 : per;
                st = rs_round(x, comm, s, in + p * rowstride + c0 * elem,
                              out + p * cb + c0 * elem, 1, n * elem,
                              rowstride, cb, work, elem, dtype, op, &tc, err);
            }
    }
    t_free(&tc.st);
    t_free(&tc.rt);
    return st;
}

/* Work (bytes) an ordered all-reduce of `count` elements over s members
 * needs besides its output: the trailing count % s elements when the
 * output cannot hold their s copies, and one element per member when the
 * free half of the output cannot hold a round. */
static uint64_t ar_free_elems(uint64_t s, uint64_t q) { return s / 2 * q; }

static uint64_t ar_min_work(uint64_t s, uint64_t count, size_t elem)
{
    if (s <= 1)
        return 0;
    uint64_t q = count / s, r = count % s, w = 0;
    if (r && q < r)
        w = s * r * elem;
    if (q && ar_free_elems(s, q) < s && w < s * elem)
        w = s * elem;
    return w;
}

/* Rounds of the ordered all-reduce with a work buffer of `work` bytes
 * (in place, the output has no free half to use). */
static int64_t ar_exchanges(uint64_t s, uint64_t count, size_t elem,
                            uint64_t work, int inplace)
{
    if (s <= 1)
        return 1;
    uint64_t q = count / s, r = count % s;
    int64_t n = r ? 1 : 0;
    if (q) {
        uint64_t per_out = inplace ? 0 : ar_free_elems(s, q) / s;
        uint64_t per_work = work / (s * elem);
        uint64_t per = per_out >= 1 && per_out >= per_work ? per_out
                                                           : per_work;
        n += rs_rounds(1, q, per) + 1;
    }
    return n;
}

/* Streamed reductions: the slowest algorithms, for work space of less
 * than s elements (down to one).  Each round of n <= RD_REDUCE_BLOCK
 * elements has every member in turn, in member order, send its piece to
 * the others (MPI_Scatter of the s chunks for a reduce-scatter, MPI_Bcast
 * for an all-reduce), received on demand by rd_reduce_n's input callback
 * into n elements of work; the member's own piece is read in place.  The
 * output is written after the round has read every input, so it may
 * coincide with the input (in-place passes).  s times the calls of the
 * ordered algorithms; the same bytes (scatter) or s / 2 times them
 * (broadcast). */
typedef struct stream_in {
    redist_mpi_t *x;
    MPI_Comm comm;
    int64_t idx;
    int bcast;
    const char *send;  /* scatter: this member's row, chunk 0; bcast: its
                          piece */
    const char *mine;  /* this member's own piece */
    char *work;
    MPI_Datatype st, rt;
    int rc;
} stream_in;

static const void *stream_input(void *u, int64_t m)
{
    stream_in *si = u;
    int rc;
    int me = m == si->idx;
    if (si->bcast)
        rc = MPI_Bcast(me ? (void *)si->mine : si->work, 1, si->rt, (int)m,
                       si->comm);
    else if (me)
        rc = MPI_Scatter(si->send, 1, si->st, MPI_IN_PLACE, 0, si->rt,
                         (int)m, si->comm);
    else
        rc = MPI_Scatter(NULL, 0, si->st, si->work, 1, si->rt, (int)m,
                         si->comm);
    si->x->exchanges++;
    if (rc != MPI_SUCCESS && si->rc == MPI_SUCCESS)
        si->rc = rc;
    return me ? si->mine : si->work;
}

/* Streamed reduce-scatter of [pre][s][chunk] elements into [pre][chunk];
 * work holds `per` >= 1 elements. */
static redist_status_t rs_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t pre, uint64_t chunk, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per,
                                 redist_error_t *err)
{
    uint64_t cb = chunk * elem, rowstride = (uint64_t)s * cb;
    stream_in si = {x, comm, idx, 0, NULL, NULL, work, MPI_DATATYPE_NULL,
                    MPI_DATATYPE_NULL, MPI_SUCCESS};
    x->streamed++;
    uint64_t last = 0;
    if (per > RD_REDUCE_BLOCK)
        per = RD_REDUCE_BLOCK;
    for (uint64_t p = 0; p < pre && si.rc == MPI_SUCCESS; p++)
        for (uint64_t c0 = 0; c0 < chunk && si.rc == MPI_SUCCESS; c0 += per) {
            uint64_t n = chunk - c0 < per ? chunk - c0 : per;
            if (n != last) {
                t_free(&si.st);
                t_free(&si.rt);
                int rc = t_blocks(x->limit, 1, n * elem, n * elem, cb, &si.st);
                if (rc == MPI_SUCCESS)
                    rc = t_bytes(x->limit, n * elem, &si.rt);
                if (rc != MPI_SUCCESS) {
                    t_free(&si.st);
                    return mpi_fail(err, rc, "building a datatype");
                }
                last = n;
            }
            si.send = in + p * rowstride + c0 * elem;
            si.mine = si.send + (uint64_t)idx * cb;
            rd_reduce_n(dtype, op, out + p * cb + c0 * elem, n, s,
                        stream_input, &si);
        }
    t_free(&si.st);
    t_free(&si.rt);
    return si.rc == MPI_SUCCESS
               ? REDIST_OK
               : mpi_fail(err, si.rc, "MPI_Scatter (reduce_scatter)");
}

/* Streamed all-reduce of `count` elements; work holds `per` >= 1. */
static redist_status_t ar_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t count, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per,
                                 redist_error_t *err)
{
    stream_in si = {x, comm, idx, 1, NULL, NULL, work, MPI_DATATYPE_NULL,
                    MPI_DATATYPE_NULL, MPI_SUCCESS};
    x->streamed++;
    uint64_t last = 0;
    if (per > RD_REDUCE_BLOCK)
        per = RD_REDUCE_BLOCK;
    for (uint64_t e0 = 0; e0 < count && si.rc == MPI_SUCCESS; e0 += per) {
        uint64_t n = count - e0 < per ? count - e0 : per;
        if (n != last) {
            t_free(&si.rt);
            int rc = t_bytes(x->limit, n * elem, &si.rt);
            if (rc != MPI_SUCCESS)
                return mpi_fail(err, rc, "building a datatype");
            last = n;
        }
        si.mine = in + e0 * elem;
        rd_reduce_n(dtype, op, out + e0 * elem, n, s, stream_input, &si);
    }
    t_free(&si.rt);
    return si.rc == MPI_SUCCESS
               ? REDIST_OK
               : mpi_fail(err, si.rc, "MPI_Bcast (all_reduce)");
}

/* The work the ordered all-reduce needs (`good`) in place. */
static uint64_t ar_inplace_work(uint64_t s, uint64_t count, size_t elem)
{
    uint64_t q = count / s, r = count % s, w = q ? s * elem : 0;
    if (r && s * r * elem > w)
        w = s * r * elem;
    return w;
}

static redist_status_t ar_ordered(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                  int64_t idx, const char *in, char *out,
                                  uint64_t count, size_t elem,
                                  redist_dtype_t dtype, redist_reduce_t op,
                                  redist_error_t *err)
{
    uint64_t us = (uint64_t)s, q = count / us, r = count % us;
    int inplace = (const char *)out == in;
    redist_status_t st = REDIST_OK;
    work_ref w;
    int rc;
    /* the work buffer, if this all-reduce needs one; in place, the output
     * holds unsent input and cannot serve */
    uint64_t min = inplace ? ar_inplace_work(us, count, elem)
                           : ar_min_work(us, count, elem);
    st = work_get(x, min, min ? elem : 0, min ? us * (q > r ? q : r) * elem : 0,
                  &w, err);
    if (st)
        return st;
    if (w.bytes < min) {
        st = ar_stream(x, comm, s, idx, in, out, count, elem, dtype, op, w.p,
                       w.bytes / elem, err);
        work_put(x, &w);
        return st;
    }
    if (r) { /* the tail: everybody reduces all of it */
        char *region = q >= r && !inplace ? out : w.p;
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = t_bytes(x->limit, r * elem, &t);
        if (rc == MPI_SUCCESS)
            rc = allgather(x, comm, s, idx, in + us * q * elem, t, region, t,
                           r * elem, r * elem);
        t_free(&t);
        if (rc != MPI_SUCCESS) {
            work_put(x, &w);
            return mpi_fail(err, rc, "MPI_Allgather (all_reduce)");
        }
        strided_in si = {region, r * elem};
        rd_reduce_n(dtype, op, out + us * q * elem, r, s, strided_input, &si);
    }
    if (q) {
        uint64_t per_out = inplace ? 0 : ar_free_elems(us, q) / us;
        uint64_t per_work = w.bytes / (us * elem);
        char *region;
        uint64_t per;
        if (per_out >= 1 && per_out >= per_work) {
            /* the larger unwritten part of the output, before or after
             * this member's part (tail excluded) */
            uint64_t before = (uint64_t)idx * q;
            uint64_t after = (us - 1 - (uint64_t)idx) * q;
            region = before >= after ? out : out + ((uint64_t)idx + 1) * q *
                                                       elem;
            per = per_out;
        } else {
            region = w.p;
            per = per_work;
        }
        /* in place, this member's part of the output is its own chunk of
         * the input, whose pieces are sent before they are overwritten */
        st = rs_ordered(x, comm, s, in, out + (uint64_t)idx * q * elem, 1, q,
                        elem, dtype, op, region, per, err);
        if (!st) {
            MPI_Datatype t = MPI_DATATYPE_NULL;
            rc = t_bytes(x->limit, q * elem, &t);
            if (rc == MPI_SUCCESS)
                rc = allgather(x, comm, s, idx, NULL, MPI_DATATYPE_NULL, out,
                               t, q * elem, q * elem);
            t_free(&t);
            if (rc != MPI_SUCCESS)
                st = mpi_fail(err, rc, "MPI_Allgather (all_reduce)");
        }
    }
    work_put(x, &w);
    return st;
}

/* ------------------------------------------------- native reductions */

#define RD_UOP(NAME, DTYPE, OP)                                              \
    static void NAME(void *in, void *io, int *len, MPI_Datatype *dt)         \
    {                                                                        \
        int d = (DTYPE);                                                     \
        (void)dt;                                                            \
        if (d >= 0)                                                          \
            rd_reduce_pair((redist_dtype_t)d, OP, io, in, (uint64_t)*len);   \
    }

static int generic_dtype(const MPI_Datatype *dt)
{
    if (*dt == MPI_FLOAT)
        return REDIST_F32;
    if (*dt == MPI_DOUBLE)
        return REDIST_F64;
    if (*dt == MPI_C_FLOAT_COMPLEX)
        return REDIST_C64;
    if (*dt == MPI_C_DOUBLE_COMPLEX)
        return REDIST_C128;
    if (*dt == MPI_INT8_T)
        return REDIST_I8;
    if (*dt == MPI_UINT8_T)
        return REDIST_U8;
    if (*dt == MPI_INT16_T)
        return REDIST_I16;
    if (*dt == MPI_UINT16_T)
        return REDIST_U16;
    return -1;
}

RD_UOP(uop_f16_sum, REDIST_F16, REDIST_REDUCE_SUM)
RD_UOP(uop_f16_max, REDIST_F16, REDIST_REDUCE_MAX)
RD_UOP(uop_f16_min, REDIST_F16, REDIST_REDUCE_MIN)
RD_UOP(uop_f16_prod, REDIST_F16, REDIST_REDUCE_PROD)
RD_UOP(uop_bf16_sum, REDIST_BF16, REDIST_REDUCE_SUM)
RD_UOP(uop_bf16_max, REDIST_BF16, REDIST_REDUCE_MAX)
RD_UOP(uop_bf16_min, REDIST_BF16, REDIST_REDUCE_MIN)
RD_UOP(uop_bf16_prod, REDIST_BF16, REDIST_REDUCE_PROD)
RD_UOP(uop_gen_sum, generic_dtype(dt), REDIST_REDUCE_SUM)
RD_UOP(uop_gen_max, generic_dtype(dt), REDIST_REDUCE_MAX)
RD_UOP(uop_gen_min, generic_dtype(dt), REDIST_REDUCE_MIN)
RD_UOP(uop_gen_prod, generic_dtype(dt), REDIST_REDUCE_PROD)

static MPI_User_function *const uop_fns[UOP_KINDS][REDIST_REDUCE_COUNT] = {
    {uop_f16_sum, uop_f16_max, uop_f16_min, uop_f16_prod},
    {uop_bf16_sum, uop_bf16_max, uop_bf16_min, uop_bf16_prod},
    {uop_gen_sum, uop_gen_max, uop_gen_min, uop_gen_prod},
};

static MPI_Datatype native_type(redist_dtype_t d)
{
    switch (d) {
    case REDIST_F16:
    case REDIST_BF16: return MPI_UINT16_T;
    case REDIST_F32: return MPI_FLOAT;
    case REDIST_F64: return MPI_DOUBLE;
    case REDIST_I8: return MPI_INT8_T;
    case REDIST_I16: return MPI_INT16_T;
    case REDIST_I32: return MPI_INT32_T;
    case REDIST_I64: return MPI_INT64_T;
    case REDIST_U8: return MPI_UINT8_T;
    case REDIST_U16: return MPI_UINT16_T;
    case REDIST_U32: return MPI_UINT32_T;
    case REDIST_U64: return MPI_UINT64_T;
    case REDIST_C64: return MPI_C_FLOAT_COMPLEX;
    case REDIST_C128: return MPI_C_DOUBLE_COMPLEX;
    default: return MPI_DATATYPE_NULL;
    }
}

/* The MPI op computing the kernels' function: predefined where MPI's is
 * the same (floating sum and product, complex sum, integers), else
 * user-defined on the kernels.  Not MPI_SUM on 8- and 16-bit integers:
 * Open MPI 4.1's op/avx component saturates them on vector lengths
 * (int8 100 + 100 = 127) where C, the kernels and the sim wrap (-56). */
static MPI_Op native_op(const redist_mpi_t *x, redist_dtype_t d,
                        redist_reduce_t op)
{
    MPI_Op builtin = op == REDIST_REDUCE_SUM   ? MPI_SUM
                     : op == REDIST_REDUCE_MAX ? MPI_MAX
                     : op == REDIST_REDUCE_MIN ? MPI_MIN
                                               : MPI_PROD;
    switch (d) {
    case REDIST_F16: return x->uop[UOP_F16][op];
    case REDIST_BF16: return x->uop[UOP_BF16][op];
    case REDIST_F32:
    case REDIST_F64:
        return op == REDIST_REDUCE_SUM || op == REDIST_REDUCE_PROD
                   ? builtin
                   : x->uop[UOP_GEN][op];
    case REDIST_C64:
    case REDIST_C128:
        return op == REDIST_REDUCE_SUM ? builtin : x->uop[UOP_GEN][op];
    case REDIST_I8:
    case REDIST_U8:
    case REDIST_I16:
    case REDIST_U16:
        return op == REDIST_REDUCE_SUM ? x->uop[UOP_GEN][op] : builtin;
    default: return builtin;
    }
}

/* ----------------------------------------------------------- the ops */

static MPI_Comm group_comm(redist_mpi_t *x, const rd_group *g,
                           redist_error_t *err, redist_status_t *st)
{
    if (g->axis < 0 || g->axis >= x->naxes ||
        g->size != x->axis_size[g->axis]) {
        *st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                       "mpi: the plan's mesh is not the context's (a group "
                       "of %lld devices on axis %d)",
                       (long long)g->size, g->axis);
        return MPI_COMM_NULL;
    }
    *st = REDIST_OK;
    return x->axis[g->axis];
}

static redist_status_t xchg_bytes(redist_mpi_t *x, MPI_Comm comm,
                                  const rd_group *g, int gather,
                                  const void *send, void *recv,
                                  uint64_t bytes, redist_error_t *err)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = t_bytes(x->limit, bytes, &t);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "building a datatype");
    if (gather) {
        rc = allgather(x, comm, g->size, g->index, send, t, recv, t, bytes,
                       bytes);
    } else {
        rc = MPI_Alltoall(send, 1, t, recv, 1, t, comm);
        x->exchanges++;
    }
    t_free(&t);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, gather ? "MPI_Allgather" : "MPI_Alltoall");
    return REDIST_OK;
}

/* In place: member `idx`'s `bytes` at the start of buf, the gathered
 * [s][bytes] over all of it: move this member's block to its slot, then
 * an in-place MPI_Allgather. */
static redist_status_t gather_inplace(redist_mpi_t *x, MPI_Comm comm,
                                      int64_t s, int64_t idx, char *buf,
                                      uint64_t bytes, redist_error_t *err)
{
    if (idx)
        memmove(buf + (uint64_t)idx * bytes, buf, (size_t)bytes);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = t_bytes(x->limit, bytes, &t);
    if (rc == MPI_SUCCESS)
        rc = allgather(x, comm, s, idx, NULL, MPI_DATATYPE_NULL, buf, t,
                       bytes, bytes);
    t_free(&t);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : mpi_fail(err, rc, "MPI_Allgather (in place)");
}

/* Swap `bytes` at `mine` with the peer's (the peer does the same), through
 * work space in rounds: copy a piece out, MPI_Sendrecv it, receiving the
 * peer's piece in its place.  Both sides see the same work size. */
static redist_status_t swap_rounds(redist_mpi_t *x, MPI_Comm comm, int to,
                                   int from, char *mine, uint64_t bytes,
                                   const work_ref *w, redist_error_t *err)
{
    int rc = MPI_SUCCESS;
    uint64_t last = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    x->swaps++;
    for (uint64_t off = 0; off < bytes && rc == MPI_SUCCESS; off += w->bytes) {
        uint64_t n = bytes - off < w->bytes ? bytes - off : w->bytes;
        if (n != last) {
            t_free(&t);
            rc = t_bytes(x->limit, n, &t);
            if (rc != MPI_SUCCESS)
                break;
            last = n;
        }
        memcpy(w->p, mine + off, (size_t)n);
        rc = MPI_Sendrecv(w->p, 1, t, to, RD_MPI_TAG, mine + off, 1, t, from,
                          RD_MPI_TAG, comm, MPI_STATUS_IGNORE);
        x->exchanges++;
    }
    t_free(&t);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : mpi_fail(err, rc, "MPI_Sendrecv (in place)");
}

/* The piece a swap moves per round: what it wants, what it can live with */
#define RD_SWAP_GOOD (1ULL << 20)

/* In place all-to-all of s contiguous chunks of `bytes`: in round t,
 * members idx and (t - idx) mod s swap the chunks they hold for each
 * other (their slots have the same index on both sides). */
static redist_status_t alltoall_inplace(redist_mpi_t *x, MPI_Comm comm,
                                        int64_t s, int64_t idx, char *buf,
                                        uint64_t bytes, redist_error_t *err)
{
    work_ref w;
    redist_status_t st = work_get(
        x, bytes < RD_SWAP_GOOD ? bytes : RD_SWAP_GOOD, 1, bytes, &w, err);
    if (st)
        return st;
    for (int64_t t = 0; t < s && !st; t++) {
        int64_t p = ((t - idx) % s + s) % s;
        if (p != idx)
            st = swap_rounds(x, comm, (int)p, (int)p,
                             buf + (uint64_t)p * bytes, bytes, &w, err);
    }
    work_put(x, &w);
    return st;
}

/* all_gather (gather = 1) and all_to_all of contiguous chunks: one MPI
 * call, or the in-place form when recv == send. */
static redist_status_t contig_step(redist_backend_t *be, const rd_group *g,
                                   const void *send, void *recv,
                                   uint64_t bytes, int gather,
                                   redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    redist_status_t st;
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    if (g->size == 1) {
        if (recv != send)
            memcpy(recv, send, (size_t)bytes);
        x->exchanges++;
        return REDIST_OK;
    }
    if (recv == send)
        return gather ? gather_inplace(x, c, g->size, g->index, recv, bytes,
                                       err)
                      : alltoall_inplace(x, c, g->size, g->index, recv,
                                         bytes, err);
    return xchg_bytes(x, c, g, gather, send, recv, bytes, err);
}

static redist_status_t mpi_all_gather(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t bytes, redist_error_t *err)
{
    return contig_step(be, g, send, recv, bytes, 1, err);
}

static redist_status_t mpi_all_to_all(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t bytes, redist_error_t *err)
{
    return contig_step(be, g, send, recv, bytes, 0, err);
}

static int native_ok(const redist_mpi_t *x, uint64_t count)
{
    return (x->opts.flags & REDIST_MPI_NATIVE_REDUCE) && count <= x->limit;
}

/* Reduce-scatter of pre rows of s chunks: ordered with s elements of
 * work or more, else streamed.  In place (out == in) the output of row p
 * lands on input already sent: rows before p, or chunk 0 of row 0. */
static redist_status_t rs_with_work(redist_mpi_t *x, MPI_Comm c, int64_t s,
                                    int64_t idx, const char *in, char *out,
                                    uint64_t pre, uint64_t chunk, size_t elem,
                                    redist_dtype_t dtype, redist_reduce_t op,
                                    redist_error_t *err)
{
    work_ref w;
    uint64_t us = (uint64_t)s;
    redist_status_t st = work_get(x, us * elem, elem,
                                  us * pre * chunk * elem, &w, err);
    if (st)
        return st;
    if (w.bytes >= us * elem)
        st = rs_ordered(x, c, s, in, out, pre, chunk, elem, dtype, op, w.p,
                        w.bytes / (us * elem), err);
    else
        st = rs_stream(x, c, s, idx, in, out, pre, chunk, elem, dtype, op,
                       w.p, w.bytes / elem, err);
    work_put(x, &w);
    return st;
}

static redist_status_t mpi_reduce_scatter(redist_backend_t *be,
                                          const rd_group *g, const void *send,
                                          void *recv, uint64_t count,
                                          redist_dtype_t dtype,
                                          redist_reduce_t op,
                                          redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    redist_status_t st;
    size_t elem = redist_dtype_size(dtype);
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    if (g->size == 1) {
        reduce_one(dtype, op, recv, send, count);
        x->exchanges++;
        return REDIST_OK;
    }
    if (native_ok(x, count)) {
        int rc = MPI_Reduce_scatter_block(send == recv ? MPI_IN_PLACE : send,
                                          recv, (int)count,
                                          native_type(dtype),
                                          native_op(x, dtype, op), c);
        x->exchanges++;
        return rc == MPI_SUCCESS
                   ? REDIST_OK
                   : mpi_fail(err, rc, "MPI_Reduce_scatter_block");
    }
    return rs_with_work(x, c, g->size, g->index, send, recv, 1, count, elem,
                        dtype, op, err);
}

static redist_status_t mpi_all_reduce(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t count, redist_dtype_t dtype,
                                      redist_reduce_t op, redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    redist_status_t st;
    size_t elem = redist_dtype_size(dtype);
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    if (g->size == 1) {
        reduce_one(dtype, op, recv, send, count);
        x->exchanges++;
        return REDIST_OK;
    }
    if (x->opts.flags & REDIST_MPI_NATIVE_REDUCE) {
        for (uint64_t off = 0; off < count; off += x->limit) {
            uint64_t n = count - off < x->limit ? count - off : x->limit;
            int rc = MPI_Allreduce(send == recv
                                       ? MPI_IN_PLACE
                                       : (const char *)send + off * elem,
                                   (char *)recv + off * elem, (int)n,
                                   native_type(dtype),
                                   native_op(x, dtype, op), c);
            x->exchanges++;
            if (rc != MPI_SUCCESS)
                return mpi_fail(err, rc, "MPI_Allreduce");
        }
        return REDIST_OK;
    }
    return ar_ordered(x, c, g->size, g->index, send, recv, count, elem, dtype,
                      op, err);
}

static redist_status_t mpi_permute(redist_backend_t *be, const void *send,
                                   int64_t to, void *recv, int64_t from,
                                   uint64_t bytes, redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    if (to == x->rank && from == x->rank) {
        x->exchanges++;
        if (recv != send)
            memcpy(recv, send, (size_t)bytes);
        return REDIST_OK;
    }
    if (to < 0 || to >= x->size || from < 0 || from >= x->size)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: permute peer out of range");
    if (recv == send) { /* in place, through work space in rounds */
        work_ref w;
        redist_status_t st = work_get(
            x, bytes < RD_SWAP_GOOD ? bytes : RD_SWAP_GOOD, 1, bytes, &w, err);
        if (!st)
            st = swap_rounds(x, x->comm, (int)to, (int)from, recv, bytes, &w,
                             err);
        work_put(x, &w);
        return st;
    }
    x->exchanges++;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = t_bytes(x->limit, bytes, &t);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "building a datatype");
    rc = MPI_Sendrecv(send, 1, t, (int)to, RD_MPI_TAG, recv, 1, t, (int)from,
                      RD_MPI_TAG, x->comm, MPI_STATUS_IGNORE);
    t_free(&t);
    return rc == MPI_SUCCESS ? REDIST_OK : mpi_fail(err, rc, "MPI_Sendrecv");
}

/* Point-to-point pieces: receives posted first, then sends, then one
 * wait.  Lists are sorted by peer, each peer at most once. */
static redist_status_t mpi_exchange(redist_backend_t *be, const void *send,
                                    int64_t nto, const rd_xfer *to,
                                    void *recv, int64_t nfrom,
                                    const rd_xfer *from, redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    int n = 0, rc = MPI_SUCCESS;
    const char *call = "MPI_Irecv";
    x->exchanges++;
    if (nto > x->size || nfrom > x->size)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: exchange with more peers than ranks");
    for (int64_t k = 0; k < nfrom && rc == MPI_SUCCESS; k++) {
        if (from[k].peer == x->rank || from[k].bytes == 0)
            continue;
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = t_bytes(x->limit, from[k].bytes, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv((char *)recv + from[k].off, 1, t,
                           (int)from[k].peer, RD_MPI_TAG_XCHG, x->comm,
                           &x->reqs[n++]);
        t_free(&t); /* a pending operation keeps its own reference */
    }
    for (int64_t k = 0; k < nto && rc == MPI_SUCCESS; k++) {
        if (to[k].bytes == 0)
            continue;
        if (to[k].peer == x->rank) { /* the piece this rank keeps */
            for (int64_t j = 0; j < nfrom; j++)
                if (from[j].peer == x->rank)
                    memcpy((char *)recv + from[j].off,
                           (const char *)send + to[k].off,
                           (size_t)to[k].bytes);
            continue;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        call = "MPI_Isend";
        rc = t_bytes(x->limit, to[k].bytes, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend((const char *)send + to[k].off, 1, t,
                           (int)to[k].peer, RD_MPI_TAG_XCHG, x->comm,
                           &x->reqs[n++]);
        t_free(&t);
    }
    int wrc = n ? MPI_Waitall(n, x->reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, call);
    return wrc == MPI_SUCCESS ? REDIST_OK : mpi_fail(err, wrc, "MPI_Waitall");
}

static uint64_t prod_range(const int64_t *shape, int lo, int hi)
{
    uint64_t p = 1;
    for (int d = lo; d < hi; d++)
        p *= (uint64_t)shape[d];
    return p;
}

/* The box `box` (elements) at the start of a row-major block of shape
 * `shape`: nested (h)vectors of its rows; committed. */
static int t_box(uint64_t lim, int nd, const int64_t shape[],
                 const int64_t box[], size_t elem, MPI_Datatype *out)
{
    MPI_Datatype cur = MPI_DATATYPE_NULL;
    *out = MPI_DATATYPE_NULL;
    if (nd == 0) /* a 0-dim block: one element */
        return t_bytes(lim, elem, out);
    uint64_t run = (uint64_t)box[nd - 1] * elem;
    int rc = t_rep(lim, run, 1, MPI_BYTE, 1, &cur);
    MPI_Aint ext = (MPI_Aint)run, stride = (MPI_Aint)((uint64_t)shape[nd - 1] *
                                                     elem);
    for (int d = nd - 2; d >= 0 && rc == MPI_SUCCESS; d--) {
        MPI_Datatype next = MPI_DATATYPE_NULL;
        rc = t_rep(lim, (uint64_t)box[d], stride, cur, ext, &next);
        t_free(&cur);
        cur = next;
        ext = (MPI_Aint)(box[d] - 1) * stride + ext;
        stride *= (MPI_Aint)shape[d];
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&cur);
    if (rc != MPI_SUCCESS)
        t_free(&cur);
    else
        *out = cur;
    return rc;
}

static uint64_t box_offset(int nd, const int64_t shape[], const int64_t off[],
                           size_t elem)
{
    uint64_t o = 0;
    for (int d = 0; d < nd; d++)
        o = o * (uint64_t)shape[d] + (uint64_t)off[d];
    return o * elem;
}

/* A whole exchange step: every box straight from the source block to its
 * place in the receiver's block, one (h)vector datatype per peer and
 * direction, receives posted first; this rank's own box with the box
 * kernel.  No pack, no unpack. */
static redist_status_t xchg_step(redist_mpi_t *x, const rd_xstep *xs,
                                 const char *in, char *out,
                                 redist_error_t *err)
{
    const rd_xchg *xc = xs->xchg;
    int nd = xs->ndims, n = 0, rc = MPI_SUCCESS;
    size_t elem = xs->elem;
    int64_t me = x->rank, box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS],
            ob[REDIST_MAX_DIMS];
    const char *call = "MPI_Irecv";
    x->exchanges++;
    if (xc->nsend > x->size || xc->nrecv > x->size)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: exchange with more peers than ranks");
    for (int64_t k = 0; k < xc->nrecv && rc == MPI_SUCCESS; k++) {
        int64_t p = xc->recv[k].peer;
        if (p == me || !rd_xchg_box(xc, p, me, box, oa, ob))
            continue;
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = t_box(x->limit, nd, xs->out_shape, box, elem, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv(out + box_offset(nd, xs->out_shape, ob, elem), 1, t,
                           (int)p, RD_MPI_TAG_XCHG, x->comm, &x->reqs[n++]);
        t_free(&t); /* a pending operation keeps its own reference */
    }
    for (int64_t k = 0; k < xc->nsend && rc == MPI_SUCCESS; k++) {
        int64_t p = xc->send[k].peer;
        if (!rd_xchg_box(xc, me, p, box, oa, ob))
            continue;
        if (p == me) {
            rd_kernel_box(out, xs->out_shape, ob, in, xs->in_shape, oa, box,
                          nd, elem);
            continue;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        call = "MPI_Isend";
        rc = t_box(x->limit, nd, xs->in_shape, box, elem, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(in + box_offset(nd, xs->in_shape, oa, elem), 1, t,
                           (int)p, RD_MPI_TAG_XCHG, x->comm, &x->reqs[n++]);
        t_free(&t);
    }
    int wrc = n ? MPI_Waitall(n, x->reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, call);
    return wrc == MPI_SUCCESS ? REDIST_OK : mpi_fail(err, wrc, "MPI_Waitall");
}

/* Whole steps with derived datatypes, straight into the final places. */
static redist_status_t mpi_step(redist_backend_t *be, const rd_xstep *xs,
                                const void *in, void *out,
                                redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    if (xs->op == REDIST_OP_EXCHANGE) /* point to point, any peers */
        return xchg_step(x, xs, in, out, err);
    const rd_group *g = &xs->group;
    redist_status_t st;
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    int nd = xs->ndims;
    uint64_t s = (uint64_t)g->size, elem = xs->elem;
    uint64_t L = prod_range(xs->in_shape, 0, nd) * elem;
    if (s == 1 && xs->op != REDIST_OP_REDUCE_SCATTER) {
        if (out != in)
            memcpy(out, in, (size_t)L);
        x->exchanges++;
        return REDIST_OK;
    }
    /* in place (mpi_inplace_need): contiguous slots only */
    if (out == in && xs->op == REDIST_OP_ALL_GATHER)
        return gather_inplace(x, c, g->size, g->index, out, L, err);
    if (out == in && xs->op == REDIST_OP_ALL_TO_ALL)
        return alltoall_inplace(x, c, g->size, g->index, out, L / s, err);
    MPI_Datatype stype = MPI_DATATYPE_NULL, rtype = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS;
    const char *call = "";
    switch (xs->op) {
    case REDIST_OP_ALL_GATHER: {
        int i = xs->dim;
        uint64_t pre = prod_range(xs->in_shape, 0, i);
        uint64_t cb = prod_range(xs->in_shape, i, nd) * elem;
        rc = t_bytes(x->limit, L, &stype);
        if (rc == MPI_SUCCESS)
            rc = t_blocks(x->limit, pre, cb, s * cb, cb, &rtype);
        if (rc == MPI_SUCCESS) {
            call = "MPI_Allgather";
            rc = allgather(x, c, g->size, g->index, in, stype, out, rtype, cb,
                           L);
        }
        break;
    }
    case REDIST_OP_ALL_TO_ALL: {
        int i = xs->from_dim, j = xs->to_dim;
        uint64_t preJ = prod_range(xs->in_shape, 0, j);
        uint64_t cbJ = (uint64_t)xs->in_shape[j] / s *
                       prod_range(xs->in_shape, j + 1, nd) * elem;
        uint64_t preI = prod_range(xs->out_shape, 0, i);
        uint64_t cbI = (uint64_t)xs->in_shape[i] *
                       prod_range(xs->out_shape, i + 1, nd) * elem;
        rc = t_blocks(x->limit, preJ, cbJ, s * cbJ, cbJ, &stype);
        if (rc == MPI_SUCCESS)
            rc = t_blocks(x->limit, preI, cbI, s * cbI, cbI, &rtype);
        if (rc == MPI_SUCCESS) {
            call = "MPI_Alltoall";
            rc = MPI_Alltoall(in, 1, stype, out, 1, rtype, c);
            x->exchanges++;
        }
        break;
    }
    case REDIST_OP_REDUCE_SCATTER: {
        int i = xs->dim;
        uint64_t pre = prod_range(xs->in_shape, 0, i);
        uint64_t chunk = (uint64_t)xs->in_shape[i] / s *
                         prod_range(xs->in_shape, i + 1, nd);
        if (s == 1) {
            reduce_one(xs->dtype, xs->reduce, out, in, L / elem);
            x->exchanges++;
            return REDIST_OK;
        }
        return rs_with_work(x, c, g->size, g->index, in, out, pre, chunk,
                            elem, xs->dtype, xs->reduce, err);
    }
    default:
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "mpi: no whole-step form of %s",
                        redist_op_name(xs->op));
    }
    t_free(&stype);
    t_free(&rtype);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, call[0] ? call : "building a datatype");
    return REDIST_OK;
}

/* Which passes run in place (RD_BUILD_INPLACE, chosen by mpi_info when
 * max_scratch is below what the passes need otherwise), and the spare
 * bytes they then need at least: reductions one element (streamed),
 * swaps one byte (rounds), gathers none. */
static uint64_t mpi_inplace_need(const redist_backend_t *be,
                                 const rd_xstep *xs, int fused,
                                 uint64_t in_bytes)
{
    const redist_mpi_t *x = be->ctx;
    uint64_t s = (uint64_t)xs->group.size;
    switch (xs->op) {
    case REDIST_OP_ALL_GATHER:
        return fused && prod_range(xs->in_shape, 0, xs->dim) > 1 ? UINT64_MAX
                                                                  : 0;
    case REDIST_OP_ALL_TO_ALL:
        if (fused && (prod_range(xs->in_shape, 0, xs->to_dim) > 1 ||
                      prod_range(xs->out_shape, 0, xs->from_dim) > 1))
            return UINT64_MAX;
        return 1;
    case REDIST_OP_REDUCE_SCATTER:
        return !fused && native_ok(x, in_bytes / s / xs->elem) ? 0 : xs->elem;
    case REDIST_OP_ALL_REDUCE:
        return x->opts.flags & REDIST_MPI_NATIVE_REDUCE ? 0 : xs->elem;
    case REDIST_OP_PERMUTE:
        return 1;
    default:
        return UINT64_MAX;
    }
}

static const rd_backend_ops mpi_ops_template = {
    .name = "mpi",
    .agree = mpi_agree,
    .all_gather = mpi_all_gather,
    .all_to_all = mpi_all_to_all,
    .reduce_scatter = mpi_reduce_scatter,
    .all_reduce = mpi_all_reduce,
    .permute = mpi_permute,
    .exchange = mpi_exchange,
    .step = mpi_step,
    .alloc = mpi_alloc,
    .free = mpi_free_scratch,
    .inplace_ops = 1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |
                   1u << REDIST_OP_REDUCE_SCATTER |
                   1u << REDIST_OP_ALL_REDUCE | 1u << REDIST_OP_PERMUTE,
    .inplace_need = mpi_inplace_need,
};

static unsigned fused_ops_for(unsigned flags)
{
    if (flags & REDIST_MPI_PACKED)
        return 0;
    unsigned f = 1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |
                 1u << REDIST_OP_EXCHANGE;
    if (!(flags & REDIST_MPI_NATIVE_REDUCE))
        f |= 1u << REDIST_OP_REDUCE_SCATTER;
    return f;
}

/* --------------------------------------------------------- contexts */

static const unsigned known_mpi_flags =
    REDIST_MPI_PACKED | REDIST_MPI_NATIVE_REDUCE;

static void format_mesh(const redist_mesh_t *m, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        rd_appendf(buf, size, &pos, "%s%s=%lld", a ? "," : "",
                   redist_mesh_axis_name(m, a),
                   (long long)redist_mesh_axis_size(m, a));
}

static void free_comms(redist_mpi_t *x)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        if (x->axis[a] != MPI_COMM_NULL)
            MPI_Comm_free(&x->axis[a]);
    if (x->comm != MPI_COMM_NULL)
        MPI_Comm_free(&x->comm);
    x->comm = MPI_COMM_NULL;
    if (x->have_uops)
        for (int k = 0; k < UOP_KINDS; k++)
            for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
                if (x->uop[k][o] != MPI_OP_NULL)
                    MPI_Op_free(&x->uop[k][o]);
}

redist_status_t redist_mpi_create(MPI_Comm comm, const redist_mesh_t *mesh,
                                  const redist_mpi_options_t *opts,
                                  redist_mpi_t **out, redist_error_t *err)
{
    int init = 0, fin = 0, size = 0, rank = 0, rc;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: MPI is not initialised (or already "
                        "finalised)");
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    if (comm == MPI_COMM_NULL)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "comm",
                        "MPI_COMM_NULL communicator");
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Comm_size");

    /* local checks, then agree over comm before any collective call */
    redist_status_t st = REDIST_OK;
    redist_mpi_options_t o = {0, 0};
    if (opts)
        o = *opts;
    uint64_t h = 0xcbf29ce484222325ULL;
    redist_mpi_t *x = x_malloc(sizeof *x);
    if (x) {
        memset(x, 0, sizeof *x);
        x->reqs = x_malloc(2 * (size_t)size * sizeof *x->reqs);
    }
    if (!x || !x->reqs)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (!mesh)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh", "NULL mesh");
    else if (o.flags & ~known_mpi_flags)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "unknown MPI backend flags 0x%x",
                      o.flags & ~known_mpi_flags);
    else if (redist_mesh_num_devices(mesh) != size) {
        char m[256];
        format_mesh(mesh, m, sizeof m);
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "comm",
                      "the communicator has %d rank%s but the mesh (%s) has "
                      "%lld devices: run with %lld ranks",
                      size, size == 1 ? "" : "s", m,
                      (long long)redist_mesh_num_devices(mesh),
                      (long long)redist_mesh_num_devices(mesh));
    }
    if (mesh) {
        h = fnv_u64(h, (uint64_t)redist_mesh_num_axes(mesh));
        for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
            h = fnv_u64(h, (uint64_t)redist_mesh_axis_size(mesh, a));
    }
    h = fnv_u64(h, o.flags);
    h = fnv_u64(h, o.max_scratch);
    st = agree_comm(comm, rank, st, h,
                    "the ranks passed different meshes or options", err);
    if (st) {
        if (x)
            free(x->reqs);
        free(x);
        return st;
    }

    x->comm = MPI_COMM_NULL;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        x->axis[a] = MPI_COMM_NULL;
    for (int k = 0; k < UOP_KINDS; k++)
        for (int p = 0; p < REDIST_REDUCE_COUNT; p++)
            x->uop[k][p] = MPI_OP_NULL;
    x->rank = rank;
    x->size = size;
    x->naxes = redist_mesh_num_axes(mesh);
    x->opts = o;
    x->limit = INT_MAX;
    x->ring_bytes = RD_MPI_RING_BYTES;
    const char *call = "MPI_Comm_dup";
    rc = MPI_Comm_dup(comm, &x->comm);
    if (rc == MPI_SUCCESS) {
        call = "MPI_Comm_set_errhandler";
        rc = MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
    }
    int64_t stride = size;
    for (int a = 0; a < x->naxes && rc == MPI_SUCCESS; a++) {
        int64_t n = redist_mesh_axis_size(mesh, a);
        stride /= n;
        int64_t coord = rank / stride % n;
        x->axis_size[a] = n;
        call = "MPI_Comm_split";
        rc = MPI_Comm_split(x->comm, (int)(rank - coord * stride),
                            (int)coord, &x->axis[a]);
    }
    for (int k = 0; k < UOP_KINDS && rc == MPI_SUCCESS; k++)
        for (int p = 0; p < REDIST_REDUCE_COUNT && rc == MPI_SUCCESS; p++) {
            call = "MPI_Op_create";
            rc = MPI_Op_create(uop_fns[k][p], 1, &x->uop[k][p]);
        }
    x->have_uops = 1;
    if (rc != MPI_SUCCESS) {
        st = mpi_fail(err, rc, call);
        free_comms(x);
        free(x->reqs);
        free(x);
        return st;
    }
    x->ops = mpi_ops_template;
    x->ops.fused_ops = fused_ops_for(o.flags);
    x->be.ops = &x->ops;
    x->be.ctx = x;
    x->be.rank = rank;
    x->be.size = size;
    *out = x;
    return REDIST_OK;
}

void redist_mpi_free(redist_mpi_t *x)
{
    if (!x)
        return;
    free_comms(x);
    free(x->work);
    free(x->reqs);
    free(x);
}

redist_status_t redist_mpi_set_options(redist_mpi_t *x,
                                       const redist_mpi_options_t *opts,
                                       redist_error_t *err)
{
    redist_mpi_options_t o = {0, 0};
    if (!x)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL context");
    if (opts)
        o = *opts;
    if (o.flags & ~known_mpi_flags)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown MPI backend flags 0x%x",
                        o.flags & ~known_mpi_flags);
    x->opts = o;
    x->ops.fused_ops = fused_ops_for(o.flags);
    return REDIST_OK;
}

redist_mpi_options_t redist_mpi_get_options(const redist_mpi_t *x)
{
    redist_mpi_options_t o = {0, 0};
    return x ? x->opts : o;
}

redist_backend_t *redist_mpi_backend(redist_mpi_t *x)
{
    return x ? &x->be : NULL;
}

MPI_Comm redist_mpi_comm(const redist_mpi_t *x)
{
    return x ? x->comm : MPI_COMM_NULL;
}

MPI_Comm redist_mpi_axis_comm(const redist_mpi_t *x, int axis)
{
    return x && axis >= 0 && axis < x->naxes ? x->axis[axis] : MPI_COMM_NULL;
}

int redist_mpi_rank(const redist_mpi_t *x) { return x ? x->rank : -1; }
int redist_mpi_size(const redist_mpi_t *x) { return x ? x->size : 0; }

void rd_mpi_set_ring_bytes(redist_mpi_t *x, uint64_t bytes)
{
    if (x)
        x->ring_bytes = bytes;
}

void rd_mpi_set_count_limit(redist_mpi_t *x, uint64_t limit)
{
    if (x)
        x->limit = limit == 0 || limit > INT_MAX ? INT_MAX
                   : limit < 2                  ? 2
                                                : limit;
}

int64_t rd_mpi_last_exchanges(const redist_mpi_t *x)
{
    return x ? x->exchanges : 0;
}

int64_t rd_mpi_last_streamed(const redist_mpi_t *x)
{
    return x ? x->streamed : 0;
}

int64_t rd_mpi_last_swaps(const redist_mpi_t *x)
{
    return x ? x->swaps : 0;
}

int64_t rd_mpi_last_rings(const redist_mpi_t *x)
{
    return x ? x->rings : 0;
}

/* ------------------------------------------------- planning the work */

/* What one backend pass of the program needs as work space: `good` for
 * its fast algorithm, `least` for its slowest (streamed reductions, swaps
 * in rounds), `want` the most it can use; all 0 when it needs none. */
typedef struct pass_need {
    uint64_t good, least, want;
} pass_need;

static pass_need need_of(const redist_mpi_t *x, const rd_pass *ps)
{
    pass_need n = {0, 0, 0};
    const rd_xstep *xs = &ps->x;
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    int inplace = ps->in_buf == ps->out_buf;
    if (ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED)
        return n;
    switch (xs->op) {
    case REDIST_OP_REDUCE_SCATTER:
        if (s > 1 && (ps->kind == RD_PASS_FUSED ||
                      !native_ok(x, ps->in_bytes / s / elem))) {
            n.good = s * elem;
            n.least = elem;
            n.want = ps->in_bytes;
        }
        break;
    case REDIST_OP_ALL_REDUCE:
        if (s > 1 && !(x->opts.flags & REDIST_MPI_NATIVE_REDUCE)) {
            uint64_t count = ps->in_bytes / elem, q = count / s,
                     r = count % s;
            n.good = inplace ? ar_inplace_work(s, count, elem)
                             : ar_min_work(s, count, elem);
            n.least = n.good ? elem : 0;
            n.want = n.good ? s * (q > r ? q : r) * elem : 0;
        }
        break;
    case REDIST_OP_ALL_TO_ALL:
    case REDIST_OP_PERMUTE:
        if (inplace && (s > 1 || xs->op == REDIST_OP_PERMUTE)) {
            uint64_t piece = xs->op == REDIST_OP_PERMUTE ? ps->in_bytes
                                                          : ps->in_bytes / s;
            n.want = piece;
            n.good = piece < RD_SWAP_GOOD ? piece : RD_SWAP_GOOD;
            n.least = piece ? 1 : 0;
        }
        break;
    default:
        break;
    }
    return n;
}

/* MPI calls of a pass run with `w` bytes of work space. */
static int64_t pass_exchanges(const redist_mpi_t *x, const rd_pass *ps,
                              uint64_t w)
{
    const rd_xstep *xs = &ps->x;
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    int nd = xs->ndims;
    pass_need n = need_of(x, ps);
    if (ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED)
        return 0;
    if (!n.good && !n.least) {
        if (xs->op == REDIST_OP_ALL_REDUCE && s > 1 &&
            (x->opts.flags & REDIST_MPI_NATIVE_REDUCE))
            return (int64_t)div_up(ps->in_bytes / elem, x->limit);
        if (xs->op == REDIST_OP_ALL_REDUCE && s > 1)
            return ar_exchanges(s, ps->in_bytes / elem, elem, w,
                                ps->in_buf == ps->out_buf);
        return 1;
    }
    switch (xs->op) {
    case REDIST_OP_REDUCE_SCATTER: {
        uint64_t pre = 1, chunk = ps->in_bytes / s / elem;
        if (ps->kind == RD_PASS_FUSED) {
            pre = prod_range(xs->in_shape, 0, xs->dim);
            chunk = (uint64_t)xs->in_shape[xs->dim] / s *
                    prod_range(xs->in_shape, xs->dim + 1, nd);
        }
        if (w >= n.good)
            return rs_rounds(pre, chunk, w / (s * elem));
        uint64_t per = w / elem < RD_REDUCE_BLOCK ? w / elem : RD_REDUCE_BLOCK;
        return (int64_t)(s * pre * div_up(chunk, per ? per : 1));
    }
    case REDIST_OP_ALL_REDUCE: {
        uint64_t count = ps->in_bytes / elem;
        if (w >= n.good)
            return ar_exchanges(s, count, elem, w,
                                ps->in_buf == ps->out_buf);
        uint64_t per = w / elem < RD_REDUCE_BLOCK ? w / elem : RD_REDUCE_BLOCK;
        return (int64_t)(s * div_up(count, per ? per : 1));
    }
    default: { /* in-place swaps (a device keeping its block: a no-op) */
        uint64_t piece = n.want, rounds = w ? div_up(piece, w) : 0;
        if (xs->op == REDIST_OP_PERMUTE && xs->send_to == x->rank &&
            xs->recv_from == x->rank)
            return 1;
        return (int64_t)(xs->op == REDIST_OP_PERMUTE ? rounds
                                                     : (s - 1) * rounds);
    }
    }
}

/* The work buffer for a program: the least (each pass's spare region
 * covers the rest), the most useful, and the exchanges with `work`. */
typedef struct work_plan {
    uint64_t min, want;
    int64_t exchanges;
} work_plan;

static void plan_work(const redist_mpi_t *x, const rd_program *p,
                      uint64_t work, work_plan *wp)
{
    memset(wp, 0, sizeof *wp);
    for (int k = 0; k < p->npasses; k++) {
        const rd_pass *ps = &p->pass[k];
        pass_need n = need_of(x, ps);
        uint64_t sp = ps->spare_bytes;
        if (sp < n.least && n.least > wp->min)
            wp->min = n.least;
        if (sp < n.good && n.want > wp->want)
            wp->want = n.want;
        wp->exchanges += pass_exchanges(x, ps, sp > work ? sp : work);
    }
}

static redist_status_t check_mesh(const redist_mpi_t *x,
                                  const redist_plan_t *plan,
                                  redist_error_t *err)
{
    const redist_mesh_t *m = redist_spec_mesh(redist_plan_spec(plan));
    int same = redist_mesh_num_axes(m) == x->naxes;
    for (int a = 0; same && a < x->naxes; a++)
        same = redist_mesh_axis_size(m, a) == x->axis_size[a];
    if (same)
        return REDIST_OK;
    char mm[256];
    format_mesh(m, mm, sizeof mm);
    return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                    "the plan's mesh (%s) does not have the axis sizes of "
                    "the MPI context's mesh",
                    mm);
}

/* The executor's program on this context (in place or not). */
static redist_status_t build_on(const redist_mpi_t *x, int inplace,
                                const redist_plan_t *plan,
                                const redist_exec_options_t *opts,
                                redist_exec_info_t *info, rd_program *p,
                                redist_error_t *err)
{
    redist_backend_t be = x->be;
    memset(p, 0, sizeof *p);
    be.build = inplace ? RD_BUILD_INPLACE : 0;
    redist_status_t st = redist_plan_exec_info(plan, &be, opts, info, err);
    if (!st)
        st = rd_program_build_for(plan, &be, opts ? opts->flags : 0, p, err);
    if (!st) /* this rank's permute peers (exchange counts) */
        st = rd_program_bind(p, plan, x->rank, err);
    return st;
}

/* Memory of a program: executor buffers + the least work buffer. */
static uint64_t least_total(const redist_mpi_t *x, const rd_program *p,
                            uint64_t E)
{
    work_plan wp;
    plan_work(x, p, 0, &wp);
    return E + wp.min;
}

static redist_status_t mpi_info(const redist_mpi_t *x,
                                const redist_plan_t *plan,
                                const redist_exec_options_t *opts,
                                redist_mpi_info_t *out, int *inplace,
                                redist_error_t *err)
{
    rd_program p;
    memset(out, 0, sizeof *out);
    *inplace = 0;
    redist_status_t st = check_mesh(x, plan, err);
    if (st)
        return st;
    st = build_on(x, 0, plan, opts, &out->exec, &p, err);
    if (st) {
        rd_program_free(&p);
        return st;
    }
    uint64_t E = out->exec.scratch_bytes;
    uint64_t M = out->exec.bound_bytes;
    uint64_t least = least_total(x, &p, E), least2 = least;
    uint64_t B = x->opts.max_scratch;
    /* some passes in place may need less (the least bound reported);
     * they run so only when the bound is below what the passes need as
     * planned */
    redist_exec_info_t e2;
    rd_program p2;
    if (!build_on(x, 1, plan, opts, &e2, &p2, NULL))
        least2 = least_total(x, &p2, e2.scratch_bytes);
    if (B && least > B && least2 < least) {
        rd_program_free(&p);
        p = p2;
        out->exec = e2;
        E = e2.scratch_bytes;
        least = least2;
        *inplace = 1;
    } else
        rd_program_free(&p2);
    out->min_scratch_bytes = least < least2 ? least : least2;
    if (!B)
        B = M > least ? M : least;
    out->bound_bytes = B;
    work_plan wp;
    plan_work(x, &p, 0, &wp);
    uint64_t W = 0;
    if (wp.min || wp.want) {
        uint64_t room = B > E ? B - E : 0;
        W = wp.want;
        if (!x->opts.max_scratch && W > REDIST_MPI_ROUND_BYTES)
            W = REDIST_MPI_ROUND_BYTES;
        if (W > room)
            W = room;
        if (W < wp.min)
            W = wp.min;
    }
    plan_work(x, &p, W, &wp);
    rd_program_free(&p);
    out->work_bytes = W;
    out->scratch_bytes = E + W;
    out->exchanges = wp.exchanges;
    if (B < least)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, "max_scratch",
                        "max_scratch %llu bytes is below the least this plan "
                        "needs: %llu bytes (%llu of executor buffers, fixed "
                        "by the plan even with in-place steps, + %llu of "
                        "work space)",
                        (unsigned long long)B, (unsigned long long)least,
                        (unsigned long long)E,
                        (unsigned long long)(least - E));
    return REDIST_OK;
}

redist_status_t redist_mpi_exec_info(const redist_mpi_t *x,
                                     const redist_plan_t *plan,
                                     const redist_exec_options_t *opts,
                                     redist_mpi_info_t *out,
                                     redist_error_t *err)
{
    if (!x || !plan || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL context, plan or output");
    int inplace;
    return mpi_info(x, plan, opts, out, &inplace, err);
}

redist_status_t redist_mpi_execute(redist_mpi_t *x, const redist_plan_t *plan,
                                   void *src, void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_exec_report_t *report,
                                   redist_error_t *err)
{
    redist_exec_report_t r;
    if (!x) {
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL MPI context");
    }
    x->in_call = 1;
    x->pre_status = REDIST_OK;
    redist_error_clear(&x->pre_err);
    x->work_want = 0;
    x->cur = x->high = x->allocs = x->exec_cur = 0;
    x->exchanges = x->streamed = x->swaps = x->rings = 0;
    uint64_t promise = 0;
    int inplace = 0;
    if (plan) {
        redist_mpi_info_t info;
        /* a plan on another mesh, or max_scratch too small: fail every
         * rank at the executor's first agree; other errors are the
         * executor's to report */
        redist_status_t st = check_mesh(x, plan, &x->pre_err);
        if (st)
            x->pre_status = st;
        else if ((st = mpi_info(x, plan, opts, &info, &inplace,
                                &x->pre_err)) == REDIST_ERR_LIMIT)
            x->pre_status = st;
        else if (!st) {
            x->work_want = info.work_bytes;
            x->planned = 1;
            promise = info.scratch_bytes;
            x->be.build = inplace ? RD_BUILD_INPLACE : 0;
        }
    }
    redist_status_t st = redist_plan_execute(plan, &x->be, src, dst, opts, &r,
                                             err);
    if (x->work) {
        free(x->work);
        x->cur -= x->work_bytes;
        x->work = NULL;
        x->work_bytes = 0;
    }
    x->in_call = 0;
    x->planned = 0;
    x->be.build = 0;
    x->pre_status = REDIST_OK;
    r.scratch_bytes = promise ? promise : r.scratch_bytes;
    r.scratch_high_water = x->high;
    r.scratch_allocations = x->allocs;
    if (report)
        *report = r;
    return st;
}
