/*
 * `redistplan run` behind its driver (run.c): the run every backend is
 * given, the backends (run_sim.c; run_launched.c with run_mpi.c or
 * run_shmem.c) and the report they share (run_report.c: the same lines in
 * the same order); a spec with "arrays": run_set.c on sim,
 * run_set_launched.c under a launcher.
 */
#ifndef REDIST_CLI_RUN_H
#define REDIST_CLI_RUN_H

#include <stdint.h>

#include "cli.h"
#include "launch.h"
#include "../testing/pattern.h"

/* What run.c hands a backend: the plan (at the shape run), the spec's
 * shape before --shape / --shrink, and the options of the run. */
typedef struct cli_run {
    const redist_plan_t *plan;
    const int64_t *orig;
    int shrink, fused;
    redist_exec_options_t opts;
    uint64_t repeat;
    int64_t corrupt; /* --corrupt-device, -1: none */
} cli_run;

/* run_sim.c: every device in this process, one thread each.  `world`
 * holds r's devices.  The exit code. */
int cli_sim_run(const cli_run *r, redist_sim_t *world);

/* run.c: `spec` at another shape, dtype and reduction (one or two
 * meshes; the types and name kept; an uneven spec's rules are not). */
redist_status_t cli_spec_reshaped(const redist_spec_t *spec,
                                  const int64_t *shape, redist_dtype_t dtype,
                                  redist_reduce_t reduce, redist_spec_t **out,
                                  redist_error_t *err);

/* run_set.c: a spec with "arrays" on the sim backend (doc/arrays.md),
 * run `repeat` times, the sources kept with `preserve`, shrunk with
 * `shrink` (cli_set_shrink); the exit code. */
int cli_run_set(const char *path, const redist_arrays_t *arrays,
                const redist_plan_options_t *opts, uint64_t max_bytes,
                int preserve, int shrink, uint64_t repeat);
/* --shrink for a set: when every device's blocks and scratch of *set
 * (planned from `arrays`) exceed `max_bytes`, the arrays' shapes are
 * shrunk (redist_plan_shrink_shape: the same steps, every type divisible;
 * the largest array first; uneven arrays keep theirs) until they fit,
 * the budget scaled with them (at least the smallest that works), and
 * *set becomes the replayed set (redist_plan_set_replay) of *shrunk, the
 * shrunk arrays (the caller frees both; *shrunk NULL when nothing was
 * shrunk).  Returns CLI_OK, or CLI_BAD_INPUT, said on stderr. */
int cli_set_shrink(const char *path, const redist_arrays_t *arrays,
                   uint64_t max_bytes, redist_plan_set_t **set,
                   redist_arrays_t **shrunk);
/* The line a shrunk set's report prints: how many arrays, the bytes
 * and the budget against `orig`'s. */
void cli_set_shrunk_line(const redist_plan_set_t *set,
                         const redist_arrays_t *orig);
/* The bytes a set takes on nd devices: every block and the scratch. */
uint64_t cli_set_bytes(const redist_plan_set_t *set, int64_t nd);

/* ----------------------------------------------------------- report */

/* What each rank (PE) of a launched run tells rank 0: plain data, the
 * same layout everywhere (sent as bytes). */
typedef struct cli_rank_result {
    redist_exec_report_t best; /* scratch_bytes: this rank's promise */
    int64_t exchanges;
    int32_t bad, src_bad;
    rd_mismatch mm;
} cli_rank_result;

/* The maxima over the ranks: time (and the slowest rank), scratch
 * high-water and promise (uneven dims: each rank promises for its own
 * blocks), received bytes; whether any wrote its source; the first rank
 * whose high-water passed its own promise (-1: none). */
typedef struct cli_run_max {
    double seconds;
    uint64_t high, promise, recv;
    int worst, writes, over;
} cli_run_max;

/* "run NAME: backend BACKEND, N WHAT, DTYPE[SHAPE], reduce OP", the
 * shape line when --shape or --shrink changed it, and the plan line. */
void cli_run_head(const cli_run *r, const char *backend, long long n,
                  const char *what);
/* "  buffers   src S, dst T per UNIT" */
void cli_run_buffers(const redist_spec_t *s, const char *unit);
/* cli_rank_result.bad of a rank whose data is exact but whose scratch
 * high-water passed the promise of its call (a failed run, exit 1). */
#define CLI_OVER_PROMISE 2
/* This rank's figures from its best run, and the check of its blocks
 * (the source too with `preserve`). */
