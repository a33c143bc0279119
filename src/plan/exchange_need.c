/*
 * The exchange step's per-device need (rd_exchange_need and its early-
 * stopping form; steps.h): the most elements any device receives from
 * other devices and the most peers it receives from, between any two
 * types, exactly, without visiting every device.
 *
 * It works per component: dims joined by the axes that
 * move between them (an axis of a's dim i and b's dim j joins i and j).
 * A device's common part is the product over dims of the overlaps of its
 * two blocks, and its piece count the product of the b block's pieces; a
 * dim's factors depend only on the coordinates of the axes in its lists,
 * so components vary independently: the least common part is the product
 * of each component's least, the most pieces the product of each one's
 * most.  A device with the most pieces and no common part exists exactly
 * when some component has a combination with its most pieces and none in
 * common.  Within a component, an odometer over its axes updates only the
 * dims of the axis that moved.  An axis that moves both blocks of its dim
 * by the same step (in both lists of one dim at the same scale, as in a
 * common prefix) changes neither factor: the step is a multiple of a's
 * local size, so the overlap and the piece count are translated, not
 * changed; it stays at coordinate 0.
 *
 * When every dim is nested (one of its two local sizes divides the
 * other, as with power-of-two shapes and axes) the factors are simpler
 * still: the piece count is the same on every device, and the common part
 * is a fixed product or 0; it is 0 exactly when one dim's two blocks are
 * disjoint on some device, which that dim's own axes decide alone
 * (xneed_nested).
 *
 * Cost: per component, the product of the sizes of its moving axes
 * (at most `limit` in all); nested, per dim the product of the sizes of
 * the axes in its two lists, stopped at the first disjoint pair.  Memory:
 * a few arrays of REDIST_MAX_DIMS.  tests/exec/test_exchange.c checks
 * both against every device enumerated from the definition.
 */
#include <string.h>

#include "steps.h"

typedef struct {
    int64_t la, lb;     /* the two local sizes */
    int64_t sa, sb;     /* current block starts */
    uint64_t ov, blk;   /* overlap, pieces of the b block */
    int nested;         /* one size divides the other: blk never changes */
} xdim_t;

static void xdim_eval(xdim_t *d)
{
    int64_t lo = d->sa > d->sb ? d->sa : d->sb;
    int64_t hi = d->sa + d->la < d->sb + d->lb ? d->sa + d->la
                                               : d->sb + d->lb;
    d->ov = hi > lo ? (uint64_t)(hi - lo) : 0;
}

/* Block starts are multiples of their sizes, so when one size divides
 * the other the b block always spans lb/la a blocks (la | lb) or lies in
 * one (lb | la): blk is that of the device of coordinates 0, and the two
 * divisions below -- most of the enumeration's time -- are skipped. */
static void xdim_blocks(xdim_t *d)
{
    if (d->nested)
        return;
    int64_t first = d->sb / d->la, last = (d->sb + d->lb - 1) / d->la;
    d->blk = (uint64_t)(last - first + 1);
}

/* One analysis from a to b: per axis its dim in a and in b (-1: none)
 * and the step of its coordinate in that dim's block index; the dims'
 * components (comp[i]: the least dim joined to i) and their roots; per
 * dim its two blocks on the device of the odometer; per component the
 * running bounds (least common part, most pieces, whether a combination
 * with the most pieces has none in common). */
typedef struct {
    const rd_ctx *cx;
    uint32_t mask; /* the axes either type shards */
    int64_t la[REDIST_MAX_DIMS], lb[REDIST_MAX_DIMS];
    int adim[REDIST_MAX_AXES], bdim[REDIST_MAX_AXES];
    int64_t astr[REDIST_MAX_AXES], bstr[REDIST_MAX_AXES];
    int comp[REDIST_MAX_DIMS];
    int roots[REDIST_MAX_DIMS], nroots;
    xdim_t d[REDIST_MAX_DIMS];
    uint64_t eb; /* elements of a b block */
    uint64_t cmins[REDIST_MAX_DIMS], bmaxs[REDIST_MAX_DIMS];
    int zeros[REDIST_MAX_DIMS];
    rd_need_stop_fn stop;
    void *user;
} xneed_t;

/* The local sizes of a and b and the axes either shards (*mask): 0, or
 * -1 when a local size is not whole or more than `limit` combinations of
 * those axes' coordinates would be visited. */
static int xneed_local(const rd_ctx *cx, const rd_ctype *a,
                       const rd_ctype *b, uint64_t limit, int64_t la[],
                       int64_t lb[], uint32_t *mask)
{
    uint64_t combos = 1;
    *mask = rd_ctype_sharded(a) | rd_ctype_sharded(b);
    if (rd_ctype_local(cx, a, la) || rd_ctype_local(cx, b, lb))
        return -1;
    for (int x = 0; x < cx->naxes; x++)
        if (*mask >> x & 1u) {
            combos *= (uint64_t)cx->size[x];
            if (combos > limit)
                return -1;
        }
    return 0;
}

