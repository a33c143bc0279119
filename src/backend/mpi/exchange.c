/*
 * exchange steps (time-objective plans).  Whole steps (the default):
 * per peer one MPI_Irecv and one MPI_Isend of a box datatype (nested
 * hvectors, datatypes.c) straight in the blocks, the own box by
 * rd_kernel_box, then MPI_Waitall; the requests live in the context
 * (nothing is allocated mid-plan).  ~ alpha peers + beta received bytes.
 * Scratch 0, no pack or unpack pass.  REDIST_MPI_PACKED: the executor
 * packs and unpacks, and the pieces go as contiguous bytes
 * (rd_mpi_exchange), at the same cost plus the two local passes.
 */
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* Wait for the n requests posted; the first failure: `call`'s return
 * code rc, else MPI_Waitall's. */
static redist_status_t wait_all(redist_mpi_t *x, int n, int rc,
                                const char *call, redist_error_t *err)
{
    int wrc = n ? MPI_Waitall(n, x->reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, call);
    return wrc == MPI_SUCCESS ? REDIST_OK
                              : rd_mpi_fail(err, wrc, "MPI_Waitall");
}

/* Point-to-point pieces: receives posted first, then sends, then one
 * wait.  Lists are sorted by peer, each peer at most once. */
redist_status_t rd_mpi_exchange(redist_backend_t *be, const void *send,
                                int64_t nto, const rd_xfer *to, void *recv,
                                int64_t nfrom, const rd_xfer *from,
                                redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    int n = 0, rc = MPI_SUCCESS;
    const char *call = "MPI_Irecv";
    x->exchanges++;
    if (nto > x->size || nfrom > x->size)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: exchange with more peers than ranks");
    for (int64_t k = 0; k < nfrom && rc == MPI_SUCCESS; k++) {
        if (from[k].peer == x->rank || from[k].bytes == 0)
            continue;
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = rd_mpi_dt_bytes(x->limit, from[k].bytes, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv((char *)recv + from[k].off, 1, t,
                           (int)from[k].peer, RD_MPI_TAG_XCHG, x->comm,
                           &x->reqs[n++]);
        rd_mpi_dt_free(&t); /* a pending operation keeps its own reference */
    }
    for (int64_t k = 0; k < nto && rc == MPI_SUCCESS; k++) {
        if (to[k].bytes == 0)
            continue;
        if (to[k].peer == x->rank) { /* the piece this rank keeps */
            for (int64_t j = 0; j < nfrom; j++)
                if (from[j].peer == x->rank)
                    memcpy((char *)recv + from[j].off,
                           (const char *)send + to[k].off,
                           (size_t)to[k].bytes);
            continue;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        call = "MPI_Isend";
        rc = rd_mpi_dt_bytes(x->limit, to[k].bytes, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend((const char *)send + to[k].off, 1, t,
                           (int)to[k].peer, RD_MPI_TAG_XCHG, x->comm,
                           &x->reqs[n++]);
        rd_mpi_dt_free(&t);
    }
    return wait_all(x, n, rc, call, err);
}

/* One box of an exchange step with peer p, as one (h)vector datatype at
 * `at` in buf of `shape`: a receive or a send (send), persistent
 * (MPI_Recv_init / MPI_Send_init, prepared.c) or started (MPI_Irecv /
 * MPI_Isend); its request goes to req[(*n)++] once the call is made. */
static int post_box(redist_mpi_t *x, const rd_xstep *xs, int send,
                    int persistent, const char *buf, const int64_t *shape,
                    const int64_t *at, const int64_t *box, int64_t p,
                    MPI_Request *req, int *n)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    char *b = (char *)buf + rd_mpi_box_offset(xs->ndims, shape, at, xs->elem);
    int rc = rd_mpi_dt_box(x->limit, xs->ndims, shape, box, xs->elem, &t);
    if (rc == MPI_SUCCESS) {
        MPI_Request *r = &req[(*n)++];
        if (send)
            rc = persistent ? MPI_Send_init(b, 1, t, (int)p, RD_MPI_TAG_XCHG,
                                            x->comm, r)
                            : MPI_Isend(b, 1, t, (int)p, RD_MPI_TAG_XCHG,
                                        x->comm, r);
        else
            rc = persistent ? MPI_Recv_init(b, 1, t, (int)p, RD_MPI_TAG_XCHG,
                                            x->comm, r)
                            : MPI_Irecv(b, 1, t, (int)p, RD_MPI_TAG_XCHG,
                                        x->comm, r);
    }
    rd_mpi_dt_free(&t); /* a pending operation keeps its own reference */
    return rc;
}

/* The boxes of an exchange step between this rank and its peers, one
 * per peer and direction, receives first; the own box is not posted.
 * *call names the kind of call that failed. */
static int post_boxes(redist_mpi_t *x, const rd_xstep *xs, const char *in,
                      char *out, int persistent, MPI_Request *req, int *n,
                      const char **call)
{
    const rd_xchg *xc = xs->xchg;
    int rc = MPI_SUCCESS;
    int64_t me = x->rank, box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS],
            ob[REDIST_MAX_DIMS];
    for (int64_t k = 0; k < xc->nrecv && rc == MPI_SUCCESS; k++) {
        int64_t p = xc->recv[k].peer;
        if (p != me && rd_xchg_box(xc, p, me, box, oa, ob))
            rc = post_box(x, xs, 0, persistent, out, xs->out_shape, ob, box,
                          p, req, n);
    }
    for (int64_t k = 0; k < xc->nsend && rc == MPI_SUCCESS; k++) {
        int64_t p = xc->send[k].peer;
        if (p == me || !rd_xchg_box(xc, me, p, box, oa, ob))
            continue;
        *call = "MPI_Isend";
        rc = post_box(x, xs, 1, persistent, in, xs->in_shape, oa, box, p, req,
                      n);
    }
    return rc;
}

/* A whole exchange step: every box straight from the source block to its
 * place in the receiver's block, one (h)vector datatype per peer and
 * direction, receives posted first; this rank's own box with the box
 * kernel.  No pack, no unpack. */
redist_status_t rd_mpi_xchg_step(redist_mpi_t *x, const rd_xstep *xs,
                                 const char *in, char *out,
                                 redist_error_t *err)
{
    const rd_xchg *xc = xs->xchg;
    int nd = xs->ndims, n = 0, rc = MPI_SUCCESS;
    size_t elem = xs->elem;
    int64_t me = x->rank, box[REDIST_MAX_DIMS], oa[REDIST_MAX_DIMS],
            ob[REDIST_MAX_DIMS];
    const char *call = "MPI_Irecv";
    x->exchanges++;
    if (xc->nsend > x->size || xc->nrecv > x->size)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: exchange with more peers than ranks");
    rd_mpi_cached *cc = rd_mpi_cache_of(x);
    int prepared = cc && cc->valid; /* persistent requests */
    if (prepared) {
        rc = cc->nreq ? MPI_Startall(cc->nreq, cc->req) : MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "MPI_Startall");
    } else {
        rc = post_boxes(x, xs, in, out, 0, x->reqs, &n, &call);
    }
    if (rc == MPI_SUCCESS && rd_xchg_box(xc, me, me, box, oa, ob))
        rd_kernel_box(out, xs->out_shape, ob, in, xs->in_shape, oa, box, nd,
                      elem);
    return prepared ? rd_mpi_start_wait(cc, 0, err)
                    : wait_all(x, n, rc, call, err);
}

/* A prepared exchange step (prepared.c): one persistent receive and send
 * per peer, built once on the bound buffers; run: MPI_Startall, the own
 * box, MPI_Waitall. */
int rd_mpi_xchg_prepare(redist_mpi_t *x, const rd_xstep *xs, const char *in,
                        char *out, rd_mpi_cached *cc)
{
    const rd_xchg *xc = xs->xchg;
    const char *call = NULL;
    cc->req = rd_mpi_malloc((size_t)(xc->nrecv + xc->nsend + 1) *
                            sizeof *cc->req);
    if (!cc->req)
        return MPI_ERR_NO_MEM;
    int rc = post_boxes(x, xs, in, out, 1, cc->req, &cc->nreq, &call);
    cc->valid = 1;
    return rc;
}
