/*
 * Prepared objects (redist/mpi.h: redist_mpi_prepare .. _prepared_free):
 * plan once, run many, and run without blocking.
 *
 * PREPARE (collective) does, once, everything of redist_mpi_execute that
 * is not data movement: the object clones the context (its own
 * duplicates of the context's communicators, so its traffic never mixes
 * with the context's or another object's, and its own requests, work
 * buffer and counters), sizes the work space (execute.c), builds the
 * executor's program bound to this rank and to the caller's src and dst
 * (rd_exec_prepare: the two agreements, plan hash and options included,
 * and the scratch), touches the scratch and the work buffer once (no
 * page fault per run), and builds per pass what does not depend on the
 * data: the datatypes of whole all_gather / all_to_all steps and
 * persistent requests (MPI_Recv_init / MPI_Send_init of the box
 * datatypes) for exchange and permute steps, on the bound buffers.  A
 * last agreement folds in what can fail there and the thread level.
 * Then the direct path is chosen pass by pass where the inputs lie in
 * shared windows (shared.c).
 *
 * RUN only moves data: the executor's passes, with the cached datatypes
 * (MPI_Alltoall / MPI_Allgather) and MPI_Startall + MPI_Waitall for the
 * persistent requests; no agreement, no allocation, no datatype built.
 * Nothing is checked collectively at run time (that would cost the
 * agreement a run avoids): the buffers are bound at prepare, where a
 * NULL, equal or (plan) mismatched argument on one rank fails every
 * rank, so a run has nothing left to get wrong but the call sequence,
 * which is the same on every rank of an SPMD program and checked
 * locally (a run while a non-blocking run is in flight, a wait with
 * nothing started): such a misuse fails on every rank alike.
 *
 * NON-BLOCKING.  start hands the run to a progress thread of the object
 * (created at prepare, asleep on a condition variable until then), which
 * runs exactly the blocking run's passes, one after the other: the next
 * step starts as soon as the previous one ends, without the caller
 * calling test.  test reads an atomic flag; wait sleeps on the condition
 * variable and returns the run's status and report.  The alternative, a
 * state machine of non-blocking collectives (MPI_Ialltoall ...) advanced
 * by test, makes progress only when the caller calls in, cannot express
 * the ordered reductions (a local reduction between two exchanges) or
 * the rings without a thread anyway, and Open MPI 4.1 makes no
 * asynchronous progress on shared memory by itself.  The thread calls
 * MPI while the caller may too: MPI_THREAD_MULTIPLE is required, checked
 * at prepare on every rank (the lowest level wins); without it the
 * object still runs (blocking) and start fails on every rank with an
 * error that says so.  The thread busy-polls inside MPI while a step
 * waits, so a compute phase on the same core competes with it (see
 * doc/mpi.md for the overlap measured).  A failure in a non-blocking run
 * is the blocking run's (MPI's errors) and is returned by wait.
 *
 * Cost: prepare = one redist_mpi_execute's set-up + naxes + 1
 * MPI_Comm_dup + the datatypes and requests + 2 small allreduces; run =
 * the passes (a direct pass: its fences and copies, shared.c); memory:
 * the executor's scratch and work buffer held for
 * the object's life, O(passes + peers) handles, one thread.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

struct redist_mpi_prepared {
    redist_mpi_t x; /* the clone: own communicators, requests, work */
    rd_exec_prep xp;
    int have_xp;
    uint64_t promise;
    rd_prepared f; /* the progress thread, level (exec/async.c) */
};

static const rd_prepared_api api = {
    "redist_mpi_run", "redist_mpi_start", "redist_mpi_test",
    "redist_mpi_wait", "this prepared object",
    "MPI_THREAD_MULTIPLE on every rank (MPI_Init_thread)"};

