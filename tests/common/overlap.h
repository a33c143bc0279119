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

/* What ov_measure needs from a test: a prepared object's blocking run,
 * start and wait, a barrier of every rank and an element-wise maximum
 * over the ranks (in place), all on `ctx`. */
typedef struct {
    void (*run)(void *ctx);
    void (*start)(void *ctx);
    void (*wait)(void *ctx);
    void (*barrier)(void *ctx);
    void (*max)(double *v, int n, void *ctx);
    void *ctx;
} ov_ops_t;

/* The medians of one measurement, each the slowest rank's. */
typedef struct {
    double run, sleep, both, spin, both_spin; /* seconds */
    double hidden, hidden_cpu;                /* ov_hidden of each pair */
} ov_result_t;

/* Measure the overlap of a started run with a compute phase OV_COMPUTE
 * times as long as a run: `reps` rounds, each timing in turn a blocking
 * run, a sleeping
 * compute phase (an accelerator's work: the cores stay free), start +
 * sleep + wait, a spinning one (CPU-bound) and start + spin + wait, each
 * between barriers.  Every round times the run it compares with, so a
 * machine whose load changes during the test changes both sides alike.
 * Up to `attempts` measurements, stopping at the first whose sleeping
 * phase hides at least `bar` (a loaded machine may stall one; an executor
 * that does not overlap hides nothing in any of them); returns the best.
 * Collective (every rank calls it). */
ov_result_t ov_measure(const ov_ops_t *ops, int reps, int attempts, double bar);
/* The attempts the prepared tests allow: a clean-clone CI on an idle
 * machine once measured 43% hidden in each of 3 (mpi-prepared-np2, 64 MiB,
 * the other runs 90-101%); one attempt takes about half a second. */
#define OV_ATTEMPTS 6
/* The compute phase's length, in blocking runs.  Half again as long as a
 * run: a started run that also pays a fixed delay (waking the progress
 * thread, a core leaving idle) still ends inside it, so what is measured
 * is the share of the run that costs the caller nothing.  With a phase
 * exactly as long as a run, a clean-clone CI once measured 30% hidden in
 * each of 6 attempts (shmem-prepared-np2: run 7.2 ms, start+sleep+wait
 * 12.0 ms), where this machine measures 78-89%.  An executor that does not
 * overlap hides nothing whatever the length. */
#define OV_COMPUTE 1.5

/* Print a result on one line, after `what` (e.g. "2 ranks, all_to_all
 * 64 MiB per rank"). */
void ov_print(const char *what, int reps, const ov_result_t *r);

#endif