int rd_exchange_analysable(const rd_ctx *cx, const rd_ctype *a,
                           const rd_ctype *b, uint64_t limit)
{
    int64_t la[REDIST_MAX_DIMS], lb[REDIST_MAX_DIMS];
    uint32_t mask;
    return xneed_local(cx, a, b, limit, la, lb, &mask) == 0;
}

int rd_exchange_need(const rd_ctx *cx, const rd_ctype *a, const rd_ctype *b,
                     uint64_t limit, uint64_t *max_elems, uint64_t *max_peers)
{
    return rd_exchange_need_until(cx, a, b, limit, NULL, NULL, max_elems,
                                  max_peers);
}

/* Each axis's dim and coordinate step in a and in b, and the dims'
 * components. */
static void xneed_places(xneed_t *X, const rd_ctype *a, const rd_ctype *b)
{
    const rd_ctx *cx = X->cx;
    rd_ctype_places(cx, a, X->adim, X->astr, NULL);
    rd_ctype_places(cx, b, X->bdim, X->bstr, NULL);
    int *comp = X->comp;
    for (int i = 0; i < cx->ndims; i++)
        comp[i] = i;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int x = 0; x < cx->naxes; x++) {
            if (X->adim[x] < 0 || X->bdim[x] < 0)
                continue;
            int ca = comp[X->adim[x]], cb = comp[X->bdim[x]];
            if (ca == cb)
                continue;
            int lo = ca < cb ? ca : cb, hi = ca < cb ? cb : ca;
            for (int i = 0; i < cx->ndims; i++)
                if (comp[i] == hi)
                    comp[i] = lo;
            changed = 1;
        }
    }
}

/* The device of coordinates 0: every dim's two blocks, and every
 * component's bounds from it. */
static void xneed_first(xneed_t *X)
{
    const rd_ctx *cx = X->cx;
    X->eb = 1;
    for (int i = 0; i < cx->ndims; i++) {
        X->eb *= (uint64_t)X->lb[i];
        X->d[i].la = X->la[i];
        X->d[i].lb = X->lb[i];
        X->d[i].sa = X->d[i].sb = 0;
        X->d[i].nested = 0;
        xdim_eval(&X->d[i]);
        xdim_blocks(&X->d[i]);
        X->d[i].nested = X->la[i] > 0 && X->lb[i] > 0 &&
                         (X->lb[i] % X->la[i] == 0 || X->la[i] % X->lb[i] == 0);
    }
    for (int c = 0; c < cx->ndims; c++) {
        if (X->comp[c] != c)
            continue;
        uint64_t common = 1, blocks = 1;
        for (int i = 0; i < cx->ndims; i++)
            if (X->comp[i] == c) {
                common *= X->d[i].ov;
                blocks *= X->d[i].blk;
            }
        X->cmins[c] = common;
        X->bmaxs[c] = blocks;
        X->zeros[c] = common == 0;
        X->roots[X->nroots++] = c;
    }
}

/* The running bounds, every component's combined, give a device whose
 * need and piece count are at least (lower bounds of the maxima): 1 when
 * stop says they make the analysis moot. */
static int xneed_stop(const xneed_t *X)
{
    uint64_t common = 1, blocks = 1;
    int z = 0;
    for (int r = 0; r < X->nroots; r++) {
        common *= X->cmins[X->roots[r]];
        blocks *= X->bmaxs[X->roots[r]];
        z |= X->zeros[X->roots[r]];
    }
    return X->stop(X->user, X->eb - common, blocks - (z ? 0 : 1));
}

/* Component c's bounds over every combination of its moving axes'
 * coordinates (the odometer): 1 when stop ended it early. */
static int xneed_component(xneed_t *X, int c)
{
    const rd_ctx *cx = X->cx;
    xdim_t *d = X->d;
    int dims[REDIST_MAX_DIMS], nd = 0, axes[REDIST_MAX_AXES], n = 0;
    int64_t coord[REDIST_MAX_AXES];
    for (int i = 0; i < cx->ndims; i++)
        if (X->comp[i] == c)
            dims[nd++] = i;
    for (int x = 0; x < cx->naxes; x++) {
        int ia = X->adim[x], ib = X->bdim[x];
        if ((X->mask >> x & 1u) &&
            ((ia >= 0 && X->comp[ia] == c) ||
             (ib >= 0 && X->comp[ib] == c)) &&
            !(ia == ib && X->astr[x] * X->la[ia] == X->bstr[x] * X->lb[ib])) {
            coord[n] = 0;
            axes[n++] = x;
        }
    }
    uint64_t cmin = X->cmins[c], bmax = X->bmaxs[c];
    int zero = X->zeros[c];
    for (;;) {
        uint64_t common = 1, blocks = 1;
        for (int j = 0; j < nd; j++) {
            common *= d[dims[j]].ov;
            blocks *= d[dims[j]].blk;
        }
        int better = 0;
        if (common < cmin) {
            cmin = common;
            better = 1;
        }
        if (blocks > bmax) {
            bmax = blocks;
            zero = 0;
            better = 1;
        }
        if (blocks == bmax && common == 0 && !zero) {
            zero = 1;
            better = 1;
        }
        if (better && X->stop) {
            X->cmins[c] = cmin;
            X->bmaxs[c] = bmax;
            X->zeros[c] = zero;
            if (xneed_stop(X))
                return 1;
        }
        int k = 0;
        for (; k < n; k++) {
            int x = axes[k], ia = X->adim[x], ib = X->bdim[x];
            int wrap = ++coord[k] == cx->size[x];
            int64_t step = wrap ? -(cx->size[x] - 1) : 1;
            if (wrap)
                coord[k] = 0;
            if (ia >= 0)
                d[ia].sa += step * X->astr[x] * d[ia].la;
            if (ib >= 0) {
                d[ib].sb += step * X->bstr[x] * d[ib].lb;
                xdim_blocks(&d[ib]);
                xdim_eval(&d[ib]);
            }
            if (ia >= 0)
                xdim_eval(&d[ia]);
            if (!wrap)
                break;
        }
        if (k == n)
            break;
    }
    X->cmins[c] = cmin;
    X->bmaxs[c] = bmax;
    X->zeros[c] = zero;
    return 0;
}