redist_status_t rd_mpi_start_wait(rd_mpi_cached *cc, int start,
                                  redist_error_t *err)
{
    int rc = start && cc->nreq ? MPI_Startall(cc->nreq, cc->req)
                               : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Startall");
    rc = cc->nreq ? MPI_Waitall(cc->nreq, cc->req, MPI_STATUSES_IGNORE)
                  : MPI_SUCCESS;
    return rc == MPI_SUCCESS ? REDIST_OK : rd_mpi_fail(err, rc, "MPI_Waitall");
}

static void cache_free(redist_mpi_t *x, int mpi_alive)
{
    rd_mpi_direct_free(x);
    for (int k = 0; k < x->ncache && x->cache; k++) {
        rd_mpi_cached *cc = &x->cache[k];
        if (mpi_alive) {
            rd_mpi_dt_free(&cc->stype);
            rd_mpi_dt_free(&cc->rtype);
            for (int i = 0; i < cc->nreq; i++)
                if (cc->req[i] != MPI_REQUEST_NULL)
                    MPI_Request_free(&cc->req[i]);
        }
        free(cc->req);
    }
    free(x->cache);
    x->cache = NULL;
    x->ncache = 0;
}

/* What pass k of the bound program gets built once (see above). */
static int cache_pass(redist_mpi_t *x, const rd_pass *ps,
                      void *const buf[RD_NBUF], rd_mpi_cached *cc)
{
    const rd_xstep *xs = &ps->x;
    char *in = buf[ps->in_buf], *out = buf[ps->out_buf];
    int rc = MPI_SUCCESS;
    cc->stype = cc->rtype = MPI_DATATYPE_NULL;
    if (in == out)
        return MPI_SUCCESS; /* in place: swaps in rounds, nothing to keep */
    if (ps->kind == RD_PASS_FUSED && xs->group.size > 1 &&
        (xs->op == REDIST_OP_ALL_GATHER || xs->op == REDIST_OP_ALL_TO_ALL)) {
        rc = rd_mpi_step_types(x, xs, &cc->stype, &cc->rtype);
        cc->valid = rc == MPI_SUCCESS;
    } else if (ps->kind == RD_PASS_FUSED && xs->op == REDIST_OP_EXCHANGE) {
        rc = rd_mpi_xchg_prepare(x, xs, in, out, cc);
    } else if (ps->kind == RD_PASS_XCHG && xs->op == REDIST_OP_PERMUTE &&
               !(xs->send_to == x->rank && xs->recv_from == x->rank)) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (!(cc->req = rd_mpi_malloc(2 * sizeof *cc->req)))
            return MPI_ERR_NO_MEM;
        rc = rd_mpi_dt_bytes(x->limit, ps->in_bytes, &t);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv_init(out, 1, t, (int)xs->recv_from, RD_MPI_TAG,
                               x->comm, &cc->req[cc->nreq++]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send_init(in, 1, t, (int)xs->send_to, RD_MPI_TAG,
                               x->comm, &cc->req[cc->nreq++]);
        rd_mpi_dt_free(&t);
        cc->valid = 1;
    }
    return rc;
}

/* One run on the calling thread (the caller's, or the progress one). */
static redist_status_t do_run(redist_mpi_prepared_t *p,
                              redist_exec_report_t *r, redist_error_t *err)
{
    redist_mpi_t *x = &p->x;
    x->exchanges = x->streamed = x->swaps = x->rings = x->direct = 0;
    double t0 = rd_exec_seconds();
    redist_status_t st = rd_exec_run(&p->xp, r, err);
    r->seconds = rd_exec_seconds() - t0;
    r->scratch_bytes = p->promise;
    r->scratch_high_water = x->high;
    r->scratch_allocations = x->allocs;
    return st;
}

static redist_status_t run_fn(void *arg, redist_exec_report_t *r,
                              redist_error_t *err)
{
    return do_run(arg, r, err);
}

/* Everything but the thread and the mutex; collective (communicators,
 * the executor's scratch). */
