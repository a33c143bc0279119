/*
 * An uneven reduce_scatter run whole over OpenSHMEM (rd_xstep.boxed,
 * RD_BUILD_UNEVEN_RS: set by context.c on the endpoints, and as the
 * ops' set_build for a set's or a two-mesh phase's programs; built by
 * exec/program.c, every member's box bound by exec/bind.c): no buffer
 * sized by the largest device, the sim's uneven_rs (doc/uneven.md,
 * doc/shmem.md).  The MPI backend's counterpart is
 * src/backend/mpi/reduce_boxed.c.
 *
 * ALGORITHM.  The s members hold one box before the step (their input
 * blocks, which may be private); the boxes after it (member m's at
 * offset mbox_m in that box, shape B_m) partition it.  Member j's
 * output is, element by element, in_0 op in_1 op ... op in_{s-1} over
 * the same element of the members' blocks, in member order
 * (rd_reduce_n: the sim's sum, bit for bit).  The work space W is
 * symmetric, at the same offset on every member, and the same size on
 * each (no agreement needed: every member takes it by the same rule,
 * from facts every member shares): the pass's free symmetric scratch
 * (be->spare_scratch) when it holds one element per other member, else
 * the context's work area, within what max(src, dst) leaves when
 * redist_shmem_execute set that cap (c->work_cap).  W holds s - 1 slots
 * of c elements, c = min(W / ((s - 1) elem), the largest box), at least
 * one.  Each box is cut into chunks of at most c elements contiguous in
 * it (exec/boxed.c), the same cut on every member; round r (r < R, the
 * most chunks any box has):
 *   1. wait for READY from every other member (its slots are free);
 *   2. put chunk r of each other member k's box, straight from this
 *      member's input block (a box put: one put per contiguous run,
 *      nothing packed), into this member's slot of k's W;
 *   3. complete, DONE to every other member, wait for theirs;
 *   4. copy this member's own part of its chunk r into its output and
 *      reduce the s inputs there in member order (its own: the output,
 *      which rd_reduce_n reads block by block before writing it);
 *   5. READY to every other member unless this was the last round.
 *
 * COST.  Put: |box before| - |B_j| elements per member, received:
 * (s - 1) |B_j| (the sim's uneven_rs figures), against 2 (s - 1) / s
 * of the packed boxes plus their packing for the packed form
 * (program.c).  Signals: 2 (s - 1) per round, R = ceil(|B| / c) rounds
 * for a contiguous box.  Memory: W (at least s - 1 elements, at most
 * (s - 1) times the largest box); the output is written in place, no
 * executor buffer.  No collective call: only the group's signals.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/boxed.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* rd_reduce_n's inputs: this member's own from the output, the others
 * from their slots of the work space. */
typedef struct boxed_in {
    char *out;
    const char *work;
    int64_t me;
    uint64_t slot; /* bytes per slot */
} boxed_in;

static const void *boxed_input(void *u, int64_t m)
{
    boxed_in *bi = u;
    if (m == bi->me)
        return bi->out;
    return bi->work + rd_shm_slot_of(m, bi->me) * bi->slot;
}

/* The work space every member uses (the same rule on each): *work,
 * *bytes; returns 1 when it is the context's work area. */
static int boxed_work(const redist_shmem_t *c, const redist_backend_t *be,
                      const rd_xstep *x, char **work, uint64_t *bytes)
{
    uint64_t least = (uint64_t)(x->group.size - 1) * x->elem;
    if (be->spare_scratch && be->spare_scratch_bytes >= least) {
        *work = be->spare_scratch;
        *bytes = be->spare_scratch_bytes;
        return 0;
    }
    *work = c->work;
    *bytes = c->work_bytes;
    if (c->work_cap) { /* within what the bound leaves */
        uint64_t cap = c->work_cap > least ? c->work_cap : least;
        if (cap < *bytes)
            *bytes = cap;
    }
    return 1;
}

