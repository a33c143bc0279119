/*
 * The OpenSHMEM backend's ops table (exec/backend.h) and its steps.
 * Every exchange runs as one whole step of puts to the final places
 * (put.c) between READY and DONE signals (signal.c):
 *   all_gather   (s-1) puts of L;
 *   all_to_all   (s-1) puts of L/s;
 *   permute      one put of L;
 *   exchange     one box per partner, straight in the blocks;
 *   reductions   reduce_mode.c picks a protocol; an uneven
 *                reduce_scatter whole: reduce_boxed.c.
 * Each put split into its contiguous runs, plus 2 (s-1) atomic signals;
 * no pack, no unpack, no receive-side copy.  REDIST_SHMEM_PACKED: the
 * executor packs, and the same steps move contiguous 1-D or 2-D blocks.
 * In place (private buffers, RD_BUILD_INPLACE): see run_step.
 */
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* Tests (rd_shmem_inject_failure): fail after telling the peers we are
 * ready, as a PE that breaks in the middle of a step would. */
static redist_status_t injected_failure(redist_shmem_t *c, const rd_xstep *x,
                                        int slot, redist_error_t *err)
{
    if (x->op == REDIST_OP_PERMUTE) {
        if (x->send_to != c->me)
            rd_shm_signal_pe(c, slot, SIG_READY, (int)x->recv_from);
    } else if (x->op == REDIST_OP_EXCHANGE) {
        for (int64_t k = 0; k < x->xchg->nrecv; k++)
            if (x->xchg->recv[k].peer != c->me)
                rd_shm_signal_pe(c, slot, SIG_READY,
                                 (int)x->xchg->recv[k].peer);
    } else {
        rd_shm_signal_group(c, slot, SIG_READY, &x->group);
    }
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                    "injected failure on PE %d", c->me);
}

/* A permute: one put of the whole block to the partner. */
static redist_status_t step_permute(redist_shmem_t *c, const rd_xstep *x,
                                    const char *in, char *out,
                                    uint64_t bytes, int slot,
                                    redist_error_t *err)
{
    if (x->send_to == c->me) {
        if (out != in)
            memcpy(out, in, (size_t)bytes);
        return REDIST_OK;
    }
    rd_shm_signal_pe(c, slot, SIG_READY, (int)x->recv_from);
    redist_status_t st = rd_shm_wait(c, slot, SIG_READY, 1, err);
    if (st)
        return st;
    rd_shm_write_bytes(c, (int)x->send_to, out, in, bytes);
    rd_shm_complete();
    rd_shm_signal_pe(c, slot, SIG_DONE, (int)x->send_to);
    return rd_shm_wait(c, slot, SIG_DONE, 1, err);
}

/* An exchange, point to point: each box straight from my block to its
 * place in the receiver's (lists sorted by peer, each peer once). */
static redist_status_t step_exchange(redist_shmem_t *c, const rd_xstep *x,
                                     const char *in, char *out, int slot,
                                     redist_error_t *err)
{
    const rd_xchg *xc = x->xchg;
    int nd = x->ndims;
    int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
    long nsend = 0, nrecv = 0;
    for (int64_t k = 0; k < xc->nrecv; k++)
        if (xc->recv[k].peer != c->me) {
            rd_shm_signal_pe(c, slot, SIG_READY, (int)xc->recv[k].peer);
            nrecv++;
        }
    for (int64_t k = 0; k < xc->nsend; k++)
        nsend += xc->send[k].peer != c->me;
    redist_status_t st = rd_shm_wait(c, slot, SIG_READY, nsend, err);
    if (st)
        return st;
    for (int64_t k = 0; k < xc->nsend; k++) {
        int64_t d = xc->send[k].peer;
        if (!rd_xchg_box(xc, c->me, d, box, oa, ob))
            continue;
        if (d == c->me) {
            rd_kernel_box(out, x->out_shape, ob, in, x->in_shape, oa, box,
                          nd, x->elem);
        } else { /* into the receiver's block (its own shape: uneven) */
            int64_t lb[REDIST_MAX_DIMS];
            rd_xchg_extent(xc, 1, d, lb);
            rd_shm_write_box(c, (int)d, out, lb, ob, in, x->in_shape, oa,
                             box, nd, x->elem);
        }
    }
    rd_shm_complete();
    for (int64_t k = 0; k < xc->nsend; k++)
        if (xc->send[k].peer != c->me)
            rd_shm_signal_pe(c, slot, SIG_DONE, (int)xc->send[k].peer);
    return rd_shm_wait(c, slot, SIG_DONE, nrecv, err);
}

