/*
 * Redistribution problems built from C values; accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

char *rd_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void rd_spec_axis_list(const redist_mesh_t *mesh, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int k = 0; k < mesh->naxes; k++)
        rd_appendf(buf, size, &pos, "%s%s", k ? ", " : "", mesh->name[k]);
}

uint64_t rd_spec_type_bytes_on(const redist_spec_t *s,
                               const redist_mesh_t *mesh,
                               const redist_type_t *t)
{
    uint64_t e = 1;
    for (int i = 0; i < s->ndims; i++) {
        uint64_t p = 1;
        for (int k = 0; k < t->dim_naxes[i]; k++)
            p *= (uint64_t)mesh->size[t->dims[i][k]];
        e *= (uint64_t)s->shape[i] / p;
    }
    return e * s->elem_size; /* <= global bytes, checked at creation */
}

uint64_t rd_spec_type_bytes(const redist_spec_t *s, const redist_type_t *t)
{
    return rd_spec_type_bytes_on(s, &s->mesh, t);
}

const redist_mesh_t *rd_spec_side_mesh(const redist_spec_t *s, int side)
{
    return s->two && side ? &s->two->mesh[1] : &s->mesh;
}

void rd_meshes_free(rd_meshes *m)
{
    if (!m)
        return;
    for (int side = 0; side < 2; side++) {
        free(m->dev[side]);
        free(m->pos[side]);
    }
    free(m);
}

int rd_meshes_copy(rd_meshes **dst, const rd_meshes *m)
{
    *dst = NULL;
    if (!m)
        return 0;
    rd_meshes *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    *c = *m;
    c->dev[0] = c->dev[1] = c->pos[0] = c->pos[1] = NULL;
    for (int side = 0; side < 2; side++) {
        size_t n = (size_t)m->mesh[side].ndevices;
        size_t N = (size_t)m->ndevices;
        if (!(c->dev[side] = malloc(n * sizeof *c->dev[side])) ||
            (m->pos[side] &&
             !(c->pos[side] = malloc(N * sizeof *c->pos[side])))) {
            rd_meshes_free(c);
            return -1;
        }
        memcpy(c->dev[side], m->dev[side], n * sizeof *c->dev[side]);
        if (m->pos[side])
            memcpy(c->pos[side], m->pos[side], N * sizeof *c->pos[side]);
    }
    *dst = c;
    return 0;
}

int64_t rd_spec_mesh_rank(const redist_spec_t *s, int side, int64_t dev)
{
    const redist_mesh_t *m = rd_spec_side_mesh(s, side);
    if (!s->two)
        return dev >= 0 && dev < m->ndevices ? dev : -1;
    return dev >= 0 && dev < s->two->ndevices ? s->two->pos[side][dev] : -1;
}

const char *rd_mesh_name_problem(const char *name, char *why, size_t size)
{
    unsigned cp = 0;
    const char *sep = strpbrk(name, ",|=@:");
    if (!*name || strlen(name) > REDIST_MAX_NAME)
        snprintf(why, size, "a mesh name has 1 to %d characters, not %zu",
                 REDIST_MAX_NAME, strlen(name));
    else if (sep)
        snprintf(why, size,
                 "mesh name \"%.40s\" contains '%c' (',' '|' '=' '@' and "
                 "':' separate the parts of the inline form)",
                 rd_control_char(name, &cp) ? "..." : name, *sep);
    else if (rd_control_char(name, &cp))
        snprintf(why, size,
                 "mesh name contains the control character U+%04X", cp);
    else
        return NULL;
    return why;
}

/* Check the device lists of a two-mesh spec; set ndevices and the
 * inverse maps. */
