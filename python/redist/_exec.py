"""Execution over MPI: redist.execute and redist.Executor (doc/python.md).

An Executor is one rank's redist_mpi_t (include/redist/mpi.h): a duplicate
of the communicator split once per mesh axis.  Creating one is collective
and costs a few communicator splits, so redist.execute keeps the contexts
it creates, keyed by the communicator's handle, the mesh's axis sizes and
the options; a cached one is reused only while MPI_Comm_compare finds the
communicator congruent with its duplicate (same group, same order).  At
most _CACHE_MAX are kept; the oldest is freed (collectively: every rank
makes the same calls in the same order) when another is needed.

Executor.prepare(plan, src, dst) returns a Prepared object (the C API's
redist_mpi_prepared_t): the set-up done once, then run() many times, or
start() / test() / wait() to compute while data moves.
"""

from collections import OrderedDict

from . import _redist
from ._types import Plan, Mesh

_CACHE_MAX = 8
_cache = OrderedDict()

_MPI_PACKED = 1
_MPI_NATIVE_REDUCE = 2


def _flags(packed, native_reduce):
    return (_MPI_PACKED if packed else 0) | (_MPI_NATIVE_REDUCE if native_reduce else 0)


if _redist.HAVE_MPI:
    class Executor(_redist.MPIContext):
        """The MPI backend of this rank for one mesh shape:

            ex = redist.Executor(comm, plan.spec.mesh)   # collective
            ex.execute(plan, src, dst)                   # collective, repeatable
            ex.free()                                    # collective (or `with`)

        comm: an mpi4py communicator whose size is the mesh's device count
        (rank r is mesh device r, row-major).  packed, native_reduce and
        max_scratch are redist_mpi_options_t (REDIST_MPI_PACKED,
        REDIST_MPI_NATIVE_REDUCE, the scratch bound in bytes per rank).

        execute(plan, src, dst, preserve_src=True, report=False): src and
        dst are this rank's blocks, any C-contiguous buffer-protocol arrays
        (NumPy first) of the spec's dtype (or raw uint8 bytes; bf16 as
        uint16), flat or of this rank's block shape
        (spec.src_block_shape(rank); uneven dims: an empty block may be
        None).  preserve_src=False lets the
        executor use src as work space (then src must be writable and its
        contents are unspecified afterwards).  report=True returns the
        execution report as a dict.  Bad arrays raise ValueError on their
        rank and ExecError on the others; a library failure raises ExecError
        on every rank.  The GIL is released while data moves.

        prepare(plan, src, dst, preserve_src=True) -> Prepared: the
        set-up of execute done once (collective; include/redist/mpi.h,
        PREPARED OBJECTS), with src and dst bound until the object is
        freed: pr.run(report=False) moves data only; pr.start() returns at
        once while the object's thread moves data, pr.test() -> bool,
        pr.wait(report=False); pr.free() (collective; or `with`).  The
        context cannot be freed before its prepared objects."""

        def __init__(self, comm, mesh, *, packed=False, native_reduce=False,
                     max_scratch=0):
            mesh = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
            super().__init__(comm, mesh.names, mesh.sizes,
                             _flags(packed, native_reduce), int(max_scratch))
            self.mesh = mesh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.free()
else:
    class Executor:
        """Unavailable: this redist was built without MPI or mpi4py."""

        def __init__(self, *args, **kwargs):
            raise NotImplementedError("redist was built without MPI (or "
                                      "without mpi4py): no execution backend")


def _context(comm, mesh, flags, max_scratch):
    try:
        handle = comm.py2f()
    except (AttributeError, TypeError):
        raise TypeError(f"execute: an mpi4py communicator, not "
                        f"{type(comm).__name__}") from None
    key = (handle, mesh.sizes, flags, max_scratch)
    ctx = _cache.get(key)
    if ctx is not None:
        if ctx.matches(comm):
            _cache.move_to_end(key)
            return ctx
        del _cache[key]
        ctx.free()
    while len(_cache) >= _CACHE_MAX:
        _cache.popitem(last=False)[1].free()
    ctx = Executor(comm, mesh, packed=bool(flags & _MPI_PACKED),
                   native_reduce=bool(flags & _MPI_NATIVE_REDUCE),
                   max_scratch=max_scratch)
    _cache[key] = ctx
    return ctx


def execute(plan, comm, src, dst, *, preserve_src=True, report=False,
            packed=False, native_reduce=False, max_scratch=0):
    """Run `plan` on this rank: collective over `comm` (an mpi4py
    communicator of the mesh's device count).  src / dst: this rank's
    source and destination blocks (see Executor.execute, which this calls
    on a cached context).  Returns None, or the report dict with
    report=True."""
    if not isinstance(plan, Plan):
        raise TypeError(f"execute: a redist.Plan, not {type(plan).__name__}")
    ctx = _context(comm, plan.spec.mesh, _flags(packed, native_reduce),
                   int(max_scratch))
    return ctx.execute(plan, src, dst, preserve_src, report)


def free_contexts():
    """Free the contexts redist.execute keeps (collective over each one's
    communicator: call it on every rank)."""
    while _cache:
        _cache.popitem(last=False)[1].free()


__all__ = ["Executor", "execute", "free_contexts"]
