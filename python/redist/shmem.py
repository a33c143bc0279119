"""OpenSHMEM execution (include/redist/shmem.h) under oshrun
(doc/python.md, "OpenSHMEM"):

    import redist, redist.shmem
    pe, npes = redist.shmem.start()                  # shmem_init, once
    with redist.shmem.Executor(spec.mesh) as ex:     # collective
        ex.execute(plan, src, dst)                   # collective, repeatable
        with ex.prepare(plan, src, dst) as pr:       # run / start-test-wait
            pr.run()
    redist.shmem.stop()                              # shmem_finalize (also at exit)

PE r is mesh device r; the job has exactly the mesh's device count of
PEs.  The arrays are any C-contiguous buffer-protocol memory, checked as
for MPI (Executor.execute in redist._exec): the backend receives into its
own symmetric scratch and copies into dst.  Open MPI's OpenSHMEM needs
the one-sided osc/rdma component off (`oshrun --mca osc ^rdma`, or
OMPI_MCA_osc=^rdma), else shmem_finalize crashes.  Do not mix with mpi4py
in one process: Open MPI's shmem_finalize also finalizes MPI.
"""

import atexit

from . import _redist
from ._types import Mesh

HAVE_SHMEM = bool(getattr(_redist, "HAVE_SHMEM", 0))

_PACKED = 1
_NO_PTR = 2


def _need():
    if not HAVE_SHMEM:
        raise NotImplementedError("redist was built without OpenSHMEM "
                                  "(libredist_shmem): no redist.shmem")


def start(thread_multiple=True):
    """shmem_init_thread (SHMEM_THREAD_MULTIPLE, for Prepared.start) once
    per process; returns (pe, npes).  shmem_finalize runs at exit unless
    stop() ran first."""
    _need()
    r = _redist.shmem_start(bool(thread_multiple))
    atexit.register(stop)
    return r


def stop():
    """shmem_finalize (collective), once; no context or prepared object
    runs afterwards (and OpenSHMEM cannot start again)."""
    if HAVE_SHMEM:
        _redist.shmem_stop()


if HAVE_SHMEM:
    class Executor(_redist.ShmemContext):
        """The OpenSHMEM backend of this PE for one mesh shape (collective
        to create; start() first):

            ex = redist.shmem.Executor(mesh, packed=False, no_ptr=False)
            ex.execute(plan, src, dst, preserve_src=True, report=False)
            pr = ex.prepare(plan, src, dst, preserve_src=True)
            pr.run(); pr.start(); pr.test(); pr.wait(); pr.free()
            ex.free()                                  # or `with`

        As redist.Executor (MPI), on all PEs: bad arrays raise ValueError
        on their PE and ExecError on the others; the GIL is released while
        data moves.  packed and no_ptr are REDIST_SHMEM_PACKED and
        REDIST_SHMEM_NO_PTR."""

        def __init__(self, mesh, *, packed=False, no_ptr=False):
            mesh = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
            super().__init__(mesh.names, mesh.sizes,
                             (_PACKED if packed else 0) | (_NO_PTR if no_ptr else 0))
            self.mesh = mesh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.free()
else:
    class Executor:
        """Unavailable: this redist was built without OpenSHMEM."""

        def __init__(self, *args, **kwargs):
            _need()


__all__ = ["HAVE_SHMEM", "start", "stop", "Executor"]
