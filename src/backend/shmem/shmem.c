/*
 * The OpenSHMEM backend (redist/shmem.h): one PE per mesh device, every
 * exchange a whole step of one-sided puts into the final places.
 *
 * STEP PROTOCOL.  Within a step each PE talks only to its group (the
 * members of its mesh-axis group, base + k * stride, any size and stride;
 * or its two permute partners).  Per step (a slot of three symmetric
 * counters per PE, indexed by the exchange's number within the call):
 *   1. READY: atomic increment of every peer's READY counter ("my input is
 *      final, my output and my work area are free"), then wait until mine
 *      has received one from every peer;
 *   2. data: every piece I owe each peer goes straight to its final
 *      offset in the peer's output block: stored with the box kernel when
 *      the peer's memory is mapped here (shmem_ptr: one node), else
 *      shmem_putmem_nbi per contiguous run (shmem_iput when the runs are
 *      single elements with regular strides); my own piece is a local box
 *      copy;
 *   3. fence + shmem_quiet, atomic increment of every peer's DONE counter,
 *      wait for theirs: my output is complete and nobody reads my input
 *      any more.
 * Counters only grow; each PE keeps the value it expects per counter.
 * Slots are reused by later calls: every call starts with the executor's
 * `agree` (a reduction over all PEs), so no PE can be a call ahead.
 * A PE never waits for anybody outside its group within a step: no
 * global barrier inside a plan.
 *
 * COST (alpha-beta, s members, L bytes per member): all_gather (s-1)
 * puts of L, all_to_all (s-1) puts of L/s, permute one put of L, each
 * split into its contiguous runs (one call per run, or one shmem_iput per
 * row of single-element runs), plus 2 (s-1) atomic signals; no pack, no
 * unpack, no receive-side copy.  Reductions (member order, the
 * executor's kernels: identical to sim):
 *   pull (peers' inputs reachable by load through shmem_ptr): member c
 *     reduces its chunk reading the s inputs in place; all_reduce splits
 *     the block into s ranges, reduces range c, then puts it to the
 *     others (reduce-scatter + all-gather, 2 (s-1)/s L per member);
 *   push (otherwise): in rounds of B elements (B = work space /
 *     ((s-1) elem)), each member puts its contribution to each receiver's
 *     work area slot (READY / DONE handshake per round), the receiver
 *     reduces.  The work space, symmetric and at the same offset on every
 *     PE: an in-place reduce_scatter's staged input's old place, else
 *     free scratch of the step (be->spare_scratch), else, for an
 *     all_reduce, its output outside the receiver's range (one more group
 *     signal, SIG_FREE, before the final puts), else the context's work
 *     area, of which redist_shmem_execute uses at most what max(src, dst)
 *     leaves;
 *   no work space (when that leaves less than one element per other
 *     member): get, a pull whose reads are shmem_getmem of one block of
 *     RD_REDUCE_BLOCK elements into the stack; or serial, a push of one
 *     member at a time straight into the receiver's output block.
 *   red_mode picks the protocol; work_promise makes the same choice from
 *   the executor's program, before the call.
 *   in place (private buffers, RD_BUILD_INPLACE): see run_step.
 * SCRATCH.  None of its own beyond the fixed symmetric work area (push
 * only) and O(slots + PEs) bytes of counters; the executor's scratch is
 * shmem_malloc'ed through `alloc` / `free` and counted there.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "redist/shmem.h"

#include "../../exec/exec_internal.h"
#include "../../exec/kernels.h"
#include "shmem_internal.h"
#include "../../core/internal.h"

#define RD_SHM_SLOTS 1024 /* exchanges per call */
enum { SIG_READY, SIG_DONE, SIG_END, SIG_FREE, RD_SHM_NSIG };
#define RD_SHM_NRED 8 /* longs per agreement reduction */

/* The fixed symmetric block (one shmem_malloc). */
typedef struct shm_sym {
    long sig[RD_SHM_SLOTS * RD_SHM_NSIG];
    long abort_word; /* 0, or 1 + the rank that aborted */
    long abort_status;
    long status[2];  /* a failed PE's status at agreement number parity */
    long red_src[RD_SHM_NRED], red_dst[RD_SHM_NRED];
    long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > RD_SHM_NRED
                  ? SHMEM_REDUCE_MIN_WRKDATA_SIZE
                  : RD_SHM_NRED];
    long psync[2][SHMEM_REDUCE_SYNC_SIZE];
    char text[2][REDIST_ERROR_TEXT_LENGTH];
    char abort_text[REDIST_ERROR_TEXT_LENGTH];
    long hash; /* this PE's hash at the last agreement */
} shm_sym;

struct redist_shmem {
    int npes, me;
    unsigned flags;
    uint64_t work_bytes;
    int ptr_ok; /* every PE reaches every PE by load */
    int dead;   /* a plan was aborted: every later call fails */
    shm_sym *sym;
    char *work; /* symmetric, work_bytes */
    long expect[RD_SHM_SLOTS * RD_SHM_NSIG];
    int turn;   /* parity of the reductions (pSync, text) */
    int seq;    /* exchanges so far in this call */
    uint64_t work_used; /* most of the work area used in this call */
    uint64_t work_cap;  /* redist_shmem_execute: most of it to use (0: all) */
    uint64_t bound_free; /* redist_shmem_execute: what max(src, dst) leaves
                            beside the executor's scratch (red_mode) */
    int prefer;          /* tests: the reduction protocol to use where it
                            can (-1: red_mode's choice) */
    uint64_t modes[RED_NMODES]; /* reductions run per protocol */
    char *free_sym;     /* free symmetric memory during this step */
    uint64_t free_sym_bytes;
    struct {
        void *p;
        size_t bytes;
    } scr[4];
    int alloc_failed; /* a scratch allocation of this call failed: the
                         first PE whose shmem_malloc did, else -1 */
    int alloc_mine;   /* ... and it was this PE's */
    int64_t nops, fail_at; /* exchanges so far; injected failure (tests) */
    struct redist_backend ep[2]; /* [0] any buffers, [1] symmetric */
};

/* ------------------------------------------------------------ basics */

static redist_shmem_t *ctx_of(redist_backend_t *be)
{
    return (redist_shmem_t *)be->ctx;
}

static int pe_of(const rd_group *g, int64_t k)
{
    return (int)rd_group_rank(g, k);
}

/* Max-reduce RD_SHM_NRED longs of red_src over all PEs into red_dst. */
static void reduce_max(redist_shmem_t *c)
{
    shm_sym *y = c->sym;
    shmem_long_max_to_all(y->red_dst, y->red_src, RD_SHM_NRED, 0, 0,
                          c->npes, y->pwrk, y->psync[c->turn]);
    c->turn ^= 1;
}

static redist_status_t aborted_error(redist_shmem_t *c, redist_error_t *err)
{
    long who = shmem_long_atomic_fetch(&c->sym->abort_word, c->me) - 1;
    char text[REDIST_ERROR_TEXT_LENGTH];
    c->dead = 1;
    if (who >= 0 && who < c->npes) {
        shmem_getmem(text, c->sym->abort_text, sizeof text, (int)who);
        text[sizeof text - 1] = '\0';
    } else {
        rd_strlcpy(text, "unknown error", sizeof text);
    }
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                    "aborted: PE %ld failed: %s", who, text);
}

static int aborted(redist_shmem_t *c)
{
    return shmem_long_test(&c->sym->abort_word, SHMEM_CMP_NE, 0);
}

/* Add 1 to counter j of the slot on PE pe. */
static void signal_pe(redist_shmem_t *c, int slot, int j, int pe)
{
    shmem_long_atomic_inc(&c->sym->sig[slot * RD_SHM_NSIG + j], pe);
}

