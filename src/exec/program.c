/*
 * Program building, part 1: a plan becomes a list of passes, each
 * reading one local buffer and writing another (assign.c then picks the
 * buffers):
 *   slices (consecutive ones merged)  BOX    in L -> out L'   (in place ok)
 *   all_gather(i)      XCHG [s][L]; MERGE if pre_i > 1 (blocks along i)
 *   all_to_all(i->j)   SPLIT if pre_j > 1; XCHG; MERGE if pre_i > 1
 *   reduce_scatter(i)  SPLIT if pre_i > 1; XCHG (reduction by the backend)
 *   all_reduce         XCHG
 *   permute            XCHG (one send, one receive)
 *   exchange           XPACK unless every send piece is contiguous; XCHG
 *                      (point to point); XUNPACK unless every received
 *                      piece lands contiguous (exchange.c)
 * pre_d is the product of the local dims before d: with pre_d == 1 the
 * chunks along d are already contiguous and the pack / unpack is skipped.
 * A backend that runs whole steps (fused_ops) gets one FUSED pass instead.
 * A set program (RD_PROG_LOWER, set.c; a one-mesh array's, or a phase of
 * a two-mesh array's) lowers all_gather, all_to_all and
 * permute to an exchange from the type before to the type after, as an
 * uneven plan does below: the same pieces, from the same group members
 * (exchange.c picks each piece's holder within the group), but as point-
 * to-point passes that a round combines with other arrays' exchanges.
 * With RD_PROG_LOWER_RED it lowers reductions too (rd_reduction_lowered_dim;
 * a group of s over mesh axis a, block of L bytes):
 *   reduce_scatter(i)  XCHG of the contributions: an exchange from the
 *                      type before with a new leading dim of s sharded
 *                      over a (member g holds index g: its contribution)
 *                      to the type after with that dim local, so member
 *                      j receives chunk j of every member's block, slab g
 *                      from member g (L bytes, s slabs of L/s);
 *                      RSUM: the slabs reduced in member order 0..s-1
 *                      (in place, L -> L/s)
 *   all_reduce         the same to a middle type with a added to the
 *                      first dim i whose local length s divides, then an
 *                      exchange from it to the type after (the gather)
 * The bytes are the collectives': (s-1)/s L received for a
 * reduce_scatter, 2(s-1)/s L for an all_reduce (a ring's); no buffer
 * exceeds L; the sum is the sim backend's (rd_reduce_n, member order) to
 * the bit.  A one-array program built for a backend with
 * RD_BUILD_LOWER_RS (fuse_rs: MPI's choice, src/backend/mpi/execute.c)
 * lowers its reduce_scatters alone, and a run of m consecutive ones along
 * one dim i, over axes a1..am (even dims), as ONE exchange from the type
 * before with a leading dim sharded over (a1..am) to the type after the
 * last with that dim local (s = s1 .. sm slabs of the final block, slab
 * g from the member whose coordinates on a1..am give g, a1 major) and ONE
 * RSUM in levels: a1's groups first, in member order, into the leading
 * slab of each, then a2's, and so on, the last into the output, so every
 * sum adds what the steps add, in their order (the bits of the sim).
 * Received: (1 - 1/s) L, what the m steps receive together; one exchange
 * instead of m; the slabs, L, are the scratch.  Uneven dims: a reduce_scatter is lowered the same way, on the
 * plan's layouts with the leading dim added (p->xlay), into s slabs of
 * the longest box after the step (bind.c sizes each device's slabs by
 * its own box).  An uneven all_reduce (one layout before and after it)
 * is lowered through a middle layout: dim i's every block split into s
 * sub-blocks (the group's axis added to dim i last, so minor; lengths
 * floor or ceil of len / s; i the dim whose shortest block is longest,
 * at least s), the contributions exchanged into s slabs of the longest
 * middle box, summed in member order (bind.c sizes each device's slabs
 * by its own middle box, RD_U_RSUM_MID), and the sums gathered from the
 * middle layout to the layout after: the bytes of the even case, the
 * scratch s slabs of the longest middle box (below L + s per dim).  A
 * dim count at REDIST_MAX_DIMS (no room for the leading dim), an
 * all_reduce without such a dim i, or an uneven one whose layout changes
 * keeps the collective.
 *
 * UNEVEN DIMS (doc/spec-format.md section 7, doc/uneven.md): blocks differ
 * between devices, so every step is lowered from the layouts before and
 * after it (the plan's), with pass sizes the most any device needs (the
 * same program everywhere) and each device's own boxes filled in by
 * bind.c:
 *   slices             BOX from the box before to the box after
 *   all_gather, all_to_all, permute, exchange
 *                      an exchange between the two layouts (exchange.c):
 *                      each piece from its holder, within the group
 *   all_reduce         [BOX to the box after, when it is smaller]; XCHG
 *                      with this device's count (members hold one box)
 *   reduce_scatter     VPACK (the members' boxes after the step, packed in
 *                      member order); XCHG all_reduce of the packed boxes;
 *                      BOX of this member's chunk.  Exact on every
 *                      backend with the even ops; it receives 2(s-1)/s of
 *                      the packed boxes instead of (s-1)/s.  A backend
 *                      with uneven_rs and a fused reduce_scatter
 *                      (sim), or built with RD_BUILD_UNEVEN_RS (MPI:
 *                      reduce_boxed.c), gets one FUSED pass instead: this device's
 *                      box after the step reduced straight from the same
 *                      box of the members' blocks (no packed buffer).
 * Cost: O(steps) passes of O(dims) each; memory: 7 * steps + 2 passes
 * and one exchange geometry per exchange step.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "../core/internal.h"
#include "../core/layout.h"
#include "../plan/plan_internal.h"
#include "../spec/spec_internal.h"

static uint64_t prod_before(const int64_t *shape, int d)
{
    uint64_t p = 1;
    for (int i = 0; i < d; i++)
        p *= (uint64_t)shape[i];
    return p;
}

static uint64_t prod_after(const int64_t *shape, int nd, int d)
{
    uint64_t p = 1;
    for (int i = d + 1; i < nd; i++)
        p *= (uint64_t)shape[i];
    return p;
}

void rd_plan_type_before(const redist_plan_t *plan, int k, redist_type_t *t)
{
    if (k == 0) {
        *t = *redist_spec_from(redist_plan_spec(plan));
    } else {
        redist_step_view_t v;
        redist_plan_step(plan, k - 1, &v);
        *t = v.after;
    }
}

const rd_layout *rd_plan_layout_before(const redist_plan_t *plan, int k)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    if (!spec->uneven)
        return NULL;
    return k == 0 ? &spec->lay[0] : rd_plan_step_layout(plan, k - 1);
}

const rd_layout *rd_plan_layout_after(const redist_plan_t *plan, int k)
{
    return redist_plan_spec(plan)->uneven ? rd_plan_step_layout(plan, k)
                                          : NULL;
}

rd_pass *rd_program_add_pass(rd_program *p, int kind, int step, uint64_t in,
                             uint64_t out)
{
    rd_pass *ps = &p->pass[p->npasses++];
    memset(ps, 0, sizeof *ps);
    ps->kind = kind;
    ps->first = ps->last = step;
    ps->in_bytes = in;
    ps->out_bytes = out;
    ps->in_buf = ps->out_buf = -1;
    ps->xi = -1;
    ps->inplace_need = UINT64_MAX;
    ps->spare_buf = ps->sspare_buf = -1;
    return ps;
}

/* The step as the backend sees it, before binding to a device. */
static void xstep_of(const redist_plan_t *plan, int k,
                     const redist_step_view_t *v, const int64_t cur[],
                     int64_t s, rd_xstep *x)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    int nd = redist_spec_ndims(spec);
    memset(x, 0, sizeof *x);
    x->op = v->op;
    x->index = k;
    x->dim = v->dim;
    x->from_dim = v->from_dim;
    x->to_dim = v->to_dim;
    x->ndims = nd;
    memcpy(x->in_shape, cur, sizeof x->in_shape);
    memcpy(x->out_shape, v->local_shape, sizeof x->out_shape);
    x->elem = redist_dtype_size(redist_spec_dtype(spec));
    x->dtype = redist_spec_dtype(spec);
    x->reduce = redist_spec_reduce(spec);
    x->group.axis = v->axis;
    x->group.size = s;
}