static redist_status_t check_devices(redist_spec_t *s, redist_error_t *err)
{
    rd_meshes *m = s->two;
    m->ndevices = 0;
    for (int side = 0; side < 2; side++) {
        int64_t n = m->mesh[side].ndevices;
        char path[REDIST_MAX_NAME + 48];
        snprintf(path, sizeof path, "meshes.%s", m->name[side]);
        if (n > RD_MESHES_MAX_DEVICES)
            return rd_error(err, REDIST_ERR_LIMIT, NULL, path,
                            "%lld devices; a mesh of a two-mesh spec has at "
                            "most %lld (its device list is stored)",
                            (long long)n, (long long)RD_MESHES_MAX_DEVICES);
        for (int64_t r = 0; r < n; r++) {
            int64_t d = m->dev[side][r];
            snprintf(path, sizeof path, "meshes.%s.devices[%lld]",
                     m->name[side], (long long)r);
            if (d < 0 || d >= 2 * RD_MESHES_MAX_DEVICES)
                return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                "device %lld is out of range (0 to %lld)",
                                (long long)d,
                                (long long)2 * RD_MESHES_MAX_DEVICES - 1);
            if (d + 1 > m->ndevices)
                m->ndevices = d + 1;
        }
    }
    for (int side = 0; side < 2; side++) {
        int64_t n = m->mesh[side].ndevices;
        free(m->pos[side]);
        m->pos[side] = malloc((size_t)m->ndevices * sizeof *m->pos[side]);
        if (!m->pos[side])
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        for (int64_t d = 0; d < m->ndevices; d++)
            m->pos[side][d] = -1;
        for (int64_t r = 0; r < n; r++) {
            int64_t d = m->dev[side][r];
            if (m->pos[side][d] >= 0) {
                char path[REDIST_MAX_NAME + 48];
                snprintf(path, sizeof path, "meshes.%s.devices",
                         m->name[side]);
                return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                "device %lld is listed twice (a mesh holds "
                                "distinct devices)",
                                (long long)d);
            }
            m->pos[side][d] = r;
        }
    }
    return REDIST_OK;
}

redist_status_t rd_spec_partial_check(const redist_spec_t *s,
                                      redist_error_t *err)
{
    const redist_mesh_t *tm = rd_spec_side_mesh(s, 1);
    uint32_t extra = s->two ? s->to.partial : s->to.partial & ~s->from.partial;
    for (int a = 0; a < tm->naxes; a++)
        if (tm->size[a] == 1)
            extra &= ~(1u << a); /* a reduction over one device: none */
    if (!extra)
        return REDIST_OK;
    if (s->two)
        return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, "to.partial",
                        "axis \"%s\" of mesh \"%s\" is partial in the "
                        "target; pending reductions do not cross to "
                        "another mesh",
                        tm->name[__builtin_ctz(extra)], s->two->name[1]);
    return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, "to.partial",
                    "axis \"%s\" is partial in the target but not in the "
                    "source; no collective creates pending reductions",
                    s->mesh.name[__builtin_ctz(extra)]);
}

static redist_status_t spec_layouts(redist_spec_t *s, redist_error_t *err);

redist_status_t rd_spec_finish(redist_spec_t *s, unsigned flags,
                               redist_error_t *err)
{
    redist_status_t st;
    uint64_t total = 1;
    if (s->ndims < 0 || s->ndims > REDIST_MAX_DIMS)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "shape",
                        "an array has 0 to %d dims, not %d", REDIST_MAX_DIMS,
                        s->ndims);
    s->elem_size = redist_dtype_size(s->dtype);
    if (s->elem_size == 0)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "dtype",
                        "unknown dtype %d", (int)s->dtype);
    if ((unsigned)s->reduce >= REDIST_REDUCE_COUNT)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "reduce",
                        "unknown reduce op %d", (int)s->reduce);
    for (int i = 0; i < s->ndims; i++) {
        char path[32];
        snprintf(path, sizeof path, "shape[%d]", i);
        if (s->shape[i] < 1)
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "dim %d has size %lld; sizes must be positive integers", i,
                            (long long)s->shape[i]);
        if (rd_mul_u64(total, (uint64_t)s->shape[i], &total))
            return rd_error(err, REDIST_ERR_OVERFLOW, NULL, path,
                            "the array has more than 2^64 elements "
                            "(overflow at dim %d)",
                            i);
    }
    if (rd_mul_u64(total, s->elem_size, &s->global_bytes))
        return rd_error(err, REDIST_ERR_OVERFLOW, NULL, "shape",
                        "the array has more than 2^64 bytes (%llu elements "
                        "of %llu bytes): overflow",
                        (unsigned long long)total,
                        (unsigned long long)s->elem_size);
    if (s->global_bytes > (uint64_t)INT64_MAX)
        return rd_error(err, REDIST_ERR_OVERFLOW, NULL, "shape",
                        "the array has %llu bytes; byte counts must fit a "
                        "signed 64-bit integer (overflow)",
                        (unsigned long long)s->global_bytes);
    if (s->two) {
        s->mesh = s->two->mesh[0];
        if ((st = check_devices(s, err)))
            return st;
    }
    if ((st = rd_type_check(&s->from, &s->mesh, s->ndims, NULL, "from",
                            err)) ||
        (st = rd_type_check(&s->to, rd_spec_side_mesh(s, 1), s->ndims, NULL,
                            "to", err)) ||
        (st = spec_layouts(s, err)))
        return st;
    if (!(flags & REDIST_SPEC_ALLOW_UNPLANNABLE) &&
        (st = rd_spec_partial_check(s, err)))
        return st;
    if (s->uneven) {
        s->src_bytes = rd_layout_max_elems(&s->lay[0], NULL) * s->elem_size;
        s->dst_bytes = rd_layout_max_elems(&s->lay[1], NULL) * s->elem_size;
    } else {
        s->src_bytes = rd_spec_type_bytes(s, &s->from);
        s->dst_bytes = rd_spec_type_bytes_on(s, rd_spec_side_mesh(s, 1),
                                             &s->to);
    }
    return REDIST_OK;
}

