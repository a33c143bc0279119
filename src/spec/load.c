/*
 * Spec files (doc/spec-format.md section 3) read with jansson, and the inline
 * command-line form.  Every error names the source and a place: line and
 * column for JSON syntax (jansson's json_error_t), a JSON path for meaning.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* Spec files are small; anything larger is a mistake, not a spec. */
#define RD_MAX_SPEC_BYTES (16u << 20)

typedef struct {
    const char *source;
    redist_error_t *err;
    int meshes; /* the spec has "meshes" (types may name theirs) */
} ctx_t;

#define FAIL(c, st, path, ...) rd_error((c)->err, st, (c)->source, path, __VA_ARGS__)

const char *rd_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

redist_status_t rd_json_check_keys(json_t *obj, const char *where, int width,
                                   const char *const allowed[],
                                   const char *source, redist_error_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (int i = 0; allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0)
                ok = 1;
        if (!ok) {
            char list[256];
            size_t pos = 0;
            list[0] = '\0';
            for (int i = 0; allowed[i]; i++)
                rd_appendf(list, sizeof list, &pos, "%s%s", i ? ", " : "",
                           allowed[i]);
            char path[REDIST_ERROR_PATH_LENGTH];
            snprintf(path, sizeof path, "%s%s%.*s", where, where[0] ? "." : "",
                     width, key);
            return rd_error(err, REDIST_ERR_INVALID, source, path,
                            "unknown key \"%.*s\" (allowed: %s)", width, key,
                            list);
        }
    }
    return REDIST_OK;
}

/* Reject keys not in `allowed` (NULL-terminated). */
static redist_status_t check_keys(ctx_t *c, json_t *obj, const char *where,
                                  const char *const allowed[])
{
    return rd_json_check_keys(obj, where, 80, allowed, c->source, c->err);
}

static redist_status_t get_int(ctx_t *c, json_t *v, const char *path,
                               int64_t min, int64_t *out)
{
    if (!json_is_integer(v))
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "expected an integer, got %s", rd_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < min)
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "%lld is out of range (must be >= %lld)", (long long)x,
                    (long long)min);
    *out = (int64_t)x;
    return REDIST_OK;
}

static redist_status_t parse_mesh(ctx_t *c, json_t *mesh, const char *where,
                                  redist_mesh_t *out)
{
    if (!json_is_array(mesh))
        return FAIL(c, REDIST_ERR_INVALID, where,
                    "expected an array of [name, size] pairs, got %s",
                    rd_json_kind(mesh));
    size_t n = json_array_size(mesh);
    if (n == 0 || n > REDIST_MAX_AXES)
        return FAIL(c, REDIST_ERR_INVALID, where,
                    "a mesh has 1 to %d axes, not %zu", REDIST_MAX_AXES, n);
    const char *names[REDIST_MAX_AXES];
    int64_t sizes[REDIST_MAX_AXES];
    char path[REDIST_MAX_NAME + 64];
    for (size_t a = 0; a < n; a++) {
        json_t *e = json_array_get(mesh, a);
        snprintf(path, sizeof path, "%s[%zu]", where, a);
        if (!json_is_array(e) || json_array_size(e) != 2 ||
            !json_is_string(json_array_get(e, 0)))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected a pair [name, size], got %s%s",
                        rd_json_kind(e),
                        json_is_array(e) ? " of the wrong form" : "");
        names[a] = json_string_value(json_array_get(e, 0));
        if (strlen(names[a]) != json_string_length(json_array_get(e, 0)))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "axis name contains a NUL character");
        char why[160];
        if (rd_axis_name_problem(names[a], why, sizeof why))
            return FAIL(c, REDIST_ERR_INVALID, path, "%s", why);
        snprintf(path, sizeof path, "%s[%zu][1]", where, a);
        json_t *sz = json_array_get(e, 1);
        if (!json_is_integer(sz))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "axis size must be an integer, got %s", rd_json_kind(sz));
        sizes[a] = (int64_t)json_integer_value(sz);
        if (sizes[a] < 1)
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "axis \"%s\" has size %lld; sizes must be positive integers",
                        names[a], (long long)sizes[a]);
    }
    redist_mesh_t *m = NULL;
    redist_status_t st = redist_mesh_create((int)n, names, sizes, &m, c->err);
    if (st) {
        rd_error_set_source(c->err, c->source);
        return st;
    }
    *out = *m;
    redist_mesh_free(m);
    return REDIST_OK;
}

