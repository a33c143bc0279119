/*
 * Data kernels shared by every backend: sub-block copy (slice), pack and
 * unpack of the collectives' chunks, reductions for every dtype and op,
 * f16 / bf16 conversions.
 *
 * Cost: each kernel reads and writes its bytes once (memory bound); runs
 * of contiguous bytes are copied with memcpy/memmove, short fixed-size
 * chunks (1, 2, 4, 8, 16 bytes) with inlined copies.  No kernel allocates:
 * the reductions accumulate blocks of RD_RBLOCK elements on the stack.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "redist/exec.h"
#include "../core/internal.h"

/* ------------------------------------------------------- conversions */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float rd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        if (man == 0)
            return u2f(sign);
        /* subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return u2f(sign | 0x7f800000u | (man << 13));
    return u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t rd_f32_to_f16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or NaN (kept quiet, payload's top bits) */
        return (uint16_t)(sign | (ax > 0x7f800000u
                                      ? 0x7e00u | ((ax >> 13) & 0x3ffu)
                                      : 0x7c00u));
    if (ax >= 0x477ff000u) /* >= 65520: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal or zero in f16 */
        if (ax < 0x33000000u) /* <= 2^-25 (a tie with 0 rounds to 0) */
            return sign;
        uint32_t e = ax >> 23;             /* 102..112 */
        uint32_t man = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;          /* 14..24 */
        uint32_t r = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 23) - 112u) << 10 | ((ax >> 13) & 0x3ffu);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
        r++; /* a carry into the exponent is the right result */
    return (uint16_t)(sign | r);
}

float rd_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t rd_f32_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ------------------------------------------------------------ copies */

/* n chunks of c bytes: dst + i*dstep <- src + i*sstep. */
static void copy_chunks(char *dst, uint64_t dstep, const char *src,
                        uint64_t sstep, uint64_t n, uint64_t c)
{
#define RD_COPY_FIXED(C)                                                     \
    for (uint64_t i = 0; i < n; i++)                                         \
        memcpy(dst + i * dstep, src + i * sstep, C);                         \
    return
    switch (c) {
    case 1: RD_COPY_FIXED(1);
    case 2: RD_COPY_FIXED(2);
    case 4: RD_COPY_FIXED(4);
    case 8: RD_COPY_FIXED(8);
    case 16: RD_COPY_FIXED(16);
    default:
        for (uint64_t i = 0; i < n; i++)
            memcpy(dst + i * dstep, src + i * sstep, (size_t)c);
    }
#undef RD_COPY_FIXED
}

void rd_kernel_split(void *dst, const void *src, uint64_t pre, uint64_t s,
                     uint64_t chunk)
{
    /* dst[k][p] = src[p][k]: for each k, pre chunks strided by s*chunk */
    for (uint64_t k = 0; k < s; k++)
        copy_chunks((char *)dst + k * pre * chunk, chunk,
                    (const char *)src + k * chunk, s * chunk, pre, chunk);
}

void rd_kernel_merge(void *dst, const void *src, uint64_t pre, uint64_t s,
                     uint64_t chunk)
{
    /* dst[p][k] = src[k][p] */
    for (uint64_t k = 0; k < s; k++)
        copy_chunks((char *)dst + k * chunk, s * chunk,
                    (const char *)src + k * pre * chunk, chunk, pre, chunk);
}

