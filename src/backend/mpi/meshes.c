/*
 * Two-mesh plans over MPI (doc/meshes.md): redist_mpi_prepare_meshes,
 * redist_mpi_run_meshes and the one-shot redist_mpi_execute_meshes.
 *
 * ALGORITHM.  Rank d of the caller's communicator is global device d.
 * Prepare duplicates it, splits the duplicate into the source mesh's
 * ranks and the target mesh's (ordered by mesh rank), makes a context and
 * a prepared object (redist_mpi_prepare) for each non-empty phase on its
 * mesh's ranks, lays out the rank's scratch (MEMORY below: the S and R
 * blocks, the phases' scratch, a work area), and binds the transfer as
 * persistent requests: one MPI_Recv_init per peer this rank receives
 * from and one MPI_Send_init per peer it sends to, every piece an
 * (h)vector datatype over its box in the S block (send) or the R block
 * (receive), so nothing is packed.  A run then:
 *   1. runs the source phase (redist_mpi_run), source block -> S block;
 *   2. agrees over the whole communicator on its outcome (one allreduce
 *      of an int: the target mesh's ranks would otherwise wait for
 *      messages a failed phase never sends);
 *   3. starts the transfer's requests, copies its own pieces (local box
 *      copies) and waits;
 *   4. runs the target phase, R block -> target block.
 * An empty phase is skipped: the transfer then sends from the source
 * buffer or receives into the destination buffer directly.
 *
 * FAILURE.  Prepare fails together on every rank of the communicator:
 * agreements (status and plan hash) come before anything is bound and
 * after the phases' objects are made.  The first is over the caller's
 * communicator itself, before any other collective call (every check,
 * a NULL output and an allocation failure included): redist_mpi_create
 * begins with the same agreement, so a rank that makes a context for a
 * one-array plan while the others prepare a two-mesh plan (Python's
 * redist.execute on a new communicator) fails every rank instead of
 * leaving them in different collectives.  A rank that calls
 * redist_mpi_execute on an existing context meanwhile cannot be matched
 * (its first call is on that context's communicator): Python's
 * redist.execute agrees on the kind of plan over comm first for that
 * reason (python/redist/_exec.py).  A run's MPI
 * errors are returned as by redist_mpi_run; a failed source phase fails
 * the run on every rank (step 2).
 *
 * PENDING SUMS.  When the plan's transfer sums the source's pending
 * contributions (src/plan/transfer.c), each remote contribution is
 * received whole into a work area, and the R block is built place by
 * place in ascending order of sender: the first contribution copied, the
 * others reduced in with the local kernels (rd_meshes_place), the own
 * one read from the S block.  So the floats match the sim backend's.
 * The work area holds at most rd_meshes_sum_cap bytes: the room
 * max(src_d, dst_d) leaves beside the S and R blocks this rank holds (or
 * the room a phase's part beside its block takes anyway, when larger:
 * the work area shares that memory, MEMORY below), at least one piece.
 * The receives (one persistent request
 * per piece) are split into rounds of consecutive pieces that fit it;
 * a run starts every send, then per round starts its receives, waits
 * and reduces them, so a receiver of prod|P| contributions of its whole
 * block off the source mesh holds one block's worth, not prod|P|.  The
 * senders' messages to one receiver match its receives in order (one
 * tag, ordered lists), whatever the rounds.
 *
 * COST.  Prepare: two communicator splits, two contexts, the phases'
 * preparation and the transfer lists (O(target devices x pieces) per
 * rank).  A run: the phases' runs, one allreduce, one message per
 * transfer peer.
 *
 * MEMORY: everything is allocated at prepare and held for the object's
 * life (no allocation in a run), in one arena per rank laid out by
 * lifetime.  A rank runs phase A, the transfer and phase B in that
 * order, whatever the other ranks do, and the transfer's receives are
 * posted only in step 3, so: phase A's scratch (its executor's buffers
 * and its reductions' work buffer) is dead once S is written; the work
 * area of a transfer that sums is dead once R is built; phase B's
 * scratch is used only after the transfer.  With A and B the phases'
 * parts (rd_mpi_arena_need: the prepared object's parts, each rounded up
 * to the alignment) and W the work area:
 *
 *     [0, R)            the R block          transfer, phase B
 *     [R, R + W)        the work area        transfer
 *     [R, R + B)        phase B's part       phase B
 *     [0, A)            phase A's part       phase A
 *     [T - S, T)        the S block          phase A, transfer
 *
 * T = max(A + S, S + R + W, R + B): the parts alive together never
 * overlap, and the rank holds what the stages need at most, not their
 * sum.  The phases' objects carve their parts from the arena (the
 * context's arena fields, copied by the object's clone: work.c, agree.c)
 * in the order they allocate, each part at a multiple of the element's
 * largest power-of-two divisor (at most 16: aligned for the kernels; S,
 * R and the pieces are whole elements, so they keep it).  The report's
 * scratch and high-water mark are T, plus what a phase allocated beyond
 * its part (none when rd_mpi_arena_need matches the program).
 *
 * PLACEMENT.  A rank on both meshes, both phases non-empty, keeps S in
 * its destination buffer and R in its source buffer where they fit
 * (rd_meshes_usr_blocks, as sim: RD_BUILD_MESH_USR): the requests are
 * bound to them at prepare, and each rank runs phase A, the transfer and
 * phase B in that order, so src is dead when the receives are posted and
 * dst is not written before the sends complete.  Such a rank holds
 * max(A, W, B) only.  A rank on both meshes with an empty phase B, whose
 * R block is its S block (same origin and shape) and which receives from
 * itself only, in a transfer that does not sum, keeps S in its
 * destination buffer too (s_is_r): phase A writes it, the transfer sends
 * from it, nothing is received into it, and the identity copy is
 * skipped.  Such a rank holds A only.
 *
 * S IN SRC.  When phase A is all-reduces only (S's blocks are the
 * source's), its blocks are even, REDIST_EXEC_PRESERVE_SRC is not set and
 * phase B is empty (rd_meshes_s_in_src: the plan and flags only, so every
 * rank alike), S is the caller's source buffer: phase A's context builds
 * its programs with RD_BUILD_END_IN_SRC (exec/assign.c), so each
 * all-reduce runs in place in src (the executor's SA, the block's size,
 * as its spare); so does a phase A of one uneven reduce-scatter whose
 * every box after it is empty or the first elements of its device's
 * block (reduce_boxed.c reduces into that prefix in place, with its work
 * space alone).  Its room is the least max(src_d, dst_d) over the source
 * mesh (nothing held beside it), so a tighter max_scratch keeps it there.
 * The transfer sends from src, the receives land in dst (or the work
 * area).  Such a rank holds max(A, W) with A within its bound: before, S
 * lay beside A, up to twice the bound on a rank with no destination
 * block.  Cost: none (the same reductions, in place).
 *
 * Measured (meson test -C build mpi-meshes-np3 mpi-meshes-np8, device
 * runs over max(src_d, dst_d)): 15 of 240 and 62 of 640 with every part
 * held at once, the same with the arena alone, 11 and 52 with s_is_r, 11
 * and 38 with S in src, 7 and 7 with uneven reduce-scatters run whole
 * (reduce_boxed.c: no packed buffer sized by the largest device), 7 and 6
 * with such a reduce-scatter in place in src.  What remains there is
 * runs with REDIST_EXEC_PRESERVE_SRC (an all-reduce out of place needs
 * work space beside an S as large as the source); other draws show rare
 * runs without it (doc/meshes.md, "Memory").
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../exec/meshes.h"
#include "../../plan/plan_internal.h"
#include "../../spec/spec_internal.h"

struct redist_mpi_meshes {
    MPI_Comm c, ca, cb;
    int rank;
    redist_mpi_t *x[2];
    redist_mpi_prepared_t *ph[2];
    char *sbuf, *rbuf;
    int own_s, own_r;                /* S, R in the arena */
    char *arena;                     /* this rank's scratch (layout above) */
    uint64_t T, need[2];             /* its size; each phase's part */
    int s_in_dst, r_in_src; /* S kept in dst, R in src (no allocation) */
    int s_is_r;             /* ... S in dst is the R block (no copy) */
    int s_in_src; /* phase A ends in place in src: S is the source buffer */
    rd_tlists t;
    MPI_Request *req;
    int nreq;
    uint64_t S, R;                   /* the S and R blocks this rank owns */
    int sums;                        /* the transfer sums contributions */
    const redist_spec_t *spec;
    char *wbuf;                      /* sums: a round's contributions */
    uint64_t W, *woff;               /* its size, each receive's offset */
    int64_t nround, *round_k;        /* sums: the pieces starting a round */
    int *round_q;                    /* ... and their first receive */
    uint64_t sent, recvd;            /* transfer bytes to and from others */
    int nsteps;
    rd_prepared f; /* start / test / wait (exec/async.c, meshes_async) */
};