/* all_gather and all_to_all: each member's box to its slot in every
 * member's output, the others first, then my own. */
static redist_status_t step_gather(redist_shmem_t *c, const rd_xstep *x,
                                   const char *in, char *out, int slot,
                                   redist_error_t *err)
{
    const rd_group *g = &x->group;
    int nd = x->ndims;
    int64_t s = g->size, me = g->index;
    int64_t box[REDIST_MAX_DIMS], soff[REDIST_MAX_DIMS],
        doff[REDIST_MAX_DIMS];
    int i, j = -1;
    memcpy(box, x->in_shape, sizeof box);
    memset(soff, 0, sizeof soff);
    memset(doff, 0, sizeof doff);
    if (x->op == REDIST_OP_ALL_GATHER) {
        i = x->dim;
    } else if (x->op == REDIST_OP_ALL_TO_ALL) {
        i = x->from_dim;
        j = x->to_dim;
        box[j] /= s;
    } else {
        return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                        "shmem: no step form of %s", redist_op_name(x->op));
    }
    doff[i] = me * x->in_shape[i];
    rd_shm_signal_group(c, slot, SIG_READY, g);
    redist_status_t st = rd_shm_wait(c, slot, SIG_READY, (long)(s - 1), err);
    if (st)
        return st;
    for (int64_t t = 1; t <= s; t++) {
        int64_t k = (me + t) % s; /* the others first, then me */
        if (j >= 0)
            soff[j] = k * box[j];
        if (k == me)
            rd_kernel_box(out, x->out_shape, doff, in, x->in_shape, soff, box,
                          nd, x->elem);
        else
            rd_shm_write_box(c, pe_of(g, k), out, x->out_shape, doff, in,
                             x->in_shape, soff, box, nd, x->elem);
    }
    rd_shm_complete();
    rd_shm_signal_group(c, slot, SIG_DONE, g);
    return rd_shm_wait(c, slot, SIG_DONE, (long)(s - 1), err);
}

/* A reduction by the protocol red_mode chose (`in` already staged). */
static redist_status_t step_reduce(redist_shmem_t *c, redist_backend_t *be,
                                   const rd_xstep *x, const char *in,
                                   char *out, int mode, int slot,
                                   redist_error_t *err)
{
    if (mode == RED_SERIAL)
        return rd_shm_reduce_serial(c, x, in, out, slot, err);
    if (mode != RED_PUSH && mode != RED_PUSH_WORK)
        return rd_shm_reduce_pull(
            c, x, in, out, slot, mode == RED_GET || mode == RED_COPY_GET, err);
    redist_status_t st = rd_shm_reduce_push(c, be, x, in, out, slot, err);
    c->free_sym = NULL;
    c->free_sym_bytes = 0;
    return st;
}

/* One step, every op: the slot of its signals, the protocol of a
 * reduction, the input staged when the step runs in place, then the op.
 * In place (in == out, RD_BUILD_INPLACE: the executor's scratch is the
 * only symmetric memory): pulled reductions handle it, anything else
 * first copies its input to the pass's spare region (local memory is
 * fine as the source of puts) and runs from there. */
