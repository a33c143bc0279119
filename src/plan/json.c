/*
 * Plan JSON (FORMATS.md section 4): writer, and the reader behind
 * `redistplan verify`.  Field names come from the step table.
 */
#include <errno.h>
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

/* The spec part of a plan object (name, mesh, shape, dtype, from, to). */
static void spec_fields(json_t *o, const redist_spec_t *s)
{
    json_t *mesh = json_array();
    json_object_set_new(o, "name", json_string(s->name ? s->name : ""));
    for (int a = 0; a < s->mesh.naxes; a++) {
        json_t *e = json_array();
        json_array_append_new(e, json_string(s->mesh.name[a]));
        json_array_append_new(e, json_integer((json_int_t)s->mesh.size[a]));
        json_array_append_new(mesh, e);
    }
    json_object_set_new(o, "mesh", mesh);
    json_object_set_new(o, "shape", shape_json(s->shape, s->ndims));
    json_object_set_new(o, "dtype", json_string(redist_dtype_name(s->dtype)));
    json_object_set_new(o, "reduce",
                        json_string(redist_reduce_name(s->reduce)));
    json_object_set_new(o, "from", type_json(&s->from, &s->mesh));
    json_object_set_new(o, "to", type_json(&s->to, &s->mesh));
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
        json_t *st = json_object();
        json_object_set_new(st, "op", json_string(k->name));
        if (k->fields & RD_F_DIM)
            json_object_set_new(st, "dim", json_integer(v->dim));
        if (k->fields & RD_F_FROM_DIM)
            json_object_set_new(st, "from_dim", json_integer(v->from_dim));
        if (k->fields & RD_F_TO_DIM)
            json_object_set_new(st, "to_dim", json_integer(v->to_dim));
        if (k->fields & RD_F_AXIS)
            json_object_set_new(st, "axis",
                                json_string(s->mesh.name[v->axis]));
        json_object_set_new(st, "after", type_json(&v->after, &s->mesh));
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
    json_object_set_new(stats, "objective",
                        json_string(plan->objective == REDIST_OBJECTIVE_TIME
                                        ? "time"
                                        : "bytes"));
    if (plan->solved && !x->optimal) {
        /* only when not proven: plans proven optimal keep the contract's
         * keys alone */
        json_object_set_new(stats, "optimal", json_false());
        json_object_set_new(stats, "unproven",
                            json_string(plan->unproven == RD_UNPROVEN_BUDGET
                                            ? "max_states"
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
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    return text;
}

/* ------------------------------------------------------------ reader */

typedef struct {
    const char *source;
    redist_error_t *err;
    const redist_spec_t *spec;
} rctx;

static redist_status_t read_int_field(rctx *c, json_t *st, const char *key,
                                      const char *path, int *out)
{
    char p[96];
    json_t *v = json_object_get(st, key);
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!v)
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                        "missing field \"%s\"", key);
    if (!json_is_integer(v))
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                        "expected an integer, got %s", rd_json_kind(v));
    json_int_t x = json_integer_value(v);
    *out = x < -1 || x > 1000 ? 1000 : (int)x; /* out of range: apply fails */
    return REDIST_OK;
}

static redist_status_t read_type(rctx *c, json_t *v, const char *path,
                                 rd_ctype *out)
{
    const redist_mesh_t *m = &c->spec->mesh;
    redist_type_t t;
    char p[128];
    if (!json_is_object(v) || !json_is_array(json_object_get(v, "dims")))
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, path,
                        "expected a type {\"dims\": [...], \"partial\": "
                        "[...]}");
    json_t *dims = json_object_get(v, "dims");
    if ((int)json_array_size(dims) != c->spec->ndims)
        return rd_error(c->err, REDIST_ERR_PLAN, c->source, path,
                        "rank mismatch: %zu dims, the array has %d",
                        json_array_size(dims), c->spec->ndims);
    redist_type_init(&t, c->spec->ndims);
    uint32_t used = 0;
    for (int i = 0; i < t.ndims; i++) {
        json_t *d = json_array_get(dims, (size_t)i);
        snprintf(p, sizeof p, "%s.dims[%d]", path, i);
        if (!json_is_array(d) || json_array_size(d) > REDIST_MAX_AXES)
            return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                            "expected an array of axis names");
        for (size_t k = 0; k < json_array_size(d); k++) {
            const char *nm = json_string_value(json_array_get(d, k));
            int a = redist_mesh_find_axis(m, nm);
            if (a < 0)
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "axis \"%.60s\" is not in the mesh",
                                nm ? nm : "?");
            if (used >> a & 1u)
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "axis \"%s\" is used twice", nm);
            used |= 1u << a;
            redist_type_push_axis(&t, i, a);
        }
    }
    json_t *part = json_object_get(v, "partial");
    for (size_t k = 0; part && k < json_array_size(part); k++) {
        const char *nm = json_string_value(json_array_get(part, k));
        int a = redist_mesh_find_axis(m, nm);
        snprintf(p, sizeof p, "%s.partial[%zu]", path, k);
        if (a < 0 || (used >> a & 1u))
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "axis \"%.60s\" is not in the mesh or used twice",
                            nm ? nm : "?");
        used |= 1u << a;
        t.partial |= 1u << a;
    }
    rd_ctype_from_type(out, &t);
    return REDIST_OK;
}

