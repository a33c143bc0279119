/*
 * The plan hash every rank compares before any data moves (the backends'
 * `agree`): FNV-1a over everything about a plan that all ranks must
 * agree on (mesh sizes, shape, dtype, reduction, types, every step, the
 * layouts of an uneven plan and the execution flags).  Cost: O(steps *
 * dims * (axes + blocks)); no memory.
 */
#include "exec_internal.h"
#include "../core/internal.h"
#include "../core/layout.h"

static void fnv_i64(uint64_t *h, int64_t v)
{
    *h = rd_fnv_u64(*h, (uint64_t)v);
}

static void fnv_type(uint64_t *h, const redist_type_t *t)
{
    fnv_i64(h, t->ndims);
    for (int i = 0; i < t->ndims; i++) {
        fnv_i64(h, t->dim_naxes[i]);
        for (int k = 0; k < t->dim_naxes[i]; k++)
            fnv_i64(h, t->dims[i][k]);
    }
    fnv_i64(h, (int64_t)t->partial);
}

/* Uneven dims: the boundaries of every dim (NULL: an even plan). */
static void fnv_layout(uint64_t *h, const rd_layout *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->ndims; i++)
        for (int64_t j = 0; j <= l->k[i]; j++)
            fnv_i64(h, l->b[i][j]);
}

uint64_t redist_plan_hash(const redist_plan_t *plan)
{
    return plan ? rd_plan_hash(plan, 0) : 0;
}

uint64_t rd_plan_hash(const redist_plan_t *plan, unsigned flags)
{
    uint64_t h = RD_FNV_BASIS;
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    fnv_i64(&h, flags);
    fnv_i64(&h, redist_mesh_num_axes(mesh));
    for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
        fnv_i64(&h, redist_mesh_axis_size(mesh, a));
    fnv_i64(&h, redist_spec_ndims(spec));
    for (int i = 0; i < redist_spec_ndims(spec); i++)
        fnv_i64(&h, redist_spec_shape(spec)[i]);
    fnv_i64(&h, redist_spec_dtype(spec));
    fnv_i64(&h, redist_spec_reduce(spec));
    fnv_type(&h, redist_spec_from(spec));
    fnv_type(&h, redist_spec_to(spec));
    fnv_i64(&h, redist_plan_num_steps(plan));
    fnv_layout(&h, rd_plan_layout_before(plan, 0));
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        fnv_i64(&h, v.op);
        fnv_i64(&h, v.dim);
        fnv_i64(&h, v.from_dim);
        fnv_i64(&h, v.to_dim);
        fnv_i64(&h, v.axis);
        fnv_type(&h, &v.after);
        fnv_layout(&h, rd_plan_layout_after(plan, k));
    }
    return h;
}
