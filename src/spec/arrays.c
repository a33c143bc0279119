/*
 * Many arrays in one spec (doc/spec-format.md section 10): a set of
 * one-array specs that share the spec's meshes, with an optional memory
 * budget.  A file with "arrays" is read element by element: each element
 * is parsed as a one-array spec whose "mesh" / "meshes" are the file's,
 * so every rule and every message of a one-array spec holds for it, with
 * the element's place ("arrays[3].to.dims[1]") in the path.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* Spec files are small; anything larger is a mistake (as load.c). */
#define RD_MAX_ARRAYS_BYTES (16u << 20)

struct redist_arrays {
    char *name;
    int n;
    int is_set; /* read from a file with "arrays" (or built from C) */
    uint64_t budget;
    redist_spec_t **spec;
};

void redist_arrays_free(redist_arrays_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++)
        redist_spec_free(a->spec[i]);
    free(a->spec);
    free(a->name);
    free(a);
}

static redist_arrays_t *arrays_new(const char *name, int n)
{
    redist_arrays_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->name = rd_strdup(name ? name : "");
    a->spec = calloc((size_t)(n > 0 ? n : 1), sizeof *a->spec);
    a->budget = REDIST_NO_BUDGET;
    if (!a->name || !a->spec) {
        redist_arrays_free(a);
        return NULL;
    }
    return a;
}

/* Every array runs on the same devices (one communicator or PE set). */
static redist_status_t check_devices(const redist_arrays_t *a,
                                     const char *source,
                                     redist_error_t *err)
{
    for (int i = 1; i < a->n; i++) {
        int64_t d0 = redist_spec_num_devices(a->spec[0]),
                di = redist_spec_num_devices(a->spec[i]);
        if (d0 != di) {
            char path[48];
            snprintf(path, sizeof path, "arrays[%d]", i);
            return rd_error(err, REDIST_ERR_INVALID, source, path,
                            "array \"%s\" runs on %lld devices, array "
                            "\"%s\" on %lld: all arrays of a spec run on "
                            "the same devices",
                            a->spec[i]->name, (long long)di,
                            a->spec[0]->name, (long long)d0);
        }
    }
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(a->spec[i]->name, a->spec[j]->name) == 0) {
                char path[48];
                snprintf(path, sizeof path, "arrays[%d].name", i);
                return rd_error(err, REDIST_ERR_INVALID, source, path,
                                "array name \"%.60s\" is also the name of "
                                "arrays[%d]; names must be distinct",
                                a->spec[i]->name, j);
            }
    return REDIST_OK;
}

redist_status_t redist_arrays_create(const char *name, int n,
                                     const redist_spec_t *const specs[],
                                     uint64_t budget_bytes,
                                     redist_arrays_t **out,
                                     redist_error_t *err)
{
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "out",
                        "NULL argument");
    if (n < 1 || n > REDIST_MAX_ARRAYS)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "n",
                        "%d arrays; a set holds 1 to %d", n,
                        REDIST_MAX_ARRAYS);
    if (!specs)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "specs",
                        "NULL argument");
    if (name && strlen(name) > 4096)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "name",
                        "the name is longer than 4096 bytes");
    for (int i = 0; i < n; i++)
        if (!specs[i]) {
            char path[32];
            snprintf(path, sizeof path, "specs[%d]", i);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "NULL spec");
        }
    redist_arrays_t *a = arrays_new(name, n);
    if (!a)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    a->is_set = 1;
    a->budget = budget_bytes;
    for (int i = 0; i < n; i++) {
        if (!(a->spec[i] = rd_spec_clone(specs[i]))) {
            redist_arrays_free(a);
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        }
        a->n = i + 1;
    }
    redist_status_t st = check_devices(a, NULL, err);
    if (st) {
        redist_arrays_free(a);
        return st;
    }
    *out = a;
    return REDIST_OK;
}

/* The one-array spec of element i: the element's keys and the file's
 * "mesh" / "meshes". */
static redist_status_t element(json_t *root, json_t *el, size_t i,
                               const char *source, unsigned flags,
                               redist_spec_t **out, redist_error_t *err)
{
    static const char *const keys[] = {"name", "shape", "dtype", "from",
                                       "to",   "reduce", "expect", NULL};
    char where[32];
    snprintf(where, sizeof where, "arrays[%zu]", i);
    if (!json_is_object(el))
        return rd_error(err, REDIST_ERR_INVALID, source, where,
                        "expected an array's object (name, shape, dtype, "
                        "from, to, reduce), got %s",
                        rd_json_kind(el));
    redist_status_t st = rd_json_check_keys(el, where, 80, keys, source, err);
    if (st)
        return st;
    json_t *nm = json_object_get(el, "name");
    if (!nm)
        return rd_error(err, REDIST_ERR_INVALID, source, where,
                        "missing required key \"name\" (each array is "
                        "named)");
    if (json_is_string(nm) && json_string_length(nm) == 0)
        return rd_error(err, REDIST_ERR_INVALID, source, where,
                        "the array's name is empty");
    json_t *one = json_copy(el);
    if (!one)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    static const char *const shared[] = {"mesh", "meshes", NULL};
    for (int k = 0; shared[k]; k++) {
        json_t *m = json_object_get(root, shared[k]);
        if (m && json_object_set(one, shared[k], m)) {
            json_decref(one);
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        }
    }
    st = rd_spec_from_json(one, source, flags, out, err);
    json_decref(one);
    if (st && err && strncmp(err->path, "mesh", 4) != 0) {
        /* the element's own key: name its place in the file */
        char path[REDIST_ERROR_PATH_LENGTH];
        size_t pos = 0;
        path[0] = '\0';
        rd_appendf(path, sizeof path, &pos, "%s%s%s", where,
                   err->path[0] ? "." : "", err->path);
        rd_strlcpy(err->path, path, sizeof err->path);
    }
    return st;
}

