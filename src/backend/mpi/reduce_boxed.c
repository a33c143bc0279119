/*
 * An uneven reduce_scatter run whole (rd_xstep.boxed, RD_BUILD_UNEVEN_RS:
 * chosen by execute.c, built by exec/program.c): no buffer sized by the
 * largest device, the sim's uneven_rs over MPI (doc/uneven.md, doc/mpi.md).
 *
 * ALGORITHM.  The s members of the group hold one box before the step;
 * the boxes after it (member m's at offset mbox_m in that box, shape B_m:
 * rd_xstep.mbox, bound by exec/bind.c) partition it.  Member j's output
 * is, element by element, in_0 op in_1 op ... op in_{s-1} over the same
 * element of the members' blocks, in member order (rd_reduce_n: the sim's
 * sum, bit for bit).  The members first agree on the work space W (the
 * least over the group: one MPI_Allreduce of an integer, made by every
 * member on every entry path, since every device runs the same pass; a
 * prepared object's at its first run only, kept in its pass cache).
 * Each box is cut into chunks of at most c elements that are contiguous
 * in it: the outermost dim d whose inner product u_d (the elements of one
 * index along d) is at most c, and runs of up to c / u_d indices along d
 * under each index of the dims before it (exec/boxed.c), the same cut on
 * every member (it knows every B_m).  Round r (r < the most chunks any
 * box has) sends chunk r of each other member's box straight from the
 * sender's block (one derived datatype each, nothing packed), copies this
 * member's own part of its chunk into its output, and reduces:
 *   - all at once (W holds s - 1 chunks of c >= min(the largest box,
 *     RD_REDUCE_BLOCK) elements): one receive per other member into its
 *     slot of W, then rd_reduce_n over the s inputs (its own: the output,
 *     which rd_reduce_n reads block by block before it writes it);
 *   - streamed (less W, down to one element): c <= RD_REDUCE_BLOCK, each
 *     other member's chunk received, in member order, into the one slot
 *     when rd_reduce_n asks for it (it reads each input once, in order).
 * The sends of a round are posted before its receives, so no member waits
 * on another's receive.
 *
 * IN PLACE (out == in: rd_xstep.boxed_inplace, a two-mesh phase ending in
 * its source buffer, meshes.c): every member's box after the step is
 * empty or the first elements of its block (exec/bind.c,
 * rd_boxed_prefix), packed where they lie, so this member's own part is
 * already in its output, and the parts it sends lie past it.
 *
 * COST.  Received: (s - 1) |B_j| elements, sent: |box before| - |B_j|
 * (the sim's uneven_rs figures), against 2 (s - 1) / s of the packed
 * boxes plus their packing for the packed form (program.c).  Messages:
 * (s - 1) per round, ceil(|B| / c) rounds for a contiguous box, one
 * allreduce.  Memory: W, at least one element, at most (s - 1) times the
 * largest box; the output is written in place, no executor buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/boxed.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* The chunk size (elements) and mode for W bytes of work: *all set when
 * every other member's chunk has its own slot. */
static uint64_t chunk_for(const rd_xstep *xs, uint64_t W, int *all)
{
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    uint64_t big = rd_box_most(xs);
    uint64_t want = big < RD_REDUCE_BLOCK ? big : RD_REDUCE_BLOCK;
    uint64_t c_all = s > 1 ? W / ((s - 1) * elem) : big;
    *all = c_all >= want && c_all > 0;
    if (*all)
        return c_all < big ? c_all : (big ? big : 1);
    uint64_t c = W / elem;
    return c < RD_REDUCE_BLOCK ? (c ? c : 1) : RD_REDUCE_BLOCK;
}

uint64_t rd_mpi_boxed_rounds(const rd_xstep *xs, uint64_t W)
{
    int all;
    return rd_box_rounds(xs, chunk_for(xs, W, &all));
}

/* rd_reduce_n's inputs: this member's own from the output, the others
 * from their slots (all at once) or received on demand (streamed). */
typedef struct boxed_in {
    char *out, *work;
    int64_t me;
    uint64_t bytes; /* of this chunk */
    int all;
    MPI_Comm comm;
    MPI_Datatype rt;
    int rc;
} boxed_in;

static const void *boxed_input(void *u, int64_t m)
{
    boxed_in *bi = u;
    if (m == bi->me)
        return bi->out;
    if (bi->all) /* slot of member m (slots skip this member) */
        return bi->work + (uint64_t)(m < bi->me ? m : m - 1) * bi->bytes;
    int rc = MPI_Recv(bi->work, 1, bi->rt, (int)m, RD_MPI_TAG, bi->comm,
                      MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && bi->rc == MPI_SUCCESS)
        bi->rc = rc;
    return bi->work;
}

