/*
 * A whole uneven reduce_scatter's geometry (rd_xstep.boxed, with mbox:
 * bind.c), shared by the backends that run it over the network
 * (src/backend/mpi/reduce_boxed.c, src/backend/shmem/reduce_boxed.c):
 * every member's box after the step, and the cut of a box into chunks
 * of at most c elements that are contiguous in it, the same cut on
 * every member (each knows every member's box).  Cost: O(ndims) per
 * call, O(s ndims) for the largest box and the rounds.
 */
#ifndef REDIST_EXEC_BOXED_H
#define REDIST_EXEC_BOXED_H

#include <stdint.h>

#include "backend.h"

/* The cut of box B (nd dims) into chunks of at most c elements: dim d,
 * `len` indices along it per chunk, `per` chunks per index of the dims
 * before d, `unit` elements per index along d; n chunks in all (0 for
 * an empty box). */
typedef struct rd_box_cut {
    int d;
    int64_t len, per;
    uint64_t unit, n;
} rd_box_cut;

rd_box_cut rd_box_cut_of(int nd, const int64_t B[], uint64_t c);
/* Chunk r of the cut: its offset in the box (off[]), its shape (sh[]);
 * returns its elements. */
uint64_t rd_box_chunk(int nd, const int64_t B[], const rd_box_cut *k,
                      uint64_t r, int64_t off[], int64_t sh[]);
/* Member m's box after the step: its offset in the box before, its
 * shape. */
const int64_t *rd_box_mbox_off(const rd_xstep *xs, int64_t m);
const int64_t *rd_box_mbox_shape(const rd_xstep *xs, int64_t m);
uint64_t rd_box_elems(int nd, const int64_t B[]);
/* The most elements of any member's box after the step. */
uint64_t rd_box_most(const rd_xstep *xs);
/* The rounds of chunks of at most c elements: the most chunks any
 * member's box has. */
uint64_t rd_box_rounds(const rd_xstep *xs, uint64_t c);

#endif
