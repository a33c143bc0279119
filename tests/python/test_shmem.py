"""OpenSHMEM execution from Python under oshrun (any PE count): random
plans (pending reductions included) run exactly, one-shot and prepared
(run, start / wait); random two-mesh plans and random plan sets (one
mesh with pending reductions, or two meshes; budgets that force several
rounds) run exactly, one-shot and prepared (run twice); bad arrays fail
on every PE with clear errors (ValueError on the culprit, ExecError on
the others), never hang.

Checks are agreed over the PEs with redist itself (an all-gather of one
flag per PE), so a failure on one PE fails all of them instead of
leaving the others waiting in the next collective."""
import random

import numpy as np
import pytest

import redist
import redist.shmem
from patterns import (block, random_spec, random_two_mesh, random_set,
                      src_of, dst_of, expected, tight_budget, check_set)


pe, npes = redist.shmem.start()
_flag_spec = redist.Spec({"pe": npes}, (npes,), "i32", ("pe",), ())
_flag_plan = redist.plan(_flag_spec)
_flags = redist.shmem.Executor(_flag_spec.mesh)


def agree(ok, what):
    """Assert `ok` on every PE: fails everywhere if it fails anywhere."""
    mine = np.array([1 if ok else 0], np.int32)
    every = np.zeros(npes, np.int32)
    _flags.execute(_flag_plan, mine, every)
    bad = [r for r in range(npes) if not every[r]]
    assert not bad, f"{what}: failed on PE(s) {bad}"


def test_have_shmem():
    assert redist.shmem.HAVE_SHMEM and redist.HAVE_SHMEM


@pytest.mark.parametrize("seed", range(16))
def test_random_plans_exact(seed):
    rng = random.Random(3000 * npes + seed)
    spec = random_spec(rng, npes)
    plan = redist.plan(spec, objective=rng.choice(["time", "bytes"]))
    src = block(spec, pe, "src")
    want = block(spec, pe, "dst")
    keep = src.copy()
    dst = np.zeros(spec.dst_block_shape(pe), spec.np_dtype)
    with redist.shmem.Executor(spec.mesh, no_ptr=seed % 4 == 3) as ex:
        rep = ex.execute(plan, src, dst, report=True)
        agree(np.array_equal(dst, want), f"execute {spec!r}")
        agree(np.array_equal(src, keep) and not rep["writes_src"], "src kept")
        with ex.prepare(plan, src, dst) as pr:
            for k in range(2):
                dst[...] = 0
                if k and pr.can_start:
                    pr.start()
                    pr.wait()
                else:
                    pr.run()
                agree(np.array_equal(dst, want), f"prepared run {k}")


def fails_together(fn, culprit, match):
    try:
        fn()
        got = None
    except Exception as e:  # noqa: BLE001 - checked below
        got = e
    ok = (isinstance(got, ValueError) and match in str(got)) if pe == culprit \
        else isinstance(got, redist.ExecError)
    agree(ok, f"{fn.__name__}: PE {pe} raised {got!r}")


def test_bad_arrays_fail_together():
    spec = redist.Spec({"x": npes}, (2 * npes, 3), "f64", ("x", None), ())
    plan = redist.plan(spec)
    full = np.arange(6 * npes, dtype=np.float64).reshape(2 * npes, 3)
    src = np.ascontiguousarray(full[spec.src_slices(pe)])
    culprit = npes - 1
    with redist.shmem.Executor(spec.mesh) as ex:
        def wrong_dtype():
            ex.execute(plan, src.astype(np.float32) if pe == culprit else src,
                       np.zeros(spec.dst_block_shape(pe)))
        fails_together(wrong_dtype, culprit, "dtype is f64")

        def read_only():
            dst = np.zeros(spec.dst_block_shape(pe))
            if pe == culprit:
                dst.setflags(write=False)
            with ex.prepare(plan, src, dst):
                pass
        fails_together(read_only, culprit, "writable")

        def none_dst():
            ex.execute(plan, src, None if pe == culprit else
                       np.zeros(spec.dst_block_shape(pe)))
        fails_together(none_dst, culprit, "dst is None")
        # the context still works
        dst = np.zeros(spec.dst_block_shape(pe))
        ex.execute(plan, src, dst)
        agree(np.array_equal(dst, full), "after the failures")


