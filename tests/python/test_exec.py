"""Execution under mpirun (any rank count): random plans run exactly, with
the C tests' data pattern (every element identifies its global index;
partial sources hold contributions whose reduction is exactly the value),
checked elementwise with NumPy; bad arrays, bad arguments and a wrong
communicator fail on every rank with clear errors, never hang.

Every rank draws the same random cases; each check is agreed over the
communicator so that all ranks fail together (a lone failure would leave
the others waiting in the next collective)."""
import random

import numpy as np
import pytest
from mpi4py import MPI

import redist

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def agree(ok, what):
    """Assert `ok` on every rank: fails everywhere if it fails anywhere."""
    oks = comm.allgather(bool(ok))
    bad = [r for r, o in enumerate(oks) if not o]
    assert not bad, f"{what}: failed on rank(s) {bad}"


from patterns import PERIOD, lin, values, block, factor  # noqa: E402,F401
import patterns  # noqa: E402


def random_spec(rng):
    """patterns.random_spec on this job's rank count."""
    return patterns.random_spec(rng, size)


@pytest.mark.parametrize("seed", range(24))
def test_random_plans_exact(seed):
    rng = random.Random(1000 * size + seed)
    spec = random_spec(rng)
    plan = redist.plan(spec, objective=rng.choice(["bytes", "time"]))
    src = block(spec, rank, "src")
    want = block(spec, rank, "dst")
    dst = np.full(spec.dst_local_shape, 77, dtype=spec.np_dtype)
    preserve = rng.randrange(2) == 0
    keep = src.copy()
    rep = redist.execute(plan, comm, src if rng.randrange(2) else src.reshape(-1),
                         dst, preserve_src=preserve, report=True,
                         packed=rng.randrange(3) == 0)
    ok = np.array_equal(dst, want)
    if not ok:
        bad = np.argwhere(dst != want)[:3]
        print(f"rank {rank}: {spec!r} {[s.op for s in plan]}: first wrong {bad.tolist()} "
              f"got {dst[tuple(bad[0])]} want {want[tuple(bad[0])]}")
    agree(ok, f"seed {seed}: {spec!r}")
    agree(not preserve or np.array_equal(src, keep), "preserve_src kept the source")
    agree(rep["scratch_high_water"] <= rep["scratch_bytes"], "scratch within the promise")
    agree(rep["steps_done"] == len(plan), "every step done")


def simple_plan():
    """x over all ranks: dim 0 sharded -> dim 1 sharded (an all_to_all)."""
    spec = redist.Spec({"x": size}, (4 * size, 2 * size), "f64", ("x", None), (None, "x"))
    return spec, redist.plan(spec)


def expect_all(fn, local_exc, lonely=None):
    """fn() raises local_exc on rank `lonely` (every rank if None) and
    ExecError on the others; then a good execute still works."""
    try:
        fn()
        got = None
    except Exception as e:  # noqa: BLE001
        got = e
    if lonely is None or rank == lonely:
        agree(isinstance(got, local_exc), f"{local_exc.__name__} expected, got {got!r}")
    else:
        agree(isinstance(got, redist.ExecError) and str(lonely) in str(got),
              f"ExecError naming rank {lonely} expected, got {got!r}")


