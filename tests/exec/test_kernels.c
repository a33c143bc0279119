/*
 * Unit tests of the executor's data kernels (src/exec/kernels.c) against
 * naive index arithmetic: sub-block copy (slice, in place and not), pack
 * (split) and unpack (merge), f16 / bf16 conversions and rounding, the
 * reductions for every dtype and op, and the permute pairing.
 *
 *   test_kernels [ITERATIONS [SEED]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../../src/exec/exec_internal.h"
#include "../../src/exec/kernels.h"
#include "../common/random_plan.h"

static int failures, checks;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            if (failures <= 20) {                                            \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
                fprintf(stderr, __VA_ARGS__);                                \
                fprintf(stderr, "\n");                                       \
            }                                                                \
        }                                                                    \
    } while (0)

static rp_rng rng = {88172645463325252ULL};

/* ------------------------------------------------------------ copies */

static int64_t lin(const int64_t *shape, const int64_t *idx, int nd)
{
    int64_t l = 0;
    for (int d = 0; d < nd; d++)
        l = l * shape[d] + idx[d];
    return l;
}

static void test_box(int iters)
{
    for (int it = 0; it < iters; it++) {
        int nd = (int)rp_in(&rng, 1, 4);
        size_t elem = (size_t)(1 << rp_in(&rng, 0, 4));
        int64_t ss[4], ds[4], so[4], dof[4], box[4];
        int64_t sn = 1, dn = 1, bn = 1;
        int inplace = rp_next(&rng) % 3 == 0;
        for (int d = 0; d < nd; d++) {
            ss[d] = rp_in(&rng, 1, 6);
            box[d] = rp_in(&rng, 1, ss[d]);
            so[d] = rp_in(&rng, 0, ss[d] - box[d]);
            if (inplace) {
                ds[d] = box[d];
                dof[d] = 0;
            } else {
                ds[d] = box[d] + rp_in(&rng, 0, 3);
                dof[d] = rp_in(&rng, 0, ds[d] - box[d]);
            }
            sn *= ss[d];
            dn *= ds[d];
            bn *= box[d];
        }
        unsigned char *src = malloc((size_t)sn * elem);
        unsigned char *dst = malloc((size_t)(inplace ? sn : dn) * elem);
        unsigned char *ref = malloc((size_t)dn * elem);
        for (int64_t i = 0; i < sn * (int64_t)elem; i++)
            src[i] = (unsigned char)rp_next(&rng);
        for (int64_t i = 0; i < dn * (int64_t)elem; i++)
            ref[i] = (unsigned char)(i * 7);
        if (!inplace)
            memcpy(dst, ref, (size_t)dn * elem);
        /* naive reference */
        int64_t idx[4] = {0};
        for (int64_t e = 0; e < bn; e++) {
            int64_t si[4], di[4];
            int64_t r = e;
            for (int d = nd - 1; d >= 0; d--) {
                idx[d] = r % box[d];
                r /= box[d];
                si[d] = so[d] + idx[d];
                di[d] = dof[d] + idx[d];
            }
            memcpy(ref + lin(ds, di, nd) * (int64_t)elem,
                   src + lin(ss, si, nd) * (int64_t)elem, elem);
        }
        if (inplace) {
            memcpy(dst, src, (size_t)sn * elem);
            rd_kernel_box(dst, ds, dof, dst, ss, so, box, nd, elem);
        } else {
            rd_kernel_box(dst, ds, dof, src, ss, so, box, nd, elem);
        }
        CHECK(memcmp(dst, ref, (size_t)(inplace ? bn : dn) * elem) == 0,
              "box copy (nd %d, elem %zu, in place %d)", nd, elem, inplace);
        free(src);
        free(dst);
        free(ref);
    }
}

