/*
 * The inline (command-line) spec form:
 *   --mesh x=2,y=4  --shape 1024x512  --from 'x,y|'  --to '|x,y'
 *   --from-partial x,y  --to-partial x  --dtype f32  --reduce sum
 * A type lists its dims separated by '|', and in each dim its axes major
 * first separated by ','; an empty dim has no axes.  Errors name the
 * option as their path.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

#define SRC "<command line>"

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Copy the next token up to any char of `stops` (or end), trimmed. */
static const char *next_token(const char *p, const char *stops, char *tok,
                              size_t size, int *too_long)
{
    p = skip_ws(p);
    size_t n = 0;
    *too_long = 0;
    while (*p && !strchr(stops, *p)) {
        if (n + 1 < size)
            tok[n++] = *p;
        else
            *too_long = 1;
        p++;
    }
    while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
        n--;
    tok[n] = '\0';
    return p;
}

static int parse_i64(const char *s, int64_t *out)
{
    if (!*s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *skip_ws(end))
        return -1;
    *out = v;
    return 0;
}

static redist_status_t parse_mesh_opt(const char *text, const char *opt,
                                      redist_mesh_t *out, redist_error_t *err)
{
    const char *names[REDIST_MAX_AXES];
    char store[REDIST_MAX_AXES][REDIST_MAX_NAME + 1];
    int64_t sizes[REDIST_MAX_AXES];
    int n = 0, too_long;
    const char *p = text;
    char tok[128];
    if (!text || !*skip_ws(text))
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "missing mesh (e.g. %s data=2,model=4)", opt);
    for (;;) {
        p = next_token(p, "=,", tok, sizeof tok, &too_long);
        if (n == REDIST_MAX_AXES)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "more than %d axes", REDIST_MAX_AXES);
        if (*p != '=' || !tok[0] || too_long || strlen(tok) > REDIST_MAX_NAME)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "expected NAME=SIZE at axis %d in \"%.80s\"",
                            n + 1, text);
        char why[160];
        if (rd_axis_name_problem(tok, why, sizeof why))
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt, "%s",
                            why);
        rd_strlcpy(store[n], tok, sizeof store[n]);
        names[n] = store[n];
        p = next_token(p + 1, ",", tok, sizeof tok, &too_long);
        if (parse_i64(tok, &sizes[n]) || too_long)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "axis \"%s\": size \"%.40s\" is not a positive "
                            "integer",
                            names[n], tok);
        n++;
        if (*p != ',')
            break;
        p++;
    }
    redist_mesh_t *m = NULL;
    redist_status_t st = redist_mesh_create(n, names, sizes, &m, err);
    if (st) {
        if (err && err->path[0] == 'm')
            rd_strlcpy(err->path, opt, sizeof err->path);
        rd_error_set_source(err, SRC);
        return st;
    }
    *out = *m;
    redist_mesh_free(m);
    return REDIST_OK;
}

static redist_status_t parse_mesh(const char *text, redist_mesh_t *out,
                                  redist_error_t *err)
{
    return parse_mesh_opt(text, "--mesh", out, err);
}

static redist_status_t parse_shape(const char *text, int *ndims,
                                   int64_t shape[], redist_error_t *err)
{
    int n = 0, too_long;
    char tok[64];
    const char *p = text;
    if (!text)
        return rd_error(err, REDIST_ERR_INVALID, SRC, "--shape",
                        "missing shape (e.g. --shape 1024x512)");
    if (!*skip_ws(text)) {
        *ndims = 0;
        return REDIST_OK;
    }
    for (;;) {
        p = next_token(p, "x,", tok, sizeof tok, &too_long);
        if (n == REDIST_MAX_DIMS)
            return rd_error(err, REDIST_ERR_INVALID, SRC, "--shape",
                            "more than %d dims", REDIST_MAX_DIMS);
        if (parse_i64(tok, &shape[n]) || too_long || shape[n] < 1)
            return rd_error(err, REDIST_ERR_INVALID, SRC, "--shape",
                            "dim %d: \"%.40s\" is not a positive integer", n,
                            tok);
        n++;
        if (!*p)
            break;
        p++;
    }
    *ndims = n;
    return REDIST_OK;
}

static redist_status_t parse_axes(const char *text, const redist_mesh_t *mesh,
                                  const char *opt, int *axes, int *n,
                                  const char *stops, const char **endp,
                                  redist_error_t *err)
{
    char tok[128];
    int too_long;
    const char *p = skip_ws(text);
    *n = 0;
    if (!*p || strchr(stops, *p)) {
        *endp = p;
        return REDIST_OK;
    }
    char allstops[8];
    snprintf(allstops, sizeof allstops, ",%s", stops);
    for (;;) {
        p = next_token(p, allstops, tok, sizeof tok, &too_long);
        int a = redist_mesh_find_axis(mesh, tok);
        if (a < 0 || too_long) {
            char list[256];
            rd_spec_axis_list(mesh, list, sizeof list);
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "axis \"%.60s\" is not in the mesh (axes: %s)",
                            tok, list);
        }
        if (*n == REDIST_MAX_AXES)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "too many axes");
        axes[(*n)++] = a;
        if (*p != ',')
            break;
        p++;
    }
    *endp = p;
    return REDIST_OK;
}

