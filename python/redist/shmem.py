"""OpenSHMEM execution (include/redist/shmem.h) under oshrun
(doc/python.md, "OpenSHMEM"):

    import redist, redist.shmem
    pe, npes = redist.shmem.start()                  # shmem_init, once
    with redist.shmem.Executor(spec.mesh) as ex:     # collective
        ex.execute(plan, src, dst)                   # collective, repeatable
        with ex.prepare(plan, src, dst) as pr:       # run / start-test-wait
            pr.run()
        ps = redist.plan_set(arrays, executor=ex)    # a set, for this endpoint
        ex.execute(ps, srcs, dsts)                   # dicts by name
    redist.shmem.stop()                              # shmem_finalize (also at exit)

PE r is mesh device r; the job has exactly the mesh's device count of
PEs.  Plans of two-mesh specs and PlanSets run too (PE d is global
device d; a PE outside a mesh passes None for the block it does not
hold); their prepared objects run only (no start / test / wait in the C
API).  The arrays are any C-contiguous buffer-protocol memory, checked as
for MPI (Executor.execute in redist._exec): the backend receives into its
own symmetric scratch and copies into dst.  Open MPI's OpenSHMEM needs
the one-sided osc/rdma component off (`oshrun --mca osc ^rdma`, or
OMPI_MCA_osc=^rdma), else shmem_finalize crashes.  Do not mix with mpi4py
in one process: Open MPI's shmem_finalize also finalizes MPI.
"""

import atexit

from . import _redist
from ._types import Mesh
from ._sets import PlanSet
from ._exec import _prepare_set

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
        REDIST_SHMEM_NO_PTR.

        plan may also be a Plan of a two-mesh spec (the job has
        spec.num_devices PEs, PE d is device d, the Executor's mesh any
        mesh of that many devices; a PE outside a side's mesh passes None
        for that block: redist_shmem_execute / redist_shmem_prepare_meshes)
        or a PlanSet planned for this endpoint
        (redist.plan_set(arrays, executor=ex); others raise ValueError on
        every PE) (src / dst: dicts of this PE's blocks by array name,
        or lists in the set's order, a missing name or None an empty
        block; the Executor's mesh is the set's mesh, or for two meshes
        any mesh of the union's device count; preserve_src defaults to the
        set's: redist_plan_set_prepare on redist_shmem_backend).  Their
        prepared objects have run() and free() only: start() / test() /
        wait() raise TypeError (the C API has no non-blocking runs for
        them)."""

        def __init__(self, mesh, *, packed=False, no_ptr=False):
            mesh = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
            super().__init__(mesh.names, mesh.sizes,
                             (_PACKED if packed else 0) | (_NO_PTR if no_ptr else 0))
            self.mesh = mesh

        def execute(self, plan, src, dst, preserve_src=None, report=False):
            if isinstance(plan, PlanSet):
                with self.prepare(plan, src, dst, preserve_src) as pr:
                    return pr.run(report)
            return super().execute(plan, src, dst,
                                   True if preserve_src is None else bool(preserve_src),
                                   report)

        def prepare(self, plan, src, dst, preserve_src=None):
            if isinstance(plan, PlanSet):
                if plan.endpoint != "shmem":
                    # the same set on every PE: all refuse it alike
                    raise ValueError("the set was not planned for an "
                                     "OpenSHMEM endpoint: plan it with "
                                     "redist.plan_set(arrays, executor=ex)")
                return _prepare_set(plan, self.prepare_set, src, dst,
                                    preserve_src)
            return super().prepare(plan, src, dst,
                                   True if preserve_src is None else bool(preserve_src))

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