/* "meshes": {"name": {"axes": [...], "devices": [...]}, ...} (doc/spec-format.md
 * section 8): one or two placed meshes.  Which one each type lives on is
 * its "mesh" key (required with two; with one, both types live on it).
 * Fills s->two (the source's first), or, when both types live on one
 * mesh over devices 0..n-1, only s->mesh: the version-1 spec exactly. */
static redist_status_t parse_meshes(ctx_t *c, json_t *root, redist_spec_t *s)
{
    static const char *const keys[] = {"axes", "devices", NULL};
    static const char *const side_name[2] = {"from", "to"};
    json_t *ms = json_object_get(root, "meshes");
    char path[REDIST_MAX_NAME + 64], why[200];
    redist_status_t st;
    if (!json_is_object(ms))
        return FAIL(c, REDIST_ERR_INVALID, "meshes",
                    "expected an object {\"name\": {\"axes\": [...], "
                    "\"devices\": [...]}, ...}, got %s",
                    rd_json_kind(ms));
    size_t count = json_object_size(ms);
    if (count < 1 || count > 2)
        return FAIL(c, REDIST_ERR_INVALID, "meshes",
                    "a spec has one or two meshes, not %zu", count);
    const char *pick[2] = {NULL, NULL};
    for (int side = 0; side < 2; side++) {
        json_t *t = json_object_get(root, side_name[side]);
        json_t *mn = json_is_object(t) ? json_object_get(t, "mesh") : NULL;
        snprintf(path, sizeof path, "%s.mesh", side_name[side]);
        if (!mn) {
            if (count == 2)
                return FAIL(c, REDIST_ERR_INVALID, path,
                            "missing key \"mesh\": with two meshes each "
                            "type names the one it lives on");
            pick[side] = json_object_iter_key(json_object_iter(ms));
            continue;
        }
        if (!json_is_string(mn))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected a mesh name, got %s", rd_json_kind(mn));
        pick[side] = json_string_value(mn);
        if (!json_object_get(ms, pick[side])) {
            char list[2 * (REDIST_MAX_NAME + 3)] = "";
            size_t pos = 0;
            const char *k;
            json_t *unused;
            json_object_foreach(ms, k, unused)
                rd_appendf(list, sizeof list, &pos, "%s%.*s", pos ? ", " : "",
                           REDIST_MAX_NAME, k);
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "mesh \"%.80s\" is not in \"meshes\" (meshes: %s)",
                        pick[side], list);
        }
    }
    rd_meshes *m = calloc(1, sizeof *m);
    if (!m)
        return FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
    s->two = m;
    for (int side = 0; side < 2; side++) {
        json_t *e = json_object_get(ms, pick[side]);
        snprintf(path, sizeof path, "meshes.%.*s", REDIST_MAX_NAME + 8,
                 pick[side]);
        if (rd_mesh_name_problem(pick[side], why, sizeof why))
            return FAIL(c, REDIST_ERR_INVALID, path, "%s", why);
        snprintf(m->name[side], sizeof m->name[side], "%s", pick[side]);
        if (!json_is_object(e))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected an object {\"axes\": [...], \"devices\": "
                        "[...]}, got %s",
                        rd_json_kind(e));
        if ((st = check_keys(c, e, path, keys)))
            return st;
        json_t *axes = json_object_get(e, "axes");
        char p2[sizeof path + 16];
        snprintf(p2, sizeof p2, "%s.axes", path);
        if (!axes)
            return FAIL(c, REDIST_ERR_INVALID, p2, "missing key \"axes\"");
        if ((st = parse_mesh(c, axes, p2, &m->mesh[side])))
            return st;
        int64_t n = m->mesh[side].ndevices;
        if (n > RD_MESHES_MAX_DEVICES)
            return FAIL(c, REDIST_ERR_LIMIT, path,
                        "%lld devices; a mesh of a two-mesh spec has at "
                        "most %lld (its device list is stored)",
                        (long long)n, (long long)RD_MESHES_MAX_DEVICES);
        json_t *dv = json_object_get(e, "devices");
        snprintf(p2, sizeof p2, "%s.devices", path);
        if (dv && !json_is_array(dv))
            return FAIL(c, REDIST_ERR_INVALID, p2,
                        "expected an array of device ids, got %s",
                        rd_json_kind(dv));
        if (dv && (int64_t)json_array_size(dv) != n)
            return FAIL(c, REDIST_ERR_INVALID, p2,
                        "%zu devices listed; the mesh has %lld",
                        json_array_size(dv), (long long)n);
        if (!(m->dev[side] = malloc((size_t)n * sizeof *m->dev[side])))
            return FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
        for (int64_t r = 0; r < n; r++) {
            char p3[sizeof p2 + 24];
            snprintf(p3, sizeof p3, "%s[%lld]", p2, (long long)r);
            m->dev[side][r] = r;
            if (dv && (st = get_int(c, json_array_get(dv, (size_t)r), p3, 0,
                                    &m->dev[side][r])))
                return st;
        }
    }
    s->mesh = m->mesh[0];
    if (!strcmp(m->name[0], m->name[1])) {
        /* One mesh: the version-1 spec when it holds devices 0..n-1. */
        int identity = 1;
        for (int64_t r = 0; r < m->mesh[0].ndevices; r++)
            identity &= m->dev[0][r] == r;
        if (identity) {
            rd_meshes_free(m);
            s->two = NULL;
        }
    }
    return REDIST_OK;
}

