/*
 * Prepared objects (redist/shmem.h: redist_shmem_prepare .. _free): plan
 * once, run many, and run without blocking.
 *
 * PREPARE (collective) does once what redist_shmem_execute does before
 * data moves: whether the bound src and dst are symmetric on every PE
 * (one reduction), the part of the work area the plan may use, and the
 * executor's program bound to this PE with both agreements and the
 * symmetric scratch (shmem_malloc, collective; touched once, so no run
 * page-faults).  A last agreement folds in the progress thread and the
 * lowest thread level of the PEs.
 *
 * RUN only moves data: the executor's passes (puts into the final
 * places, per-step READY / DONE counters).  No agreement is needed
 * between runs: the counters only grow and each PE expects its own
 * running totals (signal.c), and a PE cannot write into a peer's block
 * of a step before that peer said READY for that step of the same run;
 * a run returns only when nobody reads this PE's input or writes its
 * output any more (the DONE wait of its last step).  The context's
 * scratch registry (scr[], used by the reduction protocols) is swapped
 * to the object's for the run.
 *
 * NON-BLOCKING.  start hands the run to the object's progress thread
 * (exec/async.c), which makes the puts, atomics and waits of every step
 * one after the other; the PE's own thread computes meanwhile.  Open MPI
 * 4.1's oshmem provides SHMEM_THREAD_MULTIPLE (shmem_init_thread,
 * measured: provided 3 on this machine); start needs it on every PE
 * (agreed at prepare) and fails on every PE otherwise.  The context
 * stays occupied until wait: its other calls fail alike on every PE
 * meanwhile (one call at a time per context, as before).  A PE that
 * fails in a started run aborts the others as a blocking run does (the
 * abort word): every PE's wait returns the error.
 *
 * Cost: prepare = one redist_shmem_execute's set-up + 1 reduction; run =
 * the passes; memory: the symmetric scratch held for the object's life
 * and one thread.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../core/internal.h"

struct redist_shmem_prepared {
    redist_shmem_t *c;
    int sym;
    rd_exec_prep xp;
    uint64_t promise, work_cap, bound_free;
    struct {
        void *p;
        size_t bytes;
    } scr[4];
    rd_prepared f; /* the progress thread, level (exec/async.c) */
};

static const rd_prepared_api api = {
    "redist_shmem_run", "redist_shmem_start", "redist_shmem_test",
    "redist_shmem_wait", "a prepared object of this context",
    "SHMEM_THREAD_MULTIPLE on every PE (shmem_init_thread)"};

static void swap_scr(redist_shmem_prepared_t *p)
{
    for (int i = 0; i < 4; i++) {
        void *q = p->c->scr[i].p;
        size_t b = p->c->scr[i].bytes;
        p->c->scr[i].p = p->scr[i].p;
        p->c->scr[i].bytes = p->scr[i].bytes;
        p->scr[i].p = q;
        p->scr[i].bytes = b;
    }
}

static redist_status_t do_run(void *arg, redist_exec_report_t *r,
                              redist_error_t *err)
{
    redist_shmem_prepared_t *p = arg;
    redist_shmem_t *c = p->c;
    double t0 = rd_exec_seconds();
    c->seq = 0;
    c->work_used = 0;
    c->work_cap = p->work_cap;
    c->bound_free = p->bound_free;
    swap_scr(p);
    redist_status_t st = rd_exec_run(&p->xp, r, err);
    swap_scr(p);
    c->work_cap = 0;
    c->bound_free = UINT64_MAX;
    r->scratch_bytes += p->promise;
    r->scratch_high_water += c->work_used;
    r->seconds = rd_exec_seconds() - t0;
    return st;
}

static void release(redist_shmem_prepared_t *p)
{
    swap_scr(p);
    rd_exec_release(&p->xp); /* shmem_free: collective */
    swap_scr(p);
}

