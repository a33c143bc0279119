/*
 * Binding a program to one device: what the device-independent program
 * (program.c, assign.c) leaves open, filled in for device `rank`: the
 * offset of each slice box, each collective's group (base, stride and
 * this device's index), each permute's partners (permute.c) and each
 * exchange's transfer lists (exchange.c).  Cost: O(passes * axes) plus
 * the exchanges' O(peers); memory: the exchanges' transfer lists.
 */
#include <string.h>

#include <stdlib.h>

#include "exec_internal.h"
#include "../core/internal.h"
#include "../core/layout.h"

/* This device's group on `axis`. */
static void bind_group(rd_group *g, const redist_mesh_t *mesh,
                       const int64_t c[], int64_t rank)
{
    int a = g->axis;
    int64_t stride = 1;
    for (int b = a + 1; b < redist_mesh_num_axes(mesh); b++)
        stride *= redist_mesh_axis_size(mesh, b);
    g->index = c[a];
    g->stride = stride;
    g->base = rank - c[a] * stride;
}

/* Device `rank`'s box before step k (after: after step k). */
static void box_at(const redist_plan_t *plan, int k, int after, int64_t rank,
                   int64_t lo[], int64_t hi[])
{
    const redist_mesh_t *mesh = redist_spec_mesh(redist_plan_spec(plan));
    redist_type_t t;
    if (after) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        t = v.after;
        rd_layout_box(rd_plan_layout_after(plan, k), &t, mesh, rank, lo, hi);
    } else {
        rd_plan_type_before(plan, k, &t);
        rd_layout_box(rd_plan_layout_before(plan, k), &t, mesh, rank, lo,
                      hi);
    }
}

/* Does every device's box after step k (an uneven reduce_scatter) lie
 * at the start of its box before, contiguous there, or is it empty?  Then
 * the step may write its output over its own input (rd_xstep.
 * boxed_inplace): a member's box is the first elements of its block in
 * row-major order, where the packed output would go, and no other
 * member's box is there.  O(devices x dims). */
int rd_boxed_prefix(const redist_plan_t *plan, int k)
{
    const redist_mesh_t *mesh = redist_spec_mesh(redist_plan_spec(plan));
    int nd = redist_spec_ndims(redist_plan_spec(plan));
    for (int64_t r = 0; r < redist_mesh_num_devices(mesh); r++) {
        int64_t blo[REDIST_MAX_DIMS], bhi[REDIST_MAX_DIMS];
        int64_t alo[REDIST_MAX_DIMS], ahi[REDIST_MAX_DIMS];
        box_at(plan, k, 0, r, blo, bhi);
        box_at(plan, k, 1, r, alo, ahi);
        int empty = 0, part = 0; /* part: a dim shorter than before seen */
        for (int i = 0; i < nd; i++)
            empty |= ahi[i] <= alo[i];
        for (int i = 0; i < nd && !empty; i++) {
            if (alo[i] != blo[i] || (part && ahi[i] != bhi[i]))
                return 0;
            /* a dim shorter than before makes the box a prefix only if
             * the dims before it hold one index */
            if (ahi[i] != bhi[i]) {
                for (int j = 0; j < i; j++)
                    if (ahi[j] - alo[j] != 1)
                        return 0;
                part = 1;
            }
        }
    }
    return 1;
}

static uint64_t elems_of(int nd, const int64_t ext[])
{
    uint64_t e = 1;
    for (int i = 0; i < nd; i++)
        e *= (uint64_t)ext[i];
    return e;
}

/* A whole uneven reduce_scatter (RD_U_RS): every member's box after it,
 * within the box before (at blo), into ps->vbox for x->mbox (a backend
 * that sends each member its box: MPI, reduce_boxed.c). */