static redist_status_t parse_axis_name(ctx_t *c, const redist_mesh_t *mesh,
                                       json_t *v, const char *path, int *axis)
{
    if (!json_is_string(v))
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "expected an axis name, got %s", rd_json_kind(v));
    const char *nm = json_string_value(v);
    int a = redist_mesh_find_axis(mesh, nm);
    if (a < 0) {
        char list[256];
        rd_spec_axis_list(mesh, list, sizeof list);
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "axis \"%.80s\" is not in the mesh (axes: %s)", nm, list);
    }
    *axis = a;
    return REDIST_OK;
}

/* A type: {"dims": [[...], ...], "partial": [...]}.  A dim may also be
 * written as a single axis name or null (no axes). */
/* The optional layout keys of a type (doc/spec-format.md section 7): "split" (a
 * rule name) and "blocks" (per dim null or a list of lengths).  Counts and
 * sums are checked by rd_spec_finish, which knows the block counts. */
static redist_status_t parse_layout(ctx_t *c, json_t *v, const char *what,
                                    int side, redist_spec_t *s)
{
    char path[REDIST_ERROR_PATH_LENGTH];
    redist_split_t split = REDIST_SPLIT_CEIL;
    const int64_t *blocks[REDIST_MAX_DIMS] = {NULL};
    int64_t counts[REDIST_MAX_DIMS] = {0};
    int64_t *store[REDIST_MAX_DIMS] = {NULL};
    redist_status_t st = REDIST_OK;
    json_t *sp = json_object_get(v, "split"), *bl = json_object_get(v, "blocks");
    if (sp) {
        snprintf(path, sizeof path, "%s.split", what);
        if (!json_is_string(sp))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected a rule name, got %s", rd_json_kind(sp));
        if (redist_split_from_name(json_string_value(sp), &split))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "unknown split rule \"%.40s\" (rules: ceil, "
                        "balanced, chunk)",
                        json_string_value(sp));
    }
    if (bl && !json_is_null(bl)) {
        snprintf(path, sizeof path, "%s.blocks", what);
        if (!json_is_array(bl))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected an array with one entry (null or a list of "
                        "block lengths) per array dim, got %s",
                        rd_json_kind(bl));
        if ((int)json_array_size(bl) != s->ndims)
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "rank mismatch: %zu entries given, the shape has %d",
                        json_array_size(bl), s->ndims);
        for (int i = 0; i < s->ndims && !st; i++) {
            json_t *d = json_array_get(bl, (size_t)i);
            snprintf(path, sizeof path, "%s.blocks[%d]", what, i);
            if (json_is_null(d))
                continue;
            if (!json_is_array(d)) {
                st = FAIL(c, REDIST_ERR_INVALID, path,
                          "expected null or an array of block lengths, got %s",
                          rd_json_kind(d));
                break;
            }
            size_t n = json_array_size(d);
            store[i] = malloc((n ? n : 1) * sizeof *store[i]);
            if (!store[i]) {
                st = FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
                break;
            }
            for (size_t j = 0; j < n && !st; j++) {
                char p2[REDIST_ERROR_PATH_LENGTH + 24];
                snprintf(p2, sizeof p2, "%s[%zu]", path, j);
                st = get_int(c, json_array_get(d, j), p2, 0, &store[i][j]);
            }
            blocks[i] = store[i];
            counts[i] = (int64_t)n;
        }
    }
    if (!st && (st = rd_spec_set_layout(s, side, split, blocks, counts)))
        FAIL(c, st, NULL, "out of memory");
    for (int i = 0; i < REDIST_MAX_DIMS; i++)
        free(store[i]);
    return st;
}

