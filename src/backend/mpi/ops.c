/*
 * The MPI backend's ops table (exec/backend.h): how each step kind runs.
 *   all_to_all   one MPI_Alltoall; whole steps: the send datatype picks
 *                chunk k along the split dim of the input, the receive
 *                datatype writes the piece of member k to slot k along the
 *                gathered dim.  ~ alpha s + beta (s-1)/s L.  Scratch 0.
 *   all_gather   allgather_ring.c.  reduce_scatter, all_reduce:
 *                reduce_ordered.c, reduce_stream.c, reduce_native.c; an
 *                uneven reduce_scatter whole: reduce_boxed.c.
 *   permute      one MPI_Sendrecv of L contiguous bytes (a local memcpy
 *                for a device that keeps its block).  alpha + beta L.
 *   exchange     exchange.c.  In place: swap.c.
 * A prepared object's pass whose inputs lie in shared windows runs
 * through them instead (shared.c).
 * By default a step is one call with derived datatypes (datatypes.c) that
 * read the blocks from where they lie in the input and write them to
 * their final places (mpi_step): no pack, no unpack, no scratch.  With
 * REDIST_MPI_PACKED the executor packs and unpacks with its kernels and
 * the exchanges are contiguous (the same calls with plain byte types).
 */
#include <string.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

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
    int rc = rd_mpi_dt_bytes(x->limit, bytes, &t);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "building a datatype");
    if (gather) {
        rc = rd_mpi_allgather(x, comm, g->size, g->index, send, t, recv, t,
                              bytes, bytes);
    } else {
        rc = MPI_Alltoall(send, 1, t, recv, 1, t, comm);
        x->exchanges++;
    }
    rd_mpi_dt_free(&t);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, gather ? "MPI_Allgather" : "MPI_Alltoall");
    return REDIST_OK;
}

/* all_gather and all_to_all (to_all) of contiguous chunks: one MPI call,
 * or the in-place form when recv == send. */
static redist_status_t mpi_blocks(redist_backend_t *be, const rd_group *g,
                                  int to_all, const void *send, void *recv,
                                  uint64_t bytes, redist_error_t *err)
{
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
    redist_mpi_t *x = be->ctx;
    int gather = !to_all;
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
        return gather ? rd_mpi_gather_inplace(x, c, g->size, g->index, recv,
                                              bytes, err)
                      : rd_mpi_alltoall_inplace(x, c, g->size, g->index, recv,
                                                bytes, err);
    return xchg_bytes(x, c, g, gather, send, recv, bytes, err);
}

/* A reduction over group g (all: all-reduce, else reduce-scatter): a
 * group of one is reduced locally as one exchange; else MPI's own
 * collective where the options allow it, ours (ordered) otherwise. */
static redist_status_t mpi_reduce(redist_backend_t *be, const rd_group *g,
                                  int all, const void *send, void *recv,
                                  uint64_t count, redist_dtype_t dtype,
                                  redist_reduce_t op, redist_error_t *err)
{
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
    redist_mpi_t *x = be->ctx;
    redist_status_t st;
    size_t elem = redist_dtype_size(dtype);
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    if (g->size == 1) {
        rd_mpi_reduce_one(dtype, op, recv, send, count);
        x->exchanges++;
        return REDIST_OK;
    }
    if (all)
        return x->opts.flags & REDIST_MPI_NATIVE_REDUCE
                   ? rd_mpi_native_all_reduce(x, c, send, recv, count, dtype,
                                              op, err)
                   : rd_mpi_ar_ordered(x, c, g->size, g->index, send, recv,
                                       count, elem, dtype, op, err);
    if (rd_mpi_native_ok(x, count))
        return rd_mpi_native_reduce_scatter(x, c, send, recv, count, dtype, op,
                                            err);
    return rd_mpi_rs_with_work(x, c, g->size, g->index, send, recv, 1, count,
                               elem, dtype, op, err);
}

