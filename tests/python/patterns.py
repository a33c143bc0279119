"""Data patterns and random specs (one mesh, two meshes, many arrays)
shared by the execution tests (no MPI here: the OpenSHMEM tests use them
too).  Every element of a block
identifies its global index; partial sources hold contributions whose
reduction is exactly the value."""
import numpy as np

import redist

# ------------------------------------------------------------- pattern

PERIOD = {"f32": 2**24, "f64": 2**53, "i32": 2**31, "i64": 2**62, "u8": 2**8,
          "u32": 2**32, "c128": 2**53, "f16": 2**11}


def lin(coords, axes, sizes):
    """Linear coordinate of a device over `axes` (mesh order) and its count."""
    k, n = 0, 1
    for a in axes:
        k, n = k * sizes[a] + coords[a], n * sizes[a]
    return k, n


def values(spec, sl, r, which):
    """Device r's block of type `which` ("src" or "dst") under the pattern,
    as int64 values (real part)."""
    mesh = spec.mesh
    sizes = mesh.shape
    coords = dict(zip(mesh.names, mesh.coords(r)))
    order = mesh.names
    P = PERIOD[spec.dtype]
    g = np.arange(int(np.prod(spec.shape, dtype=np.int64)), dtype=np.int64)
    g = g.reshape(spec.shape)[sl]
    kept = [a for a in order if a in spec.dst.partial]
    k, _ = lin(coords, kept, sizes)
    v = (g + 7919 * k) % P
    if which == "dst":
        return v
    reduced = [a for a in order if a in spec.src.partial and a not in spec.dst.partial]
    q, Q = lin(coords, reduced, sizes)
    if Q == 1:
        return v
    holder = (g + k) % Q == q
    if spec.reduce == "sum":
        return v // Q + (q < v % Q)
    if spec.reduce == "prod":
        return np.where(holder, v, 1)
    if spec.reduce == "max":
        return np.where(holder, v, 0)  # every value is >= 0
    return np.where(holder, v, P - 1)  # min


def block(spec, r, which):
    sl = spec.src_slices(r) if which == "src" else spec.dst_slices(r)
    v = values(spec, sl, r, which)
    dt = spec.np_dtype
    if spec.dtype == "c128":
        return (v.astype(np.float64) + 1j * (v % 1000).astype(np.float64)).astype(dt)
    return v.astype(dt)


# ------------------------------------------------------------ random specs

def factor(n):
    f, p = [], 2
    while n > 1:
        while n % p == 0:
            f.append(p)
            n //= p
        p += 1
    return f


def random_spec(rng, size):
    """A random spec on exactly `size` devices: prime factors spread over
    1-3 axes (sometimes one of size 1), 1-3 dims, random source / target
    types, a partial source one time in three."""
    naxes = rng.randint(1, 3)
    sizes = [1] * naxes
    for p in factor(size):
        sizes[rng.randrange(naxes)] *= p
    names = ["a", "b", "c"][:naxes]
    mesh = redist.Mesh(list(zip(names, sizes)))
    nd = rng.randint(1, 3)
    dtype = rng.choice(["f32", "f64", "i32", "i64", "u8", "c128"])
    reduce = rng.choice(["sum", "sum", "max", "min", "prod"])

    def rtype(partial_ok):
        dims = [[] for _ in range(nd)]
        partial = []
        for a in rng.sample(names, naxes):
            c = rng.randrange(nd + 2)
            if c < nd:
                dims[c].append(a)
            elif c == nd + 1 and a in partial_ok:
                partial.append(a)
        return redist.Type(tuple(tuple(d) for d in dims), tuple(partial))

    src = rtype(names if rng.randrange(3) == 0 else [])
    dst = rtype(src.partial if rng.randrange(2) == 0 else [])
    shape = []
    sz = dict(zip(names, sizes))
    for i in range(nd):
        k = 1
        for t in (src, dst):
            m = 1
            for a in t.dims[i]:
                m *= sz[a]
            k = k * m // np.gcd(k, m)
        shape.append(k * rng.randint(1, 3) * rng.choice([1, 2]))
    return redist.Spec(mesh, shape, dtype, src, dst, reduce)


# ------------------------------------------- two meshes and many arrays

DTYPES = ["f32", "f64", "i32", "i64", "u8"]


def full_array(spec):
    """The global array of a non-partial spec: distinct values per index
    (modulo the dtype's exact range)."""
    n = int(np.prod(spec.shape, dtype=np.int64))
    g = (np.arange(n, dtype=np.int64) * 7 + 3) % PERIOD[spec.dtype]
    return g.astype(spec.np_dtype).reshape(spec.shape)


def src_of(spec, r, full=None):
    """Device r's source block, or None outside the source's mesh."""
    sl = spec.src_slices(r)
    if sl is None:
        return None
    if spec.src.partial:
        return block(spec, r, "src")
    return np.ascontiguousarray((full_array(spec) if full is None else full)[sl])


def dst_of(spec, r):
    shape = spec.dst_block_shape(r)
    return None if shape is None else np.zeros(shape, spec.np_dtype)