/* Nested dims (every dim's one size divides the other): a device's two
 * blocks of a dim are disjoint or one holds the other, so its common part
 * is the product of the dims' min(la, lb) or 0, and its piece count is
 * the same on every device.  The least common part is then 0 exactly when
 * some dim's blocks are disjoint on some device, which depends on the
 * coordinates of that dim's own axes alone: one small odometer per dim,
 * stopped at the first disjoint pair, instead of one over a component. */
static int xneed_dim_parts(const xneed_t *X, int i)
{
    const rd_ctx *cx = X->cx;
    int axes[REDIST_MAX_AXES], n = 0;
    int64_t coord[REDIST_MAX_AXES], sa = 0, sb = 0;
    const int64_t la = X->la[i], lb = X->lb[i];
    for (int x = 0; x < cx->naxes; x++) {
        int ia = X->adim[x], ib = X->bdim[x];
        if (!(X->mask >> x & 1u) || (ia != i && ib != i) ||
            (ia == i && ib == i && X->astr[x] * la == X->bstr[x] * lb))
            continue;
        coord[n] = 0;
        axes[n++] = x;
    }
    for (;;) {
        if (sa + la <= sb || sb + lb <= sa)
            return 1;
        int k = 0;
        for (; k < n; k++) {
            int x = axes[k];
            int wrap = ++coord[k] == cx->size[x];
            int64_t step = wrap ? -(cx->size[x] - 1) : 1;
            if (wrap)
                coord[k] = 0;
            if (X->adim[x] == i)
                sa += step * X->astr[x] * la;
            if (X->bdim[x] == i)
                sb += step * X->bstr[x] * lb;
            if (!wrap)
                break;
        }
        if (k == n)
            return 0;
    }
}

static void xneed_nested(const xneed_t *X, uint64_t *max_elems,
                         uint64_t *max_peers)
{
    const rd_ctx *cx = X->cx;
    uint64_t common = 1, blocks = 1;
    int parts = 0;
    for (int i = 0; i < cx->ndims; i++) {
        common *= (uint64_t)(X->la[i] < X->lb[i] ? X->la[i] : X->lb[i]);
        blocks *= X->d[i].blk;
    }
    for (int i = 0; i < cx->ndims && !parts; i++)
        parts = xneed_dim_parts(X, i);
    *max_elems = X->eb - (parts ? 0 : common);
    *max_peers = blocks - (parts ? 0 : 1);
}

int rd_exchange_need_until(const rd_ctx *cx, const rd_ctype *a,
                           const rd_ctype *b, uint64_t limit,
                           rd_need_stop_fn stop, void *user,
                           uint64_t *max_elems, uint64_t *max_peers)
{
    xneed_t X;
    X.cx = cx;
    X.nroots = 0;
    X.stop = stop;
    X.user = user;
    if (xneed_local(cx, a, b, limit, X.la, X.lb, &X.mask))
        return -1;
    xneed_places(&X, a, b);
    xneed_first(&X);
    int nested = 1;
    for (int i = 0; i < cx->ndims; i++)
        nested &= X.d[i].nested;
    if (nested) { /* exact, and cheaper than asking stop */
        xneed_nested(&X, max_elems, max_peers);
        return 0;
    }
    if (stop && xneed_stop(&X))
        return 1;
    uint64_t min_common = 1, most_blocks = 1;
    int zero_at_most = 0;
    for (int c = 0; c < cx->ndims; c++) {
        if (X.comp[c] != c)
            continue;
        if (xneed_component(&X, c))
            return 1;
        min_common *= X.cmins[c];
        most_blocks *= X.bmaxs[c];
        zero_at_most |= X.zeros[c];
    }
    *max_elems = X.eb - min_common;
    *max_peers = most_blocks - (zero_at_most ? 0 : 1);
    return 0;
}
