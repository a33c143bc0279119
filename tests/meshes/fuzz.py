#!/usr/bin/python3
"""Random small two-mesh specs, each run through `oracle.py compare`.

  fuzz.py --redistplan PATH [--cases 50] [--seed 1] [--keep DIR]

Each spec: two meshes of at most 4 devices and 2 axes (disjoint,
overlapping, the same devices, the same devices in another order, or
the source mesh's axes reversed over its devices in the transposed
order), a
1- or 2-dim array of small (often uneven) sizes, a random source type
(partial axes included) and a random non-partial target type, random split
rules.  Prints one line per case and a summary; exit 1 if any case FAILs
or ERRORs.  With --keep, the specs that did not agree are written there.
"""

import argparse
import io
import itertools
import json
import os
import random
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

AXES = ["a", "b"]
DTYPES = ["f32", "bf16", "i8", "f64"]


def rand_mesh(rng, name_prefix):
    shapes = [[2], [3], [4], [2, 2]]
    sizes = rng.choice(shapes)
    names = rng.sample(["x", "y", "z", "w"], len(sizes))
    return [[n, s] for n, s in zip(names, sizes)]


def rand_type(rng, axes, ndim, allow_partial):
    dims = [[] for _ in range(ndim)]
    partial = []
    for a, _ in axes:
        r = rng.random()
        if allow_partial and r < 0.3:
            partial.append(a)
        elif r < 0.8:
            dims[rng.randrange(ndim)].append(a)
    for d in dims:
        rng.shuffle(d)
    t = {"dims": dims}
    if partial:
        t["partial"] = partial
    r = rng.random()
    if r < 0.2:
        t["split"] = "balanced"
    elif r < 0.3:
        t["split"] = "chunk"
    return t


def transposed(ma):
    """Mesh B = A's axes in reverse order over the same devices, listed in
    the order that makes B's coordinates A's reversed (a regrouping that
    the planner may solve as a one-mesh plan)."""
    sizes = [s for _, s in ma]
    mb = [[n, s] for n, s in zip(["p", "q", "r", "s"], reversed(sizes))]
    db = []
    for cb in itertools.product(*[range(s) for s in reversed(sizes)]):
        r = 0
        for c, s in zip(reversed(cb), sizes):
            r = r * s + c
        db.append(r)
    return mb, db


def rand_spec(rng, k):
    ma, mb = rand_mesh(rng, "s"), rand_mesh(rng, "t")
    na, nb = oracle.prod(s for _, s in ma), oracle.prod(s for _, s in mb)
    rel = rng.choice(["disjoint", "overlap", "same", "reorder", "transpose"])
    da = list(range(na))
    if rel == "transpose":
        mb, db = transposed(ma)
    elif rel == "disjoint":
        db = list(range(na, na + nb))
    elif rel == "overlap":
        off = rng.randrange(1, na + 1)
        db = list(range(off, off + nb))
    else:
        pool = list(range(max(na, nb)))
        db = pool[:nb]
        if rel == "reorder":
            rng.shuffle(db)
    ndim = rng.choice([1, 2, 2])
    shape = [rng.choice([2, 3, 4, 5, 6, 7, 8, 10, 12]) for _ in range(ndim)]
    src = rand_type(rng, ma, ndim, True)
    dst = rand_type(rng, mb, ndim, False)
    src["mesh"], dst["mesh"] = "src", "dst"
    return {"name": "fuzz-%d-%s" % (k, rel),
            "meshes": {"src": {"axes": ma, "devices": da},
                       "dst": {"axes": mb, "devices": db}},
            "shape": shape, "dtype": rng.choice(DTYPES),
            "from": src, "to": dst,
            "reduce": rng.choice(["sum", "sum", "max", "min", "prod"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--redistplan", required=True)
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write non-agreeing specs here")
    ap.add_argument("--max-a", type=int, default=2)
    ap.add_argument("--max-b", type=int, default=2)
    ap.add_argument("--layouts", choices=("ceil", "rules"), default="ceil")
    ap.add_argument("--explore", action="store_true")
    ap.add_argument("--permute", action="store_true")
    ap.add_argument("--cross-sums", action="store_true",
                    help="plans whose transfer sums pending contributions "
                    "too (redistplan and the search)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tally = {}
    bad = 0
    # its own directory: two runs at once (meshes-model-fuzz and -cross)
    # name their specs alike
    tmp = args.keep or tempfile.mkdtemp(prefix="redist-fuzz-")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    for k in range(args.cases):
        spec = rand_spec(rng, k)
        path = os.path.join(tmp, spec["name"] + ".json")
        with open(path, "w") as f:
            json.dump(spec, f, indent=1)
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = oracle.main(["compare", path, "--redistplan", args.redistplan,
                              "--max-a", str(args.max_a),
                              "--max-b", str(args.max_b),
                              "--layouts", args.layouts]
                             + (["--explore"] if args.explore else [])
                             + (["--permute"] if args.permute else [])
                             + (["--cross-sums"] if args.cross_sums
                                else []))
        out = buf.getvalue().strip()
        word = out.split(" ", 1)[0] if out else "ERROR"
        tally[word] = tally.get(word, 0) + 1
        print(out)
        if rc != 0:
            bad += 1
        if word == "AGREE" or not args.keep:
            if not args.keep or word == "AGREE":
                try:
                    os.unlink(path)
                except OSError:
                    pass
    if not args.keep:
        try:
            os.rmdir(tmp)
        except OSError:
            pass
    print("summary: " + ", ".join("%s %d" % kv for kv in sorted(tally.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
