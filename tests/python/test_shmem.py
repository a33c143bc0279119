"""OpenSHMEM execution from Python under oshrun (any PE count): random
plans (pending reductions included) run exactly, one-shot and prepared
(run, start / wait); bad arrays fail on every PE with clear errors.

Checks are agreed over the PEs with redist itself (an all-gather of one
flag per PE), so a failure on one PE fails all of them instead of
leaving the others waiting in the next collective."""
import random

import numpy as np
import pytest

import redist
import redist.shmem
from patterns import block, random_spec


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


def test_two_mesh_plan_refused_on_every_pe():
    # the OpenSHMEM backend has no two-mesh path (doc/meshes.md, "Not yet")
    a = redist.Mesh({"x": npes}, name="a")
    b = redist.Mesh({"y": npes}, name="b")
    spec = redist.Spec((a, b), (npes, 2), "f32", ("x", None), (None, "y")
                       if 2 % npes == 0 else (None, None))
    plan = redist.plan(spec)
    src = np.zeros(spec.src_block_shape(pe), np.float32)
    dst = np.zeros(spec.dst_block_shape(pe), np.float32)
    with redist.shmem.Executor(a) as ex:
        with pytest.raises(redist.ExecError) as e:
            ex.execute(plan, src, dst)
    assert e.value.status == redist.ERR_INVALID
