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

/* This rank's blocks, checked against the plan (rpy_get_blocks_at, rpy.h,
 * with the context's rank).  0, or -1 with ValueError / TypeError and
 * nothing held. */
int rpy_get_blocks(redist_mpi_t *ctx, const redist_plan_t *plan,
                   PyObject *src, PyObject *dst, int preserve, rpy_blocks *b);

/* The MPI_Comm of an mpi4py communicator (NULL with an exception; mpi4py's
 * C API is imported on first use). */
MPI_Comm *rpy_comm_of(PyObject *comm);

/* MPIContext.prepare (prepared.c): a Prepared object (prep.c). */
PyObject *rpy_ctx_prepare(PyObject *self, PyObject *args, PyObject *kw);
/* Two-mesh execution: execute_meshes and prepare_meshes (meshes.c). */
int rpy_meshes_init(PyObject *m);
/* Plan sets: PlanSet (set_plan.c, built without MPI too) and its
 * execution on an MPIContext, prepare_set (sets.c). */
int rpy_sets_init(PyObject *m);

#endif
