/*
 * Executing two-mesh plans (doc/meshes.md): the transfer step on one
 * device, and the in-process run of a whole two-mesh plan (sim backend).
 *
 * A two-mesh plan is [phase on the source mesh] transfer [phase on the
 * target mesh] (src/plan/meshes.c).  The phases are one-mesh plans, run
 * by the one-mesh executor on the devices of their mesh.  The transfer:
 * rd_transfer_walk lists every piece (receiver, sender, global box);
 * rd_transfer_lists keeps this device's sends and receives, with each
 * box's origin in the sender's S block and the receiver's R block.  A
 * piece whose sender is the receiver is a local copy.  When S keeps
 * pending sums (transfer.c), a receiver gets one piece per contribution;
 * sim_transfer takes those of one place in ascending order of sender
 * (global device id): the first is copied into the R block, each other
 * reduced into it with the spec's op straight from the sender's S block,
 * so no temporary and the same float result on every run.
 *
 * COST.  Building one device's lists walks every piece of every
 * receiver: O(|target mesh| x pieces per receiver), before any data
 * moves (the sim run builds every device's lists in that one walk);
 * then one message per peer.  MEMORY (per device): the S block
 * (scratch unless the source phase is empty: then the source buffer is
 * sent from), the R block (scratch unless the target phase is empty:
 * then the transfer writes the destination buffer), and the phases' own
 * scratch.  So a device holds at most its S and R blocks besides its own
 * buffers; a device in one mesh only holds one of them.  On a backend
 * that runs each stage on every device before the next (sim:
 * RD_BUILD_MESH_USR), a device on both meshes with both phases non-empty
 * keeps S in its destination buffer (dead until phase B) when S fits, and
 * R in its source buffer (dead after phase A) when R fits and the source
 * need not be preserved (rd_meshes_usr_blocks).  A transfer that
 * sums: sim needs nothing more; the exec info also promises, per device,
 * a work area for an executor that receives the contributions first
 * (MPI): all it receives, at most rd_meshes_sum_cap.
 *
 * PHASE CAP (sim: RD_BUILD_MESH_FUSE).  A phase whose program leaves a
 * device of its mesh over max(src_d, dst_d) (its scratch beside the
 * block held, phase_need) runs with the sim's whole steps
 * (REDIST_SIM_FUSED) when they leave fewer devices over, or as many by
 * less in all: they read the peers' blocks in place, so no pack
 * buffers, and an uneven reduce_scatter needs none either (sim.c).
 * phase_info makes the choice for the promise and the run alike.  Cost:
 * the programs of phase_need (below) once more when the default leaves
 * a device over.  (MPI caps each phase by rd_meshes_phase_room: the
 * least over its mesh of max(src_d, dst_d) less the block held beside
 * it.)  Without REDIST_EXEC_PRESERVE_SRC
 * one whole step needs no scratch, so a device whose phases have one
 * step at most holds its blocks only: within max(src_d, dst_d), as
 * S_d <= src_d, R_d <= dst_d and, on both meshes with both phases, one
 * of them sits in the caller's other buffer.
 *
 * PHASES OF SEVERAL STEPS (sim).  Whole steps alternate between buffers,
 * so a phase of two or more needs a buffer besides its input and output
 * unless it finds one free.  The sim gives each phase's devices room at
 * no cost (phase_need, sim_phase):
 *   - phase A on a device of both meshes whose S block is not in its
 *     destination buffer is lent that buffer (be->lend, phase_a_lend):
 *     nothing lands there before phase B, or the transfer when phase B
 *     is empty; the program uses it as a scratch buffer that is not
 *     counted (assign.c), e.g. two all-gathers source -> destination
 *     buffer -> S block, within the S block alone;
 *   - every device's program counts its own buffers' sizes
 *     (RD_BUILD_OWN_CAPS), not the least of its mesh: an uneven phase
 *     whose smallest S block is empty can still go source -> S block ->
 *     source and copy back (a reduce_scatter then a permute on a
 *     device whose S block is its whole bound);
 *   - phase B never preserves its source: it is the R block, the run's,
 *     or the caller's source where that may be written (then the whole
 *     of that buffer is its source's room, be->src_room);
 *   - phase B's R block, where the run allocates it, is allocated at the
 *     size, of the block's and the phase's step outputs', that leaves
 *     the device the least: the S and R blocks, or R beside phase B's
 *     scratch (be->src_room: the program may write its source that far),
 *     e.g. an 8-byte R block, an all-gather to 16 then an exchange: a
 *     16-byte R block, R -> destination -> R and copied back, 16 bytes
 *     where the 8-byte block beside a 16-byte buffer took 24.
 * Cost: the promise builds each phase's program once per distinct
 * (source size, target size, lent size, source room) over its mesh,
 * O(devices x steps x passes^3) at most (a few builds for an even
 * phase); memory: the blocks only.  What stays over the bound: a phase A
 * under PRESERVE_SRC with no free buffer for its first step's output
 * beside the S block (the next step would have to run in place), and an
 * uneven phase whose pass sizes, the most any device needs, do not fit
 * a device's own buffers though its own blocks would.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "kernels.h"
#include "meshes.h"
#include "../core/internal.h"
#include "../plan/plan_internal.h"
#include "../spec/spec_internal.h"
#include "../backend/sim/sim_internal.h"

/* The walk's consumer: the pieces of device `dev` into *t, or with dev
 * -1 every device's into t[device]. */
typedef struct lists_ctx {
    const redist_plan_t *plan;
    const redist_spec_t *s;
    int64_t dev;
    rd_tlists *t;
    int failed;
} lists_ctx;