static void test_split_merge(int iters)
{
    for (int it = 0; it < iters; it++) {
        uint64_t pre = (uint64_t)rp_in(&rng, 1, 9);
        uint64_t s = (uint64_t)rp_in(&rng, 1, 6);
        uint64_t chunk = (uint64_t)rp_in(&rng, 1, 40);
        if (rp_next(&rng) % 2)
            chunk = (uint64_t)1 << rp_in(&rng, 0, 4);
        size_t n = (size_t)(pre * s * chunk);
        unsigned char *a = malloc(n), *b = malloc(n), *c = malloc(n);
        for (size_t i = 0; i < n; i++)
            a[i] = (unsigned char)rp_next(&rng);
        rd_kernel_split(b, a, pre, s, chunk);
        int ok = 1;
        for (uint64_t p = 0; p < pre; p++)
            for (uint64_t k = 0; k < s; k++)
                ok &= memcmp(b + (k * pre + p) * chunk,
                             a + (p * s + k) * chunk, (size_t)chunk) == 0;
        CHECK(ok, "split pre %llu s %llu chunk %llu", (unsigned long long)pre,
              (unsigned long long)s, (unsigned long long)chunk);
        rd_kernel_merge(c, b, pre, s, chunk);
        CHECK(memcmp(a, c, n) == 0, "merge(split(x)) != x");
        free(a);
        free(b);
        free(c);
    }
}

/* The all_to_all pack/unpack as the executor does them, checked as a
 * whole against the definition on a 3-D block. */
static void test_a2a_layout(void)
{
    /* one device's view: in [4,6,5], split along j=1 into s=3 chunks;
     * chunk k of piece shape [4,2,5] must be contiguous after the pack */
    int64_t in[3] = {4, 6, 5};
    int s = 3;
    int32_t a[120], b[120];
    for (int i = 0; i < 120; i++)
        a[i] = i;
    rd_kernel_split(b, a, 4, (uint64_t)s, 2 * 5 * sizeof(int32_t));
    int ok = 1;
    for (int k = 0; k < s; k++)
        for (int x = 0; x < 4; x++)
            for (int y = 0; y < 2; y++)
                for (int z = 0; z < 5; z++)
                    ok &= b[k * 40 + (x * 2 + y) * 5 + z] ==
                          a[(x * in[1] + k * 2 + y) * in[2] + z];
    CHECK(ok, "pack of an all_to_all along dim 1");
    /* unpack: s pieces [4,2,5] concatenated along dim 2 -> [4,2,15] */
    int32_t c[120];
    rd_kernel_merge(c, b, 4 * 2, (uint64_t)s, 5 * sizeof(int32_t));
    ok = 1;
    for (int k = 0; k < s; k++)
        for (int x = 0; x < 4; x++)
            for (int y = 0; y < 2; y++)
                for (int z = 0; z < 5; z++)
                    ok &= c[(x * 2 + y) * 15 + k * 5 + z] ==
                          b[k * 40 + (x * 2 + y) * 5 + z];
    CHECK(ok, "unpack along dim 2");
}

/* ------------------------------------------------------- f16 / bf16 */

static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Reference rounding of a finite float to f16 by exhaustive neighbours. */
static uint16_t ref_f16(float f)
{
    double x = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (x >= 65520.0)
        return sign | 0x7c00;
    /* binary search for the largest non-negative h with value <= x */
    uint16_t lo = 0, hi = 0x7bff;
    while (lo < hi) {
        uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if (f16_value(mid) <= x)
            lo = mid;
        else
            hi = (uint16_t)(mid - 1);
    }
    uint16_t r = lo;
    double d0 = x - f16_value(r);
    if (r < 0x7bff || x > 65504.0) {
        double d1 = f16_value((uint16_t)(r + 1)) - x;
        if (r == 0x7bff) /* between max and the overflow threshold */
            d1 = 65536.0 - x;
        if (d1 < d0 || (d1 == d0 && (r & 1)))
            r++;
    }
    return (uint16_t)(sign | r);
}

static uint16_t ref_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t t = u >> 16;
    float lo, hi;
    uint32_t a = t << 16, b = (t + 1) << 16;
    memcpy(&lo, &a, 4);
    memcpy(&hi, &b, 4);
    double dl = fabs((double)f - (double)lo), dh = fabs((double)hi - (double)f);
    if (isinf(hi)) /* rounding up overflows: compare with 2^128 */
        dh = fabs(ldexp(1.0, 128) * (f < 0 ? -1 : 1) - (double)f);
    if (dh < dl || (dh == dl && (t & 1)))
        t++;
    return (uint16_t)t;
}

