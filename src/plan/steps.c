/*
 * The step kinds: precondition, effect, byte formula and enumeration.
 *
 * Collectives run among the devices that differ only in their coordinate
 * on the step's axis (a group of s = size(axis) devices).  L is the local
 * byte count before the step.
 *
 *   slice          axis replicated, l_dim % s == 0 -> minor of dim     0
 *   all_gather     axis is the minor of dim -> removed                 (s-1)L
 *   all_to_all     axis minor of from_dim, l_to % s == 0 -> minor of to (s-1)/s L
 *   reduce_scatter axis partial, l_dim % s == 0 -> minor of dim        (s-1)/s L
 *   all_reduce     axis partial -> replicated                          2(s-1)/s L
 *   permute        same local shape and partial set -> that type       L
 *                  (0 between equivalent types: every device keeps its block)
 *
 * Types are compared up to their size-1 axes (see rd_step_apply).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steps.h"

void rd_ctx_init(rd_ctx *cx, const redist_spec_t *spec)
{
    memset(cx, 0, sizeof *cx);
    cx->naxes = spec->mesh.naxes;
    cx->ndims = spec->ndims;
    for (int a = 0; a < cx->naxes; a++)
        cx->size[a] = spec->mesh.size[a];
    for (int i = 0; i < cx->ndims; i++)
        cx->shape[i] = spec->shape[i];
    cx->elem_size = spec->elem_size;
    cx->dst_partial = spec->to.partial;
    for (int a = 0; a < cx->naxes; a++)
        if (cx->size[a] > 1)
            cx->nontrivial |= 1u << a;
}

/* Callers check the type first (rd_type_check); the bounds here only keep
 * a bad one from writing out of place. */
void rd_ctype_from_type(rd_ctype *c, const redist_type_t *t)
{
    memset(c, 0, sizeof *c);
    int nd = t->ndims < 0 ? 0 : t->ndims > REDIST_MAX_DIMS ? REDIST_MAX_DIMS
                                                            : t->ndims;
    c->ndims = (uint8_t)nd;
    c->partial = t->partial;
    int p = 0;
    for (int i = 0; i < nd; i++) {
        int k = 0;
        for (; k < t->dim_naxes[i] && p < REDIST_MAX_AXES; k++)
            c->seq[p++] = t->dims[i][k];
        c->cnt[i] = (uint8_t)k;
    }
    c->nax = (uint8_t)p;
}

void rd_ctype_to_type(const rd_ctype *c, redist_type_t *t)
{
    redist_type_init(t, c->ndims);
    t->partial = c->partial;
    int p = 0;
    for (int i = 0; i < c->ndims; i++) {
        t->dim_naxes[i] = c->cnt[i];
        for (int k = 0; k < c->cnt[i]; k++)
            t->dims[i][k] = c->seq[p++];
    }
}

void rd_ctype_canon(const rd_ctx *cx, const rd_ctype *in, rd_ctype *out)
{
    rd_ctype c;
    memset(&c, 0, sizeof c);
    c.ndims = in->ndims;
    c.partial = in->partial & cx->nontrivial;
    int p = 0;
    for (int i = 0; i < in->ndims; i++)
        for (int k = 0; k < in->cnt[i]; k++, p++)
            if (in->seq[p] < REDIST_MAX_AXES &&
                (cx->nontrivial >> in->seq[p] & 1u)) {
                c.seq[c.nax++] = in->seq[p];
                c.cnt[i]++;
            }
    *out = c;
}

int rd_ctype_equiv(const rd_ctx *cx, const rd_ctype *a, const rd_ctype *b)
{
    rd_ctype ca, cb;
    rd_ctype_canon(cx, a, &ca);
    rd_ctype_canon(cx, b, &cb);
    return memcmp(&ca, &cb, sizeof ca) == 0;
}

int rd_ctype_local(const rd_ctx *cx, const rd_ctype *t, int64_t local[])
{
    int p = 0;
    for (int i = 0; i < cx->ndims; i++) {
        int64_t prod = 1;
        for (int k = 0; k < t->cnt[i]; k++)
            prod *= cx->size[t->seq[p++]];
        if (cx->shape[i] % prod)
            return -1;
        local[i] = cx->shape[i] / prod;
    }
    return 0;
}

