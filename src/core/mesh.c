/*
 * Meshes (ordered named axes, row-major ranks) and sharding types.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *rd_control_char(const char *s, unsigned *cp)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            *cp = *p;
            return (const char *)p;
        }
        if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1, UTF-8 */
            *cp = p[1];
            return (const char *)p;
        }
    }
    return NULL;
}

const char *rd_axis_name_problem(const char *name, char *why, size_t size)
{
    unsigned cp = 0;
    const char *sep = strpbrk(name, ",|=");
    const char *ctl = rd_control_char(name, &cp);
    if (sep)
        snprintf(why, size,
                 "axis name \"%.40s\" contains '%c' (',', '|' and '=' "
                 "separate axes, dims and sizes in the inline and printed "
                 "forms)",
                 ctl ? "..." : name, *sep);
    else if (ctl)
        snprintf(why, size,
                 "axis name contains the control character U+%04X at byte "
                 "%zu",
                 cp, (size_t)(ctl - name) + 1);
    else
        return NULL;
    return why;
}

redist_status_t redist_mesh_create(int naxes, const char *const names[],
                                   const int64_t sizes[], redist_mesh_t **out,
                                   redist_error_t *err)
{
    char path[32];
    if (!out || (naxes > 0 && (!names || !sizes)))
        return rd_error(err, REDIST_ERR_INVALID, NULL, "mesh",
                        "NULL argument");
    if (naxes < 1 || naxes > REDIST_MAX_AXES)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "mesh",
                        "a mesh has 1 to %d axes, not %d", REDIST_MAX_AXES,
                        naxes);
    redist_mesh_t *m = calloc(1, sizeof *m);
    if (!m)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    m->naxes = naxes;
    uint64_t devices = 1;
    for (int a = 0; a < naxes; a++) {
        snprintf(path, sizeof path, "mesh[%d]", a);
        const char *nm = names[a];
        size_t len = nm ? strlen(nm) : 0;
        if (len == 0 || len > REDIST_MAX_NAME) {
            free(m);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "axis name must have 1 to %d bytes",
                            REDIST_MAX_NAME);
        }
        char why[160];
        if (rd_axis_name_problem(nm, why, sizeof why)) {
            free(m);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path, "%s", why);
        }
        for (int b = 0; b < a; b++)
            if (strcmp(m->name[b], nm) == 0) {
                free(m);
                return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                "duplicate mesh axis \"%s\" (also mesh[%d])",
                                nm, b);
            }
        if (sizes[a] < 1) {
            free(m);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "axis \"%s\" has size %lld; sizes must be positive integers",
                            nm, (long long)sizes[a]);
        }
        if (rd_mul_u64(devices, (uint64_t)sizes[a], &devices) ||
            devices > (uint64_t)REDIST_MAX_DEVICES) {
            free(m);
            return rd_error(err, REDIST_ERR_OVERFLOW, NULL, path,
                            "the mesh has more than %lld devices (overflow "
                            "at axis \"%s\")",
                            (long long)REDIST_MAX_DEVICES, nm);
        }
        rd_strlcpy(m->name[a], nm, sizeof m->name[a]);
        m->size[a] = sizes[a];
    }
    m->ndevices = (int64_t)devices;
    int64_t stride = 1;
    for (int a = naxes - 1; a >= 0; a--) {
        m->stride[a] = stride;
        stride *= m->size[a];
    }
    *out = m;
    return REDIST_OK;
}

redist_mesh_t *rd_mesh_clone(const redist_mesh_t *mesh)
{
    redist_mesh_t *m = malloc(sizeof *m);
    if (m)
        memcpy(m, mesh, sizeof *m);
    return m;
}

void redist_mesh_free(redist_mesh_t *mesh) { free(mesh); }

int redist_mesh_num_axes(const redist_mesh_t *mesh)
{
    return mesh ? mesh->naxes : 0;
}

