/*
 * Timing helpers of the prepared-object tests (tests/mpi/test_prepared.c,
 * tests/shmem/test_prepared.c): a monotonic clock, a compute phase that
 * sleeps (an accelerator's work: the cores stay free) or spins (CPU-bound),
 * medians, and the one-axis all_to_all plan they time.  No MPI or
 * OpenSHMEM here.
 */
#ifndef REDIST_TESTS_OVERLAP_H
#define REDIST_TESTS_OVERLAP_H

#include "redist.h"

double ov_now(void);
void ov_sleep(double seconds);
void ov_spin(double seconds);
/* The median of v[0..n) (sorts v). */
double ov_median(double *v, int n);
/* rows x cols f32 on a mesh x=n, dim 0 over x to dim 1 over x (an
 * all_to_all), or to dim 0 over x (`same`: nothing moves); NULL on
 * failure. */
redist_plan_t *ov_a2a_plan(int64_t n, int64_t rows, int64_t cols, int same);
/* (T(run) + T(compute) - T(both)) / min(T(run), T(compute)) */
double ov_hidden(double run, double compute, double both);

#endif