static void test_half(void)
{
    /* every f16 round-trips; NaN stays NaN */
    int ok = 1;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rd_f16_to_f32((uint16_t)h);
        int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan)
            ok &= isnan(f) && (rd_f32_to_f16(f) & 0x7c00) == 0x7c00 &&
                  (rd_f32_to_f16(f) & 0x3ff);
        else
            ok &= rd_f32_to_f16(f) == h && ((h & 0x7c00) == 0x7c00 ||
                                            (double)f == f16_value((uint16_t)h));
    }
    CHECK(ok, "f16 round trip");
    /* ties, their neighbours and random floats round to nearest even */
    ok = 1;
    for (uint32_t h = 0; h < 0x7bff && ok; h++) {
        double mid = (f16_value((uint16_t)h) + f16_value((uint16_t)(h + 1))) / 2;
        float m = (float)mid; /* exact: f16 midpoints fit in f32 */
        float probes[3] = {nextafterf(m, 0), m, nextafterf(m, INFINITY)};
        for (int k = 0; k < 3; k++) {
            uint16_t want = ref_f16(probes[k]);
            uint16_t got = rd_f32_to_f16(probes[k]);
            if (want != got) {
                ok = 0;
                fprintf(stderr, "f16(%a): want 0x%04x got 0x%04x\n",
                        (double)probes[k], want, got);
            }
            ok &= rd_f32_to_f16(-probes[k]) == (want | 0x8000);
        }
    }
    CHECK(ok, "f16 ties round to even");
    ok = 1;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)rp_next(&rng);
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f))
            continue;
        if (isinf(f))
            ok &= rd_f32_to_f16(f) == ((u >> 16 & 0x8000) | 0x7c00);
        else
            ok &= rd_f32_to_f16(f) == ref_f16(f);
        ok &= rd_f32_to_bf16(f) == (isinf(f) ? (uint16_t)(u >> 16)
                                              : ref_bf16(f));
        /* small magnitudes exercise f16 subnormals */
        float g = ldexpf(f, -120 - (int)(rp_next(&rng) % 20));
        if (isfinite(g))
            ok &= rd_f32_to_f16(g) == ref_f16(g);
    }
    CHECK(ok, "f16 / bf16 rounding of random floats");
    /* known values */
    CHECK(rd_f32_to_f16(65504.0f) == 0x7bff && rd_f32_to_f16(65519.0f) ==
          0x7bff && rd_f32_to_f16(65520.0f) == 0x7c00, "f16 overflow edge");
    CHECK(rd_f32_to_f16(2049.0f) == 0x6800 && rd_f32_to_f16(2051.0f) == 0x6802,
          "f16 ties to even above 2048");
    CHECK(rd_f32_to_bf16(257.0f) == 0x4380 && rd_f32_to_bf16(259.0f) == 0x4382,
          "bf16 ties to even above 256");
    CHECK(isnan(rd_bf16_to_f32(rd_f32_to_bf16(NAN))), "bf16 NaN");
    ok = 1;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rd_bf16_to_f32((uint16_t)h);
        if (!isnan(f))
            ok &= rd_f32_to_bf16(f) == h;
    }
    CHECK(ok, "bf16 round trip");
}

/* -------------------------------------------------------- reductions */

static const void *inputs_fn(void *user, int64_t m)
{
    return ((const void *const *)user)[m];
}

static double dval(redist_dtype_t dt, const unsigned char *p, int im)
{
    switch (dt) {
    case REDIST_F16: { uint16_t h; memcpy(&h, p, 2); return rd_f16_to_f32(h); }
    case REDIST_BF16: { uint16_t h; memcpy(&h, p, 2); return rd_bf16_to_f32(h); }
    case REDIST_F32: { float f; memcpy(&f, p, 4); return f; }
    case REDIST_F64: { double f; memcpy(&f, p, 8); return f; }
    case REDIST_C64: { float f[2]; memcpy(f, p, 8); return f[im]; }
    case REDIST_C128: { double f[2]; memcpy(f, p, 16); return f[im]; }
    case REDIST_I8: { int8_t v; memcpy(&v, p, 1); return v; }
    case REDIST_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case REDIST_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case REDIST_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case REDIST_U8: { uint8_t v; memcpy(&v, p, 1); return v; }
    case REDIST_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case REDIST_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    }
}

