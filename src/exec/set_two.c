/*
 * Two-mesh arrays in a plan set (doc/arrays.md; the run is at the top of
 * set_run.c).  A two-mesh plan is [phase A on the source mesh] transfer
 * [phase B on the target mesh] (src/plan/meshes.c).  In a set, each
 * phase runs as a one-mesh program on this device's endpoint of its mesh
 * (the backend's `sub`, one endpoint per distinct mesh of the set,
 * shared by the arrays; in a set of two or more arrays its exchange
 * passes join the combined exchanges instead: LOWERED PHASES below),
 * and the transfer is one part of the round's
 * combined exchange: its pieces are boxes of the S and R blocks
 * (rd_transfer_lists), which the backend sends in the same one message
 * per peer as the other arrays' pieces.
 *
 * LOWERED PHASES.  In a set of two or more arrays the phases' programs
 * are built as a one-mesh array's (RD_PROG_LOWER, RD_PROG_LOWER_RED:
 * set.c), and their exchange passes join the round's combined exchanges
 * on the union's endpoint instead of running on the mesh's: at
 * preparation each member copies the bound lists of each such pass with
 * every peer, a rank of the mesh, replaced by its device (the mesh's
 * device list) and sorted by it (lower_lists); a whole exchange step
 * (OpenSHMEM) keeps its mesh-rank geometry and carries the device list
 * (rd_xpart.devs).  rd_set_two_advance runs a phase's other passes on
 * the mesh's endpoint up to its next exchange pass; a device off the
 * mesh runs nothing but stops at the same passes and gives an empty
 * part, so every rank makes the same combined exchanges.  Cost: the
 * copies, O(pieces) per pass and member, once; a run adds nothing.
 *
 * SUMS.  A transfer that keeps pending partial axes P (crossing sums) lands
 * each contribution in a slab of its own: C is prod|P| slabs the size of
 * the R block stacked on dim 0, the slab of a contribution its sender's
 * coordinate on P (mixed radix, major first), which sender and receiver
 * compute alike, so one-sided puts need no reply.  Before phase B the
 * receiver reduces the slabs into R in its receive order, place by place
 * by ascending sender (rd_tpiece_first): the copy-then-reduce order of
 * the one-array sim run (meshes.c), so the same bits.  Cost: one pass
 * over the received bytes; memory prod|P| x |R| (part RD_TWO_C).
 *
 * MEMORY.  Each two-mesh array holds, in its part of the arena, its
 * phases' scratch and its S and R blocks (rd_set_two_layout_of), at once
 * for the whole round: more than a two-mesh plan run alone holds at any
 * one time (rd_meshes_scratch), the price of combining the transfers.
 *
 * SOLO.  A set of one two-mesh array (rd_plan_set_of_plan: OpenSHMEM's
 * one-array runs) lays its buffers out by lifetime instead
 * (rd_set_two_place_solo).  Only what other devices write must be
 * symmetric, at the same offsets everywhere: the R block, the slabs C
 * and the phases' scratch; those share one symmetric part, R at its
 * start, C and then phase B's scratch after R, phase A's scratch over R
 * (a device signals its senders that R is free only after its phase A,
 * and its first signal of phase B comes after the slabs are reduced),
 * each part rounded to whole elements, not RD_SET_ALIGN:
 *   max(|A scratch|, |R| + max(|C|, |B scratch|))   (most of any device).
 * R need not be in it when every device passes the same symmetric src
 * and dst objects (the backend agrees on that, the plan alone says
 * where, rd_set_two_r_usr): R is then
 *   - the destination itself when phase B is empty (the transfer puts
 *     straight into the final places; no copy);
 *   - the source when phase A has steps, REDIST_EXEC_PRESERVE_SRC is
 *     not set and every receiver is on the source mesh with R_d <= its
 *     source block (a device signals that R is free after its phase A,
 *     which has read the source by then; an empty phase B then copies R
 *     to the destination);
 * the symmetric part then holds max(|A scratch|, |C|, |B scratch|), all
 * at its start.  With such buffers phase A may also run on the
 * backend's symmetric kind (RD_SOLO_A_SYM, rd_backend_ops.sym_kind and
 * sym_endpoint): its reductions read the source in place (no copy of a
 * private source into scratch) and its exchanges put straight into S,
 * which must then lie at the same address on every device: the
 * caller's destination when R is not there and every S_d fits dst_d,
 * else the symmetric part at one offset past phase A's scratch, R and
 * C.  Of the placements the plan allows (R's place x phase A's kind),
 * the one with the fewest devices over max(src_d, dst_d), then the
 * least excess, computed over every device from the plan alone (two
 * layouts, O(devices) per placement), so every device makes the same
 * choice.
 * STREAMED (RD_SOLO_R_STREAM, with any buffers; set_stream.c): the
 * transfer goes through a window of the plan's size at the start of the
 * symmetric part, in place of R and C (part C holds its size; phase A's
 * and B's scratch overlap it, as they overlap R and C above), and each
 * device's R lies where it alone writes it: the destination when phase
 * B is empty, the source where rd_meshes_usr_blocks puts it, else
 * private memory of its own size past S's (stream_r):
 *   max(|A scratch|, window, |B scratch|) symmetric, plus private S, R.
 * It is one more placement of the choice above (streamed on ties last:
 * it copies every remote byte once more).
 * Otherwise the S block is written and read by its own device only: it
 * lies in
 *   1. the caller's destination where rd_meshes_usr_blocks places it
 *      (both phases, on both meshes, S fits);
 *   2. the symmetric part past what is live beside it there: phase A's
 *      scratch, and on a device that receives, R and C (phase B's
 *      scratch, written after the transfer, may lie over it): its own
 *      offset, as nobody else touches it;
 *   3. the caller's destination when phase B is empty and R is not
 *      there (it is written only by the copy of R after the transfer);
 *   4. else private memory of exactly its size (none off the source
 *      mesh or with an empty phase A, whose S is the source).
 * So a device holds the symmetric part plus, in case 4, its own S.  The
 * symmetric part is the same on every device (shmem_malloc takes the
 * same size everywhere), so a device whose blocks are smaller than the
 * largest device's (or that is off a mesh) may hold more than
 * max(src_d, dst_d), and so may a device of case 4 whose phase A keeps
 * scratch beside S.  Cost: the same runs; one more walk of the transfer
 * lists for the exec info; to choose the placement, two more layouts
 * (the phases' programs) and up to six O(devices) walks of the blocks'
 * heads.
 * COST.  Building: the transfer lists (O(target devices x pieces)) and
 * the phases' programs; the endpoints: one split of the union per
 * distinct mesh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"
#include "set_two.h"
#include "../core/internal.h"
#include "../plan/plan_internal.h"

/* This device's rank in side's mesh of spec s, or -1. */
static int64_t mesh_rank(const redist_spec_t *s, int side, int64_t dev)
{
    const redist_mesh_t *m = redist_spec_side_mesh(s, side);
    for (int64_t r = 0; r < redist_mesh_num_devices(m); r++)
        if (redist_spec_mesh_device(s, side, r) == dev)
            return r;
    return -1;
}

