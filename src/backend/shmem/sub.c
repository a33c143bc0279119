/*
 * Two-mesh arrays of a plan set on OpenSHMEM (exec/backend.h: `sub`,
 * `run_begins`, `exchange_multi`; the set's run is at the top of
 * src/exec/set_run.c, its two-mesh arrays at the top of set_two.c).
 *
 * SUB CONTEXTS.  A phase of a two-mesh array runs on the PEs of its
 * mesh, rank r of the mesh being PE devices[r].  A sub context is this
 * PE's context on such a mesh: npes and me are the mesh's size and this
 * PE's rank in it, every write and signal goes to rd_shm_pe(c, rank),
 * and it has signal counters of its own (symmetric, one slot block as
 * the context's), so that its steps never share a slot with the steps
 * of another mesh or of the whole job, whatever the PEs in and out of
 * the mesh have run before.  It shares the context's abort word, work
 * area and options; an abort on it aborts every PE of the job.  A sub
 * context is made on every PE of the job (shmem_malloc of its counters
 * is collective over the job): a PE outside the mesh gets an endpoint of
 * rank -1 that runs nothing, and every PE frees it (sub_free) in the
 * same order.  A set run restarts every endpoint's slots (run_begins):
 * every member of a mesh runs the same steps on it in every run, and a
 * slot's signals are counted, so a PE a run ahead cannot be mistaken
 * for one of this run (signal.c).
 *
 * COMBINED EXCHANGES (exchange_multi, on the job's context).  The
 * transfers of a round's two-mesh arrays and the exchange steps of its
 * one-mesh arrays (whole steps: each box straight into its place in the
 * receiver's block, as step.c writes them) go out in one slot: each PE
 * signals READY once to every peer it receives from, waits for the
 * READY of every peer it sends to, writes every array's pieces for that
 * peer straight into the peer's R blocks (symmetric: the set's arena,
 * the same offsets on every PE; put.c), then one shmem_quiet and one
 * DONE per peer, and waits for the DONE of every peer it receives from.
 * So per round and peer one series of puts and one signal each way,
 * however many arrays cross.  A two-mesh array's lowered phase step (a
 * set of two or more arrays, src/exec/set_two.c) is such a step on its
 * mesh's ranks: its lists name PEs already, and its boxes go to PE
 * devs[r] of its mesh rank r; a PE off that mesh gives an empty part.
 * A piece from a PE to itself is a local
 * box copy.
 *
 * COST.  sub: one collective allocation (RD_SHM_SLOTS * RD_SHM_NSIG
 * longs, 32 KiB) and one agreement per mesh; exchange_multi: 2 signals
 * per peer and the pieces' runs as puts.  MEMORY: the counters and the
 * mesh's PE list per sub context.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/kernels.h"
#include "../../exec/meshes.h"
#include "../../core/internal.h"

#define SIG_BYTES ((size_t)RD_SHM_SLOTS * RD_SHM_NSIG * sizeof(long))

redist_status_t rd_shm_sub(redist_backend_t *be, const redist_mesh_t *mesh,
                           const int64_t devices[], redist_backend_t **out,
                           redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    int64_t n = redist_mesh_num_devices(mesh), pos = -1;
    *out = NULL;
    if (c->root) /* the same on every PE: the set runner's use */
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "shmem: a mesh endpoint of a mesh endpoint");
    for (int64_t r = 0; r < n && pos < 0; r++)
        if (devices[r] == c->me)
            pos = r;
    /* collective over the job: every PE, members or not */
    int mine = 0;
    long *sig = rd_shm_alloc_all(c, SIG_BYTES, &mine);
    c->alloc_failed = -1;
    if (!sig)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "shmem: cannot allocate the signal counters of a "
                        "mesh (%zu bytes) in the symmetric heap%s",
                        SIG_BYTES, mine ? " of this PE" : " of another PE");
    memset(sig, 0, SIG_BYTES);
    redist_shmem_t *x = calloc(1, sizeof *x);
    int *pes = x ? malloc((size_t)(n ? n : 1) * sizeof *pes) : NULL;
    redist_status_t st = x && pes ? REDIST_OK
                                  : rd_error(err, REDIST_ERR_NOMEM, NULL,
                                             NULL, "out of memory");
    /* every PE learns whether all have theirs (and has zeroed its
     * counters before anybody signals them) */
    st = rd_shm_agree_all(c, st, 0, 0, "", NULL, err);
    if (st) {
        shmem_free(sig); /* collective, as its allocation */
        free(pes);
        free(x);
        return st;
    }
    for (int64_t r = 0; r < n; r++)
        pes[r] = (int)devices[r];
    x->root = c;
    x->pes = pes;
    x->sig = sig;
    x->npes = (int)n;
    x->me = (int)pos;
    x->flags = c->flags;
    x->work_bytes = c->work_bytes;
    x->ptr_ok = c->ptr_ok;
    x->sym = c->sym;
    x->work = c->work;
    x->bound_free = UINT64_MAX;
    x->prefer = c->prefer;
    x->alloc_failed = -1;
    x->fail_at = -1;
    for (int k = 0; k < 2; k++) {
        x->ep[k] = c->ep[k];
        x->ep[k].ctx = x;
        x->ep[k].rank = pos;
        x->ep[k].size = n;
    }
    *out = &x->ep[be == &c->ep[1]];
    return REDIST_OK;
}

