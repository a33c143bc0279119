/*
 * The exchange step on one device: who sends what to whom.
 *
 * An exchange goes from type `a` to type `b` (same partial set) in one
 * round of point-to-point messages (MPI_Alltoallv-like).  Device d needs
 * its `b` block T(d).  Cut T(d) by the `a` blocks: each piece lies in one
 * `a` block, held by every device whose coordinates on the axes `a`
 * shards name that block.  The piece comes from the one holder e that
 * agrees with d on every other axis (replicated, partial, or sharded by
 * `b` only), exactly the rule of rd_exchange_need
 * (src/plan/exchange_need.c) that the planner's byte count uses.
 * Partial axes are among the "other" axes, so every contribution stays
 * on its own coordinate.  The piece of T(d) in d's own `a` block comes
 * from d itself (a local copy).
 *
 * Seen from the sender e: the receivers are the devices that agree with
 * e off the axes `a` shards.  e walks the `b` blocks its `a` block B(e)
 * meets; a `b` block names the receivers' coordinates on the axes `b`
 * shards (a block that needs another coordinate on an axis `a` does not
 * shard is not e's to serve), and the axes `a` shards but `b` does not
 * are free: every coordinate there receives the same piece.  So e packs
 * each distinct piece once, and several peers point at the same range.
 *
 * Cost (alpha-beta): one message per peer with a non-empty piece, each
 * byte sent once per receiver; pack and unpack read and write each byte
 * once.  MEMORY: the distinct send pieces are disjoint parts of B(e), so
 * the packed send buffer holds at most |B(e)| = L_a bytes; the received
 * pieces tile T(d), exactly L_b bytes.  The executor's passes are
 *     [PACK  L_a -> L_a]   XCHG L_a -> L_b   [UNPACK L_b -> L_b]
 * and PACK (UNPACK) is skipped when every send (receive) piece is, by the
 * block sizes alone, a contiguous range of the block: then the exchange
 * reads the source block (writes the target block) directly.  Each pass
 * reads one buffer and writes another of at most max(L_a, L_b) bytes, so
 * the executor's scratch argument (exec.c) holds unchanged: at most
 * max(src, dst) for a memory-efficient plan.  Bookkeeping: 24 bytes per
 * peer and direction on each device (O(peers), built before any data
 * moves).
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "kernels.h"
#include "../core/internal.h"
#include "../core/layout.h"

/* The block of device `coord` in `a` (side 0) or `b` (side 1): its start
 * and shape, from the even shape or the layout's boundaries. */
static void block_of(const rd_xchg *x, int side, const int64_t coord[],
                     int64_t start[], int64_t ext[])
{
    const redist_type_t *t = side ? &x->b : &x->a;
    const rd_layout *lay = side ? x->bl : x->al;
    const int64_t *l = side ? x->ub : x->ua;
    for (int i = 0; i < x->ndims; i++) {
        int64_t b = 0;
        for (int k = 0; k < t->dim_naxes[i]; k++) {
            int ax = t->dims[i][k];
            b = b * x->size[ax] + coord[ax];
        }
        if (lay) {
            start[i] = lay->b[i][b];
            ext[i] = lay->b[i][b + 1] - start[i];
        } else {
            start[i] = b * l[i];
            ext[i] = l[i];
        }
    }
}

/* The blocks of `side` along dim i that meet [lo, lo + n), n > 0: indices
 * *first..*last (empty blocks among them meet nothing). */
static void blocks_meeting(const rd_xchg *x, int side, int i, int64_t lo,
                           int64_t n, int64_t *first, int64_t *last)
{
    const rd_layout *lay = side ? x->bl : x->al;
    if (!lay) {
        int64_t l = side ? x->ub[i] : x->ua[i];
        *first = lo / l;
        *last = (lo + n - 1) / l;
        return;
    }
    const int64_t *b = lay->b[i];
    int64_t k = lay->k[i], p = 0, q = k - 1;
    while (p < q) { /* the first block ending after lo */
        int64_t m = p + (q - p) / 2;
        if (b[m + 1] > lo)
            q = m;
        else
            p = m + 1;
    }
    *first = p;
    q = k - 1;
    while (p < q) { /* the last block starting before lo + n */
        int64_t m = p + (q - p + 1) / 2;
        if (b[m] < lo + n)
            p = m;
        else
            q = m - 1;
    }
    *last = p;
}

