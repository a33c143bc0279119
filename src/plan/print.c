/*
 * The readable plan: a table of steps and, for small meshes, a grid of
 * which global block each device holds before and after every step.
 */
#include <stdio.h>
#include <string.h>

#include "plan_internal.h"

/* The block a device holds in type t: per dim, its index among the dim's
 * blocks (mixed radix of its coordinates, first axis most significant). */
static void device_cell(const redist_mesh_t *m, const redist_type_t *t,
                        const rd_layout *l, const int64_t coords[], char *buf,
                        size_t size)
{
    size_t pos = 0;
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    if (l)
        rd_layout_box_coord(l, t, m, coords, lo, hi);
    rd_appendf(buf, size, &pos, "(");
    for (int i = 0; i < t->ndims; i++) {
        if (l && t->dim_naxes[i] > 0) {
            /* uneven plans: the element range of the device's box */
            rd_appendf(buf, size, &pos, "%s%lld:%lld", i ? "," : "",
                       (long long)lo[i], (long long)hi[i]);
            continue;
        }
        if (t->dim_naxes[i] == 0) {
            rd_appendf(buf, size, &pos, "%s*", i ? "," : "");
            continue;
        }
        int64_t idx = 0;
        for (int k = 0; k < t->dim_naxes[i]; k++) {
            int a = t->dims[i][k];
            idx = idx * m->size[a] + coords[a];
        }
        rd_appendf(buf, size, &pos, "%s%lld", i ? "," : "", (long long)idx);
    }
    rd_appendf(buf, size, &pos, ")");
    if (t->partial) {
        rd_appendf(buf, size, &pos, "+");
        int first = 1;
        for (int a = 0; a < m->naxes; a++)
            if (t->partial >> a & 1u) {
                rd_appendf(buf, size, &pos, "%s%s=%lld", first ? "" : ",",
                           m->name[a], (long long)coords[a]);
                first = 0;
            }
    }
}

/* Rows: coordinate on the first axis; columns: the other axes, row-major. */
static void print_grid(const redist_mesh_t *m,
                       const redist_type_t *t, const rd_layout *l, FILE *out)
{
    int64_t rows = m->size[0];
    int64_t cols = m->ndevices / rows;
    char cell[128];
    int width = 0;
    int64_t coords[REDIST_MAX_AXES];
    for (int64_t r = 0; r < m->ndevices; r++) {
        redist_mesh_coords(m, r, coords);
        device_cell(m, t, l, coords, cell, sizeof cell);
        int w = (int)strlen(cell);
        if (w > width)
            width = w;
    }
    fprintf(out, "      %-8s", m->naxes > 1 ? "" : "device");
    if (m->naxes > 1)
        for (int64_t c = 0; c < cols; c++) {
            char hdr[256];
            size_t pos = 0;
            int64_t rem = c;
            hdr[0] = '\0';
            for (int a = 1; a < m->naxes; a++) {
                int64_t st = m->stride[a];
                rd_appendf(hdr, sizeof hdr, &pos, "%s%s=%lld", a > 1 ? "," : "",
                           m->name[a], (long long)(rem / st));
                rem %= st;
            }
            fprintf(out, " %-*s", width, hdr);
        }
    fprintf(out, "\n");
    for (int64_t r = 0; r < rows; r++) {
        char lbl[REDIST_MAX_NAME + 24];
        snprintf(lbl, sizeof lbl, "%s=%lld", m->name[0], (long long)r);
        fprintf(out, "      %-8s", lbl);
        for (int64_t c = 0; c < cols; c++) {
            redist_mesh_coords(m, r * cols + c, coords);
            device_cell(m, t, l, coords, cell, sizeof cell);
            fprintf(out, " %-*s", width, cell);
        }
        fprintf(out, "\n");
    }
}

/* The mesh a step's `after` lives on. */
static const redist_mesh_t *view_mesh(const redist_plan_t *p,
                                      const redist_step_view_t *v)
{
    return rd_spec_side_mesh(p->spec, v->mesh);
}

/* A type as text; on a two-mesh spec prefixed by its mesh's name. */
static const char *type_text(const redist_spec_t *s, int side,
                             const redist_type_t *t, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    if (s->two)
        rd_appendf(buf, size, &pos, "%s:", s->two->name[side]);
    redist_type_format(t, rd_spec_side_mesh(s, side), buf + pos, size - pos);
    return buf;
}