const char *redist_mesh_axis_name(const redist_mesh_t *mesh, int axis)
{
    if (!mesh || axis < 0 || axis >= mesh->naxes)
        return NULL;
    return mesh->name[axis];
}

int64_t redist_mesh_axis_size(const redist_mesh_t *mesh, int axis)
{
    if (!mesh || axis < 0 || axis >= mesh->naxes)
        return 0;
    return mesh->size[axis];
}

int64_t redist_mesh_num_devices(const redist_mesh_t *mesh)
{
    return mesh ? mesh->ndevices : 0;
}

int redist_mesh_find_axis(const redist_mesh_t *mesh, const char *name)
{
    if (!mesh || !name)
        return -1;
    for (int a = 0; a < mesh->naxes; a++)
        if (strcmp(mesh->name[a], name) == 0)
            return a;
    return -1;
}

int64_t redist_mesh_rank(const redist_mesh_t *mesh, const int64_t coords[])
{
    int64_t r = 0;
    if (!mesh || !coords)
        return -1;
    for (int a = 0; a < mesh->naxes; a++) {
        if (coords[a] < 0 || coords[a] >= mesh->size[a])
            return -1;
        r += coords[a] * mesh->stride[a];
    }
    return r;
}

void redist_mesh_coords(const redist_mesh_t *mesh, int64_t rank,
                        int64_t coords[])
{
    if (!mesh || !coords)
        return;
    for (int a = 0; a < mesh->naxes; a++)
        coords[a] = rank < 0 || rank >= mesh->ndevices
                        ? -1
                        : (rank / mesh->stride[a]) % mesh->size[a];
}

/* -------------------------------------------------------------- types */

void redist_type_init(redist_type_t *type, int ndims)
{
    if (!type)
        return;
    memset(type, 0, sizeof *type);
    type->ndims = ndims < 0 ? 0 : ndims > REDIST_MAX_DIMS ? REDIST_MAX_DIMS
                                                           : ndims;
}

/* The fixed limits of a caller-filled value, before anything indexes by
 * its fields. */
static int type_in_limits(const redist_type_t *t)
{
    if (t->ndims < 0 || t->ndims > REDIST_MAX_DIMS)
        return 0;
    for (int i = 0; i < t->ndims; i++)
        if (t->dim_naxes[i] > REDIST_MAX_AXES)
            return 0;
    return 1;
}

redist_status_t redist_type_push_axis(redist_type_t *type, int dim, int axis)
{
    if (!type || !type_in_limits(type) || dim < 0 || dim >= type->ndims ||
        axis < 0 || axis >= REDIST_MAX_AXES ||
        type->dim_naxes[dim] >= REDIST_MAX_AXES)
        return REDIST_ERR_INVALID;
    type->dims[dim][type->dim_naxes[dim]++] = (uint8_t)axis;
    return REDIST_OK;
}

redist_status_t redist_type_add_partial(redist_type_t *type, int axis)
{
    if (!type || !type_in_limits(type) || axis < 0 || axis >= REDIST_MAX_AXES)
        return REDIST_ERR_INVALID;
    type->partial |= 1u << axis;
    return REDIST_OK;
}

int redist_type_equal(const redist_type_t *a, const redist_type_t *b)
{
    if (!a || !b || !type_in_limits(a) || !type_in_limits(b) ||
        a->ndims != b->ndims || a->partial != b->partial)
        return 0;
    for (int i = 0; i < a->ndims; i++) {
        if (a->dim_naxes[i] != b->dim_naxes[i])
            return 0;
        if (memcmp(a->dims[i], b->dims[i], a->dim_naxes[i]) != 0)
            return 0;
    }
    return 1;
}

/* The type without its size-1 axes (see redist_type_equivalent). */
static void type_drop_trivial(const redist_type_t *t, const redist_mesh_t *m,
                              redist_type_t *out)
{
    redist_type_init(out, t->ndims);
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++)
            if (m->size[t->dims[i][k]] > 1)
                out->dims[i][out->dim_naxes[i]++] = t->dims[i][k];
    for (int a = 0; a < m->naxes; a++)
        if ((t->partial >> a & 1u) && m->size[a] > 1)
            out->partial |= 1u << a;
}

