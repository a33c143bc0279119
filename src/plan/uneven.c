/*
 * Steps between layouts: the per-device semantics of the step table for
 * uneven specs (doc/spec-format.md section 7, doc/uneven.md).  Shared by the
 * solver (edge costs) and the replay (the verifier); it is the step
 * table's meaning, not a search.
 *
 * A step changes the type as in doc/spec-format.md section 2 (without its
 * divisibility preconditions) and moves the layout from `bl` to `al`.
 * Locality replaces divisibility: what device d holds after the step (its
 * box A_d) must be available where the step's data movement allows.
 *
 *   slice           A_d inside d's box before (B_d)               recv 0
 *   all_gather,     A_d inside the union of the boxes of d's group
 *   all_to_all      (the devices differing only on the axis: B_d with
 *                   the from-dim widened to the group's s blocks)  |A_d \ B_d|
 *   reduce_scatter  A_d inside B_d (every member holds B_d)        (s-1)|A_d|
 *   all_reduce      A_d inside B_d                                 2(s-1)/s |A_d|
 *   permute         A_d is a block of the layout before (a whole
 *                   box of one sender)                             |A_d|, 0 if A_d = B_d
 *   exchange        any (pieces from their holders)                |A_d \ B_d|
 *
 * Figures are per device, in bytes; a step's figure is the maximum over
 * devices.  What a step does on device d depends on d's boxes in the two
 * layouts only, so devices that agree on the axes the two types shard
 * behave alike: the evaluation enumerates the coordinates of the axes in
 * `mask` only (the caller's choice, at least those axes).  The bound
 * max(src_d, dst_d) also depends on the axes the source and target shard:
 * a table of its least value per class of the mask (rd_ubounds) keeps the
 * check exact when the mask leaves them out, which makes a step between
 * two types that shard few axes cost what those axes span, not the whole
 * mesh.  Cost: O(devices enumerated * (dims + axes)) per step, plus
 * O(log k) per dim for a permute.
 */
#include <stdlib.h>
#include <string.h>

#include "steps.h"

typedef unsigned __int128 u128;

/* rd_ubounds' tables: per mask, the least bound of each class. */
#define RD_UB_SLOTS 64
#define RD_UB_MAX_ENTRIES (1 << 22)
typedef struct rd_ubtab {
    uint32_t mask;
    int64_t stride[REDIST_MAX_AXES]; /* of the mask's axes, else 0 */
    uint64_t *least;
} rd_ubtab;
struct rd_ubcache {
    rd_ubtab t[RD_UB_SLOTS];
    int n;
};

void rd_uctx_init(rd_uctx *u, const rd_ctx *cx, const rd_ctype *src,
                  const rd_layout *src_l, const rd_ctype *dst,
                  const rd_layout *dst_l, uint64_t D,
                  const redist_cost_model_t *cm)
{
    memset(u, 0, sizeof *u);
    u->cx = cx;
    u->mesh.naxes = cx->naxes;
    u->mesh.ndevices = 1;
    for (int a = cx->naxes - 1; a >= 0; a--) {
        u->mesh.size[a] = cx->size[a];
        u->mesh.stride[a] = u->mesh.ndevices;
        u->mesh.ndevices *= cx->size[a];
    }
    rd_ctype_to_type(src, &u->src);
    rd_ctype_to_type(dst, &u->dst);
    u->src_l = src_l;
    u->dst_l = dst_l;
    u->D = D ? D : 1;
    u->cm = cm;
    u->bc = calloc(1, sizeof *u->bc);
}

static uint64_t box_elems(int n, const int64_t lo[], const int64_t hi[])
{
    uint64_t e = 1;
    for (int i = 0; i < n; i++)
        e *= (uint64_t)(hi[i] - lo[i]);
    return e;
}

static uint64_t common_elems(int n, const int64_t alo[], const int64_t ahi[],
                             const int64_t blo[], const int64_t bhi[])
{
    uint64_t e = 1;
    for (int i = 0; i < n && e; i++) {
        int64_t lo = alo[i] > blo[i] ? alo[i] : blo[i];
        int64_t hi = ahi[i] < bhi[i] ? ahi[i] : bhi[i];
        e *= hi > lo ? (uint64_t)(hi - lo) : 0;
    }
    return e;
}