/* The slab of source device `dev`'s contribution: its coordinates on
 * the pending axes, mixed radix, major first (every device computes the
 * same for a sender). */
static int64_t slab_of(const redist_plan_t *plan, int64_t dev)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_side_mesh(s, 0);
    int64_t q = rd_spec_mesh_rank(s, 0, dev), k = 0;
    for (int a = 0; a < m->naxes; a++)
        if (plan->m->sent.t.partial >> a & 1u)
            k = k * m->size[a] + q / m->stride[a] % m->size[a];
    return k;
}

/* A scalar's lists as one-dimensional ones of one element (the slabs
 * stack on dim 0). */
static void one_dim(rd_tlists *l)
{
    l->ndims = 1;
    l->s_shape[0] = l->r_shape[0] = 1;
    l->s_lo[0] = l->r_lo[0] = 0;
    for (int64_t k = 0; k < l->nsend; k++) {
        rd_tpiece *p = &l->send[k];
        p->box[0] = p->pshape[0] = 1;
        p->off[0] = p->poff[0] = 0;
    }
    for (int64_t k = 0; k < l->nrecv; k++) {
        rd_tpiece *p = &l->recv[k];
        p->box[0] = p->pshape[0] = 1;
        p->off[0] = p->poff[0] = 0;
    }
}

/* The landing lists: the transfer's, with the R block seen as nslab
 * slabs stacked on dim 0, each piece in its sender's slab (the sender
 * writes there too: one-sided puts).  -1: out of memory. */
static int landing(const redist_plan_t *plan, rd_set_two *w, int64_t dev)
{
    rd_tlists *l = &w->land;
    *l = w->t;
    l->send = malloc((size_t)(w->t.nsend ? w->t.nsend : 1) * sizeof *l->send);
    l->recv = malloc((size_t)(w->t.nrecv ? w->t.nrecv : 1) * sizeof *l->recv);
    w->slab = malloc((size_t)(w->t.nrecv ? w->t.nrecv : 1) * sizeof *w->slab);
    l->cap_send = w->t.nsend;
    l->cap_recv = w->t.nrecv;
    if (!l->send || !l->recv || !w->slab)
        return -1;
    if (w->t.nsend)
        memcpy(l->send, w->t.send, (size_t)w->t.nsend * sizeof *l->send);
    if (w->t.nrecv)
        memcpy(l->recv, w->t.recv, (size_t)w->t.nrecv * sizeof *l->recv);
    if (!l->ndims)
        one_dim(l);
    int64_t rows = l->r_shape[0];
    l->r_shape[0] *= w->nslab;
    int64_t mine = rd_spec_mesh_rank(w->s, 0, dev) >= 0 ? slab_of(plan, dev)
                                                        : 0;
    for (int64_t k = 0; k < l->nsend; k++) {
        l->send[k].poff[0] += mine * l->send[k].pshape[0];
        l->send[k].pshape[0] *= w->nslab;
    }
    for (int64_t k = 0; k < l->nrecv; k++) {
        w->slab[k] = slab_of(plan, l->recv[k].peer);
        l->recv[k].off[0] += w->slab[k] * rows;
    }
    return 0;
}

/* A solo array's parts: exact, rounded up to whole elements (each
 * buffer's alignment: the symmetric part starts aligned for any type). */
static void solo_parts(const rd_set_two_layout *l, uint64_t elem,
                       uint64_t q[RD_TWO_NPARTS])
{
    for (int k = 0; k < RD_TWO_NPARTS; k++)
        q[k] = (l->bytes[k] + elem - 1) / elem * elem;
}

/* A solo array's parts (rd_set_two_layout_of, element-rounded), R none
 * when it lies in the caller's buffer (usr). */