def test_wrong_mesh_size():
    with pytest.raises(redist.ExecError) as e:
        redist.shmem.Executor({"x": npes + 1})
    assert e.value.status == redist.ERR_INVALID


def union_mesh():
    """A mesh of every PE: two-mesh plans and sets run on any mesh of the
    union's device count."""
    return redist.Mesh({"pe": npes})


@pytest.mark.parametrize("seed", range(12))
def test_two_mesh_random_exact(seed):
    rng = random.Random(5000 * npes + seed)
    meshes, shape, dtype, st, dt = random_two_mesh(rng, npes, cover=True)
    spec = redist.Spec(meshes, shape, dtype, st, dt)
    agree(spec.two_mesh and spec.num_devices == npes, "two meshes on every PE")
    plan = redist.plan(spec, objective=rng.choice(["time", "bytes"]))
    src, dst = src_of(spec, pe), dst_of(spec, pe)
    want = expected(spec, pe)
    keep = None if src is None else src.copy()
    with redist.shmem.Executor(union_mesh(), no_ptr=seed % 4 == 3) as ex:
        rep = ex.execute(plan, src, dst, report=True)
        agree(rep["steps_done"] == len(plan), "report")
        agree(dst is None or np.array_equal(dst, want), f"execute {spec!r}")
        with ex.prepare(plan, src, dst) as pr:
            for k in range(2):
                if dst is not None:
                    dst[...] = 0
                pr.run()
                agree(dst is None or np.array_equal(dst, want),
                      f"prepared run {k} of {spec!r}")
    agree(src is None or np.array_equal(src, keep), "source preserved")


@pytest.mark.parametrize("seed", range(10))
def test_sets_random_exact(seed):
    rng = random.Random(6000 * npes + seed)
    arrays = random_set(rng, npes, two=seed % 2 == 1)
    mesh = union_mesh() if arrays[0].two_mesh else arrays[0].mesh
    with redist.shmem.Executor(mesh, no_ptr=seed % 4 == 2) as ex:
        ps = tight_budget(arrays, executor=ex) if seed % 3 == 0 else \
            redist.plan_set(arrays, executor=ex)
        check_set(ps, pe,
                  lambda ps, s, d: ex.execute(ps, s, d, report=True),
                  ex.prepare, agree)


def test_two_mesh_bad_arrays_fail_together():
    a = redist.Mesh({"x": npes}, name="a")
    b = redist.Mesh({"y": npes}, devices=list(reversed(range(npes))), name="b")
    spec = redist.Spec((a, b), (2 * npes, 3), "f32", ("x", None), (None, None))
    plan = redist.plan(spec)
    culprit = npes - 1
    with redist.shmem.Executor(union_mesh()) as ex:
        def none_src():
            src = None if pe == culprit else src_of(spec, pe)
            ex.execute(plan, src, dst_of(spec, pe))
        fails_together(none_src, culprit, "src is None")

        def wrong_dtype():
            src = src_of(spec, pe)
            if pe == culprit:
                src = src.astype(np.float64)
            with ex.prepare(plan, src, dst_of(spec, pe)):
                pass
        fails_together(wrong_dtype, culprit, "dtype is f32")

        def read_only():
            dst = dst_of(spec, pe)
            if pe == culprit:
                dst.setflags(write=False)
            with ex.prepare(plan, src_of(spec, pe), dst):
                pass
        fails_together(read_only, culprit, "writable")
        # the context still works
        dst = dst_of(spec, pe)
        ex.execute(plan, src_of(spec, pe), dst)
        agree(np.array_equal(dst, expected(spec, pe)), "after the failures")


