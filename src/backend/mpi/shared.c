/*
 * Shared windows (redist/mpi.h: redist_mpi_alloc, redist_mpi_free_mem)
 * and the direct path of prepared objects through them.
 *
 * ALLOCATOR.  The first allocation splits the context's communicator by
 * node (MPI_Comm_split_type SHARED, key = rank, so on one node the node
 * rank is the rank).  Each allocation is one MPI_Win_allocate_shared over
 * the node ("alloc_shared_noncontig": each rank's segment on its own
 * pages) of the caller's bytes plus REDIST_MPI_ALIGN, locked at once for
 * its whole life (MPI_Win_lock_all, MPI_MODE_NOCHECK) so that
 * MPI_Win_sync may be called at any time.  Allocations are numbered in
 * order (`seq`); every rank makes the same collective calls in the same
 * order, so a number names the same window on every rank.  Cost: one
 * window creation and two agreements per call; memory: the bytes, one
 * list node, MPI's window.
 *
 * DIRECT PATH (pull).  At prepare, every rank reports, for each of the
 * executor's buffers (src, dst, two scratch), the window it lies in and
 * its offset in this rank's segment, or that it lies in none
 * (MPI_Allgather of 9 words: 4 pairs and "all ranks on one node").  From
 * the same table every rank decides the same thing: a pass goes direct
 * when it is an exchange, a permute, or an even all_gather / all_to_all /
 * reduce_scatter (the whole-step form: not with REDIST_MPI_PACKED or
 * REDIST_MPI_NATIVE_REDUCE), not in place, and every rank's input of the
 * pass lies in a window.  Then each rank maps its peers' inputs
 * (MPI_Win_shared_query + offset) and the run copies each piece the rank
 * receives with the box kernel from the peer's input straight into its
 * own output (a reduce_scatter reduces its chunk of the members' inputs,
 * in member order, with the ordered path's kernel rd_reduce_n: the same
 * bits as the sim, and no work buffer).  Only the reader writes, and
 * only its own memory: no write conflict, and an output need not be in
 * a window.
 *
 * SYNCHRONISATION (MPI-3 unified model, which shared windows have).  A
 * fence is MPI_Win_sync on every window the object reads, MPI_Barrier on
 * the object's communicator, MPI_Win_sync again.  A direct pass starts
 * with a fence (every rank's input, written by its previous pass or by
 * the caller, is complete and visible) unless the previous pass was
 * direct, and ends with one (no rank still reads an input that its owner
 * may overwrite next: a later pass's output, or the caller's next src).
 * Two-sided passes in between synchronise themselves.
 *
 * SCRATCH.  When every rank's src lies in a window (one node), prepare
 * also moves the executor's scratch buffers into windows of the object
 * (rd_mpi_direct_scratch, before anything is built on them), so that the
 * passes between the first and the last, which read scratch, go direct
 * too.  Same bytes as the scratch they replace (+ REDIST_MPI_ALIGN),
 * freed with the object.
 *
 * Cost per direct pass: 2 barriers (1 between consecutive direct passes)
 * + the copies at memory speed, beta_mem * (received bytes + the own
 * piece); no message, no MPI buffer.  Prepare: one allreduce (and a
 * window per scratch buffer) for the scratch, one agreement and one
 * allgather, a shared query per rank and direct pass, one allreduce;
 * memory O(size) pointers per direct pass.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* ------------------------------------------------ the allocator */

/* The node communicator, made once (collective over the context). */
static int node_comm(redist_mpi_t *x)
{
    if (x->node != MPI_COMM_NULL)
        return MPI_SUCCESS;
    int rc = x->node_ranks > 0
                 ? MPI_Comm_split(x->comm, x->rank / x->node_ranks, x->rank,
                                  &x->node)
                 : MPI_Comm_split_type(x->comm, MPI_COMM_TYPE_SHARED,
                                       x->rank, MPI_INFO_NULL, &x->node);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(x->node, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(x->node, &x->node_size);
    return rc;
}

void rd_mpi_set_node_ranks(redist_mpi_t *x, int ranks)
{
    if (x && x->node == MPI_COMM_NULL)
        x->node_ranks = ranks > 0 ? ranks : 0;
}

static void win_release(rd_mpi_win *w)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && w->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(w->win);
        MPI_Win_free(&w->win);
    }
    free(w);
}

/* A window of `bytes` bytes for this rank, not yet in any list: the
 * local status `st` and the node's allocation agreed over the context's
 * ranks (collective over x->comm, even when st is an error). */
