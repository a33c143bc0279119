/*
 * Plan JSON reader (doc/spec-format.md section 4), behind
 * redist_plan_verify_* and `redistplan verify`: the document is parsed,
 * every field read is type-checked, the steps are read into the step
 * table's form and replayed on the spec (rd_replay, plan.c), and what the
 * document states of each step is compared with the replay.  Cost: the
 * parse, O(document), plus one replay; memory: the document and the
 * steps (and, for uneven specs, each step's stated layout).  A plan
 * between two meshes is read by json_meshes.c, with the parts at the end.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* Every field the reader reads is checked for its JSON type first: a field
 * of the wrong type is bad input (REDIST_ERR_INVALID), whatever the rest of
 * the plan.  Only well-typed plans are replayed; what they get wrong
 * (an illegal step, an axis not in the mesh, a stated figure the replay
 * does not give) makes them invalid plans (REDIST_ERR_PLAN). */

typedef struct {
    const char *source;
    redist_error_t *err;
    const redist_spec_t *spec;
    /* the first dim field out of the array's range, kept as written (an
     * int cannot hold it) and reported when the replay reaches its step */
    int bad_step;
    const char *bad_field;
    long long bad_value;
    rd_layout *lays; /* uneven specs: the stated layout of each step */
    int nlays;
} rctx;

static redist_status_t wrong_type(rctx *c, const char *path, const char *want,
                                  json_t *v)
{
    return rd_error(c->err, REDIST_ERR_INVALID, c->source, path,
                    "expected %s, got %s", want, rd_json_kind(v));
}

static int is_string(const json_t *v) { return json_is_string(v); }
static int is_integer(const json_t *v) { return json_is_integer(v); }
static int is_array(const json_t *v) { return json_is_array(v); }

/* v absent, or an array (`want`) of elements that pass `is` (`elem`). */
static redist_status_t check_array(rctx *c, json_t *v, const char *path,
                                   const char *want,
                                   int (*is)(const json_t *),
                                   const char *elem)
{
    char p[REDIST_ERROR_PATH_LENGTH];
    if (v && !json_is_array(v))
        return wrong_type(c, path, want, v);
    for (size_t k = 0; k < json_array_size(v); k++)
        if (!is(json_array_get(v, k))) {
            snprintf(p, sizeof p, "%s[%zu]", path, k);
            return wrong_type(c, p, elem, json_array_get(v, k));
        }
    return REDIST_OK;
}

static redist_status_t read_int_field(rctx *c, json_t *st, const char *key,
                                      const char *path, int step, int *out)
{
    char p[96];
    json_t *v = json_object_get(st, key);
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!v)
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                        "missing field \"%s\"", key);
    if (!json_is_integer(v))
        return wrong_type(c, p, "an integer", v);
    json_int_t x = json_integer_value(v);
    if (x >= 0 && x < c->spec->ndims) {
        *out = (int)x;
    } else {
        *out = -1;
        if (c->bad_step < 0) {
            c->bad_step = step;
            c->bad_field = key;
            c->bad_value = (long long)x;
        }
    }
    return REDIST_OK;
}

static redist_status_t read_axis_name(rctx *c, json_t *v, const char *path,
                                      int *axis)
{
    if (!json_is_string(v))
        return wrong_type(c, path, "an axis name (a string)", v);
    const char *nm = json_string_value(v);
    *axis = redist_mesh_find_axis(&c->spec->mesh, nm);
    if (*axis < 0)
        return rd_error(c->err, REDIST_ERR_PLAN, c->source, path,
                        "axis \"%.60s\" is not in the mesh", nm);
    return REDIST_OK;
}