static void solo_layout(const rd_set_two_layout *l, uint64_t elem, int usr,
                        uint64_t q[RD_TWO_NPARTS])
{
    solo_parts(l, elem, q);
    if (RD_SOLO_R(usr) != RD_SOLO_R_ARENA)
        q[RD_TWO_R] = 0;
    if (RD_SOLO_R(usr) == RD_SOLO_R_STREAM)
        q[RD_TWO_C] = 0; /* the window, rd_stream_window */
}

static int solo_s(const redist_plan_t *plan, const rd_tlists *t,
                    int64_t dev, unsigned flags, int usr,
                    const uint64_t q[RD_TWO_NPARTS], uint64_t *off);

/* Where device dev's R block lies in a streamed transfer: nowhere (no
 * block), the destination (an empty target phase), the source
 * (rd_meshes_usr_blocks), else private memory of its own size. */
enum { STREAM_R_NONE, STREAM_R_DST, STREAM_R_SRC, STREAM_R_PRIV };
static int stream_r(const redist_plan_t *plan, const rd_tlists *t,
                    int64_t dev, unsigned flags)
{
    int s_in_dst, r_in_src;
    if (!rd_tlists_bytes(t, 1))
        return STREAM_R_NONE;
    if (!plan->m->phase[1]->nsteps)
        return STREAM_R_DST;
    rd_meshes_usr_blocks(plan, t, dev, 1, flags, &s_in_dst, &r_in_src);
    return r_in_src ? STREAM_R_SRC : STREAM_R_PRIV;
}

/* The streamed transfer's window (q[RD_TWO_C]): the room of each device
 * beside its private blocks (S judged private unless it lies in the
 * destination or nowhere: the window decides whether it fits the
 * symmetric part's spare end), beside phase A's and B's scratch. */
static redist_status_t stream_window(const redist_plan_t *plan,
                                     unsigned flags, int usr,
                                     uint64_t q[RD_TWO_NPARTS],
                                     redist_error_t *err)
{
    const redist_spec_t *s = plan->spec;
    int64_t n = redist_spec_num_devices(s);
    uint64_t *room = malloc((size_t)n * sizeof *room), off, win = 0;
    if (!room)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int64_t d = 0; d < n; d++) {
        rd_tlists t;
        rd_tlists_head(plan, d, &t);
        int sp = solo_s(plan, &t, d, flags, usr, q, &off);
        uint64_t priv = 0;
        if (sp == RD_SOLO_S_PRIV || sp == RD_SOLO_S_SYM)
            priv += rd_tlists_bytes(&t, 0);
        if (stream_r(plan, &t, d, flags) == STREAM_R_PRIV)
            priv += rd_tlists_bytes(&t, 1);
        uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, d);
        uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
        uint64_t bound = sb > db ? sb : db;
        room[d] = bound >= priv ? bound - priv : 0;
    }
    uint64_t a = q[RD_TWO_ASA] + q[RD_TWO_ASB];
    uint64_t b = q[RD_TWO_BSA] + q[RD_TWO_BSB];
    redist_status_t st = rd_stream_window(plan, room, a > b ? a : b, &win,
                                          err);
    free(room);
    q[RD_TWO_C] = win;
    return st;
}

/* A solo array's parts at usr (solo_layout), with the window of a
 * streamed transfer. */
static redist_status_t solo_q(const redist_plan_t *plan,
                              const rd_set_two_layout *l, unsigned flags,
                              int usr, uint64_t q[RD_TWO_NPARTS],
                              redist_error_t *err)
{
    solo_layout(l, plan->spec->elem_size, usr, q);
    return RD_SOLO_R(usr) == RD_SOLO_R_STREAM
               ? stream_window(plan, flags, usr, q, err)
               : REDIST_OK;
}

/* A solo array's layout at usr: its phases' programs (phase A's for the
 * symmetric kind with RD_SOLO_A_SYM; the caller frees them) and parts
 * (solo_layout). */
static redist_status_t solo_layout_of(const redist_plan_t *plan,
                                      const rd_backend_ops *kind,
                                      unsigned flags, int usr,
                                      rd_set_two_layout *l,
                                      uint64_t q[RD_TWO_NPARTS],
                                      redist_error_t *err)
{
    const rd_backend_ops *ka =
        (usr & RD_SOLO_A_SYM) && kind && kind->sym_kind ? kind->sym_kind
                                                        : kind;
    redist_status_t st = rd_set_two_layout_ab(plan, ka, kind, flags, l, err);
    if (!st)
        st = solo_q(plan, l, flags, usr, q, err);
    return st;
}

/* With phase A on the symmetric kind, S is its destination, at the
 * same address on every device: the caller's destination when R is
 * not there and every device's S block fits its destination block
 * (phase B or the copy of R writes it only after the transfer), else
 * the symmetric part at one offset past phase A's scratch, R and the
 * slabs (*off), all live beside S on some device. */
static int a_sym_s(const redist_plan_t *plan, int usr,
                   const uint64_t q[RD_TWO_NPARTS], uint64_t *off)
{
    const redist_spec_t *s = plan->spec;
    *off = 0;
    int fits = RD_SOLO_R(usr) != RD_SOLO_R_DST;
    for (int64_t r = 0; fits && r < s->two->mesh[0].ndevices; r++) {
        int64_t d = s->two->dev[0][r];
        rd_tlists t;
        rd_tlists_head(plan, d, &t);
        fits = rd_tlists_bytes(&t, 0) <=
               redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
    }
    if (fits)
        return RD_SOLO_S_DST;
    uint64_t lo = q[RD_TWO_ASA] + q[RD_TWO_ASB];
    if (q[RD_TWO_R] + q[RD_TWO_C] > lo)
        lo = q[RD_TWO_R] + q[RD_TWO_C];
    *off = lo;
    return RD_SOLO_S_SYM;
}

