/*
 * Serial push: no work space at all, when none within the bound is
 * left.  The output must be symmetric and apart from the input (which
 * may be private).  Each member's part is cut into blocks of at most
 * RD_REDUCE_BLOCK elements; for block i every member takes its turn as
 * the sender in member order: the receivers that have a block i tell it
 * their output block is free (READY), it puts its piece straight into
 * that block (the final place) and signals DONE; each receiver folds the
 * piece into its accumulator (rd_reduce_n, the same kernel and order as
 * everywhere: it reads input m whole before asking for m + 1), and
 * writes the block once all s are in.  An all_reduce then puts its range
 * to the others as the push does.  ~ blocks * s * 2 signals: the slowest
 * protocol; memory: none.
 */
#include "shmem_impl.h"
#include "../../exec/kernels.h"

/* Serial push: no work space at all.  The output must be symmetric and
 * apart from the input (which may be private).  Each member's part is cut
 * into blocks of at most RD_REDUCE_BLOCK elements; for block i every
 * member takes its turn as the sender in member order: the receivers
 * that have a block i tell it their output block is free (READY), it puts
 * its piece straight into that block (the final place) and signals DONE;
 * each receiver folds the piece into its accumulator (rd_reduce_n, the
 * same kernel and order as everywhere: it reads input m whole before
 * asking for m + 1), and writes the block once all s are in.  An
 * all_reduce then puts its range to the others as reduce_push does. */
typedef struct serial_round {
    redist_shmem_t *c;
    const rd_group *g;
    const red_part *rp;
    const char *in;
    char *out;
    size_t elem;
    int slot;
    uint64_t block; /* block number i */
    uint64_t in_off, out_off, len; /* mine, if have */
    int have;
    redist_status_t st;
    redist_error_t *err;
} serial_round;

static const void *serial_input(void *user, int64_t m)
{
    serial_round *sr = user;
    const rd_group *g = sr->g;
    int64_t me = g->index;
    const char *mine = sr->in + sr->in_off * sr->elem;
    if (sr->st)
        return mine; /* failed: no more waiting; the caller returns */
    if (m != me) {
        if (!sr->have)
            return mine;
        rd_shm_signal_pe(sr->c, sr->slot, SIG_READY, pe_of(g, m));
        sr->st = rd_shm_wait(sr->c, sr->slot, SIG_DONE, 1, sr->err);
        return sr->out + sr->out_off * sr->elem;
    }
    /* my turn: every receiver with a block i gets my piece */
    long n = 0;
    uint64_t io, oo, len;
    for (int64_t k = 0; k < g->size; k++)
        n += k != me && rd_shm_push_piece(sr->rp, k, sr->block,
                                          RD_REDUCE_BLOCK, &io, &oo, &len);
    sr->st = rd_shm_wait(sr->c, sr->slot, SIG_READY, n, sr->err);
    if (sr->st)
        return mine;
    for (int64_t t = 1; t < g->size; t++) {
        int64_t k = (me + t) % g->size;
        if (rd_shm_push_piece(sr->rp, k, sr->block, RD_REDUCE_BLOCK, &io, &oo,
                              &len))
            rd_shm_write_bytes(sr->c, pe_of(g, k), sr->out + oo * sr->elem,
                               sr->in + io * sr->elem, len * sr->elem);
    }
    rd_shm_complete();
    for (int64_t t = 1; t < g->size; t++) {
        int64_t k = (me + t) % g->size;
        if (rd_shm_push_piece(sr->rp, k, sr->block, RD_REDUCE_BLOCK, &io, &oo,
                              &len))
            rd_shm_signal_pe(sr->c, sr->slot, SIG_DONE, pe_of(g, k));
    }
    return mine;
}

redist_status_t rd_shm_reduce_serial(redist_shmem_t *c, const rd_xstep *x,
                                     const char *in, char *out, int slot,
                                     redist_error_t *err)
{
    const rd_group *g = &x->group;
    int64_t s = g->size;
    red_part rp;
    rd_shm_red_part_of(x, &rp);
    uint64_t blocks = rd_shm_piece_rounds(&rp, RD_REDUCE_BLOCK);
    serial_round sr = {c, g, &rp, in, out, x->elem, slot, 0, 0, 0, 0, 0,
                       REDIST_OK, err};
    for (uint64_t i = 0; i < blocks && !sr.st; i++) {
        sr.block = i;
        sr.have = rd_shm_push_piece(&rp, g->index, i, RD_REDUCE_BLOCK,
                                    &sr.in_off, &sr.out_off, &sr.len);
        if (!sr.have) {
            sr.in_off = 0;
            for (int64_t m = 0; m < s && !sr.st; m++)
                serial_input(&sr, m); /* my turn as the sender */
            continue;
        }
        /* the block is the last input read before it is written */
        rd_reduce_n(x->dtype, x->reduce, out + sr.out_off * x->elem, sr.len,
                    s, serial_input, &sr);
    }
    redist_status_t st = sr.st;
    if (!st && rp.all_reduce) {
        rd_shm_ar_put_range(c, g, &rp, out, x->elem);
        rd_shm_complete();
        rd_shm_signal_group(c, slot, SIG_END, g);
        st = rd_shm_wait(c, slot, SIG_END, (long)(s - 1), err);
    }
    return st;
}