static void meshes_async_init(redist_mpi_meshes_t *m);
static redist_status_t meshes_async_setup(redist_mpi_meshes_t *m,
                                          redist_status_t st,
                                          redist_error_t *err);

/* The plan, the device lists, the phases' plans and, when they differ
 * (else every replica is as near as the others, as without a model), the
 * axis links that chose the transfer's senders, hashed. */
static uint64_t meshes_hash(const redist_plan_t *plan)
{
    const redist_spec_t *s = plan->spec;
    uint64_t h = rd_plan_hash(plan, 0);
    int mixed = 0, first = -1;
    for (int a = 0; plan->has_cost && a < s->mesh.naxes; a++)
        if (s->mesh.size[a] > 1) {
            if (first < 0)
                first = plan->cost.axis_link[a];
            mixed |= plan->cost.axis_link[a] != first;
        }
    for (int a = 0; mixed && a < s->mesh.naxes; a++)
        h = (h ^ (uint64_t)(plan->cost.axis_link[a] + 1)) * 0x100000001b3ULL;
    for (int side = 0; side < 2; side++) {
        h = (h ^ rd_plan_hash(plan->m->phase[side], 0)) * 0x100000001b3ULL;
        const redist_mesh_t *m = &s->two->mesh[side];
        for (int a = 0; a < m->naxes; a++)
            h = (h ^ (uint64_t)m->size[a]) * 0x100000001b3ULL;
        for (int64_t r = 0; r < m->ndevices; r++)
            h = (h ^ (uint64_t)s->two->dev[side][r]) * 0x100000001b3ULL;
    }
    return h;
}