int redist_type_equivalent(const redist_type_t *a, const redist_type_t *b,
                           const redist_mesh_t *mesh)
{
    redist_type_t ca, cb;
    if (!a || !b || !mesh || a->ndims != b->ndims ||
        rd_type_check(a, mesh, a->ndims, NULL, NULL, NULL) ||
        rd_type_check(b, mesh, b->ndims, NULL, NULL, NULL))
        return 0;
    type_drop_trivial(a, mesh, &ca);
    type_drop_trivial(b, mesh, &cb);
    return redist_type_equal(&ca, &cb);
}

redist_status_t rd_type_check(const redist_type_t *type,
                              const redist_mesh_t *mesh, int ndims,
                              const int64_t shape[], const char *what,
                              redist_error_t *err)
{
    char path[64];
    if (!what)
        what = "type";
    if (!type || !mesh)
        return rd_error(err, REDIST_ERR_INVALID, NULL, what, "NULL argument");
    if (type->ndims != ndims || ndims < 0 || ndims > REDIST_MAX_DIMS) {
        snprintf(path, sizeof path, "%.40s.dims", what);
        return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                        "rank mismatch: %d dims given, the array has %d",
                        type->ndims, ndims);
    }
    int used_where[REDIST_MAX_AXES];
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        used_where[a] = -2;
    if (type->partial >> mesh->naxes) {
        snprintf(path, sizeof path, "%.40s.partial", what);
        return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                        "partial names an axis index beyond the mesh's %d "
                        "axes",
                        mesh->naxes);
    }
    for (int a = 0; a < mesh->naxes; a++)
        if (type->partial >> a & 1u)
            used_where[a] = -1;
    for (int i = 0; i < ndims; i++) {
        uint64_t prod = 1;
        if (type->dim_naxes[i] > mesh->naxes) {
            snprintf(path, sizeof path, "%.40s.dims[%d]", what, i);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "%d axes listed, the mesh has %d",
                            type->dim_naxes[i], mesh->naxes);
        }
        for (int k = 0; k < type->dim_naxes[i]; k++) {
            int a = type->dims[i][k];
            snprintf(path, sizeof path, "%.40s.dims[%d][%d]", what, i, k);
            if (a >= mesh->naxes)
                return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                "axis index %d is not in the mesh (%d axes)",
                                a, mesh->naxes);
            if (used_where[a] != -2) {
                if (used_where[a] == -1)
                    return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                    "axis \"%s\" is used twice (it is also "
                                    "partial)",
                                    mesh->name[a]);
                return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                                "axis \"%s\" is used twice (also in dim %d)",
                                mesh->name[a], used_where[a]);
            }
            used_where[a] = i;
            prod *= (uint64_t)mesh->size[a]; /* <= device count, no overflow */
        }
        if (!shape)
            continue;
        if (shape[i] < 1) {
            snprintf(path, sizeof path, "shape[%d]", i);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "dim %d has size %lld; sizes must be positive integers", i,
                            (long long)shape[i]);
        }
        if ((uint64_t)shape[i] % prod != 0) {
            char axes[256];
            size_t pos = 0;
            axes[0] = '\0';
            for (int k = 0; k < type->dim_naxes[i]; k++)
                rd_appendf(axes, sizeof axes, &pos, "%s%s=%lld",
                           k ? "*" : "", mesh->name[type->dims[i][k]],
                           (long long)mesh->size[type->dims[i][k]]);
            snprintf(path, sizeof path, "%.40s.dims[%d]", what, i);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "dim %d (size %lld) is not divisible by %llu "
                            "(%s); uneven sharding is not supported",
                            i, (long long)shape[i], (unsigned long long)prod,
                            axes);
        }
    }
    return REDIST_OK;
}

