/*
 * all_gather: one MPI_Allgather whose receive datatype puts member k's
 * block at slot k along the gathered dim of the output ([pre][s][chunk]
 * with extent chunk), so there is no unpack pass.  ~ alpha log s +
 * beta (s-1) L.  Scratch 0.
 *
 * Groups whose size is not a power of two and blocks of at least
 * RD_MPI_RING_BYTES (64 KiB) run as a ring of s - 1 MPI_Sendrecv with the
 * same datatypes, straight into the final places.  ~ alpha (s-1) +
 * beta (s-1) L.  Scratch 0.  Why: there Open MPI 4.1's MPI_Allgather
 * picks Bruck's algorithm, which allocates a buffer for the whole result
 * on every rank but the first, so every call pays fresh pages (at 64 MiB
 * on 3 ranks: 10 923 page faults and 150 to 170 ms on rank 1, against
 * 10 to 14 ms by ring).
 *
 * In place (the executor's in-place passes): the member's block moves to
 * its slot, then MPI_Allgather with MPI_IN_PLACE.
 */
#include <string.h>

#include "mpi_impl.h"

/* All-gather: member k's block (`block` bytes) to slot k of recv, slot k
 * starting `slot` bytes after slot k - 1, described by rtype; `send`
 * (stype) is this member's block, or NULL when it is already in its slot
 * (in place).  One exchange. */
int rd_mpi_allgather(redist_mpi_t *x, MPI_Comm comm, int64_t s, int64_t idx,
                     const void *send, MPI_Datatype stype, char *recv,
                     MPI_Datatype rtype, uint64_t slot, uint64_t block)
{
    x->exchanges++;
    if (block < x->ring_bytes || (s & (s - 1)) == 0)
        return MPI_Allgather(send ? send : MPI_IN_PLACE, send ? 1 : 0,
                             send ? stype : MPI_DATATYPE_NULL, recv, 1, rtype,
                             comm);
    int rc = MPI_SUCCESS;
    x->rings++;
    if (send)
        rc = MPI_Sendrecv(send, 1, stype, (int)idx, RD_MPI_TAG,
                          recv + (uint64_t)idx * slot, 1, rtype, (int)idx,
                          RD_MPI_TAG, comm, MPI_STATUS_IGNORE);
    int next = (int)((idx + 1) % s), prev = (int)((idx + s - 1) % s);
    for (int64_t t = 0; t + 1 < s && rc == MPI_SUCCESS; t++) {
        /* pass on the block received last (mine first), receive the
         * one before it */
        uint64_t ks = (uint64_t)((idx - t + s) % s);
        uint64_t kr = (uint64_t)((idx - t - 1 + s) % s);
        rc = MPI_Sendrecv(recv + ks * slot, 1, rtype, next, RD_MPI_TAG,
                          recv + kr * slot, 1, rtype, prev, RD_MPI_TAG, comm,
                          MPI_STATUS_IGNORE);
    }
    return rc;
}

/* In place: member `idx`'s `bytes` at the start of buf, the gathered
 * [s][bytes] over all of it: move this member's block to its slot, then
 * an in-place MPI_Allgather. */
redist_status_t rd_mpi_gather_inplace(redist_mpi_t *x, MPI_Comm comm,
                                      int64_t s, int64_t idx, char *buf,
                                      uint64_t bytes, redist_error_t *err)
{
    if (idx)
        memmove(buf + (uint64_t)idx * bytes, buf, (size_t)bytes);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = rd_mpi_dt_bytes(x->limit, bytes, &t);
    if (rc == MPI_SUCCESS)
        rc = rd_mpi_allgather(x, comm, s, idx, NULL, MPI_DATATYPE_NULL, buf, t,
                              bytes, bytes);
    rd_mpi_dt_free(&t);
    return rc == MPI_SUCCESS
               ? REDIST_OK
               : rd_mpi_fail(err, rc, "MPI_Allgather (in place)");
}