void rd_kernel_box(void *dst, const int64_t dst_shape[],
                   const int64_t dst_off[], const void *src,
                   const int64_t src_shape[], const int64_t src_off[],
                   const int64_t box[], int ndims, size_t elem)
{
    int64_t sstr[REDIST_MAX_DIMS], dstr[REDIST_MAX_DIMS];
    int64_t idx[REDIST_MAX_DIMS];
    if (ndims <= 0) {
        memmove(dst, src, elem);
        return;
    }
    for (int d = 0; d < ndims; d++)
        if (box[d] == 0)
            return;
    sstr[ndims - 1] = dstr[ndims - 1] = 1;
    for (int d = ndims - 2; d >= 0; d--) {
        sstr[d] = sstr[d + 1] * src_shape[d + 1];
        dstr[d] = dstr[d + 1] * dst_shape[d + 1];
    }
    /* the run: dims k..ndims-1, with every dim after k whole in both */
    int k = ndims - 1;
    while (k > 0 && box[k] == src_shape[k] && box[k] == dst_shape[k])
        k--;
    uint64_t run = elem;
    for (int d = k; d < ndims; d++)
        run *= (uint64_t)box[d];
    int64_t sbase = 0, dbase = 0;
    for (int d = 0; d < ndims; d++) {
        sbase += src_off[d] * sstr[d];
        dbase += dst_off[d] * dstr[d];
    }
    const char *s = (const char *)src;
    char *o = (char *)dst;
    if (k == 0) {
        memmove(o + (uint64_t)dbase * elem, s + (uint64_t)sbase * elem,
                (size_t)run);
        return;
    }
    /* outer odometer over dims 0..k-1, the innermost of them (k-1) in a
     * strided chunk loop */
    int outer = k - 1;
    for (int d = 0; d < outer; d++)
        idx[d] = 0;
    for (;;) {
        int64_t so = sbase, doff = dbase;
        for (int d = 0; d < outer; d++) {
            so += idx[d] * sstr[d];
            doff += idx[d] * dstr[d];
        }
        if (dst == src) {
            /* in place: increasing order, memmove per run */
            for (int64_t i = 0; i < box[outer]; i++)
                memmove(o + (uint64_t)(doff + i * dstr[outer]) * elem,
                        s + (uint64_t)(so + i * sstr[outer]) * elem,
                        (size_t)run);
        } else {
            copy_chunks(o + (uint64_t)doff * elem,
                        (uint64_t)dstr[outer] * elem,
                        s + (uint64_t)so * elem,
                        (uint64_t)sstr[outer] * elem,
                        (uint64_t)box[outer], run);
        }
        int d = outer - 1;
        while (d >= 0 && ++idx[d] == box[d])
            idx[d--] = 0;
        if (d < 0)
            break;
    }
}

/* -------------------------------------------------------- reductions */

#define RD_RBLOCK RD_REDUCE_BLOCK

typedef struct { float re, im; } rd_cf;
typedef struct { double re, im; } rd_cd;

/* Real floating types: T storage, A accumulator. */
#define RD_FLOAT_OPS(A)                                                      \
    static inline A add_##A(A a, A b) { return a + b; }                      \
    static inline A mul_##A(A a, A b) { return a * b; }                      \
    static inline A max_##A(A a, A b)                                        \
    {                                                                        \
        return a != a ? a : b != b ? b : b > a ? b : a;                      \
    }                                                                        \
    static inline A min_##A(A a, A b)                                        \
    {                                                                        \
        return a != a ? a : b != b ? b : b < a ? b : a;                      \
    }
RD_FLOAT_OPS(float)
RD_FLOAT_OPS(double)