def test_bad_arrays():
    spec, plan = simple_plan()
    src = block(spec, rank, "src")
    dst = np.empty(spec.dst_local_shape)
    good = lambda: redist.execute(plan, comm, src, dst)  # noqa: E731
    cases = {
        "wrong dtype": lambda: redist.execute(plan, comm, src, dst.astype(np.float32)),
        "wrong size": lambda: redist.execute(plan, comm, src, np.empty(dst.size + 1)),
        "wrong shape": lambda: redist.execute(plan, comm, src, np.empty(dst.shape[::-1])
                                              if dst.shape[0] != dst.shape[1] else np.empty((1, dst.size))),
        "non-contiguous": lambda: redist.execute(plan, comm, src, np.empty((dst.shape[0], 2 * dst.shape[1]))[:, ::2]),
        "read-only dst": lambda: redist.execute(plan, comm, src, np.frombuffer(bytes(dst.nbytes))),
        "None dst": lambda: redist.execute(plan, comm, src, None),
        "None src": lambda: redist.execute(plan, comm, None, dst),
        "overlap": lambda: redist.execute(plan, comm, dst, dst),
        "read-only src, preserve_src=False": lambda: redist.execute(
            plan, comm, np.frombuffer(src.tobytes()), dst, preserve_src=False),
        "a list": lambda: redist.execute(plan, comm, src, [0.0] * dst.size),
    }
    for name, fn in cases.items():
        exc = TypeError if name == "a list" else ValueError
        expect_all(fn, exc)  # on every rank
        good()
        agree(np.array_equal(dst, block(spec, rank, "dst")), f"after {name}")
        if size > 1:
            lonely = 1
            f = fn if rank == lonely else good
            expect_all(f, exc, lonely)
            good()
    # not a plan, not a communicator: TypeError before anything collective
    with pytest.raises(TypeError):
        redist.execute(None, comm, src, dst)
    with pytest.raises(TypeError):
        redist.execute(plan, None, src, dst)


def test_messages():
    spec, plan = simple_plan()
    src = block(spec, rank, "src")
    with pytest.raises(ValueError, match=r"dst: the spec's dtype is f64, the array's format is 'f'"):
        redist.execute(plan, comm, src, np.empty(spec.dst_local_shape, np.float32))
    with pytest.raises(ValueError, match=r"dst: \d+ bytes, the local block has \d+"):
        redist.execute(plan, comm, src, np.empty(3))
    with pytest.raises(ValueError, match=r"dst: a writable C-contiguous array is needed"):
        redist.execute(plan, comm, src, np.empty(spec.dst_local_shape, order="F")
                       if min(spec.dst_local_shape) > 1 else np.frombuffer(bytes(spec.dst_bytes)))


def test_raw_bytes_and_bf16():
    spec = redist.Spec({"x": size}, (2 * size, 4), "bf16", ("x", None), (None, None))
    plan = redist.plan(spec)
    g = np.arange(2 * size * 4, dtype=np.uint16).reshape(2 * size, 4)
    src = np.ascontiguousarray(g[spec.src_slices(rank)])
    dst = np.zeros(spec.dst_local_shape, np.uint16)
    redist.execute(plan, comm, src, dst)
    agree(np.array_equal(dst, g), "bf16 through uint16 views")
    raw = np.zeros(spec.dst_bytes, np.uint8)
    redist.execute(plan, comm, src.view(np.uint8).reshape(-1), raw)
    agree(np.array_equal(raw.view(np.uint16).reshape(g.shape), g), "raw bytes")
    with pytest.raises(ValueError, match="bf16: pass a uint16 view"):
        redist.execute(plan, comm, src, np.zeros(spec.dst_local_shape, np.float16))
    # bytearray / memoryview are buffers too
    ba = bytearray(spec.dst_bytes)
    redist.execute(plan, comm, memoryview(src.tobytes()), ba)
    agree(bytes(ba) == g.tobytes(), "bytearray destination")


def test_executor_and_wrong_comm():
    spec, plan = simple_plan()
    src = block(spec, rank, "src")
    dst = np.empty(spec.dst_local_shape)
    with redist.Executor(comm, spec.mesh) as ex:
        assert ex.rank == rank and ex.size == size
        info = ex.info(plan)
        assert info["scratch_bytes"] <= info["bound_bytes"] or info["bound_bytes"] == 0
        for _ in range(3):
            ex.execute(plan, src, dst)
            agree(np.array_equal(dst, block(spec, rank, "dst")), "Executor.execute")
        assert ex.matches(comm)
    with pytest.raises(ValueError, match="freed"):
        ex.execute(plan, src, dst)
    # a communicator of another size than the mesh: ExecError everywhere
    wrong = redist.plan(redist.Spec({"x": size + 1}, (size + 1,), "f64", ("x",), (None,)))
    try:
        redist.execute(wrong, comm, np.empty(1), np.empty(size + 1))
        got = None
    except redist.ExecError as e:
        got = e
    agree(got is not None and got.status == redist.ERR_INVALID, f"wrong comm size: {got!r}")
    # a split communicator gets its own context, and reuses it
    sub = comm.Split(rank % 2, rank)
    sspec = redist.Spec({"x": sub.size}, (2 * sub.size,), "i64", ("x",), (None,))
    splan = redist.plan(sspec)
    out = np.empty(2 * sub.size, np.int64)
    for _ in range(2):
        redist.execute(splan, sub, np.arange(2 * sub.rank, 2 * sub.rank + 2, dtype=np.int64), out)
        agree(np.array_equal(out, np.arange(2 * sub.size)), "split communicator")
    redist.free_contexts()
    sub.Free()
    redist.execute(plan, comm, src, dst)
    agree(np.array_equal(dst, block(spec, rank, "dst")), "after free_contexts")