static void coords_of(const rd_xchg *x, int64_t rank, int64_t c[])
{
    for (int ax = 0; ax < x->naxes; ax++) {
        c[ax] = rank / x->stride[ax];
        rank %= x->stride[ax];
    }
}

static int64_t rank_of(const rd_xchg *x, const int64_t c[])
{
    int64_t r = 0;
    for (int ax = 0; ax < x->naxes; ax++)
        r += c[ax] * x->stride[ax];
    return r;
}

static uint32_t sharded(const redist_type_t *t)
{
    uint32_t m = 0;
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++)
            m |= 1u << t->dims[i][k];
    return m;
}

/* Is every box cut from blocks of shape `own` by blocks of shape `other`
 * a contiguous range of its block?  Along dim k the box is the whole
 * block when other_k % own_k == 0, a single element when own_k or
 * other_k is 1.  Contiguous iff some dim j has single elements before it
 * and whole blocks after it. */
static int always_contiguous(int nd, const int64_t own[],
                             const int64_t other[])
{
    for (int j = 0; j < nd; j++) {
        int ok = 1;
        for (int k = 0; k < j && ok; k++)
            ok = own[k] == 1 || other[k] == 1;
        for (int k = j + 1; k < nd && ok; k++)
            ok = other[k] % own[k] == 0;
        if (ok)
            return 1;
    }
    return nd == 0;
}

/* The same for uneven blocks, for every device: the piece is one element
 * along a dim where own or other blocks are at most one long everywhere,
 * and the whole own block along a dim `other` does not split. */
static int always_contiguous_uneven(int nd, const int64_t own_max[],
                                    const int64_t other_max[],
                                    const int64_t other_k[])
{
    for (int j = 0; j < nd; j++) {
        int ok = 1;
        for (int k = 0; k < j && ok; k++)
            ok = own_max[k] <= 1 || other_max[k] <= 1;
        for (int k = j + 1; k < nd && ok; k++)
            ok = other_k[k] == 1;
        if (ok)
            return 1;
    }
    return nd == 0;
}

void rd_xchg_init(rd_xchg *x, const redist_mesh_t *mesh,
                  const redist_type_t *a, const redist_type_t *b,
                  const int64_t la[], const int64_t lb[], int ndims,
                  size_t elem, const rd_layout *al, const rd_layout *bl)
{
    memset(x, 0, sizeof *x);
    x->ndims = ndims;
    x->naxes = redist_mesh_num_axes(mesh);
    int64_t stride = 1;
    for (int ax = x->naxes - 1; ax >= 0; ax--) {
        x->size[ax] = redist_mesh_axis_size(mesh, ax);
        x->stride[ax] = stride;
        stride *= x->size[ax];
    }
    for (int i = 0; i < ndims; i++) {
        x->la[i] = x->ua[i] = la[i];
        x->lb[i] = x->ub[i] = lb[i];
    }
    x->a = *a;
    x->b = *b;
    x->elem = elem;
    x->rank = -1;
    if (al && bl) {
        /* la, lb: the longest blocks (set per device by bind) */
        x->al = al;
        x->bl = bl;
        x->pack = !always_contiguous_uneven(ndims, la, lb, bl->k);
        x->unpack = !always_contiguous_uneven(ndims, lb, la, al->k);
        return;
    }
    x->pack = !always_contiguous(ndims, la, lb);
    x->unpack = !always_contiguous(ndims, lb, la);
}

int rd_xchg_box(const rd_xchg *x, int64_t sender, int64_t receiver,
                int64_t box[], int64_t off_in_a[], int64_t off_in_b[])
{
    int64_t ce[REDIST_MAX_AXES], cd[REDIST_MAX_AXES];
    int64_t sa[REDIST_MAX_DIMS], sb[REDIST_MAX_DIMS];
    int64_t ea[REDIST_MAX_DIMS], eb[REDIST_MAX_DIMS];
    coords_of(x, sender, ce);
    coords_of(x, receiver, cd);
    block_of(x, 0, ce, sa, ea);
    block_of(x, 1, cd, sb, eb);
    int nonempty = 1;
    for (int i = 0; i < x->ndims; i++) {
        int64_t lo = sa[i] > sb[i] ? sa[i] : sb[i];
        int64_t hi = sa[i] + ea[i] < sb[i] + eb[i] ? sa[i] + ea[i]
                                                   : sb[i] + eb[i];
        box[i] = hi > lo ? hi - lo : 0;
        nonempty &= hi > lo;
        off_in_a[i] = lo - sa[i];
        off_in_b[i] = lo - sb[i];
    }
    return nonempty;
}