/* Slices k.. as one BOX pass; returns the last slice's index. */
static int slice_pass(const redist_plan_t *plan, int k, int64_t cur[],
                      uint64_t *L, rd_program *p)
{
    int n = redist_plan_num_steps(plan), first = k;
    redist_step_view_t v;
    redist_plan_step(plan, k, &v);
    while (k + 1 < n) {
        redist_step_view_t w;
        redist_plan_step(plan, k + 1, &w);
        if (w.op != REDIST_OP_SLICE)
            break;
        k++;
        v = w;
    }
    rd_pass *ps = rd_program_add_pass(p, RD_PASS_BOX, first, *L,
                                      v.local_bytes);
    const redist_spec_t *spec = redist_plan_spec(plan);
    ps->last = k;
    ps->inplace_ok = 1;
    ps->umode = redist_spec_is_uneven(redist_plan_spec(plan)) ? RD_U_BOX
                                                               : RD_U_NONE;
    ps->x.op = REDIST_OP_SLICE;
    ps->x.index = first;
    ps->x.ndims = redist_spec_ndims(spec);
    ps->x.elem = redist_dtype_size(redist_spec_dtype(spec));
    ps->x.dtype = redist_spec_dtype(spec);
    ps->x.reduce = redist_spec_reduce(spec);
    ps->x.group.axis = -1;
    memcpy(ps->x.in_shape, cur, sizeof ps->x.in_shape);
    memcpy(ps->x.out_shape, v.local_shape, sizeof ps->x.out_shape);
    memcpy(cur, v.local_shape, sizeof ps->x.in_shape);
    *L = v.local_bytes;
    return k;
}

