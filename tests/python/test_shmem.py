"""OpenSHMEM execution from Python under oshrun (any PE count): random
plans (pending reductions included) run exactly, one-shot and prepared
(run, start / wait); random two-mesh plans and random plan sets (one
mesh with pending reductions, or two meshes; budgets that force several
rounds) run exactly, one-shot and prepared (run twice); bad arrays fail
on every PE with clear errors (ValueError on the culprit, ExecError on
the others), never hang.  Symmetric arrays (redist.shmem.empty / zeros):
allocation all or none, given back once every PE released them, random plans exact
on them (one-shot and prepared), puts straight into them (no scratch)
only when every PE passes them, mixed symmetric / private PEs exact on
the private path, bad symmetric arrays failing together, and arrays
kept usable across stop() (the last test: it finalizes OpenSHMEM).

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
        prepared_runs(ex, plan, src, dst, want)


def prepared_runs(ex, plan, src, dst, want):
    """A prepared object run, then started and waited for (where the
    runtime allows), exact each time."""
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


def test_start_test_wait_for_two_mesh_plans_and_sets():
    """start / test / wait on prepared two-mesh objects and sets: exact
    after wait; misuse fails on every PE alike; free waits for a run in
    flight."""
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
        for pr, key, want, d, w in (
                (ex.prepare(plan, src, dst), "steps_done", len(plan), dst,
                 expected(spec, pe)),
                (ex1.prepare(ps, *sets), "exchanges", None, sets[1]["a"],
                 expected(arrays["a"], pe))):
            assert pr.can_start
            for call in (pr.test, pr.wait):
                with pytest.raises(redist.ExecError, match="no run started"):
                    call()
            d[...] = 0
            pr.start()
            with pytest.raises(redist.ExecError, match="in flight"):
                pr.start()
            with pytest.raises(redist.ExecError, match="in flight"):
                pr.run()
            while not pr.test():
                pass
            rep = pr.wait(report=True)
            assert rep[key] == want if want is not None else rep[key] >= 0
            agree(np.array_equal(d, w), "exact after wait")
            d[...] = 0
            pr.start()
            pr.free()  # waits for the run in flight
            assert pr.freed
            agree(np.array_equal(d, w), "exact after a free in flight")
            with pytest.raises(ValueError, match="freed"):
                pr.start()


# ------------------------------------------------------- symmetric arrays

def sym_copy(a):
    """A symmetric copy of `a` (collective)."""
    s = redist.shmem.empty(a.shape, a.dtype)
    s[...] = a
    return s


def test_symmetric_alloc():
    sh = redist.shmem
    live = redist._redist.shmem_live()
    a = sh.zeros((3, pe + 1), "f32")        # each PE its own shape
    b = sh.empty(5, "bf16")                  # uint16, NumPy's bf16 view
    z = sh.empty((0, 4), np.int64)           # an empty block
    w = sh.zeros((3, 4))
    agree(a.shape == (3, pe + 1) and a.dtype == np.float32 and
          not a.any() and a.flags.c_contiguous and a.flags.writeable and
          b.shape == (5,) and b.dtype == np.uint16 and z.size == 0 and
          all(sh.is_symmetric(x) for x in (a, b, z)) and
          not sh.is_symmetric(np.zeros(3)) and
          sh.is_symmetric(w[1:]) and not sh.is_symmetric(w[:, ::2]) and
          redist._redist.shmem_live() == live + 4, "allocations")
    # the same objects on every PE: one PE's address is every PE's
    addr = np.array([a.__array_interface__["data"][0]], np.int64)
    every = np.zeros(npes, np.int64)
    _flags.execute(redist.plan(redist.Spec({"pe": npes}, (npes,), "i64",
                                           ("pe",), ())), addr, every)
    agree(len(set(every.tolist())) == 1, "same address on every PE")
    v = a[1:]                                 # a view keeps the memory
    del a, b, z, w
    agree(redist._redist.shmem_live() == live + 1 and v.shape[0] == 2,
          "freed with the last reference")
    del v
    agree(redist._redist.shmem_live() == live, "view dropped")
    sh.collect()
    agree(redist._redist.shmem_released() == [], "given back")
    # released on some PEs only: kept until every PE has released it
    # (shmem_free is collective; Python frees at its own times)
    keep = sh.zeros(8)
    addr = keep.__array_interface__["data"][0]
    if pe != 0:
        del keep
    sh.collect()
    agree(redist._redist.shmem_released() == ([] if pe == 0 else [addr]),
          "not given back while PE 0 holds it")
    keep = None
    sh.collect()
    agree(redist._redist.shmem_released() == [], "given back by all")
    # freed memory is reused: far more than the heap, one array at a time
    for _ in range(24):
        big = sh.empty(16 << 20, np.uint8)
        del big
    agree(redist._redist.shmem_live() == live, "no leak")


def test_symmetric_alloc_fails_together():
    sh = redist.shmem
    culprit = npes - 1
    fails_together(lambda: sh.empty((-1,) if pe == culprit else (4,)),
                   culprit, "negative dimension")
    fails_together(lambda: sh.zeros(3, "f7" if pe == culprit else "f32"),
                   culprit, "dtype 'f7'")
    # a heap too small: MemoryError on every PE, nothing kept (every PE
    # asks for the largest request, so every heap refuses it)
    live = redist._redist.shmem_live()
    try:
        sh.empty(1 << 50 if pe == culprit else 8, np.uint8)
        got = None
    except MemoryError as e:
        got = e
    agree(got is not None and "symmetric heap has no room for "
          f"{1 << 50} bytes" in str(got), repr(got))
    agree(redist._redist.shmem_live() == live, "nothing allocated")
    ok = sh.zeros(4)
    agree(sh.is_symmetric(ok), "allocation works after the failures")


@pytest.mark.parametrize("seed", range(12))
def test_symmetric_random_exact(seed):
    rng = random.Random(7000 * npes + seed)
    spec = random_spec(rng, npes)
    plan = redist.plan(spec, objective=rng.choice(["time", "bytes"]))
    want = block(spec, pe, "dst")
    psrc = block(spec, pe, "src")
    src = sym_copy(psrc)
    dst = redist.shmem.zeros(spec.dst_block_shape(pe), spec.np_dtype)
    pdst = np.zeros(spec.dst_block_shape(pe), spec.np_dtype)
    culprit = rng.randrange(npes)
    with redist.shmem.Executor(spec.mesh, no_ptr=seed % 4 == 3) as ex:
        priv = ex.execute(plan, psrc, pdst, report=True)
        agree(np.array_equal(pdst, want), f"private {spec!r}")
        sym = ex.execute(plan, src, dst, report=True)
        agree(np.array_equal(dst, want), f"symmetric {spec!r}")
        agree(np.array_equal(src, psrc) and not sym["writes_src"], "src kept")
        # symmetric buffers need no more scratch than private ones
        agree(sym["scratch_bytes"] <= priv["scratch_bytes"], f"{sym} {priv}")
        prepared_runs(ex, plan, src, dst, want)
        # one PE passes private arrays: every PE takes the private path
        pdst[...] = 0
        dst[...] = 0
        mixed = ex.execute(plan, psrc if pe == culprit else src,
                           pdst if pe == culprit else dst, report=True)
        agree(np.array_equal(pdst if pe == culprit else dst, want),
              f"mixed {spec!r}")
        agree(mixed["scratch_bytes"] == priv["scratch_bytes"],
              f"mixed takes the private path: {mixed} {priv}")
        with ex.prepare(plan, psrc if pe == culprit else src,
                        pdst if pe == culprit else dst) as pr:
            pdst[...] = 0
            dst[...] = 0
            pr.run()
            agree(np.array_equal(pdst if pe == culprit else dst, want),
                  "mixed prepared")
        # with preserve_src=False the consumed source is symmetric too
        dst[...] = 0
        ex.execute(plan, src, dst, preserve_src=False)
        agree(np.array_equal(dst, want), "consumed symmetric src")


def test_symmetric_puts_straight():
    """An all_to_all on symmetric arrays puts into dst: no scratch; on
    private arrays, or with one PE's private, it goes through scratch."""
    spec = redist.Spec({"x": npes}, (4 * npes, 2 * npes), "f64",
                       ("x", None), (None, "x"))
    plan = redist.plan(spec)
    full = np.arange(8 * npes * npes, dtype=np.float64).reshape(spec.shape)
    psrc = np.ascontiguousarray(full[spec.src_slices(pe)])
    want = full[spec.dst_slices(pe)]
    src = sym_copy(psrc)
    dst = redist.shmem.zeros(spec.dst_block_shape(pe))
    pdst = np.zeros(spec.dst_block_shape(pe))
    with redist.shmem.Executor(spec.mesh) as ex:
        for what, s, d, out, straight in (
                ("symmetric", src, dst, dst, True),
                ("private", psrc, pdst, pdst, npes == 1),
                ("mixed", psrc if pe == 0 else src,
                 pdst if pe == 0 else dst, pdst if pe == 0 else dst,
                 npes == 1)):
            out[...] = 0
            rep = ex.execute(plan, s, d, report=True)
            agree(np.array_equal(out, want) and
                  (rep["scratch_allocations"] == 0) == straight,
                  f"{what}: {rep}")