static redist_status_t member_boxes(rd_pass *ps, const redist_plan_t *plan,
                                    const int64_t blo[], redist_error_t *err)
{
    int nd = redist_spec_ndims(redist_plan_spec(plan));
    const rd_group *g = &ps->x.group;
    int64_t alo[REDIST_MAX_DIMS], ahi[REDIST_MAX_DIMS];
    if (!ps->vbox && !(ps->vbox = malloc(sizeof *ps->vbox * 2 *
                                         (size_t)(nd ? nd : 1) *
                                         (size_t)g->size)))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int64_t m = 0; m < g->size; m++) {
        box_at(plan, ps->first, 1, rd_group_rank(g, m), alo, ahi);
        for (int i = 0; i < nd; i++) {
            ps->vbox[(2 * m) * nd + i] = alo[i] - blo[i];
            ps->vbox[(2 * m + 1) * nd + i] = ahi[i] - alo[i];
        }
    }
    ps->x.mbox = ps->vbox;
    return REDIST_OK;
}

/* The uneven parts of pass ps for device `rank` (its group bound). */
static redist_status_t bind_uneven(rd_pass *ps, const redist_plan_t *plan,
                                   int64_t rank, redist_error_t *err)
{
    int nd = redist_spec_ndims(redist_plan_spec(plan));
    uint64_t elem = redist_dtype_size(redist_spec_dtype(redist_plan_spec(plan)));
    int64_t blo[REDIST_MAX_DIMS], bhi[REDIST_MAX_DIMS];
    int64_t alo[REDIST_MAX_DIMS], ahi[REDIST_MAX_DIMS];
    rd_xstep *x = &ps->x;
    switch (ps->umode) {
    case RD_U_BOX:
    case RD_U_RS: { /* the box after within the box before */
        int64_t *off = ps->umode == RD_U_RS ? x->box_off : ps->off;
        box_at(plan, ps->first, 0, rank, blo, bhi);
        box_at(plan, ps->last, 1, rank, alo, ahi);
        for (int i = 0; i < nd; i++) {
            x->in_shape[i] = bhi[i] - blo[i];
            x->out_shape[i] = ahi[i] - alo[i];
            off[i] = alo[i] - blo[i];
        }
        ps->dev_in = elems_of(nd, x->in_shape) * elem;
        ps->dev_out = elems_of(nd, x->out_shape) * elem;
        if (ps->umode == RD_U_RS)
            return member_boxes(ps, plan, blo, err);
        return REDIST_OK;
    }
    case RD_U_RSUM: /* s slabs of this device's box after the step */
        box_at(plan, ps->first, 1, rank, alo, ahi);
        for (int i = 0; i < nd; i++)
            x->out_shape[i] = ahi[i] - alo[i];
        ps->chunk = elems_of(nd, x->out_shape) * elem;
        ps->dev_in = ps->s * ps->chunk;
        ps->dev_out = ps->chunk;
        return REDIST_OK;
    case RD_U_RSUM_MID: /* s slabs of this device's middle box: the
                           gather's `a` block (bound above) */
        memcpy(x->out_shape, x->xchg->la, sizeof x->out_shape);
        ps->chunk = elems_of(nd, x->out_shape) * elem;
        ps->dev_in = ps->s * ps->chunk;
        ps->dev_out = ps->chunk;
        return REDIST_OK;
    case RD_U_COUNT:
        box_at(plan, ps->first, 1, rank, alo, ahi);
        for (int i = 0; i < nd; i++)
            x->in_shape[i] = x->out_shape[i] = ahi[i] - alo[i];
        ps->dev_in = ps->dev_out = elems_of(nd, x->out_shape) * elem;
        return REDIST_OK;
    case RD_U_VPACK:
    case RD_U_SUM:
    case RD_U_CHUNK: {
        const rd_group *g = &x->group;
        uint64_t before = 0, mine = 0, total = 0;
        box_at(plan, ps->first, 0, rank, blo, bhi);
        if (ps->umode == RD_U_VPACK && !ps->vbox &&
            !(ps->vbox = malloc(sizeof *ps->vbox * 2 * (size_t)nd *
                                (size_t)g->size)))
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        ps->nvbox = ps->umode == RD_U_VPACK ? g->size : 0;
        for (int64_t m = 0; m < g->size; m++) {
            box_at(plan, ps->first, 1, rd_group_rank(g, m), alo, ahi);
            uint64_t e = 1;
            for (int i = 0; i < nd; i++) {
                e *= (uint64_t)(ahi[i] - alo[i]);
                if (ps->vbox) {
                    ps->vbox[(2 * m) * nd + i] = alo[i] - blo[i];
                    ps->vbox[(2 * m + 1) * nd + i] = ahi[i] - alo[i];
                }
            }
            if (m < g->index)
                before += e;
            if (m == g->index)
                mine = e;
            total += e;
        }
        if (ps->umode == RD_U_VPACK) {
            for (int i = 0; i < nd; i++)
                x->in_shape[i] = bhi[i] - blo[i];
            ps->dev_in = elems_of(nd, x->in_shape) * elem;
            ps->dev_out = total * elem;
        } else if (ps->umode == RD_U_SUM) {
            ps->dev_in = ps->dev_out = total * elem;
        } else { /* this member's chunk of the packed boxes, 1-d */
            x->ndims = 1;
            x->in_shape[0] = (int64_t)total;
            x->out_shape[0] = (int64_t)mine;
            ps->off[0] = (int64_t)before;
            ps->dev_in = total * elem;
            ps->dev_out = mine * elem;
        }
        return REDIST_OK;
    }
    case RD_U_DST: {
        int n = redist_plan_num_steps(plan);
        if (n) {
            box_at(plan, n - 1, 1, rank, alo, ahi);
        } else {
            box_at(plan, 0, 0, rank, alo, ahi);
        }
        uint64_t e = 1;
        for (int i = 0; i < nd; i++)
            e *= (uint64_t)(ahi[i] - alo[i]);
        ps->dev_in = ps->dev_out = e * elem;
        return REDIST_OK;
    }
    default:
        return REDIST_OK;
    }
}