/* A solo array's symmetric part at usr (parts q): rd_set_two_solo_sym,
 * and S's common place with RD_SOLO_A_SYM. */
static uint64_t solo_sym_of(const redist_plan_t *plan, int usr,
                            const uint64_t q[RD_TWO_NPARTS])
{
    uint64_t sym = rd_set_two_solo_sym(q), off;
    if ((usr & RD_SOLO_A_SYM) &&
        a_sym_s(plan, usr, q, &off) == RD_SOLO_S_SYM &&
        off + q[RD_TWO_S] > sym)
        sym = off + q[RD_TWO_S];
    return sym;
}

/* Where a solo array's S block lies on device dev (lists t, heads at
 * least; q: the parts), *off its offset in the symmetric part:
 *  - nowhere off the source mesh, with an empty phase A (S is the
 *    source) or an empty block;
 *  - the caller's destination where rd_meshes_usr_blocks places it;
 *  - the symmetric part past everything that is live beside it there:
 *    phase A's scratch (the phase's last pass writes S), and on a device
 *    that receives, R and the slabs (the transfer reads S while they
 *    land); phase B's scratch, written only after the transfer, may lie
 *    over it;
 *  - the caller's destination when the target phase is empty and R is
 *    not there: it is written only by the copy of R after the transfer;
 *  - else private memory of its own size. */
static int solo_s(const redist_plan_t *plan, const rd_tlists *t, int64_t dev,
                  unsigned flags, int usr, const uint64_t q[RD_TWO_NPARTS],
                  uint64_t *off)
{
    int s_in_dst, r_in_src;
    uint64_t S = rd_tlists_bytes(t, 0), R = rd_tlists_bytes(t, 1);
    *off = 0;
    if (usr & RD_SOLO_A_SYM)
        return a_sym_s(plan, usr, q, off);
    rd_meshes_usr_blocks(plan, t, dev, 1, flags, &s_in_dst, &r_in_src);
    if (s_in_dst)
        return RD_SOLO_S_DST;
    if (!t->in_src || !plan->m->phase[0]->nsteps || !S)
        return RD_SOLO_S_NONE;
    uint64_t lo = q[RD_TWO_ASA] + q[RD_TWO_ASB];
    if (R && q[RD_TWO_R] + q[RD_TWO_C] > lo)
        lo = q[RD_TWO_R] + q[RD_TWO_C];
    if (lo + S <= rd_set_two_solo_sym(q)) {
        *off = lo;
        return RD_SOLO_S_SYM;
    }
    if (t->in_dst && !plan->m->phase[1]->nsteps &&
        RD_SOLO_R(usr) != RD_SOLO_R_DST &&
        RD_SOLO_R(usr) != RD_SOLO_R_STREAM &&
        S <= redist_spec_device_bytes(plan->spec, REDIST_SIDE_TO, dev))
        return RD_SOLO_S_DST;
    return RD_SOLO_S_PRIV;
}

/* The places of R a plan allows when the caller's buffers are
 * symmetric (a mask of 1 << RD_SOLO_R_*): the arena; the destination
 * when the target phase is empty (R is the target block); the source
 * when phase A has steps (it has read the source before this device
 * signals that R is free), REDIST_EXEC_PRESERVE_SRC is not set, and
 * every device that receives is on the source mesh with its R block
 * within its source block. */
static unsigned r_allowed(const redist_plan_t *plan, unsigned flags)
{
    const redist_plan_t *a = plan->m->phase[0], *b = plan->m->phase[1];
    unsigned m = 1u << RD_SOLO_R_ARENA;
    if (!b->nsteps)
        m |= 1u << RD_SOLO_R_DST;
    if (!a->nsteps || (flags & REDIST_EXEC_PRESERVE_SRC))
        return m;
    const redist_spec_t *s = plan->spec;
    for (int64_t r = 0; r < s->two->mesh[1].ndevices; r++) {
        int64_t d = s->two->dev[1][r];
        rd_tlists t;
        rd_tlists_head(plan, d, &t);
        uint64_t R = rd_tlists_bytes(&t, 1);
        if (R && (!t.in_src ||
                  R > redist_spec_device_bytes(s, REDIST_SIDE_FROM, d)))
            return m;
    }
    return m | 1u << RD_SOLO_R_SRC;
}

/* Over every device, with R at `usr`: how many hold more than
 * max(src_d, dst_d) (the symmetric part and a private S), and the
 * excess in all. */