static redist_status_t parse_type(const char *text, const char *partial,
                                  const redist_mesh_t *mesh, int ndims,
                                  const char *opt, const char *popt,
                                  redist_type_t *t, redist_error_t *err)
{
    int axes[REDIST_MAX_AXES], n, used = 0;
    const char *p;
    redist_status_t st;
    if (!text)
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "missing %s (e.g. %s 'x,y|' for dim 0 split over x "
                        "then y)",
                        opt, opt);
    redist_type_init(t, ndims);
    if (partial) {
        if ((st = parse_axes(partial, mesh, popt, axes, &n, "", &p, err)))
            return st;
        for (int k = 0; k < n; k++) {
            if (used >> axes[k] & 1)
                return rd_error(err, REDIST_ERR_INVALID, SRC, popt,
                                "axis \"%s\" is listed twice",
                                mesh->name[axes[k]]);
            used |= 1 << axes[k];
            t->partial |= 1u << axes[k];
        }
    }
    p = text;
    int dim = 0;
    if (ndims == 0) {
        if (*skip_ws(p))
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "the array has no dims; expected ''");
        return REDIST_OK;
    }
    for (;;) {
        if (dim == ndims)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "rank mismatch: more than %d dims given (dims are "
                            "separated by '|')",
                            ndims);
        if ((st = parse_axes(p, mesh, opt, axes, &n, "|", &p, err)))
            return st;
        for (int k = 0; k < n; k++) {
            if (used >> axes[k] & 1)
                return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                                "axis \"%s\" is used twice",
                                mesh->name[axes[k]]);
            used |= 1 << axes[k];
            redist_type_push_axis(t, dim, axes[k]);
        }
        dim++;
        p = skip_ws(p);
        if (*p != '|')
            break;
        p++;
    }
    if (*p)
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "unexpected \"%.20s\"", p);
    if (dim != ndims)
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "rank mismatch: %d dims given, the shape has %d", dim,
                        ndims);
    return REDIST_OK;
}

redist_status_t redist_spec_from_strings(const char *mesh, const char *shape,
                                         const char *dtype, const char *from,
                                         const char *from_partial,
                                         const char *to, const char *to_partial,
                                         const char *reduce, const char *name,
                                         unsigned flags, redist_spec_t **out,
                                         redist_error_t *err)
{
    redist_status_t st;
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, SRC, NULL, "NULL argument");
    redist_spec_t *s = calloc(1, sizeof *s);
    if (!s)
        return rd_error(err, REDIST_ERR_NOMEM, SRC, NULL, "out of memory");
    unsigned cp = 0;
    const char *nm = name ? name : "", *ctl = rd_control_char(nm, &cp);
    if (ctl) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--name",
                      "the name contains the control character U+%04X at "
                      "byte %zu",
                      cp, (size_t)(ctl - nm) + 1);
        goto fail;
    }
    s->name = malloc(strlen(nm) + 1);
    if (!s->name) {
        st = rd_error(err, REDIST_ERR_NOMEM, SRC, NULL, "out of memory");
        goto fail;
    }
    strcpy(s->name, nm);
    if ((st = parse_mesh(mesh, &s->mesh, err)))
        goto fail;
    if ((st = parse_shape(shape, &s->ndims, s->shape, err)))
        goto fail;
    s->dtype = REDIST_F32;
    if (dtype && redist_dtype_from_name(dtype, &s->dtype)) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--dtype",
                      "unknown dtype \"%.40s\" (dtypes: f16 bf16 f32 f64 i8 "
                      "i16 i32 i64 u8 u16 u32 u64 c64 c128)",
                      dtype);
        goto fail;
    }
    s->reduce = REDIST_REDUCE_SUM;
    if (reduce && redist_reduce_from_name(reduce, &s->reduce)) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--reduce",
                      "unknown reduce op \"%.40s\" (ops: sum, max, min, prod)",
                      reduce);
        goto fail;
    }
    if ((st = parse_type(from, from_partial, &s->mesh, s->ndims, "--from",
                         "--from-partial", &s->from, err)))
        goto fail;
    if ((st = parse_type(to, to_partial, &s->mesh, s->ndims, "--to",
                         "--to-partial", &s->to, err)))
        goto fail;
    st = rd_spec_finish(s, flags, err);
    rd_error_set_source(err, SRC);
    if (st)
        goto fail;
    *out = s;
    return REDIST_OK;