/* A SPLIT or MERGE pass of `s` chunks along dim d of `shape` (of which
 * the chunk is shape[d] / div along d), when the chunks are not already
 * contiguous (pre_d > 1). */
static void pack_pass(rd_program *p, int kind, int k, uint64_t in,
                      uint64_t out, const int64_t shape[], int nd, int d,
                      uint64_t s, uint64_t div, uint64_t elem)
{
    uint64_t pre = prod_before(shape, d);
    if (pre <= 1 || s <= 1)
        return;
    rd_pass *ps = rd_program_add_pass(p, kind, k, in, out);
    ps->pre = pre;
    ps->s = s;
    ps->chunk = (uint64_t)shape[d] / div * prod_after(shape, nd, d) * elem;
}

/* The passes of one exchanging step on the generic (unfused) path. */
static void unfused_passes(rd_program *p, const rd_xstep *x, int xi,
                           const int64_t cur[], uint64_t L, uint64_t out)
{
    int k = x->index, nd = x->ndims;
    uint64_t s = (uint64_t)x->group.size, elem = x->elem;
    rd_pass *ps;
    switch (x->op) {
    case REDIST_OP_EXCHANGE:
        /* the packed pieces take at most L bytes (exchange.c) */
        if (p->xchg[xi].pack)
            rd_program_add_pass(p, RD_PASS_XPACK, k, L, L)->xi = xi;
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, out);
        ps->x = *x;
        ps->xi = xi;
        if (p->xchg[xi].unpack)
            rd_program_add_pass(p, RD_PASS_XUNPACK, k, out, out)->xi = xi;
        break;
    case REDIST_OP_ALL_GATHER:
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, L * s);
        ps->x = *x;
        pack_pass(p, RD_PASS_MERGE, k, L * s, L * s, cur, nd, x->dim, s, 1,
                  elem);
        break;
    case REDIST_OP_ALL_TO_ALL: {
        int64_t piece[REDIST_MAX_DIMS];
        pack_pass(p, RD_PASS_SPLIT, k, L, L, cur, nd, x->to_dim, s, s, elem);
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, L);
        ps->x = *x;
        memcpy(piece, cur, sizeof piece);
        piece[x->to_dim] /= (int64_t)s;
        pack_pass(p, RD_PASS_MERGE, k, L, L, piece, nd, x->from_dim, s, 1,
                  elem);
        break;
    }
    case REDIST_OP_REDUCE_SCATTER:
        pack_pass(p, RD_PASS_SPLIT, k, L, L, cur, nd, x->dim, s, s, elem);
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, L / s);
        ps->x = *x;
        break;
    default: /* all_reduce, permute */
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, L);
        ps->x = *x;
        break;
    }
}