static int push(rd_tpiece **v, int64_t *n, int64_t *cap)
{
    if (*n == *cap) {
        int64_t c = *cap ? 2 * *cap : 16;
        rd_tpiece *x = realloc(*v, (size_t)c * sizeof *x);
        if (!x)
            return -1;
        *v = x;
        *cap = c;
    }
    return 0;
}

static void keep_piece(void *user, int64_t r, int64_t q, const int64_t lo[],
                       const int64_t hi[])
{
    lists_ctx *c = user;
    const redist_spec_t *s = c->s;
    int64_t to = s->two->dev[1][r], from = s->two->dev[0][q];
    for (int side = 0; side < 2 && !c->failed; side++) {
        int64_t me = side ? to : from;
        if (c->dev >= 0 && me != c->dev)
            continue;
        rd_tlists *t = c->dev >= 0 ? c->t : &c->t[me];
        rd_tpiece **v = side ? &t->recv : &t->send;
        int64_t *n = side ? &t->nrecv : &t->nsend;
        if (push(v, n, side ? &t->cap_recv : &t->cap_send)) {
            c->failed = 1;
            return;
        }
        rd_tpiece *p = &(*v)[(*n)++];
        memset(p, 0, sizeof *p); /* dims past ndims compare equal */
        p->peer = side ? from : to;
        /* the peer's block: its S block (it sends) or R block */
        const rd_mplan *m = c->plan->m;
        int64_t plo[REDIST_MAX_DIMS], phi[REDIST_MAX_DIMS];
        if (side)
            rd_layout_box(&m->sent.lay, &m->sent.t, &s->two->mesh[0], q,
                          plo, phi);
        else
            rd_layout_box(&m->recvd.lay, &m->recvd.t, &s->two->mesh[1], r,
                          plo, phi);
        for (int i = 0; i < s->ndims; i++) {
            p->box[i] = hi[i] - lo[i];
            p->off[i] = lo[i] - (side ? t->r_lo[i] : t->s_lo[i]);
            p->poff[i] = lo[i] - plo[i];
            p->pshape[i] = phi[i] - plo[i];
        }
        p->bytes = s->elem_size;
        for (int i = 0; i < s->ndims; i++)
            p->bytes *= (uint64_t)p->box[i];
    }
}

static int by_peer(const void *a, const void *b)
{
    const rd_tpiece *x = a, *y = b;
    return (x->peer > y->peer) - (x->peer < y->peer);
}

void rd_tlists_free(rd_tlists *t)
{
    free(t->send);
    free(t->recv);
    memset(t, 0, sizeof *t);
}

/* Device dev's S and R blocks (no pieces yet). */
void rd_tlists_head(const redist_plan_t *plan, int64_t dev, rd_tlists *t)
{
    const redist_spec_t *s = plan->spec;
    const rd_mplan *m = plan->m;
    memset(t, 0, sizeof *t);
    t->ndims = s->ndims;
    t->elem = s->elem_size;
    int64_t q = rd_spec_mesh_rank(s, 0, dev), r = rd_spec_mesh_rank(s, 1, dev);
    t->in_src = q >= 0;
    t->in_dst = r >= 0;
    int64_t hi[REDIST_MAX_DIMS];
    if (q >= 0) {
        rd_layout_box(&m->sent.lay, &m->sent.t, &s->two->mesh[0], q, t->s_lo,
                      hi);
        for (int i = 0; i < s->ndims; i++)
            t->s_shape[i] = hi[i] - t->s_lo[i];
    }
    if (r >= 0) {
        rd_layout_box(&m->recvd.lay, &m->recvd.t, &s->two->mesh[1], r,
                      t->r_lo, hi);
        for (int i = 0; i < s->ndims; i++)
            t->r_shape[i] = hi[i] - t->r_lo[i];
    }
}

/* Pieces by their place in the R block, then by sender: the
 * contributions to one place in ascending order of sender. */
static int by_place(const void *a, const void *b)
{
    const rd_tpiece *x = a, *y = b;
    for (int i = 0; i < REDIST_MAX_DIMS; i++)
        if (x->off[i] != y->off[i])
            return (x->off[i] > y->off[i]) - (x->off[i] < y->off[i]);
    return (x->peer > y->peer) - (x->peer < y->peer);
}

static void reduce_box(const redist_spec_t *s, void *dst,
                       const int64_t dst_shape[], const int64_t doff[],
                       const void *src, const int64_t src_shape[],
                       const int64_t soff[], const int64_t box[])
{
    int n = s->ndims;
    int64_t idx[REDIST_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++)
        if (box[i] <= 0)
            return;
    if (n == 0) {
        rd_reduce_pair(s->dtype, s->reduce, dst, src, 1);
        return;
    }
    for (;;) {
        int64_t de = 0, se = 0;
        for (int i = 0; i < n; i++) {
            de = de * dst_shape[i] + doff[i] + (i < n - 1 ? idx[i] : 0);
            se = se * src_shape[i] + soff[i] + (i < n - 1 ? idx[i] : 0);
        }
        rd_reduce_pair(s->dtype, s->reduce,
                       (char *)dst + (uint64_t)de * s->elem_size,
                       (const char *)src + (uint64_t)se * s->elem_size,
                       (uint64_t)box[n - 1]);
        int i = n - 2;
        while (i >= 0 && ++idx[i] == box[i])
            idx[i--] = 0;
        if (i < 0)
            return;
    }
}