static void put(redist_dtype_t dt, unsigned char *p, double re, double im)
{
    switch (dt) {
    case REDIST_F16: { uint16_t h = rd_f32_to_f16((float)re); memcpy(p, &h, 2); break; }
    case REDIST_BF16: { uint16_t h = rd_f32_to_bf16((float)re); memcpy(p, &h, 2); break; }
    case REDIST_F32: { float f = (float)re; memcpy(p, &f, 4); break; }
    case REDIST_F64: memcpy(p, &re, 8); break;
    case REDIST_C64: { float f[2] = {(float)re, (float)im}; memcpy(p, f, 8); break; }
    case REDIST_C128: { double f[2] = {re, im}; memcpy(p, f, 16); break; }
    case REDIST_I8: { int8_t v = (int8_t)re; memcpy(p, &v, 1); break; }
    case REDIST_I16: { int16_t v = (int16_t)re; memcpy(p, &v, 2); break; }
    case REDIST_I32: { int32_t v = (int32_t)re; memcpy(p, &v, 4); break; }
    case REDIST_I64: { int64_t v = (int64_t)re; memcpy(p, &v, 8); break; }
    case REDIST_U8: { uint8_t v = (uint8_t)re; memcpy(p, &v, 1); break; }
    case REDIST_U16: { uint16_t v = (uint16_t)re; memcpy(p, &v, 2); break; }
    case REDIST_U32: { uint32_t v = (uint32_t)re; memcpy(p, &v, 4); break; }
    default: { uint64_t v = (uint64_t)re; memcpy(p, &v, 8); break; }
    }
}

static int is_complex(redist_dtype_t dt)
{
    return dt == REDIST_C64 || dt == REDIST_C128;
}

static int is_unsigned(redist_dtype_t dt)
{
    return dt >= REDIST_U8 && dt <= REDIST_U64;
}

/* Small integer inputs (exact everywhere) against a double reference. */
static void test_reduce_exact(void)
{
    enum { N = 700, MAXM = 5 };
    for (int dt = 0; dt < REDIST_DTYPE_COUNT; dt++)
        for (int op = 0; op < REDIST_REDUCE_COUNT; op++)
            for (int n = 1; n <= MAXM; n++) {
                size_t e = redist_dtype_size((redist_dtype_t)dt);
                unsigned char *in[MAXM], *out = malloc(N * e),
                                         *io = malloc(N * e);
                for (int m = 0; m < n; m++)
                    in[m] = malloc(N * e);
                for (int i = 0; i < N; i++)
                    for (int m = 0; m < n; m++) {
                        double lo = is_unsigned((redist_dtype_t)dt) ? 0 : -3;
                        double re = (double)rp_in(&rng, (int64_t)lo, 3);
                        double im = (double)rp_in(&rng, -3, 3);
                        put((redist_dtype_t)dt, in[m] + (size_t)i * e, re, im);
                    }
                rd_reduce_n((redist_dtype_t)dt, (redist_reduce_t)op, out, N, n,
                            inputs_fn, in);
                memcpy(io, in[0], N * e);
                for (int m = 1; m < n; m++)
                    rd_reduce_pair((redist_dtype_t)dt, (redist_reduce_t)op, io,
                                   in[m], N);
                int ok = 1;
                for (int i = 0; i < N; i++) {
                    double re = dval((redist_dtype_t)dt, in[0] + (size_t)i * e, 0);
                    double im = is_complex((redist_dtype_t)dt)
                                    ? dval((redist_dtype_t)dt, in[0] + (size_t)i * e, 1)
                                    : 0;
                    for (int m = 1; m < n; m++) {
                        double xr = dval((redist_dtype_t)dt, in[m] + (size_t)i * e, 0);
                        double xi = is_complex((redist_dtype_t)dt)
                                        ? dval((redist_dtype_t)dt, in[m] + (size_t)i * e, 1)
                                        : 0;
                        switch (op) {
                        case REDIST_REDUCE_SUM: re += xr; im += xi; break;
                        case REDIST_REDUCE_PROD: {
                            if (!is_complex((redist_dtype_t)dt)) {
                                re *= xr; /* signed zeros as the type's */
                                break;
                            }
                            double r2 = re * xr - im * xi;
                            im = re * xi + im * xr;
                            re = r2;
                            break;
                        }
                        case REDIST_REDUCE_MAX:
                            if (xr > re || (xr == re && xi > im)) {
                                re = xr;
                                im = xi;
                            }
                            break;
                        default:
                            if (xr < re || (xr == re && xi < im)) {
                                re = xr;
                                im = xi;
                            }
                            break;
                        }
                    }
                    unsigned char want[16];
                    /* integers wrap: reduce the reference modulo 2^bits */
                    if (!is_complex((redist_dtype_t)dt) && dt >= REDIST_I8) {
                        int bits = 8 * (int)e;
                        long long v = (long long)re;
                        if (bits < 64) {
                            unsigned long long mask = (1ULL << bits) - 1;
                            unsigned long long u = (unsigned long long)v & mask;
                            if (!is_unsigned((redist_dtype_t)dt) &&
                                (u >> (bits - 1)))
                                v = (long long)u - (long long)(1ULL << bits);
                            else
                                v = (long long)u;
                        }
                        re = (double)v;
                        if (is_unsigned((redist_dtype_t)dt) && v < 0)
                            re = (double)(unsigned long long)v;
                    }
                    put((redist_dtype_t)dt, want, re, im);
                    if (is_unsigned((redist_dtype_t)dt) && dt == REDIST_U64 &&
                        re < 0) {
                        uint64_t v = (uint64_t)(int64_t)re;
                        memcpy(want, &v, 8);
                    }
                    ok &= memcmp(want, out + (size_t)i * e, e) == 0;
                    ok &= memcmp(want, io + (size_t)i * e, e) == 0;
                }
                CHECK(ok, "reduce %s %s over %d inputs",
                      redist_dtype_name((redist_dtype_t)dt),
                      redist_reduce_name((redist_reduce_t)op), n);
                for (int m = 0; m < n; m++)
                    free(in[m]);
                free(out);
                free(io);
            }
}