static redist_status_t parse_type(ctx_t *c, const redist_mesh_t *mesh,
                                  json_t *v, const char *what, int ndims,
                                  redist_type_t *t)
{
    /* "mesh" only in a spec with "meshes" (parse_meshes reads it) */
    static const char *const keys1[] = {"dims", "partial", "split", "blocks",
                                        NULL};
    static const char *const keys2[] = {"dims",   "partial", "split",
                                        "blocks", "mesh",    NULL};
    const char *const *keys = c->meshes ? keys2 : keys1;
    char path[REDIST_ERROR_PATH_LENGTH];
    int where[REDIST_MAX_AXES]; /* -2 unused, -1 partial, else dim */
    redist_status_t st;
    if (!json_is_object(v))
        return FAIL(c, REDIST_ERR_INVALID, what,
                    "expected an object {\"dims\": [...], \"partial\": [...]}"
                    ", got %s",
                    rd_json_kind(v));
    if ((st = check_keys(c, v, what, keys)))
        return st;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        where[a] = -2;
    redist_type_init(t, ndims);
    json_t *part = json_object_get(v, "partial");
    if (part && !json_is_null(part)) {
        snprintf(path, sizeof path, "%s.partial", what);
        if (!json_is_array(part))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected an array of axis names, got %s",
                        rd_json_kind(part));
        for (size_t k = 0; k < json_array_size(part); k++) {
            int a = -1;
            snprintf(path, sizeof path, "%s.partial[%zu]", what, k);
            if ((st = parse_axis_name(c, mesh, json_array_get(part, k), path,
                                      &a)))
                return st;
            if (where[a] != -2)
                return FAIL(c, REDIST_ERR_INVALID, path,
                            "axis \"%s\" is listed twice in partial",
                            mesh->name[a]);
            where[a] = -1;
            t->partial |= 1u << a;
        }
    }
    json_t *dims = json_object_get(v, "dims");
    snprintf(path, sizeof path, "%s.dims", what);
    if (!dims)
        return FAIL(c, REDIST_ERR_INVALID, path, "missing key \"dims\"");
    if (!json_is_array(dims))
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "expected an array with one axis list per array dim, got "
                    "%s",
                    rd_json_kind(dims));
    if ((int)json_array_size(dims) != ndims)
        return FAIL(c, REDIST_ERR_INVALID, path,
                    "rank mismatch: %zu dims given, the shape has %d",
                    json_array_size(dims), ndims);
    for (int i = 0; i < ndims; i++) {
        json_t *d = json_array_get(dims, (size_t)i);
        json_t *one = NULL;
        size_t n;
        snprintf(path, sizeof path, "%s.dims[%d]", what, i);
        if (json_is_null(d))
            n = 0;
        else if (json_is_string(d)) {
            one = d;
            n = 1;
        } else if (json_is_array(d))
            n = json_array_size(d);
        else
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected an array of axis names, got %s",
                        rd_json_kind(d));
        for (size_t k = 0; k < n; k++) {
            int a = -1;
            char p2[REDIST_ERROR_PATH_LENGTH + 24];
            if (one)
                snprintf(p2, sizeof p2, "%s", path);
            else
                snprintf(p2, sizeof p2, "%s[%zu]", path, k);
            if ((st = parse_axis_name(c, mesh, one ? one : json_array_get(d, k),
                                      p2, &a)))
                return st;
            if (where[a] == -1)
                return FAIL(c, REDIST_ERR_INVALID, p2,
                            "axis \"%s\" is used twice (it is also partial)",
                            mesh->name[a]);
            if (where[a] >= 0)
                return FAIL(c, REDIST_ERR_INVALID, p2,
                            "axis \"%s\" is used twice (also in dim %d)",
                            mesh->name[a], where[a]);
            where[a] = i;
            redist_type_push_axis(t, i, a);
        }
    }
    return REDIST_OK;
}