/* Bind the transfer as persistent requests (receives first): the own
 * pieces are copied by the run. */
static int bind_transfer(redist_mpi_meshes_t *m, const char **call)
{
    const rd_tlists *t = &m->t;
    int64_t n = t->nsend + t->nrecv;
    int rc = MPI_SUCCESS;
    if (!(m->req = malloc((size_t)(n ? n : 1) * sizeof *m->req)))
        return MPI_ERR_NO_MEM;
    *call = "MPI_Recv_init";
    for (int side = 1; side >= 0 && rc == MPI_SUCCESS; side--) {
        const rd_tpiece *v = side ? t->recv : t->send;
        int64_t nv = side ? t->nrecv : t->nsend;
        const int64_t *shape = side ? t->r_shape : t->s_shape;
        char *buf = side ? m->rbuf : m->sbuf;
        if (!side)
            *call = "MPI_Send_init";
        for (int64_t i = 0; i < nv && rc == MPI_SUCCESS; i++) {
            MPI_Datatype dt = MPI_DATATYPE_NULL;
            if (v[i].peer == m->rank)
                continue;
            /* a contribution to sum lands whole in the work area */
            int packed = side && m->sums;
            rc = rd_mpi_dt_box((uint64_t)INT32_MAX, t->ndims,
                               packed ? v[i].box : shape, v[i].box, t->elem,
                               &dt);
            char *at = packed ? m->wbuf + m->woff[i]
                              : buf + rd_mpi_box_offset(t->ndims, shape,
                                                        v[i].off, t->elem);
            if (rc == MPI_SUCCESS)
                rc = side ? MPI_Recv_init(at, 1, dt, (int)v[i].peer,
                                          RD_MPI_TAG_XCHG, m->c,
                                          &m->req[m->nreq])
                          : MPI_Send_init(at, 1, dt, (int)v[i].peer,
                                          RD_MPI_TAG_XCHG, m->c,
                                          &m->req[m->nreq]);
            if (rc == MPI_SUCCESS)
                m->nreq++;
            rd_mpi_dt_free(&dt); /* the request keeps its own reference */
            if (side)
                m->recvd += v[i].bytes;
            else
                m->sent += v[i].bytes;
        }
    }
    return rc;
}

/* An empty target phase on a rank whose R block is its S block (the
 * same origin and shape) and whose receives are all its own pieces, in
 * a transfer that does not sum: its destination buffer is its S block,
 * written by phase A, sent from by the transfer, never received into,
 * and its local copy is the identity (skipped). */
static int s_is_r(const redist_plan_t *plan, const rd_tlists *t, int rank)
{
    if (plan->m->phase[0]->nsteps == 0 || plan->m->phase[1]->nsteps > 0 ||
        !t->in_src || !t->in_dst || plan->m->sent.t.partial)
        return 0;
    for (int i = 0; i < t->ndims; i++)
        if (t->s_lo[i] != t->r_lo[i] || t->s_shape[i] != t->r_shape[i])
            return 0;
    for (int64_t k = 0; k < t->nrecv; k++)
        if (t->recv[k].peer != rank)
            return 0;
    return 1;
}

/* The least bound max(src_d, dst_d) over mesh `side`'s devices: a
 * phase's room when it holds no block beside its scratch (s_in_src). */