static void step_args(const redist_plan_t *p, const redist_step_view_t *v,
                      char *axis, size_t na, char *dims, size_t nd)
{
    const redist_mesh_t *m = view_mesh(p, v);
    snprintf(axis, na, "%s", v->axis >= 0 ? m->name[v->axis] : "-");
    if (v->op == REDIST_OP_ALL_TO_ALL)
        snprintf(dims, nd, "%d->%d", v->from_dim, v->to_dim);
    else if (v->dim >= 0)
        snprintf(dims, nd, "%d", v->dim);
    else
        snprintf(dims, nd, "-");
}

/* The block lengths of the dims of `l` that do not split evenly, one line
 * ("blocks dim 1: 300,300,250,174 (balanced)"), or nothing. */
static void blocks_line(FILE *out, const char *indent, const redist_spec_t *s,
                        const redist_mesh_t *m, const redist_type_t *t,
                        const rd_layout *l, int prefer)
{
    if (!l || rd_layout_is_even(l, s->shape))
        return;
    int r = rd_layout_named(l, t, m, s->shape);
    if (prefer >= 0) {
        int all = 1;
        for (int i = 0; i < l->ndims && all; i++)
            all = rd_layout_dim_is_rule(l, i, t, m, s->shape,
                                        (redist_split_t)prefer);
        if (all)
            r = prefer; /* the rule the spec names */
    }
    fprintf(out, "%sblocks", indent);
    for (int i = 0; i < l->ndims; i++) {
        if (s->shape[i] % l->k[i] == 0 &&
            rd_layout_dim_is_rule(l, i, t, m, s->shape, REDIST_SPLIT_CEIL))
            continue; /* even */
        fprintf(out, " dim %d: ", i);
        for (int64_t j = 0; j < l->k[i] && j < 16; j++)
            fprintf(out, "%s%lld", j ? "," : "",
                    (long long)(l->b[i][j + 1] - l->b[i][j]));
        if (l->k[i] > 16)
            fprintf(out, ",... (%lld blocks)", (long long)l->k[i]);
    }
    fprintf(out, " (%s)\n",
            r >= 0 ? redist_split_name((redist_split_t)r) : "explicit");
}

/* A device list as ranges: "0-3,6". */
static void devices_text(const int64_t *d, int64_t n, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j + 1 < n && d[j + 1] == d[j] + 1)
            j++;
        if (j > i)
            rd_appendf(buf, size, &pos, "%s%lld-%lld", i ? "," : "",
                       (long long)d[i], (long long)d[j]);
        else
            rd_appendf(buf, size, &pos, "%s%lld", i ? "," : "",
                       (long long)d[i]);
        i = j + 1;
    }
}

/* The spec: name, mesh(es), array, source and target types and blocks. */
static void print_head(const redist_plan_t *plan, FILE *out)
{
    const redist_spec_t *s = plan->spec;
    char tf[512], sh[256], dv[256];
    fprintf(out, "plan %s\n", s->name && s->name[0] ? s->name : "(unnamed)");
    for (int side = 0; side < (s->two ? 2 : 1); side++) {
        const redist_mesh_t *m = rd_spec_side_mesh(s, side);
        fprintf(out, "  mesh   ");
        if (s->two)
            fprintf(out, "%s: ", s->two->name[side]);
        for (int a = 0; a < m->naxes; a++)
            fprintf(out, "%s%s=%lld", a ? " " : "", m->name[a],
                    (long long)m->size[a]);
        if (s->two) {
            devices_text(s->two->dev[side], m->ndevices, dv, sizeof dv);
            fprintf(out, " on devices %s\n", dv);
        } else
            fprintf(out, " (%lld devices)\n", (long long)m->ndevices);
    }
    redist_shape_format(s->shape, s->ndims, sh, sizeof sh);
    fprintf(out, "  array  %s%s, reduce %s\n", redist_dtype_name(s->dtype),
            sh, redist_reduce_name(s->reduce));
    const rd_layout *sl = s->uneven ? &s->lay[0] : NULL;
    const rd_layout *dl = s->uneven ? &s->lay[1] : NULL;
    fprintf(out, "  from   %s\n", type_text(s, 0, &s->from, tf, sizeof tf));
    blocks_line(out, "           ", s, rd_spec_side_mesh(s, 0), &s->from, sl,
                (int)s->split[0]);
    fprintf(out, "  to     %s\n", type_text(s, 1, &s->to, tf, sizeof tf));
    blocks_line(out, "           ", s, rd_spec_side_mesh(s, 1), &s->to, dl,
                (int)s->split[1]);
    fprintf(out, "\n");
}