static redist_status_t read_type(rctx *c, json_t *v, const char *path,
                                 rd_ctype *out)
{
    const redist_mesh_t *m = &c->spec->mesh;
    redist_type_t t;
    redist_status_t st;
    char p[REDIST_ERROR_PATH_LENGTH];
    if (!json_is_object(v))
        return wrong_type(c, path,
                          "a type {\"dims\": [...], \"partial\": [...]}", v);
    json_t *dims = json_object_get(v, "dims");
    json_t *part = json_object_get(v, "partial");
    snprintf(p, sizeof p, "%s.dims", path);
    if (!dims)
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                        "missing field \"dims\"");
    if ((st = check_array(c, dims, p, "an array of axis lists", is_array,
                          "an array of axis names")))
        return st;
    for (size_t i = 0; i < json_array_size(dims); i++) {
        snprintf(p, sizeof p, "%s.dims[%zu]", path, i);
        if ((st = check_array(c, json_array_get(dims, i), p, "", is_string,
                              "an axis name (a string)")))
            return st;
    }
    snprintf(p, sizeof p, "%s.partial", path);
    if ((st = check_array(c, part, p, "an array of axis names", is_string,
                          "an axis name (a string)")))
        return st;
    if ((int)json_array_size(dims) != c->spec->ndims)
        return rd_error(c->err, REDIST_ERR_PLAN, c->source, path,
                        "rank mismatch: %zu dims, the array has %d",
                        json_array_size(dims), c->spec->ndims);
    redist_type_init(&t, c->spec->ndims);
    uint32_t used = 0;
    for (int i = 0; i < t.ndims; i++) {
        json_t *d = json_array_get(dims, (size_t)i);
        for (size_t k = 0; k < json_array_size(d); k++) {
            int a;
            snprintf(p, sizeof p, "%s.dims[%d][%zu]", path, i, k);
            if ((st = read_axis_name(c, json_array_get(d, k), p, &a)))
                return st;
            if (used >> a & 1u)
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "axis \"%s\" is used twice", m->name[a]);
            used |= 1u << a;
            redist_type_push_axis(&t, i, a);
        }
    }
    for (size_t k = 0; k < json_array_size(part); k++) {
        int a;
        snprintf(p, sizeof p, "%s.partial[%zu]", path, k);
        if ((st = read_axis_name(c, json_array_get(part, k), p, &a)))
            return st;
        if (used >> a & 1u)
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "axis \"%s\" is used twice", m->name[a]);
        used |= 1u << a;
        t.partial |= 1u << a;
    }
    rd_ctype_from_type(out, &t);
    return REDIST_OK;
}

/* The layout an uneven plan states in a step's `after` ("split",
 * "blocks"; absent: ceil) for its stated type t. */