static void r_score(const redist_plan_t *plan, const rd_set_two_layout *l,
                    unsigned flags, int usr, int64_t *over, uint64_t *excess)
{
    const redist_spec_t *s = plan->spec;
    uint64_t q[RD_TWO_NPARTS], off;
    *over = INT64_MAX;
    *excess = UINT64_MAX;
    if (solo_q(plan, l, flags, usr, q, NULL))
        return;
    uint64_t sym = solo_sym_of(plan, usr, q);
    *over = 0;
    *excess = 0;
    for (int64_t d = 0; d < redist_spec_num_devices(s); d++) {
        rd_tlists t;
        rd_tlists_head(plan, d, &t);
        uint64_t held = sym;
        if (solo_s(plan, &t, d, flags, usr, q, &off) == RD_SOLO_S_PRIV)
            held += rd_tlists_bytes(&t, 0);
        if (RD_SOLO_R(usr) == RD_SOLO_R_STREAM &&
            stream_r(plan, &t, d, flags) == STREAM_R_PRIV)
            held += rd_tlists_bytes(&t, 1);
        uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, d);
        uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
        uint64_t bound = sb > db ? sb : db;
        if (held > bound) {
            ++*over;
            *excess += held - bound;
        }
    }
}

int rd_set_two_r_usr(const redist_plan_t *plan, const rd_backend_ops *kind,
                     unsigned flags, int sym)
{
    /* l[0]: phase A for any buffers, l[1]: on the symmetric kind */
    rd_set_two_layout l[2];
    int nl = sym && plan->m->phase[0]->nsteps && kind && kind->sym_kind ? 2
                                                                        : 1;
    for (int a = 0; a < nl; a++) {
        redist_status_t st = rd_set_two_layout_ab(
            plan, a && kind ? kind->sym_kind : kind, kind, flags, &l[a],
            NULL);
        rd_program_free(&l[a].prog[0]);
        rd_program_free(&l[a].prog[1]);
        if (st)
            nl = a;
    }
    /* tests (rd_stream_cap): streamed first, so it wins ties */
    static const int order[2][4] = {
        {RD_SOLO_R_DST, RD_SOLO_R_SRC, RD_SOLO_R_ARENA, RD_SOLO_R_STREAM},
        {RD_SOLO_R_STREAM, RD_SOLO_R_DST, RD_SOLO_R_SRC, RD_SOLO_R_ARENA}};
    const int *ord = order[rd_stream_cap != 0];
    /* streamed: with phase A for any buffers only */
    unsigned allowed = (sym ? r_allowed(plan, flags) : 1u << RD_SOLO_R_ARENA) |
                       1u << RD_SOLO_R_STREAM;
    int best = RD_SOLO_R_ARENA;
    int64_t best_over = INT64_MAX;
    uint64_t best_excess = UINT64_MAX;
    for (int a = 0; a < nl; a++)
        for (int k = 0; k < 4; k++) {
            if (!(allowed >> ord[k] & 1u) ||
                (a && ord[k] == RD_SOLO_R_STREAM))
                continue;
            int usr = ord[k] | (a ? RD_SOLO_A_SYM : 0);
            int64_t over;
            uint64_t excess;
            r_score(plan, &l[a], flags, usr, &over, &excess);
            if (over < best_over ||
                (over == best_over && excess < best_excess)) {
                best = usr;
                best_over = over;
                best_excess = excess;
            }
        }
    return best;
}

static int by_peer(const void *a, const void *b)
{
    int64_t p = ((const rd_xfer *)a)->peer, q = ((const rd_xfer *)b)->peer;
    return p < q ? -1 : p > q;
}

/* Lowered phases: side's mesh devices and, on a member, each exchange
 * pass's bound lists with its peers devices of the union, sorted by
 * peer (each peer once: the mesh's ranks map to distinct devices). */
static redist_status_t lower_lists(rd_set_two *w, int side,
                                   redist_error_t *err)
{
    const rd_program *p = &w->ph[side].p;
    int64_t n = redist_mesh_num_devices(redist_spec_side_mesh(w->s, side));
    w->dev[side] = malloc((size_t)(n ? n : 1) * sizeof *w->dev[side]);
    if (!w->dev[side])
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int64_t r = 0; r < n; r++)
        w->dev[side][r] = redist_spec_mesh_device(w->s, side, r);
    if (!w->has[side])
        return REDIST_OK;
    w->xl[side] = calloc((size_t)(2 * p->npasses), sizeof *w->xl[side]);
    if (!w->xl[side])
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int k = 0; k < p->npasses; k++) {
        const rd_xchg *x = p->pass[k].x.xchg;
        if (!rd_pass_is_exchange(&p->pass[k]) || !x)
            continue;
        for (int dir = 0; dir < 2; dir++) {
            int64_t m = dir ? x->nrecv : x->nsend;
            const rd_xfer *v = dir ? x->recv : x->send;
            rd_xfer *t = malloc((size_t)(m ? m : 1) * sizeof *t);
            if (!t)
                return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "out of memory");
            w->xl[side][2 * k + dir] = t;
            for (int64_t q = 0; q < m; q++) {
                t[q] = v[q];
                t[q].peer = w->dev[side][v[q].peer];
            }
            qsort(t, (size_t)m, sizeof *t, by_peer);
        }
    }
    return REDIST_OK;
}

