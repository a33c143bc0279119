/*
 * Binding a program to one device: what the device-independent program
 * (program.c, assign.c) leaves open, filled in for device `rank`: the
 * offset of each slice box, each collective's group (base, stride and
 * this device's index), each permute's partners (permute.c) and each
 * exchange's transfer lists (exchange.c).  Cost: O(passes * axes) plus
 * the exchanges' O(peers); memory: the exchanges' transfer lists.
 */
#include <string.h>

#include "exec_internal.h"
#include "../core/internal.h"

redist_status_t rd_program_bind(rd_program *p, const redist_plan_t *plan,
                                int64_t rank, redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, rank, c);
    for (int k = 0; k < p->npasses; k++) {
        rd_pass *ps = &p->pass[k];
        if (ps->kind == RD_PASS_BOX) {
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
                int a = ps->x.group.axis;
                int64_t stride = 1;
                for (int b = a + 1; b < redist_mesh_num_axes(mesh); b++)
                    stride *= redist_mesh_axis_size(mesh, b);
                ps->x.group.index = c[a];
                ps->x.group.stride = stride;
                ps->x.group.base = rank - c[a] * stride;
            }
        }
    }
    return REDIST_OK;
}