static int64_t type_blocks(const redist_spec_t *s, int side, int i)
{
    const redist_type_t *t = side ? &s->to : &s->from;
    const redist_mesh_t *m = rd_spec_side_mesh(s, side);
    int64_t k = 1;
    for (int a = 0; a < t->dim_naxes[i]; a++)
        k *= m->size[t->dims[i][a]];
    return k;
}

/* Check the rules and explicit lengths of both sides; decide whether the
 * spec is uneven and, if so, build its layouts. */
static redist_status_t spec_layouts(redist_spec_t *s, redist_error_t *err)
{
    static const char *const side_name[2] = {"from", "to"};
    s->uneven = 0;
    for (int side = 0; side < 2; side++) {
        char path[64];
        if ((unsigned)s->split[side] >= REDIST_SPLIT_COUNT) {
            snprintf(path, sizeof path, "%s.split", side_name[side]);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "unknown split rule %d (rules: ceil, balanced, "
                            "chunk)",
                            (int)s->split[side]);
        }
        for (int i = 0; i < s->ndims; i++) {
            int64_t k = type_blocks(s, side, i);
            const int64_t *b = s->blocks[side][i];
            if (s->shape[i] % k)
                s->uneven = 1;
            if (!b)
                continue;
            snprintf(path, sizeof path, "%s.blocks[%d]", side_name[side], i);
            redist_status_t st = rd_layout_check_blocks(
                b, s->blocks[side][i][-1], k, s->shape[i], i, NULL, path,
                err);
            if (st)
                return st;
            for (int64_t j = 0; j < k; j++)
                if (b[j] != s->shape[i] / k)
                    s->uneven = 1;
        }
    }
    if (!s->uneven)
        return REDIST_OK;
    for (int side = 0; side < 2; side++) {
        int r = rd_layout_rule(&s->lay[side], side ? &s->to : &s->from,
                               rd_spec_side_mesh(s, side), s->ndims, s->shape, s->split[side],
                               (const int64_t *const *)s->blocks[side]);
        if (r == -2)
            return rd_error(err, REDIST_ERR_LIMIT, NULL, side ? "to" : "from",
                            "a dim is split into more than %lld blocks; "
                            "uneven layouts store their boundaries",
                            (long long)RD_LAYOUT_MAX_BLOCKS);
        if (r)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
    }
    return REDIST_OK;
}

uint64_t rd_spec_device_bytes(const redist_spec_t *s, int side,
                              const int64_t coord[])
{
    const redist_type_t *t = side ? &s->to : &s->from;
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    uint64_t e = s->elem_size;
    if (!s->uneven)
        return rd_spec_type_bytes_on(s, rd_spec_side_mesh(s, side), t);
    rd_layout_box_coord(&s->lay[side], t, rd_spec_side_mesh(s, side), coord,
                        lo, hi);
    for (int i = 0; i < s->ndims; i++)
        e *= (uint64_t)(hi[i] - lo[i]);
    return e;
}

/* Explicit lengths are stored with their count in front: b[-1]. */
static int64_t *blocks_dup(const int64_t *src, int64_t n)
{
    int64_t *d = malloc((size_t)(n + 1) * sizeof *d);
    if (!d)
        return NULL;
    d[0] = n;
    if (n)
        memcpy(d + 1, src, (size_t)n * sizeof *d);
    return d + 1;
}

static void blocks_free(int64_t *b)
{
    if (b)
        free(b - 1);
}

/* Free what the layouts own (blocks and boundaries). */
static void spec_layouts_free(redist_spec_t *s)
{
    for (int side = 0; side < 2; side++) {
        for (int i = 0; i < REDIST_MAX_DIMS; i++) {
            blocks_free(s->blocks[side][i]);
            s->blocks[side][i] = NULL;
        }
        rd_layout_free(&s->lay[side]);
    }
}