/* A data-moving step as an exchange between its layouts (exchange
 * xi): an uneven plan's, or a set program's lowered collective. */
static void as_exchange(rd_program *p, rd_xstep *x, int xi,
                        unsigned fused_ops, const int64_t cur[], uint64_t L,
                        uint64_t out)
{
    x->op = REDIST_OP_EXCHANGE;
    x->group.size = 1;
    if (fused_ops >> REDIST_OP_EXCHANGE & 1u) {
        rd_pass *ps = rd_program_add_pass(p, RD_PASS_FUSED, x->index, L, out);
        ps->x = *x;
        ps->xi = xi;
        return;
    }
    unfused_passes(p, x, xi, cur, L, out);
}

/* The passes of one collective step of an uneven plan (see the top). */
static void uneven_passes(rd_program *p, const redist_plan_t *plan,
                          rd_xstep *x, int xi, unsigned fused_ops,
                          const int64_t cur[], uint64_t L, uint64_t out)
{
    int k = x->index;
    rd_pass *ps;
    switch (x->op) {
    case REDIST_OP_ALL_REDUCE:
        if (!rd_layout_equal(rd_plan_layout_before(plan, k),
                             rd_plan_layout_after(plan, k))) {
            ps = rd_program_add_pass(p, RD_PASS_BOX, k, L, out);
            ps->inplace_ok = 1;
            ps->umode = RD_U_BOX;
            ps->x = *x;
            L = out;
        }
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, out);
        ps->x = *x;
        ps->umode = RD_U_COUNT;
        return;
    case REDIST_OP_REDUCE_SCATTER:
        if (fused_ops >> REDIST_OP_REDUCE_SCATTER & 1u) {
            /* whole, from the members' blocks (uneven_rs) */
            ps = rd_program_add_pass(p, RD_PASS_FUSED, k, L, out);
            ps->x = *x;
            ps->x.boxed = 1;
            ps->x.boxed_inplace = rd_boxed_prefix(plan, k);
            ps->umode = RD_U_RS;
            return;
        }
        /* the packed boxes are disjoint parts of the box before: <= L */
        ps = rd_program_add_pass(p, RD_PASS_VPACK, k, L, L);
        ps->x = *x;
        ps->umode = RD_U_VPACK;
        ps = rd_program_add_pass(p, RD_PASS_XCHG, k, L, L);
        ps->x = *x;
        ps->x.op = REDIST_OP_ALL_REDUCE;
        ps->umode = RD_U_SUM;
        ps = rd_program_add_pass(p, RD_PASS_BOX, k, L, out);
        ps->inplace_ok = 1;
        ps->x = *x;
        ps->umode = RD_U_CHUNK;
        return;
    default: /* all_gather, all_to_all, permute, exchange */
        break;
    }
    as_exchange(p, x, xi, fused_ops, cur, L, out);
}

/* Is a step of kind `op` lowered to an exchange (the data-moving
 * collectives of an uneven plan, or of a set program with p->lower; an
 * all_gather or all_to_all with p->lower_moves)? */
static int lowered(const rd_program *p, int uneven, int op)
{
    int moves = op == REDIST_OP_ALL_GATHER || op == REDIST_OP_ALL_TO_ALL ||
                op == REDIST_OP_PERMUTE;
    return moves && (uneven || p->lower ||
                     (p->lower_moves && op != REDIST_OP_PERMUTE));
}

