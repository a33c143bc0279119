/*
 * The geometry the reduction protocols share: the part of a
 * reduce_scatter or all_reduce each member computes (its chunks; its
 * range of an all_reduce, whose block is split into s ranges), the
 * pieces a push sends in rounds, the work-area slots, the inputs handed
 * to rd_reduce_n (member order, the executor's kernels: identical to the
 * sim), and the second half of an all_reduce: each member puts its
 * reduced range to the others (reduce-scatter + all-gather,
 * 2 (s-1)/s L per member).
 */
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/kernels.h"

uint64_t rd_shm_ar_lo(const red_part *r, int64_t t)
{
    return (uint64_t)((unsigned __int128)r->count * (uint64_t)t /
                      (uint64_t)r->s);
}

uint64_t rd_shm_part_runs(const red_part *r)
{
    return r->all_reduce ? 1 : r->pre;
}

/* Run q of member t's part. */
void rd_shm_part_run(const red_part *r, int64_t t, uint64_t q,
                     uint64_t *in_off, uint64_t *out_off, uint64_t *len)
{
    if (r->all_reduce) {
        *in_off = *out_off = rd_shm_ar_lo(r, t);
        *len = rd_shm_ar_lo(r, t + 1) - *in_off;
    } else {
        *in_off = (q * (uint64_t)r->s + (uint64_t)t) * r->chunk;
        *out_off = q * r->chunk;
        *len = r->chunk;
    }
}

/* Receiver k's work-area slot for member m's pieces: s - 1 slots, none
 * for the receiver itself (it reads its own input in place). */
uint64_t rd_shm_slot_of(int64_t m, int64_t k)
{
    return (uint64_t)(m < k ? m : m - 1);
}

const void *rd_shm_red_input(void *user, int64_t m)
{
    red_inputs *ri = user;
    if (m == ri->me)
        return ri->mine + ri->off;
    if (ri->work)
        return ri->work + rd_shm_slot_of(m, ri->me) * ri->slot;
    if (ri->base)
        return ri->base[m] + ri->off;
    shmem_getmem(ri->buf, ri->mine + ri->off, (size_t)ri->len,
                 rd_shm_pe(ri->c, pe_of(ri->g, m)));
    return ri->buf;
}

void rd_shm_red_part_of(const rd_xstep *x, red_part *r)
{
    memset(r, 0, sizeof *r);
    r->s = x->group.size;
    uint64_t n = 1;
    for (int d = 0; d < x->ndims; d++)
        n *= (uint64_t)x->in_shape[d];
    if (x->op == REDIST_OP_ALL_REDUCE) {
        r->all_reduce = 1;
        r->count = n;
    } else {
        int i = x->dim;
        r->pre = 1;
        for (int d = 0; d < i; d++)
            r->pre *= (uint64_t)x->in_shape[d];
        r->chunk = n / r->pre / (uint64_t)r->s;
    }
}

/* all_reduce, second half: put my reduced range to the others. */
void rd_shm_ar_put_range(redist_shmem_t *c, const rd_group *g,
                         const red_part *r, char *out, size_t elem)
{
    uint64_t lo = rd_shm_ar_lo(r, g->index),
             hi = rd_shm_ar_lo(r, g->index + 1);
    if (hi == lo)
        return;
    for (int64_t t = 1; t < g->size; t++)
        rd_shm_write_bytes(c, pe_of(g, (g->index + t) % g->size),
                           out + lo * elem, out + lo * elem, (hi - lo) * elem);
}

/* Piece `r` (round) of member t's part, pieces of at most B elements. */
int rd_shm_push_piece(const red_part *rp, int64_t t, uint64_t round,
                      uint64_t B, uint64_t *in_off, uint64_t *out_off,
                      uint64_t *len)
{
    uint64_t io, oo, n;
    if (rp->all_reduce) {
        rd_shm_part_run(rp, t, 0, &io, &oo, &n);
        if (round * B >= n)
            return 0;
        *in_off = io + round * B;
        *out_off = oo + round * B;
        *len = n - round * B < B ? n - round * B : B;
        return 1;
    }
    uint64_t per = (rp->chunk + B - 1) / B; /* pieces per run */
    if (per == 0 || round >= per * rp->pre)
        return 0;
    rd_shm_part_run(rp, t, round / per, &io, &oo, &n);
    uint64_t k = round % per;
    *in_off = io + k * B;
    *out_off = oo + k * B;
    *len = n - k * B < B ? n - k * B : B;
    return 1;
}

/* Rounds of push_piece: the most pieces of B elements of any member's
 * part. */
uint64_t rd_shm_piece_rounds(const red_part *rp, uint64_t B)
{
    uint64_t rounds = 0;
    for (int64_t t = 0; t < rp->s; t++) {
        uint64_t n =
            rp->all_reduce
                ? (rd_shm_ar_lo(rp, t + 1) - rd_shm_ar_lo(rp, t) + B - 1) / B
                : rp->pre * ((rp->chunk + B - 1) / B);
        if (n > rounds)
            rounds = n;
    }
    return rounds;
}

/* A pushed all-reduce may use, as receiver t's work space, the part of
 * its (symmetric) output outside its own range: that part is written
 * only by the others' final puts, after a group signal.  The elements
 * every receiver has free there (the least over the members that receive
 * anything: an empty range gets no pieces). */
uint64_t rd_shm_ar_out_free(const red_part *rp)
{
    uint64_t least = UINT64_MAX;
    for (int64_t t = 0; t < rp->s; t++) {
        uint64_t lo = rd_shm_ar_lo(rp, t), hi = rd_shm_ar_lo(rp, t + 1);
        uint64_t f = lo > rp->count - hi ? lo : rp->count - hi;
        if (hi == lo)
            continue;
        if (f < least)
            least = f;
    }
    return least == UINT64_MAX ? rp->count : least;
}