void rd_xchg_extent(const rd_xchg *x, int side, int64_t rank, int64_t ext[])
{
    int64_t c[REDIST_MAX_AXES], start[REDIST_MAX_DIMS];
    coords_of(x, rank, c);
    block_of(x, side, c, start, ext);
}

/* Byte offset of element `off` in a row-major block of shape l. */
static uint64_t linear(const rd_xchg *x, const int64_t l[],
                       const int64_t off[])
{
    uint64_t e = 0;
    for (int i = 0; i < x->ndims; i++)
        e = e * (uint64_t)l[i] + (uint64_t)off[i];
    return e * x->elem;
}

static uint64_t box_bytes(const rd_xchg *x, const int64_t box[])
{
    uint64_t e = x->elem;
    for (int i = 0; i < x->ndims; i++)
        e *= (uint64_t)box[i];
    return e;
}

/* A growable list of transfers. */
typedef struct {
    rd_xfer *v;
    int64_t n, cap;
} xlist;

static int push(xlist *l, int64_t peer, uint64_t off, uint64_t bytes)
{
    if (l->n == l->cap) {
        int64_t nc = l->cap ? 2 * l->cap : 8;
        rd_xfer *nv = realloc(l->v, (size_t)nc * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n].peer = peer;
    l->v[l->n].off = off;
    l->v[l->n].bytes = bytes;
    l->n++;
    return 0;
}

static int by_peer(const void *p, const void *q)
{
    const rd_xfer *a = p, *b = q;
    return a->peer < b->peer ? -1 : a->peer > b->peer;
}

/* Odometer over per-dim index ranges [lo[i], hi[i]]; 0 when done. */
static int next_index(int nd, int64_t idx[], const int64_t lo[],
                      const int64_t hi[])
{
    for (int i = nd - 1; i >= 0; i--) {
        if (idx[i] < hi[i]) {
            idx[i]++;
            return 1;
        }
        idx[i] = lo[i];
    }
    return 0;
}

/* Set coordinates c[] of the axes of dim i of type t from block index
 * `blk` (mixed radix, minor axis last).  With `fixed` (mask of axes whose
 * coordinate must not change), returns -1 if the block needs another
 * coordinate on such an axis. */
static int decompose(const rd_xchg *x, const redist_type_t *t, int i,
                     int64_t blk, uint32_t fixed, int64_t c[])
{
    for (int k = t->dim_naxes[i] - 1; k >= 0; k--) {
        int ax = t->dims[i][k];
        int64_t v = blk % x->size[ax];
        blk /= x->size[ax];
        if (fixed >> ax & 1u) {
            if (c[ax] != v)
                return -1;
        } else {
            c[ax] = v;
        }
    }
    return 0;
}

redist_status_t rd_xchg_bind(rd_xchg *x, int64_t rank, redist_error_t *err)
{
    int nd = x->ndims;
    int64_t me[REDIST_MAX_AXES], c[REDIST_MAX_AXES];
    int64_t sa[REDIST_MAX_DIMS], sb[REDIST_MAX_DIMS];
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS], idx[REDIST_MAX_DIMS];
    int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
    uint32_t a_sh = sharded(&x->a), b_sh = sharded(&x->b);
    uint32_t free_axes = a_sh & ~b_sh;
    xlist snd = {0}, rcv = {0}, pk = {0};
    uint64_t pos = 0;

    rd_xchg_unbind(x);
    coords_of(x, rank, me);
    block_of(x, 0, me, sa, x->la);
    block_of(x, 1, me, sb, x->lb);
    int empty_a = 0, empty_b = 0;
    for (int i = 0; i < nd; i++) {
        empty_a |= x->la[i] == 0;
        empty_b |= x->lb[i] == 0;
    }

    /* sends: the `b` blocks that B(me) meets */
    for (int i = 0; i < nd && !empty_a; i++) {
        blocks_meeting(x, 1, i, sa[i], x->la[i], &lo[i], &hi[i]);
        idx[i] = lo[i];
    }
    if (!empty_a) do {
        memcpy(c, me, sizeof c);
        int ok = 1;
        for (int i = 0; i < nd && ok; i++)
            ok = decompose(x, &x->b, i, idx[i], ~a_sh, c) == 0;
        if (!ok)
            continue;
        /* one receiver with this block (free axes at my coordinates) */
        int64_t d = rank_of(x, c);
        if (!rd_xchg_box(x, rank, d, box, oa, ob))
            continue;
        uint64_t bytes = box_bytes(x, box);
        uint64_t off = x->pack ? pos : linear(x, x->la, oa);
        if (x->pack) {
            if (push(&pk, d, pos, bytes))
                goto nomem;
            pos += bytes;
        }
        /* every coordinate of the free axes receives the same piece */
        int64_t fc[REDIST_MAX_AXES];
        memcpy(fc, c, sizeof fc);
        for (int ax = 0; ax < x->naxes; ax++)
            if (free_axes >> ax & 1u)
                fc[ax] = 0;
        for (;;) {
            if (push(&snd, rank_of(x, fc), off, bytes))
                goto nomem;
            int ax = x->naxes - 1;
            for (; ax >= 0; ax--) {
                if (!(free_axes >> ax & 1u))
                    continue;
                if (++fc[ax] < x->size[ax])
                    break;
                fc[ax] = 0;
            }
            if (ax < 0)
                break;
        }
    } while (next_index(nd, idx, lo, hi));

    /* receives: the `a` blocks that T(me) meets, each from its holder */
    pos = 0;
    for (int i = 0; i < nd && !empty_b; i++) {
        blocks_meeting(x, 0, i, sb[i], x->lb[i], &lo[i], &hi[i]);
        idx[i] = lo[i];
    }
    if (!empty_b) do {
        memcpy(c, me, sizeof c);
        for (int i = 0; i < nd; i++)
            decompose(x, &x->a, i, idx[i], 0, c);
        int64_t e = rank_of(x, c);
        if (!rd_xchg_box(x, e, rank, box, oa, ob))
            continue;
        uint64_t bytes = box_bytes(x, box);
        if (push(&rcv, e, x->unpack ? pos : linear(x, x->lb, ob), bytes))
            goto nomem;
        pos += bytes;
    } while (next_index(nd, idx, lo, hi));

    if (snd.n > 1) /* qsort(NULL, 0, ...) is undefined (UBSan) */
        qsort(snd.v, (size_t)snd.n, sizeof *snd.v, by_peer);
    if (rcv.n > 1)
        qsort(rcv.v, (size_t)rcv.n, sizeof *rcv.v, by_peer);
    x->rank = rank;
    x->send = snd.v;
    x->nsend = snd.n;
    x->recv = rcv.v;
    x->nrecv = rcv.n;
    x->packs = pk.v;
    x->npack = pk.n;
    return REDIST_OK;
nomem:
    free(snd.v);
    free(rcv.v);
    free(pk.v);
    return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                    "out of memory for the transfer lists of an exchange "
                    "on device %lld",
                    (long long)rank);
}

void rd_xchg_unbind(rd_xchg *x)
{
    free(x->send);
    free(x->recv);
    free(x->packs);
    x->send = x->recv = x->packs = NULL;
    x->nsend = x->nrecv = x->npack = 0;
    x->rank = -1;
}

void rd_xchg_pack(const rd_xchg *x, const void *in, void *out)
{
    int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
    int64_t zero[REDIST_MAX_DIMS] = {0};
    for (int64_t k = 0; k < x->npack; k++) {
        rd_xchg_box(x, x->rank, x->packs[k].peer, box, oa, ob);
        rd_kernel_box((char *)out + x->packs[k].off, box, zero, in, x->la,
                      oa, box, x->ndims, x->elem);
    }
}

void rd_xchg_unpack(const rd_xchg *x, const void *in, void *out)
{
    int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
    int64_t zero[REDIST_MAX_DIMS] = {0};
    for (int64_t k = 0; k < x->nrecv; k++) {
        rd_xchg_box(x, x->recv[k].peer, x->rank, box, oa, ob);
        rd_kernel_box(out, x->lb, ob, (const char *)in + x->recv[k].off, box,
                      zero, box, x->ndims, x->elem);
    }
}