static int get_u64(json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

static redist_status_t read_steps(rctx *c, json_t *root, rd_step **out,
                                  int *nout)
{
    json_t *steps = json_is_object(root) ? json_object_get(root, "steps")
                                         : NULL;
    if (!json_is_array(steps))
        return rd_error(c->err, REDIST_ERR_INVALID, c->source,
                        json_is_object(root) ? "steps" : NULL,
                        "a plan is an object with a \"steps\" array");
    size_t n = json_array_size(steps);
    if (n > 100000)
        return rd_error(c->err, REDIST_ERR_LIMIT, c->source, "steps",
                        "%zu steps; at most 100000", n);
    rd_step *path = calloc(n ? n : 1, sizeof *path);
    if (!path)
        return rd_error(c->err, REDIST_ERR_NOMEM, c->source, NULL,
                        "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_array_get(steps, i);
        char p[64];
        redist_status_t s;
        redist_op_t op;
        snprintf(p, sizeof p, "steps[%zu]", i);
        rd_step *r = &path[i];
        r->dim = r->from_dim = r->to_dim = r->axis = -1;
        if (!json_is_object(st) || !json_is_string(json_object_get(st, "op"))) {
            free(path);
            return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                            "expected a step object with a string \"op\"");
        }
        const char *name = json_string_value(json_object_get(st, "op"));
        if (redist_op_from_name(name, &op)) {
            free(path);
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "unknown op \"%.40s\"", name);
        }
        r->op = (int)op;
        unsigned f = rd_step_kinds[op].fields;
        s = REDIST_OK;
        if (f & RD_F_DIM)
            s = read_int_field(c, st, "dim", p, &r->dim);
        if (!s && (f & RD_F_FROM_DIM))
            s = read_int_field(c, st, "from_dim", p, &r->from_dim);
        if (!s && (f & RD_F_TO_DIM))
            s = read_int_field(c, st, "to_dim", p, &r->to_dim);
        if (!s && (f & RD_F_AXIS)) {
            json_t *a = json_object_get(st, "axis");
            char pa[80];
            snprintf(pa, sizeof pa, "%s.axis", p);
            if (!json_is_string(a))
                s = rd_error(c->err, REDIST_ERR_INVALID, c->source, pa,
                             "expected an axis name");
            else if ((r->axis = redist_mesh_find_axis(
                          &c->spec->mesh, json_string_value(a))) < 0)
                s = rd_error(c->err, REDIST_ERR_PLAN, c->source, pa,
                             "axis \"%.60s\" is not in the mesh",
                             json_string_value(a));
        }
        json_t *after = json_object_get(st, "after");
        char pa[80];
        snprintf(pa, sizeof pa, "%s.after", p);
        if (!s && (f & RD_F_AFTER)) {
            if (!after)
                s = rd_error(c->err, REDIST_ERR_INVALID, c->source, pa,
                             "%s needs \"after\" (its target type)", name);
            else
                s = read_type(c, after, pa, &r->after);
        }
        if (s) {
            free(path);
            return s;
        }
    }
    *out = path;
    *nout = (int)n;
    return REDIST_OK;
}

/* Compare what the document states (after, local_shape, recv_bytes,
 * stats) with the replay. */