void rd_meshes_place(const redist_spec_t *s, int first, void *dst,
                     const int64_t dst_shape[], const int64_t doff[],
                     const void *src, const int64_t src_shape[],
                     const int64_t soff[], const int64_t box[])
{
    if (first)
        rd_kernel_box(dst, dst_shape, doff, src, src_shape, soff, box,
                      s->ndims, s->elem_size);
    else
        reduce_box(s, dst, dst_shape, doff, src, src_shape, soff, box);
}

int rd_tpiece_first(const rd_tlists *t, int64_t k)
{
    return k == 0 || memcmp(t->recv[k - 1].off, t->recv[k].off,
                            sizeof t->recv[k].off) != 0;
}

/* Sorted by peer: each peer sends one piece (it holds one S block); the
 * receives of a transfer that sums by place, then by peer (the order the
 * contributions are reduced in). */
static void lists_sort(rd_tlists *t, int sums)
{
    if (t->nsend > 1)
        qsort(t->send, (size_t)t->nsend, sizeof *t->send, by_peer);
    if (t->nrecv > 1)
        qsort(t->recv, (size_t)t->nrecv, sizeof *t->recv,
              sums ? by_place : by_peer);
}

redist_status_t rd_transfer_lists(const redist_plan_t *plan, int64_t dev,
                                  rd_tlists *t)
{
    rd_tlists_head(plan, dev, t);
    if (!t->in_src && !t->in_dst)
        return REDIST_OK;
    lists_ctx c = {plan, plan->spec, dev, t, 0};
    if (rd_transfer_walk(plan->spec, &plan->m->sent, &plan->m->recvd,
                         plan->has_cost ? &plan->cost : NULL, keep_piece,
                         &c) ||
        c.failed) {
        rd_tlists_free(t);
        return REDIST_ERR_NOMEM;
    }
    lists_sort(t, plan->m->sent.t.partial != 0);
    return REDIST_OK;
}

/* Every device's lists in one walk (t: one per global device). */
static redist_status_t transfer_lists_all(const redist_plan_t *plan,
                                          rd_tlists *t)
{
    int64_t N = plan->spec->two->ndevices;
    for (int64_t d = 0; d < N; d++)
        rd_tlists_head(plan, d, &t[d]);
    lists_ctx c = {plan, plan->spec, -1, t, 0};
    if (rd_transfer_walk(plan->spec, &plan->m->sent, &plan->m->recvd,
                         plan->has_cost ? &plan->cost : NULL, keep_piece,
                         &c) ||
        c.failed)
        return REDIST_ERR_NOMEM; /* the caller frees t */
    for (int64_t d = 0; d < N; d++)
        lists_sort(&t[d], plan->m->sent.t.partial != 0);
    return REDIST_OK;
}

uint64_t rd_tlists_bytes(const rd_tlists *t, int side)
{
    uint64_t b = t->elem;
    const int64_t *sh = side ? t->r_shape : t->s_shape;
    if (side ? !t->in_dst : !t->in_src)
        return 0;
    for (int i = 0; i < t->ndims; i++)
        b *= (uint64_t)sh[i];
    return b;
}

uint64_t rd_meshes_scratch(uint64_t phase_a, uint64_t S, uint64_t R,
                           uint64_t phase_b)
{
    uint64_t x = phase_a + S, y = S + R, z = R + phase_b;
    return x > y ? (x > z ? x : z) : (y > z ? y : z);
}

void rd_meshes_usr_blocks(const redist_plan_t *plan, const rd_tlists *t,
                          int64_t dev, int usr, unsigned flags,
                          int *s_in_dst, int *r_in_src)
{
    const redist_spec_t *s = plan->spec;
    int both = usr && t->in_src && t->in_dst &&
               plan->m->phase[0]->nsteps > 0 && plan->m->phase[1]->nsteps > 0;
    uint64_t S = rd_tlists_bytes(t, 0), R = rd_tlists_bytes(t, 1);
    *s_in_dst = both && S > 0 && S <= redist_spec_device_bytes(s, 1, dev);
    *r_in_src = both && R > 0 && !(flags & REDIST_EXEC_PRESERVE_SRC) &&
                R <= redist_spec_device_bytes(s, 0, dev);
}

/* The bytes of device d's destination buffer lent to phase A (be->lend),
 * on a backend that runs each stage on every device before the next:
 * all of them when d is on both meshes and its S block is not there.
 * Nothing lands there before phase B (or, without one, the transfer). */
static uint64_t phase_a_lend(const redist_plan_t *plan, const rd_tlists *t,
                             int64_t d, int s_in_dst)
{
    return t->in_src && t->in_dst && !s_in_dst &&
                   plan->m->phase[0]->nsteps > 0
               ? redist_spec_device_bytes(plan->spec, 1, d)
               : 0;
}

int rd_meshes_s_in_src(const redist_plan_t *plan, unsigned flags)
{
    const redist_plan_t *pa = plan->m->phase[0];
    redist_step_view_t v;
    if (pa->nsteps == 0 || plan->m->phase[1]->nsteps > 0 ||
        (flags & REDIST_EXEC_PRESERVE_SRC))
        return 0;
    if (redist_spec_is_uneven(pa->spec)) /* one whole reduce_scatter */
        return pa->nsteps == 1 && !redist_plan_step(pa, 0, &v) &&
               v.op == REDIST_OP_REDUCE_SCATTER && rd_boxed_prefix(pa, 0);
    for (int k = 0; k < pa->nsteps; k++)
        if (redist_plan_step(pa, k, &v) || v.op != REDIST_OP_ALL_REDUCE)
            return 0;
    return 1;
}

