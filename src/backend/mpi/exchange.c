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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../exec/meshes.h"
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
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
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

/* Many arrays (src/exec/set_run.c): the pieces of every part for one
 * peer and direction go as ONE message, a struct datatype over their
 * absolute addresses (MPI_BOTTOM), in part order; receives are posted
 * first, then sends, then one wait.  The own pieces are copied.  Cost:
 * alpha * peers + beta * bytes, whatever the number of parts; the
 * per-peer lists are allocated per call (O(pieces)). */
typedef struct mpiece {
    int64_t peer;
    char *addr;     /* bytes: their start; a box: its block's start */
    uint64_t bytes;
    const rd_tlists *tl; /* a box of a transfer (NULL: bytes) */
    const int64_t *box, *off, *shape;
} mpiece;

/* Sort pieces by peer, stably (counting sort over 0..size-1):
 * 0, or -1 when out of memory. */
static int sort_by_peer(mpiece **v, int64_t n, int64_t size)
{
    int64_t *at = calloc((size_t)size + 1, sizeof *at);
    mpiece *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    if (!at || !w) {
        free(at);
        free(w);
        return -1;
    }
    for (int64_t k = 0; k < n; k++)
        at[(*v)[k].peer + 1]++;
    for (int64_t q = 0; q < size; q++)
        at[q + 1] += at[q];
    for (int64_t k = 0; k < n; k++)
        w[at[(*v)[k].peer]++] = (*v)[k];
    free(at);
    free(*v);
    *v = w;
    return 0;
}

