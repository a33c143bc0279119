"""Two meshes and many arrays executed from Python under mpirun (any rank
count): random two-mesh plans (disjoint, overlapping and reshaped meshes,
uneven dims, ranks outside both meshes) and random plan sets (one mesh
with pending reductions, or two meshes; budgets that force several
rounds) run exactly, one-shot and prepared (run many times); the
whole-model sync helper; bad arrays and misuse fail on every rank with
clear errors, never hang.

Every rank draws the same random cases; checks are agreed over the
communicator (test_exec.agree)."""
import random

import numpy as np
import pytest
from mpi4py import MPI

import redist
from test_exec import agree
import patterns
from patterns import (full_array, src_of, dst_of, expected,  # noqa: F401
                      tight_budget, check_set)

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

def random_two_mesh(rng, cover=False):
    """patterns.random_two_mesh on this job's rank count."""
    return patterns.random_two_mesh(rng, size, cover)


def run_checked(plan, prepared):
    s = plan.spec
    src, dst = src_of(s, rank), dst_of(s, rank)
    keep = None if src is None else src.copy()
    if prepared:
        with redist.prepare(plan, comm, src, dst) as pr:
            for _ in range(2):
                if dst is not None:
                    dst[...] = 0
                pr.run()
                agree(dst is None or np.array_equal(dst, expected(s, rank)),
                      f"prepared run of {s!r}")
    else:
        rep = redist.execute(plan, comm, src, dst, report=True)
        agree(rep["steps_done"] == len(plan), "report")
        agree(dst is None or np.array_equal(dst, expected(s, rank)),
              f"execute of {s!r}")
    agree(src is None or np.array_equal(src, keep), "source preserved")


@pytest.mark.parametrize("seed", range(12))
def test_two_mesh_random_exact(seed):
    rng = random.Random(1000 * size + seed)
    meshes, shape, dtype, st, dt = random_two_mesh(rng)
    spec = redist.Spec(meshes, shape, dtype, st, dt)
    agree(spec.two_mesh, "two meshes")
    plan = redist.plan(spec, objective=rng.choice(["time", "bytes"]))
    agree(redist.verify(plan).valid, "verify")
    run_checked(plan, prepared=seed % 2 == 1)


def random_set(rng, two):
    """patterns.random_set on this job's rank count."""
    return patterns.random_set(rng, size, two)


@pytest.mark.parametrize("seed", range(10))
def test_sets_random_exact(seed):
    rng = random.Random(2000 * size + seed)
    arrays = random_set(rng, two=seed % 2 == 1)
    ps = tight_budget(arrays) if seed % 3 == 0 else redist.plan_set(arrays)
    check_set(ps, rank,
              lambda ps, s, d: redist.execute(ps, comm, s, d, report=True),
              lambda ps, s, d: redist.prepare(ps, comm, s, d), agree)


