/*
 * A solo two-mesh array's transfer streamed through a window
 * (RD_SOLO_R_STREAM, set_two.c SOLO; the backend's protocol is at the
 * top of src/backend/shmem/stream.c).
 *
 * WHY.  One-sided puts need a symmetric target, and a symmetric
 * allocation has one size on every device: the R block (or the slabs of
 * a transfer that sums) received whole would take the largest
 * receiver's size on every device, over max(src_d, dst_d) wherever that
 * device's own blocks are smaller or absent.  Streamed, only a window
 * of `win` bytes is symmetric; R lies where its own device alone writes
 * it: the destination when the target phase is empty, the dead source
 * (rd_meshes_usr_blocks), else private memory of its own size.
 *
 * ALGORITHM.  A receiver's stream is its remote pieces (sender != it,
 * bytes > 0) packed one after the other, by sender (global id), then by
 * place in its R block, each box row-major.  Fill k is stream bytes
 * [k win, (k + 1) win) in the window.  A sender's pieces to one receiver
 * are consecutive in that stream: they start after the bytes of every
 * lower sender, which it learns from one walk of the transfer's pieces
 * (rd_stream_build), and so it knows for each fill which of its bytes
 * land where, without a message.  After a fill has landed the receiver
 * copies it to its places in R, or with pending sums reduces it in (the
 * first contribution to a place is copied): contributions to a place
 * come in ascending order of sender, as in the one-array sim run, so the
 * bits are the same.  A piece from the receiver to itself is applied
 * straight from S at its place in that order (with the fill that holds
 * the stream's next byte, the last fill at its end; all at once in a
 * stream of no fills).
 *
 * THE WINDOW (rd_stream_window) is the plan's alone, so the same on
 * every device: the largest that keeps within its bound every device
 * whose room (max(src_d, dst_d) less what it holds outside the
 * symmetric part) holds the rest of the symmetric part and one element,
 * at most the largest stream.  Devices whose room holds less are over
 * the bound with any window.
 *
 * COST.  Build: two walks of the transfer's pieces (O(target devices x
 * pieces per receiver), as rd_transfer_lists), O(N) counters, sorting.
 * A run: every remote byte is put once and copied (or reduced) once
 * more out of the window; ceil(stream / win) fills per receiver.
 * MEMORY: the window (symmetric), R where above; bookkeeping O(pieces +
 * N) per device.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "set_stream.h"
#include "../core/internal.h"
#include "../plan/plan_internal.h"
#include "../spec/spec_internal.h"

/* Per receiver (global id): its stream's bytes, and those of senders
 * below `me`. */
typedef struct walk_ctx {
    const redist_spec_t *s;
    int64_t me;
    uint64_t *total, *before;
} walk_ctx;

static void count_piece(void *user, int64_t r, int64_t q, const int64_t lo[],
                        const int64_t hi[])
{
    walk_ctx *w = user;
    int64_t to = w->s->two->dev[1][r], from = w->s->two->dev[0][q];
    if (to == from)
        return;
    uint64_t b = w->s->elem_size;
    for (int i = 0; i < w->s->ndims; i++)
        b *= (uint64_t)(hi[i] - lo[i]);
    if (w->total)
        w->total[to] += b;
    if (w->before && from < w->me)
        w->before[to] += b;
}

static redist_status_t walk(const redist_plan_t *plan, walk_ctx *w,
                            redist_error_t *err)
{
    if (rd_transfer_walk(plan->spec, &plan->m->sent, &plan->m->recvd,
                         plan->has_cost ? &plan->cost : NULL, count_piece, w))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    return REDIST_OK;
}

uint64_t rd_stream_cap;

redist_status_t rd_stream_window(const redist_plan_t *plan,
                                 const uint64_t room[], uint64_t base,
                                 uint64_t *win, redist_error_t *err)
{
    const redist_spec_t *s = plan->spec;
    int64_t n = s->two->ndevices;
    uint64_t elem = s->elem_size, most = 0, least = UINT64_MAX;
    walk_ctx w = {s, -1, calloc((size_t)n, sizeof(uint64_t)), NULL};
    *win = 0;
    if (!w.total)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    redist_status_t st = walk(plan, &w, err);
    for (int64_t d = 0; !st && d < n; d++)
        if (w.total[d] > most)
            most = w.total[d];
    free(w.total);
    if (st || !most)
        return st;
    uint64_t need = base > elem ? base : elem;
    for (int64_t d = 0; d < n; d++)
        if (room[d] >= need && room[d] < least)
            least = room[d];
    uint64_t x = least < most ? least / elem * elem : most;
    if (rd_stream_cap && x > rd_stream_cap)
        x = rd_stream_cap / elem * elem;
    *win = x > elem ? x : elem;
    return REDIST_OK;
}