static redist_status_t win_create(redist_mpi_t *x, uint64_t bytes,
                                  redist_status_t st, rd_mpi_win **out,
                                  redist_error_t *err)
{
    rd_mpi_win *w = rd_mpi_malloc_agreed(x->comm, x->rank, sizeof *w, &st,
                                         err);
    if (!w)
        return st;
    memset(w, 0, sizeof *w);
    w->win = MPI_WIN_NULL;
    const char *call = "MPI_Comm_split_type";
    int rc = node_comm(x);
    MPI_Info info = MPI_INFO_NULL;
    if (rc == MPI_SUCCESS) {
        call = "MPI_Info_create";
        rc = MPI_Info_create(&info);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Info_set(info, "alloc_shared_noncontig", "true");
    w->seg_bytes = bytes + REDIST_MPI_ALIGN;
    if (rc == MPI_SUCCESS) {
        call = "MPI_Win_allocate_shared";
        rc = MPI_Win_allocate_shared((MPI_Aint)w->seg_bytes, 1, info, x->node,
                                     &w->seg, &w->win);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    if (rc == MPI_SUCCESS) {
        call = "MPI_Win_set_errhandler";
        rc = MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    }
    if (rc == MPI_SUCCESS) {
        call = "MPI_Win_lock_all";
        rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
        if (rc != MPI_SUCCESS) { /* not locked: free it unlocked */
            MPI_Win_free(&w->win);
            w->win = MPI_WIN_NULL;
        }
    }
    if (rc == MPI_SUCCESS && !w->seg) {
        call = "MPI_Win_allocate_shared (no memory returned)";
        rc = MPI_ERR_NO_MEM;
    }
    if (rc != MPI_SUCCESS)
        st = rc == MPI_ERR_NO_MEM && w->win == MPI_WIN_NULL
                 ? rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "cannot allocate %llu bytes of shared memory on "
                            "device %d",
                            (unsigned long long)bytes, x->rank)
                 : rd_mpi_fail(err, rc, call);
    st = rd_mpi_agree_comm(x->comm, x->rank, st, 0, "", err);
    if (st) {
        win_release(w); /* a window some rank lacks: MPI's state (mpi.h) */
        return st;
    }
    uintptr_t a = (uintptr_t)w->seg;
    w->ptr = w->seg + ((REDIST_MPI_ALIGN - a % REDIST_MPI_ALIGN) %
                       REDIST_MPI_ALIGN);
    w->bytes = bytes;
    w->seq = x->win_seq++;
    *out = w;
    return REDIST_OK;
}

static void win_append(rd_mpi_win **list, rd_mpi_win *w)
{
    while (*list)
        list = &(*list)->next;
    *list = w;
}

redist_status_t redist_mpi_alloc(redist_mpi_t *x, uint64_t bytes, void **out,
                                 redist_error_t *err)
{
    if (!x)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL MPI context");
    redist_status_t st = REDIST_OK;
    rd_mpi_win *w = NULL;
    if (!out)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "out", "NULL output");
    else if (bytes > (uint64_t)(INT64_MAX / 2) ||
             bytes + REDIST_MPI_ALIGN > (uint64_t)PTRDIFF_MAX)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "bytes",
                      "cannot allocate %llu bytes of shared memory",
                      (unsigned long long)bytes);
    st = win_create(x, bytes, st, &w, err);
    if (st)
        return st;
    win_append(&x->wins, w);
    *out = w->ptr;
    return REDIST_OK;
}

redist_status_t redist_mpi_free_mem(redist_mpi_t *x, void *ptr,
                                    redist_error_t *err)
{
    if (!x)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL MPI context");
    int fin = 0;
    MPI_Finalized(&fin);
    rd_mpi_win **at = &x->wins;
    while (*at && (*at)->ptr != ptr)
        at = &(*at)->next;
    if (fin) { /* nothing to agree over: release this rank's memory */
        if (*at) {
            rd_mpi_win *w = *at;
            *at = w->next;
            win_release(w);
        }
        return REDIST_OK;
    }
    /* every rank names the same allocation (or all NULL) */
    redist_status_t st = REDIST_OK;
    int64_t seq = !ptr ? -1 : *at ? (*at)->seq : -2;
    if (seq == -2)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "ptr",
                      "the pointer was not allocated by redist_mpi_alloc "
                      "on this context (or was freed)");
    st = rd_mpi_agree_comm(x->comm, x->rank, st, (uint64_t)seq,
                           "the ranks named different allocations", err);
    if (st)
        return st;
    if (ptr) {
        rd_mpi_win *w = *at;
        *at = w->next;
        win_release(w);
    }
    return REDIST_OK;
}

/* The context's windows, in allocation order, and the node communicator
 * (redist_mpi_free; collective). */