static void release(redist_mpi_prepared_t *p)
{
    int fin = 0;
    MPI_Finalized(&fin);
    redist_mpi_t *x = &p->x;
    cache_free(x, !fin);
    if (p->have_xp)
        rd_exec_release(&p->xp);
    p->have_xp = 0;
    rd_mpi_windows_free(x); /* its scratch windows, after the executor */
    rd_mpi_end(x);
    free(x->reqs);
    x->reqs = NULL;
    if (!fin) {
        for (int a = 0; a < REDIST_MAX_AXES; a++)
            if (x->axis[a] != MPI_COMM_NULL)
                MPI_Comm_free(&x->axis[a]);
        if (x->comm != MPI_COMM_NULL)
            MPI_Comm_free(&x->comm);
    }
}

/* The clone of the context: its own duplicates of the communicators
 * (collective over the context's ranks), requests and counters; the
 * user-defined ops stay the context's. */
static int clone_ctx(redist_mpi_prepared_t *p, const redist_mpi_t *ctx)
{
    redist_mpi_t *x = &p->x;
    *x = *ctx;
    x->have_uops = 0;
    x->work = NULL;
    x->work_bytes = 0;
    x->cache = NULL;
    x->ncache = 0;
    x->node = MPI_COMM_NULL; /* the windows stay the context's */
    x->wins = NULL;
    x->dwin = NULL;
    x->ndwin = 0;
    x->comm = MPI_COMM_NULL;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        x->axis[a] = MPI_COMM_NULL;
    x->be.ops = &x->ops;
    x->be.ctx = x;
    x->be.pass = -1;
    x->reqs = rd_mpi_malloc(2 * (size_t)x->size * sizeof *x->reqs);
    int rc = MPI_Comm_dup(ctx->comm, &x->comm);
    for (int a = 0; a < x->naxes; a++) {
        int r2 = MPI_Comm_dup(ctx->axis[a], &x->axis[a]);
        if (rc == MPI_SUCCESS)
            rc = r2;
    }
    if (rc == MPI_SUCCESS && !x->reqs)
        rc = MPI_ERR_NO_MEM;
    return rc;
}

/* What is built once on the bound program: the work buffer touched, the
 * per-pass cache, the thread; then one more agreement, and the lowest
 * thread level of the ranks.  Collective. */
static redist_status_t build_once(redist_mpi_prepared_t *p,
                                  redist_error_t *err)
{
    redist_mpi_t *x = &p->x;
    redist_status_t st = REDIST_OK;
    int rc, level = MPI_THREAD_SINGLE;
    if (x->work)
        memset(x->work, 0, (size_t)x->work_bytes);
    x->ncache = p->xp.p.npasses;
    x->cache = calloc((size_t)(x->ncache ? x->ncache : 1), sizeof *x->cache);
    if (!x->cache)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int k = 0; !st && k < x->ncache; k++) {
        x->be.pass = k;
        rc = cache_pass(x, &p->xp.p.pass[k], p->xp.buf, &x->cache[k]);
        if (rc != MPI_SUCCESS)
            st = rc == MPI_ERR_NO_MEM
                     ? rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "out of memory")
                     : rd_mpi_fail(err, rc, "building a datatype");
    }
    x->be.pass = -1;
    MPI_Query_thread(&level);
    if (!st && level >= MPI_THREAD_MULTIPLE && rd_async_spawn(&p->f.async))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                      "cannot create the progress thread");
    st = rd_mpi_agree_comm(x->comm, x->rank, st, 0, "", err);
    if (!st) {
        rc = MPI_Allreduce(&level, &p->f.level, 1, MPI_INT, MPI_MIN,
                           x->comm);
        if (rc != MPI_SUCCESS)
            st = rd_mpi_fail(err, rc, "MPI_Allreduce (thread level)");
    }
    return st;
}