redist_status_t rd_program_bind(rd_program *p, const redist_plan_t *plan,
                                int64_t rank, redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, rank, c);
    for (int k = 0; k < p->npasses; k++) {
        rd_pass *ps = &p->pass[k];
        ps->dev_in = ps->in_bytes;
        ps->dev_out = ps->out_bytes;
        if (ps->kind == RD_PASS_BOX && ps->umode != RD_U_NONE) {
            /* uneven: below */
        } else if (ps->kind == RD_PASS_BOX) {
            int64_t part[REDIST_MAX_DIMS];
            memcpy(part, ps->x.in_shape, sizeof part);
            memset(ps->off, 0, sizeof ps->off);
            for (int q = ps->first; q <= ps->last; q++) {
                redist_step_view_t v;
                redist_plan_step(plan, q, &v);
                int64_t s = redist_mesh_axis_size(mesh, v.axis);
                part[v.dim] /= s;
                ps->off[v.dim] += c[v.axis] * part[v.dim];
            }
        } else if (ps->xi >= 0) {
            rd_xchg *xc = &p->xchg[ps->xi];
            if (xc->rank != rank) {
                redist_status_t st = rd_xchg_bind(xc, rank, err);
                if (st)
                    return st;
            }
            ps->x.xchg = xc;
            if (p->uneven) {
                memcpy(ps->x.in_shape, xc->la, sizeof ps->x.in_shape);
                memcpy(ps->x.out_shape, xc->lb, sizeof ps->x.out_shape);
            }
        } else if (ps->kind == RD_PASS_XCHG || ps->kind == RD_PASS_FUSED) {
            if (ps->x.op == REDIST_OP_PERMUTE) {
                redist_type_t before;
                redist_step_view_t v;
                rd_plan_type_before(plan, ps->first, &before);
                redist_plan_step(plan, ps->first, &v);
                if (rd_permute_peers(mesh, &before, &v.after, rank,
                                     &ps->x.send_to, &ps->x.recv_from))
                    return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                                    "internal error: no permute partner "
                                    "for device %lld at step %d",
                                    (long long)rank, ps->first);
                ps->x.group.index = 0;
                ps->x.group.base = rank;
                ps->x.group.stride = 1;
            } else {
                bind_group(&ps->x.group, mesh, c, rank);
            }
        } else if (ps->kind == RD_PASS_VPACK) {
            bind_group(&ps->x.group, mesh, c, rank);
        }
        if (ps->umode == RD_U_CHUNK)
            bind_group(&ps->x.group, mesh, c, rank);
        if (ps->umode != RD_U_NONE) {
            redist_status_t st = bind_uneven(ps, plan, rank, err);
            if (st)
                return st;
        }
    }
    return REDIST_OK;
}