static int inside(int n, const int64_t alo[], const int64_t ahi[],
                  const int64_t blo[], const int64_t bhi[])
{
    if (box_elems(n, alo, ahi) == 0)
        return 1; /* nothing needed */
    for (int i = 0; i < n; i++)
        if (alo[i] < blo[i] || ahi[i] > bhi[i])
            return 0;
    return 1;
}

/* The last j with b[j] <= x (b nondecreasing, k+1 entries). */
static int64_t block_at(const int64_t *b, int64_t k, int64_t x)
{
    int64_t lo = 0, hi = k; /* b[lo] <= x */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (b[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Blocks of layout l along each dim that meet [lo, hi), multiplied. */
static uint64_t blocks_met(const rd_layout *l, const int64_t lo[],
                           const int64_t hi[])
{
    uint64_t n = 1;
    for (int i = 0; i < l->ndims; i++) {
        int64_t first = block_at(l->b[i], l->k[i], lo[i]);
        int64_t last = block_at(l->b[i], l->k[i], hi[i] - 1);
        n *= (uint64_t)(last - first + 1);
    }
    return n;
}

/* Every combination of coordinates on the axes of a mask (others 0):
 * it_init, then do { ... } while (it_next(&it)). */
typedef struct {
    int ax[REDIST_MAX_AXES], nax;
    int64_t coord[REDIST_MAX_AXES];
    const int64_t *size;
} dev_iter;

static void it_init(dev_iter *it, const rd_uctx *u, uint32_t mask)
{
    memset(it, 0, sizeof *it);
    it->size = u->mesh.size;
    for (int a = 0; a < u->mesh.naxes; a++)
        if (mask >> a & 1u)
            it->ax[it->nax++] = a;
}

static int it_next(dev_iter *it)
{
    int k = 0;
    while (k < it->nax && ++it->coord[it->ax[k]] == it->size[it->ax[k]])
        it->coord[it->ax[k++]] = 0;
    return k < it->nax;
}

static int64_t rank_of(const rd_uctx *u, const int64_t coord[])
{
    int64_t r = 0;
    for (int a = 0; a < u->mesh.naxes; a++)
        r += coord[a] * u->mesh.stride[a];
    return r;
}

/* Bytes device `coord` may hold: max(src_d, dst_d). */
static uint64_t device_bound(const rd_uctx *u, const int64_t coord[])
{
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    int n = u->cx->ndims;
    rd_layout_box_coord(u->src_l, &u->src, &u->mesh, coord, lo, hi);
    uint64_t s = box_elems(n, lo, hi);
    rd_layout_box_coord(u->dst_l, &u->dst, &u->mesh, coord, lo, hi);
    uint64_t d = box_elems(n, lo, hi);
    return (s > d ? s : d) * u->cx->elem_size;
}

void rd_uctx_free(rd_uctx *u)
{
    if (u && u->bc) {
        for (int i = 0; i < u->bc->n; i++)
            free(u->bc->t[i].least);
        free(u->bc);
        u->bc = NULL;
    }
}

/* The axes a type shards. */
static uint32_t type_axes(const redist_type_t *t)
{
    uint32_t m = 0;
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++)
            m |= 1u << t->dims[i][k];
    return m;
}

static const rd_ubtab *ub_find(const rd_uctx *u, uint32_t mask)
{
    for (int i = 0; u->bc && i < u->bc->n; i++)
        if (u->bc->t[i].mask == mask)
            return &u->bc->t[i];
    return NULL;
}

int rd_ubounds(const rd_uctx *u, uint32_t mask)
{
    if (ub_find(u, mask))
        return 0;
    if (!u->bc || u->bc->n == RD_UB_SLOTS)
        return -1;
    rd_ubtab *t = &u->bc->t[u->bc->n];
    memset(t, 0, sizeof *t);
    t->mask = mask;
    uint64_t n = 1;
    for (int a = 0; a < u->mesh.naxes; a++)
        if (mask >> a & 1u) {
            t->stride[a] = (int64_t)n;
            n *= (uint64_t)u->mesh.size[a];
            if (n > RD_UB_MAX_ENTRIES)
                return -1;
        }
    t->least = malloc(sizeof *t->least * (size_t)n);
    if (!t->least)
        return -1;
    memset(t->least, 0xff, sizeof *t->least * (size_t)n);
    dev_iter it;
    it_init(&it, u, mask | type_axes(&u->src) | type_axes(&u->dst));
    do {
        uint64_t idx = 0, b = device_bound(u, it.coord);
        for (int a = 0; a < u->mesh.naxes; a++)
            idx += (uint64_t)(it.coord[a] * t->stride[a]);
        if (b < t->least[idx])
            t->least[idx] = b;
    } while (it_next(&it));
    u->bc->n++;
    return 0;
}

/* The bound of device `coord`'s class under table `t` (NULL: the
 * device's own bound; the mask then holds the source's and target's
 * axes). */
static uint64_t class_bound(const rd_uctx *u, const rd_ubtab *t,
                            const int64_t coord[])
{
    if (!t)
        return device_bound(u, coord);
    uint64_t idx = 0;
    for (int a = 0; a < u->mesh.naxes; a++)
        idx += (uint64_t)(coord[a] * t->stride[a]);
    return t->least[idx];
}

void rd_uheld(const rd_uctx *u, const rd_ctype *t, const rd_layout *l,
              uint32_t mask, rd_ueval *ev, uint64_t *dev_held)
{
    redist_type_t tt;
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    dev_iter it;
    const int64_t *coord = it.coord;
    rd_ctype_to_type(t, &tt);
    const rd_ubtab *bt = ub_find(u, mask);
    memset(ev, 0, sizeof *ev);
    ev->within = 1;
    it_init(&it, u, mask);
    do {
        rd_layout_box_coord(l, &tt, &u->mesh, coord, lo, hi);
        uint64_t held = box_elems(u->cx->ndims, lo, hi) * u->cx->elem_size;
        if (held > ev->max_held)
            ev->max_held = held;
        if (held > class_bound(u, bt, coord))
            ev->within = 0;
        if (dev_held)
            dev_held[rank_of(u, coord)] = held;
    } while (it_next(&it));
}

/* The position of `axis` in the before type: its dim, or -1. */
static int dim_of_axis(const redist_type_t *t, int axis)
{
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++)
            if (t->dims[i][k] == axis)
                return i;
    return -1;
}

static int ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                      const rd_layout *bl, const rd_ctype *at,
                      const rd_layout *al, uint32_t mask, rd_ueval *ev,
                      u128 *dev_recv, uint64_t *dev_held,
                      rd_ueval_stop_fn stop, void *user, char *why,
                      size_t whylen);