static redist_status_t parse_expect(ctx_t *c, json_t *v, redist_spec_t *s)
{
    static const char *const keys[] = {"max_collectives", "max_recv_bytes",
                                       "max_peak_bytes",  "ops",
                                       "infeasible",      NULL};
    /* The step table's op names (src/plan/steps.c; the spec layer comes
     * before the plan layer, so it keeps their list here). */
    static const char *const opnames[] = {
        "slice",      "all_gather", "all_to_all", "reduce_scatter",
        "all_reduce", "permute",    "exchange",   "transfer",
        NULL};
    redist_status_t st;
    int64_t x = 0;
    if (!json_is_object(v))
        return FAIL(c, REDIST_ERR_INVALID, "expect",
                    "expected an object, got %s", rd_json_kind(v));
    if ((st = check_keys(c, v, "expect", keys)))
        return st;
    json_t *e;
    if ((e = json_object_get(v, "max_collectives"))) {
        if ((st = get_int(c, e, "expect.max_collectives", 0, &x)))
            return st;
        s->expect.has_max_collectives = 1;
        s->expect.max_collectives = x;
    }
    if ((e = json_object_get(v, "max_recv_bytes"))) {
        if ((st = get_int(c, e, "expect.max_recv_bytes", 0, &x)))
            return st;
        s->expect.has_max_recv_bytes = 1;
        s->expect.max_recv_bytes = (uint64_t)x;
    }
    if ((e = json_object_get(v, "max_peak_bytes"))) {
        if ((st = get_int(c, e, "expect.max_peak_bytes", 0, &x)))
            return st;
        s->expect.has_max_peak_bytes = 1;
        s->expect.max_peak_bytes = (uint64_t)x;
    }
    if ((e = json_object_get(v, "infeasible"))) {
        if (!json_is_boolean(e))
            return FAIL(c, REDIST_ERR_INVALID, "expect.infeasible",
                        "expected true or false, got %s", rd_json_kind(e));
        s->expect.has_infeasible = 1;
        s->expect.infeasible = json_is_true(e);
    }
    if ((e = json_object_get(v, "ops"))) {
        if (!json_is_array(e))
            return FAIL(c, REDIST_ERR_INVALID, "expect.ops",
                        "expected an array of op names, got %s", rd_json_kind(e));
        size_t n = json_array_size(e);
        if (n > 4096)
            return FAIL(c, REDIST_ERR_LIMIT, "expect.ops",
                        "%zu ops listed; at most 4096", n);
        s->ops = calloc(n + 1, sizeof *s->ops);
        if (!s->ops)
            return FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
        for (size_t k = 0; k < n; k++) {
            char path[64];
            json_t *o = json_array_get(e, k);
            snprintf(path, sizeof path, "expect.ops[%zu]", k);
            if (!json_is_string(o))
                return FAIL(c, REDIST_ERR_INVALID, path,
                            "expected an op name, got %s", rd_json_kind(o));
            const char *nm = json_string_value(o);
            int known = 0;
            for (int i = 0; opnames[i]; i++)
                if (strcmp(nm, opnames[i]) == 0)
                    known = 1;
            if (!known)
                return FAIL(c, REDIST_ERR_INVALID, path,
                            "unknown op \"%.60s\" (ops: slice, all_gather, "
                            "all_to_all, reduce_scatter, all_reduce, permute, "
                            "exchange, transfer)",
                            nm);
            s->ops[k] = malloc(strlen(nm) + 1);
            if (!s->ops[k])
                return FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
            strcpy(s->ops[k], nm);
        }
        s->expect.has_ops = 1;
        s->expect.nops = (int)n;
        s->expect.ops = (const char *const *)s->ops;
    }
    return REDIST_OK;
}

