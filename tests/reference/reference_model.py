#!/usr/bin/env python3
"""Reference model of the contract (doc/spec-format.md) in Python: an executable reading of it.

Use it to cross-check the product (run a plan through `verify`, compare a
solver's optimum with `solve` on small specs). It is slow (exhaustive) and it
is not part of the product: do not port it; the product has its own solver,
verifier and exhaustive test search in C.

Type model (JAX PartitionSpec convention): a mesh is an ordered list of named
axes; a sharding gives, per array dim, the list of mesh axes splitting it,
MAJOR first (the last axis is the minor-most split); `partial` axes hold
pending reductions; every other axis is replicated.

Step semantics used to check a plan (bytes = bytes RECEIVED per device):
  slice(dim, axis)          axis free -> appended as minor of dim       0
  all_gather(dim, axis)     axis == minor of dim -> removed             (s-1)*local
  all_to_all(from,to,axis)  axis == minor of from -> minor of to        (s-1)/s*local
  reduce_scatter(dim,axis)  axis in partial -> minor of dim             (s-1)/s*local
  all_reduce(axis)          axis in partial -> replicated               2(s-1)/s*local
  permute                   same local shape, same partial              local
  exchange                  any type (direct point-to-point)           exact need

Commands:
  reference_model.py solve SPEC.json             exhaustive optimum (peak, bytes, steps)
  reference_model.py plan SPEC.json              that optimum as plan JSON
  reference_model.py verify SPEC.json PLAN.json  replay a plan, compare with the optimum
"""
import heapq
import itertools
import json
import sys
from fractions import Fraction

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1,
               "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
               "c64": 8, "c128": 16, "bool": 1}