redist_status_t redist_mpi_prepare(redist_mpi_t *ctx, const redist_plan_t *plan,
                                   void *src, void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_mpi_prepared_t **out,
                                   redist_error_t *err)
{
    if (!ctx || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL MPI context or output");
    redist_status_t st = REDIST_OK;
    redist_mpi_prepared_t *p =
        rd_mpi_malloc_agreed(ctx->comm, ctx->rank, sizeof *p, &st, err);
    if (!p)
        return st;
    memset(p, 0, sizeof *p);
    rd_prepared_init(&p->f, &api, NULL, MPI_THREAD_MULTIPLE, run_fn, p);
    int rc = clone_ctx(p, ctx);
    if (rc != MPI_SUCCESS)
        st = rc == MPI_ERR_NO_MEM
                 ? rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory")
                 : rd_mpi_fail(err, rc, "MPI_Comm_dup");
    st = rd_mpi_agree_comm(ctx->comm, ctx->rank, st, 0, "", err);
    redist_mpi_t *x = &p->x;
    redist_exec_report_t r;
    if (!st) { /* every rank's src in a window: keep reduce_scatters whole
                  for the direct path (execute.c) */
        int mine = rd_mpi_src_in_window(ctx, src), all = 0;
        rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
        if (rc != MPI_SUCCESS)
            st = rd_mpi_fail(err, rc, "MPI_Allreduce (shared windows)");
        x->keep_rs = all;
        x->prepared = 1;
    }
    if (!st) {
        p->promise = rd_mpi_begin(x, plan, opts);
        st = rd_exec_prepare(plan, &x->be, src, dst, opts ? opts->flags : 0,
                             1, &p->xp, &r, err);
        p->have_xp = !st;
        if (!p->promise)
            p->promise = r.scratch_bytes;
        if (!st)
            st = rd_mpi_direct_scratch(ctx, x, &p->xp, err);
        if (!st)
            st = build_once(p, err);
        if (!st)
            st = rd_mpi_direct_setup(ctx, x, &p->xp, err);
    }
    if (st)
        redist_mpi_prepared_free(p);
    else
        *out = p;
    return st;
}

uint64_t rd_mpi_prepared_promise(const redist_mpi_prepared_t *p)
{
    return p ? p->promise : 0;
}

int rd_mpi_threads(redist_backend_t *be, int **busy)
{
    int level = MPI_THREAD_SINGLE;
    (void)be;
    (void)busy;
    MPI_Query_thread(&level);
    return level >= MPI_THREAD_MULTIPLE;
}

redist_status_t redist_mpi_run(redist_mpi_prepared_t *p,
                               redist_exec_report_t *report,
                               redist_error_t *err)
{
    return rd_prepared_run(p ? &p->f : NULL, report, err);
}

redist_status_t redist_mpi_start(redist_mpi_prepared_t *p, redist_error_t *err)
{
    return rd_prepared_start(p ? &p->f : NULL, err);
}

redist_status_t redist_mpi_test(redist_mpi_prepared_t *p, int *done,
                                redist_error_t *err)
{
    return rd_prepared_test(p ? &p->f : NULL, done, err);
}

redist_status_t redist_mpi_wait(redist_mpi_prepared_t *p,
                                redist_exec_report_t *report,
                                redist_error_t *err)
{
    return rd_prepared_wait(p ? &p->f : NULL, report, err);
}

int redist_mpi_prepared_async(const redist_mpi_prepared_t *p)
{
    return p && rd_prepared_async(&p->f);
}

int redist_mpi_prepared_direct(const redist_mpi_prepared_t *p)
{
    int n = 0;
    for (int k = 0; p && k < p->x.ncache; k++)
        n += p->x.cache[k].direct;
    return n;
}

redist_mpi_stats_t redist_mpi_prepared_stats(const redist_mpi_prepared_t *p)
{
    return redist_mpi_last_stats(p ? &p->x : NULL);
}

void redist_mpi_prepared_free(redist_mpi_prepared_t *p)
{
    if (!p)
        return;
    rd_prepared_destroy(&p->f);
    release(p);
    free(p);
}
