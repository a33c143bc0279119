/*
 * The exact test pattern (see pattern.h for the values).  Each device's
 * block is its box of the side's layout (uneven dims: doc/spec-format.md section
 * 7), filled and checked by global index.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../exec/kernels.h"
#include "../spec/spec_internal.h"
#include "pattern.h"

typedef struct pat {
    redist_dtype_t dtype;
    redist_reduce_t op;
    size_t elem;
    int64_t P, lo, hi;
    int64_t k;       /* linear coordinate over the kept partial axes */
    int64_t q, Q;    /* ... over the reduced ones (source only) */
} pat;

static void dtype_range(redist_dtype_t dt, int64_t *P, int64_t *lo,
                        int64_t *hi)
{
    *lo = -1;
    switch (dt) {
    case REDIST_F16: *P = 2048; *hi = 2048; break;
    case REDIST_BF16: *P = 256; *hi = 256; break;
    case REDIST_F32: case REDIST_C64: *P = 1LL << 24; *hi = *P; break;
    case REDIST_F64: case REDIST_C128: *P = 1LL << 53; *hi = *P; break;
    case REDIST_I8: *P = 128; *hi = 127; break;
    case REDIST_I16: *P = 1LL << 15; *hi = *P - 1; break;
    case REDIST_I32: *P = 1LL << 31; *hi = *P - 1; break;
    case REDIST_I64: *P = 1LL << 62; *hi = INT64_MAX; break;
    case REDIST_U8: *P = 256; *lo = 0; *hi = 255; break;
    case REDIST_U16: *P = 1LL << 16; *lo = 0; *hi = *P - 1; break;
    case REDIST_U32: *P = 1LL << 32; *lo = 0; *hi = *P - 1; break;
    default: *P = 1LL << 62; *lo = 0; *hi = *P; break; /* u64 */
    }
}

static void encode(redist_dtype_t dt, int64_t re, int64_t im,
                   unsigned char *out)
{
    switch (dt) {
    case REDIST_F16: {
        uint16_t h = rd_f32_to_f16((float)re);
        memcpy(out, &h, 2);
        break;
    }
    case REDIST_BF16: {
        uint16_t h = rd_f32_to_bf16((float)re);
        memcpy(out, &h, 2);
        break;
    }
    case REDIST_F32: {
        float f = (float)re;
        memcpy(out, &f, 4);
        break;
    }
    case REDIST_F64: {
        double f = (double)re;
        memcpy(out, &f, 8);
        break;
    }
    case REDIST_C64: {
        float f[2] = {(float)re, (float)im};
        memcpy(out, f, 8);
        break;
    }
    case REDIST_C128: {
        double f[2] = {(double)re, (double)im};
        memcpy(out, f, 16);
        break;
    }
    case REDIST_I8: case REDIST_U8: {
        uint8_t v = (uint8_t)re;
        memcpy(out, &v, 1);
        break;
    }
    case REDIST_I16: case REDIST_U16: {
        uint16_t v = (uint16_t)re;
        memcpy(out, &v, 2);
        break;
    }
    case REDIST_I32: case REDIST_U32: {
        uint32_t v = (uint32_t)re;
        memcpy(out, &v, 4);
        break;
    }
    default: {
        uint64_t v = (uint64_t)re;
        memcpy(out, &v, 8);
        break;
    }
    }
}

static void format_value(redist_dtype_t dt, const unsigned char *p, char *buf,
                         size_t n)
{
    switch (dt) {
    case REDIST_F16: case REDIST_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        snprintf(buf, n, "%.9g (0x%04x)",
                 (double)(dt == REDIST_F16 ? rd_f16_to_f32(h)
                                           : rd_bf16_to_f32(h)),
                 (unsigned)h);
        break;
    }
    case REDIST_F32: {
        float f;
        memcpy(&f, p, 4);
        snprintf(buf, n, "%.9g", (double)f);
        break;
    }
    case REDIST_F64: {
        double f;
        memcpy(&f, p, 8);
        snprintf(buf, n, "%.17g", f);
        break;
    }
    case REDIST_C64: {
        float f[2];
        memcpy(f, p, 8);
        snprintf(buf, n, "(%.9g, %.9g)", (double)f[0], (double)f[1]);
        break;
    }
    case REDIST_C128: {
        double f[2];
        memcpy(f, p, 16);
        snprintf(buf, n, "(%.17g, %.17g)", f[0], f[1]);
        break;
    }
    case REDIST_I8: { int8_t v; memcpy(&v, p, 1); snprintf(buf, n, "%d", v); break; }
    case REDIST_U8: { uint8_t v; memcpy(&v, p, 1); snprintf(buf, n, "%u", v); break; }
    case REDIST_I16: { int16_t v; memcpy(&v, p, 2); snprintf(buf, n, "%d", v); break; }
    case REDIST_U16: { uint16_t v; memcpy(&v, p, 2); snprintf(buf, n, "%u", v); break; }
    case REDIST_I32: { int32_t v; memcpy(&v, p, 4); snprintf(buf, n, "%" PRId32, v); break; }
    case REDIST_U32: { uint32_t v; memcpy(&v, p, 4); snprintf(buf, n, "%" PRIu32, v); break; }
    case REDIST_I64: { int64_t v; memcpy(&v, p, 8); snprintf(buf, n, "%" PRId64, v); break; }
    default: { uint64_t v; memcpy(&v, p, 8); snprintf(buf, n, "%" PRIu64, v); break; }
    }
}

