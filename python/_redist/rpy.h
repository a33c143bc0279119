/*
 * The CPython extension redist._redist (doc/python.md): thin wrappers over
 * the public API of include/redist/ only.  The Pythonic layer (meshes,
 * PartitionSpec-like types, dtypes, the JAX / DTensor converters) lives in
 * python/redist/; this layer takes and returns plain data.
 *   module.c     exceptions (redist.Error and its subclasses), constants
 *   spec_plan.c  Spec (load / JSON), Plan (create, steps, stats, JSON,
 *                table, verify)
 *   set_plan.c   Arrays (many arrays, spec section 10) and PlanSet
 *   mpi.c        MPIContext: redist_mpi_t over an mpi4py communicator,
 *                execute on buffer-protocol arrays (built with MPI only)
 *   prepared.c   Prepared (redist_mpi_prepared_t)
 *   meshes.c     two-mesh execution (redist_mpi_*_meshes)
 *   sets.c       plan sets on a backend's endpoint (redist_plan_set_prepare;
 *                with MPI: on an MPIContext)
 */
#ifndef REDIST_PY_H
#define REDIST_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>

#include "redist.h"

/* redist.Error and its subclasses (module.c). */
extern PyObject *rpy_Error, *rpy_SpecError, *rpy_PlanError, *rpy_ExecError;

/* Raise `cls` for a failed call: the instance carries status (int),
 * status_name, message, file, path, line and column (None where the C
 * error has none) and its str() is redist_error_format's line.  Returns
 * NULL. */
PyObject *rpy_raise(PyObject *cls, redist_status_t st,
                    const redist_error_t *err);

/* Spec and Plan objects: a redist_spec_t * or redist_plan_t *, NULL until
 * loaded / created. */
typedef struct rpy_obj {
    PyObject_HEAD
    void *ptr;
    PyObject *owner; /* non-NULL: ptr belongs to this object (a set's
                        array spec or plan), kept alive by the reference */
} rpy_obj;

extern PyTypeObject rpy_SpecType, rpy_PlanType;

/* The spec / plan of an object, or NULL with TypeError / ValueError. */
const redist_spec_t *rpy_spec_of(PyObject *o);
const redist_plan_t *rpy_plan_of(PyObject *o);

/* A mesh from a tuple of names and a tuple of sizes (redist_mesh_create;
 * SpecError, TypeError or ValueError on failure): 0 or -1. */
int rpy_mesh_from_py(PyObject *names, PyObject *sizes, redist_mesh_t **out);

/* A type as (dims, partial): a tuple per dim of axis names, and a tuple
 * of partial axis names. */
PyObject *rpy_type_to_py(const redist_type_t *t, const redist_mesh_t *mesh);

/* Global device `rank`'s block of side `side` (REDIST_SIDE_FROM / _TO)
 * as global index ranges [lo[i], hi[i]) per dim, whatever the split rule
 * (its blocks come from redist_spec_block_lengths; the block index of a
 * dim is its axes' coordinates in side's mesh, major first).  0; 1 for a
 * device outside side's mesh (two meshes: it holds no block); -1 for a
 * rank or side out of range. */
int rpy_block_box(const redist_spec_t *s, int side, int64_t rank,
                  int64_t lo[], int64_t hi[]);

/* Plan options from Python's arguments, with a cost model (from the
 * defaults, a cost file path (bytes) or JSON text, axis links on `mesh`,
 * the level between two meshes, `mesh_link`, a level name or NULL)
 * whenever the objective is time or one of those is given, as
 * `redistplan plan` does: 0, or -1 with SpecError. */
int rpy_plan_options(int objective, unsigned long long max_peak,
                     unsigned long long max_states, PyObject *cost_path,
                     const char *cost_text, Py_ssize_t cost_len,
                     const char *links, const char *mesh_link,
                     const redist_mesh_t *mesh, redist_plan_options_t *opts,
                     redist_cost_model_t *cost);
/* PyArg "O&" converter: a path (str, bytes, os.PathLike; a new bytes
 * reference) or None (NULL). */
int rpy_fs_or_none(PyObject *o, void *out);

/* This device's source and destination blocks (blocks.c), checked against
 * `spec` (dtype, exactly device `rank`'s bytes, flat or of its block
 * shape, C-contiguous, writable dst and, unless `preserve`, src; no
 * overlap).  An empty block (uneven dims; a device outside a side's
 * mesh) may be None: src / dst NULL.  rank is a global device id. */
typedef struct rpy_blocks {
    Py_buffer sv, dv;
    int have_src, have_dst;
    void *src, *dst;
} rpy_blocks;

/* 0, or -1 with ValueError / TypeError and nothing held. */
int rpy_get_blocks_at(int64_t rank, const redist_spec_t *spec, PyObject *src,
                      PyObject *dst, int preserve, rpy_blocks *b);
void rpy_release_blocks(rpy_blocks *b);

/* An execution report as a dict. */
PyObject *rpy_report_dict(const redist_exec_report_t *r);

/* common.c: what the object types share. */
/* The pointer of an object of `type` (`what` names it), or NULL with
 * TypeError / ValueError. */