/* A piece with its stream flag, to sort them together. */
typedef struct fpiece {
    rd_tpiece p;
    unsigned char first;
} fpiece;

static int cmp_off(const int64_t a[], const int64_t b[])
{
    for (int i = 0; i < REDIST_MAX_DIMS; i++)
        if (a[i] != b[i])
            return (a[i] > b[i]) - (a[i] < b[i]);
    return 0;
}

/* Stream order on the receiver: by sender, then place in R. */
static int by_sender(const void *a, const void *b)
{
    const fpiece *x = a, *y = b;
    if (x->p.peer != y->p.peer)
        return (x->p.peer > y->p.peer) - (x->p.peer < y->p.peer);
    return cmp_off(x->p.off, y->p.off);
}

/* ... and on the sender: by receiver, then place in its R. */
static int by_receiver(const void *a, const void *b)
{
    const rd_tpiece *x = a, *y = b;
    if (x->peer != y->peer)
        return (x->peer > y->peer) - (x->peer < y->peer);
    return cmp_off(x->poff, y->poff);
}

/* The receiving side of st from t. */
static int build_recv(rd_stream *st, const rd_tlists *t, int64_t dev)
{
    int64_t n = t->nrecv;
    fpiece *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    st->recv = malloc((size_t)(n ? n : 1) * sizeof *st->recv);
    st->rpos = malloc((size_t)(n ? n : 1) * sizeof *st->rpos);
    st->rfirst = malloc((size_t)(n ? n : 1));
    if (!f || !st->recv || !st->rpos || !st->rfirst) {
        free(f);
        return -1;
    }
    for (int64_t k = 0; k < n; k++) {
        f[k].p = t->recv[k];
        f[k].first = !st->sums || rd_tpiece_first(t, k);
    }
    if (n > 1)
        qsort(f, (size_t)n, sizeof *f, by_sender);
    uint64_t pos = 0;
    for (int64_t k = 0; k < n; k++) {
        st->recv[k] = f[k].p;
        st->rfirst[k] = f[k].first;
        st->rpos[k] = pos;
        if (f[k].p.peer != dev)
            pos += f[k].p.bytes;
    }
    free(f);
    st->nrecv = n;
    st->total = pos;
    st->nfills = st->win ? (int64_t)((pos + st->win - 1) / st->win) : 0;
    return 0;
}

/* The sending side of st from t: before[r], the bytes of senders below
 * dev in receiver r's stream. */
static int build_send(rd_stream *st, const rd_tlists *t, int64_t dev,
                      const uint64_t before[])
{
    int64_t n = t->nsend, nto = 0;
    st->send = malloc((size_t)(n ? n : 1) * sizeof *st->send);
    st->spos = malloc((size_t)(n ? n : 1) * sizeof *st->spos);
    st->to = malloc((size_t)(n ? n : 1) * sizeof *st->to);
    st->sent = malloc((size_t)(n ? n : 1) * sizeof *st->sent);
    if (!st->send || !st->spos || !st->to || !st->sent)
        return -1;
    if (n)
        memcpy(st->send, t->send, (size_t)n * sizeof *st->send);
    if (n > 1)
        qsort(st->send, (size_t)n, sizeof *st->send, by_receiver);
    for (int64_t k = 0; k < n;) {
        int64_t peer = st->send[k].peer, k0 = k;
        uint64_t pos = peer == dev ? 0 : before[peer], start = pos;
        for (; k < n && st->send[k].peer == peer; k++) {
            st->spos[k] = pos;
            pos += st->send[k].bytes;
        }
        if (peer == dev || pos == start || !st->win)
            continue; /* a local copy, or nothing to put */
        rd_stream_to *o = &st->to[nto++];
        o->peer = peer;
        o->k0 = k0;
        o->k1 = k;
        o->f0 = (int64_t)(start / st->win);
        o->nf = (int64_t)((pos - 1) / st->win) - o->f0 + 1;
    }
    st->nsend = n;
    st->nto = nto;
    return 0;
}