int rd_reduction_lowered_dim(const redist_plan_t *plan, int k)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    redist_step_view_t v;
    if (!spec || redist_spec_num_meshes(spec) != 1 ||
        redist_spec_ndims(spec) >= REDIST_MAX_DIMS ||
        redist_plan_step(plan, k, &v) ||
        (v.op != REDIST_OP_REDUCE_SCATTER && v.op != REDIST_OP_ALL_REDUCE))
        return -1;
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec);
    int64_t s = redist_mesh_axis_size(mesh, v.axis);
    if (s < 2)
        return -1;
    if (v.op == REDIST_OP_REDUCE_SCATTER)
        return v.dim;
    redist_type_t before;
    int64_t cur[REDIST_MAX_DIMS];
    rd_plan_type_before(plan, k, &before);
    if (spec->uneven) {
        /* the middle layout splits every block of dim i into s (blocks
         * of one layout before and after; the dim whose shortest block
         * is longest, at least s long) */
        const rd_layout *l = rd_plan_layout_before(plan, k);
        int best = -1;
        int64_t most = s - 1;
        if (!rd_layout_equal(l, rd_plan_layout_after(plan, k)))
            return -1;
        for (int i = 0; i < nd; i++) {
            int64_t least = INT64_MAX;
            for (int64_t j = 0; j < l->k[i]; j++)
                if (l->b[i][j + 1] - l->b[i][j] < least)
                    least = l->b[i][j + 1] - l->b[i][j];
            if (least > most && before.dim_naxes[i] < REDIST_MAX_AXES &&
                l->k[i] <= RD_LAYOUT_MAX_BLOCKS / s) {
                most = least;
                best = i;
            }
        }
        return best;
    }
    redist_type_local_shape(&before, mesh, redist_spec_shape(spec), cur);
    for (int i = 0; i < nd; i++)
        if (cur[i] >= s && cur[i] % s == 0 &&
            before.dim_naxes[i] < REDIST_MAX_AXES)
            return i;
    return -1;
}

/* The middle layout of a lowered uneven all_reduce over a group of s
 * (l: the layout before and after it): dim i's every block split into s
 * (the axis added last, so minor: sub-block t of block j is block
 * j s + t), lengths floor or ceil of len / s; the other dims l's own (the
 * plan's: they outlive the program), dim i's in m->mem.  0, or -1 out of
 * memory. */
static int mid_layout(const rd_layout *l, int i, int64_t s, rd_layout *m)
{
    *m = *l;
    m->mem = malloc((size_t)(l->k[i] * s + 1) * sizeof *m->mem);
    if (!m->mem)
        return -1;
    for (int64_t j = 0; j < l->k[i]; j++) {
        int64_t lo = l->b[i][j], len = l->b[i][j + 1] - lo;
        for (int64_t t = 0; t < s; t++)
            m->mem[j * s + t] = lo + len * t / s;
    }
    m->mem[l->k[i] * s] = l->b[i][l->k[i]];
    m->k[i] = l->k[i] * s;
    m->b[i] = m->mem;
    return 0;
}

/* Type t with a new leading dim: sharded over the n axes of `axes` in
 * that order (no longer partial there), or local (n 0). */
static void lead_dim(const redist_type_t *t, const int *axes, int n,
                     redist_type_t *e)
{
    memset(e, 0, sizeof *e);
    e->ndims = t->ndims + 1;
    e->partial = t->partial;
    e->dim_naxes[0] = (uint8_t)n;
    for (int j = 0; j < n; j++) {
        e->dims[0][j] = (uint8_t)axes[j];
        e->partial &= ~(1u << axes[j]);
    }
    for (int i = 0; i < t->ndims; i++) {
        e->dim_naxes[i + 1] = t->dim_naxes[i];
        memcpy(e->dims[i + 1], t->dims[i], sizeof e->dims[i]);
    }
}

/* Layout l (or none) with a new leading dim of s blocks of one element
 * (sharded: `sharded`) or of one block of s; dim 0's boundaries in
 * e->mem, the others the plan's own (which outlive the program).  0, or
 * -1 out of memory. */