/* The element of global index g (source contribution when pt->Q > 1). */
static void value(const pat *pt, uint64_t g, unsigned char *out)
{
    uint64_t P = (uint64_t)pt->P;
    int64_t re = (int64_t)((g + 7919u * (uint64_t)pt->k) % P);
    int64_t im = (int64_t)((g / P + 31u * (uint64_t)pt->k + 1u) % P);
    if (pt->Q > 1) {
        int64_t Q = pt->Q, q = pt->q;
        int holder = (int64_t)((g + (uint64_t)pt->k) % (uint64_t)Q) == q;
        switch (pt->op) {
        case REDIST_REDUCE_SUM:
            re = re / Q + (q < re % Q);
            im = im / Q + (q < im % Q);
            break;
        case REDIST_REDUCE_PROD:
            if (!holder) {
                re = 1;
                im = 0;
            }
            break;
        case REDIST_REDUCE_MAX:
            if (!holder) {
                re = pt->lo;
                im = 0;
            }
            break;
        default:
            if (!holder) {
                re = pt->hi;
                im = 0;
            }
            break;
        }
    }
    encode(pt->dtype, re, im, out);
}

/* Linear coordinate of `coords` over the axes in `mask` (mesh order). */
static int64_t linear(const redist_mesh_t *m, uint32_t mask,
                      const int64_t *coords, int64_t *count)
{
    int64_t q = 0, n = 1;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (mask >> a & 1u) {
            q = q * redist_mesh_axis_size(m, a) + coords[a];
            n *= redist_mesh_axis_size(m, a);
        }
    if (count)
        *count = n;
    return q;
}

/* Walk device `rank`'s block of type t: fn(user, local index, local
 * coords, global index, global coords) for every element in order;
 * stops when fn returns non-zero.  A 0-dim (scalar) array has one
 * element, of index 0 and no coordinates. */
typedef int (*visit_fn)(void *user, uint64_t li, const int64_t *lc,
                        uint64_t g, const int64_t *gc);

