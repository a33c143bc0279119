/*
 * Non-blocking checks of a prepared object (async_check.h).
 */
#include "async_check.h"

#include <stdio.h>
#include <string.h>

#include "overlap.h"
#include "../../src/testing/pattern.h"

/* 1 unless `st` is REDIST_ERR_INVALID on every rank. */
static int not_all_invalid(const ac_env *e, const ac_obj *o,
                           redist_status_t st, const redist_error_t *err,
                           const char *what)
{
    int n = e->sum(1), bad = e->sum(st == REDIST_ERR_INVALID) != n;
    if (bad)
        fprintf(stderr, "rank %d: %s: %s: status %d \"%s\" (want "
                "REDIST_ERR_INVALID on every rank)\n",
                e->rank, o->name, what, (int)st, err->text);
    return bad;
}

int ac_misuse(const ac_env *e, const ac_obj *o)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_exec_report_t r;
    int done = 0, bad = 0;
    bad += not_all_invalid(e, o, o->wait(o->p, &r, &err), &err,
                           "wait with none started");
    bad += not_all_invalid(e, o, o->test(o->p, &done, &err), &err,
                           "test with none started");
    redist_status_t st = o->start(o->p, &err);
    if (st) {
        fprintf(stderr, "rank %d: %s: start: %s\n", e->rank, o->name,
                err.text);
        return bad + 1;
    }
    bad += not_all_invalid(e, o, o->start(o->p, &err), &err,
                           "start while in flight");
    bad += not_all_invalid(e, o, o->run(o->p, &r, &err), &err,
                           "run while in flight");
    st = o->wait(o->p, &r, &err);
    if (st || r.failed_step != -1) {
        fprintf(stderr, "rank %d: %s: wait after the misuse: %s\n",
                e->rank, o->name, err.text);
        bad++;
    }
    bad += not_all_invalid(e, o, o->wait(o->p, &r, &err), &err,
                           "a second wait");
    return bad;
}

redist_status_t ac_started(const ac_env *e, const ac_obj *o)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_exec_report_t r;
    redist_status_t st = o->start(o->p, &err);
    int done = 0;
    while (!st && !done)
        st = o->test(o->p, &done, &err);
    if (!st)
        st = o->wait(o->p, &r, &err);
    if (st)
        fprintf(stderr, "rank %d: %s: a started run: %s\n", e->rank,
                o->name, err.text);
    return e->sum(st != REDIST_OK) ? REDIST_ERR_BACKEND : REDIST_OK;
}

static double timed(const ac_env *e, const ac_obj *o, int started,
                    double compute)
{
    e->barrier();
    double t = ov_now();
    if (started)
        o->start(o->p, NULL);
    else if (compute == 0)
        o->run(o->p, NULL, NULL);
    if (compute > 0)
        ov_sleep(compute);
    if (started)
        o->wait(o->p, NULL, NULL);
    return ov_now() - t;
}

/* The least of REPS timings: a stall of the machine only adds time, so
 * the least is the figure a load disturbs least; a start that ran the
 * whole run before returning makes start+sleep+wait at least the least
 * run plus the least sleep (nothing hidden), whatever the noise. */
enum { REPS = 5 };
static double least(const double *v)
{
    double m = v[0];
    for (int k = 1; k < REPS; k++)
        m = v[k] < m ? v[k] : m;
    return m;
}

int ac_overlap(const ac_env *e, const ac_obj *o)
{
    double t_run[REPS], t_sleep[REPS], t_both[REPS], hidden = 0;
    o->run(o->p, NULL, NULL); /* warm */
    /* a loaded machine may stall one measurement; an object that does
     * not overlap hides nothing in any of them.  The compute phase lasts
     * OV_COMPUTE least runs; then its timings alone and with a started
     * run are interleaved. */
    for (int attempt = 0; attempt < 3 && hidden < 0.5; attempt++) {
        for (int k = 0; k < REPS; k++)
            t_run[k] = timed(e, o, 0, 0);
        double phase = OV_COMPUTE * e->max(least(t_run));
        for (int k = 0; k < REPS; k++) {
            t_sleep[k] = timed(e, o, 0, phase);
            t_both[k] = timed(e, o, 1, phase);
        }
        double v[3] = {e->max(least(t_run)), e->max(least(t_sleep)),
                       e->max(least(t_both))};
        hidden = ov_hidden(v[0], v[1], v[2]);
        if (e->rank == 0)
            printf("overlap, %s (least of %d): run %.2f ms; sleep %.2f "
                   "ms; start+sleep+wait %.2f ms: %.0f%% hidden\n",
                   o->name, REPS, v[0] * 1e3, v[1] * 1e3, v[2] * 1e3,
                   hidden * 100);
    }
    if (hidden < 0.5) {
        if (e->rank == 0)
            fprintf(stderr, "%s: only %.0f%% of the run hidden behind a "
                    "sleeping compute phase\n", o->name, hidden * 100);
        return 1;
    }
    return 0;
}