static int lead_layout(const rd_layout *l, int64_t s, int sharded,
                       rd_layout *e)
{
    memset(e, 0, sizeof *e);
    if (!l)
        return 0;
    int64_t k = sharded ? s : 1;
    if (!(e->mem = malloc((size_t)(k + 1) * sizeof *e->mem)))
        return -1;
    for (int64_t j = 0; j <= k; j++)
        e->mem[j] = sharded ? j : j * s;
    e->ndims = l->ndims + 1;
    e->k[0] = k;
    e->b[0] = e->mem;
    for (int i = 0; i < l->ndims; i++) {
        e->k[i + 1] = l->k[i];
        e->b[i + 1] = l->b[i];
    }
    return 0;
}

/* Is step k the first of a run of reduce_scatters that a program with
 * fuse_rs lowers as one (see the top)?  Their number (0: not lowered;
 * uneven plans one at a time), their axes in `axes` and the view of the
 * last in *last. */
static int rs_run(const rd_program *p, const redist_plan_t *plan, int k,
                  int axes[], redist_step_view_t *last)
{
    int n = redist_plan_num_steps(plan), m = 0;
    redist_step_view_t v;
    if (!p->fuse_rs || redist_plan_step(plan, k, &v) ||
        v.op != REDIST_OP_REDUCE_SCATTER ||
        rd_reduction_lowered_dim(plan, k) < 0)
        return 0;
    int dim = v.dim, uneven = redist_spec_is_uneven(redist_plan_spec(plan));
    do {
        axes[m++] = v.axis;
        *last = v;
    } while (!uneven && m < REDIST_MAX_AXES && k + m < n &&
             !redist_plan_step(plan, k + m, &v) &&
             v.op == REDIST_OP_REDUCE_SCATTER && v.dim == dim &&
             rd_reduction_lowered_dim(plan, k + m) >= 0);
    return m;
}

/* A reduction over a group of s (see the top): the contributions
 * exchanged (exchange xi, from [1][cur] to [s][mid], slab g from member
 * g), then summed in member order (RSUM, in place).  An all_reduce also
 * gathers the sums back (exchange xi + 1, mid to after).  `mid` is the
 * type after the sum: the step's own for a reduce_scatter (v: the last of
 * the m fused ones, over axes[0..m)), the axis added to dim i for an
 * all_reduce. */