redist_status_t rd_set_two_build(rd_set_two *w, const redist_plan_t *plan,
                                 const rd_backend_ops *kind, unsigned flags,
                                 int usr, int64_t dev, void *src, void *dst,
                                 redist_error_t *err)
{
    memset(w, 0, sizeof *w);
    const redist_spec_t *s = redist_plan_spec(plan);
    rd_set_two_layout l;
    redist_status_t st =
        solo_layout_of(plan, kind, flags, usr, &l, w->solo, err);
    for (int side = 0; side < 2; side++) {
        w->ph[side].p = l.prog[side];
        w->rank[side] = mesh_rank(s, side, dev);
    }
    memcpy(w->part, l.part, sizeof w->part);
    w->s = s;
    w->nslab = rd_two_slabs(plan);
    int stream = RD_SOLO_R(usr) == RD_SOLO_R_STREAM;
    if (!st)
        st = rd_transfer_lists(plan, dev, &w->t) == REDIST_OK &&
                     (w->nslab < 2 || stream || !landing(plan, w, dev))
                 ? REDIST_OK
                 : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
    if (!st && stream) /* the window is C */
        st = rd_stream_build(plan, &w->t, dev, w->solo[RD_TWO_C], &w->stream,
                             err);
    for (int side = 0; side < 2 && !st; side++) {
        w->has[side] = w->rank[side] >= 0 && w->ph[side].p.npasses > 0;
        if (w->has[side])
            st = rd_program_bind(&w->ph[side].p, plan->m->phase[side],
                                 w->rank[side], err);
        w->ph[side].nsteps = redist_plan_num_steps(plan->m->phase[side]);
    }
    w->lower = (flags & RD_PROG_LOWER) != 0;
    for (int side = 0; side < 2 && !st && w->lower; side++)
        st = lower_lists(w, side, err);
    if (!st) { /* a solo array's S (rd_set_two_place_solo) */
        w->s_at = solo_s(plan, &w->t, dev, flags, usr, w->solo, &w->s_off);
        w->priv = w->s_at == RD_SOLO_S_PRIV ? rd_tlists_bytes(&w->t, 0) : 0;
        int r = stream ? stream_r(plan, &w->t, dev, flags) : STREAM_R_NONE;
        w->r_src = r == STREAM_R_SRC;
        w->r_priv = r == STREAM_R_PRIV ? rd_tlists_bytes(&w->t, 1) : 0;
        w->priv += w->r_priv;
    }
    /* the blocks the phases read and write, until place(); R in the
     * caller's buffer (usr) is the same symmetric object on every
     * device, the senders' address of it on the receivers */
    w->r_at = usr;
    w->ph[0].buf[RD_BUF_SRC] = src;
    w->ph[1].buf[RD_BUF_DST] = dst;
    w->S = redist_plan_num_steps(plan->m->phase[0]) ? NULL : src;
    w->R = RD_SOLO_R(usr) == RD_SOLO_R_DST              ? dst
           : RD_SOLO_R(usr) == RD_SOLO_R_SRC || w->r_src ? src
           : redist_plan_num_steps(plan->m->phase[1]) ? NULL
                                                        : dst;
    return st;
}

/* The buffers at p[part] (NULL: none of that part). */
static void two_assign(rd_set_two *w, char *const p[RD_TWO_NPARTS])
{
    w->ph[0].buf[RD_BUF_SA] = p[RD_TWO_ASA];
    w->ph[0].buf[RD_BUF_SB] = p[RD_TWO_ASB];
    w->ph[1].buf[RD_BUF_SA] = p[RD_TWO_BSA];
    w->ph[1].buf[RD_BUF_SB] = p[RD_TWO_BSB];
    if (p[RD_TWO_S])
        w->S = p[RD_TWO_S];
    if (p[RD_TWO_R])
        w->R = p[RD_TWO_R];
    w->C = p[RD_TWO_C];
    w->ph[0].buf[RD_BUF_DST] = w->S;
    w->ph[1].buf[RD_BUF_SRC] = w->R;
}

void rd_set_two_place(rd_set_two *w, char *at)
{
    uint64_t off = 0;
    char *p[RD_TWO_NPARTS];
    for (int k = 0; k < RD_TWO_NPARTS; k++) {
        p[k] = w->part[k] ? at + off : NULL;
        off += w->part[k];
    }
    two_assign(w, p);
}

uint64_t rd_set_two_solo_sym(const uint64_t part[RD_TWO_NPARTS])
{
    uint64_t a = part[RD_TWO_ASA] + part[RD_TWO_ASB];
    uint64_t b = part[RD_TWO_BSA] + part[RD_TWO_BSB];
    uint64_t r = part[RD_TWO_R] + (part[RD_TWO_C] > b ? part[RD_TWO_C] : b);
    return a > r ? a : r;
}

redist_status_t rd_set_two_solo_sizes(const redist_plan_t *plan,
                                      const rd_backend_ops *kind,
                                      unsigned flags, int usr, int64_t dev,
                                      uint64_t *sym, uint64_t *priv,
                                      redist_error_t *err)
{
    rd_set_two_layout l;
    rd_tlists t;
    uint64_t q[RD_TWO_NPARTS], off;
    *sym = *priv = 0;
    redist_status_t st = solo_layout_of(plan, kind, flags, usr, &l, q, err);
    rd_program_free(&l.prog[0]);
    rd_program_free(&l.prog[1]);
    if (st)
        return st;
    *sym = solo_sym_of(plan, usr, q);
    if (dev < 0)
        return REDIST_OK;
    if (rd_transfer_lists(plan, dev, &t))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (solo_s(plan, &t, dev, flags, usr, q, &off) == RD_SOLO_S_PRIV)
        *priv = rd_tlists_bytes(&t, 0);
    if (RD_SOLO_R(usr) == RD_SOLO_R_STREAM &&
        stream_r(plan, &t, dev, flags) == STREAM_R_PRIV)
        *priv += rd_tlists_bytes(&t, 1);
    rd_tlists_free(&t);
    return REDIST_OK;
}

