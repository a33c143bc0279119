/*
 * Push (the inputs not reachable by load or get): in rounds of B
 * elements (B = work space / ((s-1) elem)), each member puts its
 * contribution to each receiver's work-area slot (READY / DONE handshake
 * per round), the receiver reduces.  ~ rounds * 2 (s-1) signals +
 * beta (s-1)/s L (plus the all_reduce's puts of its range).  The work
 * space, symmetric and at the same offset on every PE: an in-place
 * reduce_scatter's staged input's old place, else free scratch of the
 * step (be->spare_scratch), else, for an all_reduce, its output outside
 * the receiver's range (one more group signal, SIG_FREE, before the
 * final puts), else the context's work area, of which
 * redist_shmem_execute uses at most what max(src, dst) leaves.
 */
#include "shmem_impl.h"
#include "../../exec/kernels.h"

/* Receiver t's work space in its output (see ar_out_free): before its
 * range when that holds `bytes`, else after it. */
static char *ar_out_work(const red_part *rp, int64_t t, char *out,
                         size_t elem, uint64_t bytes)
{
    uint64_t lo = rd_shm_ar_lo(rp, t);
    return lo * elem >= bytes ? out : out + rd_shm_ar_lo(rp, t + 1) * elem;
}

/* Push: every member puts its contributions into the receivers' work
 * areas, in rounds. */
redist_status_t rd_shm_reduce_push(redist_shmem_t *c, redist_backend_t *be,
                                   const rd_xstep *x, const char *in,
                                   char *out, int slot, redist_error_t *err)
{
    const rd_group *g = &x->group;
    int64_t s = g->size, me = g->index;
    size_t elem = x->elem;
    red_part rp;
    rd_shm_red_part_of(x, &rp);
    uint64_t most = rp.all_reduce ? rd_shm_ar_lo(&rp, 1) + 1 : rp.chunk;
    /* the work area, s - 1 slots (one per other member): free scratch of
     * this pass when it holds a slot of one element per other member
     * (symmetric, at the same offset on every PE), else the context's
     * (red_mode) */
    uint64_t least = (uint64_t)(s - 1) * elem;
    char *work = c->work;
    uint64_t wbytes = c->work_bytes;
    int own = 1, in_out = 0;
    if (c->free_sym && c->free_sym_bytes >= least) {
        work = c->free_sym; /* an in-place reduce_scatter's input */
        wbytes = c->free_sym_bytes;
        own = 0;
    } else if (be->spare_scratch && be->spare_scratch_bytes >= least) {
        work = be->spare_scratch;
        wbytes = be->spare_scratch_bytes;
        own = 0;
    } else if (rp.all_reduce && rd_shm_ar_out_free(&rp) >= (uint64_t)(s - 1)) {
        wbytes =
            rd_shm_ar_out_free(&rp) * elem; /* in the output: ar_out_work */
        own = 0;
        in_out = 1;
    } else if (c->work_cap) { /* within what the bound leaves */
        uint64_t cap = c->work_cap > least ? c->work_cap : least;
        if (cap < wbytes)
            wbytes = cap;
    }
    uint64_t B = wbytes / least;
    if (B > most)
        B = most;
    if (B == 0)
        B = 1;
    uint64_t slotb = B * elem, rounds = rd_shm_piece_rounds(&rp, B);
    if (rounds == 0)
        rounds = 1; /* an empty round still consumes the READY signals */
    if (own && (uint64_t)(s - 1) * slotb > c->work_used)
        c->work_used = (uint64_t)(s - 1) * slotb;
    redist_status_t st = REDIST_OK;
    rd_shm_signal_group(c, slot, SIG_READY, g);
    for (uint64_t r = 0; r < rounds && !st; r++) {
        uint64_t io, oo, len;
        st = rd_shm_wait(c, slot, SIG_READY, (long)(s - 1), err);
        if (st)
            break;
        for (int64_t t = 1; t < s; t++) {
            int64_t k = (me + t) % s;
            char *wk = in_out ? ar_out_work(&rp, k, out, elem,
                                            (uint64_t)(s - 1) * slotb)
                              : work;
            if (rd_shm_push_piece(&rp, k, r, B, &io, &oo, &len))
                rd_shm_write_bytes(c, pe_of(g, k),
                                   wk + rd_shm_slot_of(me, k) * slotb,
                                   in + io * elem, len * elem);
        }
        rd_shm_complete();
        rd_shm_signal_group(c, slot, SIG_DONE, g);
        st = rd_shm_wait(c, slot, SIG_DONE, (long)(s - 1), err);
        if (st)
            break;
        if (rd_shm_push_piece(&rp, me, r, B, &io, &oo, &len)) {
            char *wk = in_out ? ar_out_work(&rp, me, out, elem,
                                            (uint64_t)(s - 1) * slotb)
                              : work;
            red_inputs ri = {NULL, in, io * elem, wk, slotb, me,
                             g, NULL, 0, c};
            rd_reduce_n(x->dtype, x->reduce, out + oo * elem, len, s,
                        rd_shm_red_input, &ri);
        }
        if (r + 1 < rounds)
            rd_shm_signal_group(c, slot, SIG_READY, g); /* my slots are free */
    }
    if (!st && in_out) { /* everybody is done with its work space */
        rd_shm_signal_group(c, slot, SIG_FREE, g);
        st = rd_shm_wait(c, slot, SIG_FREE, (long)(s - 1), err);
    }
    if (!st && rp.all_reduce) {
        rd_shm_ar_put_range(c, g, &rp, out, elem);
        rd_shm_complete();
        rd_shm_signal_group(c, slot, SIG_END, g);
        st = rd_shm_wait(c, slot, SIG_END, (long)(s - 1), err);
    }
    return st;
}