uint64_t rd_meshes_phase_room(const redist_plan_t *plan, int side,
                              unsigned flags)
{
    const redist_spec_t *s = plan->spec;
    uint64_t room = UINT64_MAX;
    for (int64_t k = 0; k < s->two->mesh[side].ndevices; k++) {
        int64_t d = s->two->dev[side][k];
        rd_tlists t;
        int in_usr[2]; /* S in dst, R in src */
        rd_tlists_head(plan, d, &t);
        rd_meshes_usr_blocks(plan, &t, d, 1, flags, &in_usr[0], &in_usr[1]);
        uint64_t sb = redist_spec_device_bytes(s, 0, d);
        uint64_t db = redist_spec_device_bytes(s, 1, d);
        uint64_t bound = sb > db ? sb : db;
        uint64_t held = in_usr[side] ? 0 : rd_tlists_bytes(&t, side);
        uint64_t r = bound > held ? bound - held : 0;
        if (r < room)
            room = r;
    }
    return room == UINT64_MAX ? 0 : room;
}

/* A device's figures for its phase (phase_need): the scratch its program
 * allocates and, on phase B, its source's size (src_room: the R block's
 * allocation, at least the block; the caller's source where R is
 * placed there; 0 on an executor that allocates the block alone). */
typedef struct phase_dev {
    uint64_t scratch, src_room;
    uint64_t excess; /* what the device then holds past max(src_d, dst_d) */
} phase_dev;

/* The last programs built by phase_need, by (source and target block,
 * lent bytes, source room). */
enum { NEED_MEMO = 8 };
typedef struct need_memo {
    uint64_t key[4];
    redist_exec_info_t x;
} need_memo;

/* The exec info of phase plan ph on device k of its mesh (b: the
 * endpoint, its lend_bytes and src_room set). */
static redist_status_t dev_need(const redist_plan_t *ph, redist_backend_t *b,
                                const redist_exec_options_t *opts, int64_t k,
                                need_memo memo[], int *nmemo,
                                redist_exec_info_t *x, redist_error_t *err)
{
    uint64_t key[4] = {redist_spec_device_bytes(ph->spec, 0, k),
                       redist_spec_device_bytes(ph->spec, 1, k),
                       b->lend_bytes, b->src_room};
    for (int i = 0; i < *nmemo && i < NEED_MEMO; i++)
        if (!memcmp(memo[i].key, key, sizeof key)) {
            *x = memo[i].x;
            return REDIST_OK;
        }
    b->rank = k;
    redist_status_t st = redist_plan_exec_info(ph, b, opts, x, err);
    if (!st) {
        need_memo *m = &memo[(*nmemo)++ % NEED_MEMO];
        memcpy(m->key, key, sizeof key);
        m->x = *x;
    }
    return st;
}

/* Phase `side`'s exec info on endpoints of be's kind: on a backend that
 * runs each stage on every device before the next (RD_BUILD_MESH_USR,
 * sim), each device's program with its own buffers' sizes
 * (RD_BUILD_OWN_CAPS); on phase A lent its destination buffer
 * (phase_a_lend); on phase B its source room: the caller's source where
 * the R block is placed there, else the R block allocated at the size,
 * of the block's and the steps' outputs', that leaves the device the
 * least (the S and R blocks, or R beside phase B's scratch, whichever is
 * more; ties: the smaller).  per[k]: the mesh's rank k; info the most
 * scratch and whether any writes its source.  `flags` are the run's. */
static redist_status_t phase_need(const redist_plan_t *plan, int side,
                                  const redist_backend_t *be,
                                  const redist_exec_options_t *opts,
                                  unsigned flags, redist_exec_info_t *info,
                                  phase_dev *per, redist_error_t *err)
{
    const redist_plan_t *ph = plan->m->phase[side];
    const redist_spec_t *s = plan->spec;
    int64_t n = s->two->mesh[side].ndevices;
    redist_status_t st = redist_plan_exec_info(ph, be, opts, info, err);
    memset(per, 0, (size_t)n * sizeof *per);
    if (st || !be || !(be->build & RD_BUILD_MESH_USR) || ph->nsteps == 0) {
        for (int64_t k = 0; k < n; k++)
            per[k].scratch = st ? 0 : info->scratch_bytes;
        return st;
    }
    redist_backend_t b = *be;
    redist_exec_info_t x;
    need_memo memo[NEED_MEMO];
    int nmemo = 0, own_s = plan->m->phase[0]->nsteps > 0;
    b.build |= RD_BUILD_OWN_CAPS;
    b.lend = NULL;
    info->scratch_bytes = 0;
    info->writes_src = 0;
    for (int64_t k = 0; k < n && !st; k++) {
        int64_t d = s->two->dev[side][k];
        rd_tlists t;
        int s_in_dst, r_in_src;
        rd_tlists_head(plan, d, &t);
        rd_meshes_usr_blocks(plan, &t, d, 1, flags, &s_in_dst, &r_in_src);
        b.lend_bytes = side ? 0 : phase_a_lend(plan, &t, d, s_in_dst);
        b.src_room = !side      ? 0
                     : r_in_src ? redist_spec_device_bytes(s, 0, d)
                                : rd_tlists_bytes(&t, 1);
        st = dev_need(ph, &b, opts, k, memo, &nmemo, &x, err);
        per[k].scratch = x.scratch_bytes;
        per[k].src_room = b.src_room;
        if (side && !r_in_src) {
            uint64_t held = own_s && !s_in_dst ? rd_tlists_bytes(&t, 0) : 0;
            uint64_t R = b.src_room, best = 0;
            for (int j = -1; j < ph->nsteps && !st; j++) {
                redist_step_view_t v;
                if (j >= 0)
                    redist_plan_step(ph, j, &v);
                uint64_t c = j < 0 ? R : v.local_bytes;
                if (c < R || (j >= 0 && c == R))
                    continue;
                b.src_room = c;
                redist_exec_info_t y;
                if ((st = dev_need(ph, &b, opts, k, memo, &nmemo, &y, err)))
                    break;
                uint64_t tot = c + (held > y.scratch_bytes ? held
                                                           : y.scratch_bytes);
                if (j < 0 || tot < best || (tot == best &&
                                            c < per[k].src_room)) {
                    best = tot;
                    per[k].scratch = y.scratch_bytes;
                    per[k].src_room = c;
                    x = y;
                }
            }
        }
        /* the most the device holds during the phase: its scratch beside
         * the block held (phase A: S unless in the destination), or on
         * phase B the R block's allocation beside the S block or its
         * scratch (phase_info's choice) */
        uint64_t most = per[k].scratch +
                        (side || s_in_dst ? 0 : rd_tlists_bytes(&t, 0));
        if (side && !r_in_src) {
            uint64_t held = own_s && !s_in_dst ? rd_tlists_bytes(&t, 0) : 0;
            most = per[k].src_room +
                   (held > per[k].scratch ? held : per[k].scratch);
        }
        uint64_t b0 = redist_spec_device_bytes(s, 0, d);
        uint64_t b1 = redist_spec_device_bytes(s, 1, d);
        uint64_t bound = b0 > b1 ? b0 : b1;
        per[k].excess = most > bound ? most - bound : 0;
        if (per[k].scratch > info->scratch_bytes)
            info->scratch_bytes = per[k].scratch;
        info->writes_src |= x.writes_src;
    }
    return st;
}

