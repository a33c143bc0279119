/*
 * Many arrays on the sim backend: redist_exec_sim_run_set runs a plan
 * set (src/exec/set_run.c) on every simulated device, one thread each.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "../../core/internal.h"
#include "../../exec/backend.h"

typedef struct set_job {
    const redist_plan_set_t *set;
    void *const *const *src, *const *const *dst;
} set_job;

static redist_status_t run_device(void *arg, redist_backend_t *be,
                                  redist_exec_report_t *r,
                                  redist_error_t *err)
{
    const set_job *j = arg;
    int n = redist_plan_set_num_arrays(j->set);
    void **s = malloc((size_t)n * sizeof *s), **d = malloc((size_t)n * sizeof *d);
    redist_status_t st;
    if (!s || !d) {
        st = be->ops->agree(be, rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                         "out of memory"),
                            0, err);
    } else {
        for (int i = 0; i < n; i++) {
            s[i] = j->src[i][be->rank];
            d[i] = j->dst[i][be->rank];
        }
        st = redist_plan_set_execute(j->set, be, s, d, r, err);
    }
    free(s);
    free(d);
    return st;
}

redist_status_t redist_exec_sim_run_set(const redist_plan_set_t *set,
                                        void *const *const src[],
                                        void *const *const dst[],
                                        unsigned sim_flags,
                                        redist_exec_report_t *report,
                                        redist_exec_report_t *per_device,
                                        redist_error_t *err)
{
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    if (!set || !src || !dst)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL set or buffer array");
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++)
        if (!src[i] || !dst[i])
            return rd_error(err, REDIST_ERR_INVALID, NULL,
                            src[i] ? "dst" : "src",
                            "NULL device list for array %d", i);
    int64_t n = redist_spec_num_devices(
        redist_plan_spec(redist_plan_set_plan(set, 0)));
    redist_sim_t *w = NULL;
    redist_status_t st = redist_sim_create(n, sim_flags, &w, err);
    if (st)
        return st;
    set_job j = {set, src, dst};
    st = rd_sim_run_each(w, run_device, &j, report, per_device, err);
    redist_sim_free(w);
    return st;
}