static int reduction_passes(rd_program *p, const redist_plan_t *plan,
                            const rd_xstep *x, int xi, int i,
                            unsigned fused_ops, const int64_t cur[],
                            uint64_t L, const redist_step_view_t *v,
                            const int *axes, int m)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int nd = x->ndims, k = x->index, ar = x->op == REDIST_OP_ALL_REDUCE;
    int64_t s = 1, mid_shape[REDIST_MAX_DIMS];
    for (int j = 0; j < m; j++)
        s *= redist_mesh_axis_size(mesh, axes[j]);
    redist_type_t before, mid = v->after, ea, eb;
    rd_plan_type_before(plan, k, &before);
    memcpy(mid_shape, cur, sizeof mid_shape);
    if (ar) {
        mid.dims[i][mid.dim_naxes[i]++] = (uint8_t)x->group.axis;
        mid_shape[i] /= s;
    }
    lead_dim(&before, axes, m, &ea);
    lead_dim(&mid, NULL, 0, &eb);
    rd_xstep xe = *x;
    memset(xe.in_shape, 0, sizeof xe.in_shape);
    memset(xe.out_shape, 0, sizeof xe.out_shape);
    xe.ndims = nd + 1;
    xe.in_shape[0] = 1;
    xe.out_shape[0] = s;
    for (int d = 0; d < nd; d++) {
        xe.in_shape[d + 1] = cur[d];
        xe.out_shape[d + 1] = ar ? mid_shape[d] : v->local_shape[d];
    }
    /* uneven: the slabs of the most any device holds after the step (an
     * all_reduce: in the middle layout, whose longest blocks size the
     * middle block) */
    uint64_t out = v->local_bytes, slabs = (uint64_t)s * out;
    uint64_t mb = ar ? L / (uint64_t)s : out;
    const rd_layout *al = rd_plan_layout_before(plan, k),
                    *bl = rd_plan_layout_after(plan, k);
    rd_layout *ext = p->xlay ? &p->xlay[2 * xi] : NULL, *ml = NULL;
    if (ar && al) {
        if (!ext)
            return -1;
        ml = &ext[2]; /* the gather's `a` layout */
        if (mid_layout(al, i, s, ml))
            return -1;
        mb = rd_layout_max_elems(ml, mid_shape) * x->elem;
        for (int d = 0; d < nd; d++)
            xe.out_shape[d + 1] = mid_shape[d];
    }
    if (ar)
        slabs = (uint64_t)s * mb;
    if (al && (!ext || lead_layout(al, s, 1, &ext[0]) ||
               lead_layout(ar ? ml : bl, s, 0, &ext[1])))
        return -1;
    rd_xchg_init(&p->xchg[xi], mesh, &ea, &eb, xe.in_shape, xe.out_shape,
                 nd + 1, x->elem, al ? &ext[0] : NULL, al ? &ext[1] : NULL);
    as_exchange(p, &xe, xi, fused_ops, xe.in_shape, L, slabs);
    p->pass[p->npasses - 1].last = k + m - 1;
    rd_pass *ps = rd_program_add_pass(p, RD_PASS_RSUM, k, slabs, mb);
    ps->x = *x;
    ps->s = (uint64_t)s;
    ps->chunk = mb;
    ps->inplace_ok = 1;
    ps->umode = !al ? RD_U_NONE : ar ? RD_U_RSUM_MID : RD_U_RSUM;
    if (ml) /* this device's middle box: the gather's block before */
        ps->xi = xi + 1;
    ps->last = k + m - 1;
    if (m > 1) {
        ps->nlev = m;
        for (int j = 0; j < m; j++)
            ps->lev[j] = (uint64_t)redist_mesh_axis_size(mesh, axes[j]);
    }
    if (!ar)
        return 0;
    rd_xstep xg = *x;
    memcpy(xg.in_shape, mid_shape, sizeof xg.in_shape);
    memcpy(xg.out_shape, v->local_shape, sizeof xg.out_shape);
    rd_xchg_init(&p->xchg[xi + 1], mesh, &mid, &v->after, mid_shape,
                 v->local_shape, nd, x->elem, ml, ml ? bl : NULL);
    as_exchange(p, &xg, xi + 1, fused_ops, mid_shape, mb, L);
    return 0;
}