/* The devices of a phase over max(src_d, dst_d), and by how much in all
 * (phase_need). */
static void phase_over(const phase_dev *per, int64_t n, int64_t *count,
                       uint64_t *excess)
{
    *count = 0;
    *excess = 0;
    for (int64_t k = 0; k < n; k++) {
        *count += per[k].excess > 0;
        *excess += per[k].excess;
    }
}

/* phase_need on `be`; with RD_BUILD_MESH_FUSE (sim) and unfused steps,
 * that of its whole steps instead when some device is over
 * max(src_d, dst_d) and they leave fewer devices over, or as many by
 * less in all (*fused then 1: the run gives the phase
 * REDIST_SIM_FUSED).  per: by rank on the phase's mesh. */
static redist_status_t phase_info(const redist_plan_t *plan, int side,
                                  const redist_backend_t *be,
                                  const redist_exec_options_t *opts,
                                  unsigned flags, redist_exec_info_t *info,
                                  int *fused, phase_dev *per,
                                  redist_error_t *err)
{
    const redist_plan_t *ph = plan->m->phase[side];
    int64_t n = plan->spec->two->mesh[side].ndevices, over, fover;
    uint64_t excess, fexcess;
    redist_status_t st = phase_need(plan, side, be, opts, flags, info, per,
                                    err);
    *fused = 0;
    phase_over(per, n, &over, &excess);
    if (st || !be || !(be->build & RD_BUILD_MESH_FUSE) || be->ops->step ||
        ph->nsteps == 0 || over == 0)
        return st;
    redist_sim_t *w = NULL;
    redist_exec_info_t f;
    phase_dev *fper = calloc((size_t)n, sizeof *fper);
    if (!fper)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (!(st = redist_sim_create(1, REDIST_SIM_FUSED, &w, err)))
        st = phase_need(plan, side, redist_sim_backend(w, 0), opts, flags,
                        &f, fper, err);
    redist_sim_free(w);
    phase_over(fper, n, &fover, &fexcess);
    if (!st && (fover < over || (fover == over && fexcess < excess))) {
        *info = f;
        memcpy(per, fper, (size_t)n * sizeof *per);
        *fused = 1;
    }
    free(fper);
    return st;
}

uint64_t rd_meshes_sum_cap(uint64_t bound, uint64_t held, uint64_t maxp)
{
    uint64_t room = bound > held ? bound - held : 0;
    return room > maxp ? room : maxp;
}

/* The bytes each receiver gets from other devices in the transfer, and
 * the largest such piece. */
typedef struct work_ctx {
    const redist_spec_t *s;
    uint64_t *bytes, *maxp; /* by global device */
} work_ctx;

static void count_work(void *user, int64_t r, int64_t q, const int64_t lo[],
                       const int64_t hi[])
{
    work_ctx *w = user;
    int64_t to = w->s->two->dev[1][r];
    if (to == w->s->two->dev[0][q])
        return;
    uint64_t b = w->s->elem_size;
    for (int i = 0; i < w->s->ndims; i++)
        b *= (uint64_t)(hi[i] - lo[i]);
    w->bytes[to] += b;
    if (b > w->maxp[to])
        w->maxp[to] = b;
}

/* rd_meshes_exec_info, whether each phase runs with whole steps
 * (phase_info) and, by global device (may be NULL), phase B's source
 * room (phase_need; 0: none). */