/* Copy the layouts of src into s (whose own pointers are not owned yet).
 * -1: out of memory (s holds what was copied, freeable). */
static int spec_layouts_copy(redist_spec_t *s, const redist_spec_t *src)
{
    for (int side = 0; side < 2; side++) {
        if (src->uneven) /* an even spec's layouts are empty */
            memset(&s->lay[side], 0, sizeof s->lay[side]);
        for (int i = 0; i < REDIST_MAX_DIMS; i++)
            s->blocks[side][i] = NULL;
    }
    for (int side = 0; side < 2; side++) {
        for (int i = 0; i < REDIST_MAX_DIMS; i++)
            if (src->blocks[side][i] &&
                !(s->blocks[side][i] = blocks_dup(src->blocks[side][i],
                                                  src->blocks[side][i][-1])))
                return -1;
        if (src->uneven && rd_layout_copy(&s->lay[side], &src->lay[side]))
            return -1;
    }
    return 0;
}

redist_status_t rd_spec_set_layout(redist_spec_t *s, int side,
                                   redist_split_t split,
                                   const int64_t *const blocks[],
                                   const int64_t counts[])
{
    s->split[side] = split;
    for (int i = 0; i < REDIST_MAX_DIMS; i++) {
        blocks_free(s->blocks[side][i]);
        s->blocks[side][i] = NULL;
        if (i < s->ndims && blocks && blocks[i] &&
            !(s->blocks[side][i] = blocks_dup(blocks[i], counts[i])))
            return REDIST_ERR_NOMEM;
    }
    return REDIST_OK;
}

/* redist_spec_create, with the two placed meshes `two` (NULL: one mesh;
 * taken over, freed on failure) and the loaders' flags. */
redist_status_t rd_spec_new(const redist_mesh_t *mesh, int ndims,
                            const int64_t shape[], redist_dtype_t dtype,
                            const redist_type_t *from,
                            const redist_type_t *to, redist_reduce_t reduce,
                            const char *name, rd_meshes *two, unsigned flags,
                            redist_spec_t **out, redist_error_t *err)
{
    if (!mesh || !from || !to || !out || (ndims > 0 && !shape)) {
        rd_meshes_free(two);
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    }
    if (ndims < 0 || ndims > REDIST_MAX_DIMS) {
        rd_meshes_free(two);
        return rd_error(err, REDIST_ERR_INVALID, NULL, "shape",
                        "an array has 0 to %d dims, not %d", REDIST_MAX_DIMS,
                        ndims);
    }
    redist_spec_t *s = calloc(1, sizeof *s);
    if (!s) {
        rd_meshes_free(two);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    s->two = two;
    s->mesh = *mesh;
    s->ndims = ndims;
    for (int i = 0; i < ndims; i++)
        s->shape[i] = shape[i];
    s->dtype = dtype;
    s->reduce = reduce;
    s->from = *from;
    s->to = *to;
    s->name = rd_strdup(name ? name : "");
    redist_status_t st =
        s->name ? rd_spec_finish(s, flags, err)
                : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (st) {
        redist_spec_free(s);
        return st;
    }
    *out = s;
    return REDIST_OK;
}

redist_status_t redist_spec_create(const redist_mesh_t *mesh, int ndims,
                                   const int64_t shape[], redist_dtype_t dtype,
                                   const redist_type_t *from,
                                   const redist_type_t *to,
                                   redist_reduce_t reduce, const char *name,
                                   redist_spec_t **out, redist_error_t *err)
{
    return rd_spec_new(mesh, ndims, shape, dtype, from, to, reduce, name, NULL,
                       0, out, err);
}

redist_status_t redist_spec_create_meshes(
    const redist_placed_mesh_t *from_mesh,
    const redist_placed_mesh_t *to_mesh, int ndims, const int64_t shape[],
    redist_dtype_t dtype, const redist_type_t *from, const redist_type_t *to,
    redist_reduce_t reduce, const char *name, redist_spec_t **out,
    redist_error_t *err)
{
    static const char *const dflt[2] = {"from", "to"};
    if (!from_mesh || !to_mesh || !from_mesh->mesh || !to_mesh->mesh)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    rd_meshes *m = calloc(1, sizeof *m);
    if (!m)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int side = 0; side < 2; side++) {
        const redist_placed_mesh_t *p = side ? to_mesh : from_mesh;
        const char *nm = p->name ? p->name : dflt[side];
        char why[200];
        if (rd_mesh_name_problem(nm, why, sizeof why)) {
            rd_meshes_free(m);
            return rd_error(err, REDIST_ERR_INVALID, NULL,
                            side ? "to_mesh.name" : "from_mesh.name", "%s",
                            why);
        }
        snprintf(m->name[side], sizeof m->name[side], "%s", nm);
        m->mesh[side] = *p->mesh;
        if (p->mesh->ndevices > RD_MESHES_MAX_DEVICES) {
            rd_meshes_free(m);
            return rd_error(err, REDIST_ERR_LIMIT, NULL,
                            side ? "to_mesh" : "from_mesh",
                            "%lld devices; a mesh of a two-mesh spec has at "
                            "most %lld",
                            (long long)p->mesh->ndevices,
                            (long long)RD_MESHES_MAX_DEVICES);
        }
        size_t n = (size_t)p->mesh->ndevices;
        if (!(m->dev[side] = malloc(n * sizeof *m->dev[side]))) {
            rd_meshes_free(m);
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        }
        for (size_t r = 0; r < n; r++)
            m->dev[side][r] = p->devices ? p->devices[r] : (int64_t)r;
    }
    if (!strcmp(m->name[0], m->name[1])) {
        int same = m->mesh[0].naxes == m->mesh[1].naxes &&
                   m->mesh[0].ndevices == m->mesh[1].ndevices;
        for (int a = 0; same && a < m->mesh[0].naxes; a++)
            same = m->mesh[0].size[a] == m->mesh[1].size[a] &&
                   !strcmp(m->mesh[0].name[a], m->mesh[1].name[a]);
        for (int64_t r = 0; same && r < m->mesh[0].ndevices; r++)
            same = m->dev[0][r] == m->dev[1][r];
        if (!same) {
            rd_meshes_free(m);
            return rd_error(err, REDIST_ERR_INVALID, NULL, "to_mesh.name",
                            "two different meshes have the same name "
                            "\"%s\"",
                            from_mesh->name ? from_mesh->name : "from");
        }
    }
    return rd_spec_new(from_mesh->mesh, ndims, shape, dtype, from, to,
                       reduce, name, m, 0, out, err);
}