static uint64_t least_bound(const redist_spec_t *s, int side)
{
    uint64_t room = UINT64_MAX;
    for (int64_t k = 0; k < s->two->mesh[side].ndevices; k++) {
        int64_t d = s->two->dev[side][k];
        uint64_t b0 = redist_spec_device_bytes(s, 0, d);
        uint64_t b1 = redist_spec_device_bytes(s, 1, d);
        uint64_t b = b0 > b1 ? b0 : b1;
        if (b < room)
            room = b;
    }
    return room == UINT64_MAX ? 0 : room;
}

/* A context for `phase` on `comm` (a mesh's ranks; MPI_COMM_NULL or an
 * empty phase: none), its programs built with `keep` (RD_BUILD_*).
 * `room`: the phase's room under the two-mesh bound (the same on every
 * rank of the mesh); when the phase's default scratch exceeds it on some
 * rank and every rank can run within it, the context gets max_scratch =
 * room (reductions in more rounds, exchanges in place), agreed over
 * `comm`. */
static redist_status_t phase_context(MPI_Comm comm, const redist_mesh_t *mesh,
                                     const redist_plan_t *phase,
                                     const redist_exec_options_t *o,
                                     unsigned keep, uint64_t room,
                                     redist_mpi_t **x, redist_error_t *err)
{
    if (comm == MPI_COMM_NULL || phase->nsteps == 0)
        return REDIST_OK;
    redist_status_t st = redist_mpi_create(comm, mesh, NULL, x, err);
    if (!st) {
        (*x)->build_keep = keep;
        (*x)->be.build |= keep;
    }
    redist_mpi_info_t info;
    /* [0]: some rank needs more than room; [1]: some rank cannot fit */
    int want[2] = {0, 1}, all[2] = {0, 1};
    if (!st && !redist_mpi_exec_info(*x, phase, o, &info, NULL)) {
        want[0] = info.scratch_bytes > room;
        want[1] = info.min_scratch_bytes > room || room == 0;
    }
    if (MPI_Allreduce(want, all, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        all[0] = 0;
    if (all[0] && !all[1]) { /* every rank: the same options */
        redist_mpi_options_t mo = {0, room};
        redist_mpi_free(*x);
        *x = NULL;
        st = redist_mpi_create(comm, mesh, &mo, x, err);
        if (!st) {
            (*x)->build_keep = keep;
            (*x)->be.build |= keep;
        }
    }
    return st;
}

void redist_mpi_meshes_free(redist_mpi_meshes_t *m)
{
    if (!m)
        return;
    rd_prepared_destroy(&m->f); /* waits for a run in flight */
    for (int k = 0; k < m->nreq; k++)
        MPI_Request_free(&m->req[k]);
    free(m->req);
    for (int side = 0; side < 2; side++) {
        redist_mpi_prepared_free(m->ph[side]);
        redist_mpi_free(m->x[side]);
    }
    if (m->ca != MPI_COMM_NULL)
        MPI_Comm_free(&m->ca);
    if (m->cb != MPI_COMM_NULL)
        MPI_Comm_free(&m->cb);
    if (m->c != MPI_COMM_NULL)
        MPI_Comm_free(&m->c);
    free(m->arena); /* S, R, the work area and the phases' scratch */
    free(m->woff);
    free(m->round_k);
    free(m->round_q);
    rd_tlists_free(&m->t);
    free(m);
}

/* A transfer that sums: the rounds of its remote contributions and the
 * work area a round lands in (m->W bytes, each receive at m->woff[k]
 * within it), within rd_meshes_sum_cap of the room beside the S and R
 * blocks the rank holds: its bound max(src_d, dst_d), or more when a
 * phase's part of the arena beside its block takes more anyway (the
 * work area lives beside S and R only, layout above).  -1: out of
 * memory. */
static int work_area(redist_mpi_meshes_t *m, const redist_plan_t *plan)
{
    const rd_tlists *t = &m->t;
    const redist_spec_t *s = plan->spec;
    m->sums = plan->m->sent.t.partial != 0;
    if (!m->sums)
        return 0;
    size_t n = (size_t)t->nrecv + 2; /* rounds <= pieces, and the end */
    if (!(m->woff = calloc(n, sizeof *m->woff)) ||
        !(m->round_k = calloc(n, sizeof *m->round_k)) ||
        !(m->round_q = calloc(n, sizeof *m->round_q)))
        return -1;
    uint64_t maxp = 0, cur = 0;
    for (int64_t k = 0; k < t->nrecv; k++)
        if (t->recv[k].peer != m->rank && t->recv[k].bytes > maxp)
            maxp = t->recv[k].bytes;
    uint64_t b0 = redist_spec_device_bytes(s, 0, m->rank);
    uint64_t b1 = redist_spec_device_bytes(s, 1, m->rank);
    uint64_t room = b0 > b1 ? b0 : b1;
    if (m->need[0] + m->S > room)
        room = m->need[0] + m->S;
    if (m->R + m->need[1] > room)
        room = m->R + m->need[1];
    uint64_t cap = rd_meshes_sum_cap(room, m->S + m->R, maxp);
    int q = 0;
    m->nround = 1; /* round 0 starts at piece 0, receive 0 */
    for (int64_t k = 0; k < t->nrecv; k++) {
        if (t->recv[k].peer == m->rank)
            continue;
        if (cur > 0 && cur + t->recv[k].bytes > cap) {
            m->round_k[m->nround] = k;
            m->round_q[m->nround++] = q;
            cur = 0;
        }
        m->woff[k] = cur;
        cur += t->recv[k].bytes;
        if (cur > m->W)
            m->W = cur;
        q++;
    }
    m->round_k[m->nround] = t->nrecv;
    m->round_q[m->nround] = q;
    return 0;
}

/* The arena's size and this rank's parts in it (layout above): R at 0,
 * the work area and phase B's part after it, phase A's part at 0, S at
 * the end; each offset a multiple of `a` (it divides the element size,
 * so S, R and the work area's pieces keep it).  -1: out of memory. */
static int lay_out(redist_mpi_meshes_t *m, void *src, void *dst, uint64_t a)
{
    uint64_t x = m->need[0] + m->S, y = m->S + m->R + m->W;
    uint64_t z = m->R + m->need[1];
    uint64_t T = x > y ? (x > z ? x : z) : (y > z ? y : z);
    m->T = (T + a - 1) / a * a;
    if (m->T && !(m->arena = rd_mpi_malloc(m->T))) {
        m->T = 0;
        m->sbuf = m->own_s ? NULL : m->s_in_dst ? dst : src;
        m->rbuf = m->own_r ? NULL : m->r_in_src ? src : dst;
        return -1;
    }
    char *at = m->arena; /* NULL when T is 0: every part is empty */
    m->sbuf = !m->own_s ? (m->s_in_dst ? dst : src)
                        : at ? at + (m->T - m->S) : NULL;
    m->rbuf = m->own_r ? at : m->r_in_src ? src : dst;
    m->wbuf = m->W && at ? at + m->R : NULL;
    for (int side = 0; side < 2; side++)
        if (m->x[side] && m->need[side] && at) {
            m->x[side]->arena = at + (side ? m->R : 0);
            m->x[side]->arena_bytes = m->need[side];
            m->x[side]->arena_used = 0;
            m->x[side]->arena_align = a;
        }
    return 0;
}

/* A transfer that sums, after the receives of pieces k0..k1-1: each
 * place of the R block from its contributions in ascending order of
 * sender (the own one from the S block, the others from the work area):
 * the first copied, the others reduced in. */
static void sum_contributions(redist_mpi_meshes_t *m, const redist_spec_t *s,
                              int64_t k0, int64_t k1)
{
    const rd_tlists *t = &m->t;
    for (int64_t k = k0; k < k1; k++) {
        const rd_tpiece *p = &t->recv[k];
        int64_t soff[REDIST_MAX_DIMS] = {0};
        if (p->peer == m->rank) {
            for (int i = 0; i < t->ndims; i++)
                soff[i] = p->off[i] + t->r_lo[i] - t->s_lo[i];
            rd_meshes_place(s, rd_tpiece_first(t, k), m->rbuf, t->r_shape,
                            p->off, m->sbuf, t->s_shape, soff, p->box);
        } else
            rd_meshes_place(s, rd_tpiece_first(t, k), m->rbuf, t->r_shape,
                            p->off, m->wbuf + m->woff[k], p->box, soff,
                            p->box);
    }
}

redist_status_t redist_mpi_prepare_meshes(MPI_Comm comm,
                                          const redist_plan_t *plan,
                                          void *src, void *dst,
                                          const redist_exec_options_t *opts,
                                          redist_mpi_meshes_t **out,
                                          redist_error_t *err)
{
    if (comm == MPI_COMM_NULL) /* nobody to agree with */
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "MPI_COMM_NULL");
    int size = 0, rank = 0, rc;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    redist_mpi_meshes_t *m = calloc(1, sizeof *m);
    if (m) {
        m->c = m->ca = m->cb = MPI_COMM_NULL;
        m->rank = rank;
        meshes_async_init(m);
    }

    /* local checks, then the first agreement, over comm itself before any
     * other collective call: a rank that failed them, or that makes a
     * context (redist_mpi_create: its first call is the same agreement)
     * while the others prepare a two-mesh plan, fails every rank */
    redist_status_t st = REDIST_OK;
    const redist_spec_t *s = plan ? plan->spec : NULL;
    uint64_t hash = 0;
    if (!out)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    else if (!m)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (!plan)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL plan");
    else if (!plan->m)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                      "a plan of a one-mesh spec: use redist_mpi_execute");
    else if (size < s->two->ndevices)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                      "the communicator has %d ranks; the plan's meshes use "
                      "devices up to %lld",
                      size, (long long)s->two->ndevices - 1);
    else if (opts && (opts->flags & ~REDIST_EXEC_PRESERVE_SRC))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "two-mesh runs take REDIST_EXEC_PRESERVE_SRC only");
    else if (rd_transfer_lists(plan, m->rank, &m->t))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else {
        hash = meshes_hash(plan);
        if ((redist_spec_device_bytes(s, 0, m->rank) && !src) ||
            (redist_spec_device_bytes(s, 1, m->rank) && !dst))
            st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                          "device %d: a NULL buffer for a non-empty block",
                          m->rank);
        else if (src && dst && src == dst)
            st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                          "device %d: the same buffer for the source and "
                          "the target",
                          m->rank);
    }
    st = rd_mpi_agree_comm(comm, rank, st, hash,
                           "the ranks passed different plans", err);
    if (!st) { /* m on every rank; then m->c on every rank, or none */
        if ((rc = MPI_Comm_dup(comm, &m->c)) != MPI_SUCCESS) {
            m->c = MPI_COMM_NULL;
            st = rd_mpi_fail(err, rc, "MPI_Comm_dup");
        } else
            MPI_Comm_set_errhandler(m->c, MPI_ERRORS_RETURN);
        st = rd_mpi_agree_comm(comm, rank, st, 0, "", err);
    }
    if (st) {
        redist_mpi_meshes_free(m);
        return st;
    }

    const redist_plan_t *pa = plan->m->phase[0], *pb = plan->m->phase[1];
    int64_t q = rd_spec_mesh_rank(s, 0, m->rank);
    int64_t r = rd_spec_mesh_rank(s, 1, m->rank);
    m->nsteps = plan->nsteps;
    m->spec = s;
    /* the arena's parts start at multiples of the element's largest
     * power-of-two divisor (at most 16): aligned for its kernels */
    uint64_t align = 1;
    while (align < 16 && s->elem_size % (2 * align) == 0)
        align *= 2;
    /* S in dst, R in src where they fit (rd_meshes_usr_blocks): this
     * rank's phase B writes dst only after its transfer's sends are
     * done, and its receives are posted only after its phase A read src */
    rd_meshes_usr_blocks(plan, &m->t, m->rank, 1,
                         opts ? opts->flags : 0, &m->s_in_dst, &m->r_in_src);
    m->s_is_r = s_is_r(plan, &m->t, m->rank);
    m->s_in_dst |= m->s_is_r;
    m->s_in_src = rd_meshes_s_in_src(plan, opts ? opts->flags : 0);
    if (m->s_in_src) /* phase B is empty: nothing else to place */
        m->s_in_dst = m->r_in_src = m->s_is_r = 0;
    m->own_s = pa->nsteps > 0 && m->t.in_src && !m->s_in_dst &&
               !m->s_in_src;
    m->own_r = pb->nsteps > 0 && m->t.in_dst && !m->r_in_src;
    m->S = m->own_s ? rd_tlists_bytes(&m->t, 0) : 0;
    m->R = m->own_r ? rd_tlists_bytes(&m->t, 1) : 0;
    if ((rc = MPI_Comm_split(m->c, q >= 0 ? 0 : MPI_UNDEFINED, (int)q,
                             &m->ca)) != MPI_SUCCESS ||
        (rc = MPI_Comm_split(m->c, r >= 0 ? 0 : MPI_UNDEFINED, (int)r,
                             &m->cb)) != MPI_SUCCESS)
        st = st ? st : rd_mpi_fail(err, rc, "MPI_Comm_split");
    /* the phases' objects are collective over their mesh's ranks: every
     * rank of a mesh makes them, whatever failed locally before */
    redist_exec_options_t po = opts ? *opts : (redist_exec_options_t){0};
    redist_status_t sx[2] = {REDIST_OK, REDIST_OK};
    redist_error_t e2[2];
    for (int side = 0; side < 2; side++) {
        redist_error_clear(&e2[side]);
        int end_src = !side && m->s_in_src;
        sx[side] = phase_context(
            side ? m->cb : m->ca, &s->two->mesh[side], side ? pb : pa, &po,
            end_src ? RD_BUILD_END_IN_SRC : 0,
            end_src ? least_bound(s, 0)
                    : rd_meshes_phase_room(plan, side, po.flags),
            &m->x[side], &e2[side]);
        if (!sx[side] && m->x[side])
            m->need[side] = rd_mpi_arena_need(m->x[side], side ? pb : pa,
                                              &po, align);
    }
    /* the arena, then the phases' objects carved from it */
    if (work_area(m, plan) || lay_out(m, src, dst, align))
        st = st ? st
                : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int side = 0; side < 2; side++) {
        if (!sx[side] && m->x[side])
            sx[side] = redist_mpi_prepare(m->x[side], side ? pb : pa,
                                          side ? m->rbuf : src,
                                          side ? dst : m->sbuf, &po,
                                          &m->ph[side], &e2[side]);
        if (m->x[side]) /* the context keeps no pointer into it */
            m->x[side]->arena = NULL;
        if (sx[side] && !st) {
            st = sx[side];
            *err = e2[side];
        }
    }
    const char *call = "";
    if (!st && (rc = bind_transfer(m, &call)) != MPI_SUCCESS)
        st = rd_mpi_fail(err, rc, call);
    st = meshes_async_setup(m, st, err);
    if (st) {
        redist_mpi_meshes_free(m);
        return st;
    }
    *out = m;
    return REDIST_OK;
}