static void signal_group(redist_shmem_t *c, int slot, int j,
                         const rd_group *g)
{
    for (int64_t t = 1; t < g->size; t++)
        signal_pe(c, slot, j, pe_of(g, (g->index + t) % g->size));
}

/* Wait until counter j of the slot has received n more signals. */
static redist_status_t wait_sig(redist_shmem_t *c, int slot, int j, long n,
                                redist_error_t *err)
{
    int i = slot * RD_SHM_NSIG + j;
    if (n <= 0)
        return REDIST_OK;
    c->expect[i] += n;
    long *a = &c->sym->sig[i];
    for (unsigned spins = 1;
         !shmem_long_test(a, SHMEM_CMP_GE, c->expect[i]); spins++) {
        if (aborted(c))
            return aborted_error(c, err);
        if (spins % 16 == 0)
            sched_yield(); /* oversubscribed PEs */
    }
    return REDIST_OK;
}

static redist_status_t next_slot(redist_shmem_t *c, int *slot,
                                 redist_error_t *err)
{
    if (c->dead)
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "shmem: the context failed earlier");
    if (c->seq >= RD_SHM_SLOTS)
        /* the same exchange on every PE: all fail here, nobody waits */
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "shmem: more than %d exchanges in one plan",
                        RD_SHM_SLOTS);
    *slot = c->seq++;
    return REDIST_OK;
}

/* --------------------------------------------------------------- puts */

/* Put `count` runs of `run` bytes, `sstride` apart in src, to `dstride`
 * apart at the symmetric address dst on PE pe. */
static void put_runs(char *dst, int64_t dstride, const char *src,
                     int64_t sstride, uint64_t run, uint64_t count, int pe)
{
    uintptr_t al = (uintptr_t)dst | (uintptr_t)src;
    if (count > 1 && (run == 1 || run == 2 || run == 4 || run == 8 ||
                      run == 16) &&
        dstride % (int64_t)run == 0 && sstride % (int64_t)run == 0 &&
        al % run == 0) {
        ptrdiff_t ts = (ptrdiff_t)(dstride / (int64_t)run);
        ptrdiff_t ss = (ptrdiff_t)(sstride / (int64_t)run);
        switch (run) {
        case 1: shmem_iput8(dst, src, ts, ss, (size_t)count, pe); return;
        case 2: shmem_iput16(dst, src, ts, ss, (size_t)count, pe); return;
        case 4: shmem_iput32(dst, src, ts, ss, (size_t)count, pe); return;
        case 8: shmem_iput64(dst, src, ts, ss, (size_t)count, pe); return;
        default: shmem_iput128(dst, src, ts, ss, (size_t)count, pe); return;
        }
    }
    for (uint64_t k = 0; k < count; k++)
        shmem_putmem_nbi(dst + (int64_t)k * dstride,
                         src + (int64_t)k * sstride, (size_t)run, pe);
}

/* rd_kernel_box to another PE: the box at soff of src (shape sshape) to
 * doff of the symmetric block dst (shape dshape) on PE pe, one put per
 * contiguous run. */