static redist_status_t run_step(redist_backend_t *be, const rd_xstep *x,
                                const void *in_, void *out_,
                                redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    int symmetric = be == &c->ep[1];
    const char *in = in_;
    char *out = out_;
    const rd_group *g = &x->group;
    int slot = 0;
    redist_status_t st = rd_shm_next_slot(c, &slot, err);
    if (st)
        return st;
    if (c->nops++ == c->fail_at)
        return injected_failure(c, x, slot, err);

    uint64_t in_bytes = x->elem;
    for (int d = 0; d < x->ndims; d++)
        in_bytes *= (uint64_t)x->in_shape[d];
    int mode = RED_PUSH, pull = 0;
    int reduction = x->op == REDIST_OP_REDUCE_SCATTER ||
                    x->op == REDIST_OP_ALL_REDUCE;
    if (reduction && in_bytes == 0)
        return REDIST_OK; /* an empty uneven block, empty on every member
                             (they reduce the same box); maybe NULL */
    if (x->boxed) /* an uneven reduce_scatter whole (never in place) */
        return rd_shm_rs_boxed(c, be, x, in, out,
                               symmetric || rd_shm_is_scratch(c, in), slot,
                               err);
    if (reduction) {
        red_facts f = {g->size,
                       x->elem,
                       x->op == REDIST_OP_ALL_REDUCE,
                       in_bytes,
                       symmetric || rd_shm_is_scratch(c, in),
                       in == out,
                       symmetric || rd_shm_is_scratch(c, out),
                       rd_shm_scratch_cap(c, out),
                       be->spare_bytes,
                       be->spare_scratch_bytes,
                       c->bound_free};
        mode = rd_shm_red_mode(c, &f);
        if (g->size > 1)
            c->modes[mode]++;
        if (mode == RED_COPY_PULL || mode == RED_COPY_GET) {
            memcpy(out, in, (size_t)in_bytes);
            in = out;
        }
        pull = mode != RED_PUSH && mode != RED_PUSH_WORK &&
               mode != RED_SERIAL;
    }
    if (in == out && !pull &&
        !(x->op == REDIST_OP_PERMUTE && x->send_to == c->me)) {
        if (!be->spare || be->spare_bytes < in_bytes)
            return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                            "internal error: in-place step without %llu "
                            "bytes of spare space",
                            (unsigned long long)in_bytes);
        memcpy(be->spare, in, (size_t)in_bytes);
        in = be->spare;
        if (x->op == REDIST_OP_REDUCE_SCATTER) {
            /* the staged input's old place, past the output, is free
             * symmetric memory at the same offset on every PE: the
             * pushes' work area */
            uint64_t ob = in_bytes / (uint64_t)g->size;
            c->free_sym = out + ob;
            c->free_sym_bytes = in_bytes - ob;
        }
    }
    if (x->op == REDIST_OP_PERMUTE)
        return step_permute(c, x, in, out, in_bytes, slot, err);
    if (x->op == REDIST_OP_EXCHANGE)
        return step_exchange(c, x, in, out, slot, err);
    if (reduction)
        return step_reduce(c, be, x, in, out, mode, slot, err);
    return step_gather(c, x, in, out, slot, err);
}

static redist_status_t shm_step(redist_backend_t *be, const rd_xstep *x,
                                const void *in, void *out,
                                redist_error_t *err)
{
    return run_step(be, x, in, out, err);
}

/* The contiguous ops (REDIST_SHMEM_PACKED): 1-D or 2-D steps. */
static void xstep_init(rd_xstep *x, redist_op_t op, const rd_group *g,
                       size_t elem)
{
    memset(x, 0, sizeof *x);
    x->op = op;
    x->elem = elem;
    x->dtype = REDIST_U8;
    if (g)
        x->group = *g;
}

/* all_gather on dim 0: [1][bytes] -> [s][bytes]; all_to_all (to_all)
 * from dim 0 to dim 1: [1][s bytes] -> [s][bytes] */
static redist_status_t shm_blocks(redist_backend_t *be, const rd_group *g,
                                  int to_all, const void *send, void *recv,
                                  uint64_t bytes, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, to_all ? REDIST_OP_ALL_TO_ALL : REDIST_OP_ALL_GATHER, g,
               1);
    x.ndims = 2;
    x.to_dim = to_all; /* dim, from_dim: 0 */
    x.in_shape[0] = 1;
    x.in_shape[1] = (to_all ? g->size : 1) * (int64_t)bytes;
    x.out_shape[0] = g->size;
    x.out_shape[1] = (int64_t)bytes;
    return run_step(be, &x, send, recv, err);
}

/* reduce_scatter on dim 0: [s count] -> [count]; all_reduce (all):
 * [count] -> [count] */
