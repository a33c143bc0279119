/* Internal hooks of the OpenSHMEM backend (for its tests). */
#ifndef REDIST_EXEC_SHMEM_INTERNAL_H
#define REDIST_EXEC_SHMEM_INTERNAL_H

#include "redist/shmem.h"

/* Make this PE fail its exchange number `op_index` (0-based, counted from
 * this call on) with REDIST_ERR_BACKEND, after sending the step's READY
 * signals (its peers are then waiting for it).  -1: never. */
void rd_shmem_inject_failure(redist_shmem_t *ctx, int64_t op_index);

/* 1 if the context failed (a plan was aborted). */
int rd_shmem_dead(const redist_shmem_t *ctx);

#endif
