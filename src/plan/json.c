/*
 * Plan JSON (doc/spec-format.md section 4): the writer, one pass over the
 * spec and the steps building a jansson object (field names from the step
 * table), dumped once.  The reader is json_read.c.  Cost: O(steps x dims
 * + devices) for the per-device figures; memory: the document.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

static json_t *type_json(const redist_type_t *t, const redist_mesh_t *m)
{
    json_t *o = json_object(), *dims = json_array(), *part = json_array();
    for (int i = 0; i < t->ndims; i++) {
        json_t *d = json_array();
        for (int k = 0; k < t->dim_naxes[i]; k++)
            json_array_append_new(d,
                                  json_string(m->name[t->dims[i][k]]));
        json_array_append_new(dims, d);
    }
    for (int a = 0; a < m->naxes; a++)
        if (t->partial >> a & 1u)
            json_array_append_new(part, json_string(m->name[a]));
    json_object_set_new(o, "dims", dims);
    json_object_set_new(o, "partial", part);
    return o;
}

static json_t *u64_json(uint64_t v) { return json_integer((json_int_t)v); }

static json_t *shape_json(const int64_t *s, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)s[i]));
    return a;
}

/* The block lengths of dim i of l. */
static json_t *lengths_json(const rd_layout *l, int i)
{
    json_t *a = json_array();
    for (int64_t j = 0; j < l->k[i]; j++)
        json_array_append_new(a, json_integer(l->b[i][j + 1] - l->b[i][j]));
    return a;
}

/* A step's `after` layout: nothing for the default rule (ceil), "split"
 * for another rule that gives it, else "blocks" (null: ceil's blocks). */
static void layout_json(json_t *o, const rd_layout *l, const redist_type_t *t,
                        const redist_spec_t *s, const redist_mesh_t *m)
{
    int r = rd_layout_named(l, t, m, s->shape);
    if (r == REDIST_SPLIT_CEIL)
        return;
    if (r > 0) {
        json_object_set_new(o, "split",
                            json_string(redist_split_name((redist_split_t)r)));
        return;
    }
    json_t *b = json_array();
    for (int i = 0; i < l->ndims; i++)
        json_array_append_new(b, rd_layout_dim_is_rule(l, i, t, m, s->shape,
                                                       REDIST_SPLIT_CEIL)
                                     ? json_null()
                                     : lengths_json(l, i));
    json_object_set_new(o, "blocks", b);
}

/* The source or target layout as the spec states it. */
static void side_layout_json(json_t *o, const redist_spec_t *s, int side)
{
    int any = 0;
    if (s->split[side] != REDIST_SPLIT_CEIL)
        json_object_set_new(o, "split",
                            json_string(redist_split_name(s->split[side])));
    for (int i = 0; i < s->ndims; i++)
        any |= s->blocks[side][i] != NULL;
    if (!any)
        return;
    json_t *b = json_array();
    for (int i = 0; i < s->ndims; i++) {
        json_t *d = json_null();
        if (s->blocks[side][i]) {
            d = json_array();
            for (int64_t j = 0; j < s->blocks[side][i][-1]; j++)
                json_array_append_new(d, json_integer(s->blocks[side][i][j]));
        }
        json_array_append_new(b, d);
    }
    json_object_set_new(o, "blocks", b);
}

/* Per-device figures (rank order). */
static json_t *devices_json(const uint64_t *v, int64_t n)
{
    json_t *a = json_array();
    for (int64_t d = 0; d < n; d++)
        json_array_append_new(a, u64_json(v[d]));
    return a;
}

static json_t *axes_json(const redist_mesh_t *m)
{
    json_t *mesh = json_array();
    for (int a = 0; a < m->naxes; a++) {
        json_t *e = json_array();
        json_array_append_new(e, json_string(m->name[a]));
        json_array_append_new(e, json_integer((json_int_t)m->size[a]));
        json_array_append_new(mesh, e);
    }
    return mesh;
}

/* The spec part of a plan object (name, mesh or meshes, shape, dtype,
 * from, to). */
