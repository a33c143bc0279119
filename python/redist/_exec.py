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

execute() and prepare() also take a plan of a two-mesh spec (the
communicator spans the union of the meshes: redist_mpi_execute_meshes,
redist_mpi_prepare_meshes) and a PlanSet (many arrays, given as dicts by
name or lists in the set's order; redist_plan_set_prepare on a cached
context: on the set's mesh, or over a one-axis mesh of the union's devices
for two meshes).
"""

from collections import OrderedDict

from . import _redist
from ._types import Plan, Mesh
from ._sets import PlanSet

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
        _drop(ctx)
    while len(_cache) >= _CACHE_MAX:
        _drop(_cache.popitem(last=False)[1])
    ctx = Executor(comm, mesh, packed=bool(flags & _MPI_PACKED),
                   native_reduce=bool(flags & _MPI_NATIVE_REDUCE),
                   max_scratch=max_scratch)
    _cache[key] = ctx
    return ctx


def _need_mpi():
    if not _redist.HAVE_MPI:
        raise NotImplementedError("redist was built without MPI (or without "
                                  "mpi4py): no execution backend")


def _drop(ctx):
    """Free a context leaving the cache; one that still has prepared
    objects (prepare() below) is freed with the last of them."""
    try:
        ctx.free()
    except ValueError:
        pass


def _set_context(ps, comm, packed, native_reduce, max_scratch):
    """The context of a set: on its mesh (one-mesh arrays run their
    collectives on the mesh's axes), or over the union's devices (two-mesh
    arrays make their own endpoints on each mesh).  Either way comm has
    exactly the set's device count (redist_plan_set_prepare's rule)."""
    s0 = ps.arrays[0]
    mesh = Mesh([("rank", s0.num_devices)]) if s0.two_mesh else s0.mesh
    return _context(comm, mesh, _flags(packed, native_reduce), int(max_scratch))


def _set_blocks(ps, blocks, what):
    """A list of blocks in the set's order from a dict by name or a
    sequence; (list, None) or (None, the error)."""
    if hasattr(blocks, "keys"):
        extra = [k for k in blocks.keys() if k not in ps.names]
        if extra:
            return None, ValueError(f"{what}: no array {extra[0]!r} in the set "
                                    f"(arrays: {', '.join(ps.names)})")
        return [blocks.get(n) for n in ps.names], None
    if isinstance(blocks, (list, tuple)):
        return list(blocks), None
    return None, TypeError(f"{what}: a dict of arrays by name or a list in "
                           f"the set's order, not {type(blocks).__name__}")


def _prepare_set(ps, prep, src, dst, preserve_src):
    """A PlanSet prepared by prep(set, srcs, dsts, preserve) (a backend's
    prepare_set) on blocks given as _set_blocks takes them.  A device
    whose arguments are wrong still calls prep with no set, so that every
    device fails together."""
    srcs, e1 = _set_blocks(ps, src, "src")
    dsts, e2 = _set_blocks(ps, dst, "dst")
    e = e1 or e2
    if e is None and preserve_src is not None and bool(preserve_src) != ps.preserve_src:
        e = ValueError(f"preserve_src={bool(preserve_src)}: the set was "
                       f"planned with preserve_src={ps.preserve_src} "
                       "(plan_set(..., preserve_src=))")
    if e is not None:
        try:  # this device still takes part, so that every device fails
            prep(None, [], [], True)
        except TypeError:
            pass
        raise e
    return prep(ps, srcs, dsts, ps.preserve_src)


def _mpi_prep(ctx):
    return lambda *a: _redist.prepare_set(ctx, *a)


_KINDS = {1: "a one-mesh Plan", 2: "a two-mesh Plan", 3: "a PlanSet"}


def _kind(plan):
    if isinstance(plan, PlanSet):
        return 3
    if isinstance(plan, Plan):
        return 2 if plan.spec.two_mesh else 1
    return 0


def _agree_kind(plan, comm, what):
    """The three kinds of plan take different entry points, whose first
    collectives are on different communicators (a cached context's
    duplicate, or comm itself): ranks given different kinds would wait in
    different calls forever.  So every rank first agrees on the kind, over
    comm (one small allreduce per call: the kinds present, as bits), and
    all fail together when they differ; a rank that passed no plan raises
    TypeError, the others ExecError."""
    from mpi4py import MPI
    k = _kind(plan)
    try:
        seen = comm.allreduce(1 << k, op=MPI.BOR)
    except (AttributeError, TypeError):
        raise TypeError(f"{what}: an mpi4py communicator, not "
                        f"{type(comm).__name__}") from None
    if seen == 1 << k and k:
        return
    if k == 0:
        raise TypeError(f"{what}: a redist.Plan or PlanSet, not "
                        f"{type(plan).__name__}")
    if seen & 1:
        raise _redist.ExecError(f"{what}: another rank passed no plan")
    kinds = " and ".join(_KINDS[b] for b in (1, 2, 3) if seen >> b & 1)
    raise _redist.ExecError(f"{what}: the ranks passed different kinds of "
                            f"plan ({kinds}); this rank {_KINDS[k]}")


def execute(plan, comm, src, dst, *, preserve_src=None, report=False,
            packed=False, native_reduce=False, max_scratch=0):
    """Run `plan` on this rank: collective over `comm`.

    plan: a Plan of a one-mesh spec (comm has the mesh's device count;
    src / dst are this rank's blocks, see Executor.execute, which this
    calls on a cached context); a Plan of a two-mesh spec (comm spans
    devices 0..spec.num_devices-1, rank d is device d; a rank outside a
    mesh passes None for the block it does not hold); or a PlanSet (src /
    dst: dicts of this rank's blocks by array name, or lists in the set's
    order; a missing name or None is an empty block).  preserve_src
    (default True; a PlanSet's is the one it was planned with): the
    source blocks are never written.  Returns None, or the report dict
    with report=True.  Every rank first agrees on the kind of plan (one
    small allreduce over comm; _agree_kind)."""
    _need_mpi()
    _agree_kind(plan, comm, "execute")
    if isinstance(plan, PlanSet):
        ctx = _set_context(plan, comm, packed, native_reduce, max_scratch)
        with _prepare_set(plan, _mpi_prep(ctx), src, dst, preserve_src) as pr:
            return pr.run(report)
    preserve = True if preserve_src is None else bool(preserve_src)
    if plan.spec.two_mesh:
        return _redist.execute_meshes(comm, plan, src, dst, preserve, report)
    ctx = _context(comm, plan.spec.mesh, _flags(packed, native_reduce),
                   int(max_scratch))
    return ctx.execute(plan, src, dst, preserve, report)


def prepare(plan, comm, src, dst, *, preserve_src=None, packed=False,
            native_reduce=False, max_scratch=0):
    """The set-up of execute() done once on bound arrays (collective), for
    runs that only move data: pr.run(report=False), pr.free() (collective;
    or `with`).  A one-mesh Plan gives Executor.prepare's Prepared (with
    start / test / wait) on a cached context; a two-mesh Plan a
    MeshesPrepared (redist_mpi_prepare_meshes); a PlanSet a SetPrepared
    (redist_plan_set_prepare: every round of the set per run).  The
    arrays stay bound (locked) until the object is freed."""
    _need_mpi()
    _agree_kind(plan, comm, "prepare")
    if isinstance(plan, PlanSet):
        ctx = _set_context(plan, comm, packed, native_reduce, max_scratch)
        return _prepare_set(plan, _mpi_prep(ctx), src, dst, preserve_src)
    preserve = True if preserve_src is None else bool(preserve_src)
    if plan.spec.two_mesh:
        return _redist.prepare_meshes(comm, plan, src, dst, preserve)
    ctx = _context(comm, plan.spec.mesh, _flags(packed, native_reduce),
                   int(max_scratch))
    return ctx.prepare(plan, src, dst, preserve)


def free_contexts():
    """Free the contexts redist.execute keeps (collective over each one's
    communicator: call it on every rank)."""
    while _cache:
        _drop(_cache.popitem(last=False)[1])


__all__ = ["Executor", "execute", "prepare", "free_contexts"]