static redist_status_t mpi_permute(redist_backend_t *be, const void *send,
                                   int64_t to, void *recv, int64_t from,
                                   uint64_t bytes, redist_error_t *err)
{
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
    redist_mpi_t *x = be->ctx;
    rd_mpi_cached *cc = rd_mpi_cache_of(x);
    if (cc && cc->direct) /* through shared windows (shared.c) */
        return rd_mpi_direct_pass(x, cc, send, recv, err);
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
        redist_status_t st = rd_mpi_work_get(
            x, bytes < RD_MPI_SWAP_GOOD ? bytes : RD_MPI_SWAP_GOOD, 1, bytes,
            &w, err);
        if (!st)
            st = rd_mpi_swap_rounds(x, x->comm, (int)to, (int)from, recv,
                                    bytes, &w, err);
        rd_mpi_work_put(x, &w);
        return st;
    }
    x->exchanges++;
    if (cc && cc->nreq) /* prepared: persistent requests (prepared.c) */
        return rd_mpi_start_wait(cc, 1, err);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = rd_mpi_dt_bytes(x->limit, bytes, &t);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "building a datatype");
    rc = MPI_Sendrecv(send, 1, t, (int)to, RD_MPI_TAG, recv, 1, t, (int)from,
                      RD_MPI_TAG, x->comm, MPI_STATUS_IGNORE);
    rd_mpi_dt_free(&t);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : rd_mpi_fail(err, rc, "MPI_Sendrecv");
}

/* Whole steps with derived datatypes, straight into the final places. */
static redist_status_t mpi_step(redist_backend_t *be, const rd_xstep *xs,
                                const void *in, void *out,
                                redist_error_t *err)
{
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
    redist_mpi_t *x = be->ctx;
    rd_mpi_cached *cc = rd_mpi_cache_of(x);
    if (cc && cc->direct) /* through shared windows (shared.c) */
        return rd_mpi_direct_pass(x, cc, in, out, err);
    if (xs->op == REDIST_OP_EXCHANGE) /* point to point, any peers */
        return rd_mpi_xchg_step(x, xs, in, out, err);
    const rd_group *g = &xs->group;
    redist_status_t st;
    MPI_Comm c = group_comm(x, g, err, &st);
    if (st)
        return st;
    int nd = xs->ndims;
    uint64_t s = (uint64_t)g->size, elem = xs->elem;
    uint64_t L = rd_mpi_prod(xs->in_shape, 0, nd) * elem;
    if (s == 1 && xs->op != REDIST_OP_REDUCE_SCATTER) {
        if (out != in)
            memcpy(out, in, (size_t)L);
        x->exchanges++;
        return REDIST_OK;
    }
    /* in place (mpi_inplace_need): contiguous slots only */
    if (out == in && xs->op == REDIST_OP_ALL_GATHER)
        return rd_mpi_gather_inplace(x, c, g->size, g->index, out, L, err);
    if (out == in && xs->op == REDIST_OP_ALL_TO_ALL)
        return rd_mpi_alltoall_inplace(x, c, g->size, g->index, out, L / s,
                                       err);
    MPI_Datatype stype = MPI_DATATYPE_NULL, rtype = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS;
    const char *call = "";
    switch (xs->op) {
    case REDIST_OP_ALL_GATHER:
    case REDIST_OP_ALL_TO_ALL:
        if (cc && cc->valid) {
            stype = cc->stype;
            rtype = cc->rtype;
        } else {
            rc = rd_mpi_step_types(x, xs, &stype, &rtype);
        }
        if (rc != MPI_SUCCESS)
            break;
        if (xs->op == REDIST_OP_ALL_GATHER) {
            int i = xs->dim;
            uint64_t cb = rd_mpi_prod(xs->in_shape, i, nd) * elem;
            call = "MPI_Allgather";
            rc = rd_mpi_allgather(x, c, g->size, g->index, in, stype, out,
                                  rtype, cb, L);
        } else {
            call = "MPI_Alltoall";
            rc = MPI_Alltoall(in, 1, stype, out, 1, rtype, c);
            x->exchanges++;
        }
        break;
    case REDIST_OP_REDUCE_SCATTER: {
        if (xs->boxed) /* uneven, whole (reduce_boxed.c) */
            return rd_mpi_rs_boxed(x, c, xs, in, out, err);
        int i = xs->dim;
        uint64_t pre = rd_mpi_prod(xs->in_shape, 0, i);
        uint64_t chunk = (uint64_t)xs->in_shape[i] / s *
                         rd_mpi_prod(xs->in_shape, i + 1, nd);
        if (s == 1) {
            rd_mpi_reduce_one(xs->dtype, xs->reduce, out, in, L / elem);
            x->exchanges++;
            return REDIST_OK;
        }
        return rd_mpi_rs_with_work(x, c, g->size, g->index, in, out, pre,
                                   chunk, elem, xs->dtype, xs->reduce, err);
    }
    default:
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "mpi: no whole-step form of %s",
                        redist_op_name(xs->op));
    }
    if (!(cc && cc->valid)) {
        rd_mpi_dt_free(&stype);
        rd_mpi_dt_free(&rtype);
    }
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, call[0] ? call : "building a datatype");
    return REDIST_OK;
}

