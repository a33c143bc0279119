/*
 * Backend-independent data kernels of the executor (internal).
 *
 * Local blocks are row-major arrays.  The pack and unpack of the
 * collectives are two axis swaps of a 3-D view [pre][s][chunk] of a block,
 * chunk bytes being contiguous:
 *   split (pack):   [pre][s][chunk] -> [s][pre][chunk]  the s chunks along
 *                   a dim d become contiguous (pre = product of the dims
 *                   before d, chunk = (l_d / s) * product after d * elem)
 *   merge (unpack): [s][pre][chunk] -> [pre][s][chunk]  s contiguous pieces
 *                   are concatenated along dim d
 * With pre == 1 both are the identity and the executor skips them.
 */
#ifndef REDIST_EXEC_KERNELS_H
#define REDIST_EXEC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "redist/core.h"

/* Copy the box of shape box[] at offset src_off[] of the array src (shape
 * src_shape[]) to offset dst_off[] of dst (shape dst_shape[]).  elem is
 * the element size.  dst == src is allowed when dst_off is all zero and
 * dst_shape == box (the in-place compaction of a slice: every element
 * moves to a lower or equal address, copied in increasing order). */
void rd_kernel_box(void *dst, const int64_t dst_shape[],
                   const int64_t dst_off[], const void *src,
                   const int64_t src_shape[], const int64_t src_off[],
                   const int64_t box[], int ndims, size_t elem);

/* Pack: [pre][s][chunk] -> [s][pre][chunk] (dst != src). */
void rd_kernel_split(void *dst, const void *src, uint64_t pre, uint64_t s,
                     uint64_t chunk);
/* Unpack: [s][pre][chunk] -> [pre][s][chunk] (dst != src). */
void rd_kernel_merge(void *dst, const void *src, uint64_t pre, uint64_t s,
                     uint64_t chunk);

/* Input m (0..n-1) of an n-ary reduction. */
typedef const void *(*rd_input_fn)(void *user, int64_t m);

/* out[e] = in_0[e] op in_1[e] op ... op in_{n-1}[e] for e < count, the
 * inputs combined in order 0, 1, ..., n-1.  f16 and bf16 are accumulated
 * in f32 and rounded once to nearest even; other types in their own type
 * (integers wrap).  max/min propagate NaN; for complex types max/min are
 * lexicographic (real part, then imaginary part).  out may not overlap
 * any input. */
/* Elements rd_reduce_n accumulates at a time.  With count <= this it
 * calls input(user, m) exactly once for each m, in order 0..n-1, and reads
 * every input before it writes out: out may then be one of the inputs,
 * and an input may be produced on demand (e.g. received) by `input`. */
#define RD_REDUCE_BLOCK 256
void rd_reduce_n(redist_dtype_t dtype, redist_reduce_t op, void *out,
                 uint64_t count, int64_t n, rd_input_fn input, void *user);

/* inout[e] = inout[e] op in[e] (one pairwise step, rounded to the type:
 * what an MPI user-defined operation computes). */
void rd_reduce_pair(redist_dtype_t dtype, redist_reduce_t op, void *inout,
                    const void *in, uint64_t count);

/* IEEE binary16 and bfloat16 conversions; to 16 bits rounds to nearest
 * even (overflow to infinity, NaN stays NaN). */
float rd_f16_to_f32(uint16_t h);
uint16_t rd_f32_to_f16(float f);
float rd_bf16_to_f32(uint16_t h);
uint16_t rd_f32_to_bf16(float f);

#endif