void cli_rank_result_fill(cli_rank_result *r, const redist_exec_report_t *best,
                          const redist_spec_t *s, int64_t rank,
                          const void *src, const void *dst, int preserve);
void cli_run_maxima(const cli_rank_result *all, int n, cli_run_max *m);
/* One line per rank (up to 64 ranks), headed "UNIT  coords ...". */
void cli_run_rank_table(const redist_spec_t *spec, const cli_rank_result *all,
                        int n, const char *unit);
/* "  source    preserved / used as work space / not written" */
void cli_run_source(int preserve, int writes);
/* "  traffic   received R per UNIT (most)" and "  time  ..." of a
 * launched run: the slowest rank's best time and the wall time. */
void cli_run_traffic_time(const cli_run_max *m, const char *unit,
                          double best, double wall, int repeated);
/* The mismatch lines for device `device` (src_bad: the source was
 * modified despite --preserve-src). */
void cli_run_mismatch(const redist_spec_t *s, int64_t device,
                      const rd_mismatch *mm, int src_bad);
/* "  result    exact: N UNITS, E elements checked" */
void cli_run_exact(const redist_spec_t *s, long long n, const char *units);
/* The result lines of a launched run: the first bad rank's mismatch, or
 * exact. */
void cli_run_result(const redist_spec_t *s, const cli_rank_result *all, int n,
                    const char *units);

/* -------------------------------- run_launched.c: one process a device */

/* A backend of one process per device: the transport and the library
 * context behind the driver of run_launched.c.  Every hook runs on every
 * rank; a hook that can fail reports it collectively (cli_launch_failed)
 * and returns non-zero on every rank. */
typedef struct cli_backend {
    const char *name;       /* "mpi": the report's head */
    const char *unit;       /* "rank", "PE" */
    const char *units;      /* "ranks", "PEs" */
    const char *proc;       /* "MPI rank", "PE": "N PEs were started" */
    const char *launcher;   /* "mpirun -np" */
    /* the message without a launcher, given the device count twice */
    const char *no_launcher;
    void *self;
    /* the transport: this rank and the number of ranks; non-zero when it
     * cannot start (after the message) */
    int (*start)(void *self, const cli_run *r, int *rank, int *size);
    /* the context, buffers (*src, *dst; *all: n results on rank 0, or
     * NULL) and what the run needs; 0, or non-zero on every rank */
    int (*setup)(void *self, const cli_run *r, void **src, void **dst,
                 cli_rank_result **all);
    /* rank 0: the backend's line of the report */
    void (*describe)(void *self, const cli_run *r);
    redist_status_t (*execute)(void *self, const cli_run *r, void *src,
                               void *dst, redist_exec_report_t *rep,
                               redist_error_t *err);
    void (*barrier)(void *self);
    double (*max)(void *self, double v); /* over every rank */
    /* after each run: what the report counts (exchanges); may be NULL */
    int64_t (*exchanges)(void *self);
    /* before the first and after the last run; may be NULL */
    void (*runs_begin)(void *self);
    void (*runs_end)(void *self, uint64_t repeat, int rank);
    /* every rank's result into all[] on rank 0; 1 if any rank is bad */
    int (*gather)(void *self, const cli_rank_result *me,
                  cli_rank_result *all);
    /* rank 0: the scratch lines of the report */
    void (*scratch)(void *self, const cli_run_max *m);
    /* free everything, stop the transport; returns rc */
    int (*finish)(void *self, int rc);
} cli_backend;

int cli_launched_run(const cli_run *r, const cli_backend *b);

/* ------------------------- run_set_launched.c: a set, one process a device */

/* What run.c hands the set driver: the arrays, their planning options,
 * the set every rank agreed on (planned without an endpoint, with
 * --preserve-src's execution options), the name reported, and the
 * options of the run. */
typedef struct cli_set_run {
    const redist_arrays_t *arrays;
    const redist_plan_options_t *popts;
    const redist_plan_set_t *set;
    const char *name;
    uint64_t repeat;
    int preserve;
    int shrunk; /* --shrink made `arrays` (endpoints replay `set`) */
    const redist_arrays_t *orig; /* the spec's arrays */
    /* under mpirun with the time objective and no axis links or topology
     * given: the set is planned again with the axes of its mesh that span
     * hosts on the network level (run_set_launched.c) */
    int rehost;
} cli_set_run;