static redist_status_t meshes_info(const redist_plan_t *plan,
                                   const redist_backend_t *be,
                                   const redist_exec_options_t *opts,
                                   redist_exec_info_t *out, int fused[2],
                                   uint64_t *rroom, redist_error_t *err)
{
    const redist_spec_t *s = plan->spec;
    const rd_mplan *m = plan->m;
    redist_exec_info_t ia, ib;
    redist_status_t st;
    unsigned flags = opts ? opts->flags : 0;
    /* phase B's source is the R block, the run's own (or the caller's
     * source where that may be written): never preserved */
    redist_exec_options_t ob = {flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC};
    phase_dev *per[2] = {
        calloc((size_t)s->two->mesh[0].ndevices, sizeof *per[0]),
        calloc((size_t)s->two->mesh[1].ndevices, sizeof *per[1])};
    memset(out, 0, sizeof *out);
    if (!per[0] || !per[1])
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (!(st = phase_info(plan, 0, be, opts, flags, &ia, &fused[0],
                               per[0], err)))
        st = phase_info(plan, 1, be, &ob, flags, &ib, &fused[1], per[1],
                        err);
    if (st) {
        free(per[0]);
        free(per[1]);
        return st;
    }
    int own_s = m->phase[0]->nsteps > 0, own_r = m->phase[1]->nsteps > 0;
    /* a transfer that sums: an executor may receive the remote
     * contributions into a work area (MPI does, in rounds within
     * rd_meshes_sum_cap), held throughout */
    uint64_t *work = NULL, *maxp = NULL;
    if (m->sent.t.partial) {
        work_ctx w = {s, calloc((size_t)s->two->ndevices, sizeof *work),
                      calloc((size_t)s->two->ndevices, sizeof *maxp)};
        if (!w.bytes || !w.maxp ||
            rd_transfer_walk(s, &m->sent, &m->recvd,
                             plan->has_cost ? &plan->cost : NULL, count_work,
                             &w)) {
            free(w.bytes);
            free(w.maxp);
            free(per[0]);
            free(per[1]);
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        }
        work = w.bytes;
        maxp = w.maxp;
    }
    int usr = be && (be->build & RD_BUILD_MESH_USR), r_writes = 0;
    for (int64_t d = 0; d < s->two->ndevices; d++) {
        rd_tlists t; /* its blocks only: no pieces needed */
        int s_in_dst, r_in_src;
        rd_tlists_head(plan, d, &t);
        rd_meshes_usr_blocks(plan, &t, d, usr, flags, &s_in_dst, &r_in_src);
        r_writes |= r_in_src;
        int64_t q = rd_spec_mesh_rank(s, 0, d), r = rd_spec_mesh_rank(s, 1, d);
        uint64_t ha = q >= 0 ? per[0][q].scratch : 0;
        uint64_t hb = r >= 0 ? per[1][r].scratch : 0;
        uint64_t room = r >= 0 ? per[1][r].src_room : 0;
        uint64_t sb = own_s && !s_in_dst ? rd_tlists_bytes(&t, 0) : 0;
        uint64_t rb = !own_r || r_in_src ? 0
                      : room             ? room
                                         : rd_tlists_bytes(&t, 1);
        if (rroom)
            rroom[d] = room;
        uint64_t wd = 0;
        if (work) {
            uint64_t b0 = redist_spec_device_bytes(s, 0, d);
            uint64_t b1 = redist_spec_device_bytes(s, 1, d);
            uint64_t cap = rd_meshes_sum_cap(b0 > b1 ? b0 : b1, sb + rb,
                                             maxp[d]);
            wd = work[d] < cap ? work[d] : cap;
        }
        uint64_t x = rd_meshes_scratch(ha, sb, rb, hb) + wd;
        if (x > out->scratch_bytes)
            out->scratch_bytes = x;
    }
    free(work);
    free(maxp);
    free(per[0]);
    free(per[1]);
    out->src_bytes = s->src_bytes;
    out->dst_bytes = s->dst_bytes;
    out->bound_bytes = s->src_bytes > s->dst_bytes ? s->src_bytes
                                                   : s->dst_bytes;
    out->writes_src = ia.writes_src || r_writes;
    out->passes = ia.passes + 1 + ib.passes;
    out->collectives = ia.collectives + 1 + ib.collectives;
    return REDIST_OK;
}

redist_status_t rd_meshes_exec_info(const redist_plan_t *plan,
                                    const redist_backend_t *be,
                                    const redist_exec_options_t *opts,
                                    redist_exec_info_t *out,
                                    redist_error_t *err)
{
    int fused[2];
    return meshes_info(plan, be, opts, out, fused, NULL, err);
}

/* ------------------------------------------------ the sim backend's run */

static void *alloc_block(uint64_t bytes)
{
    return malloc(bytes ? bytes : 1);
}

/* One mesh of a two-mesh run on the sim backend, by rank on that mesh:
 * the caller's buffers (usr: the sources on the source mesh, the
 * targets on the target mesh), the blocks the transfer reads or writes
 * (blk: the S or R blocks the run allocates when `own`, else usr: that
 * mesh's phase has no steps) and the phase's reports. */
typedef struct sim_mesh {
    int64_t n;
    int own;
    void **usr, **blk;
    unsigned char *mine; /* blk[k] was allocated by the run */
    redist_exec_report_t *rep;
    uint64_t *lend; /* the source mesh: phase_a_lend (of usr's other) */
} sim_mesh;

/* A two-mesh run on the sim backend: its meshes, and every global
 * device's transfer lists. */
typedef struct sim_run {
    const rd_sim_args *a;
    const redist_spec_t *s;
    int64_t N;
    sim_mesh m[2];
    rd_tlists *tl;
    uint64_t *rroom; /* phase B's source room by global device */
} sim_run;

