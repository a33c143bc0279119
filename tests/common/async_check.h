/*
 * The non-blocking checks shared by the two-mesh and set tests of the
 * MPI and OpenSHMEM backends (tests/mpi/test_async_mpi.c,
 * tests/shmem/test_async_shmem.c): one prepared object seen through its
 * run / start / test / wait calls, and the job seen through a barrier
 * and two reductions.  No MPI or OpenSHMEM here.
 */
#ifndef REDIST_TESTS_ASYNC_CHECK_H
#define REDIST_TESTS_ASYNC_CHECK_H

#include "redist.h"

typedef struct ac_obj {
    const char *name;
    void *p;
    redist_status_t (*run)(void *p, redist_exec_report_t *r,
                           redist_error_t *err);
    redist_status_t (*start)(void *p, redist_error_t *err);
    redist_status_t (*test)(void *p, int *done, redist_error_t *err);
    redist_status_t (*wait)(void *p, redist_exec_report_t *r,
                            redist_error_t *err);
    int (*async)(const void *p);
} ac_obj;

typedef struct ac_env {
    int rank;
    void (*barrier)(void);
    double (*max)(double v); /* over the job */
    int (*sum)(int v);       /* over the job */
} ac_env;

/* Wait with none started, test with none started, start, start again,
 * run while in flight, wait: each misuse REDIST_ERR_INVALID on every rank
 * and the started run fine.  Returns this rank's failures. */
int ac_misuse(const ac_env *e, const ac_obj *o);
/* One started run: start, test until done, wait; its status (every
 * rank's outcome folded in: an error where any rank failed). */
redist_status_t ac_started(const ac_env *e, const ac_obj *o);
/* start; sleep OV_COMPUTE runs; wait, against run + sleep: at least
 * half the run hidden, in one of three measurements of the least of 5
 * (interleaved timings).
 * Prints the figures on rank 0; returns this rank's failures. */
int ac_overlap(const ac_env *e, const ac_obj *o);



/* A prepared set as an ac_obj (redist_set_run .. redist_set_wait). */
ac_obj ac_set_obj(redist_set_prepared_t *p, const char *name);
/* One-array set specs: rows x cols f32 on a mesh x=n, dim 0 over x to
 * dim 1 over x (an all_to_all); its name `name`. */
redist_spec_t *ac_a2a_spec(int64_t n, int64_t rows, int64_t cols,
                           const char *name);
/* Two meshes x=2 on devices 0, 1 and y=2 on devices 1, 0: rows x cols
 * f32, dim 0 over x to dim 1 over y. */
redist_spec_t *ac_two_spec(int64_t rows, int64_t cols);

/* One object's checks: with threads, the misuse (ac_misuse), a started
 * run polled with test and the targets exact, the overlap (`overlap`),
 * and a run started then freed (`drop`; `again` prepares a fresh one on
 * the same buffers) with the targets exact after the free.  `single`
 * (no thread level): async 0, start failing on every rank, a blocking
 * run exact.  The sources hold rd_pattern_fill's values; dst[i] holds
 * db[i] bytes of this rank's target of specs[i].  Returns this rank's
 * failures; *checks counts the checks. */
typedef struct ac_case {
    int single, overlap, n;
    const redist_spec_t *const *specs;
    void *const *src; /* filled with the pattern again before each run:
                       * a run may use its source as work space */
    void *const *dst;
    const uint64_t *db;
    redist_status_t (*again)(void **p);
    void (*drop)(void *p);
} ac_case;
int ac_check(const ac_env *e, ac_obj *o, const ac_case *c, int *checks);

#endif