fail:
    redist_spec_free(s);
    return st;
}

/* A placed mesh "[NAME:]AXES[@DEVICES]" of side `side` into m (name,
 * mesh, device list; DEVICES ids and LO-HI ranges separated by ','). */
static redist_status_t parse_placed(const char *text, int side,
                                    rd_meshes *m, redist_error_t *err)
{
    const char *opt = side ? "--to-mesh" : "--from-mesh";
    char buf[1024], why[200];
    if (!text || !*skip_ws(text))
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "missing mesh (e.g. %s %s:tp=4@4-7)", opt,
                        side ? "infer" : "train");
    if (strlen(text) >= sizeof buf)
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "longer than %zu characters", sizeof buf - 1);
    rd_strlcpy(buf, text, sizeof buf);
    char *axes = buf, *colon = strchr(buf, ':'), *at = strchr(buf, '@');
    if (at)
        *at = '\0';
    if (colon && (!at || colon < at)) {
        *colon = '\0';
        axes = colon + 1;
        if (rd_mesh_name_problem(buf, why, sizeof why))
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt, "%s", why);
        rd_strlcpy(m->name[side], buf, sizeof m->name[side]);
    } else
        rd_strlcpy(m->name[side], side ? "to" : "from", sizeof m->name[side]);
    redist_status_t st = parse_mesh_opt(axes, opt, &m->mesh[side], err);
    if (st)
        return st;
    int64_t n = m->mesh[side].ndevices, k = 0;
    if (n > RD_MESHES_MAX_DEVICES)
        return rd_error(err, REDIST_ERR_LIMIT, SRC, opt,
                        "%lld devices; a mesh of a two-mesh spec has at "
                        "most %lld",
                        (long long)n, (long long)RD_MESHES_MAX_DEVICES);
    if (!(m->dev[side] = malloc((size_t)n * sizeof *m->dev[side])))
        return rd_error(err, REDIST_ERR_NOMEM, SRC, NULL, "out of memory");
    if (!at) {
        for (int64_t r = 0; r < n; r++)
            m->dev[side][r] = r;
        return REDIST_OK;
    }
    for (const char *p = at + 1;;) {
        char tok[64];
        int too_long;
        int64_t lo, hi;
        p = next_token(p, ",", tok, sizeof tok, &too_long);
        char *dash = strchr(tok, '-');
        if (dash)
            *dash = '\0';
        if (too_long || parse_i64(tok, &lo) < 0 ||
            (dash ? parse_i64(dash + 1, &hi) < 0 : (hi = lo, 0)) ||
            lo < 0 || hi < lo)
            return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                            "devices: expected ids and LO-HI ranges "
                            "separated by ',' (e.g. @0-3,8), at \"%.40s\"",
                            tok);
        for (int64_t d = lo; d <= hi; d++) {
            if (k == n)
                return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                                "more devices than the mesh's %lld",
                                (long long)n);
            m->dev[side][k++] = d;
        }
        if (*p != ',')
            break;
        p++;
    }
    if (k != n)
        return rd_error(err, REDIST_ERR_INVALID, SRC, opt,
                        "%lld devices listed; the mesh has %lld",
                        (long long)k, (long long)n);
    return REDIST_OK;
}

redist_status_t redist_spec_from_strings_meshes(
    const char *from_mesh, const char *to_mesh, const char *shape,
    const char *dtype, const char *from, const char *from_partial,
    const char *to, const char *to_partial, const char *reduce,
    const char *name, unsigned flags, redist_spec_t **out,
    redist_error_t *err)
{
    redist_status_t st;
    redist_type_t tf, tt;
    int ndims = 0;
    int64_t sh[REDIST_MAX_DIMS];
    redist_dtype_t dt = REDIST_F32;
    redist_reduce_t op = REDIST_REDUCE_SUM;
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, SRC, NULL, "NULL argument");
    rd_meshes *m = calloc(1, sizeof *m);
    if (!m)
        return rd_error(err, REDIST_ERR_NOMEM, SRC, NULL, "out of memory");
    if ((st = parse_placed(from_mesh, 0, m, err)) ||
        (st = parse_placed(to_mesh, 1, m, err)) ||
        (st = parse_shape(shape, &ndims, sh, err)))
        goto fail;
    if (dtype && redist_dtype_from_name(dtype, &dt)) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--dtype",
                      "unknown dtype \"%.40s\"", dtype);
        goto fail;
    }
    if (reduce && redist_reduce_from_name(reduce, &op)) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--reduce",
                      "unknown reduce op \"%.40s\" (ops: sum, max, min, "
                      "prod)",
                      reduce);
        goto fail;
    }
    if ((st = parse_type(from, from_partial, &m->mesh[0], ndims, "--from",
                         "--from-partial", &tf, err)) ||
        (st = parse_type(to, to_partial, &m->mesh[1], ndims, "--to",
                         "--to-partial", &tt, err)))
        goto fail;
    if (!strcmp(m->name[0], m->name[1])) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--to-mesh",
                      "both meshes are named \"%s\"", m->name[0]);
        goto fail;
    }
    unsigned cp = 0;
    if (name && rd_control_char(name, &cp)) {
        st = rd_error(err, REDIST_ERR_INVALID, SRC, "--name",
                      "the name contains the control character U+%04X", cp);
        goto fail;
    }
    st = rd_spec_new(&m->mesh[0], ndims, sh, dt, &tf, &tt, op, name, m,
                     flags, out, err);
    rd_error_set_source(err, SRC);
    return st;