int rd_ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                  const rd_layout *bl, const rd_ctype *at,
                  const rd_layout *al, uint32_t mask, rd_ueval *ev,
                  u128 *dev_recv, uint64_t *dev_held, char *why,
                  size_t whylen)
{
    return ustep_eval(u, st, bt, bl, at, al, mask, ev, dev_recv, dev_held,
                      NULL, NULL, why, whylen);
}

int rd_ustep_eval_until(const rd_uctx *u, const rd_step *st,
                        const rd_ctype *bt, const rd_layout *bl,
                        const rd_ctype *at, const rd_layout *al,
                        uint32_t mask, rd_ueval *ev, rd_ueval_stop_fn stop,
                        void *user, char *why, size_t whylen)
{
    return ustep_eval(u, st, bt, bl, at, al, mask, ev, NULL, NULL, stop,
                      user, why, whylen);
}

/* Why the device at coord cannot take part in a step of kind op. */
static void why_not_local(const rd_uctx *u, int op, const int64_t *coord,
                          char *why, size_t whylen)
{
    char c[96];
    size_t pos = 0;
    c[0] = '\0';
    for (int x = 0; x < u->mesh.naxes; x++)
        rd_appendf(c, sizeof c, &pos, "%s%lld", x ? "," : "",
                   (long long)coord[x]);
    snprintf(why, whylen,
             "device (%s) would need elements it cannot get from %s "
             "(its box after the step is not %s)",
             c, op == REDIST_OP_PERMUTE ? "a single sender" : "its group",
             op == REDIST_OP_PERMUTE ? "a block of the layout before"
             : op == REDIST_OP_SLICE ? "inside its box before"
                                     : "inside what its group holds");
}