static void put_box(int pe, char *dst, const int64_t dshape[],
                    const int64_t doff[], const char *src,
                    const int64_t sshape[], const int64_t soff[],
                    const int64_t box[], int nd, size_t elem)
{
    int64_t sst[REDIST_MAX_DIMS], dst_[REDIST_MAX_DIMS];
    int64_t so = 0, dso = 0;
    if (nd == 0) { /* a 0-dim block: one element */
        shmem_putmem_nbi(dst, src, elem, pe);
        return;
    }
    for (int i = 0; i < nd; i++)
        if (box[i] <= 0)
            return;
    sst[nd - 1] = dst_[nd - 1] = (int64_t)elem;
    for (int i = nd - 2; i >= 0; i--) {
        sst[i] = sst[i + 1] * sshape[i + 1];
        dst_[i] = dst_[i + 1] * dshape[i + 1];
    }
    for (int i = 0; i < nd; i++) {
        so += soff[i] * sst[i];
        dso += doff[i] * dst_[i];
    }
    /* the innermost run: dims d.. (all after d whole in both blocks) */
    int d = nd - 1;
    uint64_t run = (uint64_t)box[d];
    while (d > 0 && box[d] == sshape[d] && box[d] == dshape[d]) {
        d--;
        run *= (uint64_t)box[d];
    }
    run *= elem;
    if (d == 0) {
        shmem_putmem_nbi(dst + dso, src + so, (size_t)run, pe);
        return;
    }
    int e = d - 1; /* strided dim of put_runs; dims < e: odometer */
    int64_t idx[REDIST_MAX_DIMS] = {0};
    for (;;) {
        int64_t s0 = so, d0 = dso;
        for (int i = 0; i < e; i++) {
            s0 += idx[i] * sst[i];
            d0 += idx[i] * dst_[i];
        }
        put_runs(dst + d0, dst_[e], src + s0, sst[e], run,
                 (uint64_t)box[e], pe);
        int i = e - 1;
        while (i >= 0 && ++idx[i] == box[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
}

/* The one-sided writes of a step.  When the peer's symmetric memory is
 * mapped in this process (shmem_ptr: PEs on one node, and not
 * REDIST_SHMEM_NO_PTR) the data is stored straight into the final place
 * with the local kernels: one copy, no library call per contiguous run;
 * otherwise shmem_putmem_nbi / shmem_iput.  Either way completion is
 * shmem_quiet (plus a fence for the stores) before the DONE signal. */
static void write_box(const redist_shmem_t *c, int pe, char *dst,
                      const int64_t dshape[], const int64_t doff[],
                      const char *src, const int64_t sshape[],
                      const int64_t soff[], const int64_t box[], int nd,
                      size_t elem)
{
    char *direct = c->ptr_ok ? shmem_ptr(dst, pe) : NULL;
    if (direct)
        rd_kernel_box(direct, dshape, doff, src, sshape, soff, box, nd,
                      elem);
    else
        put_box(pe, dst, dshape, doff, src, sshape, soff, box, nd, elem);
}

static void write_bytes(const redist_shmem_t *c, int pe, char *dst,
                        const char *src, uint64_t n)
{
    char *direct = c->ptr_ok ? shmem_ptr(dst, pe) : NULL;
    if (n == 0)
        return;
    if (direct)
        memcpy(direct, src, (size_t)n);
    else
        shmem_putmem_nbi(dst, src, (size_t)n, pe);
}

/* Every write of this PE is complete and visible (before a signal). */
static void complete(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shmem_quiet();
}

/* -------------------------------------------------------- reductions */

/* The part of a reduction that member t computes: runs of `len`
 * elements at in_off in every input, out_off in the output. */
typedef struct red_part {
    int all_reduce;
    uint64_t pre, chunk;  /* reduce_scatter: pre runs of chunk */
    uint64_t count;       /* all_reduce: elements of the block */
    int64_t s;
} red_part;

static uint64_t ar_lo(const red_part *r, int64_t t)
{
    return (uint64_t)((unsigned __int128)r->count * (uint64_t)t /
                      (uint64_t)r->s);
}

static uint64_t part_runs(const red_part *r)
{
    return r->all_reduce ? 1 : r->pre;
}

/* Run q of member t's part. */
static void part_run(const red_part *r, int64_t t, uint64_t q,
                     uint64_t *in_off, uint64_t *out_off, uint64_t *len)
{
    if (r->all_reduce) {
        *in_off = *out_off = ar_lo(r, t);
        *len = ar_lo(r, t + 1) - *in_off;
    } else {
        *in_off = (q * (uint64_t)r->s + (uint64_t)t) * r->chunk;
        *out_off = q * r->chunk;
        *len = r->chunk;
    }
}

/* Receiver k's work-area slot for member m's pieces: s - 1 slots, none
 * for the receiver itself (it reads its own input in place). */
static uint64_t slot_of(int64_t m, int64_t k)
{
    return (uint64_t)(m < k ? m : m - 1);
}

typedef struct red_inputs {
    const char *const *base; /* pull: member m's input (local address) */
    const char *mine;        /* my own input */
    uint64_t off;            /* bytes, in the inputs */
    const char *work;        /* push: slots of `slot` bytes */
    uint64_t slot;
    int64_t me;
    /* get (no base): the peers' inputs at the symmetric address `mine`,
     * `len` bytes fetched into `buf` one member at a time */
    const rd_group *g;
    char *buf;
    uint64_t len;
} red_inputs;

static const void *red_input(void *user, int64_t m)
{
    red_inputs *ri = user;
    if (m == ri->me)
        return ri->mine + ri->off;
    if (ri->work)
        return ri->work + slot_of(m, ri->me) * ri->slot;
    if (ri->base)
        return ri->base[m] + ri->off;
    shmem_getmem(ri->buf, ri->mine + ri->off, (size_t)ri->len,
                 pe_of(ri->g, m));
    return ri->buf;
}

static void red_part_of(const rd_xstep *x, red_part *r)
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
static void ar_put_range(redist_shmem_t *c, const rd_group *g,
                         const red_part *r, char *out, size_t elem)
{
    uint64_t lo = ar_lo(r, g->index), hi = ar_lo(r, g->index + 1);
    if (hi == lo)
        return;
    for (int64_t t = 1; t < g->size; t++)
        write_bytes(c, pe_of(g, (g->index + t) % g->size), out + lo * elem,
                    out + lo * elem, (hi - lo) * elem);
}

/* Pull: read the peers' (symmetric) inputs in place, by load through
 * shmem_ptr, or (get) with shmem_getmem, RD_REDUCE_BLOCK elements of one
 * member at a time into a block on the stack: no symmetric work space. */
static redist_status_t reduce_pull(redist_shmem_t *c, const rd_xstep *x,
                                   const char *in, char *out, int slot,
                                   int get, redist_error_t *err)
{
    const rd_group *g = &x->group;
    size_t elem = x->elem;
    red_part r;
    red_part_of(x, &r);
    _Alignas(16) char block[RD_REDUCE_BLOCK * 16];
    const char **base = NULL;
    if (!get) {
        base = malloc(sizeof *base * (size_t)g->size);
        if (!base)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
    }
    for (int64_t m = 0; m < g->size && base; m++) {
        base[m] = m == g->index ? in : shmem_ptr(in, pe_of(g, m));
        if (!base[m]) {
            free(base);
            return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                            "shmem: shmem_ptr failed for PE %d",
                            pe_of(g, m));
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
    signal_group(c, slot, SIG_READY, g);
    redist_status_t st = wait_sig(c, slot, SIG_READY, (long)(g->size - 1),
                                  err);
    if (!st) {
        for (uint64_t q = 0; q < part_runs(&r); q++) {
            uint64_t io, oo, len;
            part_run(&r, g->index, q, &io, &oo, &len);
            if (inplace)
                oo = io;
            red_inputs ri = {base, in, io * elem, NULL, 0, g->index,
                             g, block, 0};
            if (!get) {
                rd_reduce_n(x->dtype, x->reduce, out + oo * elem, len,
                            g->size, red_input, &ri);
            } else {
                /* rd_reduce_n reads input m whole before asking for
                 * m + 1 when given at most RD_REDUCE_BLOCK elements */
                for (uint64_t b = 0; b < len; b += RD_REDUCE_BLOCK) {
                    uint64_t n = len - b < RD_REDUCE_BLOCK
                                     ? len - b
                                     : RD_REDUCE_BLOCK;
                    ri.off = (io + b) * elem;
                    ri.len = n * elem;
                    rd_reduce_n(x->dtype, x->reduce, out + (oo + b) * elem,
                                n, g->size, red_input, &ri);
                }
            }
        }
        if (r.all_reduce)
            ar_put_range(c, g, &r, out, elem);
        complete();
        signal_group(c, slot, SIG_DONE, g);
        st = wait_sig(c, slot, SIG_DONE, (long)(g->size - 1), err);
        for (uint64_t q = 0; !st && inplace && !r.all_reduce &&
                             q < part_runs(&r);
             q++) {
            uint64_t io, oo, len;
            part_run(&r, g->index, q, &io, &oo, &len);
            if (io != oo)
                memmove(out + oo * elem, out + io * elem, (size_t)(len * elem));
        }
    }
    free(base);
    return st;
}

/* Piece `r` (round) of member t's part, pieces of at most B elements. */
static int push_piece(const red_part *rp, int64_t t, uint64_t round,
                      uint64_t B, uint64_t *in_off, uint64_t *out_off,
                      uint64_t *len)
{
    uint64_t io, oo, n;
    if (rp->all_reduce) {
        part_run(rp, t, 0, &io, &oo, &n);
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
    part_run(rp, t, round / per, &io, &oo, &n);
    uint64_t k = round % per;
    *in_off = io + k * B;
    *out_off = oo + k * B;
    *len = n - k * B < B ? n - k * B : B;
    return 1;
}

/* Rounds of push_piece: the most pieces of B elements of any member's
 * part. */
static uint64_t piece_rounds(const red_part *rp, uint64_t B)
{
    uint64_t rounds = 0;
    for (int64_t t = 0; t < rp->s; t++) {
        uint64_t n = rp->all_reduce
                         ? (ar_lo(rp, t + 1) - ar_lo(rp, t) + B - 1) / B
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
static uint64_t ar_out_free(const red_part *rp)
{
    uint64_t least = UINT64_MAX;
    for (int64_t t = 0; t < rp->s; t++) {
        uint64_t lo = ar_lo(rp, t), hi = ar_lo(rp, t + 1);
        uint64_t f = lo > rp->count - hi ? lo : rp->count - hi;
        if (hi == lo)
            continue;
        if (f < least)
            least = f;
    }
    return least == UINT64_MAX ? rp->count : least;
}

/* Receiver t's work space in its output (see ar_out_free): before its
 * range when that holds `bytes`, else after it. */
static char *ar_out_work(const red_part *rp, int64_t t, char *out,
                         size_t elem, uint64_t bytes)
{
    uint64_t lo = ar_lo(rp, t);
    return lo * elem >= bytes ? out : out + ar_lo(rp, t + 1) * elem;
}

/* Push: every member puts its contributions into the receivers' work
 * areas, in rounds. */
static redist_status_t reduce_push(redist_shmem_t *c, redist_backend_t *be,
                                   const rd_xstep *x, const char *in,
                                   char *out, int slot, redist_error_t *err)
{
    const rd_group *g = &x->group;
    int64_t s = g->size, me = g->index;
    size_t elem = x->elem;
    red_part rp;
    red_part_of(x, &rp);
    uint64_t most = rp.all_reduce ? ar_lo(&rp, 1) + 1 : rp.chunk;
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
    } else if (rp.all_reduce && ar_out_free(&rp) >= (uint64_t)(s - 1)) {
        wbytes = ar_out_free(&rp) * elem; /* in the output: ar_out_work */
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
    uint64_t slotb = B * elem, rounds = piece_rounds(&rp, B);
    if (rounds == 0)
        rounds = 1; /* an empty round still consumes the READY signals */
    if (own && (uint64_t)(s - 1) * slotb > c->work_used)
        c->work_used = (uint64_t)(s - 1) * slotb;
    redist_status_t st = REDIST_OK;
    signal_group(c, slot, SIG_READY, g);
    for (uint64_t r = 0; r < rounds && !st; r++) {
        uint64_t io, oo, len;
        st = wait_sig(c, slot, SIG_READY, (long)(s - 1), err);
        if (st)
            break;
        for (int64_t t = 1; t < s; t++) {
            int64_t k = (me + t) % s;
            char *wk = in_out ? ar_out_work(&rp, k, out, elem,
                                            (uint64_t)(s - 1) * slotb)
                              : work;
            if (push_piece(&rp, k, r, B, &io, &oo, &len))
                write_bytes(c, pe_of(g, k), wk + slot_of(me, k) * slotb,
                            in + io * elem, len * elem);
        }
        complete();
        signal_group(c, slot, SIG_DONE, g);
        st = wait_sig(c, slot, SIG_DONE, (long)(s - 1), err);
        if (st)
            break;
        if (push_piece(&rp, me, r, B, &io, &oo, &len)) {
            char *wk = in_out ? ar_out_work(&rp, me, out, elem,
                                            (uint64_t)(s - 1) * slotb)
                              : work;
            red_inputs ri = {NULL, in, io * elem, wk, slotb, me,
                             g, NULL, 0};
            rd_reduce_n(x->dtype, x->reduce, out + oo * elem, len, s,
                        red_input, &ri);
        }
        if (r + 1 < rounds)
            signal_group(c, slot, SIG_READY, g); /* my slots are free */
    }
    if (!st && in_out) { /* everybody is done with its work space */
        signal_group(c, slot, SIG_FREE, g);
        st = wait_sig(c, slot, SIG_FREE, (long)(s - 1), err);
    }
    if (!st && rp.all_reduce) {
        ar_put_range(c, g, &rp, out, elem);
        complete();
        signal_group(c, slot, SIG_END, g);
        st = wait_sig(c, slot, SIG_END, (long)(s - 1), err);
    }
    return st;
}

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
        signal_pe(sr->c, sr->slot, SIG_READY, pe_of(g, m));
        sr->st = wait_sig(sr->c, sr->slot, SIG_DONE, 1, sr->err);
        return sr->out + sr->out_off * sr->elem;
    }
    /* my turn: every receiver with a block i gets my piece */
    long n = 0;
    uint64_t io, oo, len;
    for (int64_t k = 0; k < g->size; k++)
        n += k != me &&
             push_piece(sr->rp, k, sr->block, RD_REDUCE_BLOCK, &io, &oo, &len);
    sr->st = wait_sig(sr->c, sr->slot, SIG_READY, n, sr->err);
    if (sr->st)
        return mine;
    for (int64_t t = 1; t < g->size; t++) {
        int64_t k = (me + t) % g->size;
        if (push_piece(sr->rp, k, sr->block, RD_REDUCE_BLOCK, &io, &oo, &len))
            write_bytes(sr->c, pe_of(g, k), sr->out + oo * sr->elem,
                        sr->in + io * sr->elem, len * sr->elem);
    }
    complete();
    for (int64_t t = 1; t < g->size; t++) {
        int64_t k = (me + t) % g->size;
        if (push_piece(sr->rp, k, sr->block, RD_REDUCE_BLOCK, &io, &oo, &len))
            signal_pe(sr->c, sr->slot, SIG_DONE, pe_of(g, k));
    }
    return mine;
}

static redist_status_t reduce_serial(redist_shmem_t *c, const rd_xstep *x,
                                     const char *in, char *out, int slot,
                                     redist_error_t *err)
{
    const rd_group *g = &x->group;
    int64_t s = g->size;
    red_part rp;
    red_part_of(x, &rp);
    uint64_t blocks = piece_rounds(&rp, RD_REDUCE_BLOCK);
    serial_round sr = {c, g, &rp, in, out, x->elem, slot, 0, 0, 0, 0, 0,
                       REDIST_OK, err};
    for (uint64_t i = 0; i < blocks && !sr.st; i++) {
        sr.block = i;
        sr.have = push_piece(&rp, g->index, i, RD_REDUCE_BLOCK, &sr.in_off,
                             &sr.out_off, &sr.len);
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
        ar_put_range(c, g, &rp, out, x->elem);
        complete();
        signal_group(c, slot, SIG_END, g);
        st = wait_sig(c, slot, SIG_END, (long)(s - 1), err);
    }
    return st;
}

/* ------------------------------------------------------------- steps */

static int is_scratch(const redist_shmem_t *c, const void *p)
{
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            return 1;
    return 0;
}

/* Bytes of the executor's scratch buffer starting at p (0: not one). */
static uint64_t scratch_cap(const redist_shmem_t *c, const void *p)
{
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            return c->scr[i].bytes;
    return 0;
}

/* How a reduction over more than one member runs.  The facts come from
 * the pass (work_promise) or from the step's buffers (run_step): the same
 * decision either way. */
typedef struct red_facts {
    int64_t s;
    size_t elem;
    int all_reduce;
    uint64_t in_bytes;
    int in_sym;           /* input symmetric (the peers can read it) */
    int in_place;         /* input == output */
    int out_sym;          /* output symmetric */
    uint64_t out_cap;     /* bytes of the output's scratch buffer, or 0 */
    uint64_t spare_bytes; /* the pass's spare region */
    uint64_t sspare_bytes; /* free symmetric scratch of the pass */
    uint64_t bound_free;  /* what max(src, dst) leaves beside the scratch */
} red_facts;

/* ar_out_free of the facts' all_reduce */
static uint64_t ar_free(const red_facts *f)
{
    red_part rp = {1, 0, 0, f->in_bytes / f->elem, f->s};
    return ar_out_free(&rp);
}


/* The protocols this reduction can use (a mask of 1 << RED_*). */
static unsigned red_legal(const redist_shmem_t *c, const red_facts *f)
{
    uint64_t least = (uint64_t)(f->s - 1) * f->elem; /* one slot each */
    unsigned legal = 0;
    /* a private input that fits in its (symmetric) output is copied
     * there and runs in place */
    int copy = !f->in_place && f->out_sym && f->out_cap >= f->in_bytes;
    if (f->in_sym && c->ptr_ok)
        legal |= 1u << RED_PULL;
    if (f->in_sym)
        legal |= 1u << RED_GET;
    if (copy && c->ptr_ok)
        legal |= 1u << RED_COPY_PULL;
    if (copy)
        legal |= 1u << RED_COPY_GET;
    /* a push reads its input apart from the output: an in-place one
     * first stages it in the spare region */
    if (!f->in_place || f->spare_bytes >= f->in_bytes) {
        int ar = f->all_reduce && ar_free(f) >= (uint64_t)(f->s - 1);
        if (f->in_place ? ar || (!f->all_reduce &&
                                 f->in_bytes - f->in_bytes / (uint64_t)f->s >=
                                     least) /* the staged input's place */
                        : ar || f->sspare_bytes >= least)
            legal |= 1u << RED_PUSH;
        legal |= 1u << RED_PUSH_WORK;
    }
    if (!f->in_place && f->out_sym)
        legal |= 1u << RED_SERIAL;
    return legal;
}

/* The protocol of a reduction over more than one member: by load where
 * the inputs are reachable, else pushed into free symmetric memory, else
 * into the context's work area within what max(src, dst) leaves; past
 * that, protocols with no symmetric work space at all (slower: blocking
 * reads, or one sender at a time). */
static int red_mode(const redist_shmem_t *c, const red_facts *f)
{
    static const int order[] = {RED_PULL, RED_COPY_PULL, RED_PUSH,
                                RED_PUSH_WORK, RED_GET, RED_COPY_GET,
                                RED_SERIAL};
    if (f->s <= 1)
        return RED_PULL;
    unsigned legal = red_legal(c, f);
    if (c->prefer >= 0 && (legal >> c->prefer & 1u))
        return c->prefer;
    if (f->bound_free < (uint64_t)(f->s - 1) * f->elem)
        legal &= ~(1u << RED_PUSH_WORK); /* over the bound */
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (legal >> order[k] & 1u)
            return order[k];
    return RED_PUSH_WORK; /* not reached: a private input is copied in or
                             the output is symmetric */
}

static redist_status_t run_step(redist_backend_t *be, const rd_xstep *x,
                                const void *in_, void *out_,
                                redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    int symmetric = be == &c->ep[1];
    const char *in = in_;
    char *out = out_;
    const rd_group *g = &x->group;
    int nd = x->ndims, slot = 0;
    redist_status_t st = next_slot(c, &slot, err);
    if (st)
        return st;
    if (c->nops++ == c->fail_at) {
        /* tests: fail after telling the peers we are ready, as a PE that
         * breaks in the middle of a step would */
        if (x->op == REDIST_OP_PERMUTE) {
            if (x->send_to != c->me)
                signal_pe(c, slot, SIG_READY, (int)x->recv_from);
        } else if (x->op == REDIST_OP_EXCHANGE) {
            for (int64_t k = 0; k < x->xchg->nrecv; k++)
                if (x->xchg->recv[k].peer != c->me)
                    signal_pe(c, slot, SIG_READY,
                              (int)x->xchg->recv[k].peer);
        } else {
            signal_group(c, slot, SIG_READY, g);
        }
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "injected failure on PE %d", c->me);
    }

    /* In place (in == out, RD_BUILD_INPLACE: the executor's scratch is
     * the only symmetric memory): pulled reductions handle it, anything
     * else first copies its input to the pass's spare region (local
     * memory is fine as the source of puts) and runs from there. */
    uint64_t in_bytes = x->elem;
    for (int d = 0; d < nd; d++)
        in_bytes *= (uint64_t)x->in_shape[d];
    int mode = RED_PUSH, pull = 0;
    if (x->op == REDIST_OP_REDUCE_SCATTER || x->op == REDIST_OP_ALL_REDUCE) {
        red_facts f = {g->size, x->elem, x->op == REDIST_OP_ALL_REDUCE,
                       in_bytes, symmetric || is_scratch(c, in), in == out,
                       symmetric || is_scratch(c, out), scratch_cap(c, out),
                       be->spare_bytes,
                       be->spare_scratch_bytes, c->bound_free};
        mode = red_mode(c, &f);
        if (g->size > 1)
            c->modes[mode]++;
        if (mode == RED_COPY_PULL || mode == RED_COPY_GET) {
            memcpy(out, in, (size_t)in_bytes);
            in = out;
        }
        pull = mode != RED_PUSH && mode != RED_PUSH_WORK &&
               mode != RED_SERIAL;
    }
    if (in == out && !pull &&
        !(x->op == REDIST_OP_PERMUTE && x->send_to == c->me)) {
        if (!be->spare || be->spare_bytes < in_bytes)
            return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                            "internal error: in-place step without %llu "
                            "bytes of spare space",
                            (unsigned long long)in_bytes);
        memcpy(be->spare, in, (size_t)in_bytes);
        in = be->spare;
        if (x->op == REDIST_OP_REDUCE_SCATTER) {
            /* the staged input's old place, past the output, is free
             * symmetric memory at the same offset on every PE: the
             * pushes' work area */
            uint64_t ob = in_bytes / (uint64_t)g->size;
            c->free_sym = out + ob;
            c->free_sym_bytes = in_bytes - ob;
        }
    }

    if (x->op == REDIST_OP_PERMUTE) {
        uint64_t bytes = in_bytes;
        if (x->send_to == c->me) {
            if (out != in)
                memcpy(out, in, (size_t)bytes);
            return REDIST_OK;
        }
        signal_pe(c, slot, SIG_READY, (int)x->recv_from);
        st = wait_sig(c, slot, SIG_READY, 1, err);
        if (st)
            return st;
        write_bytes(c, (int)x->send_to, out, in, bytes);
        complete();
        signal_pe(c, slot, SIG_DONE, (int)x->send_to);
        return wait_sig(c, slot, SIG_DONE, 1, err);
    }
    if (x->op == REDIST_OP_EXCHANGE) {
        /* point to point: each box straight from my block to its place
         * in the receiver's (lists sorted by peer, each peer once) */
        const rd_xchg *xc = x->xchg;
        int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS],
            ob[REDIST_MAX_DIMS];
        long nsend = 0, nrecv = 0;
        for (int64_t k = 0; k < xc->nrecv; k++)
            if (xc->recv[k].peer != c->me) {
                signal_pe(c, slot, SIG_READY, (int)xc->recv[k].peer);
                nrecv++;
            }
        for (int64_t k = 0; k < xc->nsend; k++)
            nsend += xc->send[k].peer != c->me;
        st = wait_sig(c, slot, SIG_READY, nsend, err);
        if (st)
            return st;
        for (int64_t k = 0; k < xc->nsend; k++) {
            int64_t d = xc->send[k].peer;
            if (!rd_xchg_box(xc, c->me, d, box, oa, ob))
                continue;
            if (d == c->me)
                rd_kernel_box(out, x->out_shape, ob, in, x->in_shape, oa,
                              box, nd, x->elem);
            else
                write_box(c, (int)d, out, x->out_shape, ob, in, x->in_shape,
                          oa, box, nd, x->elem);
        }
        complete();
        for (int64_t k = 0; k < xc->nsend; k++)
            if (xc->send[k].peer != c->me)
                signal_pe(c, slot, SIG_DONE, (int)xc->send[k].peer);
        return wait_sig(c, slot, SIG_DONE, nrecv, err);
    }
    if (x->op == REDIST_OP_REDUCE_SCATTER || x->op == REDIST_OP_ALL_REDUCE) {
        if (pull)
            return reduce_pull(c, x, in, out, slot,
                               mode == RED_GET || mode == RED_COPY_GET, err);
        if (mode == RED_SERIAL)
            return reduce_serial(c, x, in, out, slot, err);
        st = reduce_push(c, be, x, in, out, slot, err);
        c->free_sym = NULL;
        c->free_sym_bytes = 0;
        return st;
    }

    int64_t s = g->size, me = g->index;
    int64_t box[REDIST_MAX_DIMS], soff[REDIST_MAX_DIMS],
        doff[REDIST_MAX_DIMS];
    int i, j = -1;
    memcpy(box, x->in_shape, sizeof box);
    memset(soff, 0, sizeof soff);
    memset(doff, 0, sizeof doff);
    if (x->op == REDIST_OP_ALL_GATHER) {
        i = x->dim;
    } else if (x->op == REDIST_OP_ALL_TO_ALL) {
        i = x->from_dim;
        j = x->to_dim;
        box[j] /= s;
    } else {
        return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                        "shmem: no step form of %s", redist_op_name(x->op));
    }
    doff[i] = me * x->in_shape[i];
    signal_group(c, slot, SIG_READY, g);
    st = wait_sig(c, slot, SIG_READY, (long)(s - 1), err);
    if (st)
        return st;
    for (int64_t t = 1; t <= s; t++) {
        int64_t k = (me + t) % s; /* the others first, then me */
        if (j >= 0)
            soff[j] = k * box[j];
        if (k == me)
            rd_kernel_box(out, x->out_shape, doff, in, x->in_shape, soff, box,
                          nd, x->elem);
        else
            write_box(c, pe_of(g, k), out, x->out_shape, doff, in,
                      x->in_shape, soff, box, nd, x->elem);
    }
    complete();
    signal_group(c, slot, SIG_DONE, g);
    return wait_sig(c, slot, SIG_DONE, (long)(s - 1), err);
}

static redist_status_t shm_step(redist_backend_t *be, const rd_xstep *x,
                                const void *in, void *out,
                                redist_error_t *err)
{
    return run_step(be, x, in, out, err);
}

/* The contiguous ops (REDIST_SHMEM_PACKED): 1-D or 2-D steps. */
static void xstep_init(rd_xstep *x, redist_op_t op, const rd_group *g,
                       size_t elem)
{
    memset(x, 0, sizeof *x);
    x->op = op;
    x->elem = elem;
    x->dtype = REDIST_U8;
    if (g)
        x->group = *g;
}

static redist_status_t shm_all_gather(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t bytes, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_ALL_GATHER, g, 1);
    x.ndims = 2;
    x.dim = 0;
    x.in_shape[0] = 1;
    x.in_shape[1] = x.out_shape[1] = (int64_t)bytes;
    x.out_shape[0] = g->size;
    return run_step(be, &x, send, recv, err);
}