static void test_reduce_rounding(void)
{
    /* f16: 2048 + 1 + 1 in f32 is 2050 (exact in f16); pairwise rounding
     * would give 2048 + 1 -> 2048 (tie to even), + 1 -> 2048. */
    uint16_t a = rd_f32_to_f16(2048.0f), b = rd_f32_to_f16(1.0f);
    uint16_t x[3] = {a, b, b}, out;
    const void *in[3] = {&x[0], &x[1], &x[2]};
    rd_reduce_n(REDIST_F16, REDIST_REDUCE_SUM, &out, 1, 3, inputs_fn, in);
    CHECK(rd_f16_to_f32(out) == 2050.0f, "f16 sum rounded once (got %g)",
          (double)rd_f16_to_f32(out));
    uint16_t io = a;
    rd_reduce_pair(REDIST_F16, REDIST_REDUCE_SUM, &io, &x[1], 1);
    rd_reduce_pair(REDIST_F16, REDIST_REDUCE_SUM, &io, &x[2], 1);
    CHECK(rd_f16_to_f32(io) == 2048.0f, "f16 pairwise rounds each step");
    /* bf16: 256 + 1 + 1 = 258 */
    uint16_t y[3] = {rd_f32_to_bf16(256.0f), rd_f32_to_bf16(1.0f),
                     rd_f32_to_bf16(1.0f)};
    const void *in2[3] = {&y[0], &y[1], &y[2]};
    rd_reduce_n(REDIST_BF16, REDIST_REDUCE_SUM, &out, 1, 3, inputs_fn, in2);
    CHECK(rd_bf16_to_f32(out) == 258.0f, "bf16 sum rounded once");
    /* NaN propagates through max and min */
    float f[2] = {1.0f, NAN}, r;
    const void *in3[2] = {&f[0], &f[1]};
    rd_reduce_n(REDIST_F32, REDIST_REDUCE_MAX, &r, 1, 2, inputs_fn, in3);
    CHECK(isnan(r), "max propagates NaN");
    rd_reduce_n(REDIST_F32, REDIST_REDUCE_MIN, &r, 1, 2, inputs_fn, in3);
    CHECK(isnan(r), "min propagates NaN");
    /* complex max is lexicographic */
    float c[4] = {1, 5, 1, 7}, cr[2];
    const void *in4[2] = {&c[0], &c[2]};
    rd_reduce_n(REDIST_C64, REDIST_REDUCE_MAX, cr, 1, 2, inputs_fn, in4);
    CHECK(cr[0] == 1 && cr[1] == 7, "c64 max lexicographic");
    /* long vectors cross the accumulation blocks */
    enum { L = 1000 };
    static uint16_t v0[L], v1[L], vo[L];
    for (int i = 0; i < L; i++) {
        v0[i] = rd_f32_to_bf16((float)i);
        v1[i] = rd_f32_to_bf16(-(float)(i / 2));
    }
    const void *in5[2] = {v0, v1};
    rd_reduce_n(REDIST_BF16, REDIST_REDUCE_SUM, vo, L, 2, inputs_fn, in5);
    int ok = 1;
    for (int i = 0; i < L; i++)
        ok &= vo[i] == rd_f32_to_bf16(rd_bf16_to_f32(v0[i]) +
                                      rd_bf16_to_f32(v1[i]));
    CHECK(ok, "bf16 long vector");
}