static redist_status_t read_layout(rctx *c, json_t *v, const char *path,
                                   const rd_ctype *ct, rd_layout *out)
{
    const redist_spec_t *s = c->spec;
    redist_type_t t;
    redist_split_t rule = REDIST_SPLIT_CEIL;
    const int64_t *blocks[REDIST_MAX_DIMS] = {NULL};
    int64_t *store[REDIST_MAX_DIMS] = {NULL};
    char p[REDIST_ERROR_PATH_LENGTH];
    redist_status_t st = REDIST_OK;
    json_t *sp = json_object_get(v, "split"), *bl = json_object_get(v, "blocks");
    rd_ctype_to_type(ct, &t);
    snprintf(p, sizeof p, "%s.split", path);
    if (sp && !json_is_string(sp))
        return wrong_type(c, p, "a rule name (a string)", sp);
    if (sp && redist_split_from_name(json_string_value(sp), &rule))
        return rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                        "unknown split rule \"%.40s\" (rules: ceil, "
                        "balanced, chunk)",
                        json_string_value(sp));
    snprintf(p, sizeof p, "%s.blocks", path);
    if (bl && !json_is_null(bl) && !json_is_array(bl))
        return wrong_type(c, p, "an array (null or block lengths per dim)",
                          bl);
    if (bl && !json_is_null(bl) && (int)json_array_size(bl) != s->ndims)
        return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                        "rank mismatch: %zu entries, the array has %d",
                        json_array_size(bl), s->ndims);
    for (int i = 0; bl && i < s->ndims && !st; i++) {
        json_t *d = json_array_get(bl, (size_t)i);
        char pi[REDIST_ERROR_PATH_LENGTH + 24];
        snprintf(pi, sizeof pi, "%s[%d]", p, i);
        if (json_is_null(d))
            continue;
        if ((st = check_array(c, d, pi, "null or an array of block lengths",
                              is_integer, "a block length (an integer)")))
            break;
        int64_t k = 1, n = (int64_t)json_array_size(d);
        for (int q = 0; q < t.dim_naxes[i]; q++)
            k *= s->mesh.size[t.dims[i][q]];
        if (!(store[i] = malloc((size_t)(n ? n : 1) * sizeof *store[i]))) {
            st = rd_error(c->err, REDIST_ERR_NOMEM, c->source, NULL,
                          "out of memory");
            break;
        }
        for (int64_t j = 0; j < n; j++)
            store[i][j] = (int64_t)json_integer_value(json_array_get(d, (size_t)j));
        blocks[i] = store[i];
        if (rd_layout_check_blocks(store[i], n, k, s->shape[i], i, c->source,
                                   pi, c->err)) {
            if (c->err)
                c->err->status = REDIST_ERR_PLAN; /* a wrong plan */
            st = REDIST_ERR_PLAN;
        }
    }
    if (!st) {
        int r = rd_layout_rule(out, &t, &s->mesh, s->ndims, s->shape, rule,
                               blocks);
        if (r)
            st = rd_error(c->err, r == -2 ? REDIST_ERR_LIMIT : REDIST_ERR_NOMEM,
                          c->source, path, "cannot build the stated layout");
    }
    for (int i = 0; i < REDIST_MAX_DIMS; i++)
        free(store[i]);
    return st;
}

/* A stated byte count or count: absent (0), an integer >= 0 (1), else a
 * bad-input error. */
static redist_status_t read_count(rctx *c, json_t *o, const char *key,
                                  const char *path, int *has, uint64_t *out)
{
    char p[96];
    json_t *v = json_object_get(o, key);
    *has = v != NULL;
    if (!v)
        return REDIST_OK;
    snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return json_is_integer(v)
                   ? rd_error(c->err, REDIST_ERR_INVALID, c->source, p,
                              "expected a count (an integer >= 0), got %lld",
                              (long long)json_integer_value(v))
                   : wrong_type(c, p, "a count (an integer >= 0)", v);
    *out = (uint64_t)json_integer_value(v);
    return REDIST_OK;
}