redist_status_t rd_stream_build(const redist_plan_t *plan, const rd_tlists *t,
                                int64_t dev, uint64_t win, rd_stream **out,
                                redist_error_t *err)
{
    const redist_spec_t *s = plan->spec;
    rd_stream *st = calloc(1, sizeof *st);
    walk_ctx w = {s, dev, NULL,
                  calloc((size_t)s->two->ndevices, sizeof(uint64_t))};
    *out = NULL;
    redist_status_t r = st && w.before ? walk(plan, &w, err)
                                       : rd_error(err, REDIST_ERR_NOMEM, NULL,
                                                  NULL, "out of memory");
    if (!r) {
        st->win = win;
        st->s = s;
        st->self = dev;
        st->sums = plan->m->sent.t.partial != 0;
        st->nd = t->ndims;
        st->elem = t->elem;
        memcpy(st->s_shape, t->s_shape, sizeof st->s_shape);
        memcpy(st->r_shape, t->r_shape, sizeof st->r_shape);
        if (build_recv(st, t, dev) || build_send(st, t, dev, w.before))
            r = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    free(w.before);
    if (r) {
        rd_stream_free(st);
        return r;
    }
    *out = st;
    return REDIST_OK;
}

void rd_stream_free(rd_stream *st)
{
    if (!st)
        return;
    free(st->recv);
    free(st->rpos);
    free(st->rfirst);
    free(st->send);
    free(st->spos);
    free(st->to);
    free(st->sent);
    free(st->seen);
    free(st);
}

void rd_stream_runs(int nd, const int64_t shape[], const int64_t off[],
                    const int64_t box[], uint64_t elem, uint64_t a,
                    uint64_t b, rd_run_fn fn, void *user)
{
    uint64_t rl = nd ? (uint64_t)box[nd - 1] * elem : elem;
    if (a >= b || !rl)
        return;
    for (uint64_t j = a / rl; j * rl < b; j++) {
        int64_t idx[REDIST_MAX_DIMS] = {0};
        uint64_t rem = j, lin = 0;
        for (int i = nd - 2; i >= 0; i--) {
            idx[i] = (int64_t)(rem % (uint64_t)box[i]);
            rem /= (uint64_t)box[i];
        }
        for (int i = 0; i < nd; i++)
            lin = lin * (uint64_t)shape[i] + (uint64_t)(off[i] + idx[i]);
        uint64_t lo = a > j * rl ? a : j * rl;
        uint64_t hi = b < (j + 1) * rl ? b : (j + 1) * rl;
        fn(user, lin * elem + (lo - j * rl), lo, hi - lo);
    }
}

/* Unpacking one piece's bytes of a fill into R. */
typedef struct unpack_ctx {
    const rd_stream *st;
    char *R;
    uint64_t at; /* the piece's packed byte 0 in the window (may be < 0:
                    as an offset added to the packed one) */
    int first;
} unpack_ctx;

static void unpack_run(void *user, uint64_t at, uint64_t packed, uint64_t len)
{
    unpack_ctx *u = user;
    const char *from = (const char *)u->st->window + (u->at + packed);
    if (u->first)
        memcpy(u->R + at, from, (size_t)len);
    else
        rd_reduce_pair(u->st->s->dtype, u->st->s->reduce, u->R + at, from,
                       len / u->st->elem);
}

/* Piece i's bytes in the stream (a local piece has none there). */
static uint64_t stream_len(const rd_stream *st, int64_t i)
{
    return st->recv[i].peer == st->self ? 0 : st->recv[i].bytes;
}

int64_t rd_stream_first(const rd_stream *st, int64_t k)
{
    uint64_t lo = k < 0 ? 0 : (uint64_t)k * st->win;
    int64_t i = 0, j = st->nrecv;
    while (i < j) { /* the ends do not decrease in stream order */
        int64_t m = i + (j - i) / 2;
        if (st->rpos[m] + stream_len(st, m) < lo)
            i = m + 1;
        else
            j = m;
    }
    return i;
}

void rd_stream_unpack(const rd_stream *st, int64_t k, const void *S, void *R)
{
    uint64_t lo = k < 0 ? 0 : (uint64_t)k * st->win;
    uint64_t hi = k < 0 ? 0 : lo + st->win;
    int64_t i = rd_stream_first(st, k);
    for (; i < st->nrecv && (k < 0 || st->rpos[i] <= hi); i++) {
        const rd_tpiece *p = &st->recv[i];
        uint64_t pos = st->rpos[i];
        if (p->peer == st->self) {
            /* a local piece: in the fill that holds the stream's next
             * byte (the last one at the end of the stream) */
            uint64_t at = k < 0 ? 0 : pos / st->win;
            if (k < 0 || at == (uint64_t)k ||
                (k == st->nfills - 1 && at > (uint64_t)k))
                rd_meshes_place(st->s, st->rfirst[i], R, st->r_shape, p->off,
                                S, p->pshape, p->poff, p->box);
            continue;
        }
        uint64_t a = pos > lo ? pos : lo;
        uint64_t b = pos + p->bytes < hi ? pos + p->bytes : hi;
        if (k < 0 || a >= b)
            continue;
        unpack_ctx u = {st, R, pos - lo, st->rfirst[i]};
        rd_stream_runs(st->nd, st->r_shape, p->off, p->box, st->elem,
                       a - pos, b - pos, unpack_run, &u);
    }
}
