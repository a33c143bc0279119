/*
 * Two-mesh plans over MPI (redist_mpi_execute_meshes; doc/meshes.md).
 *
 * ALGORITHM.  Rank d of the caller's communicator is global device d.
 * The call duplicates it, splits the duplicate into the source mesh's
 * ranks and the target mesh's (ordered by mesh rank), and runs
 *   1. the source phase on the source mesh (redist_mpi_execute on a
 *      context over its ranks), source block -> S block;
 *   2. the transfer: each rank posts one MPI_Irecv per peer it receives
 *      from and one MPI_Isend per peer it sends to, every piece an
 *      (h)vector datatype over its box in the S block (send) or the R
 *      block (receive), so nothing is packed; its own pieces are local
 *      box copies; then MPI_Waitall;
 *   3. the target phase on the target mesh, R block -> target block.
 * An empty phase is skipped: the transfer then sends from the source
 * buffer or receives into the destination buffer directly.
 *
 * FAILURE.  Every rank of the communicator takes part in an agreement
 * (rd_mpi_agree_comm: status and plan hash) before any data moves, after
 * the source phase and after the transfer, so a failure anywhere ends
 * the call on every rank with an error (no rank waits for a message that
 * will not come); a phase fails together on its own mesh, by
 * redist_mpi_execute's rules.
 *
 * COST.  Four allreduces over the union, two communicator splits and two
 * contexts per call (set-up a prepared object would keep; not yet built),
 * plus the phases' own costs and one message per transfer peer.  MEMORY:
 * rd_meshes_scratch (src/exec/meshes.c): the S and R blocks, where the
 * phases run, besides the phases' own scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../exec/meshes.h"
#include "../../plan/plan_internal.h"
#include "../../spec/spec_internal.h"

/* The plan, the device lists and the phases' plans, hashed. */
static uint64_t meshes_hash(const redist_plan_t *plan)
{
    const redist_spec_t *s = plan->spec;
    uint64_t h = rd_plan_hash(plan, 0);
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

/* Post the transfer's messages (receives first) and copy the own pieces;
 * then wait for them all. */
static redist_status_t transfer(MPI_Comm comm, uint64_t limit,
                                const rd_tlists *t, const char *sbuf,
                                char *rbuf, int64_t me, redist_error_t *err)
{
    int64_t n = t->nsend + t->nrecv, k = 0;
    MPI_Request *req = malloc((size_t)(n ? n : 1) * sizeof *req);
    int rc = MPI_SUCCESS;
    const char *call = "MPI_Irecv";
    if (!req)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int64_t i = 0; i < t->nrecv && rc == MPI_SUCCESS; i++) {
        const rd_tpiece *p = &t->recv[i];
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        if (p->peer == me)
            continue;
        rc = rd_mpi_dt_box(limit, t->ndims, t->r_shape, p->box, t->elem, &dt);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv(rbuf + rd_mpi_box_offset(t->ndims, t->r_shape,
                                                    p->off, t->elem),
                           1, dt, (int)p->peer, RD_MPI_TAG_XCHG, comm,
                           &req[k++]);
        rd_mpi_dt_free(&dt);
    }
    if (rc == MPI_SUCCESS)
        call = "MPI_Isend";
    for (int64_t i = 0; i < t->nsend && rc == MPI_SUCCESS; i++) {
        const rd_tpiece *p = &t->send[i];
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        if (p->peer == me) {
            /* the own piece: from the S block straight to the R block */
            const rd_tpiece *q = NULL;
            for (int64_t j = 0; j < t->nrecv && !q; j++)
                if (t->recv[j].peer == me)
                    q = &t->recv[j];
            if (q)
                rd_kernel_box(rbuf, t->r_shape, q->off, sbuf, t->s_shape,
                              p->off, p->box, t->ndims, t->elem);
            continue;
        }
        rc = rd_mpi_dt_box(limit, t->ndims, t->s_shape, p->box, t->elem, &dt);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(sbuf + rd_mpi_box_offset(t->ndims, t->s_shape,
                                                    p->off, t->elem),
                           1, dt, (int)p->peer, RD_MPI_TAG_XCHG, comm,
                           &req[k++]);
        rd_mpi_dt_free(&dt);
    }
    if (rc == MPI_SUCCESS) {
        call = "MPI_Waitall";
        rc = MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE);
    } else if (k > 0) {
        /* a post failed: the posted ones still complete (their peers
         * posted their halves), then the agreement reports it */
        MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE);
    }
    free(req);
    return rc == MPI_SUCCESS ? REDIST_OK : rd_mpi_fail(err, rc, call);
}

/* A context over `comm` (a mesh's ranks) for `mesh`; NULL comm: none. */
static redist_status_t phase_ctx(MPI_Comm comm, const redist_mesh_t *mesh,
                                 const redist_plan_t *phase,
                                 redist_mpi_t **out, redist_error_t *err)
{
    *out = NULL;
    if (comm == MPI_COMM_NULL || phase->nsteps == 0)
        return REDIST_OK;
    return redist_mpi_create(comm, mesh, NULL, out, err);
}