uint64_t rd_shm_boxed_chunk(const rd_xstep *x, uint64_t W)
{
    uint64_t s = (uint64_t)x->group.size, big = rd_box_most(x);
    uint64_t c = s > 1 ? W / ((s - 1) * x->elem) : big;
    if (c > big)
        c = big;
    return c ? c : 1;
}

int rd_shm_boxed_uses_work(const rd_xstep *x, int in_sym,
                           uint64_t sspare_bytes)
{
    return x->group.size > 1 && !in_sym &&
           sspare_bytes < (uint64_t)(x->group.size - 1) * x->elem;
}

/* Read: the inputs are symmetric (the same offset on every member), so
 * member j reads its box B_j from every member's block in place, by
 * load through shmem_ptr (base) or with shmem_getmem of at most
 * RD_REDUCE_BLOCK elements of one member at a time into a block on the
 * stack (get, base NULL), row by row along the last dim, and reduces
 * in member order into its output: no work space. */
static void boxed_read(const redist_shmem_t *c, const rd_xstep *x,
                       const char *const *base, const char *in, char *out)
{
    const rd_group *g = &x->group;
    int nd = x->ndims;
    size_t elem = x->elem;
    const int64_t *B = rd_box_mbox_shape(x, g->index);
    const int64_t *om = rd_box_mbox_off(x, g->index);
    _Alignas(16) char block[RD_REDUCE_BLOCK * 16];
    uint64_t len = nd ? (uint64_t)B[nd - 1] : 1;
    uint64_t rows = len ? rd_box_elems(nd, B) / len : 0;
    int64_t idx[REDIST_MAX_DIMS] = {0};
    for (uint64_t q = 0; q < rows; q++) {
        /* row q's first element in the input block (shape in_shape) */
        uint64_t io = 0, t = q;
        for (int i = nd - 2; i >= 0; i--) {
            idx[i] = (int64_t)(t % (uint64_t)B[i]);
            t /= (uint64_t)B[i];
        }
        for (int i = 0; i < nd; i++)
            io = io * (uint64_t)x->in_shape[i] +
                 (uint64_t)(om[i] + (i < nd - 1 ? idx[i] : 0));
        red_inputs ri = {base, in, io * elem, NULL, 0, g->index,
                         g, block, 0, c};
        /* get: rd_reduce_n reads input m whole before asking for m + 1
         * when given at most RD_REDUCE_BLOCK elements */
        uint64_t step = base ? len : RD_REDUCE_BLOCK;
        for (uint64_t b = 0; b < len; b += step) {
            uint64_t n = len - b < step ? len - b : step;
            ri.off = (io + b) * elem;
            ri.len = n * elem;
            rd_reduce_n(x->dtype, x->reduce, out + (q * len + b) * elem, n,
                        g->size, rd_shm_red_input, &ri);
        }
    }
}

/* The whole step when the inputs are symmetric: READY (inputs final),
 * read and reduce, DONE (nobody reads them any more).  2 (s - 1)
 * signals, (s - 1) |B_j| elements read, s pointers of memory. */
static redist_status_t boxed_pull(redist_shmem_t *c, const rd_xstep *x,
                                  const char *in, char *out, int slot,
                                  redist_error_t *err)
{
    const rd_group *g = &x->group;
    const char *stack_base[32];
    const char **base = NULL;
    if (c->ptr_ok) {
        base = g->size <= 32 ? stack_base
                             : malloc(sizeof *base * (size_t)g->size);
        if (!base)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        for (int64_t m = 0; m < g->size; m++) {
            base[m] = m == g->index
                          ? in
                          : shmem_ptr(in, rd_shm_pe(c, pe_of(g, m)));
            if (!base[m]) {
                if (base != stack_base)
                    free(base);
                return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                                "shmem: shmem_ptr failed for PE %d",
                                rd_shm_pe(c, pe_of(g, m)));
            }
        }
    }
    rd_shm_signal_group(c, slot, SIG_READY, g);
    redist_status_t st =
        rd_shm_wait(c, slot, SIG_READY, (long)(g->size - 1), err);
    if (!st) {
        boxed_read(c, x, base, in, out);
        rd_shm_signal_group(c, slot, SIG_DONE, g);
        st = rd_shm_wait(c, slot, SIG_DONE, (long)(g->size - 1), err);
    }
    if (base != stack_base)
        free(base);
    return st;
}