static redist_status_t parse_set(json_t *root, const char *source,
                                 unsigned flags, redist_arrays_t **out,
                                 redist_error_t *err)
{
    static const char *const keys[] = {"name",   "mesh",         "meshes",
                                       "arrays", "budget_bytes", NULL};
    redist_status_t st = rd_json_check_keys(root, "", 80, keys, source, err);
    if (st)
        return st;
    json_t *v = json_object_get(root, "arrays");
    if (!json_is_array(v))
        return rd_error(err, REDIST_ERR_INVALID, source, "arrays",
                        "expected a list of arrays, got %s", rd_json_kind(v));
    size_t n = json_array_size(v);
    if (n < 1 || n > REDIST_MAX_ARRAYS)
        return rd_error(err, REDIST_ERR_INVALID, source, "arrays",
                        "%zu arrays; a spec holds 1 to %d", n,
                        REDIST_MAX_ARRAYS);
    json_t *nm = json_object_get(root, "name");
    if (nm && !json_is_string(nm))
        return rd_error(err, REDIST_ERR_INVALID, source, "name",
                        "expected a string, got %s", rd_json_kind(nm));
    const char *name = nm ? json_string_value(nm) : "";
    unsigned cp = 0;
    const char *ctl = rd_control_char(name, &cp);
    if (nm && (strlen(name) != json_string_length(nm) || ctl))
        return rd_error(err, REDIST_ERR_INVALID, source, "name",
                        "the name contains a control or NUL character");
    redist_arrays_t *a = arrays_new(name, (int)n);
    if (!a)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    a->is_set = 1;
    json_t *b = json_object_get(root, "budget_bytes");
    if (b) {
        if (!json_is_integer(b) || json_integer_value(b) < 0)
            st = rd_error(err, REDIST_ERR_INVALID, source, "budget_bytes",
                          "expected a byte count (an integer >= 0), got %s",
                          json_is_integer(b) ? "a negative integer"
                                             : rd_json_kind(b));
        else
            a->budget = (uint64_t)json_integer_value(b);
    }
    for (size_t i = 0; i < n && !st; i++) {
        st = element(root, json_array_get(v, i), i, source, flags,
                     &a->spec[i], err);
        if (!st)
            a->n = (int)i + 1;
    }
    if (!st)
        st = check_devices(a, source, err);
    if (st) {
        redist_arrays_free(a);
        return st;
    }
    *out = a;
    return REDIST_OK;
}

redist_status_t redist_arrays_load_buffer(const char *text, size_t len,
                                          const char *source, unsigned flags,
                                          redist_arrays_t **out,
                                          redist_error_t *err)
{
    const char *src = source ? source : "<string>";
    if (!out || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL argument");
    json_t *root;
    redist_status_t st = rd_json_parse(text, len, src, &root, err);
    if (st)
        return st;
    if (json_is_object(root) && json_object_get(root, "arrays")) {
        st = parse_set(root, src, flags, out, err);
    } else {
        /* a one-array spec: a set of one, without a budget */
        redist_spec_t *s = NULL;
        st = rd_spec_from_json(root, src, flags, &s, err);
        if (!st) {
            redist_arrays_t *a = arrays_new(s->name, 1);
            if (!a) {
                redist_spec_free(s);
                st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                              "out of memory");
            } else {
                a->spec[0] = s;
                a->n = 1;
                *out = a;
            }
        }
    }
    json_decref(root);
    return st;
}

redist_status_t redist_arrays_load_file(const char *path, unsigned flags,
                                        redist_arrays_t **out,
                                        redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_status_t st =
        rd_read_file(path, RD_MAX_ARRAYS_BYTES, "a spec", &buf, &len, err);
    if (st)
        return st;
    st = redist_arrays_load_buffer(buf, len, path, flags, out, err);
    free(buf);
    return st;
}

const char *redist_arrays_name(const redist_arrays_t *a)
{
    return a ? a->name : NULL;
}

int redist_arrays_count(const redist_arrays_t *a)
{
    return a ? a->n : 0;
}

int redist_arrays_is_set(const redist_arrays_t *a)
{
    return a ? a->is_set : 0;
}

const redist_spec_t *redist_arrays_get(const redist_arrays_t *a, int i)
{
    return a && i >= 0 && i < a->n ? a->spec[i] : NULL;
}

uint64_t redist_arrays_budget(const redist_arrays_t *a)
{
    return a ? a->budget : REDIST_NO_BUDGET;
}

int redist_arrays_find(const redist_arrays_t *a, const char *name)
{
    if (!a || !name)
        return -1;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->spec[i]->name, name) == 0)
            return i;
    return -1;
}