static redist_status_t check_claims(rctx *c, json_t *root,
                                    const redist_step_view_t *views, int n,
                                    const redist_verify_result_t *res)
{
    json_t *steps = json_object_get(root, "steps");
    char p[80];
    for (int i = 0; i < n; i++) {
        json_t *st = json_array_get(steps, (size_t)i);
        json_t *after = json_object_get(st, "after");
        uint64_t x;
        int r;
        snprintf(p, sizeof p, "steps[%d]", i);
        if (after) {
            rd_ctype t;
            redist_type_t tt;
            char pa[96], tf[256];
            snprintf(pa, sizeof pa, "%s.after", p);
            redist_status_t s = read_type(c, after, pa, &t);
            if (s)
                return s;
            rd_ctype_to_type(&t, &tt);
            if (!redist_type_equivalent(&tt, &views[i].after, &c->spec->mesh))
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, pa,
                                "the step leads to %s, not to the stated "
                                "type",
                                redist_type_format(&views[i].after,
                                                   &c->spec->mesh, tf,
                                                   sizeof tf));
        }
        if ((r = get_u64(st, "recv_bytes", &x)) != 0 &&
            (r < 0 || x != views[i].recv_bytes))
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "recv_bytes stated wrongly: the step receives "
                            "%llu bytes per device",
                            (unsigned long long)views[i].recv_bytes);
        json_t *ls = json_object_get(st, "local_shape");
        if (ls) {
            int ok = json_is_array(ls) &&
                     (int)json_array_size(ls) == c->spec->ndims;
            for (int d = 0; ok && d < c->spec->ndims; d++)
                ok = json_integer_value(json_array_get(ls, (size_t)d)) ==
                     views[i].local_shape[d];
            if (!ok)
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "local_shape stated wrongly");
        }
    }
    json_t *stats = json_object_get(root, "stats");
    if (json_is_object(stats)) {
        uint64_t x;
        struct {
            const char *key;
            uint64_t val;
        } claims[] = {{"peak_bytes", res->peak_bytes},
                      {"recv_bytes", res->recv_bytes},
                      {"collectives", (uint64_t)res->collectives},
                      {"src_bytes", c->spec->src_bytes},
                      {"dst_bytes", c->spec->dst_bytes}};
        for (size_t k = 0; k < sizeof claims / sizeof claims[0]; k++) {
            int r = get_u64(stats, claims[k].key, &x);
            if (r != 0 && (r < 0 || x != claims[k].val)) {
                snprintf(p, sizeof p, "stats.%s", claims[k].key);
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "stated wrongly: the replay gives %llu",
                                (unsigned long long)claims[k].val);
            }
        }
    }
    return REDIST_OK;
}

redist_status_t redist_plan_verify_buffer(const redist_spec_t *spec,
                                          const char *text, size_t len,
                                          const char *source,
                                          redist_verify_result_t *out,
                                          redist_error_t *err)
{
    rctx c = {source ? source : "<string>", err, spec};
    json_error_t jerr;
    redist_verify_result_t res;
    memset(&res, 0, sizeof res);
    res.failed_step = -1;
    if (!spec || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, c.source, NULL,
                        "NULL argument");
    json_t *root = json_loadb(text ? text : "", len, JSON_REJECT_DUPLICATES,
                              &jerr);
    if (!root)
        return rd_error_at(err, REDIST_ERR_PARSE, c.source, jerr.line,
                           jerr.column, "%s", len ? jerr.text : "empty file");
    rd_step *path = NULL;
    int n = 0;
    redist_status_t st = read_steps(&c, root, &path, &n);
    if (st) {
        json_decref(root);
        return st;
    }
    redist_step_view_t *views = calloc((size_t)(n ? n : 1), sizeof *views);
    if (!views) {
        free(path);
        json_decref(root);
        return rd_error(err, REDIST_ERR_NOMEM, c.source, NULL,
                        "out of memory");
    }
    st = rd_replay(spec, path, n, NULL, views, &res, err);
    rd_error_set_source(err, c.source);
    if (st == REDIST_OK) {
        st = check_claims(&c, root, views, n, &res);
        if (st)
            res.valid = 0;
    }
    free(views);
    free(path);
    json_decref(root);
    if (out)
        *out = res;
    return st;
}

redist_status_t redist_plan_verify_file(const redist_spec_t *spec,
                                        const char *path,
                                        redist_verify_result_t *out,
                                        redist_error_t *err)
{
    if (!path)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return rd_error(err, REDIST_ERR_IO, path, NULL, "cannot open: %s",
                        strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            if (cap >= (256u << 20)) {
                free(buf);
                fclose(f);
                return rd_error(err, REDIST_ERR_LIMIT, path, NULL,
                                "file larger than 256 MiB");
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return rd_error(err, REDIST_ERR_NOMEM, path, NULL, "out of memory");
    if (bad) {
        free(buf);
        return rd_error(err, REDIST_ERR_IO, path, NULL, "read error");
    }
    redist_status_t st = redist_plan_verify_buffer(spec, buf, len, path, out,
                                                   err);
    free(buf);
    return st;
}