/* A backend of the set driver.  Every hook runs on every rank. */
typedef struct cli_set_backend {
    const char *name, *unit, *units; /* "mpi", "rank", "ranks" */
    const char *launcher;            /* "mpirun -np" */
    void *self;
    /* the transport (after the agreement): this rank, the job's size */
    void (*start)(void *self, int *rank, int *size);
    /* collective: the context over `flat` (every rank) and its endpoint */
    redist_status_t (*create)(void *self, const redist_mesh_t *flat,
                              redist_backend_t **be, redist_error_t *err);
    int endpoint_plans; /* the set is planned again for the endpoint */
    /* v[0..n-1] := their maxima over every rank */
    void (*max)(void *self, uint64_t *v, int n);
    /* collective, may be NULL: cli_mpi_spec_host_links */
    int (*host_links)(const redist_spec_t *s, const redist_mesh_t *mesh,
                      redist_cost_model_t *model, int64_t *nhosts,
                      char *axes, size_t size, char *map, size_t msize);
    /* rank 0, after a failed preparation or run (may be NULL) */
    void (*explain)(void *self, const redist_plan_set_t *set,
                    const redist_error_t *err);
    /* free the context; stop the transport where the backend started it */
    void (*finish)(void *self);
} cli_set_backend;

/* The exit code, the same on every rank (run_set_launched.c). */
int cli_launched_run_set(const cli_set_run *r, const cli_set_backend *b);

/* --------------------------------------------- run_mpi.c, run_shmem.c */

#define CLI_BACKEND_OPTS 4 /* entries of a backend's option table */

#ifdef REDIST_HAVE_MPI
typedef struct cli_mpi_args {
    unsigned flags;       /* REDIST_MPI_* */
    uint64_t max_scratch; /* --max-scratch, 0: default */
} cli_mpi_args;
/* The options of the mpi backend, into t[0..n-1]: n. */
int cli_mpi_options(cli_mpi_args *m, cli_opt *t);
/* Add them to the fingerprint every rank must share (launch.h). */
void cli_mpi_fingerprint(const cli_mpi_args *m, cli_fp *fp);
/* Run on this rank (MPI_Init ... MPI_Finalize inside); the exit code. */
int cli_mpi_run(const cli_mpi_args *m, const cli_run *r);
/* After the agreement, collective: which host each rank runs on
 * (redist_mpi_discover_hosts); the axes of the mesh whose groups span
 * hosts go on REDIST_LINK_NETWORK in `model`, their names (mesh order)
 * into axes[size]; the host of each rank (the first 64) into map[msize].
 * The mesh: `mesh` on ranks 0..n-1 when s is NULL, else s's source mesh
 * on its device list; for a two-mesh s, also the meshes' link
 * (model->mesh_link) on REDIST_LINK_NETWORK when a device off the source
 * mesh runs on another host than a device of it ("the link between the
 * meshes" in axes).  The number of levels set (0 on one host, or without
 * MPI started), or -1 on every rank after rank 0's message. */
int cli_mpi_spec_host_links(const redist_spec_t *s, const redist_mesh_t *mesh,
                            redist_cost_model_t *model, int64_t *nhosts,
                            char *axes, size_t size, char *map, size_t msize);
/* A set of arrays (doc/arrays.md) on MPI_COMM_WORLD, after the
 * agreement; the exit code, the same on every rank. */
int cli_mpi_run_set(const cli_mpi_args *m, const cli_set_run *r);
#endif

#ifdef REDIST_HAVE_SHMEM
typedef struct cli_shmem_args {
    unsigned flags;      /* REDIST_SHMEM_* */
    uint64_t work_bytes; /* --shmem-work, 0: default */
    int private_buffers; /* --shmem-private: src / dst from malloc */
} cli_shmem_args;
int cli_shmem_options(cli_shmem_args *m, cli_opt *t);
/* Size the symmetric heap for `plan` (SMA_SYMMETRIC_SIZE, unless set) and
 * add it and the options to the fingerprint every PE must share. */
void cli_shmem_fingerprint(const cli_shmem_args *m, const redist_plan_t *plan,
                           cli_fp *fp);
/* Run on this PE (shmem_init ... shmem_finalize inside); the exit code. */
int cli_shmem_run(const cli_shmem_args *m, const cli_run *r);
/* As cli_shmem_fingerprint for a set (planned without an endpoint):
 * the symmetric heap sized for its scratch arena. */
void cli_shmem_set_fingerprint(const cli_shmem_args *m,
                               const redist_plan_set_t *set, cli_fp *fp);
/* A set of arrays (doc/arrays.md) on every PE, after the agreement
 * (shmem_init ... shmem_finalize inside); the exit code. */
int cli_shmem_run_set(const cli_shmem_args *m, const cli_set_run *r);
#endif

#endif
