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
 *
 * The search (rd_ustep_eval_until) evaluates most steps without
 * enumerating devices, with the same results:
 *  - the first RD_UEVAL_FIRST devices one by one: the stop function
 *    refuses most steps there (their maxima so far already lose);
 *  - the rest by classes.  What a step does on a device is a function of
 *    per-dim values: on dim i, the lengths of its boxes before and after,
 *    their overlap, whether the box after lies inside the box before (the
 *    group's on the gathered dim) or is a block before, the blocks before
 *    it meets.  Dim i's values depend on the coordinates of the axes the
 *    two types place on dim i only, and with ceil-like splits take a few
 *    distinct values (full, one partial, empty block...).  Each dim's
 *    values are tabulated over its axes (a "factor", cl_factor); dims
 *    that share no axis vary independently, and dims linked by shared
 *    axes (an axis moved from one dim to another) are joined over the
 *    shared axes only (cl_join_shared).  The figures are then computed
 *    once per combination of values that occurs.  Cost: O(sum over dims
 *    of the points of its axes + points of the shared axes + combinations)
 *    instead of O(devices);
 *  - `within` is a property of the layout after the step alone: every
 *    device d holds at most max(src_d, dst_d) (a class of any mask is
 *    within its least bound iff each of its devices is within its own).
 *    It is checked by the block indices of its dims (within_lb) against
 *    a table of least bounds per class of the axes that type shards among
 *    those the source or target shards (within_table: the minima of one
 *    finest table, each made once), and remembered per type and layout:
 *    O(points of that type's axes) once per type and layout.
 * Past their limits (too many distinct values, a mask without the axes
 * the types shard) the classes send the step back device by device.  The
 * replay (rd_ustep_eval) stays device by device: it reports per device.
 * tests/test_uneven_classes.c compares both evaluations step by step and
 * the plans byte for byte (rd_uneven_eval_mode).
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
/* within_all's results, by the type after the step and its layout. */
#define RD_WC_SLOTS 4096
typedef struct rd_wcent {
    int used, within;
    rd_ctype key;
    rd_layout l;
} rd_wcent;
struct rd_ubcache {
    rd_ubtab t[RD_UB_SLOTS];
    int n;
    rd_wcent *wc; /* RD_WC_SLOTS, or NULL */
    rd_ubtab w[RD_UB_SLOTS]; /* within_table's */
    int nw;
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
        for (int i = 0; i < u->bc->nw; i++)
            free(u->bc->w[i].least);
        for (int i = 0; u->bc->wc && i < RD_WC_SLOTS; i++)
            rd_layout_free(&u->bc->wc[i].l);
        free(u->bc->wc);
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

/* Table t of `mask` with every entry at its largest.  0, or -1. */
static int ub_alloc(const rd_uctx *u, uint32_t mask, rd_ubtab *t)
{
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
    return 0;
}

/* Table t of the least bound per class of `mask`.  0, or -1. */
static int ub_build(const rd_uctx *u, uint32_t mask, rd_ubtab *t)
{
    if (ub_alloc(u, mask, t))
        return -1;
    dev_iter it;
    it_init(&it, u, mask | type_axes(&u->src) | type_axes(&u->dst));
    do {
        uint64_t idx = 0, b = device_bound(u, it.coord);
        for (int a = 0; a < u->mesh.naxes; a++)
            idx += (uint64_t)(it.coord[a] * t->stride[a]);
        if (b < t->least[idx])
            t->least[idx] = b;
    } while (it_next(&it));
    return 0;
}

int rd_ubounds(const rd_uctx *u, uint32_t mask)
{
    if (ub_find(u, mask))
        return 0;
    if (!u->bc || u->bc->n == RD_UB_SLOTS ||
        ub_build(u, mask, &u->bc->t[u->bc->n]))
        return -1;
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


/* ------------------------------------------- evaluation by classes */

/* A factor is a function of the coordinates of a few axes (a dim's
 * blocks in one or two layouts) with few distinct values; the figures of
 * a device are a function of its factors' values.  Factors that share no
 * axis vary independently, so the values that occur together are the
 * products of those of each component (factors linked by shared axes),
 * and a component's joint values are found by enumerating its axes only.
 * The limits below send a step back to the evaluation device by device. */
#define CL_MAX_IDS 64           /* distinct values of one factor */
#define CL_MAX_FACTORS (3 * REDIST_MAX_DIMS)
#define CL_MAX_CODES (1u << 16) /* joint values of one component */
#define CL_MAX_COMBOS (1u << 20)
/* rd_uneven_eval_mode 3 (tests): limits small enough to be met */
#define CL_TIGHT (rd_uneven_eval_mode == 3)

typedef struct {
    int64_t v[4];
    int32_t c[2];
} clval;

typedef struct {
    int nf;
    uint32_t axes[CL_MAX_FACTORS];
    int64_t stride[CL_MAX_FACTORS][REDIST_MAX_AXES];
    int nid[CL_MAX_FACTORS];
    clval val[CL_MAX_FACTORS][CL_MAX_IDS];
    uint8_t *id[CL_MAX_FACTORS]; /* per point of the factor's axes */
    /* components: their factors, joint values (mixed radix over nid) */
    int ncomp;
    int nfc[CL_MAX_FACTORS], fc[CL_MAX_FACTORS][CL_MAX_FACTORS];
    uint32_t ncodes[CL_MAX_FACTORS];
    uint32_t *codes[CL_MAX_FACTORS];
} classes;

typedef void (*clval_fn)(const void *ctx, int f, const int64_t coord[],
                         clval *out);

static void cl_free(classes *C)
{
    for (int f = 0; f < C->nf; f++)
        free(C->id[f]);
    for (int c = 0; c < C->ncomp; c++)
        free(C->codes[c]);
}

/* Factor C->nf over `axes`: fn's value at every point.  0, or -1 past
 * the limits (or out of memory). */
static int cl_factor(classes *C, const rd_uctx *u, uint32_t axes, clval_fn fn,
                     const void *ctx)
{
    int f = C->nf;
    size_t n = 1;
    memset(C->stride[f], 0, sizeof C->stride[f]);
    for (int a = 0; a < u->mesh.naxes; a++)
        if (axes >> a & 1u) {
            C->stride[f][a] = (int64_t)n;
            n *= (size_t)u->mesh.size[a];
        }
    C->axes[f] = axes;
    C->nid[f] = 0;
    C->id[f] = malloc(n);
    if (!C->id[f])
        return -1;
    C->nf++;
    dev_iter it;
    size_t idx = 0;
    int last = -1;
    it_init(&it, u, axes); /* first axis fastest: the strides' order */
    do {
        clval v;
        memset(&v, 0, sizeof v);
        fn(ctx, f, it.coord, &v);
        int k = last;
        if (k < 0 || memcmp(&C->val[f][k], &v, sizeof v)) {
            for (k = 0; k < C->nid[f]; k++)
                if (!memcmp(&C->val[f][k], &v, sizeof v))
                    break;
            if (k == C->nid[f]) {
                if (k == (CL_TIGHT ? 3 : CL_MAX_IDS))
                    return -1;
                C->val[f][C->nid[f]++] = v;
            }
        }
        last = k;
        C->id[f][idx++] = (uint8_t)k;
    } while (it_next(&it));
    return 0;
}

/* The joint values of component c (several factors, R codes at most):
 * for each point of the axes that two or more of its factors share, the
 * values each factor takes over its other axes (a bit set), and every
 * combination of those.  0, or -1 out of memory. */
static int cl_join_shared(classes *C, const rd_uctx *u, int c, uint64_t R)
{
    int nk = C->nfc[c], r = -1;
    uint32_t shared = 0, once = 0;
    for (int k = 0; k < nk; k++) {
        uint32_t ax = C->axes[C->fc[c][k]];
        shared |= once & ax;
        once |= ax;
    }
    uint64_t *bits[CL_MAX_FACTORS] = {0};
    int64_t sst[CL_MAX_FACTORS][REDIST_MAX_AXES];
    uint8_t *seen = calloc((size_t)R, 1);
    if (!seen)
        return -1;
    /* bits[k][point of the factor's shared axes]: its values there */
    for (int k = 0; k < nk; k++) {
        int f = C->fc[c][k];
        uint32_t sf = C->axes[f] & shared;
        size_t n = 1;
        memset(sst[k], 0, sizeof sst[k]);
        for (int a = 0; a < u->mesh.naxes; a++)
            if (sf >> a & 1u) {
                sst[k][a] = (int64_t)n;
                n *= (size_t)u->mesh.size[a];
            }
        bits[k] = calloc(n, sizeof *bits[k]);
        if (!bits[k])
            goto out;
        dev_iter it;
        size_t idx = 0;
        it_init(&it, u, C->axes[f]);
        do {
            int64_t si = 0;
            for (int x = 0; x < it.nax; x++)
                si += it.coord[it.ax[x]] * sst[k][it.ax[x]];
            bits[k][si] |= 1ull << C->id[f][idx++];
        } while (it_next(&it));
    }
    dev_iter it;
    it_init(&it, u, shared);
    do {
        uint64_t set[CL_MAX_FACTORS], left[CL_MAX_FACTORS];
        for (int k = 0; k < nk; k++) {
            int64_t si = 0;
            for (int x = 0; x < it.nax; x++)
                si += it.coord[it.ax[x]] * sst[k][it.ax[x]];
            set[k] = left[k] = bits[k][si];
        }
        /* every choice of one value per factor: odometer over the sets */
        for (;;) {
            uint32_t code = 0, radix = 1;
            for (int k = 0; k < nk; k++) {
                code += (uint32_t)__builtin_ctzll(left[k]) * radix;
                radix *= (uint32_t)C->nid[C->fc[c][k]];
            }
            if (!seen[code]) {
                seen[code] = 1;
                C->codes[c][C->ncodes[c]++] = code;
            }
            int k = 0;
            while (k < nk) {
                left[k] &= left[k] - 1;
                if (left[k])
                    break;
                left[k] = set[k];
                k++;
            }
            if (k == nk)
                break;
        }
    } while (it_next(&it));
    r = 0;
out:
    for (int k = 0; k < nk; k++)
        free(bits[k]);
    free(seen);
    return r;
}

/* The components and their joint values.  0, or -1 past the limits. */
static int cl_join(classes *C, const rd_uctx *u)
{
    int comp[CL_MAX_FACTORS];
    uint32_t caxes[CL_MAX_FACTORS];
    for (int f = 0; f < C->nf; f++)
        comp[f] = -1;
    C->ncomp = 0;
    for (int f = 0; f < C->nf; f++) {
        if (comp[f] >= 0)
            continue;
        int c = C->ncomp++;
        comp[f] = c;
        caxes[c] = C->axes[f];
        for (int grew = 1; grew;) {
            grew = 0;
            for (int g = 0; g < C->nf; g++)
                if (comp[g] < 0 && (C->axes[g] & caxes[c])) {
                    comp[g] = c;
                    caxes[c] |= C->axes[g];
                    grew = 1;
                }
        }
        C->nfc[c] = 0;
        for (int g = 0; g < C->nf; g++)
            if (comp[g] == c)
                C->fc[c][C->nfc[c]++] = g;
    }
    uint64_t combos = 1;
    for (int c = 0; c < C->ncomp; c++)
        C->codes[c] = NULL; /* cl_free's, whatever fails below */
    for (int c = 0; c < C->ncomp; c++) {
        uint64_t R = 1;
        for (int k = 0; k < C->nfc[c]; k++) {
            R *= (uint64_t)C->nid[C->fc[c][k]];
            if (R > (CL_TIGHT ? 8 : CL_MAX_CODES))
                return -1;
        }
        C->codes[c] = malloc(sizeof *C->codes[c] * (size_t)R);
        if (!C->codes[c])
            return -1;
        C->ncodes[c] = 0;
        if (C->nfc[c] == 1) { /* every value occurs */
            for (uint32_t k = 0; k < R; k++)
                C->codes[c][C->ncodes[c]++] = k;
        } else if (cl_join_shared(C, u, c, R)) {
            return -1;
        }
        combos *= C->ncodes[c];
        if (combos > (CL_TIGHT ? 16 : CL_MAX_COMBOS))
            return -1;
    }
    return 0;
}

/* Every combination of the components' joint values: cl_first, then
 * do { ... } while (cl_next(...)); ids[f] holds factor f's value id. */
static void cl_decode(const classes *C, int c, uint32_t code, int ids[])
{
    for (int k = 0; k < C->nfc[c]; k++) {
        int f = C->fc[c][k];
        ids[f] = (int)(code % (uint32_t)C->nid[f]);
        code /= (uint32_t)C->nid[f];
    }
}

static void cl_first(const classes *C, uint32_t pos[], int ids[])
{
    for (int c = 0; c < C->ncomp; c++) {
        pos[c] = 0;
        cl_decode(C, c, C->codes[c][0], ids);
    }
}

static int cl_next(const classes *C, uint32_t pos[], int ids[])
{
    for (int c = 0; c < C->ncomp; c++) {
        if (++pos[c] < C->ncodes[c]) {
            cl_decode(C, c, C->codes[c][pos[c]], ids);
            return 1;
        }
        pos[c] = 0;
        cl_decode(C, c, C->codes[c][0], ids);
    }
    return 0;
}

/* What the step's per-dim factors need. */
typedef struct {
    const rd_uctx *u;
    const redist_type_t *b, *a;
    const rd_layout *bl, *al;
    int op, gdim, axis;
    int64_t s;
} stepctx;

/* Dim f of device `coord`: its boxes' lengths before and after, their
 * overlap, the number of blocks before that its box after meets
 * (exchange), whether the box after lies inside the box before (the
 * group's on the gathered dim) and is a block before (permute). */
static void dim_value(const void *ctx, int f, const int64_t coord[],
                      clval *out)
{
    const stepctx *x = ctx;
    const int64_t *bb = x->bl->b[f], *ab = x->al->b[f];
    int64_t jb = rd_layout_block_index(x->b, &x->u->mesh, f, coord);
    int64_t ja = rd_layout_block_index(x->a, &x->u->mesh, f, coord);
    int64_t blo = bb[jb], bhi = bb[jb + 1], alo = ab[ja], ahi = ab[ja + 1];
    int64_t lo = alo > blo ? alo : blo, hi = ahi < bhi ? ahi : bhi;
    out->v[0] = ahi - alo;
    out->v[1] = bhi - blo;
    out->v[2] = hi > lo ? hi - lo : 0;
    if (f == x->gdim) {
        int64_t first = jb - coord[x->axis];
        blo = bb[first];
        bhi = bb[first + x->s];
    }
    out->c[0] = alo >= blo && ahi <= bhi;
    if (x->op == REDIST_OP_PERMUTE) {
        int64_t j = block_at(bb, x->bl->k[f], alo);
        out->c[1] = bb[j] == alo && j < x->bl->k[f] && bb[j + 1] == ahi;
    } else if (x->op > REDIST_OP_PERMUTE && ahi > alo) { /* exchange */
        out->v[3] = block_at(bb, x->bl->k[f], ahi - 1) -
                    block_at(bb, x->bl->k[f], alo) + 1;
    }
}

/* Factors of `within`: dim f % n of the type after (f < n), the source
 * (f < 2n), the target: its box's length. */
typedef struct {
    const rd_uctx *u;
    const redist_type_t *t[3];
    const rd_layout *l[3];
} boundctx;

static void len_value(const void *ctx, int f, const int64_t coord[],
                      clval *out)
{
    const boundctx *x = ctx;
    int n = x->u->cx->ndims, w = f / n, i = f % n;
    int64_t j = rd_layout_block_index(x->t[w], &x->u->mesh, i, coord);
    out->v[0] = x->l[w]->b[i][j + 1] - x->l[w]->b[i][j];
}

static uint32_t dim_axes(const redist_type_t *t, int i)
{
    uint32_t m = 0;
    for (int k = 0; k < t->dim_naxes[i]; k++)
        m |= 1u << t->dims[i][k];
    return m;
}

/* 1 when every device holds at most max(src_d, dst_d) after the step
 * (type a, layout al), 0 when one holds more, -1 past the class limits.
 * This is the `within` of an evaluation over any mask that holds a's
 * axes: a class of the mask (rd_ubounds) is within its least bound iff
 * each of its devices is within its own, a's boxes being the same
 * across the class. */
static int within_all(const rd_uctx *u, const redist_type_t *a,
                      const rd_layout *al, classes *C)
{
    boundctx x = {u, {a, &u->src, &u->dst}, {al, u->src_l, u->dst_l}};
    int n = u->cx->ndims, r = -1, ids[CL_MAX_FACTORS];
    uint32_t pos[CL_MAX_FACTORS];
    uint64_t es = u->cx->elem_size;
    C->nf = C->ncomp = 0;
    for (int f = 0; f < 3 * n; f++)
        if (cl_factor(C, u, dim_axes(x.t[f / n], f % n), len_value, &x))
            goto out;
    if (cl_join(C, u))
        goto out;
    r = 1;
    cl_first(C, pos, ids);
    do {
        uint64_t h = 1, sb = 1, db = 1;
        for (int i = 0; i < n; i++) {
            h *= (uint64_t)C->val[i][ids[i]].v[0];
            sb *= (uint64_t)C->val[n + i][ids[n + i]].v[0];
            db *= (uint64_t)C->val[2 * n + i][ids[2 * n + i]].v[0];
        }
        if (h * es > (sb > db ? sb : db) * es) {
            r = 0;
            break;
        }
    } while (cl_next(C, pos, ids));
out:
    cl_free(C);
    return r;
}

/* within_all through the table of the least bound per class of the
 * axes `a` shards (made once per set of axes): every combination of a's
 * block indices, its box's elements against its class's least bound.
 * -1 when no table can be made. */
static int within_rec(const rd_ubtab *t, int n, int i, uint64_t prod,
                      uint64_t off, int64_t *const len[],
                      int64_t *const offs[], const int64_t k[], uint64_t es)
{
    if (i == n)
        return prod * es <= t->least[off];
    for (int64_t j = 0; j < k[i]; j++)
        if (len[i][j] &&
            !within_rec(t, n, i + 1, prod * (uint64_t)len[i][j],
                        off + (uint64_t)offs[i][j], len, offs, k, es))
            return 0;
    return 1;
}

/* The table of least bounds per class of `mask` (a subset of the axes
 * the source or target shards) in u->bc->w: the first one made is the
 * finest (every such axis), the others its minima.  NULL when none. */
static const rd_ubtab *within_table(const rd_uctx *u, uint32_t mask)
{
    uint32_t U = type_axes(&u->src) | type_axes(&u->dst);
    if (!u->bc)
        return NULL;
    for (int i = 0; i < u->bc->nw; i++)
        if (u->bc->w[i].mask == mask)
            return &u->bc->w[i];
    if (u->bc->nw == 0) {
        if (ub_build(u, U, &u->bc->w[0])) {
            free(u->bc->w[0].least);
            u->bc->w[0].least = NULL;
            return NULL;
        }
        u->bc->nw = 1;
    }
    const rd_ubtab *f = &u->bc->w[0];
    if (mask == U)
        return f;
    if (u->bc->nw == RD_UB_SLOTS)
        return NULL;
    rd_ubtab *t = &u->bc->w[u->bc->nw];
    if (ub_alloc(u, mask, t)) {
        free(t->least);
        t->least = NULL;
        return NULL;
    }
    dev_iter it;
    it_init(&it, u, U);
    do {
        uint64_t fi = 0, ti = 0;
        for (int x = 0; x < it.nax; x++) {
            fi += (uint64_t)(it.coord[it.ax[x]] * f->stride[it.ax[x]]);
            ti += (uint64_t)(it.coord[it.ax[x]] * t->stride[it.ax[x]]);
        }
        if (f->least[fi] < t->least[ti])
            t->least[ti] = f->least[fi];
    } while (it_next(&it));
    u->bc->nw++;
    return t;
}

static int within_lb(const rd_uctx *u, const redist_type_t *a,
                     const rd_layout *al)
{
    /* the bound depends on the axes the source or target shards only */
    const rd_ubtab *t = within_table(
        u, type_axes(a) & (type_axes(&u->src) | type_axes(&u->dst)));
    if (!t)
        return -1;
    int n = u->cx->ndims;
    int64_t total = 0, *len[REDIST_MAX_DIMS], *offs[REDIST_MAX_DIMS];
    for (int i = 0; i < n; i++)
        total += al->k[i];
    int64_t *mem = malloc(sizeof *mem * 2 * (size_t)total);
    if (!mem)
        return -1;
    for (int i = 0, p = 0; i < n; i++) {
        len[i] = mem + p;
        offs[i] = mem + total + p;
        p += (int)al->k[i];
        for (int64_t j = 0; j < al->k[i]; j++) {
            /* j's coordinates on dim i's axes, major first */
            int64_t rest = j, off = 0;
            for (int x = a->dim_naxes[i] - 1; x >= 0; x--) {
                int ax = a->dims[i][x];
                off += rest % u->mesh.size[ax] * t->stride[ax];
                rest /= u->mesh.size[ax];
            }
            len[i][j] = al->b[i][j + 1] - al->b[i][j];
            offs[i][j] = off;
        }
    }
    int w = within_rec(t, n, 0, 1, 0, len, offs, al->k, u->cx->elem_size);
    free(mem);
    return w;
}

/* within_all, remembered per type after the step (its bytes) and
 * layout. */
static int within_cached(const rd_uctx *u, const rd_ctype *at,
                         const redist_type_t *a, const rd_layout *al,
                         classes *C)
{
    rd_wcent *e = NULL;
    if (u->bc && !u->bc->wc)
        u->bc->wc = calloc(RD_WC_SLOTS, sizeof *u->bc->wc);
    if (u->bc && u->bc->wc) {
        uint64_t h = 1469598103934665603ull;
        const unsigned char *p = (const unsigned char *)at;
        for (size_t i = 0; i < sizeof *at; i++)
            h = (h ^ p[i]) * 1099511628211ull;
        e = &u->bc->wc[h % RD_WC_SLOTS];
        if (e->used && !memcmp(&e->key, at, sizeof *at) &&
            rd_layout_equal(&e->l, al))
            return e->within;
    }
    int w = CL_TIGHT ? -1 : within_lb(u, a, al);
    if (w < 0)
        w = within_all(u, a, al, C);
    if (w >= 0 && e) {
        rd_layout l;
        if (rd_layout_copy(&l, al) == 0) {
            rd_layout_free(&e->l);
            e->l = l;
            e->key = *at;
            e->within = w;
            e->used = 1;
        }
    }
    return w;
}

/* rd_ustep_eval_until by classes of devices (the figures of each
 * combination of per-dim values that occurs, once): the same results
 * (ev exact when 0 is returned; stop sees the final maxima), or -2
 * when the classes are past their limits or the mask leaves out axes
 * the step's types shard (then the caller evaluates device by device).
 * A locality failure names no device. */

static int ustep_classes(const rd_uctx *u, const rd_step *st,
                         const rd_ctype *bt, const rd_layout *bl,
                         const rd_ctype *at, const rd_layout *al,
                         uint32_t mask, rd_ueval *ev, rd_ueval_stop_fn stop,
                         void *user, char *why, size_t whylen)
{
    redist_type_t b, a;
    int n = u->cx->ndims, op = st->op, r = -2, ids[CL_MAX_FACTORS];
    uint32_t pos[CL_MAX_FACTORS];
    uint64_t es = u->cx->elem_size;
    int64_t s = st->axis >= 0 && st->axis < u->cx->naxes
                    ? u->cx->size[st->axis]
                    : 1;
    rd_ctype_to_type(bt, &b);
    rd_ctype_to_type(at, &a);
    uint32_t st_axes = type_axes(&b) | type_axes(&a);
    if ((st_axes & ~mask) ||
        (!ub_find(u, mask) &&
         ((type_axes(&u->src) | type_axes(&u->dst)) & ~mask)))
        return -2;
    classes *C = malloc(sizeof *C);
    if (!C)
        return -2;
    C->nf = C->ncomp = 0;
    stepctx x = {u, &b, &a, bl, al, op,
                 op == REDIST_OP_ALL_GATHER || op == REDIST_OP_ALL_TO_ALL
                     ? dim_of_axis(&b, st->axis)
                     : -1,
                 st->axis, s};
    for (int i = 0; i < n; i++)
        if (cl_factor(C, u, dim_axes(&b, i) | dim_axes(&a, i), dim_value, &x))
            goto out;
    if (cl_join(C, u))
        goto out;
    int link = u->cm ? rd_step_link(u->cx, u->cm, st, bt, at) : -1;
    memset(ev, 0, sizeof *ev);
    ev->within = 1;
    r = 0;
    cl_first(C, pos, ids);
    do {
        uint64_t ea = 1, eb = 1, common = 1, met = 1;
        int cont = 1, align = 1;
        for (int i = 0; i < n; i++) {
            const clval *v = &C->val[i][ids[i]];
            ea *= (uint64_t)v->v[0];
            eb *= (uint64_t)v->v[1];
            common *= (uint64_t)v->v[2];
            met *= (uint64_t)v->v[3];
            cont &= v->c[0];
            align &= v->c[1];
        }
        uint64_t peers = 0;
        u128 recv = 0;
        int ok = ea == 0 || cont;
        switch (op) {
        case REDIST_OP_SLICE:
            break;
        case REDIST_OP_ALL_GATHER:
        case REDIST_OP_ALL_TO_ALL:
            recv = (u128)(ea - common) * es * u->D;
            break;
        case REDIST_OP_REDUCE_SCATTER:
            recv = (u128)ea * es * (uint64_t)(s - 1) * u->D;
            break;
        case REDIST_OP_ALL_REDUCE:
            recv = (u128)ea * es * 2u * (uint64_t)(s - 1) *
                   (u->D / (uint64_t)s);
            break;
        case REDIST_OP_PERMUTE:
            ok = ea == 0 || align;
            if (ea && !(ea == eb && common == ea))
                recv = (u128)ea * es * u->D;
            break;
        default: /* exchange */
            ok = 1;
            recv = (u128)(ea - common) * es * u->D;
            if (ea)
                peers = met - (common ? 1 : 0);
            break;
        }
        if (!ok) {
            if (whylen)
                snprintf(why, whylen,
                         "a device would need elements it cannot get "
                         "from %s",
                         op == REDIST_OP_PERMUTE ? "a single sender"
                                                 : "its group");
            r = -1;
            goto out;
        }
        uint64_t held = ea * es;
        if (held > ev->max_held)
            ev->max_held = held;
        if (recv > ev->max_recv)
            ev->max_recv = recv;
        if (u->cm) {
            uint64_t rb = (uint64_t)((recv + u->D - 1) / u->D);
            double t = rd_step_time_on(u->cx, u->cm, st, link, eb * es, rb,
                                       peers);
            if (t > ev->max_time)
                ev->max_time = t;
        }
    } while (cl_next(C, pos, ids));
    cl_free(C);
    if (stop && stop(user, ev)) {
        r = 1;
        goto done;
    }
    int w = within_cached(u, at, &a, al, C);
    if (w < 0) {
        r = -2;
        goto done;
    }
    ev->within = w;
    if (!w && stop && stop(user, ev))
        r = 1;
    goto done;
out:
    cl_free(C);
done:
    free(C);
    return r;
}

/* Devices rd_ustep_eval_until evaluates one by one before the classes. */
#define RD_UEVAL_FIRST 16

int rd_uneven_eval_mode;
unsigned long rd_uneven_eval_compared, rd_uneven_eval_mismatches;

static int ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                      const rd_layout *bl, const rd_ctype *at,
                      const rd_layout *al, uint32_t mask, rd_ueval *ev,
                      u128 *dev_recv, uint64_t *dev_held,
                      rd_ueval_stop_fn stop, void *user, uint64_t limit,
                      char *why, size_t whylen);

int rd_ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                  const rd_layout *bl, const rd_ctype *at,
                  const rd_layout *al, uint32_t mask, rd_ueval *ev,
                  u128 *dev_recv, uint64_t *dev_held, char *why,
                  size_t whylen)
{
    return ustep_eval(u, st, bt, bl, at, al, mask, ev, dev_recv, dev_held,
                      NULL, NULL, 0, why, whylen);
}

int rd_ustep_eval_until(const rd_uctx *u, const rd_step *st,
                        const rd_ctype *bt, const rd_layout *bl,
                        const rd_ctype *at, const rd_layout *al,
                        uint32_t mask, rd_ueval *ev, rd_ueval_stop_fn stop,
                        void *user, char *why, size_t whylen)
{
    if (rd_uneven_eval_mode == 2) { /* both, compared without stop */
        rd_ueval e1, e2;
        char w[8];
        int r1 = ustep_eval(u, st, bt, bl, at, al, mask, &e1, NULL, NULL,
                            NULL, NULL, 0, w, sizeof w);
        int r2 = ustep_classes(u, st, bt, bl, at, al, mask, &e2, NULL, NULL,
                               w, sizeof w);
        if (r2 != -2) {
            rd_uneven_eval_compared++;
            if (r1 != r2 ||
                (r1 == 0 && (e1.max_held != e2.max_held ||
                             e1.within != e2.within ||
                             e1.max_recv != e2.max_recv ||
                             memcmp(&e1.max_time, &e2.max_time,
                                    sizeof e1.max_time))))
                rd_uneven_eval_mismatches++;
        }
    }
    if (rd_uneven_eval_mode != 1) {
        /* the first devices one by one: stop often refuses the step at
         * once; else the rest by classes */
        int r = ustep_eval(u, st, bt, bl, at, al, mask, ev, NULL, NULL, stop,
                           user, RD_UEVAL_FIRST, why, whylen);
        if (r != -3)
            return r;
        r = ustep_classes(u, st, bt, bl, at, al, mask, ev, stop, user, why,
                          whylen);
        if (r != -2)
            return r;
    }
    return ustep_eval(u, st, bt, bl, at, al, mask, ev, NULL, NULL, stop,
                      user, 0, why, whylen);
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
                      rd_ueval_stop_fn stop, void *user, uint64_t limit,
                      char *why, size_t whylen)
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
    uint64_t seen = 0;
    do {
        if (limit && seen++ == limit)
            return -3;
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
            if (whylen)
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