static int walk(const redist_spec_t *spec, int side, int64_t rank,
                visit_fn fn, void *user)
{
    /* a two-mesh spec: `rank` is a global device, and holds nothing of a
     * side whose mesh it is not in */
    const redist_mesh_t *m = redist_spec_side_mesh(spec, side);
    rank = rd_spec_mesh_rank(spec, side, rank);
    if (rank < 0)
        return 0;
    int nd = redist_spec_ndims(spec);
    const int64_t *shape = redist_spec_shape(spec);
    int64_t l[REDIST_MAX_DIMS], base[REDIST_MAX_DIMS], c[REDIST_MAX_AXES];
    int64_t idx[REDIST_MAX_DIMS] = {0}, gc[REDIST_MAX_DIMS] = {0};
    uint64_t gs[REDIST_MAX_DIMS];
    const redist_type_t *t = side ? redist_spec_to(spec)
                                  : redist_spec_from(spec);
    if (nd == 0)
        return fn(user, 0, idx, 0, gc);
    if (spec->uneven) { /* the device's box in the side's layout */
        int64_t hi[REDIST_MAX_DIMS];
        rd_layout_box(&spec->lay[side], t, m, rank, base, hi);
        for (int i = 0; i < nd; i++) {
            l[i] = hi[i] - base[i];
            if (l[i] == 0)
                return 0; /* an empty block */
        }
    } else {
        redist_type_local_shape(t, m, shape, l);
        redist_mesh_coords(m, rank, c);
        for (int i = 0; i < nd; i++) {
            int64_t b = 0;
            for (int k = 0; k < t->dim_naxes[i]; k++) {
                int a = t->dims[i][k];
                b = b * redist_mesh_axis_size(m, a) + c[a];
            }
            base[i] = b * l[i];
        }
    }
    gs[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--)
        gs[i] = gs[i + 1] * (uint64_t)shape[i + 1];
    uint64_t li = 0;
    for (;;) {
        uint64_t g = 0;
        for (int i = 0; i < nd; i++) {
            gc[i] = base[i] + idx[i];
            g += (uint64_t)gc[i] * gs[i];
        }
        /* the last dim: consecutive in both */
        for (int64_t e = 0; e < l[nd - 1]; e++) {
            idx[nd - 1] = e;
            gc[nd - 1] = base[nd - 1] + e;
            if (fn(user, li++, idx, g + (uint64_t)e, gc))
                return 1;
        }
        idx[nd - 1] = 0;
        int d = nd - 2;
        while (d >= 0 && ++idx[d] == l[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

typedef struct fill_ctx {
    pat pt;
    unsigned char *buf;
    const unsigned char *cmp;
    rd_mismatch *mm;
    int64_t rank;
} fill_ctx;

static int fill_one(void *user, uint64_t li, const int64_t *lc, uint64_t g,
                    const int64_t *gc)
{
    fill_ctx *f = user;
    (void)lc;
    (void)gc;
    value(&f->pt, g, f->buf + li * f->pt.elem);
    return 0;
}

static int check_one(void *user, uint64_t li, const int64_t *lc, uint64_t g,
                     const int64_t *gc)
{
    fill_ctx *f = user;
    unsigned char want[16];
    const unsigned char *got = f->cmp + li * f->pt.elem;
    value(&f->pt, g, want);
    if (memcmp(want, got, f->pt.elem) == 0)
        return 0;
    if (f->mm) {
        rd_mismatch *mm = f->mm;
        memset(mm, 0, sizeof *mm);
        mm->device = f->rank;
        mm->local_index = li;
        mm->global_index = g;
        memcpy(mm->local, lc, sizeof mm->local);
        memcpy(mm->global, gc, sizeof mm->global);
        format_value(f->pt.dtype, want, mm->expected, sizeof mm->expected);
        format_value(f->pt.dtype, got, mm->got, sizeof mm->got);
    }
    return 1;
}

static void setup(const redist_spec_t *spec, int64_t rank, int source,
                  pat *pt)
{
    /* the coordinates on the mesh of the side the pattern is of */
    const redist_mesh_t *m = redist_spec_side_mesh(spec, !source);
    int64_t c[REDIST_MAX_AXES] = {0};
    int64_t r = rd_spec_mesh_rank(spec, !source, rank);
    memset(pt, 0, sizeof *pt);
    pt->dtype = redist_spec_dtype(spec);
    pt->op = redist_spec_reduce(spec);
    pt->elem = redist_dtype_size(pt->dtype);
    dtype_range(pt->dtype, &pt->P, &pt->lo, &pt->hi);
    if (r >= 0)
        redist_mesh_coords(m, r, c);
    /* what the target keeps pending (none across two meshes) */
    uint32_t kept = spec->two ? 0 : redist_spec_to(spec)->partial;
    pt->k = linear(m, kept, c, NULL);
    pt->Q = 1;
    if (source)
        pt->q = linear(m, redist_spec_from(spec)->partial & ~kept, c,
                       &pt->Q);
}

void rd_pattern_fill(const redist_spec_t *spec, int64_t rank, void *src)
{
    fill_ctx f;
    setup(spec, rank, 1, &f.pt);
    f.buf = src;
    walk(spec, 0, rank, fill_one, &f);
}

/* Compare buf with the pattern of the source (source) or the target
 * block of rank. */
static int check_block(const redist_spec_t *spec, int64_t rank, int source,
                       const void *buf, rd_mismatch *mm)
{
    fill_ctx f;
    setup(spec, rank, source, &f.pt);
    f.cmp = buf;
    f.mm = mm;
    f.rank = rank;
    return walk(spec, !source, rank, check_one, &f);
}

int rd_pattern_check(const redist_spec_t *spec, int64_t rank,
                     const void *dst, rd_mismatch *mm)
{
    return check_block(spec, rank, 0, dst, mm);
}

int rd_pattern_check_src(const redist_spec_t *spec, int64_t rank,
                         const void *src, rd_mismatch *mm)
{
    return check_block(spec, rank, 1, src, mm);
}
