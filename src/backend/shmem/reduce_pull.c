/*
 * Pull: when the peers' inputs are symmetric, member c reduces its part
 * reading the s inputs in place, by load through shmem_ptr (pull, PEs on
 * one node) or with shmem_getmem of one block of RD_REDUCE_BLOCK elements
 * of one member at a time into the stack (get, any PEs).  ~ beta
 * (s-1)/s L read per member (plus the all_reduce's puts of its range),
 * 2 (s-1) signals; work space: none (a block on the stack for get, s
 * pointers for pull).  In place (in == out) a member writes only the
 * runs of its own input that nobody else reads.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* Pull: read the peers' (symmetric) inputs in place, by load through
 * shmem_ptr, or (get) with shmem_getmem, RD_REDUCE_BLOCK elements of one
 * member at a time into a block on the stack: no symmetric work space. */
redist_status_t rd_shm_reduce_pull(redist_shmem_t *c, const rd_xstep *x,
                                   const char *in, char *out, int slot,
                                   int get, redist_error_t *err)
{
    const rd_group *g = &x->group;
    size_t elem = x->elem;
    red_part r;
    rd_shm_red_part_of(x, &r);
    _Alignas(16) char block[RD_REDUCE_BLOCK * 16];
    const char **base = NULL;
    if (!get) {
        base = malloc(sizeof *base * (size_t)g->size);
        if (!base)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
    }
    for (int64_t m = 0; m < g->size && base; m++) {
        base[m] = m == g->index ? in : shmem_ptr(in, rd_shm_pe(c, pe_of(g, m)));
        if (!base[m]) {
            free(base);
            return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                            "shmem: shmem_ptr failed for PE %d",
                            rd_shm_pe(c, pe_of(g, m)));
        }
    }
    /* In place (in == out): a member writes only the runs of its own
     * input that nobody else reads (its range of an all-reduce, its
     * chunks of a reduce-scatter), block by block after reading them
     * (rd_reduce_n), no work space at all.  An all-reduce then puts its
     * range to the others' same range once they have read it; a
     * reduce-scatter, once every member is done reading, moves its
     * chunks down to their places (each to a lower or equal offset). */
    int inplace = in == out;
    rd_shm_signal_group(c, slot, SIG_READY, g);
    redist_status_t st =
        rd_shm_wait(c, slot, SIG_READY, (long)(g->size - 1), err);
    if (!st) {
        for (uint64_t q = 0; q < rd_shm_part_runs(&r); q++) {
            uint64_t io, oo, len;
            rd_shm_part_run(&r, g->index, q, &io, &oo, &len);
            if (inplace)
                oo = io;
            red_inputs ri = {base, in, io * elem, NULL, 0, g->index,
                             g, block, 0, c};
            if (!get) {
                rd_reduce_n(x->dtype, x->reduce, out + oo * elem, len, g->size,
                            rd_shm_red_input, &ri);
            } else {
                /* rd_reduce_n reads input m whole before asking for
                 * m + 1 when given at most RD_REDUCE_BLOCK elements */
                for (uint64_t b = 0; b < len; b += RD_REDUCE_BLOCK) {
                    uint64_t n = len - b < RD_REDUCE_BLOCK
                                     ? len - b
                                     : RD_REDUCE_BLOCK;
                    ri.off = (io + b) * elem;
                    ri.len = n * elem;
                    rd_reduce_n(x->dtype, x->reduce, out + (oo + b) * elem, n,
                                g->size, rd_shm_red_input, &ri);
                }
            }
        }
        if (r.all_reduce)
            rd_shm_ar_put_range(c, g, &r, out, elem);
        rd_shm_complete();
        rd_shm_signal_group(c, slot, SIG_DONE, g);
        st = rd_shm_wait(c, slot, SIG_DONE, (long)(g->size - 1), err);
        for (uint64_t q = 0;
             !st && inplace && !r.all_reduce && q < rd_shm_part_runs(&r);
             q++) {
            uint64_t io, oo, len;
            rd_shm_part_run(&r, g->index, q, &io, &oo, &len);
            if (io != oo)
                memmove(out + oo * elem, out + io * elem, (size_t)(len * elem));
        }
    }
    free(base);
    return st;
}
