/* Timing helpers of the prepared-object tests (overlap.h). */
#include <stdlib.h>
#include <time.h>

#include "overlap.h"

double ov_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ov_sleep(double sec)
{
    struct timespec ts = {(time_t)sec, (long)((sec - (time_t)sec) * 1e9)};
    nanosleep(&ts, NULL);
}

static volatile double sink;

void ov_spin(double sec)
{
    double t0 = ov_now(), x = 1;
    while (ov_now() - t0 < sec)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ov_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

double ov_hidden(double run, double compute, double both)
{
    return (run + compute - both) / (run < compute ? run : compute);
}

redist_plan_t *ov_a2a_plan(int64_t n, int64_t rows, int64_t cols, int same)
{
    const char *names[] = {"x"};
    int64_t sizes[] = {n}, shape[] = {rows, cols};
    redist_mesh_t *m = NULL;
    redist_spec_t *s = NULL;
    redist_plan_t *plan = NULL;
    redist_type_t from, to;
    if (redist_mesh_create(1, names, sizes, &m, NULL))
        return NULL;
    redist_type_init(&from, 2);
    redist_type_init(&to, 2);
    redist_type_push_axis(&from, 0, 0);
    redist_type_push_axis(&to, same ? 0 : 1, 0);
    if (!redist_spec_create(m, 2, shape, REDIST_F32, &from, &to,
                            REDIST_REDUCE_SUM, "a2a", &s, NULL))
        redist_plan_create(s, NULL, &plan, NULL);
    redist_spec_free(s);
    redist_mesh_free(m);
    return plan;
}