/* The table: the source, then a row per step (and its blocks). */
static void print_steps(const redist_plan_t *plan, FILE *out)
{
    const redist_spec_t *s = plan->spec;
    const redist_mesh_t *m = &s->mesh;
    const rd_layout *sl = s->uneven ? &s->lay[0] : NULL;
    char tf[512], sh[256], ax[80], dm[32];
    fprintf(out, "  %4s  %-14s %-8s %-6s %-20s %14s %14s  %s%s\n", "step",
            "op", "axis", "dims", "local shape", "recv bytes", "peak bytes",
            plan->has_cost ? "   time (us)  " : "", "type after");
    int64_t local[REDIST_MAX_DIMS];
    if (sl)
        rd_layout_max_elems(sl, local); /* the longest block of each dim */
    else
        redist_type_local_shape(&s->from, m, s->shape, local);
    redist_shape_format(local, s->ndims, sh, sizeof sh);
    uint64_t peak = s->src_bytes;
    fprintf(out, "  %4s  %-14s %-8s %-6s %-20s %14s %14llu  %s%s\n", "-",
            "(source)", "", "", sh, "", (unsigned long long)peak,
            plan->has_cost ? "              " : "",
            type_text(s, 0, &s->from, tf, sizeof tf));
    for (int i = 0; i < plan->nsteps; i++) {
        const redist_step_view_t *v = &plan->steps[i];
        step_args(plan, v, ax, sizeof ax, dm, sizeof dm);
        redist_shape_format(v->local_shape, s->ndims, sh, sizeof sh);
        if (v->local_bytes > peak)
            peak = v->local_bytes;
        char tm[32] = "";
        if (plan->has_cost)
            snprintf(tm, sizeof tm, "%12.2f  ", v->time_s * 1e6);
        fprintf(out, "  %4d  %-14s %-8s %-6s %-20s %14llu %14llu  %s%s\n",
                i + 1, redist_op_name(v->op), ax, dm, sh,
                (unsigned long long)v->recv_bytes, (unsigned long long)peak,
                tm, type_text(s, v->mesh, &v->after, tf, sizeof tf));
        blocks_line(out, "                ", s, view_mesh(plan, v), &v->after,
                    rd_plan_step_layout(plan, i), -1);
    }
}