/* The spec's "name" (v; absent: ""): a string without NUL or control
 * characters, copied into s->name. */
static redist_status_t parse_name(ctx_t *c, json_t *v, redist_spec_t *s)
{
    const char *name = "";
    if (v) {
        if (!json_is_string(v))
            return FAIL(c, REDIST_ERR_INVALID, "name",
                        "expected a string, got %s", rd_json_kind(v));
        name = json_string_value(v);
        unsigned cp = 0;
        const char *ctl = rd_control_char(name, &cp);
        if (strlen(name) != json_string_length(v))
            return FAIL(c, REDIST_ERR_INVALID, "name",
                        "the name contains a NUL character");
        if (ctl)
            return FAIL(c, REDIST_ERR_INVALID, "name",
                        "the name contains the control character U+%04X at "
                        "byte %zu",
                        cp, (size_t)(ctl - name) + 1);
    }
    s->name = malloc(strlen(name) + 1);
    if (!s->name)
        return FAIL(c, REDIST_ERR_NOMEM, NULL, "out of memory");
    strcpy(s->name, name);
    return REDIST_OK;
}

/* The spec's "shape" (v): at most REDIST_MAX_DIMS positive sizes. */
static redist_status_t parse_shape(ctx_t *c, json_t *v, redist_spec_t *s)
{
    if (!json_is_array(v))
        return FAIL(c, REDIST_ERR_INVALID, "shape",
                    "expected an array of dim sizes, got %s", rd_json_kind(v));
    if (json_array_size(v) > REDIST_MAX_DIMS)
        return FAIL(c, REDIST_ERR_INVALID, "shape",
                    "an array has at most %d dims, not %zu", REDIST_MAX_DIMS,
                    json_array_size(v));
    s->ndims = (int)json_array_size(v);
    for (int i = 0; i < s->ndims; i++) {
        char path[32];
        snprintf(path, sizeof path, "shape[%d]", i);
        json_t *d = json_array_get(v, (size_t)i);
        if (!json_is_integer(d))
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "expected an integer dim size, got %s", rd_json_kind(d));
        s->shape[i] = (int64_t)json_integer_value(d);
        if (s->shape[i] < 1)
            return FAIL(c, REDIST_ERR_INVALID, path,
                        "dim %d has size %lld; sizes must be positive integers", i,
                        (long long)s->shape[i]);
    }
    return REDIST_OK;
}

