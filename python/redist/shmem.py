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
for MPI (Executor.execute in redist._exec).  Private arrays go through
the backend's symmetric scratch; arrays from empty() / zeros() (in the
symmetric heap, collective) are put into directly when every PE passes
them to a one-mesh plan (doc/python.md, "Symmetric arrays"):

    src = redist.shmem.empty(shape, dtype)           # collective
    dst = redist.shmem.zeros(shape, dtype)

Open MPI's OpenSHMEM needs
the one-sided osc/rdma component off (`oshrun --mca osc ^rdma`, or
OMPI_MCA_osc=^rdma), else shmem_finalize crashes.  Do not mix with mpi4py
in one process: Open MPI's shmem_finalize also finalizes MPI.
"""

import atexit
import operator

from . import _redist
from ._types import Mesh, Spec, numpy_dtype, plan as _plan
from ._sets import PlanSet
from ._exec import _prepare_set

HAVE_SHMEM = bool(getattr(_redist, "HAVE_SHMEM", 0))

_PACKED = 1
_NO_PTR = 2


def _need():
    if not HAVE_SHMEM:
        raise NotImplementedError("redist was built without OpenSHMEM "
                                  "(libredist_shmem): no redist.shmem")


_alloc = None  # (context over every PE, all-gather plan of one i64 per PE)


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
    runs afterwards (and OpenSHMEM cannot start again).  Symmetric arrays
    still alive (empty, zeros) keep their contents as private memory,
    which is never freed: they stay usable, no longer symmetric."""
    global _alloc
    if HAVE_SHMEM:
        if _alloc is not None:
            ctx, _alloc = _alloc[0], None
            ctx.free()
        _redist.shmem_stop()


def _allocator():
    """The context that symmetric allocations agree through, and its
    all-gather plans by length, made on the first allocation (collective,
    as each allocation is); freed by stop()."""
    global _alloc
    if _alloc is None:
        _alloc = (Executor(Mesh({"pe": _redist.shmem_pes()[1]})), {})
    return _alloc


def _gather(values):
    """All-gather of this PE's int64 values (the same count on every PE):
    a (npes, len) array (collective)."""
    import numpy as np
    ctx, plans = _alloc
    n = len(values)
    if n not in plans:
        npes = _redist.shmem_pes()[1]
        plans[n] = _plan(Spec(Mesh({"pe": npes}), (npes * n,), "i64",
                              ("pe",), ()), objective="bytes")
    every = np.zeros(plans[n].spec.shape[0], np.int64)
    ctx.execute(plans[n], np.array(values, np.int64), every)
    return every.reshape(-1, n)


def collect():
    """Give the memory of released symmetric arrays back to the heap
    (shmem_free), those that every PE has released, in one agreed order.
    Collective; empty() and zeros() do it first.  Call gc.collect()
    before it on every PE where arrays may sit in reference cycles."""
    _need()
    _allocator()
    mine = _redist.shmem_released()
    counts = _gather([len(mine)])[:, 0]
    m = int(counts.max())
    if m == 0:
        return
    rows = _gather(mine + [0] * (m - len(mine)))
    common = set(rows[0].tolist())
    for r in rows[1:]:
        common &= set(r.tolist())
    common.discard(0)
    _redist.shmem_free_released(sorted(common))


def _shape_dtype(shape, dtype):
    """(shape tuple, NumPy dtype, bytes) of empty()'s arguments, or
    TypeError / ValueError."""
    import numpy as np
    if isinstance(dtype, str):
        dt = numpy_dtype(dtype)  # redist names too ("bf16": uint16)
    else:
        dt = np.dtype(dtype)
    if dt.hasobject:
        raise TypeError(f"dtype {dt}: object arrays cannot live in the "
                        "symmetric heap")
    try:
        shape = (operator.index(shape),)
    except TypeError:
        shape = tuple(operator.index(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"shape {shape}: negative dimension")
    n = 1
    for d in shape:
        n *= d
    return shape, dt, n * dt.itemsize


def empty(shape, dtype="f64"):
    """A NumPy array of `shape` and `dtype` (a NumPy dtype, or a spec-file
    name: "bf16" gives uint16) in the OpenSHMEM symmetric heap,
    uninitialised.  Collective over all PEs, all or none: each PE may ask
    for its own shape (the blocks of uneven dims; every PE then reserves
    the largest), a bad shape or dtype raises on its PE and ExecError on
    the others, and a full heap anywhere MemoryError on every PE.  Such
    arrays passed as src and dst by every PE make Executor runs put
    straight into them (no copy through scratch).  When the last
    reference to the array (or a view of it) goes, its memory is
    released; the next allocation (or collect()) gives it back with
    shmem_free once every PE has released it.  Arrays alive at stop()
    stay usable as private memory."""
    _need()
    ctx = _allocator()[0]
    import numpy as np
    try:
        shape, dt, nbytes = _shape_dtype(shape, dtype)
        bad = None
    except (TypeError, ValueError) as e:
        nbytes, bad = -1, e
    collect()
    every = _gather([nbytes])[:, 0]
    failed = [p for p in range(len(every)) if every[p] < 0]
    if bad is not None:
        raise bad
    if failed:
        _redist.shmem_fail(failed[0], "bad shape or dtype for "
                           "redist.shmem.empty / zeros")
    buf = ctx._malloc_all(max(int(every.max()), 1), nbytes)
    count = nbytes // dt.itemsize if dt.itemsize else 0
    return np.frombuffer(buf, dt, count).reshape(shape)


def zeros(shape, dtype="f64"):
    """empty(shape, dtype), filled with zeros (collective, as empty)."""
    a = empty(shape, dtype)
    a[...] = 0
    return a


def is_symmetric(a):
    """Whether `a` (any buffer-protocol object) is one contiguous buffer
    in the symmetric heap on this PE (local; False when OpenSHMEM is not
    running, and for a strided view).  Runs use the symmetric path only when every PE passes
    symmetric src and dst at the same addresses (agreed in each call)."""
    _need()
    return bool(_redist.shmem_is_symmetric(a))


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


__all__ = ["HAVE_SHMEM", "start", "stop", "Executor", "empty", "zeros",
           "is_symmetric", "collect"]