/* The type of every field a step states besides its arguments. */
static redist_status_t check_claim_types(rctx *c, json_t *st, const char *p)
{
    char pa[REDIST_ERROR_PATH_LENGTH];
    int has;
    uint64_t x;
    redist_status_t s;
    if ((s = read_count(c, st, "recv_bytes", p, &has, &x)) ||
        (s = read_count(c, st, "local_bytes", p, &has, &x)))
        return s;
    snprintf(pa, sizeof pa, "%s.local_shape", p);
    return check_array(c, json_object_get(st, "local_shape"), pa,
                       "an array of integers", is_integer, "an integer");
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
    json_t *stats = json_object_get(root, "stats");
    if (stats && !json_is_object(stats))
        return wrong_type(c, "stats", "an object", stats);
    size_t n = json_array_size(steps);
    if (n > 100000)
        return rd_error(c->err, REDIST_ERR_LIMIT, c->source, "steps",
                        "%zu steps; at most 100000", n);
    rd_step *path = calloc(n ? n : 1, sizeof *path);
    c->lays = calloc(n ? n : 1, sizeof *c->lays);
    c->nlays = (int)n;
    if (!path || !c->lays) {
        free(path);
        return rd_error(c->err, REDIST_ERR_NOMEM, c->source, NULL,
                        "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_array_get(steps, i);
        char p[64], pa[80];
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
        s = check_claim_types(c, st, p);
        if (!s && (f & RD_F_DIM))
            s = read_int_field(c, st, "dim", p, (int)i, &r->dim);
        if (!s && (f & RD_F_FROM_DIM))
            s = read_int_field(c, st, "from_dim", p, (int)i, &r->from_dim);
        if (!s && (f & RD_F_TO_DIM))
            s = read_int_field(c, st, "to_dim", p, (int)i, &r->to_dim);
        if (!s && (f & RD_F_AXIS)) {
            json_t *a = json_object_get(st, "axis");
            snprintf(pa, sizeof pa, "%s.axis", p);
            s = a ? read_axis_name(c, a, pa, &r->axis)
                  : rd_error(c->err, REDIST_ERR_INVALID, c->source, pa,
                             "missing field \"axis\"");
        }
        json_t *after = json_object_get(st, "after");
        snprintf(pa, sizeof pa, "%s.after", p);
        if (!s && (f & RD_F_AFTER) && !after)
            s = rd_error(c->err, REDIST_ERR_INVALID, c->source, pa,
                         "%s needs \"after\" (its target type)", name);
        if (!s && after) {
            rd_ctype t;
            s = read_type(c, after, pa, &t);
            if (f & RD_F_AFTER)
                r->after = t;
            if (!s && c->spec->uneven) {
                s = read_layout(c, after, pa, &t, &c->lays[i]);
                if (!s)
                    r->lay = &c->lays[i];
            }
        }
        if (s) {
            free(path);
            return s;
        }
    }
    for (const char *const *k = (const char *const[]){
             "peak_bytes", "recv_bytes", "collectives", "src_bytes",
             "dst_bytes", NULL};
         *k; k++) {
        int has;
        uint64_t x;
        redist_status_t s = read_count(c, stats, *k, "stats", &has, &x);
        if (s) {
            free(path);
            return s;
        }
    }
    json_t *me = json_object_get(stats, "memory_efficient");
    if (me && !json_is_boolean(me)) {
        free(path);
        return wrong_type(c, "stats.memory_efficient", "true or false", me);
    }
    *out = path;
    *nout = (int)n;
    return REDIST_OK;
}

/* What the document's stats state (their types are checked) against the
 * replay's figures: peak, recv and collectives of res, the spec's source
 * and target bytes, memory efficiency. */
static redist_status_t check_stats(rctx *c, json_t *stats,
                                   const redist_verify_result_t *res)
{
    char p[80];
    if (!json_is_object(stats))
        return REDIST_OK;
    uint64_t x;
    int has;
    struct {
        const char *key;
        uint64_t val;
    } claims[] = {{"peak_bytes", res->peak_bytes},
                  {"recv_bytes", res->recv_bytes},
                  {"collectives", (uint64_t)res->collectives},
                  {"src_bytes", c->spec->src_bytes},
                  {"dst_bytes", c->spec->dst_bytes}};
    for (size_t k = 0; k < sizeof claims / sizeof claims[0]; k++) {
        redist_status_t st = read_count(c, stats, claims[k].key, "stats",
                                        &has, &x);
        if (st)
            return st;
        if (has && x != claims[k].val) {
            snprintf(p, sizeof p, "stats.%s", claims[k].key);
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "stated wrongly: the replay gives %llu",
                            (unsigned long long)claims[k].val);
        }
    }
    json_t *me = json_object_get(stats, "memory_efficient");
    if (me && json_is_true(me) != (res->memory_efficient != 0))
        return rd_error(c->err, REDIST_ERR_PLAN, c->source,
                        "stats.memory_efficient",
                        "stated wrongly: the replay gives %s",
                        res->memory_efficient ? "true" : "false");
    return REDIST_OK;
}