fail:
    rd_meshes_free(m);
    return st;
}

/* One side's inline layout: a rule name and "|"-separated dims of
 * ","-separated lengths.  Lengths go to store[i] (malloc'ed). */
static redist_status_t parse_layout(const char *split, const char *blocks,
                                    int ndims, const char *sopt,
                                    const char *bopt, redist_layout_t *l,
                                    int64_t *store[], redist_error_t *err)
{
    memset(l, 0, sizeof *l);
    if (split && *skip_ws(split) &&
        redist_split_from_name(skip_ws(split), &l->split))
        return rd_error(err, REDIST_ERR_INVALID, SRC, sopt,
                        "unknown split rule \"%.40s\" (rules: ceil, "
                        "balanced, chunk)",
                        split);
    if (!blocks || !*skip_ws(blocks))
        return REDIST_OK;
    const char *p = blocks;
    for (int dim = 0;; dim++) {
        char tok[64];
        int too_long;
        if (dim == ndims)
            return rd_error(err, REDIST_ERR_INVALID, SRC, bopt,
                            "rank mismatch: more than %d dims given (dims are "
                            "separated by '|')",
                            ndims);
        p = skip_ws(p);
        if (*p && *p != '|') {
            int64_t n = 0, cap = 16;
            int64_t *v = malloc((size_t)cap * sizeof *v);
            if (!v)
                return rd_error(err, REDIST_ERR_NOMEM, SRC, NULL,
                                "out of memory");
            store[dim] = v;
            for (;;) {
                p = next_token(p, ",|", tok, sizeof tok, &too_long);
                if (n == cap) {
                    int64_t *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
                    if (!nv)
                        return rd_error(err, REDIST_ERR_NOMEM, SRC, NULL,
                                        "out of memory");
                    store[dim] = v = nv;
                }
                if (parse_i64(tok, &v[n]) || too_long)
                    return rd_error(err, REDIST_ERR_INVALID, SRC, bopt,
                                    "dim %d: block length \"%.40s\" is not a "
                                    "non-negative integer",
                                    dim, tok);
                n++;
                if (*p != ',')
                    break;
                p++;
            }
            l->blocks[dim] = v;
            l->nblocks[dim] = n;
        }
        if (*p != '|')
            break;
        p++;
    }
    if (*p)
        return rd_error(err, REDIST_ERR_INVALID, SRC, bopt,
                        "unexpected \"%.20s\"", p);
    return REDIST_OK;
}

redist_status_t redist_spec_with_layout_strings(const redist_spec_t *spec,
                                                const char *from_split,
                                                const char *from_blocks,
                                                const char *to_split,
                                                const char *to_blocks,
                                                redist_spec_t **out,
                                                redist_error_t *err)
{
    redist_layout_t l[2];
    int64_t *store[2][REDIST_MAX_DIMS] = {{NULL}};
    redist_status_t st;
    if (!spec || !out)
        return rd_error(err, REDIST_ERR_INVALID, SRC, NULL, "NULL argument");
    if (!(st = parse_layout(from_split, from_blocks, spec->ndims,
                            "--from-split", "--from-blocks", &l[0], store[0],
                            err)) &&
        !(st = parse_layout(to_split, to_blocks, spec->ndims, "--to-split",
                            "--to-blocks", &l[1], store[1], err))) {
        st = redist_spec_with_layouts(spec, &l[0], &l[1], out, err);
        if (st && err) {
            /* "from.blocks[1]" -> "--from-blocks" (the text names the dim) */
            const char *side = strncmp(err->path, "to.", 3) == 0 ? "to"
                                                                  : "from";
            if (strstr(err->path, ".blocks"))
                snprintf(err->path, sizeof err->path, "--%s-blocks", side);
            else if (strstr(err->path, ".split"))
                snprintf(err->path, sizeof err->path, "--%s-split", side);
            rd_error_set_source(err, SRC);
        }
    }
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < REDIST_MAX_DIMS; i++)
            free(store[side][i]);
    return st;
}