static redist_status_t parse_spec(ctx_t *c, json_t *root, unsigned flags,
                                  redist_spec_t *s)
{
    static const char *const keys[] = {"name", "mesh",   "meshes", "shape",
                                       "dtype", "from",  "to",     "reduce",
                                       "expect", NULL};
    static const char *const required[] = {"shape", "from", "to", NULL};
    redist_status_t st;
    if (!json_is_object(root))
        return FAIL(c, REDIST_ERR_INVALID, NULL,
                    "the spec must be a JSON object, got %s",
                    rd_json_kind(root));
    if ((st = check_keys(c, root, "", keys)))
        return st;
    for (int i = 0; required[i]; i++)
        if (!json_object_get(root, required[i]))
            return FAIL(c, REDIST_ERR_INVALID, required[i],
                        "missing required key \"%s\"", required[i]);
    if ((st = parse_name(c, json_object_get(root, "name"), s)))
        return st;
    json_t *one = json_object_get(root, "mesh");
    if (one && json_object_get(root, "meshes"))
        return FAIL(c, REDIST_ERR_INVALID, "meshes",
                    "give \"mesh\" (one mesh over devices 0..n-1) or "
                    "\"meshes\" (named meshes with device lists), not both");
    if (!one && !json_object_get(root, "meshes"))
        return FAIL(c, REDIST_ERR_INVALID, "mesh",
                    "missing required key \"mesh\" (or \"meshes\")");
    if (one) {
        for (int side = 0; side < 2; side++) {
            json_t *t = json_object_get(root, side ? "to" : "from");
            if (json_is_object(t) && json_object_get(t, "mesh"))
                return FAIL(c, REDIST_ERR_INVALID,
                            side ? "to.mesh" : "from.mesh",
                            "a type names its mesh only in a spec with "
                            "\"meshes\"");
        }
        if ((st = parse_mesh(c, one, "mesh", &s->mesh)))
            return st;
    } else if ((c->meshes = 1, st = parse_meshes(c, root, s)))
        return st;

    if ((st = parse_shape(c, json_object_get(root, "shape"), s)))
        return st;
    json_t *v;
    s->dtype = REDIST_F32;
    if ((v = json_object_get(root, "dtype"))) {
        if (!json_is_string(v))
            return FAIL(c, REDIST_ERR_INVALID, "dtype",
                        "expected a dtype name, got %s", rd_json_kind(v));
        if (redist_dtype_from_name(json_string_value(v), &s->dtype))
            return FAIL(c, REDIST_ERR_INVALID, "dtype",
                        "unknown dtype \"%.40s\" (dtypes: f16 bf16 f32 f64 i8 "
                        "i16 i32 i64 u8 u16 u32 u64 c64 c128)",
                        json_string_value(v));
    }
    s->reduce = REDIST_REDUCE_SUM;
    if ((v = json_object_get(root, "reduce"))) {
        if (!json_is_string(v))
            return FAIL(c, REDIST_ERR_INVALID, "reduce",
                        "expected a reduce op name, got %s", rd_json_kind(v));
        if (redist_reduce_from_name(json_string_value(v), &s->reduce))
            return FAIL(c, REDIST_ERR_INVALID, "reduce",
                        "unknown reduce op \"%.40s\" (ops: sum, max, min, "
                        "prod)",
                        json_string_value(v));
    }
    if ((st = parse_type(c, &s->mesh, json_object_get(root, "from"), "from",
                         s->ndims, &s->from)))
        return st;
    if ((st = parse_type(c, s->two ? &s->two->mesh[1] : &s->mesh,
                         json_object_get(root, "to"), "to", s->ndims,
                         &s->to)) ||
        (st = parse_layout(c, json_object_get(root, "from"), "from", 0, s)) ||
        (st = parse_layout(c, json_object_get(root, "to"), "to", 1, s)))
        return st;
    if ((v = json_object_get(root, "expect")) &&
        (st = parse_expect(c, v, s)))
        return st;
    if (s->expect.has_infeasible && s->expect.infeasible)
        flags |= REDIST_SPEC_ALLOW_UNPLANNABLE;
    st = rd_spec_finish(s, flags, c->err);
    rd_error_set_source(c->err, c->source);
    return st;
}