int rd_set_two_solo_r_src(const redist_plan_t *plan, unsigned flags, int usr,
                          int64_t dev)
{
    rd_tlists t;
    if (RD_SOLO_R(usr) == RD_SOLO_R_SRC)
        return 1;
    if (RD_SOLO_R(usr) != RD_SOLO_R_STREAM)
        return 0;
    rd_tlists_head(plan, dev, &t);
    return stream_r(plan, &t, dev, flags) == STREAM_R_SRC;
}

void rd_set_two_place_solo(rd_set_two *w, char *sym, char *priv)
{
    const uint64_t *q = w->solo; /* R 0: in the caller's buffer */
    char *p[RD_TWO_NPARTS] = {NULL};
    /* phase A's scratch where R (or the slabs) will be: this PE signals
     * the senders that they are free only once its phase A has ended */
    p[RD_TWO_ASA] = sym;
    p[RD_TWO_ASB] = sym ? sym + q[RD_TWO_ASA] : NULL;
    p[RD_TWO_R] = sym;
    /* the slabs, then phase B's scratch: the slabs are reduced into R
     * before this PE's first signal of phase B */
    p[RD_TWO_C] = p[RD_TWO_BSA] = sym ? sym + q[RD_TWO_R] : NULL;
    p[RD_TWO_BSB] = sym ? sym + q[RD_TWO_R] + q[RD_TWO_BSA] : NULL;
    /* S: written and read by this PE only (the phase's last pass copies
     * into it, the transfer puts from it); an empty S block (uneven)
     * points at memory never written */
    p[RD_TWO_S] = w->s_at == RD_SOLO_S_DST    ? w->ph[1].buf[RD_BUF_DST]
                  : w->s_at == RD_SOLO_S_SYM  ? sym + w->s_off
                  : w->s_at == RD_SOLO_S_PRIV ? priv
                                              : sym;
    for (int k = 0; k < RD_TWO_NPARTS; k++)
        if (!q[k])
            p[k] = NULL;
    /* streamed: R past S in the private memory, the window is C */
    if (w->r_priv)
        p[RD_TWO_R] = priv + (w->priv - w->r_priv);
    two_assign(w, p);
    if (w->stream)
        w->stream->window = w->C;
}

rd_xpart rd_set_two_part(const rd_set_two *w)
{
    rd_xpart x = {w->S, 0, NULL, w->R, 0, NULL, &w->t, NULL, w->stream, NULL};
    if (w->nslab > 1 && !w->stream) {
        x.recv = w->C;
        x.tl = &w->land;
    }
    return x;
}

/* An empty target phase whose R block is in the arena
 * (rd_set_two_layout_of): the destination is a copy of it. */
static void copy_r(rd_set_two *w)
{
    void *dst = w->ph[1].buf[RD_BUF_DST];
    uint64_t b = rd_tlists_bytes(&w->t, 1); /* 0: dst may be NULL */
    if (w->rank[1] >= 0 && w->R != dst && b)
        memcpy(dst, w->R, (size_t)b);
}

/* A transfer that sums: the contributions landed in C, reduced into R
 * place by place in ascending order of sender (the order of the
 * receives: rd_tpiece_first), as the one-array sim run does. */
static void reduce_landed(rd_set_two *w)
{
    const rd_tlists *t = &w->t;
    uint64_t slab = rd_tlists_bytes(t, 1);
    for (int64_t k = 0; w->nslab > 1 && !w->stream && k < t->nrecv; k++)
        rd_meshes_place(w->s, rd_tpiece_first(t, k), w->R, t->r_shape,
                        t->recv[k].off, (char *)w->C + w->slab[k] * slab,
                        t->r_shape, t->recv[k].off, t->recv[k].box);
}

redist_status_t rd_set_two_phase(rd_set_two *w, int side,
                                 redist_backend_t *union_be,
                                 redist_exec_report_t *r, redist_error_t *err)
{
    if (side)
        reduce_landed(w);
    if (!w->has[side]) {
        if (side)
            copy_r(w);
        return REDIST_OK;
    }
    redist_exec_report_t pr;
    memset(&pr, 0, sizeof pr);
    redist_status_t st = rd_exec_run(&w->ph[side], &pr, err);
    r->recv_bytes += pr.recv_bytes;
    r->sent_bytes += pr.sent_bytes;
    if (st && union_be->ops->abort) /* the other mesh's ranks too */
        union_be->ops->abort(union_be, st, err);
    return st;
}

redist_status_t rd_set_two_advance(rd_set_two *w, int side, int *pc,
                                   int first, redist_backend_t *union_be,
                                   redist_exec_report_t *r,
                                   redist_error_t *err)
{
    const rd_program *p = &w->ph[side].p;
    if (first && side)
        reduce_landed(w);
    if (first && side && !p->npasses)
        copy_r(w);
    if (!w->has[side]) { /* off the mesh: the same stops, nothing run */
        while (*pc < p->npasses && !rd_pass_is_exchange(&p->pass[*pc]))
            ++*pc;
        return REDIST_OK;
    }
    redist_exec_report_t pr;
    memset(&pr, 0, sizeof pr);
    redist_status_t st = rd_exec_until_exchange(&w->ph[side], pc, &pr, err);
    r->recv_bytes += pr.recv_bytes;
    r->sent_bytes += pr.sent_bytes;
    if (st && union_be->ops->abort) /* the other mesh's ranks too */
        union_be->ops->abort(union_be, st, err);
    return st;
}