/* The totals: traffic, time, memory efficiency, optimality. */
static void print_summary(const redist_plan_t *plan, FILE *out)
{
    const redist_spec_t *s = plan->spec;
    char b1[32], b2[32];
    const redist_plan_stats_t *x = &plan->stats;
    uint64_t bound = x->src_bytes > x->dst_bytes ? x->src_bytes : x->dst_bytes;
    rd_format_bytes(x->recv_bytes, b1, sizeof b1);
    rd_format_bytes(x->peak_bytes, b2, sizeof b2);
    fprintf(out,
            "\n  %d collective%s, %d step%s; received %llu bytes per device "
            "(%s); peak %llu bytes (%s)\n",
            x->collectives, x->collectives == 1 ? "" : "s", x->steps,
            x->steps == 1 ? "" : "s", (unsigned long long)x->recv_bytes, b1,
            (unsigned long long)x->peak_bytes, b2);
    if (plan->has_cost)
        fprintf(out, "  modelled time %.2f us (objective: %s; %s cost model)\n",
                x->time_s * 1e6,
                plan->objective == REDIST_OBJECTIVE_TIME ? "time" : "bytes",
                rd_cost_is_builtin(plan) ? "built-in" : "given");
    else
        fprintf(out, "  objective: bytes\n");
    rd_format_bytes(bound, b1, sizeof b1);
    if (s->uneven || s->two)
        fprintf(out,
                "  memory-efficient: %s (every device d within max(src_d, "
                "dst_d)%s; peak %llu bytes, max(src, dst) %llu bytes)\n",
                x->memory_efficient ? "yes" : "no",
                x->memory_efficient ? ""
                : plan->solved && x->optimal
                    ? " is out of reach: locality forces more; this is the "
                      "least peak possible"
                    : " does not hold",
                (unsigned long long)x->peak_bytes, (unsigned long long)bound);
    else if (x->memory_efficient)
        fprintf(out,
                "  memory-efficient: yes (peak <= max(src, dst) = %llu bytes, "
                "%s)\n",
                (unsigned long long)bound, b1);
    else if (plan->solved && x->optimal)
        fprintf(out,
                "  memory-efficient: no (peak %llu > max(src, dst) = %llu "
                "bytes: divisibility forces a larger intermediate; this is "
                "the least peak possible)\n",
                (unsigned long long)x->peak_bytes, (unsigned long long)bound);
    else
        fprintf(out,
                "  memory-efficient: no (peak %llu > max(src, dst) = %llu "
                "bytes)\n",
                (unsigned long long)x->peak_bytes, (unsigned long long)bound);
    if (plan->solved && !x->optimal) {
        if (plan->unproven == RD_UNPROVEN_MESHES)
            fprintf(out, "  optimal: not proven: the best plan of the "
                         "two-mesh family (phases on each mesh around one "
                         "transfer; doc/meshes.md)\n");
        else if (plan->unproven == RD_UNPROVEN_BUDGET)
            fprintf(out,
                    "  optimal: not proven: the search reached its budget of "
                    "%llu types (max_states); this is the constructive "
                    "plan\n",
                    (unsigned long long)plan->max_states);
        else
            fprintf(out, "  optimal: not proven: a permute group was too "
                         "large to enumerate; this is the best plan over "
                         "the moves searched\n");
        if (plan->unproven == RD_UNPROVEN_MESHES)
            fprintf(out, "  lower bound: no plan peaks below %llu bytes\n",
                    (unsigned long long)x->bound_peak_bytes);
        else if (plan->objective == REDIST_OBJECTIVE_TIME)
            fprintf(out,
                    "  lower bounds: no plan peaks below %llu bytes; none "
                    "with this plan's peak takes less than %.2f us\n",
                    (unsigned long long)x->bound_peak_bytes,
                    x->bound_time_s * 1e6);
        else
            fprintf(out,
                    "  lower bounds: no plan peaks below %llu bytes; none "
                    "with this plan's peak receives fewer than %llu bytes "
                    "per device\n",
                    (unsigned long long)x->bound_peak_bytes,
                    (unsigned long long)x->bound_recv_bytes);
    }
}

/* Every device's blocks, at the source and after each step. */
static void print_grids(const redist_plan_t *plan, FILE *out)
{
    const redist_spec_t *s = plan->spec;
    const rd_layout *sl = s->uneven ? &s->lay[0] : NULL;
    char tf[512], ax[80], dm[32];
    fprintf(out, s->uneven
                     ? "\n  elements held, (lo:hi per dim; * = whole dim; "
                       "+axis=N = partial contribution N):\n"
                     : "\n  blocks held, (block index per dim; * = whole "
                       "dim; +axis=N = partial contribution N):\n");
    fprintf(out, "    source %s\n", type_text(s, 0, &s->from, tf, sizeof tf));
    print_grid(rd_spec_side_mesh(s, 0), &s->from, sl, out);
    for (int i = 0; i < plan->nsteps; i++) {
        const redist_step_view_t *v = &plan->steps[i];
        step_args(plan, v, ax, sizeof ax, dm, sizeof dm);
        type_text(s, v->mesh, &v->after, tf, sizeof tf);
        if (v->op == REDIST_OP_PERMUTE || v->op == REDIST_OP_TRANSFER)
            fprintf(out, "    after step %d (%s) %s\n", i + 1,
                    redist_op_name(v->op), tf);
        else
            fprintf(out, "    after step %d (%s %s, dim %s) %s\n", i + 1,
                    redist_op_name(v->op), ax, dm, tf);
        print_grid(view_mesh(plan, v), &v->after,
                   rd_plan_step_layout(plan, i), out);
    }
}

redist_status_t redist_plan_print(const redist_plan_t *plan, FILE *out,
                                  int grid)
{
    if (!plan || !out)
        return REDIST_ERR_INVALID;
    print_head(plan, out);
    print_steps(plan, out);
    print_summary(plan, out);
    if (grid && redist_spec_num_devices(plan->spec) <= 64)
        print_grids(plan, out);
    return REDIST_OK;
}