redist_spec_t *rd_spec_clone(const redist_spec_t *src)
{
    /* every byte is copied next (a plan clones its spec: no need to
     * clear them first) */
    redist_spec_t *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    *s = *src;
    s->name = NULL;
    s->ops = NULL;
    s->expect.ops = NULL;
    s->expect.nops = 0;
    s->expect.has_ops = 0;
    s->name = rd_strdup(src->name);
    if (rd_meshes_copy(&s->two, src->two) | spec_layouts_copy(s, src) ||
        !s->name)
        goto fail;
    if (src->expect.has_ops) {
        s->ops = calloc((size_t)src->expect.nops + 1, sizeof *s->ops);
        if (!s->ops)
            goto fail;
        for (int i = 0; i < src->expect.nops; i++) {
            s->ops[i] = rd_strdup(src->ops[i]);
            if (!s->ops[i])
                goto fail;
            s->expect.nops = i + 1;
        }
        s->expect.has_ops = 1;
        s->expect.nops = src->expect.nops;
        s->expect.ops = (const char *const *)s->ops;
    }
    return s;
fail:
    redist_spec_free(s);
    return NULL;
}

void redist_spec_free(redist_spec_t *spec)
{
    if (!spec)
        return;
    if (spec->ops) {
        for (int i = 0; spec->ops[i]; i++)
            free(spec->ops[i]);
        free(spec->ops);
    }
    spec_layouts_free(spec);
    rd_meshes_free(spec->two);
    free(spec->name);
    free(spec);
}