def test_state_dict_sync_exact():
    """A small model's state dict from a dp x tp training mesh on the
    first ranks to a tp inference mesh on the last ones (the same devices
    at 1 rank), under a budget."""
    nt = max(1, size // 2)
    train = redist.Mesh({"dp": 1, "tp": nt}, name="train")
    infer = redist.Mesh({"tp": size - nt or 1},
                        devices=range(nt, size) if size > 1 else (0,),
                        name="infer")
    state = {f"layers.{i}.{w}": ((24, 24), "f32") for i in range(3)
             for w in ("wq", "wo")}
    state["norm"] = ((24,), "f64")
    spec = redist.state_dict_spec(
        state, train, infer,
        src=lambda n, shape: ("tp",) if len(shape) == 2 else (),
        dst={None: (None, "tp"), "norm": ("tp",)},
        budget_bytes=64 << 10, name="sync")
    ps = redist.plan_set(spec)
    srcs = {n: src_of(spec[n], rank) for n in ps.names}
    dsts = {n: dst_of(spec[n], rank) for n in ps.names}
    redist.execute(ps, comm, srcs, dsts)
    for n in ps.names:
        agree(dsts[n] is None or np.array_equal(dsts[n], expected(spec[n], rank)),
              f"state dict entry {n}")


# ---------------------------------------------------------------- errors

def fails_together(fn, local_exc, culprit, match=None):
    """fn() raises local_exc on rank `culprit` and ExecError elsewhere."""
    try:
        fn()
        got = None
    except Exception as e:  # noqa: BLE001 - checked below
        got = e
    if rank == culprit:
        ok = isinstance(got, local_exc) and (match is None or match in str(got))
    else:
        ok = isinstance(got, redist.ExecError)
    agree(ok, f"{fn.__name__}: rank {rank} raised {got!r}")


def two_mesh_case():
    a = redist.Mesh({"x": size}, name="a")
    b = redist.Mesh({"y": size}, devices=list(reversed(range(size))), name="b")
    spec = redist.Spec((a, b), (2 * size, 3), "f32", ("x", None), (None, None))
    return redist.plan(spec)


def one_mesh_case():
    return redist.plan(redist.Spec(redist.Mesh({"x": size}), (2 * size, 3),
                                   "f32", ("x", None), (None, None)))


def test_two_mesh_bad_arrays_fail_together():
    plan = two_mesh_case()
    s = plan.spec
    culprit = size - 1

    def none_src():
        src = None if rank == culprit else src_of(s, rank)
        redist.execute(plan, comm, src, dst_of(s, rank))
    fails_together(none_src, ValueError, culprit, "src is None")

    def wrong_dtype():
        src = src_of(s, rank)
        if rank == culprit:
            src = src.astype(np.float64)
        with redist.prepare(plan, comm, src, dst_of(s, rank)):
            pass
    fails_together(wrong_dtype, ValueError, culprit, "dtype is f32")

    def read_only():
        dst = dst_of(s, rank)
        if rank == culprit:
            dst.setflags(write=False)
        redist.execute(plan, comm, src_of(s, rank), dst)
    fails_together(read_only, ValueError, culprit, "writable")

    def not_contiguous():
        src = src_of(s, rank)
        if rank == culprit:
            src = np.asfortranarray(np.repeat(src, 2, axis=1))[:, ::2]
        redist.execute(plan, comm, src, dst_of(s, rank))
    fails_together(not_contiguous, ValueError, culprit, "C-contiguous")

    # the communicator still works
    agree(comm.allreduce(1) == size, "comm usable")


def test_two_mesh_beside_one_array_plan_fails_together():
    """The culprit runs a one-array plan while the others run a two-mesh
    plan, on a communicator with no context yet: every rank fails (it
    hung before), at execute's agreement on the kind of plan (the C
    entries' own first agreement, which a context's creation and a
    two-mesh preparation share, is mpi-diverge-lib's case)."""
    if size < 2:
        pytest.skip("needs two ranks")
    plan = two_mesh_case()
    one = one_mesh_case()
    culprit = size - 1
    fresh = comm.Dup()

    def diverging():
        p = one if rank == culprit else plan
        redist.execute(p, fresh, src_of(p.spec, rank), dst_of(p.spec, rank))
    fails_together(diverging, redist.ExecError, culprit)
    redist.free_contexts()
    fresh.Free()
    agree(comm.allreduce(1) == size, "comm usable")


def test_plan_kinds_differ_fail_together():
    """A context cached for comm (one-mesh plans run through it first) and
    the culprit's one-mesh plan beside the others' two-mesh plan: the
    one-mesh entry's first collective is on the context's duplicate, the
    two-mesh entry's on comm, so without execute's agreement on the kind
    of plan they waited in different calls forever.  A rank that passes
    no plan fails every rank too."""
    if size < 2:
        pytest.skip("needs two ranks")
    plan = two_mesh_case()
    one = one_mesh_case()
    culprit = size - 1
    redist.execute(one, comm, src_of(one.spec, rank), dst_of(one.spec, rank))

    def one_beside_two():
        p = one if rank == culprit else plan
        redist.execute(p, comm, src_of(p.spec, rank), dst_of(p.spec, rank))
    fails_together(one_beside_two, redist.ExecError, culprit,
                   "different kinds of plan")

    def two_beside_one():
        p = plan if rank == culprit else one
        with redist.prepare(p, comm, src_of(p.spec, rank), dst_of(p.spec, rank)):
            pass
    fails_together(two_beside_one, redist.ExecError, culprit,
                   "different kinds of plan")

    def no_plan():
        p = None if rank == culprit else one
        redist.execute(p, comm, src_of(one.spec, rank), dst_of(one.spec, rank))
    fails_together(no_plan, TypeError, culprit, "a redist.Plan or PlanSet")
    redist.execute(one, comm, src_of(one.spec, rank), dst_of(one.spec, rank))
    agree(comm.allreduce(1) == size, "comm usable")


def test_set_bad_arrays_fail_together():
    mesh = redist.Mesh({"x": size})
    arrays = redist.Spec.many(mesh, {
        "w": ((2 * size, 4), "f32", ("x", None), (None, "x") if size <= 4 else ()),
        "b": ((size,), "i64", ("x",), ())})
    ps = redist.plan_set(arrays)
    culprit = 0
    good_src = {n: src_of(arrays[n], rank) for n in ps.names}

    def dsts():
        return {n: dst_of(arrays[n], rank) for n in ps.names}

    def missing():
        src = dict(good_src)
        if rank == culprit:
            del src["b"]
        redist.execute(ps, comm, src, dsts())
    fails_together(missing, ValueError, culprit, "array 'b': src is None")

    def unknown():
        src = dict(good_src)
        if rank == culprit:
            src["bias"] = src["b"]
        redist.execute(ps, comm, src, dsts())
    fails_together(unknown, ValueError, culprit, "no array 'bias'")

    def wrong_size():
        d = dsts()
        if rank == culprit:
            d["w"] = np.zeros(d["w"].size + 1, np.float32)
        redist.prepare(ps, comm, good_src, d)
    fails_together(wrong_size, ValueError, culprit, "array 'w': dst")

    def short_list():
        d = [dsts()[n] for n in ps.names]
        redist.execute(ps, comm, [good_src[n] for n in ps.names],
                       d[:1] if rank == culprit else d)
    fails_together(short_list, ValueError, culprit, "lists of 2 arrays")

    def other_preserve():
        redist.execute(ps, comm, good_src, dsts(),
                       preserve_src=(rank != culprit))
    fails_together(other_preserve, ValueError, culprit, "planned with")

    with pytest.raises(TypeError):
        redist.execute(ps, comm, 5, dsts())
    agree(comm.allreduce(1) == size, "comm usable")


def test_set_on_wrong_rank_count_fails_everywhere():
    mesh = redist.Mesh({"x": size + 1})
    arrays = redist.Spec.many(mesh, {"a": ((size + 1,), "f32", ("x",), ())})
    ps = redist.plan_set(arrays)
    with pytest.raises(redist.ExecError, match=f"run with {size + 1} ranks"):
        redist.execute(ps, comm, {}, {})
    agree(comm.allreduce(1) == size, "comm usable")


def check_started(pr, pairs, calls):
    """start / test / wait on a prepared object: exact after wait; wait
    or test with none started, start or run while in flight fail on every
    rank alike (redist.ExecError naming the C call)."""
    for call in (pr.wait, pr.test):
        with pytest.raises(redist.ExecError, match="no run started"):
            call()
    for d, _ in pairs:
        if d is not None:
            d[...] = 0
    pr.start()
    with pytest.raises(redist.ExecError, match=f"{calls}_start.*in flight"):
        pr.start()
    with pytest.raises(redist.ExecError, match="in flight"):
        pr.run()
    while not pr.test():
        pass
    rep = pr.wait(report=True)
    agree(rep["failed_step"] is None, "the started run's report")
    agree(all(d is None or np.array_equal(d, w) for d, w in pairs),
          "exact after wait")
    pr.start()  # a run in flight when free() comes: free waits for it


def test_two_mesh_start_test_wait():
    a = redist.Mesh({"x": size}, name="a")
    b = redist.Mesh({"y": size}, name="b")
    spec = redist.Spec((a, b), (size, 4), "f32", ("x", None), (None, "y"))
    plan = redist.plan(spec)
    src, dst = src_of(spec, rank), dst_of(spec, rank)
    pr = redist.prepare(plan, comm, src, dst)
    agree(pr.can_start, "start available (mpi4py asks MPI_THREAD_MULTIPLE)")
    check_started(pr, [(dst, expected(spec, rank))], "redist_mpi")
    pr.free()  # waits for the run started last
    agree(np.array_equal(dst, expected(spec, rank)), "exact after free")
    with pytest.raises(ValueError, match="freed"):
        pr.start()


def test_prepared_set_misuse():
    mesh = redist.Mesh({"x": size})
    arrays = redist.Spec.many(mesh, {"a": ((size, 2), "f64", ("x", None), ())})
    ps = redist.plan_set(arrays)
    src = {"a": src_of(arrays["a"], rank)}
    dst = {"a": dst_of(arrays["a"], rank)}
    pr = redist.prepare(ps, comm, src, dst)
    assert not pr.freed
    agree(pr.can_start, "start available (mpi4py asks MPI_THREAD_MULTIPLE)")
    check_started(pr, [(dst["a"], expected(arrays["a"], rank))],
                  "redist_set")
    pr.wait()
    rep = pr.run(report=True)
    assert rep["messages"] >= 0
    pr.free()
    assert pr.freed
    with pytest.raises(ValueError, match="freed"):
        pr.run()
    pr.free()  # twice is harmless
    agree(np.array_equal(dst["a"], expected(arrays["a"], rank)), "result")
    redist.free_contexts()
