/*
 * WORK.  Reductions (and in-place swaps) take the larger of the step's
 * spare region (be->spare: dead memory of the executor's buffers) and a
 * work buffer sized before the call (redist_mpi_execute, from the
 * executor's program, execute.c: what the passes' spare regions lack,
 * within the bound: max_scratch, by default max(src, dst) bytes, minus
 * the executor's scratch; at most REDIST_MPI_ROUND_BYTES by default).  It
 * is allocated at the executor's first `agree` (agree.c), so an
 * allocation failure on any rank fails every rank before data moves.
 * Less than s elements: the streamed reductions (reduce_stream.c).
 * Through redist_plan_execute directly, a work buffer is allocated per
 * step when the spare region is too small, and every rank joins one
 * mesh-wide check per reduction (one MPI_Allreduce of an int), needing
 * one or not.
 * Every byte, executor scratch included, is counted here: the
 * high-water mark redist_mpi_execute reports.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

void *rd_mpi_arena_take(redist_mpi_t *x, uint64_t bytes)
{
    uint64_t a = x->arena_align ? x->arena_align : 1;
    uint64_t off = (x->arena_used + a - 1) / a * a;
    if (!x->arena || bytes == 0 || off > x->arena_bytes ||
        bytes > x->arena_bytes - off)
        return NULL;
    x->arena_used = off + bytes;
    return x->arena + off;
}

int rd_mpi_in_arena(const redist_mpi_t *x, const void *p)
{
    const char *c = p;
    return x->arena && c >= x->arena && c < x->arena + x->arena_bytes;
}

void *rd_mpi_scratch_alloc(redist_backend_t *be, size_t bytes)
{
    redist_mpi_t *x = be->ctx;
    void *p = rd_mpi_arena_take(x, bytes);
    int carved = p != NULL;
    if (!p)
        p = rd_mpi_malloc(bytes);
    if (p) {
        x->cur += bytes;
        x->exec_cur += bytes;
        x->allocs += !carved; /* allocations of its own */
        if (x->cur > x->high)
            x->high = x->cur;
    }
    return p;
}

void rd_mpi_scratch_free(redist_backend_t *be, void *p, size_t bytes)
{
    redist_mpi_t *x = be->ctx;
    if (!p)
        return;
    if (!rd_mpi_owns_window(x, p) && /* a prepared object's scratch
                                        window is freed with the object
                                        (shared.c) */
        !rd_mpi_in_arena(x, p))      /* an arena is its owner's */
        free(p);
    x->cur -= bytes;
    x->exec_cur -= bytes;
}

/*
 * Work space for one op, the same size on every rank: the larger of the
 * pass's spare region (dead memory of the executor's buffers, be->spare)
 * and the context's work buffer (sized by redist_mpi_execute).  `good` is
 * what the op's fast algorithm needs, `least` what its slowest one needs
 * (0: none), `want` the most it can use; with uneven dims they depend on
 * the group's count.  Planned (redist_mpi_execute, prepared objects,
 * sets), both regions are sized from the program, which is the same on
 * every rank, for every count a group may have (execute.c, need_of), so
 * every rank sees the same size and nothing is allocated here.  Outside
 * them, when neither region has `good` bytes, a buffer of up to `want`
 * bytes is allocated for this op within the budget, and every rank joins
 * one mesh-wide check per op, lacking or not: either all get what they
 * need or all fail.  Failing that, a region of `least` bytes will do.
 */
redist_status_t rd_mpi_work_get(redist_mpi_t *x, uint64_t good, uint64_t least,
                                uint64_t want, work_ref *w,
                                redist_error_t *err)
{
    memset(w, 0, sizeof *w);
    if (x->be.spare && x->be.spare_bytes) {
        w->p = x->be.spare;
        w->bytes = x->be.spare_bytes;
    }
    if (x->work && x->work_bytes > w->bytes) {
        w->p = x->work;
        w->bytes = x->work_bytes;
    }
    if (x->planned)
        return w->bytes >= least
                   ? REDIST_OK
                   : rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                              "internal error: %llu bytes of work space "
                              "planned, an op needs %llu",
                              (unsigned long long)w->bytes,
                              (unsigned long long)least);
    /* Not planned (redist_plan_execute on the endpoint).  `good` depends
     * on this group's count, which differs between groups of an uneven
     * plan, so whether a rank lacks work space is not the same on every
     * rank: every rank joins the check below, needing a buffer or not
     * (each runs this op of the same pass). */
    redist_status_t st = REDIST_OK;
    uint64_t size = 0;
    char *p = NULL;
    if (w->bytes < good) {
        uint64_t budget = REDIST_MPI_ROUND_BYTES;
        if (x->opts.max_scratch)
            budget = x->opts.max_scratch > x->cur
                         ? x->opts.max_scratch - x->cur
                         : 0;
        if (want < good)
            want = good;
        size = want < budget ? want : budget;
        if (size < good && w->bytes >= least)
            size = 0; /* the slow algorithm in the spare region */
        else if (size < least)
            st = rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                          "max_scratch %llu bytes leaves %llu bytes for "
                          "the work space of a step, which needs %llu "
                          "(%llu spare)",
                          (unsigned long long)x->opts.max_scratch,
                          (unsigned long long)budget,
                          (unsigned long long)least,
                          (unsigned long long)w->bytes);
        else if (size > SIZE_MAX || !(p = rd_mpi_malloc((size_t)size)))
            st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                          "cannot allocate %llu bytes of work space on "
                          "device %d",
                          (unsigned long long)size, x->rank);
    }
    int ok = st == REDIST_OK, all = 0;
    int rc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, x->comm);
    if (rc != MPI_SUCCESS || !all) {
        free(p);
        memset(w, 0, sizeof *w);
        if (st)
            return st;
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "MPI_Allreduce (work space)");
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "another device could not get its work space");
    }
    if (!p)
        return REDIST_OK;
    w->p = p;
    w->bytes = size;
    w->owned = 1;
    x->cur += size;
    x->allocs++;
    if (x->cur > x->high)
        x->high = x->cur;
    return REDIST_OK;
}

void rd_mpi_work_put(redist_mpi_t *x, work_ref *w)
{
    if (w->owned) {
        free(w->p);
        x->cur -= w->bytes;
    }
    memset(w, 0, sizeof *w);
}
