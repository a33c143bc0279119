/*
 * A progress thread for prepared runs (rd_async, exec_internal.h), shared
 * by the backends' non-blocking calls: the thread sleeps on a condition
 * variable until `start` posts a run, runs it (the backend's function:
 * every pass of the program, one after the other, so the next step starts
 * as soon as the previous one ends without the caller calling in), and
 * posts the status, error and report; `test` reads an atomic flag,
 * `wait` sleeps until the run is over.  Cost: one thread per object,
 * asleep between runs; two lock / signal pairs per run.
 */
#include <string.h>

#include "exec_internal.h"
#include "../core/internal.h"

enum { AS_IDLE, AS_POSTED, AS_RUNNING, AS_DONE, AS_QUIT };

static void *progress(void *arg)
{
    rd_async *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->state != AS_POSTED && a->state != AS_QUIT)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->state == AS_QUIT)
            break;
        a->state = AS_RUNNING;
        pthread_mutex_unlock(&a->mu);
        redist_error_t e;
        redist_exec_report_t r;
        redist_error_clear(&e);
        memset(&r, 0, sizeof r);
        redist_status_t st = a->run(a->arg, &r, &e);
        pthread_mutex_lock(&a->mu);
        a->st = st;
        a->err = e;
        a->rep = r;
        a->state = AS_DONE;
        atomic_store(&a->done, 1);
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

void rd_async_init(rd_async *a, rd_async_fn run, void *arg)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->run = run;
    a->arg = arg;
    atomic_store(&a->done, 0);
}

int rd_async_spawn(rd_async *a)
{
    if (a->thread)
        return 0;
    if (pthread_create(&a->th, NULL, progress, a))
        return -1;
    a->thread = 1;
    return 0;
}

int rd_async_busy(rd_async *a)
{
    pthread_mutex_lock(&a->mu);
    int s = a->state;
    pthread_mutex_unlock(&a->mu);
    return s != AS_IDLE;
}

redist_status_t rd_async_start(rd_async *a, const char *who,
                               redist_error_t *err)
{
    pthread_mutex_lock(&a->mu);
    if (a->state != AS_IDLE || !a->thread) {
        int idle = a->state == AS_IDLE;
        pthread_mutex_unlock(&a->mu);
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        idle ? "%s: no progress thread"
                             : "%s: a non-blocking run of this prepared "
                               "object is in flight (wait for it first)",
                        who);
    }
    atomic_store(&a->done, 0);
    a->state = AS_POSTED;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return REDIST_OK;
}

redist_status_t rd_async_test(rd_async *a, int *done, const char *who,
                              redist_error_t *err)
{
    if (!a || !done)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL prepared object or flag");
    if (!rd_async_busy(a))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "%s: no run started", who);
    *done = atomic_load(&a->done);
    return REDIST_OK;
}

redist_status_t rd_async_wait(rd_async *a, redist_exec_report_t *r,
                              const char *who, redist_error_t *err)
{
    pthread_mutex_lock(&a->mu);
    if (a->state == AS_IDLE) {
        pthread_mutex_unlock(&a->mu);
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "%s: no run started", who);
    }
    while (a->state != AS_DONE)
        pthread_cond_wait(&a->cv, &a->mu);
    redist_status_t st = a->st;
    *r = a->rep;
    if (st && err)
        *err = a->err;
    a->state = AS_IDLE;
    pthread_mutex_unlock(&a->mu);
    return st;
}

void rd_async_destroy(rd_async *a)
{
    if (a->thread) {
        pthread_mutex_lock(&a->mu);
        while (a->state == AS_POSTED || a->state == AS_RUNNING)
            pthread_cond_wait(&a->cv, &a->mu); /* a run in flight first */
        a->state = AS_QUIT;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->th, NULL);
        a->thread = 0;
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
}

void rd_report_empty(redist_exec_report_t *r)
{
    if (r) {
        memset(r, 0, sizeof *r);
        r->failed_step = -1;
    }
}

static redist_status_t check(const rd_prepared *f,
                             redist_exec_report_t *report,
                             redist_error_t *err)
{
    rd_report_empty(report);
    return f ? REDIST_OK
             : rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL prepared object");
}

void rd_prepared_init(rd_prepared *f, const rd_prepared_api *api, int *busy,
                      int need_level, rd_async_fn run, void *arg)
{
    rd_async_init(&f->async, run, arg);
    f->api = api;
    f->busy = busy;
    f->level = 0;
    f->need_level = need_level;
}

redist_status_t rd_prepared_run(rd_prepared *f, redist_exec_report_t *report,
                                redist_error_t *err)
{
    redist_status_t st = check(f, report, err);
    if (st)
        return st;
    if (f->busy ? *f->busy : rd_async_busy(&f->async))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "%s: a non-blocking run of %s is in flight (%s "
                        "first)",
                        f->api->run, f->api->whose, f->api->wait);
    redist_exec_report_t r;
    memset(&r, 0, sizeof r);
    st = f->async.run(f->async.arg, &r, err);
    if (report)
        *report = r;
    return st;
}

redist_status_t rd_prepared_start(rd_prepared *f, redist_error_t *err)
{
    redist_status_t st = check(f, NULL, err);
    if (st)
        return st;
    if (!rd_prepared_async(f))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "%s needs %s; the lowest level provided here is %d: "
                        "use %s",
                        f->api->start, f->api->need, f->level, f->api->run);
    if (f->busy && *f->busy)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "%s: a non-blocking run of %s is in flight",
                        f->api->start, f->api->whose);
    st = rd_async_start(&f->async, f->api->start, err);
    if (!st && f->busy)
        *f->busy = 1;
    return st;
}

redist_status_t rd_prepared_test(rd_prepared *f, int *done,
                                 redist_error_t *err)
{
    return rd_async_test(f ? &f->async : NULL, done, f ? f->api->test : "",
                         err);
}

redist_status_t rd_prepared_wait(rd_prepared *f, redist_exec_report_t *report,
                                 redist_error_t *err)
{
    redist_status_t st = check(f, report, err);
    if (st)
        return st;
    redist_exec_report_t r;
    int was = rd_async_busy(&f->async);
    st = rd_async_wait(&f->async, &r, f->api->wait, err);
    if (was) {
        if (f->busy)
            *f->busy = 0;
        if (report)
            *report = r;
    }
    return st;
}

int rd_prepared_async(const rd_prepared *f)
{
    return f->level >= f->need_level;
}

void rd_prepared_destroy(rd_prepared *f)
{
    if (rd_async_busy(&f->async)) {
        redist_exec_report_t r;
        rd_async_wait(&f->async, &r, f->api->wait, NULL);
        if (f->busy)
            *f->busy = 0;
    }
    rd_async_destroy(&f->async);
}