static redist_status_t set_run(void *p, redist_exec_report_t *r,
                               redist_error_t *err)
{
    return redist_set_run(p, r, err);
}

static redist_status_t set_start(void *p, redist_error_t *err)
{
    return redist_set_start(p, err);
}

static redist_status_t set_test(void *p, int *done, redist_error_t *err)
{
    return redist_set_test(p, done, err);
}

static redist_status_t set_wait(void *p, redist_exec_report_t *r,
                                redist_error_t *err)
{
    return redist_set_wait(p, r, err);
}

static int set_async(const void *p)
{
    return redist_set_prepared_async(p);
}

ac_obj ac_set_obj(redist_set_prepared_t *p, const char *name)
{
    return (ac_obj){name, p, set_run, set_start, set_test, set_wait,
                    set_async};
}

redist_spec_t *ac_a2a_spec(int64_t n, int64_t rows, int64_t cols,
                           const char *name)
{
    char mesh[32], shape[64];
    snprintf(mesh, sizeof mesh, "x=%lld", (long long)n);
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows,
             (long long)cols);
    redist_spec_t *s = NULL;
    redist_spec_from_strings(mesh, shape, "f32", "x|", NULL, "|x", NULL,
                             NULL, name, 0, &s, NULL);
    return s;
}

redist_spec_t *ac_two_spec(int64_t rows, int64_t cols)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows,
             (long long)cols);
    redist_spec_t *s = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    if (redist_spec_from_strings_meshes("x=2@0-1", "y=2@1,0", shape, "f32",
                                        "x|", NULL, "|y", NULL, NULL, "two",
                                        0, &s, &err))
        fprintf(stderr, "two-mesh spec: %s\n", err.text);
    return s;
}

/* 1 unless every target of `c` is exact on this rank. */
static int wrong(const ac_env *e, const ac_case *c, const char *what)
{
    int bad = 0;
    for (int i = 0; i < c->n; i++) {
        rd_mismatch mm;
        if (c->db[i] && rd_pattern_check(c->specs[i], e->rank, c->dst[i],
                                         &mm)) {
            fprintf(stderr, "rank %d: %s: array %d wrong\n", e->rank,
                    what, i);
            bad = 1;
        }
    }
    return bad;
}

/* Before a run: the target poisoned, the source filled again. */
static void spoil(const ac_env *e, const ac_case *c)
{
    for (int i = 0; i < c->n; i++) {
        if (c->db[i])
            memset(c->dst[i], 0xff, c->db[i]);
        if (c->src[i])
            rd_pattern_fill(c->specs[i], e->rank, c->src[i]);
    }
}

int ac_check(const ac_env *e, ac_obj *o, const ac_case *c, int *checks)
{
    redist_error_t err = REDIST_ERROR_INIT;
    int bad = 0;
    spoil(e, c);
    if (c->single) {
        *checks += 4;
        bad += o->async(o->p) != 0;
        bad += not_all_invalid(e, o, o->start(o->p, &err), &err,
                               "start without the thread level");
        bad += o->run(o->p, NULL, &err) != REDIST_OK;
        return bad + wrong(e, c, "a blocking run");
    }
    *checks += 7;
    if (!o->async(o->p)) {
        fprintf(stderr, "rank %d: %s: cannot start\n", e->rank, o->name);
        return 1;
    }
    bad += ac_misuse(e, o);
    spoil(e, c);
    bad += ac_started(e, o) != REDIST_OK;
    bad += wrong(e, c, "a started run");
    if (c->overlap)
        bad += ac_overlap(e, o);
    /* free while in flight: the run completes first */
    c->drop(o->p);
    o->p = NULL;
    spoil(e, c);
    if (c->again(&o->p) || o->start(o->p, &err)) {
        fprintf(stderr, "rank %d: %s: prepare and start again: %s\n",
                e->rank, o->name, err.text);
        bad++;
    }
    c->drop(o->p);
    o->p = NULL;
    return bad + wrong(e, c, "a run freed in flight");
}