redist_status_t rd_program_passes(const redist_plan_t *plan,
                                  unsigned fused_ops, rd_program *p,
                                  redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec), n = redist_plan_num_steps(plan);
    int64_t cur[REDIST_MAX_DIMS];
    redist_step_view_t v;

    int uneven = redist_spec_is_uneven(spec);
    p->pass = calloc((size_t)(7 * n + 2), sizeof *p->pass);
    if (!p->pass)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (uneven) /* the longest blocks: the sizes of the program */
        rd_layout_max_elems(rd_plan_layout_before(plan, 0), cur);
    else
        redist_type_local_shape(redist_spec_from(spec), mesh,
                                redist_spec_shape(spec), cur);
    uint64_t L = redist_spec_src_bytes(spec);
    int nx = 0;
    for (int k = 0; k < n; k++) {
        redist_plan_step(plan, k, &v);
        nx += v.op == REDIST_OP_EXCHANGE || lowered(p, uneven, v.op);
        if ((p->lower_red || (p->fuse_rs &&
                              v.op == REDIST_OP_REDUCE_SCATTER)) &&
            rd_reduction_lowered_dim(plan, k) >= 0)
            nx += v.op == REDIST_OP_ALL_REDUCE ? 2 : 1;
    }
    if (nx && !(p->xchg = calloc((size_t)nx, sizeof *p->xchg)))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (nx && uneven && (p->lower_red || p->fuse_rs) &&
        !(p->xlay = calloc(2 * (size_t)nx, sizeof *p->xlay)))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int k = 0; k < n; k++) {
        redist_plan_step(plan, k, &v);
        if (v.op == REDIST_OP_SLICE) {
            k = slice_pass(plan, k, cur, &L, p);
            continue;
        }
        int64_t s = v.op == REDIST_OP_PERMUTE || v.op == REDIST_OP_EXCHANGE
                        ? 1
                        : redist_mesh_axis_size(mesh, v.axis);
        rd_xstep x;
        xstep_of(plan, k, &v, cur, s, &x);
        uint64_t out = v.local_bytes;
        p->collectives++;
        int xi = -1, rdim = p->lower_red ? rd_reduction_lowered_dim(plan, k)
                                     : -1;
        int axes[REDIST_MAX_AXES] = {v.axis}, m = 1;
        redist_step_view_t lastv;
        int run = rs_run(p, plan, k, axes, &lastv);
        if (run) { /* v becomes the last step of the run */
            rdim = v.dim;
            m = run;
            p->collectives += m - 1;
            v = lastv;
            k += m - 1;
            out = v.local_bytes;
        }
        if (rdim >= 0) {
            xi = p->nxchg;
            p->nxchg += v.op == REDIST_OP_ALL_REDUCE ? 2 : 1;
            if (reduction_passes(p, plan, &x, xi, rdim, fused_ops, cur, L,
                                 &v, axes, m))
                return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "out of memory");
        } else if (uneven) {
            if (v.op != REDIST_OP_REDUCE_SCATTER &&
                v.op != REDIST_OP_ALL_REDUCE) {
                redist_type_t before;
                rd_plan_type_before(plan, k, &before);
                xi = p->nxchg++;
                rd_xchg_init(&p->xchg[xi], mesh, &before, &v.after, cur,
                             v.local_shape, nd, x.elem,
                             rd_plan_layout_before(plan, k),
                             rd_plan_layout_after(plan, k));
            }
            uneven_passes(p, plan, &x, xi, fused_ops, cur, L, out);
        } else if (v.op == REDIST_OP_EXCHANGE || lowered(p, 0, v.op)) {
            redist_type_t before;
            rd_plan_type_before(plan, k, &before);
            xi = p->nxchg++;
            rd_xchg_init(&p->xchg[xi], mesh, &before, &v.after, cur,
                         v.local_shape, nd, x.elem, NULL, NULL);
        }
        if (uneven || rdim >= 0) {
            /* passes added above */
        } else if (v.op != REDIST_OP_EXCHANGE && lowered(p, 0, v.op)) {
            as_exchange(p, &x, xi, fused_ops, cur, L, out);
        } else if (fused_ops >> v.op & 1u) {
            rd_pass *ps = rd_program_add_pass(p, RD_PASS_FUSED, k, L, out);
            ps->x = x;
            ps->xi = xi;
        } else {
            unfused_passes(p, &x, xi, cur, L, out);
        }
        if (p->pass[p->npasses - 1].out_bytes != out)
            return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                            "internal error: step %d changes %llu bytes "
                            "into %llu, the plan says %llu",
                            k, (unsigned long long)L,
                            (unsigned long long)p->pass[p->npasses - 1]
                                .out_bytes,
                            (unsigned long long)out);
        memcpy(cur, v.local_shape, sizeof cur);
        L = out;
    }
    return REDIST_OK;
}

void rd_program_free(rd_program *p)
{
    if (p) {
        for (int k = 0; p->pass && k < p->npasses; k++)
            free(p->pass[k].vbox);
        free(p->pass);
        p->pass = NULL;
        for (int i = 0; i < p->nxchg; i++) {
            rd_xchg_unbind(&p->xchg[i]);
            if (p->xlay) {
                rd_layout_free(&p->xlay[2 * i]);
                rd_layout_free(&p->xlay[2 * i + 1]);
            }
        }
        free(p->xchg);
        free(p->xlay);
        p->xlay = NULL;
        p->xchg = NULL;
        p->nxchg = 0;
    }
}
