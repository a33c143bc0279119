/*
 * A solo two-mesh array's transfer streamed through a window (internal;
 * the algorithm is at the top of set_stream.c).
 */
#ifndef REDIST_EXEC_SET_STREAM_H
#define REDIST_EXEC_SET_STREAM_H

#include "exec_internal.h"
#include "meshes.h"

/* One peer this device sends to: its pieces [k0, k1) of the send list,
 * its first byte in the peer's stream and the fills it writes into
 * ([f0, f0 + nf)). */
typedef struct rd_stream_to {
    int64_t peer, k0, k1, f0, nf;
} rd_stream_to;

/* This device's part of a streamed transfer.  The pieces are the
 * transfer lists' (rd_tlists), in stream order: by sender, then by
 * place in the receiver's R block.  A receiver's stream is its remote
 * pieces packed one after the other (each box row-major); fill k is
 * stream bytes [k win, (k + 1) win), which land at the start of its
 * window.  A piece from this device to itself is copied (or reduced)
 * straight from S at its place in that order. */
typedef struct rd_stream {
    uint64_t win; /* the window's bytes: the same on every device */
    const redist_spec_t *s;
    int64_t self; /* this device */
    int nd; /* the blocks' dims (0: a scalar, one element) and shapes */
    uint64_t elem;
    int64_t s_shape[REDIST_MAX_DIMS], r_shape[REDIST_MAX_DIMS];
    int sums; /* pending sums: the first contribution to a place is
                 copied, the others reduced in, by ascending sender */
    /* as a receiver: its pieces, each one's first stream byte and
     * whether it is copied (1) or reduced (0); its stream's bytes and
     * fills */
    int64_t nrecv;
    rd_tpiece *recv;
    uint64_t *rpos;
    unsigned char *rfirst;
    uint64_t total;
    int64_t nfills;
    /* as a sender: its pieces, each one's first byte in its receiver's
     * stream, and its receivers */
    int64_t nsend, nto;
    rd_tpiece *send;
    uint64_t *spos;
    rd_stream_to *to;
    /* during a run (the backend's): the window, the counters (symmetric,
     * npes + 1 longs: [q] READY signals from receiver q, [npes] DONE
     * signals from the senders) and the signals this device has counted
     * of each so far (private, npes + 1, over every run) */
    void *window;
    long *sig, *seen;
    int64_t npes;
    int64_t *sent; /* during a run: fills put to each receiver of `to` */
} rd_stream;

/* The window of a plan's streamed transfer: the same on every device
 * (the plan's alone).  `room` by global device: what max(src_d, dst_d)
 * leaves beside the blocks the device holds outside the symmetric part
 * (UINT64_MAX: no bound matters, e.g. over it anyway); `base`: the
 * symmetric part without the window.  The largest window that keeps
 * every device whose room holds base and one element within it, at most
 * the largest receiver's stream (0 when no device receives from
 * another).  Cost: one walk of the transfer's pieces. */
redist_status_t rd_stream_window(const redist_plan_t *plan,
                                 const uint64_t room[], uint64_t base,
                                 uint64_t *win, redist_error_t *err);
/* Tests: the most bytes a window may have (0: no cap; at least one
 * element), the same on every device; when set, the streamed layout
 * also wins ties (rd_set_two_r_usr). */
extern uint64_t rd_stream_cap;

/* Device dev's stream from its lists t (sorted as rd_transfer_lists
 * sorts them) and the window.  Cost: one walk of the transfer's pieces
 * (each sender's place in its receivers' streams), O(pieces log pieces)
 * sorting. */
redist_status_t rd_stream_build(const redist_plan_t *plan, const rd_tlists *t,
                                int64_t dev, uint64_t win, rd_stream **out,
                                redist_error_t *err);
void rd_stream_free(rd_stream *st);

/* The runs of packed bytes [a, b) of the box `box` at `off` in a block
 * of shape `shape` (nd dims, elem bytes each; nd 0: one element):
 * fn(user, byte offset in the block, packed offset, bytes) for each
 * contiguous run, in packed order. */
typedef void (*rd_run_fn)(void *user, uint64_t at, uint64_t packed,
                          uint64_t len);
void rd_stream_runs(int nd, const int64_t shape[], const int64_t off[],
                    const int64_t box[], uint64_t elem, uint64_t a,
                    uint64_t b, rd_run_fn fn, void *user);
/* The first receive (in stream order) that ends in fill k or later
 * (k -1: the first); the pieces of fill k follow it.  O(log pieces). */
int64_t rd_stream_first(const rd_stream *st, int64_t k);
/* Fill k landed in the window: its bytes into R (copied or reduced),
 * and the local pieces whose place in the stream falls in it (all of
 * them with k -1, for a stream of no fills).  S: this device's S block. */
void rd_stream_unpack(const rd_stream *st, int64_t k, const void *S,
                      void *R);

#endif