def test_symmetric_bad_arrays_fail_together():
    spec = redist.Spec({"x": npes}, (2 * npes, 4), "f64", ("x", None), ())
    plan = redist.plan(spec)
    full = np.arange(8 * npes, dtype=np.float64).reshape(2 * npes, 4)
    src = sym_copy(np.ascontiguousarray(full[spec.src_slices(pe)]))
    culprit = npes - 1
    with redist.shmem.Executor(spec.mesh) as ex:
        def wrong_dtype():
            dst = redist.shmem.zeros(spec.dst_block_shape(pe),
                                     "f32" if pe == culprit else "f64")
            ex.execute(plan, src, dst)
        fails_together(wrong_dtype, culprit, "dtype is f64")

        def wrong_shape():
            shape = spec.dst_block_shape(pe)
            dst = redist.shmem.zeros((shape[0] + 1,) + shape[1:]
                                     if pe == culprit else shape)
            ex.execute(plan, src, dst)
        fails_together(wrong_shape, culprit, "dst")

        def not_contiguous():
            shape = spec.dst_block_shape(pe)
            wide = redist.shmem.zeros(shape[:-1] + (2 * shape[-1],))
            good = redist.shmem.zeros(shape)
            ex.execute(plan, src, wide[..., ::2] if pe == culprit else good)
        fails_together(not_contiguous, culprit, "contiguous")

        def read_only():
            dst = redist.shmem.zeros(spec.dst_block_shape(pe))
            if pe == culprit:
                dst.setflags(write=False)
            with ex.prepare(plan, src, dst):
                pass
        fails_together(read_only, culprit, "writable")
        dst = redist.shmem.zeros(spec.dst_block_shape(pe))
        ex.execute(plan, src, dst)
        agree(np.array_equal(dst, full), "after the failures")


def test_zz_stop_keeps_symmetric_arrays():
    """Last (it finalizes OpenSHMEM): arrays alive at stop() keep their
    contents as private memory and stay writable; freeing them later
    does nothing collective; nothing runs afterwards."""
    sh = redist.shmem
    a = sh.zeros((64, 1024), np.int32)       # pages of its own
    b = sh.empty(3, np.float64)              # shares a page with others
    a[...] = pe + 1
    b[...] = [1.5, 2.5, 3.5]
    view = a[10:20]
    agree(True, "before stop")               # last collective of the file
    global _flags
    _flags.free()
    sh.stop()
    assert not sh.is_symmetric(a)
    assert (a == pe + 1).all() and list(b) == [1.5, 2.5, 3.5]
    a[...] = 7
    b += 1
    assert view.sum() == 7 * view.size and list(b) == [2.5, 3.5, 4.5]
    del a, view, b                            # nothing to free: no hang
    with pytest.raises(redist.ExecError, match="finalized"):
        sh.empty(3)
