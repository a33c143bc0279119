#!/usr/bin/env python3
"""Independent model of uneven dims (doc/spec-format.md section 7, doc/uneven.md).

Written from the contract and the documented layout model, not from the
solver: every device's data is an explicit set of global element indices,
every step is checked by set containment, and the optimum is found by
plain Dijkstra over every (type, layout) state of the model.

  uneven_model.py verify SPEC.json PLAN.json   replay a plan; compare it
                                               with the exhaustive optimum
                                               of the bytes objective
  uneven_model.py verify SPEC PLAN replay      replay only (a plan of the
                                               time objective)
  uneven_model.py random N SEED REDISTPLAN     N random small specs: plan
                                               each with REDISTPLAN (both
                                               objectives) and verify it

The model (doc/uneven.md): a layout gives each dim's block boundaries.
Source and target layouts come from the spec (ceil, balanced, chunk,
explicit blocks).  An intermediate type's layouts are the anchored ones:
per dim, the source's (or the target's) blocks merged to the longest
common prefix of the axis lists, the other when that prefix is empty, the
whole dim when both are, then the remaining axes cut each block with
chunk semantics (ceil within the block).  Objective (bytes): least peak
(every device within max(src_d, dst_d) if possible, else the least
largest held bytes), then the least sum over steps of the step's largest
per-device recv, then the fewest collectives.
"""
import heapq
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
from fractions import Fraction

DTYPE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1,
         "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
         "c64": 8, "c128": 16}
OPS = ("slice", "all_gather", "all_to_all", "reduce_scatter", "all_reduce",
       "permute")