static redist_status_t shm_all_to_all(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t bytes, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_ALL_TO_ALL, g, 1);
    x.ndims = 2;
    x.from_dim = 0;
    x.to_dim = 1;
    x.in_shape[0] = 1;
    x.in_shape[1] = g->size * (int64_t)bytes;
    x.out_shape[0] = g->size;
    x.out_shape[1] = (int64_t)bytes;
    return run_step(be, &x, send, recv, err);
}

static redist_status_t shm_reduce_scatter(redist_backend_t *be,
                                          const rd_group *g, const void *send,
                                          void *recv, uint64_t count,
                                          redist_dtype_t dtype,
                                          redist_reduce_t op,
                                          redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_REDUCE_SCATTER, g, redist_dtype_size(dtype));
    x.dtype = dtype;
    x.reduce = op;
    x.ndims = 1;
    x.dim = 0;
    x.in_shape[0] = g->size * (int64_t)count;
    x.out_shape[0] = (int64_t)count;
    return run_step(be, &x, send, recv, err);
}

static redist_status_t shm_all_reduce(redist_backend_t *be, const rd_group *g,
                                      const void *send, void *recv,
                                      uint64_t count, redist_dtype_t dtype,
                                      redist_reduce_t op, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_ALL_REDUCE, g, redist_dtype_size(dtype));
    x.dtype = dtype;
    x.reduce = op;
    x.ndims = 1;
    x.in_shape[0] = x.out_shape[0] = (int64_t)count;
    return run_step(be, &x, send, recv, err);
}