/* The arrays of a run (0: out of memory). */
static int sim_arrays(sim_run *u)
{
    int ok = (u->tl = calloc((size_t)u->N, sizeof *u->tl)) != NULL &&
             (u->rroom = calloc((size_t)u->N, sizeof *u->rroom)) != NULL;
    for (int side = 0; side < 2; side++) {
        sim_mesh *m = &u->m[side];
        m->usr = calloc((size_t)m->n, sizeof *m->usr);
        m->blk = calloc((size_t)m->n, sizeof *m->blk);
        m->rep = calloc((size_t)m->n, sizeof *m->rep);
        m->mine = calloc((size_t)m->n, 1);
        m->lend = calloc((size_t)m->n, sizeof *m->lend);
        ok = ok && m->usr && m->blk && m->rep && m->mine && m->lend;
    }
    return ok;
}

static unsigned run_flags(const sim_run *u)
{
    return u->a->opts ? u->a->opts->flags : 0;
}

/* The bytes the run allocates for device d's S or R block (side): the
 * block, or for R phase B's source room (phase_need) where larger. */
static uint64_t sim_block_bytes(const sim_run *u, int64_t d, int side)
{
    uint64_t b = rd_tlists_bytes(&u->tl[d], side);
    return side && u->rroom[d] > b ? u->rroom[d] : b;
}

/* The transfer lists, and the S and R blocks: in the caller's buffers
 * where rd_meshes_usr_blocks places them, else allocated. */
static redist_status_t sim_own_blocks(sim_run *u, redist_error_t *err)
{
    if (transfer_lists_all(u->a->plan, u->tl))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int side = 0; side < 2; side++) {
        sim_mesh *m = &u->m[side];
        void *const *usr = side ? u->a->dst : u->a->src;
        for (int64_t k = 0; k < m->n; k++) {
            int64_t d = u->s->two->dev[side][k];
            int in_usr[2]; /* S in dst, R in src */
            rd_meshes_usr_blocks(u->a->plan, &u->tl[d], d, 1, run_flags(u),
                                 &in_usr[0], &in_usr[1]);
            m->usr[k] = usr[d];
            m->mine[k] = m->own && !in_usr[side];
            if (!side)
                m->lend[k] = phase_a_lend(u->a->plan, &u->tl[d], d, in_usr[0]);
            m->blk[k] = !m->own    ? usr[d]
                        : in_usr[side] ? (side ? u->a->src : u->a->dst)[d]
                                       : alloc_block(sim_block_bytes(u, d, side));
            if (m->mine[k] && !m->blk[k])
                return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "out of memory");
        }
    }
    return REDIST_OK;
}

/* The transfer: every receiver copies its pieces from the senders' S
 * blocks (in-process, so a receive reads the send).  With pending sums
 * crossing, the pieces of one place come in ascending order of sender:
 * the first is copied, the others reduced into it (no temporary). */
static void sim_transfer(sim_run *u)
{
    const redist_spec_t *s = u->s;
    sim_mesh *ma = &u->m[0], *mb = &u->m[1];
    int sums = u->a->plan->m->sent.t.partial != 0;
    for (int64_t r = 0; r < mb->n; r++) {
        int64_t d = s->two->dev[1][r];
        const rd_tlists *t = &u->tl[d];
        for (int64_t k = 0; k < t->nrecv; k++) {
            const rd_tpiece *p = &t->recv[k];
            const rd_tlists *w = &u->tl[p->peer];
            int64_t q = rd_spec_mesh_rank(s, 0, p->peer);
            int64_t soff[REDIST_MAX_DIMS];
            for (int i = 0; i < s->ndims; i++)
                soff[i] = p->off[i] + t->r_lo[i] - w->s_lo[i];
            rd_meshes_place(s, !sums || rd_tpiece_first(t, k), mb->blk[r],
                            t->r_shape, p->off, ma->blk[q], w->s_shape, soff,
                            p->box);
            if (p->peer != d) {
                mb->rep[r].recv_bytes += p->bytes;
                ma->rep[q].sent_bytes += p->bytes;
            }
        }
    }
}

/* Phase `side` on the devices of its mesh, each with its own buffers'
 * sizes (phase_need) and, on phase A, lent its destination buffer where
 * phase_a_lend says; phase B from the R blocks, never preserved.  Phase
 * B's reports keep the bytes the transfer received. */
static redist_status_t sim_phase(sim_run *u, int side, unsigned flags,
                                 redist_exec_report_t *whole,
                                 redist_error_t *err)
{
    sim_mesh *m = &u->m[side];
    redist_exec_options_t o = {0};
    if (u->a->opts)
        o = *u->a->opts;
    if (side)
        o.flags &= ~(unsigned)REDIST_EXEC_PRESERVE_SRC;
    redist_exec_report_t *tmp = calloc((size_t)m->n, sizeof *tmp);
    redist_sim_t *w = NULL;
    redist_status_t st =
        tmp ? redist_sim_create(m->n, flags, &w, err)
            : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int64_t k = 0; !st && k < m->n; k++) {
        redist_backend_t *be = redist_sim_backend(w, k);
        be->build |= RD_BUILD_OWN_CAPS;
        be->src_room = side ? u->rroom[u->s->two->dev[1][k]] : 0;
        be->lend_bytes = side ? 0 : m->lend[k];
        be->lend = be->lend_bytes ? u->a->dst[u->s->two->dev[0][k]] : NULL;
    }
    if (!st)
        st = rd_sim_run_world(w, u->a->plan->m->phase[side],
                              side ? m->blk : m->usr, side ? m->usr : m->blk,
                              &o, whole, tmp, err);
    redist_sim_free(w);
    for (int64_t k = 0; tmp && k < m->n; k++) {
        uint64_t rv = m->rep[k].recv_bytes;
        m->rep[k] = tmp[k];
        m->rep[k].recv_bytes += rv;
    }
    free(tmp);
    return st;
}

