/*
 * AGREE.  Every check a rank can fail on its own is folded into one
 * agreement before any data moves: one MPI_Allreduce(MIN) of (this rank
 * if it failed, the plan hash, its complement) over the whole
 * communicator; on a failure the first failed rank broadcasts its
 * message, on differing hashes rank 0's hash is broadcast to name the
 * first rank that differs.  The hash covers the plan, the execution
 * flags and this backend's options.  Cost: alpha log P for the 3-word
 * allreduce, one broadcast more on a failure; no memory.
 * Also the backend's allocator, which tests make fail on one rank
 * (rd_mpi_fail_allocs) to check that the failure reaches every rank.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

/* Tests: the next `fail_allocs` allocations of this process fail
 * (rd_mpi_fail_allocs), to check that a failure on one rank is an error
 * on every rank. */
static int fail_allocs;

void rd_mpi_fail_allocs(int n) { fail_allocs = n > 0 ? n : 0; }

void *rd_mpi_malloc(size_t bytes)
{
    if (fail_allocs > 0) {
        fail_allocs--;
        return NULL;
    }
    return malloc(bytes);
}

/* `bytes` bytes on every rank or on none: the local status `*st` and the
 * allocation agreed over comm (collective); NULL with *st the agreed
 * error, which names the rank that failed first. */
void *rd_mpi_malloc_agreed(MPI_Comm comm, int rank, size_t bytes,
                           redist_status_t *st, redist_error_t *err)
{
    void *p = *st ? NULL : rd_mpi_malloc(bytes);
    if (!*st && !p)
        *st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    *st = rd_mpi_agree_comm(comm, rank, *st, 0, "", err);
    if (*st) {
        free(p);
        return NULL;
    }
    return p;
}

/* Every rank of comm learns whether all passed OK with the same hash. */
redist_status_t rd_mpi_agree_comm(MPI_Comm comm, int rank,
                                  redist_status_t local, uint64_t hash,
                                  const char *differ, redist_error_t *err)
{
    uint64_t v[3] = {local ? (uint64_t)rank : UINT64_MAX, hash, ~hash}, r[3];
    int rc = MPI_Allreduce(v, r, 3, MPI_UINT64_T, MPI_MIN, comm);
    if (rc != MPI_SUCCESS)
        return local ? local : rd_mpi_fail(err, rc, "MPI_Allreduce (agree)");
    if (r[0] != UINT64_MAX) {
        struct {
            int32_t status;
            char text[REDIST_ERROR_TEXT_LENGTH + REDIST_ERROR_PATH_LENGTH];
        } msg;
        int root = (int)r[0];
        memset(&msg, 0, sizeof msg);
        if (rank == root) {
            msg.status = local;
            if (err && err->status)
                redist_error_format(err, msg.text, sizeof msg.text);
            else
                rd_strlcpy(msg.text, redist_status_string(local),
                           sizeof msg.text);
        }
        rc = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, root, comm);
        if (local)
            return local;
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "MPI_Bcast (agree)");
        return rd_error(err, (redist_status_t)msg.status, NULL, NULL,
                        "device %d failed: %s", root, msg.text);
    }
    if (r[1] != ~r[2]) {
        uint64_t h0 = hash, me, first = 0;
        rc = MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, comm);
        me = hash != h0 ? (uint64_t)rank : UINT64_MAX;
        if (rc == MPI_SUCCESS)
            rc = MPI_Allreduce(&me, &first, 1, MPI_UINT64_T, MPI_MIN, comm);
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "MPI_Allreduce (agree)");
        return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                        "%s (device %llu differs from device 0)", differ,
                        (unsigned long long)first);
    }
    return REDIST_OK;
}

static uint64_t config_hash(const redist_mpi_t *x)
{
    uint64_t h = RD_FNV_BASIS;
    h = rd_fnv_u64(h, x->opts.flags);
    h = rd_fnv_u64(h, x->opts.max_scratch);
    h = rd_fnv_u64(h, x->limit);
    return h;
}

redist_status_t rd_mpi_agree(redist_backend_t *be, redist_status_t local,
                             uint64_t plan_hash, redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    if (x->in_call && x->pre_status) {
        if (!local) {
            local = x->pre_status;
            if (err && !err->status)
                *err = x->pre_err;
        }
        x->pre_status = REDIST_OK;
    }
    if (!local && x->in_call && x->work_want && !x->work) {
        /* from the arena (not ours to free: borrowed), else our own */
        x->work = rd_mpi_arena_take(x, x->work_want);
        x->work_borrowed = x->work != NULL;
        if (!x->work && x->work_want <= SIZE_MAX)
            x->work = rd_mpi_malloc((size_t)x->work_want);
        if (!x->work || x->work_want > SIZE_MAX)
            local = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                             "cannot allocate %llu bytes of reduction work "
                             "space on device %d",
                             (unsigned long long)x->work_want, x->rank);
        else {
            x->work_bytes = x->work_want;
            x->cur += x->work_bytes;
            x->allocs += !x->work_borrowed;
            if (x->cur > x->high)
                x->high = x->cur;
        }
    }
    uint64_t h = rd_fnv_u64(plan_hash, config_hash(x));
    return rd_mpi_agree_comm(
        x->comm, x->rank, local, h,
        "the devices were given different plans or options", err);
}