void rd_shm_sub_free(redist_backend_t *sub)
{
    if (!sub)
        return;
    redist_shmem_t *x = ctx_of(sub);
    shmem_free(x->sig); /* collective over the job, as rd_shm_sub */
    free(x->pes);
    free(x);
}

void rd_shm_run_begins(redist_backend_t *be)
{
    ctx_of(be)->seq = 0;
}

/* Mark the peers of part j: bit 1 this PE sends to it, bit 2 receives
 * from it (pieces of no bytes are no messages, on both sides alike). */
static void mark_peers(const rd_xpart *q, int64_t me, unsigned char *mk)
{
    const rd_tlists *t = q->tl;
    for (int64_t k = 0; t && k < t->nsend; k++)
        if (t->send[k].peer != me && t->send[k].bytes)
            mk[t->send[k].peer] |= 1;
    for (int64_t k = 0; t && k < t->nrecv; k++)
        if (t->recv[k].peer != me && t->recv[k].bytes)
            mk[t->recv[k].peer] |= 2;
    for (int64_t k = 0; !t && k < q->nto; k++)
        if (q->to[k].peer != me && q->to[k].bytes)
            mk[q->to[k].peer] |= 1;
    for (int64_t k = 0; !t && k < q->nfrom; k++)
        if (q->from[k].peer != me && q->from[k].bytes)
            mk[q->from[k].peer] |= 2;
}

/* Part q's writes: a transfer's pieces into the receivers' R blocks, or
 * an exchange step's boxes into the receivers' blocks (uneven: each
 * receiver's own shape), as step.c's exchange writes them. */
static void write_part(redist_shmem_t *c, const rd_xpart *q)
{
    int64_t me = c->me;
    const rd_tlists *t = q->tl;
    for (int64_t k = 0; t && k < t->nsend; k++) {
        const rd_tpiece *pc = &t->send[k];
        if (!pc->bytes)
            continue;
        if (pc->peer == me)
            rd_kernel_box(q->recv, t->r_shape, pc->poff, q->send, t->s_shape,
                          pc->off, pc->box, t->ndims, t->elem);
        else
            rd_shm_write_box(c, (int)pc->peer, q->recv, pc->pshape,
                             pc->poff, q->send, t->s_shape, pc->off,
                             pc->box, t->ndims, t->elem);
    }
    const rd_xstep *x = q->x;
    int64_t box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
    int64_t lb[REDIST_MAX_DIMS];
    /* a lowered phase's step: ranks of its mesh, rank d being PE
     * devs[d] (this PE's rank there is the one its lists are bound to) */
    int64_t mr = x && q->devs ? x->xchg->rank : me;
    for (int64_t k = 0; x && k < x->xchg->nsend; k++) {
        int64_t d = x->xchg->send[k].peer;
        if (!rd_xchg_box(x->xchg, mr, d, box, oa, ob))
            continue;
        if (d == mr) {
            rd_kernel_box(q->recv, x->out_shape, ob, q->send, x->in_shape, oa,
                          box, x->ndims, x->elem);
        } else {
            rd_xchg_extent(x->xchg, 1, d, lb);
            rd_shm_write_box(c, (int)(q->devs ? q->devs[d] : d), q->recv, lb,
                             ob, q->send, x->in_shape, oa, box, x->ndims,
                             x->elem);
        }
    }
}

redist_status_t rd_shm_exchange_multi(redist_backend_t *be, int nparts,
                                      const rd_xpart *parts,
                                      redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    if (nparts == 1 && parts[0].stream) /* the same on every PE */
        return rd_shm_stream(c, &parts[0], err);
    for (int j = 0; j < nparts; j++)
        if ((!parts[j].tl && !parts[j].x &&
             (parts[j].nto || parts[j].nfrom)) ||
            parts[j].stream ||
            (parts[j].x && parts[j].send == parts[j].recv))
            /* the same parts on every PE: all fail here, nobody waits */
            return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                            "shmem: a combined exchange takes two-mesh "
                            "transfers and whole exchange steps (not in "
                            "place) only");
    int slot = 0;
    redist_status_t st = rd_shm_next_slot(c, &slot, err);
    if (st)
        return st;
    unsigned char *mk = calloc((size_t)c->npes, 1);
    long nto = 0, nfrom = 0;
    if (!mk)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int j = 0; j < nparts; j++)
        mark_peers(&parts[j], c->me, mk);
    /* tests (rd_shmem_inject_failure): fail after the READY signals, as
     * a PE that breaks in the middle of the exchange would */
    int inject = c->nops++ == c->fail_at;
    /* 1. READY once to every peer this PE receives from */
    for (int q = 0; q < c->npes; q++) {
        nto += mk[q] & 1;
        nfrom += mk[q] >> 1;
        if (mk[q] & 2)
            rd_shm_signal_pe(c, slot, SIG_READY, q);
    }
    if (inject) {
        free(mk);
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "injected failure on PE %d", c->me);
    }
    st = rd_shm_wait(c, slot, SIG_READY, nto, err);
    /* 2. every part's writes */
    for (int j = 0; j < nparts && !st; j++)
        write_part(c, &parts[j]);
    /* 3. one completion, one DONE per peer, and theirs */
    if (!st) {
        rd_shm_complete();
        for (int q = 0; q < c->npes; q++)
            if (mk[q] & 1)
                rd_shm_signal_pe(c, slot, SIG_DONE, q);
        st = rd_shm_wait(c, slot, SIG_DONE, nfrom, err);
    }
    free(mk);
    return st;
}