/* The send and receive datatypes of a whole all_gather or all_to_all
 * step (mpi_step; built once by a prepared object, prepared.c). */
int rd_mpi_step_types(const redist_mpi_t *x, const rd_xstep *xs,
                      MPI_Datatype *stype, MPI_Datatype *rtype)
{
    int nd = xs->ndims, rc;
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    uint64_t L = rd_mpi_prod(xs->in_shape, 0, nd) * elem;
    *stype = *rtype = MPI_DATATYPE_NULL;
    if (xs->op == REDIST_OP_ALL_GATHER) {
        int i = xs->dim;
        uint64_t pre = rd_mpi_prod(xs->in_shape, 0, i);
        uint64_t cb = rd_mpi_prod(xs->in_shape, i, nd) * elem;
        rc = rd_mpi_dt_bytes(x->limit, L, stype);
        if (rc == MPI_SUCCESS)
            rc = rd_mpi_dt_blocks(x->limit, pre, cb, s * cb, cb, rtype);
    } else {
        int i = xs->from_dim, j = xs->to_dim;
        uint64_t preJ = rd_mpi_prod(xs->in_shape, 0, j);
        uint64_t cbJ = (uint64_t)xs->in_shape[j] / s *
                       rd_mpi_prod(xs->in_shape, j + 1, nd) * elem;
        uint64_t preI = rd_mpi_prod(xs->out_shape, 0, i);
        uint64_t cbI = (uint64_t)xs->in_shape[i] *
                       rd_mpi_prod(xs->out_shape, i + 1, nd) * elem;
        rc = rd_mpi_dt_blocks(x->limit, preJ, cbJ, s * cbJ, cbJ, stype);
        if (rc == MPI_SUCCESS)
            rc = rd_mpi_dt_blocks(x->limit, preI, cbI, s * cbI, cbI, rtype);
    }
    if (rc != MPI_SUCCESS) {
        rd_mpi_dt_free(stype);
        rd_mpi_dt_free(rtype);
    }
    return rc;
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
        return fused && rd_mpi_prod(xs->in_shape, 0, xs->dim) > 1 ? UINT64_MAX
                                                                  : 0;
    case REDIST_OP_ALL_TO_ALL:
        if (fused && (rd_mpi_prod(xs->in_shape, 0, xs->to_dim) > 1 ||
                      rd_mpi_prod(xs->out_shape, 0, xs->from_dim) > 1))
            return UINT64_MAX;
        return 1;
    case REDIST_OP_REDUCE_SCATTER:
        if (xs->boxed) /* its output over its own input (reduce_boxed.c),
                          its work space the backend's own (need_of) */
            return xs->boxed_inplace ? 0 : UINT64_MAX;
        return !fused && rd_mpi_native_ok(x, in_bytes / s / xs->elem)
                   ? 0
                   : xs->elem;
    case REDIST_OP_ALL_REDUCE:
        return x->opts.flags & REDIST_MPI_NATIVE_REDUCE ? 0 : xs->elem;
    case REDIST_OP_PERMUTE:
        return 1;
    default:
        return UINT64_MAX;
    }
}

const rd_backend_ops rd_mpi_ops_template = {
    .name = "mpi",
    .agree = rd_mpi_agree,
    .abort = rd_mpi_abort,
    .blocks = mpi_blocks, .reduce = mpi_reduce, .permute = mpi_permute,
    .exchange = rd_mpi_exchange,
    .exchange_multi = rd_mpi_exchange_multi,
    .begin_programs = rd_mpi_begin_programs,
    .use_work = rd_mpi_use_work,
    .sub = rd_mpi_sub,
    .sub_free = rd_mpi_sub_free,
    .end_programs = rd_mpi_end_programs,
    .step = mpi_step,
    .alloc = rd_mpi_scratch_alloc,
    .free = rd_mpi_scratch_free,
    .inplace_ops = 1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |
                   1u << REDIST_OP_REDUCE_SCATTER |
                   1u << REDIST_OP_ALL_REDUCE | 1u << REDIST_OP_PERMUTE,
    .inplace_need = mpi_inplace_need,
    .threads = rd_mpi_threads,
};

unsigned rd_mpi_fused_ops(unsigned flags)
{
    if (flags & REDIST_MPI_PACKED)
        return 0;
    unsigned f = 1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |
                 1u << REDIST_OP_EXCHANGE;
    if (!(flags & REDIST_MPI_NATIVE_REDUCE))
        f |= 1u << REDIST_OP_REDUCE_SCATTER;
    return f;
}
