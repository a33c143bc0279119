/*
 * The exact test pattern of `redistplan run` and of the tests (internal;
 * per rank, so the MPI and SHMEM runs can use it too).  It is a static
 * library (redist_testing), never installed and not part of libredist:
 * it verifies executions rather than performing them, and no library
 * user needs it.  redistplan links it because `redistplan run` is that
 * verification tool: it fills the source with this pattern and checks
 * every destination element.
 *
 * Every element's value identifies its global (row-major) index g:
 *   v(g, k) = (g + 7919 k) mod P          real part / the value
 *   w(g, k) = (g / P + 31 k + 1) mod P    imaginary part (c64, c128)
 * where k is the device's linear coordinate over the target's partial
 * axes (0 when it has none) and P a dtype-dependent period within which
 * every integer is exact: f16 2^11, bf16 2^8, f32 2^24, f64 2^53, i8 2^7,
 * u8 2^8, i16 2^15, u16 2^16, i32 2^31, u32 2^32, i64 and u64 2^62.
 *
 * Partial axes the plan reduces (source partial, not target partial):
 * with q the device's linear coordinate over them and Q their device
 * count, the device holds a contribution whose reduction is exactly the
 * value: sum: floor(v / Q) + (q < v mod Q ? 1 : 0) (small non-negative
 * integers, every partial sum exact); prod: v on the holder
 * q = (g + k) mod Q, 1 elsewhere; max: v on the holder, -1 elsewhere (0
 * for unsigned types); min: v on the holder, P elsewhere (the type's
 * largest value for integers).  Complex: the same per component, with
 * (1, 0), (-1, 0) and (P, 0) as the neutral or dominated values.
 */
#ifndef REDIST_EXEC_PATTERN_H
#define REDIST_EXEC_PATTERN_H

#include "redist/spec.h"

typedef struct rd_mismatch {
    int64_t device;
    uint64_t local_index;  /* row-major in the device's block */
    uint64_t global_index; /* row-major in the global array */
    int64_t local[REDIST_MAX_DIMS];
    int64_t global[REDIST_MAX_DIMS];
    char expected[96], got[96];
} rd_mismatch;

/* Write device `rank`'s source block (the spec's `from` type). */
void rd_pattern_fill(const redist_spec_t *spec, int64_t rank, void *src);
/* Check device `rank`'s destination block (the `to` type): 0 if exact,
 * else 1 with the first wrong element in *mm. */
int rd_pattern_check(const redist_spec_t *spec, int64_t rank,
                     const void *dst, rd_mismatch *mm);
/* Check that a source block still holds what rd_pattern_fill wrote. */
int rd_pattern_check_src(const redist_spec_t *spec, int64_t rank,
                         const void *src, rd_mismatch *mm);

#endif