static void spec_fields(json_t *o, const redist_spec_t *s)
{
    json_object_set_new(o, "name", json_string(s->name ? s->name : ""));
    if (s->two) {
        json_t *ms = json_object();
        for (int side = 0; side < 2; side++) {
            json_t *e = json_object(), *dv = json_array();
            const redist_mesh_t *m = &s->two->mesh[side];
            json_object_set_new(e, "axes", axes_json(m));
            for (int64_t r = 0; r < m->ndevices; r++)
                json_array_append_new(
                    dv, json_integer((json_int_t)s->two->dev[side][r]));
            json_object_set_new(e, "devices", dv);
            json_object_set_new(ms, s->two->name[side], e);
        }
        json_object_set_new(o, "meshes", ms);
    } else
        json_object_set_new(o, "mesh", axes_json(&s->mesh));
    json_object_set_new(o, "shape", shape_json(s->shape, s->ndims));
    json_object_set_new(o, "dtype", json_string(redist_dtype_name(s->dtype)));
    json_object_set_new(o, "reduce",
                        json_string(redist_reduce_name(s->reduce)));
    json_t *from = type_json(&s->from, rd_spec_side_mesh(s, 0));
    json_t *to = type_json(&s->to, rd_spec_side_mesh(s, 1));
    if (s->two) {
        json_object_set_new(from, "mesh", json_string(s->two->name[0]));
        json_object_set_new(to, "mesh", json_string(s->two->name[1]));
    }
    side_layout_json(from, s, 0);
    side_layout_json(to, s, 1);
    json_object_set_new(o, "from", from);
    json_object_set_new(o, "to", to);
}

/* The cost model behind a plan's times: "built-in" or "given", its link
 * costs as a cost file writes them, each mesh axis's link, and the
 * meshes' link when given (two meshes). */
static json_t *cost_json(const redist_plan_t *plan)
{
    const redist_cost_model_t *m = &plan->cost;
    const redist_mesh_t *mesh = &plan->spec->mesh;
    int naxes = redist_mesh_num_axes(mesh);
    int builtin = rd_cost_is_builtin(plan);
    json_t *o = json_object(), *links = json_object(), *ax = json_object();
    json_object_set_new(o, "source", json_string(builtin ? "built-in"
                                                         : "given"));
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        json_t *x = json_object();
        json_object_set_new(x, "alpha", json_real(m->alpha[l]));
        json_object_set_new(x, "beta", json_real(m->beta[l]));
        json_object_set_new(links, redist_link_name((redist_link_t)l), x);
    }
    json_object_set_new(o, "links", links);
    json_object_set_new(o, "gamma", json_real(m->gamma));
    for (int a = 0; a < naxes; a++)
        json_object_set_new(
            ax, redist_mesh_axis_name(mesh, a),
            json_string(redist_link_name((redist_link_t)m->axis_link[a])));
    json_object_set_new(o, "axis_links", ax);
    if (m->mesh_link != REDIST_LINK_DERIVED)
        json_object_set_new(
            o, "mesh_link",
            json_string(redist_link_name((redist_link_t)m->mesh_link)));
    return o;
}

