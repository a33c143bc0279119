/* Internal hooks of the MPI backend (for its tests). */
#ifndef REDIST_EXEC_MPI_INTERNAL_H
#define REDIST_EXEC_MPI_INTERNAL_H

#include "redist/mpi.h"

/* Largest count passed to one MPI call or datatype constructor (INT_MAX
 * by default).  Tests lower it, on every rank alike, so that the nested
 * datatypes and chunked calls that carry counts beyond INT_MAX run on
 * small arrays.  Part of the options every rank must agree on. */
void rd_mpi_set_count_limit(redist_mpi_t *ctx, uint64_t limit);

/* All-gathers of blocks of at least `bytes` on groups whose size is not
 * a power of two run as a ring of MPI_Sendrecv (default
 * RD_MPI_RING_BYTES, 64 KiB); tests lower it to run the ring on small
 * arrays.  Every rank alike. */
void rd_mpi_set_ring_bytes(redist_mpi_t *ctx, uint64_t bytes);

/* The datatypes the backend builds, for datatype-level tests (committed;
 * the caller frees them).  `limit` as above (0: INT_MAX). */
int rd_mpi_type_bytes(uint64_t limit, uint64_t n, MPI_Datatype *out);
/* `rows` blocks of `row_bytes` bytes, `stride` bytes apart, with extent
 * `extent`. */
int rd_mpi_type_blocks(uint64_t limit, uint64_t rows, uint64_t row_bytes,
                       uint64_t stride, uint64_t extent, MPI_Datatype *out);

/* The host map of redist_mpi_discover_hosts from its gathered table
 * (tab[2r]: the lowest rank sharing memory with rank r, tab[2r+1]: the
 * hash of r's processor name) into out[size], for tests of the verdicts
 * no real MPI gives (two hosts with one name, one host with two names). */
redist_status_t rd_mpi_number_hosts(const uint64_t *tab, int size,
                                    int64_t *out, redist_error_t *err);

/* Before the context's first redist_mpi_alloc: treat each run of `ranks`
 * consecutive ranks as one node (MPI_Comm_split instead of
 * MPI_Comm_split_type SHARED; the memory is still shared within each),
 * so that one machine plays several nodes; 0: the real nodes.  Every
 * rank alike. */
void rd_mpi_set_node_ranks(redist_mpi_t *ctx, int ranks);

/* Make the next n allocations of the backend in this process fail
 * (context, executor scratch, reduction work space); 0: none. */
void rd_mpi_fail_allocs(int n);

/* Make the k-th data-moving op of the backend in this process from now
 * (1: the next) fail with REDIST_ERR_BACKEND before it communicates, as
 * an MPI call failing on one rank in the middle of a plan; 0: none. */
void rd_mpi_fail_ops(int k);

/* The fields of redist_mpi_last_stats one by one, for the tests.
 * MPI exchange calls made by the last redist_mpi_execute on this rank. */
int64_t rd_mpi_last_exchanges(const redist_mpi_t *ctx);
/* Reductions of the last execution that streamed (work space below s
 * elements), in-place swaps (permute, all_to_all) it ran. */
int64_t rd_mpi_last_streamed(const redist_mpi_t *ctx);
int64_t rd_mpi_last_swaps(const redist_mpi_t *ctx);
/* All-gathers of the last execution that ran as a ring. */
int64_t rd_mpi_last_rings(const redist_mpi_t *ctx);

#endif