/* A transfer that sums: every send started, then per round its receives
 * started, waited for and reduced into the R block; then the sends
 * waited for.  The receives are the first round_q[nround] requests. */
static int sum_rounds(redist_mpi_meshes_t *m)
{
    int nr = m->round_q[m->nround], rc = MPI_SUCCESS;
    if (m->nreq > nr)
        rc = MPI_Startall(m->nreq - nr, m->req + nr);
    for (int64_t r = 0; r < m->nround && rc == MPI_SUCCESS; r++) {
        int q0 = m->round_q[r], n = m->round_q[r + 1] - q0;
        if (n > 0)
            rc = MPI_Startall(n, m->req + q0);
        if (rc == MPI_SUCCESS && n > 0)
            rc = MPI_Waitall(n, m->req + q0, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS)
            sum_contributions(m, m->spec, m->round_k[r], m->round_k[r + 1]);
    }
    if (rc == MPI_SUCCESS && m->nreq > nr)
        rc = MPI_Waitall(m->nreq - nr, m->req + nr, MPI_STATUSES_IGNORE);
    return rc;
}

/* A transfer that does not sum: every request started, the own pieces
 * copied, every request waited for. */
static int plain_transfer(redist_mpi_meshes_t *m)
{
    const rd_tlists *t = &m->t;
    int rc = m->nreq ? MPI_Startall(m->nreq, m->req) : MPI_SUCCESS;
    for (int64_t i = 0; rc == MPI_SUCCESS && !m->s_is_r && i < t->nsend;
         i++) {
        if (t->send[i].peer != m->rank)
            continue;
        for (int64_t j = 0; j < t->nrecv; j++)
            if (t->recv[j].peer == m->rank)
                rd_kernel_box(m->rbuf, t->r_shape, t->recv[j].off, m->sbuf,
                              t->s_shape, t->send[i].off, t->send[i].box,
                              t->ndims, t->elem);
    }
    if (rc == MPI_SUCCESS && m->nreq)
        rc = MPI_Waitall(m->nreq, m->req, MPI_STATUSES_IGNORE);
    return rc;
}