/* ------------------------------------------------------- permutation */

static void test_permute_pairing(int iters)
{
    for (int it = 0; it < iters; it++) {
        int naxes = (int)rp_in(&rng, 1, 3);
        const char *names[3] = {"a", "b", "c"};
        int64_t sizes[3];
        for (int a = 0; a < naxes; a++)
            sizes[a] = rp_in(&rng, 1, 4);
        redist_mesh_t *mesh = NULL;
        redist_mesh_create(naxes, names, sizes, &mesh, NULL);
        /* before: all axes on dim 0 in order, partial none; after: a
         * random order of a random subset on dim 0, the rest on dim 1 in
         * a form with the same local shape: permute the axes of dim 0. */
        redist_type_t b, a;
        redist_type_init(&b, 2);
        redist_type_init(&a, 2);
        int perm[3] = {0, 1, 2};
        for (int i = naxes - 1; i > 0; i--) {
            int j = (int)rp_in(&rng, 0, i);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int partial = naxes > 1 && rp_next(&rng) % 2
                          ? (int)rp_in(&rng, 0, naxes - 1)
                          : -1;
        for (int k = 0; k < naxes; k++) {
            if (k == partial) {
                redist_type_add_partial(&b, k);
                redist_type_add_partial(&a, k);
                continue;
            }
            redist_type_push_axis(&b, 0, k);
        }
        for (int k = 0; k < naxes; k++)
            if (perm[k] != partial)
                redist_type_push_axis(&a, 0, perm[k]);
        int64_t D = redist_mesh_num_devices(mesh);
        int64_t *to = calloc((size_t)D, sizeof *to),
                *from = calloc((size_t)D, sizeof *from);
        int *recv_count = calloc((size_t)D, sizeof *recv_count);
        int ok = 1;
        for (int64_t r = 0; r < D; r++)
            ok &= rd_permute_peers(mesh, &b, &a, r, &to[r], &from[r]) ==
                  REDIST_OK;
        for (int64_t r = 0; r < D && ok; r++) {
            ok &= from[to[r]] == r; /* pairing is consistent */
            recv_count[to[r]]++;
        }
        for (int64_t r = 0; r < D && ok; r++)
            ok &= recv_count[r] == 1;
        /* the block received is the block needed: compare block indices */
        for (int64_t r = 0; r < D && ok; r++) {
            int64_t cr[3], cs[3];
            redist_mesh_coords(mesh, r, cr);
            redist_mesh_coords(mesh, from[r], cs);
            int64_t need = 0, have = 0;
            for (int k = 0; k < a.dim_naxes[0]; k++)
                need = need * sizes[a.dims[0][k]] + cr[a.dims[0][k]];
            for (int k = 0; k < b.dim_naxes[0]; k++)
                have = have * sizes[b.dims[0][k]] + cs[b.dims[0][k]];
            ok &= need == have;
            if (partial >= 0)
                ok &= cr[partial] == cs[partial];
        }
        CHECK(ok, "permute pairing (%d axes)", naxes);
        free(to);
        free(from);
        free(recv_count);
        redist_mesh_free(mesh);
    }
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    if (argc > 2)
        rng.s = strtoull(argv[2], NULL, 10) | 1;
    test_box(iters);
    test_split_merge(iters);
    test_a2a_layout();
    test_half();
    test_reduce_exact();
    test_reduce_rounding();
    test_permute_pairing(iters / 4 + 1);
    printf("%d checks, %d failed\n", checks, failures);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