def cdiv(a, b):
    return -(-a // b)


class Spec:
    def __init__(self, d):
        self.axes = [a for a, _ in d["mesh"]]
        self.size = {a: s for a, s in d["mesh"]}
        self.shape = list(d["shape"])
        self.es = DTYPE[d.get("dtype", "f32")]
        self.src = self.parse_type(d["from"])
        self.dst = self.parse_type(d["to"])
        self.src_l = self.rule_layout(self.src, d["from"].get("split", "ceil"),
                                      d["from"].get("blocks"))
        self.dst_l = self.rule_layout(self.dst, d["to"].get("split", "ceil"),
                                      d["to"].get("blocks"))
        self.devices = list(itertools.product(
            *[range(self.size[a]) for a in self.axes]))

    def parse_type(self, t):
        dims = []
        for x in t["dims"]:
            if x is None:
                x = []
            elif isinstance(x, str):
                x = [x]
            dims.append(tuple(x))
        return (tuple(dims), frozenset(t.get("partial") or []))

    def k(self, axes):
        p = 1
        for a in axes:
            p *= self.size[a]
        return p

    # ----------------------------------------------------------- rules
    def nested(self, base, axes):
        """Cut each block of `base` (boundaries) by axes, ceil per level."""
        bounds = [(base[j], base[j + 1]) for j in range(len(base) - 1)]
        for a in axes:
            s = self.size[a]
            nb = []
            for lo, hi in bounds:
                n = hi - lo
                c = cdiv(n, s)
                for j in range(s):
                    nb.append((lo + min(j * c, n), lo + min((j + 1) * c, n)))
            bounds = nb
        return tuple([b[0] for b in bounds] + [base[-1]])

    def rule_dim(self, axes, n, rule, blocks):
        k = self.k(axes)
        if blocks is not None:
            out = [0]
            for x in blocks:
                out.append(out[-1] + x)
            return tuple(out)
        if rule == "ceil":
            c = cdiv(n, k)
            return tuple(min(j * c, n) for j in range(k + 1))
        if rule == "balanced":
            q, r = divmod(n, k)
            return tuple(j * q + min(j, r) for j in range(k + 1))
        return self.nested((0, n), axes)  # chunk

    def rule_layout(self, t, rule, blocks):
        return tuple(self.rule_dim(t[0][i], self.shape[i], rule,
                                   blocks[i] if blocks else None)
                     for i in range(len(self.shape)))

    # ---------------------------------------------------- anchored model
    def anchored_dim(self, axes, i, prefer_src):
        def lcp(other):
            p = 0
            while p < len(axes) and p < len(other) and axes[p] == other[p]:
                p += 1
            return p
        ps, pd = lcp(self.src[0][i]), lcp(self.dst[0][i])
        choice = None
        if ps > 0 and (prefer_src or pd == 0):
            choice = (self.src[0][i], self.src_l[i], ps)
        elif pd > 0:
            choice = (self.dst[0][i], self.dst_l[i], pd)
        if choice is None:
            return self.nested((0, self.shape[i]), axes)
        lst, bnd, p = choice
        g = self.k(lst[p:])
        base = tuple(bnd[j * g] for j in range((len(bnd) - 1) // g + 1))
        return self.nested(base, axes[p:])

    def layouts(self, t):
        per_dim = [sorted({self.anchored_dim(t[0][i], i, ps)
                           for ps in (0, 1)})
                   for i in range(len(self.shape))]
        return [tuple(c) for c in itertools.product(*per_dim)]

    # ------------------------------------------------------- devices
    def block_index(self, axes, dev):
        b = 0
        for a in axes:
            b = b * self.size[a] + dev[self.axes.index(a)]
        return b

    def elems(self, t, lay, dev):
        ranges = []
        for i, axes in enumerate(t[0]):
            j = self.block_index(axes, dev)
            ranges.append(range(lay[i][j], lay[i][j + 1]))
        return frozenset(itertools.product(*ranges))

    def holdings(self, t, lay):
        return [self.elems(t, lay, d) for d in self.devices]

    def group(self, d, axis):
        x = self.axes.index(axis)
        return [e for e, dd in enumerate(self.devices)
                if all(dd[q] == d[q] for q in range(len(self.axes)) if q != x)]


def held_bytes(S, hold):
    return [len(h) * S.es for h in hold]


def step_eval(S, op, axis, bt, bhold, at, ahold):
    """Per-device recv (Fractions) of a legal step, or None (not local)."""
    recv = []
    for di, d in enumerate(S.devices):
        A, B = ahold[di], bhold[di]
        if op == "slice":
            if not A <= B:
                return None
            recv.append(Fraction(0))
        elif op in ("all_gather", "all_to_all"):
            union = frozenset().union(*[bhold[e] for e in S.group(d, axis)])
            if not A <= union:
                return None
            recv.append(Fraction(len(A - B) * S.es))
        elif op == "reduce_scatter":
            if not A <= B:
                return None
            recv.append(Fraction((S.size[axis] - 1) * len(A) * S.es))
        elif op == "all_reduce":
            if not A <= B:
                return None
            s = S.size[axis]
            recv.append(Fraction(2 * (s - 1) * len(A) * S.es, s))
        elif op == "permute":
            part = [S.axes.index(a) for a in bt[1]]
            if A and not any(bhold[e] == A for e, dd in enumerate(S.devices)
                             if all(dd[q] == d[q] for q in part)):
                return None
            recv.append(Fraction(0 if A == B else len(A) * S.es))
        elif op == "exchange":
            # every element a device lacks comes from some holder
            if bt[1] != at[1] or not A <= frozenset().union(*bhold):
                return None
            recv.append(Fraction(len(A - B) * S.es))
        else:
            raise ValueError(op)
    return recv


def type_moves(S, t):
    """(op, fields, axis, new type) by the contract, no divisibility."""
    dims, part = t
    used = set(a for d in dims for a in d) | set(part)
    nd = len(dims)
    out = []
    for i in range(nd):
        for a in S.axes:
            if a not in used and S.size[a] > 1:
                nd_ = list(dims)
                nd_[i] = dims[i] + (a,)
                out.append(("slice", {"dim": i}, a, (tuple(nd_), part)))
        if dims[i]:
            a = dims[i][-1]
            nd_ = list(dims)
            nd_[i] = dims[i][:-1]
            out.append(("all_gather", {"dim": i}, a, (tuple(nd_), part)))
            for j in range(nd):
                if j != i:
                    n2 = list(nd_)
                    n2[j] = nd_[j] + (a,)
                    out.append(("all_to_all", {"from_dim": i, "to_dim": j},
                                a, (tuple(n2), part)))
    for a in part:
        if a in S.dst[1]:
            continue
        rest = part - {a}
        out.append(("all_reduce", {}, a, (dims, rest)))
        for i in range(nd):
            nd_ = list(dims)
            nd_[i] = dims[i] + (a,)
            out.append(("reduce_scatter", {"dim": i}, a, (tuple(nd_), rest)))
    # permute: any type with the same block count per dim, same partial
    free = [a for a in S.axes if a not in part and S.size[a] > 1]
    want = [S.k(d) for d in dims]

    def rec(i, avail, acc):
        if i == nd:
            out.append(("permute", {}, None, (tuple(acc), part)))
            return
        for r in range(len(avail) + 1):
            for combo in itertools.permutations(avail, r):
                if S.k(combo) == want[i]:
                    rec(i + 1, [a for a in avail if a not in combo],
                        acc + [combo])
    rec(0, free, [])
    return out


def canon(S, t):
    dims = tuple(tuple(a for a in d if S.size[a] > 1) for d in t[0])
    return (dims, frozenset(a for a in t[1] if S.size[a] > 1))


def optimum(S):
    """(peak, bytes, collectives) of the best plan in the model."""
    src = (canon(S, S.src), S.src_l)
    dst = (canon(S, S.dst), S.dst_l)
    hold_cache = {}

    def hold(st):
        if st not in hold_cache:
            hold_cache[st] = S.holdings(st[0], st[1])
        return hold_cache[st]

    srcb = held_bytes(S, hold(src))
    dstb = held_bytes(S, hold(dst))
    bound = [max(a, b) for a, b in zip(srcb, dstb)]
    edge_cache = {}

    def edges(st):
        if st in edge_cache:
            return edge_cache[st]
        res = []
        for op, _, axis, nt in type_moves(S, st[0]):
            nt = canon(S, nt)
            lays = set(S.layouts(nt))
            if nt == dst[0]:
                lays.add(dst[1])
            if nt == src[0]:
                lays.add(src[1])
            for lay in lays:
                n2 = (nt, lay)
                r = step_eval(S, op, axis, st[0], hold(st), nt, hold(n2))
                if r is None:
                    continue
                res.append((n2, max(r), max(held_bytes(S, hold(n2))),
                            held_bytes(S, hold(n2)), op != "slice"))
        edge_cache[st] = res
        return res

    def search(cap_dev, cap_max):
        dist = {src: (Fraction(0), 0)}
        pq = [(Fraction(0), 0, 0, src)]
        cnt = 1
        while pq:
            g, c, _, u = heapq.heappop(pq)
            if dist.get(u) != (g, c):
                continue
            if u == dst:
                return g, c
            for v, rv, mx, hb, coll in edges(u):
                if cap_dev and any(h > b for h, b in zip(hb, bound)):
                    continue
                if cap_max is not None and mx > cap_max:
                    continue
                nv = (g + rv, c + coll)
                if v not in dist or nv < dist[v]:
                    dist[v] = nv
                    heapq.heappush(pq, (nv[0], nv[1], cnt, v))
                    cnt += 1
        return None

    r = search(True, None)
    if r is not None:
        peak = max(srcb + dstb)
        # the per-device capped optimum; report its own peak below
        return {"efficient": True, "bytes": r[0], "collectives": r[1],
                "peak_cap": peak}
    # least peak (bottleneck), then bytes under it
    best = {src: max(srcb)}
    pq = [(max(srcb), 0, src)]
    cnt = 1
    peak = None
    while pq:
        p, _, u = heapq.heappop(pq)
        if best.get(u) != p:
            continue
        if u == dst:
            peak = p
            break
        for v, _, mx, _, _ in edges(u):
            np_ = max(p, mx)
            if v not in best or np_ < best[v]:
                best[v] = np_
                heapq.heappush(pq, (np_, cnt, v))
                cnt += 1
    r = search(False, peak)
    return {"efficient": False, "bytes": r[0], "collectives": r[1],
            "peak": peak}


def replay(S, plan):
    cur_t = S.src
    cur = S.holdings(S.src, S.src_l)
    srcb = held_bytes(S, cur)
    dstb = held_bytes(S, S.holdings(S.dst, S.dst_l))
    bound = [max(a, b) for a, b in zip(srcb, dstb)]
    tot = [Fraction(0)] * len(S.devices)
    peak_dev = list(srcb)
    within = True
    step_sum = Fraction(0)
    colls = 0
    for k, st in enumerate(plan["steps"]):
        at = S.parse_type(st["after"])
        lay = S.rule_layout(at, st["after"].get("split", "ceil"),
                            st["after"].get("blocks"))
        nh = S.holdings(at, lay)
        r = step_eval(S, st["op"], st.get("axis"), cur_t, cur, at, nh)
        if r is None:
            return {"valid": False, "why": "step %d not local" % k}
        step_sum += max(r)
        colls += 1 if st["op"] != "slice" else 0
        for d, h in enumerate(held_bytes(S, nh)):
            tot[d] += r[d]
            peak_dev[d] = max(peak_dev[d], h)
            within &= h <= bound[d]
        cur_t, cur = at, nh
    if canon(S, cur_t) != canon(S, S.dst) or \
            cur != S.holdings(S.dst, S.dst_l):
        return {"valid": False, "why": "does not end at the target"}
    return {"valid": True, "peak": max(peak_dev), "within": within,
            "recv": max(-(-x.numerator // x.denominator) for x in tot),
            "step_sum": step_sum, "collectives": colls,
            "peak_dev": peak_dev}


def check(spec_d, plan, optimal=True):
    """The plan replayed: valid, its stats exact; with `optimal`, also
    optimal for the bytes objective (the model's exhaustive search; a plan
    of the time objective is only replayed)."""
    S = Spec(spec_d)
    r = replay(S, plan)
    if not r["valid"]:
        return False, r["why"]
    st = plan["stats"]
    if st["peak_bytes"] != r["peak"] or st["recv_bytes"] != r["recv"] or \
            st["memory_efficient"] != r["within"] or \
            st.get("peak_bytes_per_device") != r["peak_dev"]:
        return False, "stats differ: plan %s, model %s" % (st, r)
    if not optimal:
        return True, "ok"
    o = optimum(S)
    if o["efficient"] != r["within"]:
        return False, "memory efficiency: model %s, plan %s" % (
            o["efficient"], r["within"])
    if not o["efficient"] and o["peak"] != r["peak"]:
        return False, "peak: model %s, plan %s" % (o["peak"], r["peak"])
    if (o["bytes"], o["collectives"]) != (r["step_sum"], r["collectives"]):
        return False, "objective: model %s/%d, plan %s/%d" % (
            o["bytes"], o["collectives"], r["step_sum"], r["collectives"])
    return True, "ok"


def random_spec(rng):
    naxes = rng.choice([1, 2, 2, 3])
    names = ["x", "y", "z"][:naxes]
    mesh = [[a, rng.choice([2, 2, 3])] for a in names]
    nd = rng.choice([1, 2, 2])
    shape = [rng.randint(1, 7) for _ in range(nd)]
    devs = 1
    for _, s in mesh:
        devs *= s

    def rtype(partial_ok, keep):
        dims = [[] for _ in range(nd)]
        part = list(keep)
        for a in rng.sample(names, naxes):
            if a in keep:
                continue
            r = rng.random()
            if partial_ok and r < 0.2:
                part.append(a)
            elif r < 0.75:
                dims[rng.randrange(nd)].append(a)
        return {"dims": dims, "partial": part}
    src = rtype(True, [])
    dst = rtype(False, [a for a in src["partial"] if rng.random() < 0.3])
    for t in (src, dst):
        r = rng.random()
        if r < 0.3:
            t["split"] = rng.choice(["balanced", "chunk"])
        elif r < 0.4:
            i = rng.randrange(nd)
            k = 1
            for a in t["dims"][i]:
                k *= dict(mesh)[a]
            cuts = sorted(rng.randint(0, shape[i]) for _ in range(k - 1))
            b = [y - x for x, y in zip([0] + cuts, cuts + [shape[i]])]
            t["blocks"] = [b if j == i else None for j in range(nd)]
    return {"name": "random", "mesh": mesh, "shape": shape, "dtype": "f32",
            "from": src, "to": dst}


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "verify":
        spec = json.load(open(argv[2]))
        plan = json.load(open(argv[3]))
        opt = len(argv) == 4 or argv[4] != "replay"
        ok, why = check(spec, plan, opt)
        print(("valid and optimal: " if ok and opt else
               "valid: " if ok else "FAIL: ") + why)
        return 0 if ok else 1
    if len(argv) == 5 and argv[1] == "random":
        n, seed, rp = int(argv[2]), int(argv[3]), argv[4]
        rng = random.Random(seed)
        fails = done = 0
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.json")
            while done < n:
                spec = random_spec(rng)
                json.dump(spec, open(path, "w"))
                # the bytes objective's plan: valid and optimal; the
                # default (time) plan: valid, its stats exact
                plans = []
                for obj in (["--objective", "bytes"], []):
                    p = subprocess.run([rp, "plan", path, "--json"] + obj,
                                       capture_output=True, text=True)
                    if p.returncode != 0:
                        plans = "FAIL: no plan (%s) for %s: %s" % (
                            " ".join(obj) or "default", json.dumps(spec),
                            p.stderr.strip())
                        break
                    plans.append(json.loads(p.stdout))
                if isinstance(plans, str):
                    fails += 1
                    print(plans)
                    done += 1
                    continue
                if "recv_bytes_per_device" not in plans[0]["stats"]:
                    continue  # even: the v1 model covers it
                for plan, opt in zip(plans, (True, False)):
                    ok, why = check(spec, plan, opt)
                    if not ok:
                        fails += 1
                        print("FAIL %s%s: %s" % (
                            "" if opt else "(time) ", json.dumps(spec), why))
                        break
                done += 1
        print("uneven model: %d passed, %d failed" % (n - fails, fails))
        return 1 if fails else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
