"""Prepared and non-blocking execution from Python under mpirun (any rank
count): Executor.prepare binds this rank's arrays once; run() repeats,
start() / test() / wait() overlap Python code with data movement, and the
GIL is released while data moves (a Python thread keeps running during a
blocking call; a started run completes while the caller runs pure Python
and makes no call).  Misuse fails on every rank together, never hangs.

Checks are agreed over the communicator (test_exec.agree): a lone
failure would leave the other ranks waiting in the next collective."""
import random
import sys
import threading
import time

import numpy as np
import pytest

import redist
from test_exec import (agree, block, comm, expect_all, random_spec, rank,
                       simple_plan, size)


def random_case(seed, uneven):
    """test_exec's random specs, with uneven lengths and rules if asked."""
    rng = random.Random(9000 * size + seed)
    spec = random_spec(rng)
    if uneven:
        split = [rng.choice([None, "balanced", "chunk"]) for _ in range(2)]
        spec = redist.Spec(
            spec.mesh, [rng.randint(1, 2 * n + 3) for n in spec.shape],
            spec.dtype, redist.Type(spec.src.dims, spec.src.partial, split=split[0]),
            redist.Type(spec.dst.dims, spec.dst.partial, split=split[1]), spec.reduce)
    return spec, redist.plan(spec), rng


@pytest.mark.parametrize("seed", range(8))
def test_prepared_runs_many(seed):
    """Prepared once, run three times (the destination scribbled over in
    between) and started / waited once: exact each time, source intact."""
    spec, plan, rng = random_case(seed, uneven=seed % 2 == 1)
    src = block(spec, rank, "src")
    want = block(spec, rank, "dst")
    keep = src.copy()
    dst = np.zeros(spec.dst_block_shape(rank), spec.np_dtype)
    with redist.Executor(comm, spec.mesh) as ex:
        with ex.prepare(plan, src if src.size else None,
                        dst if dst.size else None) as pr:
            for k in range(3):
                dst[...] = 77
                rep = pr.run(report=k == 0)
                agree(np.array_equal(dst, want), f"run {k}: {spec!r}")
                if k == 0:
                    agree(rep["steps_done"] == len(plan), "report: every step")
            agree(pr.can_start, "start available (mpi4py asks MPI_THREAD_MULTIPLE)")
            dst[...] = 77
            pr.start()
            rep = pr.wait(report=True)
            agree(np.array_equal(dst, want), f"start/wait: {spec!r}")
            agree(rep["scratch_high_water"] <= rep["scratch_bytes"],
                  "scratch within the promise")
        agree(pr.freed, "the with block freed the object")
    agree(np.array_equal(src, keep), "preserve_src (the default) kept the source")


def big_case():
    """Rows over x -> columns over x, 16 MiB of f64 per rank (uneven
    columns where 1024 does not divide): long enough to observe.  The
    data: element (i, j) is i * 1024 + j, built per block."""
    spec = redist.Spec({"x": size}, (2048 * size, 1024), "f64", ("x", None), (None, "x"))

    def data(sl):
        r, c = sl
        return (np.arange(r.start, r.stop, dtype=np.float64)[:, None] * 1024
                + np.arange(c.start, c.stop, dtype=np.float64)[None, :])

    src = data(spec.src_slices(rank))
    return spec, redist.plan(spec), src, data(spec.dst_slices(rank))


def test_start_progresses_while_python_runs():
    """After start(), the caller runs pure Python (the GIL held by this
    thread) and only polls test(), which reads a flag and never drives
    MPI: the run must end all the same, moved by the object's own
    thread (within 30 s: ranks oversubscribe the cores here)."""
    spec, plan, src, want = big_case()
    dst = np.zeros(spec.dst_block_shape(rank))
    with redist.Executor(comm, spec.mesh) as ex, ex.prepare(plan, src, dst) as pr:
        pr.run()
        dst[...] = 0
        comm.Barrier()
        pr.start()
        t1 = time.perf_counter()
        done = False
        while not done and time.perf_counter() - t1 < 30:
            t = time.perf_counter()
            x = 0
            while time.perf_counter() - t < 0.01:  # pure Python
                x += 1
            done = pr.test()
        took = time.perf_counter() - t1
        pr.wait()
        agree(done, f"a started run progressed alone (not over after {took:.1f} s)")
        agree(np.array_equal(dst, want), "exact after start/wait")


def test_gil_released_while_data_moves():
    """A Python thread that timestamps runs while this thread is inside
    run() and execute(): some stamp falls in the first 90% of the run's
    own time (the report's seconds, measured in C from just after the
    call began).  Held, the GIL would keep every stamp out of that
    window (the switch interval, 0.2 s, is far longer than the few
    bytecodes between the clock read and the call)."""
    spec, plan, src, want = big_case()
    dst = np.zeros(spec.dst_block_shape(rank))
    stamps, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    old = sys.getswitchinterval()
    seen = {}
    with redist.Executor(comm, spec.mesh) as ex, ex.prepare(plan, src, dst) as pr:
        th = threading.Thread(target=ticker)
        sys.setswitchinterval(0.2)
        th.start()
        try:
            for name, call in (("run", lambda: pr.run(report=True)),
                               ("execute", lambda: ex.execute(plan, src, dst,
                                                              report=True))):
                seen[name] = 0
                for _ in range(12):  # the same count on every rank
                    stamps.clear()
                    t0 = time.perf_counter()
                    rep = call()
                    end = t0 + 0.9 * rep["seconds"]
                    seen[name] += any(t0 < x < end for x in stamps)
                    if min(comm.allgather(seen[name])) > 0:
                        break
        finally:
            stop.set()
            th.join()
            sys.setswitchinterval(old)
    agree(all(n > 0 for n in seen.values()),
          f"another thread ran during the calls (calls that showed it: {seen})")
    agree(np.array_equal(dst, want), "exact")


def test_prepared_misuse_fails_together():
    spec, plan = simple_plan()
    src = block(spec, rank, "src")
    dst = np.empty(spec.dst_local_shape)
    ex = redist.Executor(comm, spec.mesh)
    # a bad array at prepare: ValueError there, ExecError elsewhere
    expect_all(lambda: ex.prepare(plan, src, np.empty(3)), ValueError)
    if size > 1:
        expect_all(lambda: ex.prepare(plan, src, np.empty(3) if rank == 1 else dst),
                   ValueError, lonely=1)
    pr = ex.prepare(plan, src, dst)
    # wait or test before any start: ExecError (ERR_INVALID) on every rank
    for fn in (pr.wait, pr.test):
        try:
            fn()
            got = None
        except redist.ExecError as e:
            got = e
        agree(got is not None and got.status == redist.ERR_INVALID, f"{fn}: {got!r}")
    # the context cannot be freed before its prepared objects
    with pytest.raises(ValueError, match="prepared object"):
        ex.free()
    pr.run()
    agree(np.array_equal(dst, block(spec, rank, "dst")), "runs after the misuse")
    pr.free()
    with pytest.raises(ValueError, match="freed"):
        pr.run()
    pr.free()  # twice is fine
    ex.free()
    with pytest.raises(ValueError, match="freed"):
        ex.prepare(plan, src, dst)