void rd_mpi_windows_free(redist_mpi_t *x)
{
    while (x->wins) {
        rd_mpi_win *w = x->wins;
        x->wins = w->next;
        win_release(w);
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && x->node != MPI_COMM_NULL)
        MPI_Comm_free(&x->node);
}

/* ------------------------------------------------ the direct path */

enum { NINFO = 2 * RD_NBUF + 1 };

/* The window numbered seq: the context's or the object's (scratch). */
static const rd_mpi_win *win_of_seq(const redist_mpi_t *ctx,
                                    const redist_mpi_t *x, int64_t seq)
{
    for (int l = 0; l < 2; l++)
        for (const rd_mpi_win *w = l ? x->wins : ctx->wins; w; w = w->next)
            if (w->seq == seq)
                return w;
    return NULL;
}

/* The window of the lists holding every byte of [q, q + need). */
static const rd_mpi_win *win_holding(const redist_mpi_t *ctx,
                                     const redist_mpi_t *x, const char *q,
                                     uint64_t need)
{
    for (int l = 0; l < 2 && q; l++)
        for (const rd_mpi_win *w = l ? x->wins : ctx->wins; w; w = w->next) {
            uintptr_t s = (uintptr_t)w->seg, a = (uintptr_t)q;
            if (a >= s && a - s <= w->seg_bytes &&
                need <= w->seg_bytes - (a - s))
                return w;
        }
    return NULL;
}

int rd_mpi_owns_window(const redist_mpi_t *x, const void *p)
{
    for (const rd_mpi_win *w = x->wins; w; w = w->next)
        if (w->ptr == p)
            return 1;
    return 0;
}

int rd_mpi_src_in_window(const redist_mpi_t *ctx, const void *src)
{
    return ctx->node != MPI_COMM_NULL && ctx->node_size == ctx->size &&
           win_holding(ctx, ctx, src, 1) != NULL;
}

/* May pass ps run direct (its kind; where its input lies is checked by
 * the caller)? */
static int direct_kind(const rd_program *p, const rd_pass *ps)
{
    const rd_xstep *xs = &ps->x;
    if (ps->in_buf == ps->out_buf)
        return 0;
    if (ps->kind == RD_PASS_FUSED && xs->op == REDIST_OP_EXCHANGE)
        return 1;
    if (ps->kind == RD_PASS_XCHG && xs->op == REDIST_OP_PERMUTE)
        return 1; /* a rank that keeps its block copies it between the
                     fences: the choice is the same on every rank */
    if (ps->kind == RD_PASS_FUSED && !p->uneven && xs->group.size > 1)
        return xs->op == REDIST_OP_ALL_GATHER ||
               xs->op == REDIST_OP_REDUCE_SCATTER ||
               (xs->op == REDIST_OP_ALL_TO_ALL && xs->from_dim != xs->to_dim);
    return 0;
}

/* This rank's report: per buffer the window's number and the offset in
 * this rank's segment (-1, 0: in none), and whether the ranks share one
 * node.  A buffer counts only when every byte a pass reads of it lies in
 * the window. */
static void report_buffers(const redist_mpi_t *ctx, const redist_mpi_t *x,
                           const rd_exec_prep *xp, int64_t info[NINFO])
{
    uint64_t need[RD_NBUF] = {0};
    for (int k = 0; k < xp->p.npasses; k++) {
        const rd_pass *ps = &xp->p.pass[k];
        if (ps->dev_in > need[ps->in_buf])
            need[ps->in_buf] = ps->dev_in;
    }
    for (int b = 0; b < RD_NBUF; b++) {
        const char *q = xp->buf[b];
        const rd_mpi_win *w = win_holding(ctx, x, q, need[b]);
        info[2 * b] = w ? w->seq : -1;
        info[2 * b + 1] = w ? (int64_t)(q - w->seg) : 0;
    }
    info[NINFO - 1] = ctx->node != MPI_COMM_NULL && ctx->node_size == ctx->size;
}

void rd_mpi_direct_free(redist_mpi_t *x)
{
    for (int k = 0; k < x->ncache && x->cache; k++) {
        free(x->cache[k].peer_in);
        x->cache[k].peer_in = NULL;
        x->cache[k].direct = 0;
    }
    free(x->dwin);
    x->dwin = NULL;
    x->ndwin = 0;
}

