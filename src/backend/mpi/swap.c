/*
 * In-place all_to_all and permute (passes the executor plans with send
 * buffer = receive buffer when max_scratch is below what its buffers need
 * otherwise).  A permute swaps its block with its partner's; an
 * all_to_all runs s rounds, in round t members idx and (t - idx) mod s
 * swapping the chunks they hold for each other (their slots have the
 * same index on both sides).  A swap goes through work space in pieces:
 * copy a piece out, MPI_Sendrecv it, receiving the peer's piece in its
 * place.  ~ alpha rounds + beta L, rounds = ceil(piece / work) per peer.
 * Work: RD_MPI_SWAP_GOOD (1 MiB) wanted, one byte at the least.
 */
#include <string.h>

#include "mpi_impl.h"

/* Swap `bytes` at `mine` with the peer's (the peer does the same), through
 * work space in rounds: copy a piece out, MPI_Sendrecv it, receiving the
 * peer's piece in its place.  Both sides see the same work size. */
redist_status_t rd_mpi_swap_rounds(redist_mpi_t *x, MPI_Comm comm, int to,
                                   int from, char *mine, uint64_t bytes,
                                   const work_ref *w, redist_error_t *err)
{
    int rc = MPI_SUCCESS;
    uint64_t last = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    x->swaps++;
    for (uint64_t off = 0; off < bytes && rc == MPI_SUCCESS; off += w->bytes) {
        uint64_t n = bytes - off < w->bytes ? bytes - off : w->bytes;
        if (n != last) {
            rd_mpi_dt_free(&t);
            rc = rd_mpi_dt_bytes(x->limit, n, &t);
            if (rc != MPI_SUCCESS)
                break;
            last = n;
        }
        memcpy(w->p, mine + off, (size_t)n);
        rc = MPI_Sendrecv(w->p, 1, t, to, RD_MPI_TAG, mine + off, 1, t, from,
                          RD_MPI_TAG, comm, MPI_STATUS_IGNORE);
        x->exchanges++;
    }
    rd_mpi_dt_free(&t);
    return rc == MPI_SUCCESS ? REDIST_OK
                             : rd_mpi_fail(err, rc, "MPI_Sendrecv (in place)");
}

/* In place all-to-all of s contiguous chunks of `bytes`: in round t,
 * members idx and (t - idx) mod s swap the chunks they hold for each
 * other (their slots have the same index on both sides). */
redist_status_t rd_mpi_alltoall_inplace(redist_mpi_t *x, MPI_Comm comm,
                                        int64_t s, int64_t idx, char *buf,
                                        uint64_t bytes, redist_error_t *err)
{
    work_ref w;
    redist_status_t st =
        rd_mpi_work_get(x, bytes < RD_MPI_SWAP_GOOD ? bytes : RD_MPI_SWAP_GOOD,
                        1, bytes, &w, err);
    if (st)
        return st;
    for (int64_t t = 0; t < s && !st; t++) {
        int64_t p = ((t - idx) % s + s) % s;
        if (p != idx)
            st = rd_mpi_swap_rounds(x, comm, (int)p, (int)p,
                                    buf + (uint64_t)p * bytes, bytes, &w, err);
    }
    rd_mpi_work_put(x, &w);
    return st;
}