rd_xpart rd_set_two_xpart(const rd_set_two *w, int side, int pc,
                          redist_exec_report_t *r)
{
    rd_xpart q;
    memset(&q, 0, sizeof q);
    if (!w->has[side])
        return q; /* empty: off the mesh */
    const rd_exec_prep *xp = &w->ph[side];
    const rd_pass *ps = &xp->p.pass[pc];
    const rd_xchg *x = ps->x.xchg;
    rd_pass_account(xp->be, ps, r); /* the mesh's ranks */
    q.send = xp->buf[ps->in_buf];
    q.nto = x->nsend;
    q.to = w->xl[side][2 * pc];
    q.recv = xp->buf[ps->out_buf];
    q.nfrom = x->nrecv;
    q.from = w->xl[side][2 * pc + 1];
    if (ps->kind == RD_PASS_FUSED) {
        q.x = &ps->x;
        q.devs = w->dev[side];
    }
    return q;
}

void rd_set_two_free(rd_set_two *w)
{
    for (int side = 0; side < 2; side++) {
        for (int k = 0; w->xl[side] && k < 2 * w->ph[side].p.npasses; k++)
            free(w->xl[side][k]);
        free(w->xl[side]);
        free(w->dev[side]);
    }
    rd_program_free(&w->ph[0].p);
    rd_program_free(&w->ph[1].p);
    rd_tlists_free(&w->t);
    if (w->nslab > 1 && !w->stream)
        rd_tlists_free(&w->land);
    free(w->slab);
    rd_stream_free(w->stream);
}

/* ------------------------------------------------------------ endpoints */

static int same_mesh(const rd_set_ep *e, const redist_spec_t *s, int side)
{
    const redist_mesh_t *m = redist_spec_side_mesh(s, side);
    int64_t n = redist_mesh_num_devices(m);
    if (n != e->n || redist_mesh_num_axes(m) != redist_mesh_num_axes(&e->mesh))
        return 0;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (redist_mesh_axis_size(m, a) != redist_mesh_axis_size(&e->mesh, a))
            return 0;
    for (int64_t r = 0; r < n; r++)
        if (redist_spec_mesh_device(s, side, r) != e->dev[r])
            return 0;
    return 1;
}

/* A new endpoint slot of eps for side's mesh of s (its devices copied),
 * or NULL out of memory. */
static rd_set_ep *eps_add(rd_set_eps *eps, const redist_spec_t *s, int side)
{
    if (eps->n == eps->cap) {
        int cap = eps->cap ? 2 * eps->cap : 4;
        rd_set_ep *e = realloc(eps->e, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        eps->e = e;
        eps->cap = cap;
    }
    rd_set_ep *e = &eps->e[eps->n];
    const redist_mesh_t *m = redist_spec_side_mesh(s, side);
    memset(e, 0, sizeof *e);
    e->mesh = *m;
    e->n = redist_mesh_num_devices(m);
    if (!(e->dev = malloc((size_t)(e->n ? e->n : 1) * sizeof *e->dev)))
        return NULL;
    for (int64_t r = 0; r < e->n; r++)
        e->dev[r] = redist_spec_mesh_device(s, side, r);
    eps->n++;
    return e;
}

/* Free the slots' device lists and the slots (not their endpoints). */
static void eps_clear(rd_set_eps *eps)
{
    for (int k = 0; k < eps->n; k++)
        free(eps->e[k].dev);
    free(eps->e);
    memset(eps, 0, sizeof *eps);
}

int rd_set_distinct_meshes(const redist_plan_set_t *set)
{
    rd_set_eps seen = {0, 0, NULL};
    int lost = 0; /* meshes not recorded (out of memory): each counted */
    for (int i = 0; i < set->n; i++) {
        const redist_spec_t *s = redist_plan_spec(set->plan[i]);
        for (int side = 0; redist_spec_num_meshes(s) == 2 && side < 2; side++) {
            int k = 0;
            while (k < seen.n && !same_mesh(&seen.e[k], s, side))
                k++;
            if (k == seen.n && !eps_add(&seen, s, side))
                lost++;
        }
    }
    int n = seen.n + lost;
    eps_clear(&seen);
    return n;
}

int rd_set_eps_slot(rd_set_eps *eps, const redist_spec_t *s, int side)
{
    for (int k = 0; k < eps->n; k++)
        if (same_mesh(&eps->e[k], s, side))
            return k;
    return eps_add(eps, s, side) ? eps->n - 1 : -1;
}

redist_status_t rd_set_eps_make(rd_set_eps *eps, redist_backend_t *be,
                                redist_error_t *err)
{
    redist_status_t st = REDIST_OK;
    for (int k = 0; k < eps->n; k++) {
        rd_set_ep *e = &eps->e[k];
        redist_error_t e2 = REDIST_ERROR_INIT;
        redist_status_t s2 = be->ops->sub(be, &e->mesh, e->dev, &e->be, &e2);
        if (s2 && !st) {
            st = s2;
            if (err)
                *err = e2;
        }
    }
    return st;
}

void rd_set_eps_free(rd_set_eps *eps)
{
    for (int k = 0; k < eps->n; k++) {
        rd_set_ep *e = &eps->e[k];
        if (e->be && e->began && e->be->ops->end_programs)
            e->be->ops->end_programs(e->be);
        if (e->be && e->be->ops->sub_free)
            e->be->ops->sub_free(e->be);
    }
    eps_clear(eps);
}