static redist_status_t shm_permute(redist_backend_t *be, const void *send,
                                   int64_t to, void *recv, int64_t from,
                                   uint64_t bytes, redist_error_t *err)
{
    rd_xstep x;
    xstep_init(&x, REDIST_OP_PERMUTE, NULL, 1);
    x.ndims = 1;
    x.in_shape[0] = x.out_shape[0] = (int64_t)bytes;
    x.send_to = to;
    x.recv_from = from;
    return run_step(be, &x, send, recv, err);
}

/* ------------------------------------------------ agreement, failure */

static void post_error(redist_shmem_t *c, redist_status_t st,
                       const redist_error_t *err, char *text, long *status)
{
    *status = st;
    rd_strlcpy(text, err && err->text[0] ? err->text : redist_status_string(st),
               REDIST_ERROR_TEXT_LENGTH);
    (void)c;
}

/* Every PE learns the first failed PE (and its error) and whether the
 * hashes agree.  One reduction over all PEs: also a synchronisation
 * point (no PE leaves before every PE arrived). */
static redist_status_t agree_all(redist_shmem_t *c, redist_status_t local,
                                 uint64_t hash, long extra,
                                 const char *what, long *extra_max,
                                 redist_error_t *err)
{
    shm_sym *y = c->sym;
    int t = c->turn;
    if (local)
        post_error(c, local, err, y->text[t], &y->status[t]);
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = local ? (long)(c->npes - c->me) : 0;
    y->red_src[1] = (long)hash;
    y->red_src[2] = ~(long)hash;
    y->red_src[3] = extra;
    y->hash = (long)hash;
    reduce_max(c);
    long first = y->red_dst[0] ? c->npes - y->red_dst[0] : -1;
    int differs = first < 0 && y->red_dst[1] != ~y->red_dst[2];
    if (extra_max)
        *extra_max = y->red_dst[3];
    long who = -1;
    if (differs) { /* which PE differs from PE 0: PE 0 rewrites its hash
                    * only after everybody has passed this reduction */
        long h0 = shmem_long_g(&y->hash, 0);
        memset(y->red_src, 0, sizeof y->red_src);
        y->red_src[0] = (long)hash != h0 ? (long)(c->npes - c->me) : 0;
        reduce_max(c);
        who = c->npes - y->red_dst[0];
    }
    if (local)
        return local;
    if (first >= 0) {
        char text[REDIST_ERROR_TEXT_LENGTH];
        long status = shmem_long_g(&y->status[t], (int)first);
        shmem_getmem(text, y->text[t], sizeof text, (int)first);
        text[sizeof text - 1] = '\0';
        if (status >= 0 || status < -100)
            status = REDIST_ERR_BACKEND;
        return rd_error(err, (redist_status_t)status, NULL, NULL,
                        "PE %ld failed: %s", first, text);
    }
    if (differs)
        return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                        "the PEs were given different %s (PE %ld differs "
                        "from PE 0)",
                        what, who);
    return REDIST_OK;
}