redist_status_t redist_mpi_execute_meshes(MPI_Comm comm,
                                          const redist_plan_t *plan,
                                          void *src, void *dst,
                                          const redist_exec_options_t *opts,
                                          redist_exec_report_t *report,
                                          redist_error_t *err)
{
    redist_exec_report_t ra = {0}, rb = {0};
    double t0 = MPI_Wtime();
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    if (comm == MPI_COMM_NULL)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "MPI_COMM_NULL");
    MPI_Comm c = MPI_COMM_NULL, ca = MPI_COMM_NULL, cb = MPI_COMM_NULL;
    int rank = 0, size = 0, rc = MPI_Comm_dup(comm, &c);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);

    /* local checks, then the first agreement: before any data moves */
    redist_status_t st = REDIST_OK;
    rd_tlists t;
    memset(&t, 0, sizeof t);
    const redist_spec_t *s = plan ? plan->spec : NULL;
    uint64_t hash = 0;
    if (!plan)
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
    else if (rd_transfer_lists(plan, rank, &t))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else {
        hash = meshes_hash(plan);
        if ((redist_spec_device_bytes(s, 0, rank) && !src) ||
            (redist_spec_device_bytes(s, 1, rank) && !dst))
            st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                          "device %d: a NULL buffer for a non-empty block",
                          rank);
    }
    st = rd_mpi_agree_comm(c, rank, st, hash,
                           "the ranks passed different plans", err);
    if (st)
        goto out;

    const redist_plan_t *pa = plan->m->phase[0], *pb = plan->m->phase[1];
    int own_s = pa->nsteps > 0 && t.in_src, own_r = pb->nsteps > 0 && t.in_dst;
    int64_t q = rd_spec_mesh_rank(s, 0, rank), r = rd_spec_mesh_rank(s, 1, rank);
    char *sbuf = own_s ? rd_mpi_malloc(rd_tlists_bytes(&t, 0) + 1) : src;
    char *rbuf = own_r ? rd_mpi_malloc(rd_tlists_bytes(&t, 1) + 1) : dst;
    redist_mpi_t *xa = NULL, *xb = NULL;
    redist_exec_options_t po = opts ? *opts : (redist_exec_options_t){0};
    if ((own_s && !sbuf) || (own_r && !rbuf))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if ((rc = MPI_Comm_split(c, q >= 0 ? 0 : MPI_UNDEFINED, (int)q, &ca)) !=
            MPI_SUCCESS ||
        (rc = MPI_Comm_split(c, r >= 0 ? 0 : MPI_UNDEFINED, (int)r, &cb)) !=
            MPI_SUCCESS)
        st = st ? st : rd_mpi_fail(err, rc, "MPI_Comm_split");
    /* the contexts are collective over their mesh's ranks: every rank of
     * a mesh creates it, whatever failed locally before */
    redist_error_t e2;
    redist_error_clear(&e2);
    redist_status_t sa = phase_ctx(ca, &s->two->mesh[0], pa, &xa, &e2);
    if (sa && !st)
        st = sa, *err = e2;
    redist_status_t sb = phase_ctx(cb, &s->two->mesh[1], pb, &xb, &e2);
    if (sb && !st)
        st = sb, *err = e2;
    st = rd_mpi_agree_comm(c, rank, st, 0, "", err);

    /* 1. the source phase */
    if (!st && xa)
        st = redist_mpi_execute(xa, pa, src, sbuf, &po, &ra, err);
    st = rd_mpi_agree_comm(c, rank, st, 0, "", err);
    /* 2. the transfer */
    if (!st)
        st = transfer(c, (uint64_t)INT32_MAX, &t, sbuf, rbuf, rank, err);
    st = rd_mpi_agree_comm(c, rank, st, 0, "", err);
    /* 3. the target phase */
    if (!st && xb)
        st = redist_mpi_execute(xb, pb, rbuf, dst, &po, &rb, err);
    st = rd_mpi_agree_comm(c, rank, st, 0, "", err);

    redist_mpi_free(xa);
    redist_mpi_free(xb);
    if (ca != MPI_COMM_NULL)
        MPI_Comm_free(&ca);
    if (cb != MPI_COMM_NULL)
        MPI_Comm_free(&cb);
    if (report) {
        uint64_t S = own_s ? rd_tlists_bytes(&t, 0) : 0;
        uint64_t R = own_r ? rd_tlists_bytes(&t, 1) : 0;
        report->scratch_bytes = rd_meshes_scratch(ra.scratch_bytes, S, R,
                                                  rb.scratch_bytes);
        report->scratch_high_water = rd_meshes_scratch(
            ra.scratch_high_water, S, R, rb.scratch_high_water);
        report->scratch_allocations = ra.scratch_allocations +
                                      rb.scratch_allocations + (S > 0) +
                                      (R > 0);
        for (int64_t i = 0; i < t.nsend; i++)
            if (t.send[i].peer != rank)
                report->sent_bytes += t.send[i].bytes;
        for (int64_t i = 0; i < t.nrecv; i++)
            if (t.recv[i].peer != rank)
                report->recv_bytes += t.recv[i].bytes;
        report->sent_bytes += ra.sent_bytes + rb.sent_bytes;
        report->recv_bytes += ra.recv_bytes + rb.recv_bytes;
        report->writes_src = ra.writes_src;
        report->steps_done = st ? 0 : plan->nsteps;
        report->failed_step = st ? 0 : -1;
    }
    if (own_s)
        free(sbuf);
    if (own_r)
        free(rbuf);
out:
    rd_tlists_free(&t);
    MPI_Comm_free(&c);
    if (report)
        report->seconds = MPI_Wtime() - t0;
    return st;
}