#define RD_CPLX_OPS(C)                                                       \
    static inline C add_##C(C a, C b)                                        \
    {                                                                        \
        C r = {a.re + b.re, a.im + b.im};                                    \
        return r;                                                            \
    }                                                                        \
    static inline C mul_##C(C a, C b)                                        \
    {                                                                        \
        C r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};        \
        return r;                                                            \
    }                                                                        \
    static inline int isnan_##C(C a) { return a.re != a.re || a.im != a.im; } \
    static inline C max_##C(C a, C b)                                        \
    {                                                                        \
        if (isnan_##C(a))                                                    \
            return a;                                                        \
        if (isnan_##C(b))                                                    \
            return b;                                                        \
        return (b.re > a.re || (b.re == a.re && b.im > a.im)) ? b : a;       \
    }                                                                        \
    static inline C min_##C(C a, C b)                                        \
    {                                                                        \
        if (isnan_##C(a))                                                    \
            return a;                                                        \
        if (isnan_##C(b))                                                    \
            return b;                                                        \
        return (b.re < a.re || (b.re == a.re && b.im < a.im)) ? b : a;       \
    }
RD_CPLX_OPS(rd_cf)
RD_CPLX_OPS(rd_cd)

/* Integers: T the type, U its unsigned twin (sum and prod wrap). */
#define RD_INT_OPS(T, U)                                                     \
    static inline T add_##T(T a, T b) { return (T)((U)a + (U)b); }           \
    static inline T mul_##T(T a, T b) { return (T)((U)a * (U)b); }           \
    static inline T max_##T(T a, T b) { return b > a ? b : a; }              \
    static inline T min_##T(T a, T b) { return b < a ? b : a; }
RD_INT_OPS(int8_t, uint32_t)
RD_INT_OPS(int16_t, uint32_t)
RD_INT_OPS(int32_t, uint32_t)
RD_INT_OPS(int64_t, uint64_t)
RD_INT_OPS(uint8_t, uint32_t)
RD_INT_OPS(uint16_t, uint32_t)
RD_INT_OPS(uint32_t, uint32_t)
RD_INT_OPS(uint64_t, uint64_t)

/* Loads and stores through memcpy (no alignment assumption). */
#define RD_LOAD_PLAIN(T)                                                     \
    static inline T load_##T(const char *p)                                  \
    {                                                                        \
        T v;                                                                 \
        memcpy(&v, p, sizeof v);                                             \
        return v;                                                            \
    }                                                                        \
    static inline void store_##T(char *p, T v) { memcpy(p, &v, sizeof v); }
RD_LOAD_PLAIN(float)
RD_LOAD_PLAIN(double)
RD_LOAD_PLAIN(rd_cf)
RD_LOAD_PLAIN(rd_cd)
RD_LOAD_PLAIN(int8_t)
RD_LOAD_PLAIN(int16_t)
RD_LOAD_PLAIN(int32_t)
RD_LOAD_PLAIN(int64_t)
RD_LOAD_PLAIN(uint8_t)
RD_LOAD_PLAIN(uint16_t)
RD_LOAD_PLAIN(uint32_t)
RD_LOAD_PLAIN(uint64_t)

/* Half floats: 2 bytes in storage, a float to compute with. */
#define RD_LOAD_HALF(NAME)                                                   \
    static inline float load_##NAME(const char *p)                           \
    {                                                                        \
        uint16_t h;                                                          \
        memcpy(&h, p, 2);                                                    \
        return rd_##NAME##_to_f32(h);                                        \
    }                                                                        \
    static inline void store_##NAME(char *p, float v)                        \
    {                                                                        \
        uint16_t h = rd_f32_to_##NAME(v);                                    \
        memcpy(p, &h, 2);                                                    \
    }
RD_LOAD_HALF(f16)
RD_LOAD_HALF(bf16)

/* NAME: storage of SZ bytes, accumulator A with ops *_A, LD/ST. */
#define RD_REDUCE_FN(NAME, SZ, A, LD, ST)                                    \
    static void reduce_n_##NAME(redist_reduce_t op, char *out,               \
                                uint64_t count, int64_t n,                   \
                                rd_input_fn input, void *user)               \
    {                                                                        \
        A acc[RD_RBLOCK];                                                    \
        for (uint64_t b = 0; b < count; b += RD_RBLOCK) {                    \
            size_t nb = count - b < RD_RBLOCK ? (size_t)(count - b)          \
                                              : RD_RBLOCK;                   \
            const char *x = (const char *)input(user, 0) + b * (SZ);         \
            for (size_t e = 0; e < nb; e++)                                  \
                acc[e] = LD(x + e * (SZ));                                   \
            for (int64_t m = 1; m < n; m++) {                                \
                x = (const char *)input(user, m) + b * (SZ);                 \
                switch (op) {                                                \
                case REDIST_REDUCE_SUM:                                      \
                    for (size_t e = 0; e < nb; e++)                          \
                        acc[e] = add_##A(acc[e], LD(x + e * (SZ)));          \
                    break;                                                   \
                case REDIST_REDUCE_PROD:                                     \
                    for (size_t e = 0; e < nb; e++)                          \
                        acc[e] = mul_##A(acc[e], LD(x + e * (SZ)));          \
                    break;                                                   \
                case REDIST_REDUCE_MAX:                                      \
                    for (size_t e = 0; e < nb; e++)                          \
                        acc[e] = max_##A(acc[e], LD(x + e * (SZ)));          \
                    break;                                                   \
                default:                                                     \
                    for (size_t e = 0; e < nb; e++)                          \
                        acc[e] = min_##A(acc[e], LD(x + e * (SZ)));          \
                    break;                                                   \
                }                                                            \
            }                                                                \
            for (size_t e = 0; e < nb; e++)                                  \
                ST(out + (b + e) * (SZ), acc[e]);                            \
        }                                                                    \
    }                                                                        \
    static void reduce_2_##NAME(redist_reduce_t op, char *io, const char *x, \
                                uint64_t count)                              \
    {                                                                        \
        for (uint64_t e = 0; e < count; e++) {                               \
            A a = LD(io + e * (SZ)), v = LD(x + e * (SZ));                   \
            switch (op) {                                                    \
            case REDIST_REDUCE_SUM: a = add_##A(a, v); break;                \
            case REDIST_REDUCE_PROD: a = mul_##A(a, v); break;               \
            case REDIST_REDUCE_MAX: a = max_##A(a, v); break;                \
            default: a = min_##A(a, v); break;                               \
            }                                                                \
            ST(io + e * (SZ), a);                                            \
        }                                                                    \
    }

RD_REDUCE_FN(f16, 2, float, load_f16, store_f16)
RD_REDUCE_FN(bf16, 2, float, load_bf16, store_bf16)
RD_REDUCE_FN(f32, 4, float, load_float, store_float)
RD_REDUCE_FN(f64, 8, double, load_double, store_double)
RD_REDUCE_FN(i8, 1, int8_t, load_int8_t, store_int8_t)
RD_REDUCE_FN(i16, 2, int16_t, load_int16_t, store_int16_t)
RD_REDUCE_FN(i32, 4, int32_t, load_int32_t, store_int32_t)
RD_REDUCE_FN(i64, 8, int64_t, load_int64_t, store_int64_t)
RD_REDUCE_FN(u8, 1, uint8_t, load_uint8_t, store_uint8_t)
RD_REDUCE_FN(u16, 2, uint16_t, load_uint16_t, store_uint16_t)
RD_REDUCE_FN(u32, 4, uint32_t, load_uint32_t, store_uint32_t)
RD_REDUCE_FN(u64, 8, uint64_t, load_uint64_t, store_uint64_t)
RD_REDUCE_FN(c64, 8, rd_cf, load_rd_cf, store_rd_cf)
RD_REDUCE_FN(c128, 16, rd_cd, load_rd_cd, store_rd_cd)

void rd_reduce_n(redist_dtype_t dtype, redist_reduce_t op, void *out,
                 uint64_t count, int64_t n, rd_input_fn input, void *user)
{
    char *o = (char *)out;
    if (n <= 0 || count == 0)
        return;
    switch (dtype) {
    case REDIST_F16: reduce_n_f16(op, o, count, n, input, user); break;
    case REDIST_BF16: reduce_n_bf16(op, o, count, n, input, user); break;
    case REDIST_F32: reduce_n_f32(op, o, count, n, input, user); break;
    case REDIST_F64: reduce_n_f64(op, o, count, n, input, user); break;
    case REDIST_I8: reduce_n_i8(op, o, count, n, input, user); break;
    case REDIST_I16: reduce_n_i16(op, o, count, n, input, user); break;
    case REDIST_I32: reduce_n_i32(op, o, count, n, input, user); break;
    case REDIST_I64: reduce_n_i64(op, o, count, n, input, user); break;
    case REDIST_U8: reduce_n_u8(op, o, count, n, input, user); break;
    case REDIST_U16: reduce_n_u16(op, o, count, n, input, user); break;
    case REDIST_U32: reduce_n_u32(op, o, count, n, input, user); break;
    case REDIST_U64: reduce_n_u64(op, o, count, n, input, user); break;
    case REDIST_C64: reduce_n_c64(op, o, count, n, input, user); break;
    case REDIST_C128: reduce_n_c128(op, o, count, n, input, user); break;
    default: break;
    }
}

void rd_reduce_pair(redist_dtype_t dtype, redist_reduce_t op, void *inout,
                    const void *in, uint64_t count)
{
    char *io = (char *)inout;
    const char *x = (const char *)in;
    switch (dtype) {
    case REDIST_F16: reduce_2_f16(op, io, x, count); break;
    case REDIST_BF16: reduce_2_bf16(op, io, x, count); break;
    case REDIST_F32: reduce_2_f32(op, io, x, count); break;
    case REDIST_F64: reduce_2_f64(op, io, x, count); break;
    case REDIST_I8: reduce_2_i8(op, io, x, count); break;
    case REDIST_I16: reduce_2_i16(op, io, x, count); break;
    case REDIST_I32: reduce_2_i32(op, io, x, count); break;
    case REDIST_I64: reduce_2_i64(op, io, x, count); break;
    case REDIST_U8: reduce_2_u8(op, io, x, count); break;
    case REDIST_U16: reduce_2_u16(op, io, x, count); break;
    case REDIST_U32: reduce_2_u32(op, io, x, count); break;
    case REDIST_U64: reduce_2_u64(op, io, x, count); break;
    case REDIST_C64: reduce_2_c64(op, io, x, count); break;
    case REDIST_C128: reduce_2_c128(op, io, x, count); break;
    default: break;
    }
}

static const void *local_input(void *user, int64_t m)
{
    return ((const void *const *)user)[m];
}

redist_status_t redist_reduce_local(redist_dtype_t dtype, redist_reduce_t op,
                                    int n, const void *const inputs[],
                                    void *dst, int64_t count,
                                    redist_error_t *err)
{
    const char *fn = "redist_reduce_local";
    uint64_t bytes;
    if (!dst || !inputs)
        return rd_error(err, REDIST_ERR_INVALID, fn, NULL,
                        "NULL %s", dst ? "inputs" : "dst");
    if ((unsigned)dtype >= REDIST_DTYPE_COUNT ||
        (unsigned)op >= REDIST_REDUCE_COUNT)
        return rd_error(err, REDIST_ERR_INVALID, fn, NULL,
                        "%s out of range", (unsigned)op < REDIST_REDUCE_COUNT
                                               ? "dtype" : "op");
    if (n < 1 || count < 0 ||
        rd_mul_u64((uint64_t)count, redist_dtype_size(dtype), &bytes) ||
        bytes > (uint64_t)PTRDIFF_MAX)
        return rd_error(err, REDIST_ERR_INVALID, fn, NULL,
                        "n = %d, count = %lld: need n >= 1 and count >= 0 "
                        "elements that fit in memory", n, (long long)count);
    for (int m = 0; m < n; m++)
        if (!inputs[m])
            return rd_error(err, REDIST_ERR_INVALID, fn, NULL,
                            "NULL inputs[%d]", m);
    rd_reduce_n(dtype, op, dst, (uint64_t)count, n, local_input,
                (void *)inputs);
    return REDIST_OK;
}