/* Map every rank's input of direct pass k; 0 on success. */
static int map_peers(const redist_mpi_t *ctx, redist_mpi_t *x,
                     const int64_t *all, rd_mpi_cached *cc, int in_buf)
{
    if (!(cc->peer_in = calloc((size_t)x->size, sizeof *cc->peer_in)))
        return -1;
    for (int r = 0; r < x->size; r++) {
        const int64_t *ir = all + (size_t)r * NINFO;
        const rd_mpi_win *w = win_of_seq(ctx, x, ir[2 * in_buf]);
        MPI_Aint sz = 0;
        int du = 0;
        char *base = NULL;
        if (!w || MPI_Win_shared_query(w->win, r, &sz, &du, &base) !=
                      MPI_SUCCESS || !base)
            return -1;
        cc->peer_in[r] = base + ir[2 * in_buf + 1];
        int seen = 0;
        for (int j = 0; j < x->ndwin; j++)
            seen |= x->dwin[j] == w->win;
        if (!seen) {
            MPI_Win *d = realloc(x->dwin, (size_t)(x->ndwin + 1) * sizeof *d);
            if (!d)
                return -1;
            x->dwin = d;
            x->dwin[x->ndwin++] = w->win;
        }
    }
    return 0;
}

redist_status_t rd_mpi_direct_scratch(redist_mpi_t *ctx, redist_mpi_t *x,
                                      rd_exec_prep *xp, redist_error_t *err)
{
    int any = 0;
    for (int k = 0; k < xp->p.npasses; k++)
        any |= direct_kind(&xp->p, &xp->p.pass[k]);
    /* the program (its passes, its scratch sizes) is every rank's */
    if (!any || (!xp->p.scratch[0] && !xp->p.scratch[1]))
        return REDIST_OK;
    int mine = !x->arena && /* an arena's parts stay there */
               ctx->node != MPI_COMM_NULL && ctx->node_size == ctx->size &&
               win_holding(ctx, x, xp->buf[RD_BUF_SRC], 1) != NULL,
        all = 0;
    int rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Allreduce (shared windows)");
    for (int k = 0; all && k < 2; k++) {
        int b = k ? RD_BUF_SB : RD_BUF_SA;
        uint64_t bytes = xp->p.scratch[k];
        rd_mpi_win *w = NULL;
        if (!bytes)
            continue;
        redist_status_t st = win_create(ctx, bytes, REDIST_OK, &w, err);
        if (st)
            return st;
        memset(w->ptr, 0, (size_t)bytes); /* touched once */
        win_append(&x->wins, w);
        /* the window holds the bytes the accounting counted for the
         * executor's buffer (work.c); rd_mpi_scratch_free skips it */
        free(xp->buf[b]);
        xp->buf[b] = w->ptr;
    }
    return REDIST_OK;
}

redist_status_t rd_mpi_direct_setup(const redist_mpi_t *ctx, redist_mpi_t *x,
                                    const rd_exec_prep *xp,
                                    redist_error_t *err)
{
    int64_t mine[NINFO];
    int any = 0;
    for (int k = 0; k < xp->p.npasses; k++)
        any |= direct_kind(&xp->p, &xp->p.pass[k]);
    /* every rank computes `any` from the same program (the kinds of its
     * passes): all return here together when no pass could go direct */
    if (!any)
        return REDIST_OK;
    report_buffers(ctx, x, xp, mine);
    redist_status_t st = REDIST_OK;
    int64_t *all = rd_mpi_malloc_agreed(
        x->comm, x->rank, (size_t)x->size * NINFO * sizeof *all, &st, err);
    if (!all)
        return st;
    int ok = 1, one = 1;
    int rc = MPI_Allgather(mine, NINFO, MPI_INT64_T, all, NINFO, MPI_INT64_T,
                           x->comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return rd_mpi_fail(err, rc, "MPI_Allgather (shared windows)");
    }
    for (int r = 0; r < x->size; r++)
        one &= all[(size_t)r * NINFO + NINFO - 1] == 1;
    int prev_direct = 0;
    for (int k = 0; ok && one && k < xp->p.npasses; k++) {
        const rd_pass *ps = &xp->p.pass[k];
        rd_mpi_cached *cc = &x->cache[k];
        int d = direct_kind(&xp->p, ps);
        for (int r = 0; d && r < x->size; r++)
            d = all[(size_t)r * NINFO + 2 * ps->in_buf] >= 0;
        if (d && map_peers(ctx, x, all, cc, ps->in_buf))
            ok = 0;
        cc->direct = d;
        cc->fence_before = !prev_direct;
        cc->ps = ps;
        prev_direct = d;
    }
    free(all);
    int agreed = 0;
    rc = MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, x->comm);
    if (rc != MPI_SUCCESS || !agreed)
        rd_mpi_direct_free(x);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : rd_mpi_fail(err, rc, "MPI_Allreduce (shared "
                                                    "windows)");
}