static int only_whitespace(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!(text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
              text[i] == '\r'))
            return 0;
    return 1;
}

redist_status_t rd_json_parse(const char *text, size_t len,
                              const char *source, json_t **root,
                              redist_error_t *err)
{
    json_error_t jerr;
    *root = NULL;
    if (len == 0 || only_whitespace(text, len))
        return rd_error(err, REDIST_ERR_PARSE, source, NULL,
                        "empty file: expected a JSON object");
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        /* line and column as jansson counts them (characters from 1) */
        int line = 1, col = 1;
        for (const char *p = text; p < nul; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else if (((unsigned char)*p & 0xc0) != 0x80) {
                col++;
            }
        }
        return rd_error_at(err, REDIST_ERR_PARSE, source, line, col,
                           "the file holds a NUL byte (byte %zu of %zu); "
                           "JSON text cannot contain one",
                           (size_t)(nul - text) + 1, len);
    }
    *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*root) {
        const char *what = "JSON syntax error";
        switch (json_error_code(&jerr)) {
        case json_error_invalid_utf8: what = "invalid UTF-8"; break;
        case json_error_stack_overflow: what = "nesting too deep"; break;
        case json_error_duplicate_key: what = "duplicate key"; break;
        case json_error_numeric_overflow: what = "number out of range"; break;
        case json_error_null_character: what = "NUL character"; break;
        default: break;
        }
        return rd_error_at(err, REDIST_ERR_PARSE, source, jerr.line,
                           jerr.column, "%s: %s", what, jerr.text);
    }
    return REDIST_OK;
}

redist_status_t rd_spec_from_json(json_t *root, const char *source,
                                  unsigned flags, redist_spec_t **out,
                                  redist_error_t *err)
{
    ctx_t c = {source, err, 0};
    redist_spec_t *s = calloc(1, sizeof *s);
    if (!s)
        return FAIL(&c, REDIST_ERR_NOMEM, NULL, "out of memory");
    redist_status_t st = parse_spec(&c, root, flags, s);
    if (st) {
        redist_spec_free(s);
        return st;
    }
    *out = s;
    return REDIST_OK;
}

redist_status_t redist_spec_load_buffer(const char *text, size_t len,
                                        const char *source, unsigned flags,
                                        redist_spec_t **out,
                                        redist_error_t *err)
{
    ctx_t c = {source ? source : "<string>", err, 0};
    if (!out || (!text && len))
        return FAIL(&c, REDIST_ERR_INVALID, NULL, "NULL argument");
    json_t *root;
    redist_status_t st = rd_json_parse(text, len, c.source, &root, err);
    if (st)
        return st;
    json_t *arrays = json_is_object(root) ? json_object_get(root, "arrays")
                                          : NULL;
    if (arrays)
        st = FAIL(&c, REDIST_ERR_INVALID, "arrays",
                  "this spec holds %zu arrays (doc/spec-format.md section "
                  "10): load it with redist_arrays_load_buffer / "
                  "redist_arrays_load_file",
                  json_is_array(arrays) ? json_array_size(arrays) : 0);
    else
        st = rd_spec_from_json(root, c.source, flags, out, err);
    json_decref(root);
    return st;
}

redist_status_t redist_spec_load_file(const char *path, unsigned flags,
                                      redist_spec_t **out, redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_status_t st =
        rd_read_file(path, RD_MAX_SPEC_BYTES, "a spec", &buf, &len, err);
    if (st)
        return st;
    st = redist_spec_load_buffer(buf, len, path, flags, out, err);
    free(buf);
    return st;
}
