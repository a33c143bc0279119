/* Internal hooks of the OpenSHMEM backend (for its tests). */
#ifndef REDIST_EXEC_SHMEM_INTERNAL_H
#define REDIST_EXEC_SHMEM_INTERNAL_H

#include <stdint.h>

#include "redist/shmem.h"

/* The protocols of a reduction over more than one PE (shmem.c). */
enum {
    RED_PULL = REDIST_SHMEM_RED_PULL,
    RED_GET = REDIST_SHMEM_RED_GET,
    RED_COPY_PULL = REDIST_SHMEM_RED_COPY_PULL,
    RED_COPY_GET = REDIST_SHMEM_RED_COPY_GET,
    RED_PUSH = REDIST_SHMEM_RED_PUSH,
    RED_PUSH_WORK = REDIST_SHMEM_RED_PUSH_WORK,
    RED_SERIAL = REDIST_SHMEM_RED_SERIAL,
    RED_NMODES = REDIST_SHMEM_RED_COUNT
};

/* Use protocol `mode` for every reduction that can run with it (the
 * executor's memory bound aside); -1: the backend's choice. */
void rd_shmem_prefer(redist_shmem_t *ctx, int mode);

/* Reductions over more than one PE run so far, per protocol (this
 * PE): redist_shmem_stats as an array, for the tests. */
void rd_shmem_mode_counts(const redist_shmem_t *ctx,
                          uint64_t out[RED_NMODES]);

/* Make this PE fail its exchange number `op_index` (0-based, counted from
 * this call on) with REDIST_ERR_BACKEND, after sending the step's READY
 * signals (its peers are then waiting for it).  -1: never. */
void rd_shmem_inject_failure(redist_shmem_t *ctx, int64_t op_index);

/* Stream two-mesh transfers through windows of at most `bytes` (at
 * least one element; 0: the layout's window, and the streamed layout
 * only where it keeps more PEs within the bound), preferring the
 * streamed layout on ties, on every PE alike. */
void rd_shmem_stream_cap(uint64_t bytes);

/* 1 if the context failed (a plan was aborted). */
int rd_shmem_dead(const redist_shmem_t *ctx);

#endif
