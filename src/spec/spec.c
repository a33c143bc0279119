/*
 * Redistribution problems built from C values; accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

static char *rd_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

uint64_t rd_spec_type_bytes(const redist_spec_t *s, const redist_type_t *t)
{
    uint64_t e = 1;
    for (int i = 0; i < s->ndims; i++) {
        uint64_t p = 1;
        for (int k = 0; k < t->dim_naxes[i]; k++)
            p *= (uint64_t)s->mesh.size[t->dims[i][k]];
        e *= (uint64_t)s->shape[i] / p;
    }
    return e * s->elem_size; /* <= global bytes, checked at creation */
}

redist_status_t rd_spec_partial_check(const redist_spec_t *s,
                                      redist_error_t *err)
{
    uint32_t extra = s->to.partial & ~s->from.partial;
    for (int a = 0; a < s->mesh.naxes; a++)
        if (s->mesh.size[a] == 1)
            extra &= ~(1u << a); /* a reduction over one device: none */
    if (!extra)
        return REDIST_OK;
    return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, "to.partial",
                    "axis \"%s\" is partial in the target but not in the "
                    "source; no collective creates pending reductions",
                    s->mesh.name[__builtin_ctz(extra)]);
}

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
    st = redist_type_validate(&s->from, &s->mesh, s->ndims, s->shape, "from",
                              err);
    if (st)
        return st;
    st = redist_type_validate(&s->to, &s->mesh, s->ndims, s->shape, "to",
                              err);
    if (st)
        return st;
    if (!(flags & REDIST_SPEC_ALLOW_UNPLANNABLE) &&
        (st = rd_spec_partial_check(s, err)))
        return st;
    s->src_bytes = rd_spec_type_bytes(s, &s->from);
    s->dst_bytes = rd_spec_type_bytes(s, &s->to);
    return REDIST_OK;
}

redist_status_t redist_spec_create(const redist_mesh_t *mesh, int ndims,
                                   const int64_t shape[], redist_dtype_t dtype,
                                   const redist_type_t *from,
                                   const redist_type_t *to,
                                   redist_reduce_t reduce, const char *name,
                                   redist_spec_t **out, redist_error_t *err)
{
    if (!mesh || !from || !to || !out || (ndims > 0 && !shape))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    if (ndims < 0 || ndims > REDIST_MAX_DIMS)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "shape",
                        "an array has 0 to %d dims, not %d", REDIST_MAX_DIMS,
                        ndims);
    redist_spec_t *s = calloc(1, sizeof *s);
    if (!s)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    s->mesh = *mesh;
    s->ndims = ndims;
    for (int i = 0; i < ndims; i++)
        s->shape[i] = shape[i];
    s->dtype = dtype;
    s->reduce = reduce;
    s->from = *from;
    s->to = *to;
    s->name = rd_strdup(name ? name : "");
    if (!s->name) {
        free(s);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    redist_status_t st = rd_spec_finish(s, 0, err);
    if (st) {
        redist_spec_free(s);
        return st;
    }
    *out = s;
    return REDIST_OK;
}

redist_spec_t *rd_spec_clone(const redist_spec_t *src)
{
    redist_spec_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    *s = *src;
    s->name = NULL;
    s->ops = NULL;
    s->expect.ops = NULL;
    s->expect.nops = 0;
    s->expect.has_ops = 0;
    s->name = rd_strdup(src->name);
    if (!s->name)
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
