"""Data patterns and random specs shared by the execution tests (no MPI
here: the OpenSHMEM tests use them too).  Every element of a block
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