static redist_status_t shm_agree(redist_backend_t *be, redist_status_t local,
                                 uint64_t plan_hash, redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    c->seq = 0;
    if (c->alloc_failed >= 0) { /* every PE saw NULL (alloc_all) */
        if (err && local) /* the executor's "cannot allocate" */
            redist_error_clear(err);
        if (!c->alloc_mine)
            local = REDIST_OK; /* the PE that failed says why */
        else if (local)
            local = rd_error(err, local, NULL, NULL,
                             "cannot allocate the executor's scratch in "
                             "the symmetric heap of PE %d (too small: "
                             "SHMEM_SYMMETRIC_SIZE)",
                             c->me);
        c->alloc_failed = -1;
        c->alloc_mine = 0;
    }
    if (!local && (c->dead || aborted(c))) {
        c->dead = 1;
        local = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                         "shmem: the context failed earlier (a plan was "
                         "aborted)");
    }
    return agree_all(c, local, plan_hash, 0, "plans", NULL, err);
}

static void shm_abort(redist_backend_t *be, redist_status_t st,
                      const redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    if (aborted(c)) { /* somebody else was first */
        c->dead = 1;
        return;
    }
    c->dead = 1;
    post_error(c, st, err, c->sym->abort_text, &c->sym->abort_status);
    shmem_quiet();
    for (int pe = 0; pe < c->npes; pe++)
        (void)shmem_long_atomic_compare_swap(&c->sym->abort_word, 0,
                                             (long)c->me + 1, pe);
    shmem_quiet();
}

/* ----------------------------------------------------------- scratch */

/*
 * shmem_malloc on every PE that fails on every PE together: NULL on every
 * PE if it failed on any (*mine: on this one), so the symmetric heaps stay
 * alike and the PEs in step.  shmem_malloc is collective but may fail on
 * one PE only (a smaller heap there).  Open MPI 4.1 returns NULL then
 * without the barrier a successful shmem_malloc ends with, and
 * shmem_free(NULL) has none either: the failing PE stands in for both.
 */
static void *alloc_all(redist_shmem_t *c, size_t bytes, int *mine)
{
    void *p = shmem_malloc(bytes);
    *mine = p == NULL;
    if (!p)
        shmem_barrier_all();
    shm_sym *y = c->sym;
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = p ? 0 : (long)(c->npes - c->me);
    reduce_max(c);
    if (!y->red_dst[0])
        return p;
    c->alloc_failed = (int)(c->npes - y->red_dst[0]);
    if (p)
        shmem_free(p);
    else
        shmem_barrier_all();
    return NULL;
}

void *rd_shmem_malloc_all(redist_shmem_t *c, size_t bytes, int *mine)
{
    *mine = 0;
    if (!c || !bytes)
        return NULL;
    void *p = alloc_all(c, bytes, mine);
    c->alloc_failed = -1;
    return p;
}

