/*
 * A solo two-mesh array's transfer streamed through a symmetric window
 * (exchange_multi of a part with a stream; the streams themselves, their
 * order and the window's size are at the top of src/exec/set_stream.c).
 *
 * PROTOCOL.  Each device runs one loop that never blocks, as a receiver
 * and as a sender at once (a device may be both, and its peers run the
 * fills in their own order, so a blocking wait could deadlock):
 *   - receiver, fill k of its stream: one READY to each sender with
 *     bytes in fill k (an atomic increment of that sender's counter
 *     [receiver], so a sender tells its receivers apart); when the DONE
 *     counter has one more from each of them, the fill is in the window:
 *     copy (or reduce) it out into R (rd_stream_unpack), then fill k + 1;
 *   - sender, for each receiver: its j-th READY from that receiver is
 *     for the j-th fill it has bytes in; it puts those bytes (runs of
 *     its pieces, straight from S), completes them (shmem_quiet) and
 *     increments the receiver's DONE counter.
 * A receiver asks for fill k + 1 only after it has copied fill k out,
 * so a window is never written while it is read, and its first READY
 * comes after its phase A (whose scratch the window overlaps), its phase
 * B after its last fill (whose scratch overlaps it too).  A sender's
 * READY counts cannot mix fills: a receiver asks it for its next fill
 * only after its DONE for the previous one.  DONE counts cannot either:
 * a sender writes fill k + 1 only after the receiver asked, which it
 * does after fill k is complete.  Counters only grow; each device keeps
 * what it has counted over every run of the prepared object (the next
 * run's signals come only after this run's on both sides).  The loop
 * polls the abort word, so a failed peer ends it.
 *
 * COST.  Per fill and sender: 2 atomics and the puts of its runs; every
 * remote byte is put once and copied once more out of the window.
 * MEMORY: the window (the array's symmetric part, set_two.c) and
 * npes + 1 counters, symmetric, per prepared object.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/set_stream.h"
#include "../../core/internal.h"

/* Putting one piece's bytes of a fill. */
typedef struct put_ctx {
    const redist_shmem_t *c;
    int pe;
    char *win;     /* the receiver's window (symmetric address) */
    uint64_t at;   /* the piece's packed byte 0 in the window (mod 2^64) */
    const char *S; /* this device's S block */
} put_ctx;

static void put_run(void *user, uint64_t at, uint64_t packed, uint64_t len)
{
    put_ctx *u = user;
    rd_shm_write_bytes(u->c, u->pe, u->win + (u->at + packed), u->S + at,
                       len);
}

/* Sender: its bytes of fill f of receiver o->peer. */
static void put_fill(redist_shmem_t *c, const rd_stream *st,
                     const rd_stream_to *o, int64_t f, const char *S)
{
    uint64_t lo = (uint64_t)f * st->win, hi = lo + st->win;
    for (int64_t k = o->k0; k < o->k1; k++) {
        const rd_tpiece *p = &st->send[k];
        uint64_t pos = st->spos[k];
        uint64_t a = pos > lo ? pos : lo;
        uint64_t b = pos + p->bytes < hi ? pos + p->bytes : hi;
        if (a >= b)
            continue;
        put_ctx u = {c, (int)o->peer, st->window, pos - lo, S};
        rd_stream_runs(st->nd, st->s_shape, p->off, p->box, st->elem,
                       a - pos, b - pos, put_run, &u);
    }
}

/* Receiver: signal READY to every sender with bytes in fill k; the
 * DONE signals to expect. */
static long ask_fill(const rd_stream *st, int64_t k)
{
    uint64_t lo = (uint64_t)k * st->win, hi = lo + st->win;
    long n = 0;
    int64_t last = -1;
    for (int64_t i = rd_stream_first(st, k);
         i < st->nrecv && st->rpos[i] < hi; i++) {
        const rd_tpiece *p = &st->recv[i];
        uint64_t pos = st->rpos[i];
        if (p->peer == st->self || p->peer == last || !p->bytes ||
            pos + p->bytes <= lo)
            continue;
        shmem_long_atomic_inc(&st->sig[st->self], (int)p->peer);
        last = p->peer;
        n++;
    }
    return n;
}

redist_status_t rd_shm_stream(redist_shmem_t *c, const rd_xpart *q,
                              redist_error_t *err)
{
    rd_stream *st = q->stream;
    if (c->dead)
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "shmem: the context failed earlier");
    if (!st->sig || (st->nfills && !st->window))
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "shmem: a streamed transfer without its window");
    /* tests (rd_shmem_inject_failure): fail here, the peers see the
     * abort */
    if (c->nops++ == c->fail_at)
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "injected failure on PE %d", c->me);
    int64_t np = st->npes, k = 0;
    int asked = 0;
    int64_t *sent = st->sent; /* built with the stream: no allocation */
    if (st->nto)
        memset(sent, 0, (size_t)st->nto * sizeof *sent);
    redist_status_t r = REDIST_OK;
    for (unsigned spins = 1;; spins++) {
        int busy = 0, moved = 0;
        if (k < st->nfills) {
            busy = 1;
            if (!asked) {
                st->seen[np] += ask_fill(st, k);
                asked = 1;
            }
            if (shmem_long_test(&st->sig[np], SHMEM_CMP_GE, st->seen[np])) {
                rd_stream_unpack(st, k, q->send, q->recv);
                k++;
                asked = 0;
                moved = 1;
            }
        }
        for (int64_t j = 0; j < st->nto; j++) {
            const rd_stream_to *o = &st->to[j];
            if (sent[j] == o->nf)
                continue;
            busy = 1;
            if (!shmem_long_test(&st->sig[o->peer], SHMEM_CMP_GE,
                                 st->seen[o->peer] + 1))
                continue;
            st->seen[o->peer]++;
            put_fill(c, st, o, o->f0 + sent[j]++, q->send);
            rd_shm_complete();
            shmem_long_atomic_inc(&st->sig[np], (int)o->peer);
            moved = 1;
        }
        if (!busy)
            break;
        if (moved)
            continue;
        if (rd_shm_aborted(c)) {
            r = rd_shm_aborted_error(c, err);
            break;
        }
        if (spins % 16 == 0)
            sched_yield(); /* oversubscribed PEs */
    }
    if (!r && !st->nfills)
        rd_stream_unpack(st, -1, q->send, q->recv); /* local pieces */
    return r;
}

void rd_shmem_stream_cap(uint64_t bytes)
{
    rd_stream_cap = bytes;
}