/* Compare what the document states (after, local_shape, recv_bytes,
 * local_bytes, stats; their types are checked) with the replay. */
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
        int has;
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
        if (!read_count(c, st, "recv_bytes", p, &has, &x) && has &&
            x != views[i].recv_bytes)
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "recv_bytes stated wrongly: the step receives "
                            "%llu bytes per device",
                            (unsigned long long)views[i].recv_bytes);
        if (!read_count(c, st, "local_bytes", p, &has, &x) && has &&
            x != views[i].local_bytes)
            return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                            "local_bytes stated wrongly: each device holds "
                            "%llu bytes after the step",
                            (unsigned long long)views[i].local_bytes);
        json_t *ls = json_object_get(st, "local_shape");
        if (ls) {
            int ok = (int)json_array_size(ls) == c->spec->ndims;
            for (int d = 0; ok && d < c->spec->ndims; d++)
                ok = json_integer_value(json_array_get(ls, (size_t)d)) ==
                     views[i].local_shape[d];
            if (!ok)
                return rd_error(c->err, REDIST_ERR_PLAN, c->source, p,
                                "local_shape stated wrongly");
        }
    }
    return check_stats(c, json_object_get(root, "stats"), res);
}

/* Replay the steps before the first one with a dim out of range, then
 * report that one as the replay would, with the value as written. */
static redist_status_t replay_to_bad_dim(rctx *c, const rd_step *path,
                                         int n, redist_step_view_t *views,
                                         redist_verify_result_t *res)
{
    redist_error_t e;
    redist_error_clear(&e);
    redist_status_t st = rd_replay(c->spec, path, c->bad_step, NULL, views,
                                   res, NULL, &e);
    /* a step before it fails: that is the first error; the end of the
     * prefix is not the target, and its totals do not matter */
    if (st && res->failed_step >= 0 && res->failed_step < c->bad_step) {
        if (c->err && c->err->status == REDIST_OK)
            *c->err = e;
        return st;
    }
    redist_type_t t;
    char tf[256], p[32];
    if (c->bad_step > 0)
        t = views[c->bad_step - 1].after;
    else
        t = c->spec->from;
    res->valid = 0;
    res->failed_step = c->bad_step;
    res->steps = n;
    snprintf(p, sizeof p, "steps[%d]", c->bad_step);
    return rd_error(c->err, REDIST_ERR_PLAN, NULL, p,
                    "illegal %s from %s: %s %lld is not a dim of the array "
                    "(0..%d)",
                    rd_step_kinds[path[c->bad_step].op].name,
                    redist_type_format(&t, &c->spec->mesh, tf, sizeof tf),
                    c->bad_field, c->bad_value, c->spec->ndims - 1);
}

static void lays_free(rctx *c)
{
    for (int i = 0; c->lays && i < c->nlays; i++)
        rd_layout_free(&c->lays[i]);
    free(c->lays);
    c->lays = NULL;
}

redist_status_t redist_plan_verify_buffer(const redist_spec_t *spec,
                                          const char *text, size_t len,
                                          const char *source,
                                          redist_verify_result_t *out,
                                          redist_error_t *err)
{
    return redist_plan_verify_buffer_cost(spec, text, len, source, NULL, out,
                                          err);
}

/* Read and replay the plan document `root` on `spec` (one mesh): *res is
 * filled; up (may be NULL) gets the per-device figures of an uneven
 * spec. */