static redist_status_t run_meshes(redist_mpi_meshes_t *m,
                                  redist_exec_report_t *report,
                                  redist_error_t *err)
{
    redist_exec_report_t rp[2];
    double t0 = MPI_Wtime();
    memset(rp, 0, sizeof rp);
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    if (!m)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_status_t st = REDIST_OK;
    /* 1. the source phase */
    if (m->ph[0])
        st = redist_mpi_run(m->ph[0], &rp[0], err);
    /* 2. its outcome on every rank: the target mesh's ranks would wait */
    int bad = st != REDIST_OK, any = 0;
    int rc = MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, m->c);
    if (rc != MPI_SUCCESS && !st)
        st = rd_mpi_fail(err, rc, "MPI_Allreduce");
    else if (any && !st)
        st = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                      "the source mesh's phase failed on another rank");
    /* 3. the transfer */
    if (!st) {
        st = rd_mpi_injected(m->rank, err);
        if (!st)
            rc = m->sums ? sum_rounds(m) : plain_transfer(m);
        if (rc != MPI_SUCCESS)
            st = rd_mpi_fail(err, rc, "the transfer (MPI_Startall, "
                                      "MPI_Waitall)");
        if (st) /* the peers wait for this rank's messages (abort.c) */
            rd_mpi_abort_comm(m->c, m->rank, st, err);
    }
    /* 4. the target phase */
    if (!st && m->ph[1])
        st = redist_mpi_run(m->ph[1], &rp[1], err);
    if (report) {
        /* the arena lives as long as m (allocated at prepare); a phase
         * that used more than its part there allocated the rest */
        uint64_t more = 0;
        for (int side = 0; side < 2; side++)
            if (rp[side].scratch_high_water > m->need[side])
                more += rp[side].scratch_high_water - m->need[side];
        report->scratch_bytes = m->T;
        report->scratch_high_water = m->T + more;
        report->scratch_allocations = rp[0].scratch_allocations +
                                      rp[1].scratch_allocations +
                                      (m->arena != NULL);
        report->sent_bytes = m->sent + rp[0].sent_bytes + rp[1].sent_bytes;
        report->recv_bytes = m->recvd + rp[0].recv_bytes + rp[1].recv_bytes;
        report->writes_src = rp[0].writes_src || m->r_in_src;
        report->steps_done = st ? 0 : m->nsteps;
        report->failed_step = st ? 0 : -1;
        report->seconds = MPI_Wtime() - t0;
    }
    return st;
}