def uneven_blocks(spec, r):
    """Device r's source and target blocks under the pattern (an empty
    block is None one time in two: the binding accepts None for it)."""
    src, want = block(spec, r, "src"), block(spec, r, "dst")
    assert src.shape == spec.src_block_shape(r)
    assert want.shape == spec.dst_block_shape(r)
    return src, want


def test_uneven_rows_exact():
    """A dim that does not divide (4*size+1 rows, ceil blocks: the last
    rank's block is shorter) moved to columns; then the same with fewer
    rows than ranks (balanced: some blocks empty, passed as None)."""
    for rows, split in ((4 * size + 1, None), (max(size - 1, 1), "balanced")):
        spec = redist.Spec({"x": size}, (rows, 2 * size + 1), "f64",
                           redist.Type(("x", None), split=split),
                           redist.Type((None, "x"), split=split))
        plan = redist.plan(spec)
        src, want = uneven_blocks(spec, rank)
        dst = np.full(spec.dst_block_shape(rank), -1.0)
        redist.execute(plan, comm, src if src.size else None,
                       dst if dst.size else None)
        agree(np.array_equal(dst, want), f"uneven {rows} rows {split}")
    if size > 1:
        agree(spec.src_local_shape is None, "uneven: no single local shape")
    # a wrong block shape is a clear error on its rank, ExecError elsewhere
    bad = np.zeros(spec.src_block_shape(rank)[0] + 1) if rank == 0 else src
    try:
        redist.execute(plan, comm, bad, np.empty(spec.dst_block_shape(rank)))
        got = None
    except (ValueError, redist.ExecError) as e:
        got = e
    agree(got is not None, "a wrong uneven block fails everywhere")
    if rank == 0:
        assert isinstance(got, ValueError) and "src" in str(got), got


@pytest.mark.parametrize("seed", range(12))
def test_uneven_random_exact(seed):
    """Random specs as test_random_plans_exact, then each dim's length
    drawn from 1 to 2k+3 for k blocks (often not a multiple, sometimes
    fewer elements than blocks) and random split rules per side."""
    rng = random.Random(5000 * size + seed)
    base = random_spec(rng)
    split = [rng.choice([None, "balanced", "chunk"]) for _ in range(2)]
    src_t = redist.Type(base.src.dims, base.src.partial, split=split[0])
    dst_t = redist.Type(base.dst.dims, base.dst.partial, split=split[1])
    shape = [rng.randint(1, 2 * n + 3) for n in base.shape]
    spec = redist.Spec(base.mesh, shape, base.dtype, src_t, dst_t, base.reduce)
    plan = redist.plan(spec, objective=rng.choice(["bytes", "time"]))
    src, want = uneven_blocks(spec, rank)
    dst = np.full(spec.dst_block_shape(rank), 77, dtype=spec.np_dtype)
    rep = redist.execute(plan, comm, src if src.size or rng.randrange(2) else None,
                         dst if dst.size or rng.randrange(2) else None,
                         preserve_src=True, report=True)
    agree(np.array_equal(dst, want), f"uneven seed {seed}: {spec!r}")
    agree(np.array_equal(src, block(spec, rank, "src")), "source preserved")
    agree(rep["steps_done"] == len(plan.steps), "report: every step done")