uint64_t rd_ctype_elems(const rd_ctx *cx, const rd_ctype *t)
{
    int64_t l[REDIST_MAX_DIMS];
    uint64_t e = 1;
    if (rd_ctype_local(cx, t, l))
        return 0;
    for (int i = 0; i < cx->ndims; i++)
        e *= (uint64_t)l[i];
    return e;
}

uint32_t rd_ctype_sharded(const rd_ctype *t)
{
    uint32_t m = 0;
    for (int k = 0; k < t->nax; k++)
        m |= 1u << t->seq[k];
    return m;
}

/* Remove the minor axis of dim i; returns it. */
static int pop_minor(rd_ctype *t, int i)
{
    int end = rd_ctype_start(t, i) + t->cnt[i] - 1;
    int a = t->seq[end];
    memmove(&t->seq[end], &t->seq[end + 1], (size_t)(t->nax - end - 1));
    t->nax--;
    t->seq[t->nax] = 0;
    t->cnt[i]--;
    return a;
}

static void push_minor(rd_ctype *t, int i, int a)
{
    int end = rd_ctype_start(t, i) + t->cnt[i];
    memmove(&t->seq[end + 1], &t->seq[end], (size_t)(t->nax - end));
    t->seq[end] = (uint8_t)a;
    t->nax++;
    t->cnt[i]++;
}