/* Reports by global device: the phases' figures, the S and R blocks
 * counted as scratch where the run allocated them; `promise`: the
 * largest device's scratch; `writes_a`: phase A wrote its sources. */
static void sim_reports(const sim_run *u, redist_status_t st,
                        uint64_t promise, int writes_a)
{
    redist_exec_report_t *report = u->a->report;
    const redist_exec_report_t *ra = u->m[0].rep, *rb = u->m[1].rep;
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = st ? 0 : -1;
    }
    for (int64_t d = 0; d < u->N; d++) {
        redist_exec_report_t x = {0};
        int64_t q = rd_spec_mesh_rank(u->s, 0, d);
        int64_t r = rd_spec_mesh_rank(u->s, 1, d);
        int s_in_dst, r_in_src;
        rd_meshes_usr_blocks(u->a->plan, &u->tl[d], d, 1, run_flags(u),
                             &s_in_dst, &r_in_src);
        uint64_t S = u->m[0].own && !s_in_dst ? rd_tlists_bytes(&u->tl[d], 0)
                                              : 0;
        uint64_t R = u->m[1].own && !r_in_src ? sim_block_bytes(u, d, 1) : 0;
        uint64_t ha = q >= 0 ? ra[q].scratch_high_water : 0;
        uint64_t hb = r >= 0 ? rb[r].scratch_high_water : 0;
        x.scratch_high_water = rd_meshes_scratch(ha, S, R, hb);
        x.scratch_bytes = promise;
        x.scratch_allocations = (q >= 0 ? ra[q].scratch_allocations : 0) +
                                (r >= 0 ? rb[r].scratch_allocations : 0) +
                                (S > 0) + (R > 0);
        x.sent_bytes = (q >= 0 ? ra[q].sent_bytes : 0) +
                       (r >= 0 ? rb[r].sent_bytes : 0);
        x.recv_bytes = (q >= 0 ? ra[q].recv_bytes : 0) +
                       (r >= 0 ? rb[r].recv_bytes : 0);
        x.writes_src = q >= 0 && (writes_a || r_in_src);
        x.steps_done = st ? 0 : u->a->plan->nsteps;
        x.failed_step = st ? 0 : -1;
        if (u->a->per_device)
            u->a->per_device[d] = x;
        if (report) {
            if (x.scratch_bytes > report->scratch_bytes)
                report->scratch_bytes = x.scratch_bytes;
            if (x.scratch_high_water > report->scratch_high_water)
                report->scratch_high_water = x.scratch_high_water;
            if (x.sent_bytes > report->sent_bytes)
                report->sent_bytes = x.sent_bytes;
            if (x.recv_bytes > report->recv_bytes)
                report->recv_bytes = x.recv_bytes;
            report->writes_src |= x.writes_src;
            report->steps_done = x.steps_done;
        }
    }
}

static void sim_close(sim_run *u)
{
    for (int side = 0; side < 2; side++) {
        sim_mesh *m = &u->m[side];
        for (int64_t k = 0; m->mine && m->blk && k < m->n; k++)
            if (m->mine[k])
                free(m->blk[k]);
        free(m->mine);
        free(m->lend);
        free(m->usr);
        free(m->blk);
        free(m->rep);
    }
    for (int64_t d = 0; u->tl && d < u->N; d++)
        rd_tlists_free(&u->tl[d]);
    free(u->tl);
    free(u->rroom);
}

redist_status_t rd_meshes_sim_run(const rd_sim_args *a, redist_error_t *err)
{
    const redist_plan_t *plan = a->plan;
    const redist_spec_t *s = plan->spec;
    const redist_plan_t *pa = plan->m->phase[0], *pb = plan->m->phase[1];
    sim_run u = {.a = a, .s = s, .N = s->two->ndevices};
    u.m[0].n = s->two->mesh[0].ndevices;
    u.m[1].n = s->two->mesh[1].ndevices;
    u.m[0].own = pa->nsteps > 0;
    u.m[1].own = pb->nsteps > 0;
    if (!sim_arrays(&u)) {
        sim_close(&u);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    redist_exec_report_t whole_a = {0};
    redist_exec_info_t promise = {0};
    redist_sim_t *probe = NULL;
    int fused[2] = {0, 0};
    redist_status_t st = redist_sim_create(1, a->flags, &probe, err);
    if (!st)
        st = meshes_info(plan, redist_sim_backend(probe, 0), a->opts,
                         &promise, fused, u.rroom, err);
    redist_sim_free(probe);
    if (!st)
        st = sim_own_blocks(&u, err);
    if (!st && u.m[0].own)
        st = sim_phase(&u, 0, a->flags | (fused[0] ? REDIST_SIM_FUSED : 0),
                       &whole_a, err);
    if (!st)
        sim_transfer(&u);
    if (!st && u.m[1].own)
        st = sim_phase(&u, 1, a->flags | (fused[1] ? REDIST_SIM_FUSED : 0),
                       NULL, err);
    sim_reports(&u, st, promise.scratch_bytes, whole_a.writes_src);
    sim_close(&u);
    return st;
}