redist_status_t rd_shm_rs_boxed(redist_shmem_t *c, redist_backend_t *be,
                                const rd_xstep *x, const char *in, char *out,
                                int in_sym, int slot, redist_error_t *err)
{
    const rd_group *g = &x->group;
    int nd = x->ndims;
    int64_t s = g->size, me = g->index;
    size_t elem = x->elem;
    const int64_t *B = rd_box_mbox_shape(x, me), *om = rd_box_mbox_off(x, me);
    int64_t zero[REDIST_MAX_DIMS] = {0};
    if (s == 1) { /* the box before is the box after */
        if (rd_box_elems(nd, B))
            rd_kernel_box(out, B, zero, in, x->in_shape, om, B, nd, elem);
        return REDIST_OK;
    }
    if (in_sym)
        return boxed_pull(c, x, in, out, slot, err);
    char *work;
    uint64_t W;
    int own = boxed_work(c, be, x, &work, &W);
    uint64_t ch = rd_shm_boxed_chunk(x, W), slotb = ch * elem;
    uint64_t R = rd_box_rounds(x, ch);
    if (R == 0)
        R = 1; /* an empty round still consumes the READY signals */
    if (own && (uint64_t)(s - 1) * slotb > c->work_used)
        c->work_used = (uint64_t)(s - 1) * slotb;
    rd_box_cut mk = rd_box_cut_of(nd, B, ch);
    int64_t off[REDIST_MAX_DIMS], sh[REDIST_MAX_DIMS], at[REDIST_MAX_DIMS];
    redist_status_t st = REDIST_OK;
    rd_shm_signal_group(c, slot, SIG_READY, g);
    for (uint64_t r = 0; r < R && !st; r++) {
        st = rd_shm_wait(c, slot, SIG_READY, (long)(s - 1), err);
        if (st)
            break;
        /* chunk r of each other member's box, the others in turn */
        for (int64_t t = 1; t < s; t++) {
            int64_t k = (me + t) % s;
            const int64_t *Bk = rd_box_mbox_shape(x, k);
            const int64_t *ok = rd_box_mbox_off(x, k);
            rd_box_cut kc = rd_box_cut_of(nd, Bk, ch);
            if (r >= kc.n)
                continue;
            rd_box_chunk(nd, Bk, &kc, r, off, sh);
            for (int i = 0; i < nd; i++)
                at[i] = ok[i] + off[i];
            rd_shm_write_box(c, pe_of(g, k),
                             work + rd_shm_slot_of(me, k) * slotb, sh, zero,
                             in, x->in_shape, at, sh, nd, elem);
        }
        rd_shm_complete();
        rd_shm_signal_group(c, slot, SIG_DONE, g);
        st = rd_shm_wait(c, slot, SIG_DONE, (long)(s - 1), err);
        if (st)
            break;
        if (r < mk.n) {
            uint64_t n = rd_box_chunk(nd, B, &mk, r, off, sh);
            /* the chunk is contiguous in the output (shape B) */
            uint64_t o = 0;
            for (int i = 0; i < nd; i++)
                o = o * (uint64_t)B[i] + (uint64_t)off[i];
            char *dst = out + o * elem;
            for (int i = 0; i < nd; i++)
                at[i] = om[i] + off[i];
            rd_kernel_box(dst, sh, zero, in, x->in_shape, at, sh, nd, elem);
            boxed_in bi = {dst, work, me, slotb};
            rd_reduce_n(x->dtype, x->reduce, dst, n, s, boxed_input, &bi);
        }
        if (r + 1 < R)
            rd_shm_signal_group(c, slot, SIG_READY, g); /* my slots are free */
    }
    return st;
}