static void *shm_alloc(redist_backend_t *be, size_t bytes)
{
    redist_shmem_t *c = ctx_of(be);
    int mine;
    void *p = alloc_all(c, bytes, &mine);
    c->alloc_mine |= mine;
    if (p)
        for (int i = 0; i < 4; i++)
            if (!c->scr[i].p) {
                c->scr[i].p = p;
                c->scr[i].bytes = bytes;
                break;
            }
    return p;
}

static void shm_free(redist_backend_t *be, void *p, size_t bytes)
{
    redist_shmem_t *c = ctx_of(be);
    (void)bytes;
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            c->scr[i].p = NULL;
    shmem_free(p);
}

/* ------------------------------------------------------- ops tables */

#define RD_SHM_FUSED                                                       \
    (1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |             \
     1u << REDIST_OP_REDUCE_SCATTER | 1u << REDIST_OP_ALL_REDUCE |         \
     1u << REDIST_OP_PERMUTE | 1u << REDIST_OP_EXCHANGE)

/* In place (run_step): a staged copy of the input in the spare region,
 * except pulled reductions: an all-reduce needs nothing, a reduce-scatter
 * room for its output. */
static uint64_t shm_inplace_need(const redist_backend_t *be,
                                 const rd_xstep *x, int fused,
                                 uint64_t in_bytes)
{
    const redist_shmem_t *c = be->ctx;
    (void)fused;
    (void)c;
    /* reductions: pulled (loads or gets) in place with no spare at all,
     * or pushed from a staged copy when the spare region holds one
     * (red_mode) */
    if (x->op == REDIST_OP_REDUCE_SCATTER || x->op == REDIST_OP_ALL_REDUCE)
        return 0;
    return in_bytes;
}

#define RD_SHM_INPLACE                                                     \
    (1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |             \
     1u << REDIST_OP_REDUCE_SCATTER | 1u << REDIST_OP_ALL_REDUCE |         \
     1u << REDIST_OP_PERMUTE | 1u << REDIST_OP_EXCHANGE)

#define RD_SHM_OPS(fused, caps_)                                           \
    {                                                                      \
        .name = "shmem", .caps = (caps_), .fused_ops = (fused),            \
        .agree = shm_agree, .all_gather = shm_all_gather,                  \
        .all_to_all = shm_all_to_all,                                      \
        .reduce_scatter = shm_reduce_scatter,                              \
        .all_reduce = shm_all_reduce, .permute = shm_permute,              \
        .step = shm_step, .abort = shm_abort, .alloc = shm_alloc,          \
        .free = shm_free, .inplace_ops = RD_SHM_INPLACE,                   \
        .inplace_need = shm_inplace_need                                   \
    }

/* [packed][symmetric]; exchange steps always run whole (a sender cannot
 * know where the receiver's contiguous piece goes) */
#define RD_SHM_XCHG (1u << REDIST_OP_EXCHANGE)
static const rd_backend_ops shm_ops[2][2] = {
    {RD_SHM_OPS(RD_SHM_FUSED, RD_CAP_RECV_IN_SCRATCH),
     RD_SHM_OPS(RD_SHM_FUSED, 0)},
    {RD_SHM_OPS(RD_SHM_XCHG, RD_CAP_RECV_IN_SCRATCH),
     RD_SHM_OPS(RD_SHM_XCHG, 0)},
};

/* -------------------------------------------------------- contexts */

static const unsigned known_flags = REDIST_SHMEM_PACKED | REDIST_SHMEM_NO_PTR;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
}

redist_status_t redist_shmem_create(const redist_mesh_t *mesh,
                                    const redist_shmem_options_t *opts,
                                    redist_shmem_t **out, redist_error_t *err)
{
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    int npes = shmem_n_pes(), me = shmem_my_pe();
    unsigned flags = opts ? opts->flags : 0;
    uint64_t work = opts && opts->work_bytes ? opts->work_bytes
                                             : REDIST_SHMEM_WORK_BYTES;
    redist_status_t st = REDIST_OK;
    uint64_t hash = 0xcbf29ce484222325ULL;

    /* the fixed symmetric block first: the same call on every PE */
    shm_sym *sym = shmem_malloc(sizeof *sym);
    if (!sym)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "shmem: cannot allocate %zu bytes of symmetric "
                        "memory",
                        sizeof *sym);
    memset(sym, 0, sizeof *sym);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            sym->psync[t][i] = SHMEM_SYNC_VALUE;
    redist_shmem_t *c = calloc(1, sizeof *c);
    redist_shmem_t tmp;
    if (!c) {
        memset(&tmp, 0, sizeof tmp);
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    redist_shmem_t *x = c ? c : &tmp;
    x->npes = npes;
    x->me = me;
    x->sym = sym;
    x->alloc_failed = -1;
    shmem_barrier_all(); /* everybody's pSync is initialised */

    if (st)
        ;
    else if (!mesh)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh", "NULL mesh");
    else if (redist_mesh_num_devices(mesh) != npes)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh",
                      "the mesh has %lld devices but the job has %d PEs",
                      (long long)redist_mesh_num_devices(mesh), npes);
    else if (flags & ~known_flags)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "unknown shmem flags 0x%x", flags & ~known_flags);
    else if (work < 16 * (uint64_t)npes || work > (1ULL << 40))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "work_bytes",
                      "the work area must hold 16 bytes per PE (%llu) and at "
                      "most 1 TiB, not %llu",
                      (unsigned long long)(16 * (uint64_t)npes),
                      (unsigned long long)work);
    if (!st) {
        int naxes = redist_mesh_num_axes(mesh);
        hash = mix(hash, (uint64_t)naxes);
        for (int a = 0; a < naxes; a++)
            hash = mix(hash, (uint64_t)redist_mesh_axis_size(mesh, a));
        hash = mix(mix(hash, flags), work);
    }
    int ptr_ok = !(flags & REDIST_SHMEM_NO_PTR);
    for (int pe = 0; pe < npes && ptr_ok; pe++)
        ptr_ok = shmem_ptr(sym, pe) != NULL;
    long no_ptr = 0;
    st = agree_all(x, st, hash, ptr_ok ? 0 : 1, "meshes or options",
                   &no_ptr, err);
    if (!st) { /* every PE gets it, or none */
        int mine;
        x->work = alloc_all(x, (size_t)work, &mine);
        if (!x->work)
            st = agree_all(
                x,
                mine ? rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "shmem: cannot allocate the work area "
                                "(%llu bytes) in the symmetric heap of PE "
                                "%d (too small: SHMEM_SYMMETRIC_SIZE)",
                                (unsigned long long)work, me)
                     : REDIST_OK,
                0, 0, "work areas", NULL, err);
    }
    if (st) {
        shmem_free(sym);
        free(c);
        return st;
    }
    c->flags = flags;
    c->work_bytes = work;
    c->fail_at = -1;
    c->bound_free = UINT64_MAX;
    c->prefer = -1;
    c->ptr_ok = no_ptr == 0;
    for (int k = 0; k < 2; k++) {
        c->ep[k].ops = &shm_ops[flags & REDIST_SHMEM_PACKED ? 1 : 0][k];
        c->ep[k].ctx = c;
        c->ep[k].rank = me;
        c->ep[k].size = npes;
    }
    /* caller's buffers outside the symmetric heap: every exchange lands
     * in the executor's (symmetric) scratch; running exchanges in place
     * there keeps one scratch buffer instead of two */
    c->ep[0].build = RD_BUILD_INPLACE;
    shmem_barrier_all();
    *out = c;
    return REDIST_OK;
}