redist_status_t redist_mpi_execute_meshes(MPI_Comm comm,
                                          const redist_plan_t *plan,
                                          void *src, void *dst,
                                          const redist_exec_options_t *opts,
                                          redist_exec_report_t *report,
                                          redist_error_t *err)
{
    redist_mpi_meshes_t *m = NULL;
    double t0 = MPI_Wtime();
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    redist_status_t st =
        redist_mpi_prepare_meshes(comm, plan, src, dst, opts, &m, err);
    if (!st)
        st = redist_mpi_run_meshes(m, report, err);
    /* collective: every rank learns the run's outcome */
    if (m) {
        redist_status_t s2 = rd_mpi_agree_comm(m->c, m->rank, st, 0, "", err);
        st = st ? st : s2;
    }
    redist_mpi_meshes_free(m);
    if (report)
        report->seconds = MPI_Wtime() - t0;
    return st;
}

/* ------------------------------------------------------ non-blocking
 *
 * As a one-mesh prepared object (prepared.c, exec/async.c): prepare
 * spawns a progress thread where MPI_THREAD_MULTIPLE is provided and the
 * ranks agree on the lowest level; start hands run_meshes (unchanged:
 * the phases' blocking runs on their own communicators, the transfer on
 * the object's) to the thread; wait returns its status and report.
 * Cost: one thread per object, one more allreduce at prepare. */