static int ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                      const rd_layout *bl, const rd_ctype *at,
                      const rd_layout *al, uint32_t mask, rd_ueval *ev,
                      u128 *dev_recv, uint64_t *dev_held,
                      rd_ueval_stop_fn stop, void *user, char *why,
                      size_t whylen)
{
    redist_type_t b, a;
    dev_iter it;
    const int64_t *coord = it.coord;
    int n = u->cx->ndims, op = st->op;
    uint64_t es = u->cx->elem_size;
    int64_t s = st->axis >= 0 && st->axis < u->cx->naxes
                    ? u->cx->size[st->axis]
                    : 1;
    rd_ctype_to_type(bt, &b);
    rd_ctype_to_type(at, &a);
    /* the dim whose blocks the group spans (gather, all_to_all) */
    int gdim = op == REDIST_OP_ALL_GATHER || op == REDIST_OP_ALL_TO_ALL
                   ? dim_of_axis(&b, st->axis)
                   : -1;
    const rd_ubtab *btab = ub_find(u, mask);
    int link = u->cm ? rd_step_link(u->cx, u->cm, st, bt, at) : -1;
    memset(ev, 0, sizeof *ev);
    ev->within = 1;
    int bad = 0;
    it_init(&it, u, mask);
    do {
        int64_t blo[REDIST_MAX_DIMS], bhi[REDIST_MAX_DIMS];
        int64_t alo[REDIST_MAX_DIMS], ahi[REDIST_MAX_DIMS];
        rd_layout_box_coord(bl, &b, &u->mesh, coord, blo, bhi);
        rd_layout_box_coord(al, &a, &u->mesh, coord, alo, ahi);
        uint64_t ea = box_elems(n, alo, ahi), eb = box_elems(n, blo, bhi);
        uint64_t common = common_elems(n, alo, ahi, blo, bhi);
        uint64_t peers = 0;
        u128 recv = 0; /* bytes * D */
        int ok = 1;
        switch (op) {
        case REDIST_OP_SLICE:
            ok = inside(n, alo, ahi, blo, bhi);
            break;
        case REDIST_OP_ALL_GATHER:
        case REDIST_OP_ALL_TO_ALL:
            if (gdim >= 0) {
                int64_t j = rd_layout_block_index(&b, &u->mesh, gdim, coord);
                int64_t first = j - coord[st->axis];
                blo[gdim] = bl->b[gdim][first];
                bhi[gdim] = bl->b[gdim][first + s];
            }
            ok = inside(n, alo, ahi, blo, bhi);
            recv = (u128)(ea - common) * es * u->D;
            break;
        case REDIST_OP_REDUCE_SCATTER:
            ok = inside(n, alo, ahi, blo, bhi);
            recv = (u128)ea * es * (uint64_t)(s - 1) * u->D;
            break;
        case REDIST_OP_ALL_REDUCE:
            ok = inside(n, alo, ahi, blo, bhi);
            recv = (u128)ea * es * 2u * (uint64_t)(s - 1) * (u->D / (uint64_t)s);
            break;
        case REDIST_OP_PERMUTE:
            if (ea == 0)
                break;
            for (int i = 0; i < n && ok; i++) {
                int64_t j = block_at(bl->b[i], bl->k[i], alo[i]);
                ok = bl->b[i][j] == alo[i] && j < bl->k[i] &&
                     bl->b[i][j + 1] == ahi[i];
            }
            if (!(ea == eb && common == ea))
                recv = (u128)ea * es * u->D;
            break;
        default: /* exchange */
            recv = (u128)(ea - common) * es * u->D;
            if (ea)
                peers = blocks_met(bl, alo, ahi) - (common ? 1 : 0);
            break;
        }
        if (!ok) {
            bad = 1;
            why_not_local(u, op, coord, why, whylen);
            break;
        }
        uint64_t held = ea * es;
        int grew = 0;
        if (held > ev->max_held) {
            ev->max_held = held;
            grew = 1;
        }
        if (ev->within && held > class_bound(u, btab, coord)) {
            ev->within = 0;
            grew = 1;
        }
        if (recv > ev->max_recv) {
            ev->max_recv = recv;
            grew = 1;
        }
        if (u->cm) {
            uint64_t rb = (uint64_t)((recv + u->D - 1) / u->D);
            double t = rd_step_time_on(u->cx, u->cm, st, link, eb * es, rb,
                                       peers);
            if (t > ev->max_time) {
                ev->max_time = t;
                grew = 1;
            }
        }
        if (grew && stop && stop(user, ev))
            return 1;
        if (dev_recv)
            dev_recv[rank_of(u, coord)] = recv;
        if (dev_held)
            dev_held[rank_of(u, coord)] = held;
    } while (it_next(&it));
    return bad ? -1 : 0;
}