class Spec:
    def __init__(self, d):
        mesh = d["mesh"]
        if isinstance(mesh, dict) and "axes" in mesh:
            mesh = mesh["axes"]
        if isinstance(mesh, dict):
            mesh = list(mesh.items())
        self.axes = [(a[0], int(a[1])) if isinstance(a, (list, tuple))
                     else (a["name"], int(a["size"])) for a in mesh]
        self.size = dict(self.axes)
        self.shape = [int(x) for x in d["shape"]]
        self.esize = DTYPE_BYTES[d.get("dtype", "f32")]
        self.src = parse_type(d["from"], len(self.shape))
        self.dst = parse_type(d["to"], len(self.shape))
        self.name = d.get("name", "?")

    def local(self, t):
        dims, _ = t
        out = []
        for n, axs in zip(self.shape, dims):
            p = 1
            for a in axs:
                p *= self.size[a]
            if n % p:
                return None
            out.append(n // p)
        return tuple(out)

    def elems(self, t):
        l = self.local(t)
        r = 1
        for x in l:
            r *= x
        return r


def parse_type(d, ndims):
    dims = d["dims"] if isinstance(d, dict) else d
    part = d.get("partial", []) if isinstance(d, dict) else []
    dims = [tuple([x] if isinstance(x, str) else (x or [])) for x in dims]
    if len(dims) != ndims:
        raise SystemExit("rank mismatch")
    return (tuple(dims), frozenset(part))


def used(t):
    dims, part = t
    s = set(part)
    for axs in dims:
        s.update(axs)
    return s


def moves(spec, t):
    """Yield (op, args, new_type, bytes_recv) for every collective step but permute."""
    dims, part = t
    loc = spec.local(t)
    el = spec.elems(t)
    free = [a for a, _ in spec.axes if a not in used(t)]
    e = spec.esize
    for i, axs in enumerate(dims):
        for a in free:
            if loc[i] % spec.size[a] == 0:
                nd = list(dims); nd[i] = axs + (a,)
                yield ("slice", (i, a), (tuple(nd), part), 0)
        if axs:
            a = axs[-1]; s = spec.size[a]
            nd = list(dims); nd[i] = axs[:-1]
            yield ("all_gather", (i, a), (tuple(nd), part), (s - 1) * el * e)
            for j in range(len(dims)):
                if j != i and loc[j] % s == 0:
                    nd2 = list(nd); nd2[j] = dims[j] + (a,)
                    yield ("all_to_all", (i, j, a), (tuple(nd2), part),
                           Fraction((s - 1) * el * e, s))
    for a in part:
        s = spec.size[a]
        np_ = part - {a}
        yield ("all_reduce", (a,), (dims, np_), Fraction(2 * (s - 1) * el * e, s))
        for i in range(len(dims)):
            if loc[i] % s == 0:
                nd = list(dims); nd[i] = dims[i] + (a,)
                yield ("reduce_scatter", (i, a), (tuple(nd), np_),
                       Fraction((s - 1) * el * e, s))


def all_types(spec, part):
    """All types with the given partial set (axes not in part: replicated or in a dim)."""
    names = [a for a, _ in spec.axes if a not in part]
    nd = len(spec.shape)
    res = []
    # assign each axis to a dim or -1 (replicated), then order within dims
    for assign in itertools.product(range(-1, nd), repeat=len(names)):
        groups = [[n for n, g in zip(names, assign) if g == i] for i in range(nd)]
        for perms in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
            t = (tuple(tuple(p) for p in perms), frozenset(part))
            if spec.local(t) is not None:
                res.append(t)
    return res


def solve(spec, peak_cap=None, max_states=400000):
    """Lexicographic optimum: min peak local bytes, then min bytes, then min steps."""
    src, dst = spec.src, spec.dst
    if spec.local(src) is None or spec.local(dst) is None:
        return None
    if not dst[1] <= src[1]:
        return None
    e = spec.esize
    # permute groups keyed by (local shape, partial)
    perm_groups = {}
    for part in {src[1]} | _partial_subsets(src[1]):
        for t in all_types(spec, part):
            perm_groups.setdefault((spec.local(t), t[1]), []).append(t)
    base = max(spec.elems(src), spec.elems(dst)) * e
    caps = sorted({spec.elems(t) * e for g in perm_groups.values() for t in g if spec.elems(t) * e >= base})
    for cap in caps:
        if peak_cap is not None and cap > peak_cap:
            break
        r = _dijkstra(spec, cap, perm_groups, max_states)
        if r is not None:
            return {"peak_bytes": cap, "bytes": r[0], "steps": r[1], "path": r[2]}
    return None


def _partial_subsets(p):
    p = list(p)
    return {frozenset(c) for k in range(len(p) + 1) for c in itertools.combinations(p, k)}


def _dijkstra(spec, cap, perm_groups, max_states):
    e = spec.esize
    src, dst = spec.src, spec.dst
    dist = {src: (Fraction(0), 0)}
    prev = {}
    pq = [(Fraction(0), 0, 0, src)]
    cnt = 1
    while pq:
        b, st, _, t = heapq.heappop(pq)
        if dist.get(t) != (b, st):
            continue
        if t == dst:
            path = []
            while t in prev:
                t0, op = prev[t]
                path.append(op)
                t = t0
            return (b, st, list(reversed(path)))
        if len(dist) > max_states:
            return None
        outs = list(moves(spec, t))
        el = spec.elems(t)
        for t2 in perm_groups.get((spec.local(t), t[1]), []):
            if t2 != t:
                outs.append(("permute", (), t2, el * e))
        for op, args, t2, by in outs:
            if spec.local(t2) is None or spec.elems(t2) * e > cap:
                continue
            nb, ns = b + by, st + (0 if op == "slice" else 1)
            if t2 not in dist or (nb, ns) < dist[t2]:
                dist[t2] = (nb, ns)
                prev[t2] = (t, (op, args, t2))
                heapq.heappush(pq, (nb, ns, cnt, t2)); cnt += 1
    return None


def block(spec, t, coords):
    """Box of global indices held by device at coords (dict axis->coord)."""
    box = []
    for n, axs in zip(spec.shape, t[0]):
        p = 1
        idx = 0
        for a in axs:
            idx = idx * spec.size[a] + coords[a]
            p *= spec.size[a]
        l = n // p
        box.append((idx * l, idx * l + l))
    return box


def lower_bound_bytes(spec, src=None, dst=None):
    """Max over devices of bytes that device must receive (non-partial only)."""
    src = spec.src if src is None else src
    dst = spec.dst if dst is None else dst
    if src[1] or dst[1]:
        return None
    worst = 0
    for cs in itertools.product(*[range(s) for _, s in spec.axes]):
        c = dict(zip([a for a, _ in spec.axes], cs))
        S, T = block(spec, src, c), block(spec, dst, c)
        tv = 1
        iv = 1
        for (s0, s1), (t0, t1) in zip(S, T):
            tv *= t1 - t0
            iv *= max(0, min(s1, t1) - max(s0, t0))
        worst = max(worst, tv - iv)
    return worst * spec.esize


def type_from_json(d, ndims):
    return parse_type(d, ndims)


def verify(spec, plan):
    """Replay plan steps; return dict with validity, peak, bytes."""
    t = spec.src
    e = spec.esize
    peak = max(spec.elems(spec.src), spec.elems(spec.dst)) * e
    peak_seen = spec.elems(t) * e
    total = Fraction(0)
    ncoll = 0
    errors = []
    for k, step in enumerate(plan.get("steps", [])):
        op = step.get("op")
        after = step.get("after")
        want = type_from_json(after, len(spec.shape)) if after is not None else None
        ok = None
        if op == "permute" or op == "exchange":
            if want is None:
                errors.append(f"step {k}: {op} without 'after'")
                break
            if op == "permute" and (spec.local(want) != spec.local(t) or want[1] != t[1]):
                errors.append(f"step {k}: permute changes local shape or partial")
                break
            if op == "permute":
                by = spec.elems(t) * e
            else:
                if spec.local(want) is None or want[1] != t[1]:
                    errors.append(f"step {k}: exchange to an invalid type or changes partial")
                    break
                by = lower_bound_bytes(spec, t, want)
                if by is None:
                    errors.append(f"step {k}: exchange with partial axes is not checkable")
                    break
            ok = (want, by)
        else:
            for mop, args, t2, by in moves(spec, t):
                if mop != op:
                    continue
                if want is not None and t2 != want:
                    continue
                if want is None and not _args_match(step, mop, args):
                    continue
                ok = (t2, by)
                break
        if ok is None:
            errors.append(f"step {k}: illegal {op} from {fmt(t)} to {fmt(want) if want else '?'}")
            break
        t, by = ok
        total += by
        if op != "slice":
            ncoll += 1
        peak_seen = max(peak_seen, spec.elems(t) * e)
    if not errors and t != spec.dst:
        errors.append(f"plan ends at {fmt(t)}, target {fmt(spec.dst)}")
    return {"valid": not errors, "errors": errors, "peak_bytes": peak_seen,
            "bound_bytes": peak, "bytes": total, "collectives": ncoll}


def _args_match(step, op, args):
    if op in ("slice", "all_gather", "reduce_scatter"):
        return step.get("dim") == args[0] and step.get("axis", args[1]) == args[1]
    if op == "all_to_all":
        return step.get("from_dim") == args[0] and step.get("to_dim") == args[1]
    if op == "all_reduce":
        return step.get("axis") == args[0]
    return False


def fmt(t):
    if t is None:
        return "None"
    dims, part = t
    s = "[" + ", ".join("{" + ",".join(a) + "}" for a in dims) + "]"
    if part:
        s += " partial{" + ",".join(sorted(part)) + "}"
    return s


def main(argv):
    if len(argv) >= 2 and argv[0] == "solve":
        spec = Spec(json.load(open(argv[1])))
        r = solve(spec)
        if r is None:
            print(json.dumps({"feasible": False}))
            return 1
        print(json.dumps({"feasible": True, "peak_bytes": r["peak_bytes"], "bytes": float(r["bytes"]),
                          "steps": r["steps"], "path": [[op, list(a)] for op, a, _ in r["path"]],
                          "lower_bound_bytes": lower_bound_bytes(spec)}))
        return 0
    if len(argv) >= 2 and argv[0] == "plan":
        # reference plan in the plan-JSON shape of doc/spec-format.md (for testing bars)
        spec = Spec(json.load(open(argv[1])))
        r = solve(spec)
        if r is None:
            return 3
        steps = []
        for op, a, t2 in r["path"]:
            st = {"op": op}
            if op in ("slice", "all_gather", "reduce_scatter"):
                st.update(dim=a[0], axis=a[1])
            elif op == "all_to_all":
                st.update(from_dim=a[0], to_dim=a[1], axis=a[2])
            elif op == "all_reduce":
                st.update(axis=a[0])
            st["after"] = {"dims": [list(d) for d in t2[0]], "partial": sorted(t2[1])}
            steps.append(st)
        print(json.dumps({"steps": steps}))
        return 0
    if len(argv) >= 3 and argv[0] == "verify":
        spec = Spec(json.load(open(argv[1])))
        plan = json.load(open(argv[2]))
        v = verify(spec, plan)
        r = solve(spec)
        out = {"valid": v["valid"], "errors": v["errors"], "peak_bytes": v["peak_bytes"],
               "bound_bytes": v["bound_bytes"], "bytes": float(v["bytes"]),
               "collectives": v["collectives"]}
        if r:
            out.update({"opt_peak_bytes": r["peak_bytes"], "opt_bytes": float(r["bytes"]),
                        "opt_steps": r["steps"]})
        print(json.dumps(out))
        return 0 if v["valid"] else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