void redist_shmem_free(redist_shmem_t *c)
{
    if (!c)
        return;
    shmem_barrier_all(); /* signals in flight have landed */
    shmem_free(c->work);
    shmem_free(c->sym);
    free(c);
}

redist_shmem_options_t redist_shmem_get_options(const redist_shmem_t *c)
{
    redist_shmem_options_t o = {0, 0};
    if (c) {
        o.flags = c->flags;
        o.work_bytes = c->work_bytes;
    }
    return o;
}

int redist_shmem_uses_ptr(const redist_shmem_t *c)
{
    return c ? c->ptr_ok : 0;
}

redist_backend_t *redist_shmem_backend(redist_shmem_t *c, int symmetric)
{
    if (!c)
        return NULL;
    return &c->ep[symmetric != 0];
}

/* Whether [p, p + n) lies in the symmetric heap (locally). */
static int sym_range(const redist_shmem_t *c, const void *p, uint64_t n)
{
    int pe = (c->me + 1) % c->npes;
    if (!p)
        return 0;
    if (!shmem_addr_accessible(p, pe))
        return 0;
    return n == 0 ||
           shmem_addr_accessible((const char *)p + (n - 1), pe);
}

/* The context's work area, if executing the plan may use it: a
 * reduction over more than one PE that cannot read its inputs in place
 * (pull) and has no free scratch to push into (reduce_push).  The same
 * program the executor builds, so the same decisions. */
static uint64_t work_promise(const redist_shmem_t *c, const redist_plan_t *plan,
                             const redist_exec_options_t *opts, int symmetric,
                             uint64_t *cap, uint64_t *bound_free)
{
    rd_program p;
    uint64_t need = 0, least = 0;
    *cap = 0;
    *bound_free = UINT64_MAX;
    if (rd_program_build_for(plan, &c->ep[symmetric], opts ? opts->flags : 0,
                             &p, NULL)) {
        rd_program_free(&p);
        return c->work_bytes; /* the executor fails the plan anyway */
    }
    uint64_t E = p.scratch[0] + p.scratch[1];
    uint64_t M = p.src_bytes > p.dst_bytes ? p.src_bytes : p.dst_bytes;
    *bound_free = M > E ? M - E : 0;
    for (int k = 0; k < p.npasses; k++) {
        const rd_pass *ps = &p.pass[k];
        const rd_xstep *x = &ps->x;
        if ((ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED) ||
            (x->op != REDIST_OP_REDUCE_SCATTER &&
             x->op != REDIST_OP_ALL_REDUCE) ||
            x->group.size <= 1)
            continue;
        int scratch_in = ps->in_buf == RD_BUF_SA || ps->in_buf == RD_BUF_SB;
        int scratch_out = ps->out_buf == RD_BUF_SA || ps->out_buf == RD_BUF_SB;
        red_facts f = {x->group.size, x->elem,
                       x->op == REDIST_OP_ALL_REDUCE, ps->in_bytes,
                       symmetric || scratch_in, ps->in_buf == ps->out_buf,
                       symmetric || scratch_out,
                       scratch_out ? p.scratch[ps->out_buf - RD_BUF_SA] : 0,
                       ps->spare_bytes, ps->sspare_bytes, *bound_free};
        if (red_mode(c, &f) != RED_PUSH_WORK)
            continue;
        need = c->work_bytes;
        if ((uint64_t)(x->group.size - 1) * x->elem > least)
            least = (uint64_t)(x->group.size - 1) * x->elem;
    }
    /* the pushes use at most what max(src, dst) leaves beside the
     * executor's scratch, and at least one element per other member
     * (red_mode avoids that where it can) */
    if (need) {
        *cap = *bound_free;
        if (*cap < least)
            *cap = least;
        if (*cap < need)
            need = *cap;
        else
            *cap = need;
    }
    rd_program_free(&p);
    return need;
}

static redist_status_t check_plan(const redist_shmem_t *c,
                                  const redist_plan_t *plan,
                                  redist_error_t *err)
{
    /* groups come from the plan's mesh: any mesh of npes devices */
    const redist_mesh_t *m = redist_spec_mesh(redist_plan_spec(plan));
    if (redist_mesh_num_devices(m) != c->npes)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                        "the plan's mesh has %lld devices, the job %d PEs",
                        (long long)redist_mesh_num_devices(m), c->npes);
    return REDIST_OK;
}

redist_status_t redist_shmem_exec_info(const redist_shmem_t *c,
                                       const redist_plan_t *plan,
                                       const void *src, const void *dst,
                                       const redist_exec_options_t *opts,
                                       redist_shmem_info_t *out,
                                       redist_error_t *err)
{
    if (!c || !plan || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL context, plan or output");
    redist_status_t st = check_plan(c, plan, err);
    if (st)
        return st;
    const redist_spec_t *s = redist_plan_spec(plan);
    int sym = sym_range(c, src, redist_spec_src_bytes(s)) &&
              sym_range(c, dst, redist_spec_dst_bytes(s));
    redist_exec_info_t e;
    st = redist_plan_exec_info(plan, &c->ep[sym], opts, &e, err);
    if (st)
        return st;
    memset(out, 0, sizeof *out);
    out->exec = e;
    out->symmetric = sym;
    uint64_t cap, bound_free;
    out->work_bytes = work_promise(c, plan, opts, sym, &cap, &bound_free);
    out->scratch_bytes = e.scratch_bytes + out->work_bytes;
    return REDIST_OK;
}

redist_status_t redist_shmem_execute(redist_shmem_t *c,
                                     const redist_plan_t *plan, void *src,
                                     void *dst,
                                     const redist_exec_options_t *opts,
                                     redist_exec_report_t *report,
                                     redist_error_t *err)
{
    if (!c) {
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL shmem context");
    }
    /* symmetric buffers on every PE, the same objects everywhere? */
    shm_sym *y = c->sym;
    int sym = 0;
    if (plan && src && dst) {
        const redist_spec_t *s = redist_plan_spec(plan);
        sym = sym_range(c, src, redist_spec_src_bytes(s)) &&
              sym_range(c, dst, redist_spec_dst_bytes(s));
    }
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = !sym;
    y->red_src[1] = (long)(uintptr_t)src;
    y->red_src[2] = ~(long)(uintptr_t)src;
    y->red_src[3] = (long)(uintptr_t)dst;
    y->red_src[4] = ~(long)(uintptr_t)dst;
    reduce_max(c);
    sym = y->red_dst[0] == 0 && y->red_dst[1] == ~y->red_dst[2] &&
          y->red_dst[3] == ~y->red_dst[4];

    c->work_used = 0;
    uint64_t promise = 0;
    c->work_cap = 0;
    if (plan && !check_plan(c, plan, NULL))
        promise = work_promise(c, plan, opts, sym, &c->work_cap,
                               &c->bound_free);
    redist_status_t st = redist_plan_execute(plan, &c->ep[sym], src, dst,
                                             opts, report, err);
    c->work_cap = 0;
    c->bound_free = UINT64_MAX;
    if (report && plan && (!st || report->scratch_bytes)) {
        report->scratch_bytes += promise;
        report->scratch_high_water += c->work_used;
    }
    return st;
}

void rd_shmem_prefer(redist_shmem_t *c, int mode)
{
    if (c)
        c->prefer = mode >= 0 && mode < RED_NMODES ? mode : -1;
}

void rd_shmem_mode_counts(const redist_shmem_t *c, uint64_t out[RED_NMODES])
{
    for (int k = 0; k < RED_NMODES; k++)
        out[k] = c ? c->modes[k] : 0;
}

void rd_shmem_inject_failure(redist_shmem_t *c, int64_t op_index)
{
    if (c)
        c->fail_at = op_index < 0 ? -1 : c->nops + op_index;
}

int rd_shmem_dead(const redist_shmem_t *c)
{
    return c ? c->dead : 0;
}