def expected(spec, r):
    sl = spec.dst_slices(r)
    if spec.src.partial or spec.dst.partial:
        return block(spec, r, "dst")
    return full_array(spec)[sl]


def random_mesh(rng, name, n, last=False):
    """A mesh on k random devices of 0..n-1 (with n-1 among them: last)."""
    k = rng.randint(1, n)
    devs = rng.sample(range(n), k)
    if last and n - 1 not in devs:
        devs[rng.randrange(k)] = n - 1
    naxes = rng.randint(1, 2)
    sizes = [1] * naxes
    for p in factor(k):
        sizes[rng.randrange(naxes)] *= p
    return redist.Mesh(list(zip(["x", "y"], sizes)), devices=devs, name=name)


def random_type(rng, mesh, nd):
    dims = [[] for _ in range(nd)]
    for a in rng.sample(list(mesh.names), len(mesh.names)):
        c = rng.randrange(nd + 1)
        if c < nd:
            dims[c].append(a)
    return redist.Type(tuple(tuple(d) for d in dims), split="balanced")


def random_two_mesh(rng, size, cover=False):
    """Two meshes over (some of) `size` devices: random device lists
    (disjoint, overlapping or the same devices reshaped), 1-2 axes each;
    uneven dims split balanced.  cover: the union runs on all devices (a
    set's job has exactly its device count)."""
    a = random_mesh(rng, "a", size, last=cover)
    b = random_mesh(rng, "b", size)
    nd = rng.randint(1, 2)
    shape = tuple(rng.randint(1, 13) for _ in range(nd))
    return (a, b), shape, rng.choice(DTYPES), random_type(rng, a, nd), \
        random_type(rng, b, nd)


def random_set(rng, size, two):
    """3-5 arrays: on two random meshes, or on one mesh of all `size`
    devices with random types (pending reductions included,
    random_spec)."""
    n = rng.randint(3, 5)
    if two:
        meshes, _, _, _, _ = random_two_mesh(rng, size, cover=True)
        arrays = {}
        for i in range(n):
            nd = rng.randint(1, 2)
            arrays[f"p{i}"] = dict(
                shape=tuple(rng.randint(1, 13) for _ in range(nd)),
                dtype=rng.choice(DTYPES),
                src=random_type(rng, meshes[0], nd),
                dst=random_type(rng, meshes[1], nd))
        return redist.Spec.many(meshes, arrays)
    first = random_spec(rng, size)
    specs = [first]
    for _ in range(500):  # specs of random_spec's that share first's mesh
        s = random_spec(rng, size)
        if s.mesh == first.mesh:
            specs.append(s)
        if len(specs) == n:
            break
    return redist.Spec.many(first.mesh, {f"p{i}": dict(
        shape=s.shape, dtype=s.dtype, src=s.src, dst=s.dst, reduce=s.reduce)
        for i, s in enumerate(specs)})


def tight_budget(arrays, **options):
    """A budget that needs more than one round where the arrays use
    scratch: the least that plans (redist's error names it); options go
    to plan_set."""
    budget = 1
    for _ in range(len(arrays) + 1):
        try:
            return redist.plan_set(redist.Arrays.from_json(
                dict(arrays.to_json_obj(), budget_bytes=budget)), **options)
        except redist.PlanError as e:
            assert e.status == redist.ERR_INFEASIBLE
            budget = int(str(e).rsplit("works is ", 1)[1])
    raise AssertionError("no budget plans")


def check_set(ps, me, execute, prepare, agree):
    """Run the PlanSet `ps` on device `me` and check every element, with
    `agree(ok, what)` over the job: execute(ps, srcs, dsts) -> report
    (blocks by name, the empty ones left out) once, then
    prepare(ps, srcs, dsts) -> Prepared (lists in the set's order) run
    twice; the sources are kept."""
    arrays, names = ps.arrays, ps.names
    srcs = {n: src_of(arrays[n], me) for n in names}
    dsts = {n: dst_of(arrays[n], me) for n in names}
    keep = {n: None if v is None else v.copy() for n, v in srcs.items()}
    # a device passes only the blocks it holds: missing names are empty
    given = {n: v for n, v in srcs.items() if v is not None}
    rep = execute(ps, given, dsts)
    agree(rep["exchanges"] >= 0 and rep["scratch_high_water"] <= max(
        ps.scratch_bytes, rep["scratch_bytes"]), "report")
    for n in names:
        agree(dsts[n] is None or np.array_equal(dsts[n], expected(arrays[n], me)),
              f"array {n} of {arrays.to_json_obj()}")
        agree(srcs[n] is None or np.array_equal(srcs[n], keep[n]), "src kept")
    # prepared once, run many; lists in the set's order work too
    with prepare(ps, [srcs[n] for n in names], [dsts[n] for n in names]) as pr:
        for k in range(2):
            for v in dsts.values():
                if v is not None:
                    v[...] = 0
            pr.run()
            for n in names:
                agree(dsts[n] is None or
                      np.array_equal(dsts[n], expected(arrays[n], me)),
                      f"prepared run {k}, array {n}")
