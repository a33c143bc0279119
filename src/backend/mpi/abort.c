/*
 * ABORT.  A rank whose op fails in the middle of a plan (after the
 * executor's agreements: an MPI call failing, a datatype or request
 * array it cannot allocate) cannot tell the others: they wait inside a
 * collective or a receive that MPI cannot interrupt.  Agreeing before
 * every op would cost one allreduce per step on every run; so the rule
 * (include/redist/mpi.h, FAILURE) is: what can fail alone is agreed
 * before data moves (agree.c), and a failure after that point, where no
 * agreement is possible, ends the job with MPI_Abort after one line on
 * stderr naming the rank and the error, never silently and never a hang.
 * Only for the failures one rank can meet alone (REDIST_ERR_BACKEND, an
 * MPI call; REDIST_ERR_NOMEM, an allocation): the others (a work-space
 * bound, a count limit) follow from the agreed plan and options, so
 * every rank meets them at the same op and returns them.
 * REDIST_MPI_NO_ABORT leaves the job alone: the failing rank returns its
 * error and the others' fate is the caller's (e.g. its own MPI error
 * handler or watchdog).
 * Tests make the k-th op of one process fail (rd_mpi_fail_ops) to check
 * that every rank of a run, prepared run, two-mesh or set run ends.
 * Cost: nothing on a run that does not fail.
 */
#include <stdio.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

static void rd_mpi_abort_now(MPI_Comm comm, int rank,
                             redist_status_t status,
                             const redist_error_t *err);

/* Tests: the op that is the `fail_op`-th from now fails (0: none). */
static int fail_op;

void rd_mpi_fail_ops(int k) { fail_op = k > 0 ? k : 0; }

redist_status_t rd_mpi_injected(int rank, redist_error_t *err)
{
    if (fail_op <= 0 || --fail_op > 0)
        return REDIST_OK;
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                    "an op failed on device %d (injected by a test)", rank);
}

void rd_mpi_abort(redist_backend_t *be, redist_status_t status,
                  const redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    if (x && !(x->opts.flags & REDIST_MPI_NO_ABORT))
        rd_mpi_abort_comm(x->comm, x->rank, status, err);
}

void rd_mpi_abort_comm(MPI_Comm comm, int rank, redist_status_t status,
                       const redist_error_t *err)
{
    /* Other failures of an op (a bound, a limit) follow from the plan
     * and the options, which every rank agreed on: every rank meets
     * them at the same op and returns them, nothing waits. */
    if (status != REDIST_ERR_BACKEND && status != REDIST_ERR_NOMEM)
        return;
    rd_mpi_abort_now(comm, rank, status, err);
}

static void rd_mpi_abort_now(MPI_Comm comm, int rank,
                             redist_status_t status,
                             const redist_error_t *err)
{
    char text[REDIST_ERROR_TEXT_LENGTH + REDIST_ERROR_PATH_LENGTH + 32];
    if (err && err->status)
        redist_error_format(err, text, sizeof text);
    else
        rd_strlcpy(text, redist_status_string(status), sizeof text);
    fprintf(stderr,
            "redist: device %d failed in the middle of a plan, where the "
            "other devices cannot learn of it: %s; ending the job "
            "(MPI_Abort; REDIST_MPI_NO_ABORT returns the error instead)\n",
            rank, text);
    fflush(stderr);
    MPI_Abort(comm, 70);
}