/* The other peers' pieces of one direction, in part order. */
static mpiece *collect(int nparts, const rd_xpart *parts, int send,
                       int64_t me, int64_t *n)
{
    int64_t total = 0, k = 0;
    for (int j = 0; j < nparts; j++) {
        const rd_tlists *tl = parts[j].tl;
        total += tl ? (send ? tl->nsend : tl->nrecv)
                    : send ? parts[j].nto : parts[j].nfrom;
    }
    mpiece *v = malloc((size_t)(total ? total : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (int j = 0; j < nparts; j++) {
        const rd_tlists *tl = parts[j].tl;
        if (tl) { /* boxes of the S (send) or R block */
            int64_t m = send ? tl->nsend : tl->nrecv;
            const rd_tpiece *l = send ? tl->send : tl->recv;
            char *base = send ? (char *)(uintptr_t)parts[j].send
                              : (char *)parts[j].recv;
            for (int64_t t = 0; t < m; t++)
                if (l[t].peer != me && l[t].bytes)
                    v[k++] = (mpiece){l[t].peer, base, l[t].bytes, tl,
                                      l[t].box, l[t].off,
                                      send ? tl->s_shape : tl->r_shape};
            continue;
        }
        int64_t m = send ? parts[j].nto : parts[j].nfrom;
        const rd_xfer *l = send ? parts[j].to : parts[j].from;
        char *base = send ? (char *)(uintptr_t)parts[j].send
                          : (char *)parts[j].recv;
        for (int64_t t = 0; t < m; t++)
            if (l[t].peer != me && l[t].bytes)
                v[k++] = (mpiece){l[t].peer, base + l[t].off, l[t].bytes,
                                  NULL, NULL, NULL, NULL};
    }
    *n = k;
    return v;
}

/* Post one message per peer of the sorted pieces v[0..n). */
static int post_pieces(redist_mpi_t *x, const mpiece *v, int64_t n, int send,
                       MPI_Request *req, int *nreq)
{
    int rc = MPI_SUCCESS;
    for (int64_t a = 0; a < n && rc == MPI_SUCCESS;) {
        int64_t b = a;
        while (b < n && v[b].peer == v[a].peer)
            b++;
        int cnt = (int)(b - a);
        int *len = malloc((size_t)cnt * sizeof *len);
        MPI_Aint *disp = malloc((size_t)cnt * sizeof *disp);
        MPI_Datatype *ty = malloc((size_t)cnt * sizeof *ty), t = MPI_DATATYPE_NULL;
        if (!len || !disp || !ty)
            rc = MPI_ERR_NO_MEM;
        int made = 0;
        for (int k = 0; k < cnt && rc == MPI_SUCCESS; k++) {
            const mpiece *q = &v[a + k];
            char *at = q->addr;
            len[k] = 1;
            if (q->tl)
                at += rd_mpi_box_offset(q->tl->ndims, q->shape, q->off,
                                        q->tl->elem);
            rc = MPI_Get_address(at, &disp[k]);
            if (rc == MPI_SUCCESS)
                rc = q->tl ? rd_mpi_dt_box(x->limit, q->tl->ndims, q->shape,
                                           q->box, q->tl->elem, &ty[k])
                           : rd_mpi_dt_bytes(x->limit, q->bytes, &ty[k]);
            if (rc == MPI_SUCCESS)
                made = k + 1;
        }
        if (rc == MPI_SUCCESS)
            rc = MPI_Type_create_struct(cnt, len, disp, ty, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Type_commit(&t);
        if (rc == MPI_SUCCESS)
            rc = send ? MPI_Isend(MPI_BOTTOM, 1, t, (int)v[a].peer,
                                  RD_MPI_TAG_XCHG, x->comm, &req[(*nreq)++])
                      : MPI_Irecv(MPI_BOTTOM, 1, t, (int)v[a].peer,
                                  RD_MPI_TAG_XCHG, x->comm, &req[(*nreq)++]);
        rd_mpi_dt_free(&t);
        for (int k = 0; k < made; k++)
            rd_mpi_dt_free(&ty[k]);
        free(len);
        free(disp);
        free(ty);
        a = b;
    }
    return rc;
}

redist_status_t rd_mpi_exchange_multi(redist_backend_t *be, int nparts,
                                      const rd_xpart *parts,
                                      redist_error_t *err)
{
    redist_status_t inj = rd_mpi_injected((int)be->rank, err);
    if (inj)
        return inj;
    redist_mpi_t *x = be->ctx;
    int64_t me = x->rank, ns = 0, nr = 0;
    x->exchanges++;
    /* Order within a message: the sender lists its pieces part by part,
     * each part's list by peer; the receiver does the same with its
     * receive lists, and for every part the pieces between one pair are
     * one box on both sides (backend.h: the sender's bytes for a pair
     * equal the receiver's), so a stable sort by peer alone keeps the
     * two sides in the same order. */
    mpiece *sv = collect(nparts, parts, 1, me, &ns);
    mpiece *rv = collect(nparts, parts, 0, me, &nr);
    MPI_Request *req = malloc((size_t)(2 * x->size + 1) * sizeof *req);
    if (!sv || !rv || !req) {
        free(sv);
        free(rv);
        free(req);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "mpi: out of memory in a combined exchange");
    }
    if (sort_by_peer(&sv, ns, x->size) || sort_by_peer(&rv, nr, x->size)) {
        free(sv);
        free(rv);
        free(req);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "mpi: out of memory in a combined exchange");
    }
    int n = 0;
    const char *call = "MPI_Irecv";
    int rc = post_pieces(x, rv, nr, 0, req, &n);
    if (rc == MPI_SUCCESS) {
        call = "MPI_Isend";
        rc = post_pieces(x, sv, ns, 1, req, &n);
    }
    /* the own pieces, part by part */
    for (int j = 0; j < nparts; j++) {
        const rd_tlists *tl = parts[j].tl;
        if (tl) { /* the k-th own send piece is the k-th own receive */
            int64_t r = 0;
            for (int64_t k = 0; k < tl->nsend; k++) {
                const rd_tpiece *sp = &tl->send[k];
                if (sp->peer != me)
                    continue;
                while (r < tl->nrecv && tl->recv[r].peer != me)
                    r++;
                if (r == tl->nrecv)
                    break;
                rd_kernel_box(parts[j].recv, tl->r_shape, tl->recv[r].off,
                              parts[j].send, tl->s_shape, sp->off, sp->box,
                              tl->ndims, tl->elem);
                r++;
            }
            continue;
        }
        for (int64_t k = 0; k < parts[j].nto; k++)
            if (parts[j].to[k].peer == me && parts[j].to[k].bytes)
                for (int64_t i = 0; i < parts[j].nfrom; i++)
                    if (parts[j].from[i].peer == me)
                        memcpy((char *)parts[j].recv + parts[j].from[i].off,
                               (const char *)parts[j].send + parts[j].to[k].off,
                               (size_t)parts[j].to[k].bytes);
    }
    int wrc = n ? MPI_Waitall(n, req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    free(sv);
    free(rv);
    free(req);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, call);
    return wrc == MPI_SUCCESS ? REDIST_OK : rd_mpi_fail(err, wrc, "MPI_Waitall");
}