/* Every write before it is visible to every rank after it. */
static redist_status_t fence(redist_mpi_t *x, redist_error_t *err)
{
    int rc = MPI_SUCCESS;
    for (int j = 0; j < x->ndwin && rc == MPI_SUCCESS; j++)
        rc = MPI_Win_sync(x->dwin[j]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Barrier(x->comm);
    for (int j = 0; j < x->ndwin && rc == MPI_SUCCESS; j++)
        rc = MPI_Win_sync(x->dwin[j]);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : rd_mpi_fail(err, rc, "a shared-window fence");
}

/* Member m's contribution to this rank's chunk of row `row` of a
 * reduce_scatter (rd_reduce_n's input). */
typedef struct rs_in {
    const rd_mpi_cached *cc;
    const rd_group *g;
    const char *in;
    int64_t me;
    uint64_t at; /* byte offset of the chunk in every member's input */
} rs_in;

static const void *rs_input(void *u, int64_t m)
{
    const rs_in *r = u;
    int64_t p = rd_group_rank(r->g, m);
    return (p == r->me ? r->in : r->cc->peer_in[p]) + r->at;
}

/* The pieces of pass cc->ps this rank receives, from its peers' inputs
 * into `out`. */
static void pull(redist_mpi_t *x, const rd_mpi_cached *cc, const char *in,
                 char *out)
{
    const rd_xstep *xs = &cc->ps->x;
    int nd = xs->ndims;
    size_t elem = xs->elem;
    int64_t me = x->rank, box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS],
            ob[REDIST_MAX_DIMS], ext[REDIST_MAX_DIMS];
    if (xs->op == REDIST_OP_PERMUTE) {
        const char *from = xs->recv_from == me ? in : cc->peer_in[xs->recv_from];
        memcpy(out, from, (size_t)cc->ps->dev_in);
        return;
    }
    if (xs->op == REDIST_OP_EXCHANGE) {
        const rd_xchg *xc = xs->xchg;
        for (int64_t k = 0; k < xc->nrecv; k++) {
            int64_t p = xc->recv[k].peer;
            if (!rd_xchg_box(xc, p, me, box, oa, ob))
                continue;
            rd_xchg_extent(xc, 0, p, ext);
            rd_kernel_box(out, xs->out_shape, ob,
                          p == me ? in : cc->peer_in[p], ext, oa, box, nd,
                          elem);
        }
        return;
    }
    const rd_group *g = &xs->group;
    if (xs->op == REDIST_OP_REDUCE_SCATTER) {
        /* input [pre][s][chunk]: this rank's chunk of every row, reduced
         * over the members in member order (the ordered path's kernel) */
        int i = xs->dim;
        uint64_t pre = rd_mpi_prod(xs->in_shape, 0, i),
                 s = (uint64_t)g->size,
                 chunk = (uint64_t)xs->in_shape[i] / s *
                         rd_mpi_prod(xs->in_shape, i + 1, nd);
        rs_in r = {cc, g, in, me, 0};
        for (uint64_t row = 0; row < pre; row++) {
            r.at = ((row * s + (uint64_t)g->index) * chunk) * elem;
            rd_reduce_n(xs->dtype, xs->reduce, out + row * chunk * elem,
                        chunk, (int64_t)s, rs_input, &r);
        }
        return;
    }
    /* all_gather along dim i: member k's block to slot k; all_to_all:
     * chunk `idx` along to_dim of member k's block to slot k along
     * from_dim (even blocks: every member's shape is this rank's) */
    int gather = xs->op == REDIST_OP_ALL_GATHER;
    int i = gather ? xs->dim : xs->from_dim, j = xs->to_dim;
    for (int64_t k = 0; k < g->size; k++) {
        int64_t p = rd_group_rank(g, k);
        for (int d = 0; d < nd; d++) {
            box[d] = xs->in_shape[d];
            oa[d] = ob[d] = 0;
        }
        if (!gather) {
            box[j] = xs->in_shape[j] / g->size;
            oa[j] = g->index * box[j];
        }
        ob[i] = k * xs->in_shape[i];
        rd_kernel_box(out, xs->out_shape, ob, p == me ? in : cc->peer_in[p],
                      xs->in_shape, oa, box, nd, elem);
    }
}

redist_status_t rd_mpi_direct_pass(redist_mpi_t *x, rd_mpi_cached *cc,
                                   const void *in, void *out,
                                   redist_error_t *err)
{
    redist_status_t st = cc->fence_before ? fence(x, err) : REDIST_OK;
    if (st)
        return st;
    pull(x, cc, in, out);
    x->exchanges++;
    x->direct++;
    return fence(x, err);
}