redist_status_t redist_type_validate(const redist_type_t *type,
                                     const redist_mesh_t *mesh, int ndims,
                                     const int64_t shape[], const char *what,
                                     redist_error_t *err)
{
    if (ndims > 0 && !shape)
        return rd_error(err, REDIST_ERR_INVALID, NULL, what ? what : "type",
                        "NULL argument");
    /* with ndims 0 a NULL shape is fine: no dim to divide */
    return rd_type_check(type, mesh, ndims, shape, what, err);
}

redist_status_t redist_type_local_shape(const redist_type_t *type,
                                        const redist_mesh_t *mesh,
                                        const int64_t shape[],
                                        int64_t local[])
{
    if (!type || !local || (type->ndims > 0 && !shape) ||
        rd_type_check(type, mesh, type->ndims, shape, NULL, NULL))
        return REDIST_ERR_INVALID;
    for (int i = 0; i < type->ndims; i++) {
        int64_t p = 1;
        for (int k = 0; k < type->dim_naxes[i]; k++)
            p *= mesh->size[type->dims[i][k]];
        local[i] = shape[i] / p;
    }
    return REDIST_OK;
}

char *redist_type_format(const redist_type_t *type, const redist_mesh_t *mesh,
                         char *buf, size_t size)
{
    size_t pos = 0;
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    if (!type)
        return buf;
    if (!type_in_limits(type)) {
        rd_appendf(buf, size, &pos, "(invalid type)");
        return buf;
    }
    rd_appendf(buf, size, &pos, "[");
    for (int i = 0; i < type->ndims; i++) {
        rd_appendf(buf, size, &pos, "%s{", i ? ", " : "");
        for (int k = 0; k < type->dim_naxes[i]; k++) {
            int a = type->dims[i][k];
            const char *nm = redist_mesh_axis_name(mesh, a);
            if (nm)
                rd_appendf(buf, size, &pos, "%s%s", k ? "," : "", nm);
            else
                rd_appendf(buf, size, &pos, "%s#%d", k ? "," : "", a);
        }
        rd_appendf(buf, size, &pos, "}");
    }
    rd_appendf(buf, size, &pos, "]");
    if (type->partial) {
        rd_appendf(buf, size, &pos, " partial{");
        int first = 1;
        for (int a = 0; a < 32; a++)
            if (type->partial >> a & 1u) {
                const char *nm = redist_mesh_axis_name(mesh, a);
                if (nm)
                    rd_appendf(buf, size, &pos, "%s%s", first ? "" : ",", nm);
                else
                    rd_appendf(buf, size, &pos, "%s#%d", first ? "" : ",", a);
                first = 0;
            }
        rd_appendf(buf, size, &pos, "}");
    }
    return buf;
}

char *redist_shape_format(const int64_t shape[], int ndims, char *buf,
                          size_t size)
{
    size_t pos = 0;
    if (!buf || !size)
        return buf;
    buf[0] = '\0';
    if (!shape || ndims < 0 || ndims > REDIST_MAX_DIMS)
        return buf;
    rd_appendf(buf, size, &pos, "[");
    for (int i = 0; i < ndims; i++)
        rd_appendf(buf, size, &pos, "%s%lld", i ? "," : "",
                   (long long)shape[i]);
    rd_appendf(buf, size, &pos, "]");
    return buf;
}

char *redist_mesh_format(const redist_mesh_t *mesh, char *buf, size_t size)
{
    rd_mesh_format(mesh, buf, size);
    return buf;
}

void rd_mesh_format(const redist_mesh_t *m, char *buf, size_t size)
{
    size_t pos = 0;
    if (!buf || !size)
        return;
    buf[0] = '\0';
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        rd_appendf(buf, size, &pos, "%s%s=%lld", a ? "," : "",
                   redist_mesh_axis_name(m, a),
                   (long long)redist_mesh_axis_size(m, a));
}