static const rd_prepared_api meshes_api = {
    "redist_mpi_run_meshes", "redist_mpi_start_meshes",
    "redist_mpi_test_meshes", "redist_mpi_wait_meshes",
    "this prepared two-mesh object",
    "MPI_THREAD_MULTIPLE on every rank (MPI_Init_thread)"};

static redist_status_t meshes_run_fn(void *arg, redist_exec_report_t *r,
                                     redist_error_t *err)
{
    return run_meshes(arg, r, err);
}

static void meshes_async_init(redist_mpi_meshes_t *m)
{
    rd_prepared_init(&m->f, &meshes_api, NULL, MPI_THREAD_MULTIPLE,
                     meshes_run_fn, m);
}

/* The thread, the last agreement of prepare (st folded in), and the
 * lowest thread level of the ranks. */
static redist_status_t meshes_async_setup(redist_mpi_meshes_t *m,
                                          redist_status_t st,
                                          redist_error_t *err)
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (!st && level >= MPI_THREAD_MULTIPLE && rd_async_spawn(&m->f.async))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                      "cannot create the progress thread");
    st = rd_mpi_agree_comm(m->c, m->rank, st, 0, "", err);
    if (!st) {
        int rc = MPI_Allreduce(&level, &m->f.level, 1, MPI_INT, MPI_MIN,
                               m->c);
        if (rc != MPI_SUCCESS)
            st = rd_mpi_fail(err, rc, "MPI_Allreduce (thread level)");
    }
    return st;
}

redist_status_t redist_mpi_run_meshes(redist_mpi_meshes_t *m,
                                      redist_exec_report_t *report,
                                      redist_error_t *err)
{
    if (!m) {
        rd_report_empty(report);
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    }
    return rd_prepared_run(&m->f, report, err);
}

redist_status_t redist_mpi_start_meshes(redist_mpi_meshes_t *m,
                                        redist_error_t *err)
{
    return rd_prepared_start(m ? &m->f : NULL, err);
}

redist_status_t redist_mpi_test_meshes(redist_mpi_meshes_t *m, int *done,
                                       redist_error_t *err)
{
    return rd_prepared_test(m ? &m->f : NULL, done, err);
}

redist_status_t redist_mpi_wait_meshes(redist_mpi_meshes_t *m,
                                       redist_exec_report_t *report,
                                       redist_error_t *err)
{
    return rd_prepared_wait(m ? &m->f : NULL, report, err);
}

int redist_mpi_meshes_async(const redist_mpi_meshes_t *m)
{
    return m && rd_prepared_async(&m->f);
}