redist_status_t redist_shmem_prepare(redist_shmem_t *c,
                                     const redist_plan_t *plan, void *src,
                                     void *dst,
                                     const redist_exec_options_t *opts,
                                     redist_shmem_prepared_t **out,
                                     redist_error_t *err)
{
    if (!c || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL shmem context or output");
    redist_status_t st = REDIST_OK;
    redist_shmem_prepared_t *p = calloc(1, sizeof *p);
    if (!p)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (c->busy)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                      "shmem: a non-blocking run of a prepared object of "
                      "this context is in flight (wait for it first)");
    st = rd_shm_agree_all(c, st, 0, 0, "", NULL, err);
    if (st) {
        free(p);
        return st;
    }
    p->c = c;
    rd_prepared_init(&p->f, &api, &c->busy, SHMEM_THREAD_MULTIPLE, do_run,
                     p);
    p->sym = rd_shm_symmetric(c, plan, src, dst);
    p->promise = rd_shm_work_plan(c, plan, opts, p->sym);
    p->work_cap = c->work_cap;
    p->bound_free = c->bound_free;
    redist_exec_report_t r;
    st = rd_exec_prepare(plan, &c->ep[p->sym], src, dst,
                         opts ? opts->flags : 0, 1, &p->xp, &r, err);
    c->work_cap = 0;
    c->bound_free = UINT64_MAX;
    int level = SHMEM_THREAD_SINGLE;
    long gap = 0;
    if (!st) {
        /* the object's scratch leaves the context's registry */
        for (int i = 0; i < 4; i++)
            if (c->scr[i].p && (c->scr[i].p == p->xp.buf[RD_BUF_SA] ||
                                c->scr[i].p == p->xp.buf[RD_BUF_SB])) {
                p->scr[i].p = c->scr[i].p;
                p->scr[i].bytes = c->scr[i].bytes;
                c->scr[i].p = NULL;
            }
        shmem_query_thread(&level);
        if (level >= SHMEM_THREAD_MULTIPLE && rd_async_spawn(&p->f.async))
            st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                          "cannot create the progress thread");
        st = rd_shm_agree_all(c, st, 0, SHMEM_THREAD_MULTIPLE - level, "",
                              &gap, err);
        if (st)
            release(p);
    }
    if (st) {
        rd_prepared_destroy(&p->f);
        free(p);
        return st;
    }
    p->f.level = SHMEM_THREAD_MULTIPLE - (int)gap;
    *out = p;
    return REDIST_OK;
}

int rd_shm_threads(redist_backend_t *be, int **busy)
{
    redist_shmem_t *c = ctx_of(be);
    int level = SHMEM_THREAD_SINGLE;
    *busy = c->root ? &c->root->busy : &c->busy;
    shmem_query_thread(&level);
    return level >= SHMEM_THREAD_MULTIPLE;
}

redist_status_t redist_shmem_run(redist_shmem_prepared_t *p,
                                 redist_exec_report_t *report,
                                 redist_error_t *err)
{
    return rd_prepared_run(p ? &p->f : NULL, report, err);
}

redist_status_t redist_shmem_start(redist_shmem_prepared_t *p,
                                   redist_error_t *err)
{
    return rd_prepared_start(p ? &p->f : NULL, err);
}

redist_status_t redist_shmem_test(redist_shmem_prepared_t *p, int *done,
                                  redist_error_t *err)
{
    return rd_prepared_test(p ? &p->f : NULL, done, err);
}

redist_status_t redist_shmem_wait(redist_shmem_prepared_t *p,
                                  redist_exec_report_t *report,
                                  redist_error_t *err)
{
    return rd_prepared_wait(p ? &p->f : NULL, report, err);
}

int redist_shmem_prepared_async(const redist_shmem_prepared_t *p)
{
    return p && rd_prepared_async(&p->f);
}

void redist_shmem_prepared_free(redist_shmem_prepared_t *p)
{
    if (!p)
        return;
    rd_prepared_destroy(&p->f);
    release(p);
    free(p);
}
