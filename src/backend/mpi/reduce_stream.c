/*
 * Streamed reductions: the slowest algorithms, for work space of less
 * than s elements (down to one).  Each round of n <= RD_REDUCE_BLOCK
 * elements has every member in turn, in member order, send its piece to
 * the others (MPI_Scatter of the s chunks for a reduce-scatter, MPI_Bcast
 * for an all-reduce), received on demand by rd_reduce_n's input callback
 * into n elements of work; the member's own piece is read in place.  The
 * output is written after the round has read every input, so it may
 * coincide with the input (in-place passes).  s times the calls of the
 * ordered algorithms (reduce_ordered.c); the same bytes (scatter) or
 * s / 2 times them (broadcast).  Same results, bit for bit.
 */
#include "mpi_impl.h"
#include "../../exec/kernels.h"

/* Streamed reductions: the slowest algorithms, for work space of less
 * than s elements (down to one).  Each round of n <= RD_REDUCE_BLOCK
 * elements has every member in turn, in member order, send its piece to
 * the others (MPI_Scatter of the s chunks for a reduce-scatter, MPI_Bcast
 * for an all-reduce), received on demand by rd_reduce_n's input callback
 * into n elements of work; the member's own piece is read in place.  The
 * output is written after the round has read every input, so it may
 * coincide with the input (in-place passes).  s times the calls of the
 * ordered algorithms; the same bytes (scatter) or s / 2 times them
 * (broadcast). */
typedef struct stream_in {
    redist_mpi_t *x;
    MPI_Comm comm;
    int64_t idx;
    int bcast;
    const char *send;  /* scatter: this member's row, chunk 0; bcast: its
                          piece */
    const char *mine;  /* this member's own piece */
    char *work;
    MPI_Datatype st, rt;
    int rc;
} stream_in;

static const void *stream_input(void *u, int64_t m)
{
    stream_in *si = u;
    int rc;
    int me = m == si->idx;
    if (si->bcast)
        rc = MPI_Bcast(me ? (void *)si->mine : si->work, 1, si->rt, (int)m,
                       si->comm);
    else if (me)
        rc = MPI_Scatter(si->send, 1, si->st, MPI_IN_PLACE, 0, si->rt,
                         (int)m, si->comm);
    else
        rc = MPI_Scatter(NULL, 0, si->st, si->work, 1, si->rt, (int)m,
                         si->comm);
    si->x->exchanges++;
    if (rc != MPI_SUCCESS && si->rc == MPI_SUCCESS)
        si->rc = rc;
    return me ? si->mine : si->work;
}

/* The rounds of both: [pre][s][chunk] elements reduced into [pre][chunk]
 * (bcast: pre 1, s pieces of the one whole chunk, each member's the
 * same); work holds `per` >= 1 elements. */
static redist_status_t stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                              int64_t idx, int bcast, const char *in,
                              char *out, uint64_t pre, uint64_t chunk,
                              size_t elem, redist_dtype_t dtype,
                              redist_reduce_t op, char *work, uint64_t per,
                              redist_error_t *err)
{
    uint64_t cb = chunk * elem, rowstride = (uint64_t)s * cb;
    stream_in si = {x, comm, idx, bcast, NULL, NULL, work, MPI_DATATYPE_NULL,
                    MPI_DATATYPE_NULL, MPI_SUCCESS};
    x->streamed++;
    uint64_t last = 0;
    if (per > RD_REDUCE_BLOCK)
        per = RD_REDUCE_BLOCK;
    for (uint64_t p = 0; p < pre && si.rc == MPI_SUCCESS; p++)
        for (uint64_t c0 = 0; c0 < chunk && si.rc == MPI_SUCCESS; c0 += per) {
            uint64_t n = chunk - c0 < per ? chunk - c0 : per;
            if (n != last) {
                rd_mpi_dt_free(&si.st);
                rd_mpi_dt_free(&si.rt);
                int rc = bcast ? MPI_SUCCESS
                               : rd_mpi_dt_blocks(x->limit, 1, n * elem,
                                                  n * elem, cb, &si.st);
                if (rc == MPI_SUCCESS)
                    rc = rd_mpi_dt_bytes(x->limit, n * elem, &si.rt);
                if (rc != MPI_SUCCESS) {
                    rd_mpi_dt_free(&si.st);
                    return rd_mpi_fail(err, rc, "building a datatype");
                }
                last = n;
            }
            si.send = in + p * rowstride + c0 * elem;
            si.mine = bcast ? si.send : si.send + (uint64_t)idx * cb;
            rd_reduce_n(dtype, op, out + p * cb + c0 * elem, n, s,
                        stream_input, &si);
        }
    rd_mpi_dt_free(&si.st);
    rd_mpi_dt_free(&si.rt);
    return si.rc == MPI_SUCCESS
               ? REDIST_OK
               : rd_mpi_fail(err, si.rc,
                             bcast ? "MPI_Bcast (all_reduce)"
                                   : "MPI_Scatter (reduce_scatter)");
}

/* Streamed reduce-scatter of [pre][s][chunk] elements into [pre][chunk];
 * work holds `per` >= 1 elements. */
redist_status_t rd_mpi_rs_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t pre, uint64_t chunk, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per, redist_error_t *err)
{
    return stream(x, comm, s, idx, 0, in, out, pre, chunk, elem, dtype, op,
                  work, per, err);
}

/* Streamed all-reduce of `count` elements; work holds `per` >= 1. */
redist_status_t rd_mpi_ar_stream(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                 int64_t idx, const char *in, char *out,
                                 uint64_t count, size_t elem,
                                 redist_dtype_t dtype, redist_reduce_t op,
                                 char *work, uint64_t per, redist_error_t *err)
{
    return stream(x, comm, s, idx, 1, in, out, 1, count, elem, dtype, op,
                  work, per, err);
}