static redist_status_t shm_reduce(redist_backend_t *be, const rd_group *g,
                                  int all, const void *send, void *recv,
                                  uint64_t count, redist_dtype_t dtype,
                                  redist_reduce_t op, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, all ? REDIST_OP_ALL_REDUCE : REDIST_OP_REDUCE_SCATTER, g,
               redist_dtype_size(dtype));
    x.dtype = dtype;
    x.reduce = op;
    x.ndims = 1;
    x.in_shape[0] = (all ? 1 : g->size) * (int64_t)count;
    x.out_shape[0] = (int64_t)count;
    return run_step(be, &x, send, recv, err);
}

static redist_status_t shm_permute(redist_backend_t *be, const void *send,
                                   int64_t to, void *recv, int64_t from,
                                   uint64_t bytes, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_PERMUTE, NULL, 1);
    x.ndims = 1;
    x.in_shape[0] = x.out_shape[0] = (int64_t)bytes;
    x.send_to = to;
    x.recv_from = from;
    return run_step(be, &x, send, recv, err);
}

#define RD_SHM_FUSED                                                       \
    (1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |             \
     1u << REDIST_OP_REDUCE_SCATTER | 1u << REDIST_OP_ALL_REDUCE |         \
     1u << REDIST_OP_PERMUTE | 1u << REDIST_OP_EXCHANGE)

/* In place (run_step): a staged copy of the input in the spare region,
 * except pulled reductions: an all-reduce needs nothing, a reduce-scatter
 * room for its output. */
static uint64_t shm_inplace_need(const redist_backend_t *be,
                                 const rd_xstep *x, int fused,
                                 uint64_t in_bytes)
{
    const redist_shmem_t *c = be->ctx;
    (void)fused;
    (void)c;
    /* reductions: pulled (loads or gets) in place with no spare at all,
     * or pushed from a staged copy when the spare region holds one
     * (red_mode) */
    if (x->op == REDIST_OP_REDUCE_SCATTER || x->op == REDIST_OP_ALL_REDUCE)
        return 0;
    return in_bytes;
}

#define RD_SHM_INPLACE                                                     \
    (1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |             \
     1u << REDIST_OP_REDUCE_SCATTER | 1u << REDIST_OP_ALL_REDUCE |         \
     1u << REDIST_OP_PERMUTE | 1u << REDIST_OP_EXCHANGE)

/* The symmetric endpoint of be's context (a sub context's too). */
static redist_backend_t *shm_sym_endpoint(redist_backend_t *be)
{
    return &ctx_of(be)->ep[1];
}

#define RD_SHM_OPS(fused, caps_, sym_)                                        \
    {                                                                         \
        .name = "shmem", .caps = (caps_), .fused_ops = (fused),               \
        .agree = rd_shm_agree, .blocks = shm_blocks, .reduce = shm_reduce,    \
        .permute = shm_permute,                                               \
        .step = shm_step, .abort = rd_shm_abort, .alloc = rd_shm_alloc,       \
        .free = rd_shm_free, .inplace_ops = RD_SHM_INPLACE,                   \
        .inplace_need = shm_inplace_need, .sub = rd_shm_sub,                  \
        .sub_free = rd_shm_sub_free, .run_begins = rd_shm_run_begins,         \
        .exchange_multi = rd_shm_exchange_multi,                              \
        .threads = rd_shm_threads, .sym_kind = (sym_),                        \
        .sym_endpoint = shm_sym_endpoint, .set_build = RD_BUILD_UNEVEN_RS     \
    }

/* [packed][symmetric]; exchange steps always run whole (a sender cannot
 * know where the receiver's contiguous piece goes) */
#define RD_SHM_XCHG (1u << REDIST_OP_EXCHANGE)
const rd_backend_ops rd_shm_ops[2][2] = {
    {RD_SHM_OPS(RD_SHM_FUSED, RD_CAP_RECV_IN_SCRATCH, &rd_shm_ops[0][1]),
     RD_SHM_OPS(RD_SHM_FUSED, 0, &rd_shm_ops[0][1])},
    {RD_SHM_OPS(RD_SHM_XCHG, RD_CAP_RECV_IN_SCRATCH, &rd_shm_ops[1][1]),
     RD_SHM_OPS(RD_SHM_XCHG, 0, &rd_shm_ops[1][1])},
};
