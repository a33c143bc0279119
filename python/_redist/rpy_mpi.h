/*
 * What the MPI parts of the extension share (mpi.c: MPIContext and its
 * checks of arrays; prepared.c: Prepared).  Built with MPI only.
 */
#ifndef REDIST_PY_MPI_H
#define REDIST_PY_MPI_H

#include "rpy.h"

#include "redist/mpi.h"

typedef struct rpy_mpi {
    PyObject_HEAD
    redist_mpi_t *ctx;
    int nprep; /* live Prepared objects over ctx (free refused meanwhile) */
} rpy_mpi;

/* The MPIContext type (mpi.c). */
extern PyTypeObject *rpy_MPIContextType;

/* The context, or NULL with ValueError once freed. */
redist_mpi_t *rpy_ctx_of(rpy_mpi *self);

/* This rank's source and destination blocks, checked against the plan
 * (dtype, exactly this rank's bytes, flat or of its block shape,
 * C-contiguous, writable dst and, unless `preserve`, src; no overlap).
 * An empty block (uneven dims) may be None: src / dst NULL. */
typedef struct rpy_blocks {
    Py_buffer sv, dv;
    int have_src, have_dst;
    void *src, *dst;
} rpy_blocks;

/* 0, or -1 with ValueError / TypeError and nothing held. */
int rpy_get_blocks(redist_mpi_t *ctx, const redist_plan_t *plan,
                   PyObject *src, PyObject *dst, int preserve, rpy_blocks *b);
/* The same for global device `rank` of `spec` (two meshes: a device
 * outside a side's mesh holds an empty block, None accepted). */
int rpy_get_blocks_at(int64_t rank, const redist_spec_t *spec, PyObject *src,
                      PyObject *dst, int preserve, rpy_blocks *b);
void rpy_release_blocks(rpy_blocks *b);

/* An execution report as a dict. */
PyObject *rpy_report_dict(const redist_exec_report_t *r);

/* The MPI_Comm of an mpi4py communicator (NULL with an exception; mpi4py's
 * C API is imported on first use). */
MPI_Comm *rpy_comm_of(PyObject *comm);

/* MPIContext.prepare and the Prepared type (prepared.c). */
PyObject *rpy_ctx_prepare(PyObject *self, PyObject *args, PyObject *kw);
int rpy_prepared_init(PyObject *m);
/* Two-mesh execution: execute_meshes and MeshesPrepared (meshes.c). */
int rpy_meshes_init(PyObject *m);
/* Plan sets: PlanSet (set_plan.c, built without MPI too) and its
 * execution on an MPIContext, SetPrepared (sets.c). */
int rpy_sets_init(PyObject *m);

#endif