redist_status_t rd_mpi_rs_boxed(redist_mpi_t *x, MPI_Comm comm,
                                const rd_xstep *xs, const char *in, char *out,
                                redist_error_t *err)
{
    int nd = xs->ndims;
    int64_t s = xs->group.size, me = xs->group.index;
    size_t elem = xs->elem;
    const int64_t *B = rd_box_mbox_shape(xs, me);
    work_ref w = {0};
    redist_status_t st = REDIST_OK;
    if (s == 1) { /* the box before is the box after */
        if (rd_box_elems(nd, B))
            rd_kernel_box(out, B, (int64_t[REDIST_MAX_DIMS]){0}, in,
                          xs->in_shape, rd_box_mbox_off(xs, me), B, nd, elem);
        x->exchanges++;
        return REDIST_OK;
    }
    uint64_t big = rd_box_most(xs);
    st = rd_mpi_work_get(x, (uint64_t)(s - 1) * elem, elem,
                         (uint64_t)(s - 1) * big * elem, &w, err);
    if (st)
        return st;
    /* the same W on every member: each cuts the boxes alike.  A prepared
     * object agrees at its first run and keeps it (its work is sized
     * once, so every member's is the same at each run) */
    int k = x->be.pass;
    rd_mpi_cached *cc = x->cache && k >= 0 && k < x->ncache ? &x->cache[k]
                                                           : NULL;
    unsigned long long mine = w.bytes, W = cc ? cc->boxed_w : 0;
    int rc = MPI_SUCCESS;
    if (!W) {
        rc = MPI_Allreduce(&mine, &W, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                           comm);
        if (rc != MPI_SUCCESS) {
            rd_mpi_work_put(x, &w);
            return rd_mpi_fail(err, rc, "MPI_Allreduce (work space)");
        }
        if (cc)
            cc->boxed_w = W;
    }
    int all;
    uint64_t c = chunk_for(xs, W, &all);
    uint64_t R = rd_mpi_boxed_rounds(xs, W);
    rd_box_cut mk = rd_box_cut_of(nd, B, c);
    /* no allocation per run for groups of up to 32 members */
    MPI_Request stack_req[64];
    MPI_Request *req = s <= 32 ? stack_req
                               : malloc(sizeof *req * 2 * (size_t)s);
    if (!req) {
        rd_mpi_work_put(x, &w);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    const char *call = "";
    for (uint64_t r = 0; r < R && rc == MPI_SUCCESS; r++) {
        int nreq = 0;
        int64_t off[REDIST_MAX_DIMS], sh[REDIST_MAX_DIMS];
        int64_t at[REDIST_MAX_DIMS];
        /* chunk r of each other member's box, from this member's block */
        for (int64_t m = 0; m < s && rc == MPI_SUCCESS; m++) {
            const int64_t *Bm = rd_box_mbox_shape(xs, m);
            const int64_t *om = rd_box_mbox_off(xs, m);
            rd_box_cut k = rd_box_cut_of(nd, Bm, c);
            if (m == me || r >= k.n)
                continue;
            rd_box_chunk(nd, Bm, &k, r, off, sh);
            for (int i = 0; i < nd; i++)
                at[i] = om[i] + off[i];
            MPI_Datatype t;
            rc = rd_mpi_dt_box(x->limit, nd, xs->in_shape, sh, elem, &t);
            if (rc != MPI_SUCCESS) {
                call = "building a datatype";
                break;
            }
            rc = MPI_Isend(in + rd_mpi_box_offset(nd, xs->in_shape, at, elem),
                           1, t, (int)m, RD_MPI_TAG, comm, &req[nreq]);
            rd_mpi_dt_free(&t);
            if (rc != MPI_SUCCESS)
                call = "MPI_Isend";
            else
                nreq++;
        }
        if (rc == MPI_SUCCESS && r < mk.n) {
            uint64_t n = rd_box_chunk(nd, B, &mk, r, off, sh);
            uint64_t bytes = n * elem;
            char *o = out + rd_mpi_box_offset(nd, B, off, elem);
            const int64_t *om = rd_box_mbox_off(xs, me);
            int64_t zero[REDIST_MAX_DIMS] = {0};
            for (int i = 0; i < nd; i++)
                at[i] = om[i] + off[i];
            /* this member's own part, in the output (its input me);
             * in place (boxed_inplace) it is there already: its box is
             * the first elements of its block, packed alike */
            if (out != in)
                rd_kernel_box(o, sh, zero, in, xs->in_shape, at, sh, nd,
                              elem);
            boxed_in bi = {o, w.p, me, bytes, all, comm, MPI_DATATYPE_NULL,
                           MPI_SUCCESS};
            rc = rd_mpi_dt_bytes(x->limit, bytes, &bi.rt);
            call = "building a datatype";
            int nrecv = 0;
            for (int64_t m = 0; all && m < s && rc == MPI_SUCCESS; m++) {
                if (m == me)
                    continue;
                rc = MPI_Irecv(w.p + (uint64_t)nrecv * bytes, 1, bi.rt,
                               (int)m, RD_MPI_TAG, comm, &req[s + nrecv]);
                call = "MPI_Irecv";
                nrecv += rc == MPI_SUCCESS;
            }
            if (rc == MPI_SUCCESS && nrecv) {
                rc = MPI_Waitall(nrecv, req + s, MPI_STATUSES_IGNORE);
                call = "MPI_Waitall";
            }
            if (rc == MPI_SUCCESS) {
                rd_reduce_n(xs->dtype, xs->reduce, o, n, s, boxed_input, &bi);
                rc = bi.rc;
                call = "MPI_Recv";
            }
            rd_mpi_dt_free(&bi.rt);
        }
        if (nreq) {
            int rc2 = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
            if (rc == MPI_SUCCESS && rc2 != MPI_SUCCESS) {
                rc = rc2;
                call = "MPI_Waitall";
            }
        }
        x->exchanges++;
    }
    if (req != stack_req)
        free(req);
    rd_mpi_work_put(x, &w);
    return rc == MPI_SUCCESS ? REDIST_OK : rd_mpi_fail(err, rc, call);
}