void *rpy_unwrap(PyObject *o, PyTypeObject *type, const char *what);
/* __enter__ (self) and __exit__ (self.free(), exceptions propagate). */
PyObject *rpy_self(PyObject *self, PyObject *unused);
PyObject *rpy_exit_free(PyObject *self, PyObject *args);
/* The optional `report` argument of run() / wait(): 0 or -1. */
int rpy_report_arg(PyObject *args, PyObject *kw, int *want_report);
/* A run's outcome: ExecError, the report dict, or None. */
PyObject *rpy_run_outcome(redist_status_t st, const redist_exec_report_t *rep,
                          const redist_error_t *err, int want_report);
/* A table printed into a str: rpy_mem_open, print into m.f, then
 * rpy_mem_close with the print's status (PlanError if it failed). */
typedef struct rpy_mem {
    FILE *f;
    char *buf;
    size_t len;
} rpy_mem;
FILE *rpy_mem_open(rpy_mem *m);
PyObject *rpy_mem_close(rpy_mem *m, redist_status_t st);

/* prep.c: the one Prepared type of every backend. */
typedef struct rpy_prep_ops {
    const char *what; /* names the kind in errors ("two-mesh plans") */
    redist_status_t (*run)(void *p, redist_exec_report_t *rep,
                           redist_error_t *err);
    /* start / test / wait / async: NULL where the backend has none */
    redist_status_t (*start)(void *p, redist_error_t *err);
    redist_status_t (*test)(void *p, int *done, redist_error_t *err);
    redist_status_t (*wait)(void *p, redist_exec_report_t *rep,
                            redist_error_t *err);
    int (*async)(void *p);
    void (*free)(void *p); /* collective; called without the GIL */
    int (*usable)(void);   /* NULL, or 0 with an exception: cannot run */
    /* NULL, or adds keys to a run's report dict: 0 or -1 */
    int (*report_extra)(void *p, PyObject *report);
} rpy_prep_ops;

typedef struct rpy_prep {
    PyObject_HEAD
    void *prep; /* the C object; NULL until bound and once freed */
    const rpy_prep_ops *ops;
    PyObject *owner;  /* its context (a strong reference), or NULL */
    int *owner_count; /* the context's count of live objects, or NULL */
    PyObject *keep;   /* another object it uses (a PlanSet), or NULL */
    Py_ssize_t n;     /* arrays: b[i] held, src[i] / dst[i] their data */
    rpy_blocks *b;
    void **src, **dst;
} rpy_prep;

/* A new, unbound object with room for n arrays (NULL with an exception):
 * fill b[], src[], dst[], then rpy_prep_bind.  Dropping an unbound one
 * releases the arrays only. */
rpy_prep *rpy_prep_new(const rpy_prep_ops *ops, Py_ssize_t n);
/* Bind the C object; take references to owner (counting it in *count)
 * and keep (either may be NULL). */
void rpy_prep_bind(rpy_prep *o, void *prep, PyObject *owner, int *count,
                   PyObject *keep);
int rpy_prep_init(PyObject *m);

int rpy_spec_plan_init(PyObject *m);
/* Arrays (redist_arrays_t) and PlanSet (redist_plan_set_t): set_plan.c */
extern PyTypeObject rpy_ArraysType, rpy_PlanSetType;
/* The set of a PlanSet object, or NULL with TypeError / ValueError. */
const redist_plan_set_t *rpy_plan_set_of(PyObject *o);
int rpy_set_plan_init(PyObject *m);
/* sets.c: a PlanSet prepared on this device's arrays (srcs, dsts: lists
 * in the set's order, None for an empty block) on `be` (device `rank`),
 * holding owner (counted in *count) and the set: a Prepared object, or
 * NULL with the exception (ValueError naming the array for bad arrays)
 * after this device took part in the collective failure.  ops: NULL for
 * the default (run, free, the report's messages and exchanges), or a
 * backend's own built on rpy_set_run and rpy_set_report. */
PyObject *rpy_prep_set(PyObject *set_obj, redist_backend_t *be,
                       int64_t rank, PyObject *srcs, PyObject *dsts,
                       int preserve, PyObject *owner, int *count,
                       const rpy_prep_ops *ops);
redist_status_t rpy_set_run(void *p, redist_exec_report_t *rep,
                            redist_error_t *err);
int rpy_set_report(void *p, PyObject *report);
/* redist_set_start / _test / _wait / _prepared_async for rpy_prep_ops. */
redist_status_t rpy_set_start(void *p, redist_error_t *err);
redist_status_t rpy_set_test(void *p, int *done, redist_error_t *err);
redist_status_t rpy_set_wait(void *p, redist_exec_report_t *rep,
                             redist_error_t *err);
int rpy_set_async(void *p);
#ifdef REDIST_PY_HAVE_MPI
int rpy_mpi_init(PyObject *m);
#endif
#ifdef REDIST_PY_HAVE_SHMEM
int rpy_shmem_init(PyObject *m); /* shmem.c: ShmemContext */
#endif

#endif