def test_set_bad_arrays_fail_together():
    mesh = redist.Mesh({"x": npes})
    arrays = redist.Spec.many(mesh, {
        "w": ((2 * npes, 4), "f32", ("x", None), (None, "x") if npes <= 4 else ()),
        "b": ((npes,), "i64", ("x",), ())})
    culprit = 0
    good_src = {n: src_of(arrays[n], pe) for n in arrays.names}

    def dsts():
        return {n: dst_of(arrays[n], pe) for n in arrays.names}

    with redist.shmem.Executor(mesh) as ex:
        ps = redist.plan_set(arrays, executor=ex)

        def missing():
            src = dict(good_src)
            if pe == culprit:
                del src["b"]
            ex.execute(ps, src, dsts())
        fails_together(missing, culprit, "array 'b': src is None")

        def unknown():
            src = dict(good_src)
            if pe == culprit:
                src["bias"] = src["b"]
            ex.execute(ps, src, dsts())
        fails_together(unknown, culprit, "no array 'bias'")

        def wrong_size():
            d = dsts()
            if pe == culprit:
                d["w"] = np.zeros(d["w"].size + 1, np.float32)
            ex.prepare(ps, good_src, d)
        fails_together(wrong_size, culprit, "array 'w': dst")

        def short_list():
            d = [dsts()[n] for n in ps.names]
            ex.execute(ps, [good_src[n] for n in ps.names],
                       d[:1] if pe == culprit else d)
        fails_together(short_list, culprit, "lists of 2 arrays")

        def other_preserve():
            ex.execute(ps, good_src, dsts(), preserve_src=(pe != culprit))
        fails_together(other_preserve, culprit, "planned with")

        # a set planned without the endpoint is refused alike on every PE
        with pytest.raises(ValueError, match="not planned for an OpenSHMEM"):
            ex.execute(redist.plan_set(arrays), good_src, dsts())
        with pytest.raises(TypeError, match="a redist.shmem.Executor"):
            redist.plan_set(arrays, executor=object())
        # and one planned for an endpoint of other options fails on all
        with redist.shmem.Executor(mesh, packed=True) as other:
            with pytest.raises(redist.ExecError, match="other options"):
                other.execute(ps, good_src, dsts())
        # the context still works
        d = dsts()
        ex.execute(ps, good_src, d)
        agree(all(np.array_equal(d[n], expected(arrays[n], pe))
                  for n in ps.names), "after the failures")


def test_no_start_for_two_mesh_plans_and_sets():
    """The C API has no start / test / wait for them: TypeError, local."""
    a = redist.Mesh({"x": npes}, name="a")
    b = redist.Mesh({"y": npes}, name="b")
    spec = redist.Spec((a, b), (npes, 2), "f32", ("x", None), (None, None))
    plan = redist.plan(spec)
    mesh = redist.Mesh({"x": npes})
    arrays = redist.Spec.many(mesh, {"a": ((npes, 2), "f64", ("x", None), ())})
    with redist.shmem.Executor(union_mesh()) as ex, \
            redist.shmem.Executor(mesh) as ex1:
        ps = redist.plan_set(arrays, executor=ex1)
        src, dst = src_of(spec, pe), dst_of(spec, pe)
        sets = {"a": src_of(arrays["a"], pe)}, {"a": dst_of(arrays["a"], pe)}
        for pr, what, key, want in (
                (ex.prepare(plan, src, dst), "two-mesh plans", "steps_done",
                 len(plan)),
                (ex1.prepare(ps, *sets), "plan sets", "exchanges", None)):
            assert not pr.can_start
            for call in (pr.start, pr.test, pr.wait):
                with pytest.raises(TypeError,
                                   match=f"no non-blocking runs for {what}"):
                    call()
            rep = pr.run(report=True)
            assert rep[key] == want if want is not None else rep[key] >= 0
            pr.free()
            assert pr.freed
            with pytest.raises(ValueError, match="freed"):
                pr.run()
        agree(np.array_equal(dst, expected(spec, pe)) and
              np.array_equal(sets[1]["a"], expected(arrays["a"], pe)),
              "results")