redist_status_t rd_json_verify_root(const redist_spec_t *spec, json_t *root,
                                    const char *source,
                                    const redist_cost_model_t *cost,
                                    redist_verify_result_t *res, rd_uplan *up,
                                    redist_error_t *err)
{
    rctx c = {source, err, spec, -1, NULL, 0, NULL, 0};
    rd_step *path = NULL;
    int n = 0;
    redist_status_t st = read_steps(&c, root, &path, &n);
    if (st) {
        lays_free(&c);
        return st;
    }
    redist_step_view_t *views = calloc((size_t)(n ? n : 1), sizeof *views);
    if (!views) {
        free(path);
        lays_free(&c);
        return rd_error(err, REDIST_ERR_NOMEM, c.source, NULL,
                        "out of memory");
    }
    if (c.bad_step >= 0)
        st = replay_to_bad_dim(&c, path, n, views, res);
    else
        st = rd_replay(spec, path, n, cost, views, res, up, err);
    rd_error_set_source(err, c.source);
    if (st == REDIST_OK) {
        st = check_claims(&c, root, views, n, res);
        if (st)
            res->valid = 0;
        json_t *stats = json_object_get(root, "stats");
        res->stated_unproven =
            json_is_false(json_object_get(stats, "optimal")) ? 1 : 0;
    }
    free(views);
    free(path);
    lays_free(&c);
    return st;
}

redist_status_t redist_plan_verify_buffer_cost(
    const redist_spec_t *spec, const char *text, size_t len,
    const char *source, const redist_cost_model_t *cost,
    redist_verify_result_t *out, redist_error_t *err)
{
    redist_verify_result_t res;
    memset(&res, 0, sizeof res);
    res.failed_step = -1;
    if (!source)
        source = "<string>";
    if (!spec || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, source, NULL,
                        "NULL argument");
    json_t *root;
    redist_status_t st;
    if (cost && (st = redist_cost_model_validate(cost, &spec->mesh, err)))
        return st;
    st = rd_json_parse(text, len, source, &root, err);
    if (st)
        return st;
    if (spec->two)
        st = rd_meshes_verify_doc(spec, root, source, cost, &res, err);
    else
        st = rd_json_verify_root(spec, root, source, cost, &res, NULL, err);
    json_decref(root);
    if (out)
        *out = res;
    return st;
}

/* For the two-mesh reader (json_meshes.c), without a reader context. */

redist_status_t rd_json_read_type(const redist_spec_t *spec, json_t *v,
                                  const char *source, const char *path,
                                  redist_type_t *t, redist_error_t *err)
{
    rctx c = {source, err, spec, -1, NULL, 0, NULL, 0};
    rd_ctype ct;
    redist_status_t st = read_type(&c, v, path, &ct);
    if (!st)
        rd_ctype_to_type(&ct, t);
    return st;
}

redist_status_t rd_json_read_count(const redist_spec_t *spec,
                                   const char *source, json_t *o,
                                   const char *key, const char *path,
                                   int *has, uint64_t *out,
                                   redist_error_t *err)
{
    rctx c = {source, err, spec, -1, NULL, 0, NULL, 0};
    return read_count(&c, o, key, path, has, out);
}

redist_status_t rd_json_check_stats(const redist_spec_t *spec,
                                    const char *source, json_t *stats,
                                    const redist_verify_result_t *res,
                                    redist_error_t *err)
{
    rctx c = {source, err, spec, -1, NULL, 0, NULL, 0};
    return check_stats(&c, stats, res);
}

/* Plans are larger than specs: one step per line of the table, each with
 * its type; 100000 steps fit. */
#define RD_MAX_PLAN_BYTES (256u << 20)

redist_status_t redist_plan_verify_file(const redist_spec_t *spec,
                                        const char *path,
                                        redist_verify_result_t *out,
                                        redist_error_t *err)
{
    return redist_plan_verify_file_cost(spec, path, NULL, out, err);
}

redist_status_t redist_plan_verify_file_cost(const redist_spec_t *spec,
                                             const char *path,
                                             const redist_cost_model_t *cost,
                                             redist_verify_result_t *out,
                                             redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_status_t st =
        rd_read_file(path, RD_MAX_PLAN_BYTES, "a plan", &buf, &len, err);
    if (st)
        return st;
    st = redist_plan_verify_buffer_cost(spec, buf, len, path, cost, out, err);
    free(buf);
    return st;
}