char *redist_plan_to_json(const redist_plan_t *plan)
{
    if (!plan)
        return NULL;
    const redist_spec_t *s = plan->spec;
    json_t *o = json_object();
    if (!o)
        return NULL;
    spec_fields(o, s);
    json_t *steps = json_array();
    for (int i = 0; i < plan->nsteps; i++) {
        const redist_step_view_t *v = &plan->steps[i];
        const rd_step_kind *k = &rd_step_kinds[v->op];
        const redist_mesh_t *m = rd_spec_side_mesh(s, v->mesh);
        json_t *st = json_object();
        json_object_set_new(st, "op", json_string(k->name));
        if (s->two && v->op == REDIST_OP_TRANSFER) {
            json_object_set_new(st, "from_mesh",
                                json_string(s->two->name[0]));
            json_object_set_new(st, "to_mesh", json_string(s->two->name[1]));
        } else if (s->two)
            json_object_set_new(st, "mesh",
                                json_string(s->two->name[v->mesh]));
        if (k->fields & RD_F_DIM)
            json_object_set_new(st, "dim", json_integer(v->dim));
        if (k->fields & RD_F_FROM_DIM)
            json_object_set_new(st, "from_dim", json_integer(v->from_dim));
        if (k->fields & RD_F_TO_DIM)
            json_object_set_new(st, "to_dim", json_integer(v->to_dim));
        if (k->fields & RD_F_AXIS)
            json_object_set_new(st, "axis", json_string(m->name[v->axis]));
        json_t *after = type_json(&v->after, m);
        if (s->two)
            json_object_set_new(after, "mesh",
                                json_string(s->two->name[v->mesh]));
        if (rd_plan_step_layout(plan, i))
            layout_json(after, rd_plan_step_layout(plan, i), &v->after, s,
                        m);
        json_object_set_new(st, "after", after);
        json_object_set_new(st, "local_shape",
                            shape_json(v->local_shape, s->ndims));
        json_object_set_new(st, "local_bytes", u64_json(v->local_bytes));
        json_object_set_new(st, "recv_bytes", u64_json(v->recv_bytes));
        if (plan->has_cost)
            json_object_set_new(st, "time_s", json_real(v->time_s));
        json_array_append_new(steps, st);
    }
    json_object_set_new(o, "steps", steps);
    json_t *stats = json_object();
    const redist_plan_stats_t *x = &plan->stats;
    json_object_set_new(stats, "src_bytes", u64_json(x->src_bytes));
    json_object_set_new(stats, "dst_bytes", u64_json(x->dst_bytes));
    json_object_set_new(stats, "peak_bytes", u64_json(x->peak_bytes));
    json_object_set_new(stats, "recv_bytes", u64_json(x->recv_bytes));
    json_object_set_new(stats, "collectives", json_integer(x->collectives));
    json_object_set_new(stats, "memory_efficient",
                        json_boolean(x->memory_efficient));
    if (plan->has_cost)
        json_object_set_new(stats, "time_s", json_real(x->time_s));
    if (plan->m) {
        json_object_set_new(stats, "recv_bytes_per_device",
                            devices_json(plan->m->dev_recv,
                                         plan->m->ndevices));
        json_object_set_new(stats, "peak_bytes_per_device",
                            devices_json(plan->m->dev_peak,
                                         plan->m->ndevices));
    } else if (plan->u.dev_recv) {
        json_object_set_new(stats, "recv_bytes_per_device",
                            devices_json(plan->u.dev_recv, plan->u.ndevices));
        json_object_set_new(stats, "peak_bytes_per_device",
                            devices_json(plan->u.dev_peak, plan->u.ndevices));
    }
    json_object_set_new(stats, "objective",
                        json_string(plan->objective == REDIST_OBJECTIVE_TIME
                                        ? "time"
                                        : "bytes"));
    if (plan->has_cost)
        json_object_set_new(stats, "cost_model", cost_json(plan));
    if (plan->solved && !x->optimal) {
        /* only when not proven: plans proven optimal keep the contract's
         * keys alone */
        json_object_set_new(stats, "optimal", json_false());
        json_object_set_new(stats, "unproven",
                            json_string(plan->unproven == RD_UNPROVEN_BUDGET
                                            ? "max_states"
                                        : plan->unproven == RD_UNPROVEN_MESHES
                                            ? "two_mesh"
                                            : "permute_group"));
        json_object_set_new(stats, "bound_peak_bytes",
                            u64_json(x->bound_peak_bytes));
        if (plan->objective == REDIST_OBJECTIVE_TIME)
            json_object_set_new(stats, "bound_time_s",
                                json_real(x->bound_time_s));
        else
            json_object_set_new(stats, "bound_recv_bytes",
                                u64_json(x->bound_recv_bytes));
    }
    json_object_set_new(o, "stats", stats);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    json_decref(o);
    return text;
}