const char *redist_spec_name(const redist_spec_t *spec)
{
    return spec && spec->name ? spec->name : "";
}
const redist_mesh_t *redist_spec_mesh(const redist_spec_t *spec)
{
    return spec ? &spec->mesh : NULL;
}
int redist_spec_ndims(const redist_spec_t *spec)
{
    return spec ? spec->ndims : -1;
}
const int64_t *redist_spec_shape(const redist_spec_t *spec)
{
    return spec ? spec->shape : NULL;
}
redist_dtype_t redist_spec_dtype(const redist_spec_t *spec)
{
    return spec ? spec->dtype : REDIST_DTYPE_COUNT;
}
redist_reduce_t redist_spec_reduce(const redist_spec_t *spec)
{
    return spec ? spec->reduce : REDIST_REDUCE_COUNT;
}
const redist_type_t *redist_spec_from(const redist_spec_t *spec)
{
    return spec ? &spec->from : NULL;
}
const redist_type_t *redist_spec_to(const redist_spec_t *spec)
{
    return spec ? &spec->to : NULL;
}
uint64_t redist_spec_src_bytes(const redist_spec_t *spec)
{
    return spec ? spec->src_bytes : 0;
}
uint64_t redist_spec_dst_bytes(const redist_spec_t *spec)
{
    return spec ? spec->dst_bytes : 0;
}
void redist_spec_expect(const redist_spec_t *spec, redist_expect_t *out)
{
    if (!out)
        return;
    if (!spec)
        memset(out, 0, sizeof *out);
    else
        *out = spec->expect;
}

redist_status_t redist_spec_with_layouts(const redist_spec_t *spec,
                                         const redist_layout_t *from,
                                         const redist_layout_t *to,
                                         redist_spec_t **out,
                                         redist_error_t *err)
{
    if (!spec || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_spec_t *s = rd_spec_clone(spec);
    if (!s)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    redist_status_t st = REDIST_OK;
    for (int side = 0; side < 2 && !st; side++) {
        const redist_layout_t *l = side ? to : from;
        rd_layout_free(&s->lay[side]);
        st = rd_spec_set_layout(s, side, l ? l->split : REDIST_SPLIT_CEIL,
                                l ? l->blocks : NULL, l ? l->nblocks : NULL);
        if (st)
            rd_error(err, st, NULL, NULL, "out of memory");
    }
    if (!st)
        st = rd_spec_finish(s, REDIST_SPEC_ALLOW_UNPLANNABLE, err);
    if (st) {
        redist_spec_free(s);
        return st;
    }
    *out = s;
    return REDIST_OK;
}

int redist_spec_num_meshes(const redist_spec_t *spec)
{
    return spec ? 1 + (spec->two != NULL) : 0;
}

const redist_mesh_t *redist_spec_side_mesh(const redist_spec_t *spec,
                                           int side)
{
    return spec && (side == 0 || side == 1) ? rd_spec_side_mesh(spec, side)
                                            : NULL;
}

const char *redist_spec_mesh_name(const redist_spec_t *spec, int side)
{
    return spec && spec->two && (side == 0 || side == 1)
               ? spec->two->name[side]
               : "";
}

int64_t redist_spec_mesh_device(const redist_spec_t *spec, int side,
                                int64_t rank)
{
    if (!spec || (side != 0 && side != 1) || rank < 0 ||
        rank >= rd_spec_side_mesh(spec, side)->ndevices)
        return -1;
    return spec->two ? spec->two->dev[side][rank] : rank;
}

int64_t redist_spec_num_devices(const redist_spec_t *spec)
{
    return !spec ? 0 : spec->two ? spec->two->ndevices : spec->mesh.ndevices;
}

int redist_spec_is_uneven(const redist_spec_t *spec)
{
    return spec ? spec->uneven : 0;
}

redist_split_t redist_spec_split(const redist_spec_t *spec, int side)
{
    return spec && (side == 0 || side == 1) ? spec->split[side]
                                            : REDIST_SPLIT_COUNT;
}

int64_t redist_spec_block_lengths(const redist_spec_t *spec, int side,
                                  int dim, int64_t lengths[], int64_t n)
{
    if (!spec || (side != 0 && side != 1) || dim < 0 || dim >= spec->ndims ||
        n < 0 || (n > 0 && !lengths))
        return -1;
    int64_t k = type_blocks(spec, side, dim);
    for (int64_t j = 0; j < k && j < n; j++)
        lengths[j] = spec->uneven ? spec->lay[side].b[dim][j + 1] -
                                        spec->lay[side].b[dim][j]
                                  : spec->shape[dim] / k;
    return k;
}

uint64_t redist_spec_device_bytes(const redist_spec_t *spec, int side,
                                  int64_t rank)
{
    int64_t coord[REDIST_MAX_AXES];
    if (!spec || (side != 0 && side != 1))
        return 0;
    int64_t r = rd_spec_mesh_rank(spec, side, rank);
    if (r < 0)
        return 0; /* not in that side's mesh: holds nothing of it */
    redist_mesh_coords(rd_spec_side_mesh(spec, side), r, coord);
    return rd_spec_device_bytes(spec, side, coord);
}