static int minor_of(const rd_ctype *t, int i)
{
    if (t->cnt[i] == 0)
        return -1;
    return t->seq[rd_ctype_start(t, i) + t->cnt[i] - 1];
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

static int check_dim(const rd_ctx *cx, int dim, const char *field, char *why,
                     size_t whylen)
{
    if (dim < 0 || dim >= cx->ndims)
        return WHY("%s %d is not a dim of the array (0..%d)", field, dim,
                   cx->ndims - 1);
    return 0;
}

static int check_axis(const rd_ctx *cx, int axis, char *why, size_t whylen)
{
    if (axis < 0 || axis >= cx->naxes)
        return WHY("axis %d is not in the mesh", axis);
    return 0;
}

static int apply_slice(const rd_ctx *cx, const rd_ctype *in, const rd_step *st,
                       rd_ctype *out, char *why, size_t whylen)
{
    int64_t l[REDIST_MAX_DIMS];
    if (check_dim(cx, st->dim, "dim", why, whylen) ||
        check_axis(cx, st->axis, why, whylen))
        return -1;
    if ((rd_ctype_sharded(in) | in->partial) >> st->axis & 1u)
        return WHY("slice needs a replicated axis; axis %d is %s", st->axis,
                   in->partial >> st->axis & 1u ? "partial" : "sharded");
    if (!cx->uneven && (rd_ctype_local(cx, in, l), l[st->dim] %
                                                     cx->size[st->axis]))
        return WHY("local dim %d (%lld) is not divisible by the axis size %lld",
                   st->dim, (long long)l[st->dim],
                   (long long)cx->size[st->axis]);
    *out = *in;
    push_minor(out, st->dim, st->axis);
    return 0;
}

static int apply_all_gather(const rd_ctx *cx, const rd_ctype *in,
                            const rd_step *st, rd_ctype *out, char *why,
                            size_t whylen)
{
    if (check_dim(cx, st->dim, "dim", why, whylen) ||
        check_axis(cx, st->axis, why, whylen))
        return -1;
    if (minor_of(in, st->dim) != st->axis)
        return WHY("all_gather needs the axis to be the minor axis of dim %d",
                   st->dim);
    *out = *in;
    pop_minor(out, st->dim);
    return 0;
}

static int apply_all_to_all(const rd_ctx *cx, const rd_ctype *in,
                            const rd_step *st, rd_ctype *out, char *why,
                            size_t whylen)
{
    int64_t l[REDIST_MAX_DIMS];
    if (check_dim(cx, st->from_dim, "from_dim", why, whylen) ||
        check_dim(cx, st->to_dim, "to_dim", why, whylen) ||
        check_axis(cx, st->axis, why, whylen))
        return -1;
    if (st->from_dim == st->to_dim)
        return WHY("all_to_all needs two different dims");
    if (minor_of(in, st->from_dim) != st->axis)
        return WHY("all_to_all needs the axis to be the minor axis of "
                   "from_dim %d",
                   st->from_dim);
    if (!cx->uneven && (rd_ctype_local(cx, in, l), l[st->to_dim] %
                                                     cx->size[st->axis]))
        return WHY("local dim %d (%lld) is not divisible by the axis size %lld",
                   st->to_dim, (long long)l[st->to_dim],
                   (long long)cx->size[st->axis]);
    *out = *in;
    pop_minor(out, st->from_dim);
    push_minor(out, st->to_dim, st->axis);
    return 0;
}

static int apply_reduce_scatter(const rd_ctx *cx, const rd_ctype *in,
                                const rd_step *st, rd_ctype *out, char *why,
                                size_t whylen)
{
    int64_t l[REDIST_MAX_DIMS];
    if (check_dim(cx, st->dim, "dim", why, whylen) ||
        check_axis(cx, st->axis, why, whylen))
        return -1;
    if (!(in->partial >> st->axis & 1u))
        return WHY("reduce_scatter needs a partial axis; axis %d is not",
                   st->axis);
    if (!cx->uneven && (rd_ctype_local(cx, in, l), l[st->dim] %
                                                     cx->size[st->axis]))
        return WHY("local dim %d (%lld) is not divisible by the axis size %lld",
                   st->dim, (long long)l[st->dim],
                   (long long)cx->size[st->axis]);
    *out = *in;
    out->partial &= ~(1u << st->axis);
    push_minor(out, st->dim, st->axis);
    return 0;
}

static int apply_all_reduce(const rd_ctx *cx, const rd_ctype *in,
                            const rd_step *st, rd_ctype *out, char *why,
                            size_t whylen)
{
    if (check_axis(cx, st->axis, why, whylen))
        return -1;
    if (!(in->partial >> st->axis & 1u))
        return WHY("all_reduce needs a partial axis; axis %d is not",
                   st->axis);
    *out = *in;
    out->partial &= ~(1u << st->axis);
    return 0;
}

static int check_target(const rd_ctx *cx, const rd_ctype *t, const char *op,
                        char *why, size_t whylen)
{
    if (t->ndims != cx->ndims)
        return WHY("%s target has %d dims, the array %d", op, t->ndims,
                   cx->ndims);
    uint32_t seen = 0;
    for (int k = 0; k < t->nax; k++) {
        if (t->seq[k] >= cx->naxes)
            return WHY("%s target names axis %d, not in the mesh", op,
                       t->seq[k]);
        if (seen >> t->seq[k] & 1u)
            return WHY("%s target uses an axis twice", op);
        seen |= 1u << t->seq[k];
    }
    if (seen & t->partial)
        return WHY("%s target uses an axis twice", op);
    return 0;
}

static int apply_exchange(const rd_ctx *cx, const rd_ctype *in,
                          const rd_step *st, rd_ctype *out, char *why,
                          size_t whylen)
{
    int64_t b[REDIST_MAX_DIMS];
    if (check_target(cx, &st->after, "exchange", why, whylen))
        return -1;
    if ((st->after.partial ^ in->partial) & cx->nontrivial)
        return WHY("exchange must keep the partial set");
    if (!cx->uneven && rd_ctype_local(cx, &st->after, b))
        return WHY("exchange target is not divisible");
    *out = st->after;
    return 0;
}

static int apply_permute(const rd_ctx *cx, const rd_ctype *in,
                         const rd_step *st, rd_ctype *out, char *why,
                         size_t whylen)
{
    int64_t a[REDIST_MAX_DIMS], b[REDIST_MAX_DIMS];
    const rd_ctype *t = &st->after;
    if (check_target(cx, t, "permute", why, whylen))
        return -1;
    if ((t->partial ^ in->partial) & cx->nontrivial)
        return WHY("permute must keep the partial set");
    if (cx->uneven) {
        /* the same block counts; layouts decide the rest (rd_ustep_eval) */
        int64_t pa = 1, pb = 1;
        int p = 0, q = 0;
        for (int i = 0; i < cx->ndims; i++, pa = pb = 1) {
            for (int k = 0; k < in->cnt[i]; k++)
                pa *= cx->size[in->seq[p++]];
            for (int k = 0; k < t->cnt[i]; k++)
                pb *= cx->size[t->seq[q++]];
            if (pa != pb)
                return WHY("permute must keep the block count of each dim "
                           "(dim %d: %lld -> %lld)",
                           i, (long long)pa, (long long)pb);
        }
        *out = *t;
        return 0;
    }
    if (rd_ctype_local(cx, t, b))
        return WHY("permute target is not divisible");
    rd_ctype_local(cx, in, a);
    for (int i = 0; i < cx->ndims; i++)
        if (a[i] != b[i])
            return WHY("permute must keep the local shape (dim %d: %lld -> "
                       "%lld)",
                       i, (long long)a[i], (long long)b[i]);
    *out = *t;
    return 0;
}

/* ------------------------------------------------------- enumeration */

static rd_step mkstep(int op, int dim, int from, int to, int axis)
{
    rd_step s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.dim = dim;
    s.from_dim = from;
    s.to_dim = to;
    s.axis = axis;
    return s;
}

static void enum_slice(const rd_ctx *cx, const rd_ctype *in, rd_emit_fn emit,
                       void *user)
{
    int64_t l[REDIST_MAX_DIMS];
    uint32_t busy = rd_ctype_sharded(in) | in->partial;
    rd_ctype_local(cx, in, l);
    for (int i = 0; i < cx->ndims; i++)
        for (int a = 0; a < cx->naxes; a++) {
            if (busy >> a & 1u || (!cx->uneven && l[i] % cx->size[a]))
                continue;
            rd_step s = mkstep(REDIST_OP_SLICE, i, -1, -1, a);
            rd_ctype out = *in;
            push_minor(&out, i, a);
            emit(user, &s, &out);
        }
}

static void enum_all_gather(const rd_ctx *cx, const rd_ctype *in,
                            rd_emit_fn emit, void *user)
{
    for (int i = 0; i < cx->ndims; i++) {
        if (!in->cnt[i])
            continue;
        rd_ctype out = *in;
        int a = pop_minor(&out, i);
        rd_step s = mkstep(REDIST_OP_ALL_GATHER, i, -1, -1, a);
        emit(user, &s, &out);
    }
}

static void enum_all_to_all(const rd_ctx *cx, const rd_ctype *in,
                            rd_emit_fn emit, void *user)
{
    int64_t l[REDIST_MAX_DIMS];
    rd_ctype_local(cx, in, l);
    for (int i = 0; i < cx->ndims; i++) {
        if (!in->cnt[i])
            continue;
        rd_ctype base = *in;
        int a = pop_minor(&base, i);
        for (int j = 0; j < cx->ndims; j++) {
            if (j == i || (!cx->uneven && l[j] % cx->size[a]))
                continue;
            rd_ctype out = base;
            push_minor(&out, j, a);
            rd_step s = mkstep(REDIST_OP_ALL_TO_ALL, -1, i, j, a);
            emit(user, &s, &out);
        }
    }
}

static void enum_reduce_scatter(const rd_ctx *cx, const rd_ctype *in,
                                rd_emit_fn emit, void *user)
{
    int64_t l[REDIST_MAX_DIMS];
    uint32_t pend = in->partial & ~cx->dst_partial;
    if (!pend)
        return;
    rd_ctype_local(cx, in, l);
    for (int a = 0; a < cx->naxes; a++) {
        if (!(pend >> a & 1u))
            continue;
        for (int i = 0; i < cx->ndims; i++) {
            if (!cx->uneven && l[i] % cx->size[a])
                continue;
            rd_ctype out = *in;
            out.partial &= ~(1u << a);
            push_minor(&out, i, a);
            rd_step s = mkstep(REDIST_OP_REDUCE_SCATTER, i, -1, -1, a);
            emit(user, &s, &out);
        }
    }
}

static void enum_all_reduce(const rd_ctx *cx, const rd_ctype *in,
                            rd_emit_fn emit, void *user)
{
    uint32_t pend = in->partial & ~cx->dst_partial;
    for (int a = 0; a < cx->naxes; a++) {
        if (!(pend >> a & 1u))
            continue;
        rd_ctype out = *in;
        out.partial &= ~(1u << a);
        rd_step s = mkstep(REDIST_OP_ALL_REDUCE, -1, -1, -1, a);
        emit(user, &s, &out);
    }
}

/* Permute targets: for each dim in turn choose an ordered list of unused
 * non-partial axes whose sizes multiply to the dim's current product. */
typedef struct {
    const rd_ctx *cx;
    int64_t prod[REDIST_MAX_DIMS];
    rd_ctype cur;
    rd_ctype *out;
    long n, cap, limit;
    int failed;
} perm_gen;

static void perm_rec(perm_gen *g, int dim, int64_t left, uint32_t busy)
{
    if (g->failed)
        return;
    if (dim == g->cx->ndims) {
        if (g->n >= g->limit) {
            g->failed = 2;
            return;
        }
        if (g->n == g->cap) {
            long nc = g->cap ? g->cap * 2 : 16;
            rd_ctype *no = realloc(g->out, (size_t)nc * sizeof *no);
            if (!no) {
                g->failed = 1;
                return;
            }
            g->out = no;
            g->cap = nc;
        }
        g->out[g->n++] = g->cur;
        return;
    }
    if (left == 1) {
        int64_t next = dim + 1 < g->cx->ndims ? g->prod[dim + 1] : 1;
        perm_rec(g, dim + 1, next, busy);
    }
    for (int a = 0; a < g->cx->naxes; a++) {
        int64_t s = g->cx->size[a];
        if (busy >> a & 1u || left % s)
            continue;
        g->cur.seq[g->cur.nax++] = (uint8_t)a;
        g->cur.cnt[dim]++;
        perm_rec(g, dim, left / s, busy | 1u << a);
        g->cur.cnt[dim]--;
        g->cur.seq[--g->cur.nax] = 0;
        if (g->failed)
            return;
    }
}

long rd_permute_targets(const rd_ctx *cx, const rd_ctype *t, long limit,
                        rd_ctype **out)
{
    perm_gen g;
    memset(&g, 0, sizeof g);
    /* failed: 1 out of memory, 2 over the limit */
    g.cx = cx;
    g.limit = limit;
    int p = 0;
    for (int i = 0; i < cx->ndims; i++) {
        g.prod[i] = 1;
        for (int k = 0; k < t->cnt[i]; k++)
            g.prod[i] *= cx->size[t->seq[p++]];
    }
    g.cur.ndims = t->ndims;
    g.cur.partial = t->partial;
    if (cx->ndims == 0) {
        g.out = malloc(sizeof *g.out);
        if (!g.out)
            return -1;
        g.out[0] = g.cur;
        *out = g.out;
        return 1;
    }
    perm_rec(&g, 0, g.prod[0], t->partial);
    if (g.failed) {
        free(g.out);
        return -g.failed;
    }
    *out = g.out;
    return g.n;
}

/* A transfer is not a step on one mesh: the replay of a two-mesh plan
 * (meshes.c) handles it between its phases. */
static int apply_transfer(const rd_ctx *cx, const rd_ctype *in,
                          const rd_step *st, rd_ctype *out, char *why,
                          size_t whylen)
{
    (void)cx;
    (void)in;
    (void)st;
    (void)out;
    return WHY("a transfer moves data between the two meshes of a "
               "two-mesh spec; this spec has one mesh");
}

/* name, fields, collective, recv_need, rounds (mul_s, add), recv
 * (mul_s, add, div_s), formula, precondition, apply, enumerate */
const rd_step_kind rd_step_kinds[REDIST_OP_COUNT] = {
    [REDIST_OP_SLICE] = {"slice", RD_F_DIM | RD_F_AXIS, 0, 0, 0, 0, 0, 0, 0,
                         "0", "axis replicated; local dim divisible by s",
                         apply_slice, enum_slice},
    [REDIST_OP_ALL_GATHER] = {"all_gather", RD_F_DIM | RD_F_AXIS, 1, 0, 1, -1,
                              1, -1, 0, "(s-1)*L",
                              "axis is the minor axis of dim",
                              apply_all_gather, enum_all_gather},
    [REDIST_OP_ALL_TO_ALL] = {"all_to_all",
                              RD_F_FROM_DIM | RD_F_TO_DIM | RD_F_AXIS, 1, 0,
                              1, -1, 1, -1, 1, "(s-1)/s*L",
                              "axis is the minor of from_dim; local to_dim "
                              "divisible by s",
                              apply_all_to_all, enum_all_to_all},
    [REDIST_OP_REDUCE_SCATTER] = {"reduce_scatter", RD_F_DIM | RD_F_AXIS, 1,
                                  0, 1, -1, 1, -1, 1, "(s-1)/s*L",
                                  "axis partial; local dim divisible by s",
                                  apply_reduce_scatter, enum_reduce_scatter},
    [REDIST_OP_ALL_REDUCE] = {"all_reduce", RD_F_AXIS, 1, 0, 2, -2, 2, -2, 1,
                              "2(s-1)/s*L", "axis partial", apply_all_reduce,
                              enum_all_reduce},
    [REDIST_OP_PERMUTE] = {"permute", RD_F_AFTER, 1, 0, 0, 1, 0, 1, 0, "L",
                           "same local shape and partial set",
                           apply_permute, NULL},
    [REDIST_OP_EXCHANGE] = {"exchange", RD_F_AFTER, 1, 1, 0, 0, 0, 0, 0,
                            "exact need", "same partial set",
                            apply_exchange, NULL},
    [REDIST_OP_TRANSFER] = {"transfer", RD_F_AFTER, 1, 1, 0, 0, 0, 0, 0,
                            "exact need",
                            "between the meshes of a two-mesh spec; no "
                            "partial axis before or after",
                            apply_transfer, NULL},
};

int rd_step_apply(const rd_ctx *cx, const rd_ctype *in, const rd_step *st,
                  rd_ctype *out, char *why, size_t whylen)
{
    const rd_step_kind *k = &rd_step_kinds[st->op];
    if ((k->fields & RD_F_AXIS) && st->axis >= 0 && st->axis < cx->naxes &&
        cx->size[st->axis] == 1) {
        if (((k->fields & RD_F_DIM) &&
             check_dim(cx, st->dim, "dim", why, whylen)) ||
            ((k->fields & RD_F_FROM_DIM) &&
             check_dim(cx, st->from_dim, "from_dim", why, whylen)) ||
            ((k->fields & RD_F_TO_DIM) &&
             check_dim(cx, st->to_dim, "to_dim", why, whylen)))
            return -1;
        if (k->apply(cx, in, st, out, why, whylen))
            *out = *in; /* labels only: every device keeps its data */
        return 0;
    }
    if (k->apply(cx, in, st, out, why, whylen) == 0)
        return 0;
    rd_ctype c;
    rd_ctype_canon(cx, in, &c);
    if (memcmp(&c, in, sizeof c) == 0)
        return -1;
    return k->apply(cx, &c, st, out, why, whylen);
}

void rd_ctype_block_start(const rd_ctx *cx, const rd_ctype *t,
                          const int64_t local[], const int64_t coord[],
                          int64_t start[])
{
    int p = 0;
    for (int i = 0; i < cx->ndims; i++) {
        int64_t b = 0;
        for (int k = 0; k < t->cnt[i]; k++) {
            int a = t->seq[p++];
            b = b * cx->size[a] + coord[a];
        }
        start[i] = b * local[i];
    }
}

void rd_ctype_places(const rd_ctx *cx, const rd_ctype *t,
                     int dim[REDIST_MAX_AXES], int64_t str[REDIST_MAX_AXES],
                     int64_t k[REDIST_MAX_DIMS])
{
    for (int x = 0; x < REDIST_MAX_AXES; x++)
        dim[x] = -1;
    int p = 0;
    for (int i = 0; i < cx->ndims; i++) {
        int64_t s = 1;
        p += t->cnt[i];
        for (int q = p - 1; q >= p - t->cnt[i]; q--) {
            dim[t->seq[q]] = i;
            str[t->seq[q]] = s;
            s *= cx->size[t->seq[q]];
        }
        if (k)
            k[i] = s;
    }
}

int rd_moved_link(const rd_ctx *cx, const redist_cost_model_t *cm,
                  const rd_ctype *a, const rd_ctype *b)
{
    /* Per axis its dim, and its stride in the dim's block index over the
     * dim's block count (as stride * kother vs kown, cross-multiplied):
     * an axis that a shards moves a device's data when its coordinate
     * shifts the two blocks differently.  An axis a does not shard never
     * does: each piece comes from a holder agreeing with the receiver on
     * it; nor one of size 1. */
    int dim[2][REDIST_MAX_AXES], link = 0;
    int64_t str[2][REDIST_MAX_AXES], k[2][REDIST_MAX_DIMS];
    rd_ctype_places(cx, a, dim[0], str[0], k[0]);
    rd_ctype_places(cx, b, dim[1], str[1], k[1]);
    for (int x = 0; x < cx->naxes; x++) {
        int i = dim[0][x], j = dim[1][x];
        if (i < 0 || cx->size[x] == 1 || cm->axis_link[x] <= link ||
            (i == j && str[0][x] * k[1][i] == str[1][x] * k[0][i]))
            continue;
        link = cm->axis_link[x];
    }
    return link;
}

double rd_step_time(const rd_ctx *cx, const redist_cost_model_t *cm,
                    const rd_step *st, const rd_ctype *before, uint64_t L,
                    const rd_ctype *after, uint64_t recv_bytes,
                    uint64_t peers)
{
    return rd_step_time_on(cx, cm, st, rd_step_link(cx, cm, st, before, after),
                           L, recv_bytes, peers);
}

int rd_step_link(const rd_ctx *cx, const redist_cost_model_t *cm,
                 const rd_step *st, const rd_ctype *before,
                 const rd_ctype *after)
{
    if (!rd_step_kinds[st->op].collective)
        return -1;
    if (st->op == REDIST_OP_PERMUTE || st->op == REDIST_OP_EXCHANGE)
        return rd_moved_link(cx, cm, before, after);
    return st->axis >= 0 ? cm->axis_link[st->axis] : 0;
}

double rd_step_time_on(const rd_ctx *cx, const redist_cost_model_t *cm,
                       const rd_step *st, int link, uint64_t L,
                       uint64_t recv_bytes, uint64_t peers)
{
    const rd_step_kind *k = &rd_step_kinds[st->op];
    /* Local copies are not charged: every plan writes its result once, and
     * the executor merges slices into the neighbouring pass. */
    if (!k->collective)
        return 0.0;
    double msgs;
    if (st->op == REDIST_OP_PERMUTE || st->op == REDIST_OP_EXCHANGE) {
        msgs = st->op == REDIST_OP_EXCHANGE ? (double)peers : 1.0;
        if (recv_bytes == 0)
            return 0.0; /* nothing moves between devices */
        return msgs * cm->alpha[link] + (double)recv_bytes * cm->beta[link];
    } else {
        int64_t s = cx->size[st->axis];
        if (s == 1)
            return 0.0;
        msgs = (double)(k->rounds_mul_s * s + k->rounds_add);
    }
    double t = msgs * cm->alpha[link] + (double)recv_bytes * cm->beta[link];
    if (st->op == REDIST_OP_REDUCE_SCATTER || st->op == REDIST_OP_ALL_REDUCE) {
        int64_t s = cx->size[st->axis];
        t += cm->gamma * (double)L * (double)(s - 1) / (double)s;
    }
    return t;
}

int rd_step_recv(const rd_ctx *cx, const rd_step *st, const rd_ctype *before,
                 uint64_t local_bytes, unsigned __int128 *num, uint64_t *den)
{
    const rd_step_kind *k = &rd_step_kinds[st->op];
    if (st->op == REDIST_OP_PERMUTE && rd_ctype_equiv(cx, before, &st->after)) {
        *num = 0; /* every device keeps its block */
        *den = 1;
        return 0;
    }
    if (k->recv_need) {
        uint64_t elems, peers;
        if (rd_exchange_need(cx, before, &st->after, RD_EXCHANGE_LIMIT,
                             &elems, &peers))
            return -1;
        *num = (unsigned __int128)elems * cx->elem_size;
        *den = 1;
        return 0;
    }
    int64_t s = st->axis >= 0 && st->axis < cx->naxes ? cx->size[st->axis] : 1;
    int64_t f = k->recv_mul_s * s + k->recv_add; /* >= 0 since s >= 1 */
    *num = (unsigned __int128)local_bytes * (uint64_t)(f < 0 ? 0 : f);
    *den = k->recv_div_s ? (uint64_t)s : 1;
    if (*den > 1 && *num % *den == 0) {
        *num /= *den;
        *den = 1;
    }
    return 0;
}

/* The op names, for the public API. */
const char *redist_op_name(redist_op_t op)
{
    if ((unsigned)op >= REDIST_OP_COUNT)
        return NULL;
    return rd_step_kinds[op].name;
}

redist_status_t redist_op_from_name(const char *name, redist_op_t *out)
{
    if (!name)
        return REDIST_ERR_INVALID;
    for (int i = 0; i < REDIST_OP_COUNT; i++)
        if (strcmp(name, rd_step_kinds[i].name) == 0) {
            if (out)
                *out = (redist_op_t)i;
            return REDIST_OK;
        }
    return REDIST_ERR_INVALID;
}

int redist_op_is_collective(redist_op_t op)
{
    if ((unsigned)op >= REDIST_OP_COUNT)
        return 0;
    return rd_step_kinds[op].collective;
}
