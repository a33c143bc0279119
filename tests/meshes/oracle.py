#!/usr/bin/python3
"""Independent reference model for two-mesh redistribution plans.

Written only from the contract (doc/spec-format.md, shared FORMATS.md:
section 1-2 types and steps, section 7 uneven dims, section 8 two meshes);
nothing here is taken from the C planner.

Subcommands
  check SPEC PLAN.json       replay a plan at element level (exit 0 valid,
                             1 invalid, 2 bad input)
  search SPEC [--max-a 2] [--max-b 2]
                             exhaustive search over a small plan space
                             (exit 0 found, 3 no plan in the space, 2 bad input)
  compare SPEC --redistplan PATH
                             redistplan's bytes plan against check + search
                             (exit 0 agree, 1 disagree, 2 bad input/tool error)

Model (all figures per device, bytes)
  * A mesh has ordered named axes; position p in its device list has
    row-major coordinates (first axis slowest).  Device ids are global.
  * A type = (mesh, dims, partial, layout).  dims[i] lists axes major first;
    the block index of dim i is the mixed-radix number of the device's
    coordinates on those axes.  The layout gives, per dim, the boundaries
    0 = b_0 <= ... <= b_k = n of the k blocks (rules ceil / balanced / chunk,
    or explicit "blocks").  A device's box is the product of its blocks;
    it holds exactly the box, no padding.  A device outside the type's mesh
    holds nothing.
  * Values: the global array A gets distinct integers.  With a partial
    source over axes P0, device d holds the contribution C[coords of d on P0]
    with reduce(C over P0) == A exactly (integers, so sums are exact).
    A type with partial P (a subset of P0) is in its canonical state when
    every device holds reduce(C over P0 minus P)[its P coords] on its box;
    the replay checks that after every step, and that the final data is the
    target's.
  * Steps (locality replaces the divisibility preconditions, doc/uneven.md):
      slice          A_d inside B_d                          recv 0
      all_gather     A_d inside the union of the group's     |A_d - B_d|
      all_to_all     boxes (group: differ only on the axis)  |A_d - B_d|
      reduce_scatter A_d inside B_d                          (s-1)|A_d|
      all_reduce     A_d inside B_d                          ceil(2(s-1)/s |A_d|)
      permute        A_d is the box of one device before     |A_d|, 0 if A_d == B_d
                     (same coords on the partial axes)
      exchange       A_d inside the union of the boxes of    |A_d - B_d|
                     the mesh's devices with d's partial coords
      transfer       before on from_mesh, after on to_mesh,  |A_d - B_d|
                     after not partial; any element from any (B_d = d's box before,
                     device holding it                        empty if d not in it)
                     before partial over P: each element     n_P |A_d| - |A_d & B_d|
                     once per coordinate on P, from a device  (n_P = prod |P|; B_d
                     with those P coordinates, reduced        counts for d's own P
                                                              coordinates only)
    (A_d: d's box after, B_d: d's box before, sizes in bytes.)
"""

import argparse
import itertools
import json
import os
import subprocess
import sys

import numpy as np

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2,
               "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
               "c64": 8, "c128": 16}
REDUCE_OPS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}
RULES = ("ceil", "balanced", "chunk")
ONE_MESH_OPS = ("slice", "all_gather", "all_to_all", "reduce_scatter",
                "all_reduce", "permute", "exchange")
ALL_OPS = ONE_MESH_OPS + ("transfer",)

# Exit codes
EXIT_OK, EXIT_INVALID, EXIT_BAD, EXIT_NOPLAN = 0, 1, 2, 3


class BadInput(Exception):
    """Malformed spec or plan (exit 2)."""


class Invalid(Exception):
    """The plan is not legal or not exact (exit 1)."""

    def __init__(self, msg, step=None):
        super().__init__(msg)
        self.step = step


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def ceil_div(a, b):
    return -(-a // b)


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


# ---------------------------------------------------------------------------
# Meshes, layouts, types
# ---------------------------------------------------------------------------

class Mesh:
    """Named axes over an ordered list of global device ids."""

    def __init__(self, name, axes, devices):
        self.name = name                      # None for a version-1 "mesh"
        self.axes = list(axes)                # [(axis, size)], major first
        self.size = dict(axes)
        self.axis_names = [a for a, _ in axes]
        self.devices = list(devices)          # position -> device id
        self.pos_of = {d: p for p, d in enumerate(self.devices)}
        self.coords = list(itertools.product(*[range(s) for _, s in axes]))

    def coord(self, pos, axis):
        return self.coords[pos][self.axis_names.index(axis)]

    def group(self, pos, axis):
        """Positions that differ from pos only on `axis` (pos included)."""
        k = self.axis_names.index(axis)
        c = self.coords[pos]
        return [q for q, cq in enumerate(self.coords)
                if all(cq[j] == c[j] for j in range(len(c)) if j != k)]

    def same_on(self, pos, axes):
        """Positions with pos's coordinates on every axis of `axes`."""
        ks = [self.axis_names.index(a) for a in axes]
        c = self.coords[pos]
        return [q for q, cq in enumerate(self.coords)
                if all(cq[k] == c[k] for k in ks)]

    def label(self):
        return self.name if self.name is not None else "mesh"


def rule_bounds(n, sizes, rule):
    """Block boundaries of a dim of n elements cut by axes of `sizes`."""
    k = prod(sizes)
    if rule == "ceil":
        c = ceil_div(n, k)
        return tuple(min(j * c, n) for j in range(k + 1))
    if rule == "balanced":
        q, r = divmod(n, k)
        b = [0]
        for j in range(k):
            b.append(b[-1] + q + (1 if j < r else 0))
        return tuple(b)
    if rule == "chunk":
        # torch.chunk axis by axis, major first, each with ceil.
        b = [0, n]
        for s in sizes:
            nb = [b[0]]
            for lo, hi in zip(b, b[1:]):
                m = hi - lo
                c = ceil_div(m, s)
                nb.extend(lo + min((j + 1) * c, m) for j in range(s))
            b = nb
        return tuple(b)
    raise ValueError(rule)


class Type:
    """A sharding type with its layout (block boundaries per dim)."""

    def __init__(self, mesh, dims, partial, bounds):
        self.mesh = mesh
        self.dims = tuple(tuple(d) for d in dims)
        self.partial = frozenset(partial)
        self.bounds = tuple(tuple(b) for b in bounds)
        self.key = (mesh.name, self.dims, tuple(sorted(self.partial)),
                    self.bounds)

    def sig(self):
        """Type without its layout."""
        return (self.mesh.name, self.dims, tuple(sorted(self.partial)))

    def block(self, pos, i):
        b = 0
        for a in self.dims[i]:
            b = b * self.mesh.size[a] + self.mesh.coord(pos, a)
        return b

    def box_at(self, pos):
        return tuple((self.bounds[i][self.block(pos, i)],
                      self.bounds[i][self.block(pos, i) + 1])
                     for i in range(len(self.dims)))

    def box(self, dev):
        """Box of global device `dev`, or None when it is not in the mesh."""
        p = self.mesh.pos_of.get(dev)
        return None if p is None else self.box_at(p)

    def local_shape(self):
        return [max(b[j + 1] - b[j] for j in range(len(b) - 1))
                for b in self.bounds]

    def held(self, dev):
        """Elements held by global device `dev`."""
        bx = self.box(dev)
        return 0 if bx is None else box_size(bx)

    def describe(self):
        dims = " | ".join(",".join(d) if d else "-" for d in self.dims)
        s = "%s[%s]" % (self.mesh.label(), dims)
        if self.partial:
            s += " partial{%s}" % ",".join(sorted(self.partial))
        return s


def box_size(bx):
    return prod(hi - lo for lo, hi in bx)


def box_inter(a, b):
    r = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return None if any(lo >= hi for lo, hi in r) else r


def box_inside(a, b):
    """a is a subset of b (an empty a is inside anything)."""
    if box_size(a) == 0:
        return True
    return all(y0 <= x0 and x1 <= y1 for (x0, x1), (y0, y1) in zip(a, b))


def rel(inner, outer):
    """Slices selecting box `inner` inside an array holding box `outer`."""
    return tuple(slice(lo - o0, hi - o0)
                 for (lo, hi), (o0, _) in zip(inner, outer))


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------

def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise BadInput("%s: %s" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise BadInput("%s:%d:%d: %s" % (path, e.lineno, e.colno, e.msg))


def parse_type(obj, where, spec, default_mesh, err):
    """Parse a type object.  JSON shape errors are BadInput; semantic
    errors raise `err` (BadInput for the spec, Invalid for a plan)."""
    if not isinstance(obj, dict):
        raise BadInput("%s: must be an object" % where)
    for k in obj:
        if k not in ("mesh", "dims", "partial", "split", "blocks"):
            raise BadInput("%s: unknown key %r" % (where, k))
    if "mesh" in obj:
        if not isinstance(obj["mesh"], str):
            raise BadInput("%s.mesh: must be a string" % where)
        if spec.v1:
            raise err("%s.mesh: a one-mesh spec has no named meshes" % where)
        if obj["mesh"] not in spec.meshes:
            raise err("%s.mesh: no mesh %r (meshes: %s)"
                      % (where, obj["mesh"], ", ".join(spec.meshes)))
        mesh = spec.meshes[obj["mesh"]]
    else:
        if default_mesh is None:
            raise err("%s.mesh: missing (the spec has several meshes)" % where)
        mesh = default_mesh
    dims = obj.get("dims")
    if not isinstance(dims, list) or not all(
            isinstance(d, list) and all(isinstance(a, str) for a in d)
            for d in dims):
        raise BadInput("%s.dims: must be a list of lists of axis names" % where)
    if len(dims) != len(spec.shape):
        raise err("%s.dims: %d dims for a %d-dim array"
                  % (where, len(dims), len(spec.shape)))
    partial = obj.get("partial", [])
    if not isinstance(partial, list) or not all(isinstance(a, str)
                                                for a in partial):
        raise BadInput("%s.partial: must be a list of axis names" % where)
    seen = set()
    for a in [a for d in dims for a in d] + partial:
        if a not in mesh.size:
            raise err("%s: axis %r is not in mesh %s (axes: %s)"
                      % (where, a, mesh.label(), ", ".join(mesh.axis_names)))
        if a in seen:
            raise err("%s: axis %r appears twice" % (where, a))
        seen.add(a)
    split = obj.get("split", "ceil")
    if split not in RULES:
        raise BadInput("%s.split: must be one of %s" % (where, ", ".join(RULES)))
    bounds = [rule_bounds(n, [mesh.size[a] for a in d], split)
              for n, d in zip(spec.shape, dims)]
    if "blocks" in obj:
        bl = obj["blocks"]
        if not isinstance(bl, list) or len(bl) != len(dims):
            raise BadInput("%s.blocks: must list one entry per dim" % where)
        for i, lens in enumerate(bl):
            if lens is None:
                continue
            if not isinstance(lens, list) or not all(is_int(x) and x >= 0
                                                     for x in lens):
                raise BadInput("%s.blocks[%d]: must be null or a list of "
                               "non-negative integers" % (where, i))
            k = prod(mesh.size[a] for a in dims[i])
            if len(lens) != k or sum(lens) != spec.shape[i]:
                raise err("%s.blocks[%d]: needs %d lengths summing to %d"
                          % (where, i, k, spec.shape[i]))
            b = [0]
            for x in lens:
                b.append(b[-1] + x)
            bounds[i] = tuple(b)
    return Type(mesh, dims, partial, bounds)


class Spec:
    """A spec: one array over one (version 1) or several named meshes."""

    def __init__(self, obj, path="spec"):
        if not isinstance(obj, dict):
            raise BadInput("%s: must be a JSON object" % path)
        allowed = {"name", "meshes", "mesh", "shape", "dtype", "from", "to",
                   "reduce", "expect"}
        for k in obj:
            if k not in allowed:
                raise BadInput("%s: unknown key %r%s" % (
                    path, k, " (not supported by this oracle)"
                    if k in ("arrays", "budget_bytes") else ""))
        self.raw = obj
        self.name = obj.get("name", os.path.basename(path))
        if ("mesh" in obj) == ("meshes" in obj):
            raise BadInput("%s: exactly one of 'mesh' and 'meshes'" % path)
        self.v1 = "mesh" in obj
        self.meshes = {}
        if self.v1:
            axes = self._axes(obj["mesh"], path + ": mesh")
            self.meshes[None] = Mesh(None, axes,
                                     range(prod(s for _, s in axes)))
        else:
            ms = obj["meshes"]
            if not isinstance(ms, dict) or not ms:
                raise BadInput("%s: meshes: must be a non-empty object" % path)
            for name, mo in ms.items():
                w = "%s: meshes.%s" % (path, name)
                if not isinstance(mo, dict):
                    raise BadInput("%s: must be an object" % w)
                for k in mo:
                    if k not in ("axes", "devices"):
                        raise BadInput("%s: unknown key %r" % (w, k))
                axes = self._axes(mo.get("axes"), w + ".axes")
                n = prod(s for _, s in axes)
                devs = mo.get("devices", list(range(n)))
                if (not isinstance(devs, list)
                        or not all(is_int(d) and d >= 0 for d in devs)):
                    raise BadInput("%s.devices: must list device ids" % w)
                if len(devs) != n or len(set(devs)) != n:
                    raise BadInput("%s.devices: needs %d distinct ids" % (w, n))
                self.meshes[name] = Mesh(name, axes, devs)
        shape = obj.get("shape")
        if (not isinstance(shape, list) or not shape
                or not all(is_int(x) and x >= 1 for x in shape)):
            raise BadInput("%s: shape: must be a list of positive integers"
                           % path)
        self.shape = tuple(shape)
        if obj.get("dtype") not in DTYPE_BYTES:
            raise BadInput("%s: dtype: must be one of %s"
                           % (path, " ".join(DTYPE_BYTES)))
        self.elem = DTYPE_BYTES[obj["dtype"]]
        self.reduce = obj.get("reduce", "sum")
        if self.reduce not in REDUCE_OPS:
            raise BadInput("%s: reduce: must be one of %s"
                           % (path, " ".join(REDUCE_OPS)))
        for k in ("from", "to"):
            if k not in obj:
                raise BadInput("%s: missing %r" % (path, k))
        dm = self.meshes[None] if self.v1 else None
        self.src = parse_type(obj["from"], path + ": from", self, dm, BadInput)
        self.dst = parse_type(obj["to"], path + ": to", self, dm, BadInput)
        # The devices a plan runs on: the union of the meshes' devices.
        self.devices = sorted(set(d for m in self.meshes.values()
                                  for d in m.devices))

    @staticmethod
    def _axes(v, where):
        if (not isinstance(v, list) or not v or not all(
                isinstance(a, list) and len(a) == 2 and isinstance(a[0], str)
                and is_int(a[1]) and a[1] >= 1 for a in v)):
            raise BadInput("%s: must be a list of [name, size]" % where)
        if len(set(a for a, _ in v)) != len(v):
            raise BadInput("%s: axis names must be distinct" % where)
        return [(a, s) for a, s in v]

    def mesh_json(self):
        """The spec's mesh keys, as echoed in a plan."""
        if self.v1:
            return {"mesh": self.raw["mesh"]}
        return {"meshes": self.raw["meshes"]}


def layout_json(t):
    """split / blocks keys describing t's layout ({} for ceil)."""
    best = None
    for rule in RULES:
        ref = [rule_bounds(n, [t.mesh.size[a] for a in d], rule)
               for n, d in zip([b[-1] for b in t.bounds], t.dims)]
        diff = [i for i in range(len(t.dims)) if ref[i] != t.bounds[i]]
        if best is None or len(diff) < len(best[1]):
            best = (rule, diff)
    rule, diff = best
    out = {}
    if rule != "ceil":
        out["split"] = rule
    if diff:
        out["blocks"] = [[b[j + 1] - b[j] for j in range(len(b) - 1)]
                         if i in diff else None
                         for i, b in enumerate(t.bounds)]
    return out


def type_json(t, with_mesh):
    o = {}
    if with_mesh and t.mesh.name is not None:
        o["mesh"] = t.mesh.name
    o["dims"] = [list(d) for d in t.dims]
    o["partial"] = sorted(t.partial)
    o.update(layout_json(t))
    return o


# ---------------------------------------------------------------------------
# Steps: legality, locality, recv (box level; shared by check and search)
# ---------------------------------------------------------------------------

def cover(A, cands):
    """Cover box A by candidate (device, box) pairs, in order.  Returns
    [(device, intersection, mask of new elements)] or None plus the first
    uncovered element (global index)."""
    shape = tuple(hi - lo for lo, hi in A)
    if prod(shape) == 0:
        return [], None
    need = np.ones(shape, dtype=bool)
    parts = []
    for e, B in cands:
        if B is None:
            continue
        inter = box_inter(A, B)
        if inter is None:
            continue
        r = rel(inter, A)
        m = need[r]
        if not m.any():
            continue
        parts.append((e, inter, m.copy()))
        m[...] = False
        if not need.any():
            return parts, None
    first = np.argwhere(need)[0]
    return None, tuple(int(x) + lo for x, (lo, _) in zip(first, A))


class Transition:
    """A legal step: per-device recv (bytes) and how each new block is made.
    how[d] = ("copy", parts) | ("reduce", [source devices]) | ("sum",
    [parts per partial coordinate]) (a transfer of pending sums)."""

    def __init__(self):
        self.recv = {}
        self.how = {}


def expected_effect(before, op, f):
    """(dims, partial) the op gives, or raise Invalid for a precondition."""
    dims = [list(d) for d in before.dims]
    partial = set(before.partial)
    nd = len(dims)
    mesh = before.mesh

    def chk_dim(key):
        i = f[key]
        if not (0 <= i < nd):
            raise Invalid("%s %d out of range (array has %d dims)"
                          % (key, i, nd))
        return i

    def chk_axis():
        a = f["axis"]
        if a not in mesh.size:
            raise Invalid("axis %r is not in mesh %s" % (a, mesh.label()))
        return a

    if op == "slice":
        i, a = chk_dim("dim"), chk_axis()
        if any(a in d for d in dims) or a in partial:
            raise Invalid("slice: axis %r is not replicated in %s"
                          % (a, before.describe()))
        dims[i].append(a)
    elif op == "all_gather":
        i, a = chk_dim("dim"), chk_axis()
        if not dims[i] or dims[i][-1] != a:
            raise Invalid("all_gather: axis %r is not the minor of dim %d in %s"
                          % (a, i, before.describe()))
        dims[i].pop()
    elif op == "all_to_all":
        i, j, a = chk_dim("from_dim"), chk_dim("to_dim"), chk_axis()
        if i == j:
            raise Invalid("all_to_all: from_dim == to_dim")
        if not dims[i] or dims[i][-1] != a:
            raise Invalid("all_to_all: axis %r is not the minor of dim %d in %s"
                          % (a, i, before.describe()))
        dims[i].pop()
        dims[j].append(a)
    elif op == "reduce_scatter":
        i, a = chk_dim("dim"), chk_axis()
        if a not in partial:
            raise Invalid("reduce_scatter: axis %r is not partial in %s"
                          % (a, before.describe()))
        partial.discard(a)
        dims[i].append(a)
    elif op == "all_reduce":
        a = chk_axis()
        if a not in partial:
            raise Invalid("all_reduce: axis %r is not partial in %s"
                          % (a, before.describe()))
        partial.discard(a)
    else:
        return None
    return tuple(tuple(d) for d in dims), frozenset(partial)


def transition(spec, before, op, f, after):
    """Check one step from `before` to `after`; return its Transition.
    `f` holds the op's fields (axis, dim, ..., mesh, from_mesh, to_mesh)."""
    elem = spec.elem
    tr = Transition()
    if op == "transfer":
        if before.mesh.name != f["from_mesh"]:
            raise Invalid("transfer: from_mesh %r but the type before is on %s"
                          % (f["from_mesh"], before.mesh.label()))
        if after.mesh.name != f["to_mesh"]:
            raise Invalid("transfer: to_mesh %r but its after is on %s"
                          % (f["to_mesh"], after.mesh.label()))
        if after.partial:
            raise Invalid("transfer: the type after has partial axes (%s)"
                          % ", ".join(sorted(after.partial)))
        # Pending sums before the transfer cross it (section 8 extended):
        # every element of the new block gets one contribution per
        # coordinate on the partial axes P, from a device with those P
        # coordinates that holds it, and the receiver reduces them.
        am = before.mesh
        P = sorted(before.partial, key=am.axis_names.index)
        pcs = list(itertools.product(*[range(am.size[a]) for a in P]))
        for d in after.mesh.devices:
            A, B = after.box(d), before.box(d)
            bpos = am.pos_of.get(d)
            mine = (tuple(am.coord(bpos, a) for a in P)
                    if bpos is not None else None)
            per = []
            recv = 0
            for pc in pcs:
                cands = [(e, before.box_at(q))
                         for q, e in enumerate(am.devices)
                         if tuple(am.coord(q, a) for a in P) == pc]
                own = [(d, B)] if B is not None and pc == mine else []
                parts, miss = cover(A, own + cands)
                if parts is None:   # cannot happen: every element is held
                    raise Invalid("transfer: element %s of device %d's "
                                  "block is held by no device" % (miss, d))
                per.append(parts)
                inter = box_inter(A, B) if own else None
                recv += box_size(A) - (box_size(inter) if inter else 0)
            tr.how[d] = ("copy", per[0]) if not P else ("sum", per)
            tr.recv[d] = recv * elem
        return tr

    # One-mesh step: before, step and after on one mesh.
    mname = f.get("mesh", before.mesh.name)
    if mname != before.mesh.name:
        raise Invalid("%s runs on mesh %r but the type before is on %s"
                      % (op, mname, before.mesh.label()))
    if after.mesh is not before.mesh:
        raise Invalid("%s: its after is on mesh %s, not on %s"
                      % (op, after.mesh.label(), before.mesh.label()))
    mesh = before.mesh
    eff = expected_effect(before, op, f)
    if eff is not None:
        if (after.dims, after.partial) != eff:
            want = Type(mesh, eff[0], eff[1], after.bounds).describe()
            raise Invalid("%s: after is %s, but the step gives %s"
                          % (op, after.describe(), want))
    else:  # permute / exchange: any type with the same partial set
        if after.partial != before.partial:
            raise Invalid("%s: partial set changes (%s -> %s)" % (
                op, sorted(before.partial), sorted(after.partial)))

    for pos, d in enumerate(mesh.devices):
        A, B = after.box_at(pos), before.box_at(pos)
        where = "device %d (%s)" % (d, mesh.label())
        if op in ("slice", "reduce_scatter", "all_reduce"):
            if not box_inside(A, B):
                raise Invalid("%s: %s's block after %s is not inside its "
                              "block before %s" % (op, where, A, B))
        if op == "slice":
            tr.how[d] = ("copy", [(d, A, np.ones(tuple(hi - lo for lo, hi in A),
                                                 bool))] if box_size(A) else [])
            tr.recv[d] = 0
        elif op in ("reduce_scatter", "all_reduce"):
            grp = [mesh.devices[q] for q in mesh.group(pos, f["axis"])]
            s = mesh.size[f["axis"]]
            tr.how[d] = ("reduce", grp)
            if op == "reduce_scatter":
                tr.recv[d] = (s - 1) * box_size(A) * elem
            else:
                tr.recv[d] = ceil_div(2 * (s - 1) * box_size(A) * elem, s)
        elif op in ("all_gather", "all_to_all", "exchange"):
            if op == "exchange":
                srcs = mesh.same_on(pos, sorted(before.partial))
            else:
                srcs = mesh.group(pos, f["axis"])
            cands = [(d, B)] + [(mesh.devices[q], before.box_at(q))
                                for q in srcs if q != pos]
            parts, miss = cover(A, cands)
            if parts is None:
                raise Invalid("%s: %s needs element %s, which no device it "
                              "can receive from holds" % (op, where, miss))
            tr.how[d] = ("copy", parts)
            inter = box_inter(A, B)
            tr.recv[d] = (box_size(A) - (box_size(inter) if inter else 0)) * elem
        elif op == "permute":
            if A == B or box_size(A) == 0:
                sender = d
            else:
                sender = None
                for q in mesh.same_on(pos, sorted(before.partial)):
                    if before.box_at(q) == A:
                        sender = mesh.devices[q]
                        break
            if sender is None:
                raise Invalid("permute: %s's block after %s is no device's "
                              "whole block before" % (where, A))
            shp = tuple(hi - lo for lo, hi in A)
            tr.how[d] = ("copy", [(sender, A, np.ones(shp, bool))]
                         if box_size(A) else [])
            tr.recv[d] = 0 if sender == d else box_size(A) * elem
    return tr


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------

class Values:
    """The global array, the source contributions and canonical states."""

    def __init__(self, spec, seed=1):
        rng = np.random.default_rng(seed)
        n = prod(spec.shape)
        self.A = (rng.permutation(n) + 1).astype(np.int64).reshape(spec.shape)
        mesh = spec.src.mesh
        self.p0 = [a for a in mesh.axis_names if a in spec.src.partial]
        sizes = [mesh.size[a] for a in self.p0]
        m = prod(sizes)
        A = self.A
        if m == 1:
            C = A[None].copy()
        elif spec.reduce == "sum":
            C = rng.integers(-100, 101, size=(m,) + A.shape).astype(np.int64)
            C[-1] = A - C[:-1].sum(axis=0)
        elif spec.reduce in ("max", "min"):
            off = rng.integers(1, 20, size=(m,) + A.shape).astype(np.int64)
            C = A[None] - off if spec.reduce == "max" else A[None] + off
            pick = rng.integers(0, m, size=A.shape)
            np.put_along_axis(C, pick[None], A[None], axis=0)
        else:  # prod: +-1 factors, the last one fixes the sign
            C = rng.choice(np.array([-1, 1], np.int64), size=(m,) + A.shape)
            C[-1] = A * np.prod(C[:-1], axis=0)
        self.C = C.reshape(tuple(sizes) + A.shape)
        self.red = REDUCE_OPS[spec.reduce]
        assert np.array_equal(self.red(self.C.reshape((m,) + A.shape), axis=0),
                              A)
        self._canon = {}

    def canonical(self, t, pos):
        """What device at position pos must hold in type t (whole box)."""
        P = frozenset(t.partial)
        if not P <= set(self.p0):
            raise Invalid("type %s is partial over axes the source is not "
                          "partial over" % t.describe())
        if P not in self._canon:
            red = tuple(k for k, a in enumerate(self.p0) if a not in P)
            self._canon[P] = (self.red(self.C, axis=red, keepdims=True)
                              if red else self.C)
        full = self._canon[P]
        idx = tuple(t.mesh.coord(pos, a) if a in P else 0 for a in self.p0)
        return full[idx][tuple(slice(lo, hi) for lo, hi in t.box_at(pos))]

    def initial(self, t):
        return {d: (t.box_at(p), self.canonical(t, p).copy())
                for p, d in enumerate(t.mesh.devices)}


def simulate(values, tr, data, after):
    """Data after a step: {device: (box, array)} for the devices of after."""
    new = {}
    for pos, d in enumerate(after.mesh.devices):
        A = after.box_at(pos)
        arr = np.zeros(tuple(hi - lo for lo, hi in A), np.int64)
        kind, what = tr.how[d]
        if kind == "copy":
            for e, inter, m in what:
                B, src = data[e]
                view = arr[rel(inter, A)]
                view[m] = src[rel(inter, B)][m]
        elif kind == "sum":  # a transfer: one copy per partial coordinate
            parts = []
            for per in what:
                x = np.zeros_like(arr)
                for e, inter, m in per:
                    B, src = data[e]
                    view = x[rel(inter, A)]
                    view[m] = src[rel(inter, B)][m]
                parts.append(x)
            if arr.size:
                arr = values.red(np.stack(parts), axis=0)
        else:  # reduce over the group: every member holds A (checked)
            if arr.size:
                stack = np.stack([data[e][1][rel(A, data[e][0])] for e in what])
                arr = values.red(stack, axis=0)
        new[d] = (A, arr)
    return new


def check_values(values, t, data, step):
    for pos, d in enumerate(t.mesh.devices):
        box, arr = data[d]
        want = values.canonical(t, pos)
        if not np.array_equal(arr, want):
            bad = np.argwhere(arr != want)
            i = tuple(int(x) for x in bad[0])
            g = tuple(x + lo for x, (lo, _) in zip(i, box))
            raise Invalid("device %d holds wrong values: %d element(s) differ, "
                          "e.g. element %s: has %d, should be %d"
                          % (d, len(bad), g, arr[i], want[i]), step)


# ---------------------------------------------------------------------------
# Plan replay (check)
# ---------------------------------------------------------------------------

FIELDS = {"slice": ("dim", "axis"), "all_gather": ("dim", "axis"),
          "all_to_all": ("from_dim", "to_dim", "axis"),
          "reduce_scatter": ("dim", "axis"), "all_reduce": ("axis",),
          "permute": (), "exchange": (), "transfer": ("from_mesh", "to_mesh")}


def parse_step(spec, st, k, before):
    """-> (op, fields, after Type).  `before` gives the default mesh."""
    w = "steps[%d]" % k
    if not isinstance(st, dict):
        raise BadInput("%s: must be an object" % w)
    op = st.get("op")
    if op not in ALL_OPS:
        raise BadInput("%s.op: unknown op %r" % (w, op))
    f = {}
    for key in FIELDS[op]:
        if key not in st:
            raise BadInput("%s: %s needs %r" % (w, op, key))
        v = st[key]
        want_int = key.endswith("dim")
        if want_int and not is_int(v) or not want_int and not isinstance(v, str):
            raise BadInput("%s.%s: wrong JSON type" % (w, key))
        f[key] = v
    if op == "transfer":
        for key in ("from_mesh", "to_mesh"):
            if f[key] not in spec.meshes:
                raise Invalid("transfer: no mesh %r" % f[key], k)
        default = spec.meshes[f["to_mesh"]]
    else:
        if "mesh" in st:
            if not isinstance(st["mesh"], str):
                raise BadInput("%s.mesh: wrong JSON type" % w)
            if st["mesh"] not in spec.meshes:
                raise Invalid("no mesh %r" % st["mesh"], k)
            f["mesh"] = st["mesh"]
            default = spec.meshes[st["mesh"]]
        else:
            default = before.mesh
    if "after" not in st:
        if op in ("permute", "exchange", "transfer"):
            raise BadInput("%s: %s needs 'after'" % (w, op))
        eff = expected_effect(before, op, f)   # may raise Invalid
        after = Type(default, eff[0], eff[1],
                     [rule_bounds(n, [default.size[a] for a in d], "ceil")
                      for n, d in zip(spec.shape, eff[0])])
    else:
        after = parse_type(st["after"], w + ".after", spec, default, Invalid)
    return op, f, after


class Replay:
    """Result of replaying a plan."""

    def __init__(self):
        self.types = []          # from, then each after
        self.step_recv = []      # per step: {device: bytes}
        self.errors = []         # stated figures the replay does not give
        self.notes = []


def replay(spec, plan, values=None):
    """Replay `plan` (a dict with "steps").  Raises Invalid / BadInput.
    Figures are computed; stated ones are compared (mismatches listed in
    .errors).  With values, data is simulated and checked at every step."""
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list):
        raise BadInput("plan: needs a 'steps' list")
    check_echo(spec, plan)
    r = Replay()
    cur = spec.src
    r.types.append(cur)
    data = values.initial(cur) if values else None
    for k, st in enumerate(plan["steps"]):
        try:
            op, f, after = parse_step(spec, st, k, cur)
            tr = transition(spec, cur, op, f, after)
            if values:
                data = simulate(values, tr, data, after)
                check_values(values, after, data, k)
        except Invalid as e:
            if e.step is None:
                e.step = k
            e.args = ("step %d (%s): %s" % (k, st.get("op"), e.args[0]),)
            raise
        r.types.append(after)
        r.step_recv.append(tr.recv)
        cur = after
    if cur.key != spec.dst.key:
        if cur.sig() != spec.dst.sig():
            raise Invalid("the plan ends in %s, not the target %s"
                          % (cur.describe(), spec.dst.describe()))
        raise Invalid("the plan ends in the target type but with blocks %s, "
                      "not the target's %s" % (list(cur.bounds),
                                               list(spec.dst.bounds)))
    if values:  # final data against the target (the real array if no partial)
        check_values(values, cur, data, len(plan["steps"]))
    r.ops = [st["op"] for st in plan["steps"]]
    figures(spec, r)
    compare_stated(spec, plan, r)
    return r


def figures(spec, r):
    devs = spec.devices
    e = spec.elem
    r.held = [{d: t.held(d) * e for d in devs} for t in r.types]
    r.src = r.held[0]
    r.dst = {d: spec.dst.held(d) * e for d in devs}
    r.peak = {d: max(h[d] for h in r.held) for d in devs}
    r.recv = {d: sum(sr.get(d, 0) for sr in r.step_recv) for d in devs}
    r.bound = {d: max(r.src[d], spec.dst.held(d) * e) for d in devs}
    r.memory_efficient = all(r.peak[d] <= r.bound[d] for d in devs)
    r.stats = {
        "src_bytes": max(r.src.values()),
        "dst_bytes": max(r.dst.values()),
        "peak_bytes": max(r.peak.values()),
        "recv_bytes": max(r.recv.values()),
        "collectives": sum(1 for op in r.ops if op != "slice"),
        "memory_efficient": r.memory_efficient,
    }
    # Sum over steps of each step's largest per-device recv (the figure the
    # C planner's bytes objective minimises, doc/uneven.md).
    r.stepsum = sum(max(sr.values(), default=0) for sr in r.step_recv)


def check_echo(spec, plan):
    """A plan that echoes spec keys must echo this spec."""
    for k in ("shape", "dtype"):
        if k in plan and plan[k] != spec.raw.get(k):
            raise BadInput("plan: %r is %r, the spec's is %r"
                           % (k, plan[k], spec.raw.get(k)))
    if "reduce" in plan and plan["reduce"] != spec.reduce:
        raise BadInput("plan: 'reduce' differs from the spec's")
    if not spec.v1 and "meshes" in plan:
        try:
            other = Spec(dict(spec.raw, meshes=plan["meshes"]))
        except BadInput as e:
            raise BadInput("plan: meshes: %s" % e)
        for n, m in spec.meshes.items():
            o = other.meshes.get(n)
            if o is None or o.axes != m.axes or o.devices != m.devices:
                raise BadInput("plan: meshes.%s differs from the spec's" % n)
    dm = spec.meshes[None] if spec.v1 else None
    for k, t in (("from", spec.src), ("to", spec.dst)):
        if k in plan:
            try:
                pt = parse_type(plan[k], "plan: " + k, spec, dm, BadInput)
            except BadInput as e:
                raise BadInput(str(e))
            if pt.key != t.key:
                raise BadInput("plan: %r is %s, the spec's is %s"
                               % (k, pt.describe(), t.describe()))


def compare_stated(spec, plan, r):
    """Compare every stated figure with the replay's."""
    steps = plan["steps"]
    devs = spec.devices
    for k, st in enumerate(steps):
        t = r.types[k + 1]
        got = {"local_shape": t.local_shape(),
               "local_bytes": max(t.held(d) for d in devs) * spec.elem,
               "recv_bytes": max(r.step_recv[k].values(), default=0)}
        for key, v in got.items():
            if key in st and st[key] != v:
                r.errors.append("step %d (%s): %s is %s, the replay gives %s"
                                % (k, st["op"], key, st[key], v))
    stats = plan.get("stats")
    if stats is None:
        r.notes.append("no stats stated")
        return
    if not isinstance(stats, dict):
        raise BadInput("plan: stats must be an object")
    for key, v in r.stats.items():
        if key in stats and stats[key] != v:
            r.errors.append("stats.%s is %s, the replay gives %s"
                            % (key, stats[key], v))
    for key, per in (("recv_bytes_per_device", r.recv),
                     ("peak_bytes_per_device", r.peak)):
        if key not in stats:
            continue
        lst = stats[key]
        # "rank order": the sorted union of the meshes' devices; a list
        # indexed by device id 0..max is accepted too.
        if len(lst) == len(devs):
            want = [per[d] for d in devs]
        else:
            want = [per.get(d, 0) for d in range(max(devs) + 1)]
        if lst != want:
            r.errors.append("stats.%s is %s, the replay gives %s"
                            % (key, lst, want))


def cmd_check(args):
    spec = Spec(load_json(args.spec), args.spec)
    plan = load_json(args.plan)
    # Element-level replay; a very large array is replayed at box level
    # only (legality, locality and figures, no values).
    vals = None
    if prod(spec.shape) <= args.max_elements:
        vals = Values(spec, args.seed)
    try:
        r = replay(spec, plan, vals)
    except Invalid as e:
        print("INVALID %s: %s" % (spec.name, e))
        return EXIT_INVALID
    st = r.stats
    head = ("%s: %d steps, peak %d B, recv %d B (max over devices), "
            "collectives %d, memory-efficient %s"
            % (spec.name, len(plan["steps"]), st["peak_bytes"],
               st["recv_bytes"], st["collectives"],
               "yes" if st["memory_efficient"] else "no"))
    if r.errors:
        print("INVALID " + head)
        for e in r.errors:
            print("  " + e)
        ok = EXIT_INVALID
    else:
        print("VALID " + head)
        ok = EXIT_OK
    if vals is None:
        print("  (box level only: %d elements > --max-elements %d)"
              % (prod(spec.shape), args.max_elements))
    print("  per-device peak/bound/recv (bytes): " + ", ".join(
        "d%d=%d/%d/%d" % (d, r.peak[d], r.bound[d], r.recv[d])
        for d in spec.devices))
    return ok


# ---------------------------------------------------------------------------
# Exhaustive search
# ---------------------------------------------------------------------------

def enumerate_sigs(mesh, ndim, partial_ok):
    """Every (dims, partial) on mesh: each axis replicated, partial (if in
    partial_ok) or in one dim, every order within a dim."""
    places = []
    for a in mesh.axis_names:
        opts = ["rep"] + (["partial"] if a in partial_ok else []) + list(
            range(ndim))
        places.append(opts)
    out = []
    for choice in itertools.product(*places):
        partial = frozenset(a for a, c in zip(mesh.axis_names, choice)
                            if c == "partial")
        per_dim = [[a for a, c in zip(mesh.axis_names, choice) if c == i]
                   for i in range(ndim)]
        for orders in itertools.product(*[list(itertools.permutations(d))
                                          for d in per_dim]):
            out.append((tuple(orders), partial))
    return out


class Searcher:
    def __init__(self, spec, layouts="rules", with_permute=False,
                 cross_sums=False):
        self.cross_sums = cross_sums
        self.spec = spec
        self.layouts = layouts
        self.with_permute = with_permute
        self.devs = spec.devices
        self.types = {}          # key -> Type
        self.edges = {}          # key -> [(step fields, after Type, recv vec)]
        self.held_cache = {}
        self.nedges = 0

    def held(self, t):
        v = self.held_cache.get(t.key)
        if v is None:
            v = np.array([t.held(d) * self.spec.elem for d in self.devs],
                         np.int64)
            self.held_cache[t.key] = v
        return v

    def recv_vec(self, tr):
        return np.array([tr.recv.get(d, 0) for d in self.devs], np.int64)

    def candidates(self, mesh, dims, partial, before=None):
        """Types with these dims/partial, one per candidate layout."""
        spec = self.spec
        sizes = [[mesh.size[a] for a in d] for d in dims]
        rules = ("ceil",) if self.layouts == "ceil" else RULES
        bl = [tuple(rule_bounds(n, s, r) for n, s in zip(spec.shape, sizes))
              for r in rules]
        for end in (spec.src, spec.dst):
            if end.mesh is mesh and end.dims == dims:
                bl.append(end.bounds)
        if before is not None and self.layouts != "ceil":
            # Derived from the layout before: dims kept keep their blocks,
            # an appended minor cuts each block with ceil, a removed minor
            # merges groups of s blocks.
            d = []
            for i in range(len(dims)):
                b, nb = before.dims[i], dims[i]
                old = before.bounds[i]
                if b == nb:
                    d.append(old)
                elif nb[:-1] == b:
                    s = mesh.size[nb[-1]]
                    new = [old[0]]
                    for lo, hi in zip(old, old[1:]):
                        c = ceil_div(hi - lo, s)
                        new.extend(lo + min((j + 1) * c, hi - lo)
                                   for j in range(s))
                    d.append(tuple(new))
                elif b[:-1] == nb:
                    d.append(old[::mesh.size[b[-1]]])
                else:
                    d.append(rule_bounds(spec.shape[i], sizes[i], "ceil"))
            bl.append(tuple(d))
        out, seen = [], set()
        for b in bl:
            if b not in seen:
                seen.add(b)
                t = Type(mesh, dims, partial, b)
                out.append(self.types.setdefault(t.key, t))
        return out

    def moves(self, t):
        """Legal one-mesh steps from t: [(fields, after, recv vec)]."""
        if t.key in self.edges:
            return self.edges[t.key]
        mesh, nd = t.mesh, len(t.dims)
        ops = []
        used = set(a for d in t.dims for a in d) | t.partial
        for a in mesh.axis_names:
            for i in range(nd):
                if a not in used:
                    ops.append(("slice", {"dim": i, "axis": a}))
                if a in t.partial:
                    ops.append(("reduce_scatter", {"dim": i, "axis": a}))
                if t.dims[i] and t.dims[i][-1] == a:
                    ops.append(("all_gather", {"dim": i, "axis": a}))
                    for j in range(nd):
                        if j != i:
                            ops.append(("all_to_all", {"from_dim": i,
                                                       "to_dim": j, "axis": a}))
            if a in t.partial:
                ops.append(("all_reduce", {"axis": a}))
        out = []
        for op, f in ops:
            f = dict(f, mesh=mesh.name)
            dims, partial = expected_effect(t, op, f)
            for after in self.candidates(mesh, dims, partial, t):
                self.try_edge(out, t, op, f, after)
        if self.with_permute:
            for dims, partial in enumerate_sigs(mesh, nd, t.partial):
                if partial != t.partial:
                    continue
                for after in self.candidates(mesh, dims, partial):
                    if after.key != t.key:
                        self.try_edge(out, t, "permute",
                                      {"mesh": mesh.name}, after)
        self.edges[t.key] = out
        return out

    def try_edge(self, out, t, op, f, after):
        self.nedges += 1
        try:
            tr = transition(self.spec, t, op, f, after)
        except Invalid:
            return
        out.append((dict(f, op=op), after, self.recv_vec(tr)))

    # Labels: (peak vec, recv vec, stepsum, collectives, nsteps, path)
    @staticmethod
    def dominated(a, b):
        """Label a is no better than b in every respect."""
        return (np.all(b[0] <= a[0]) and np.all(b[1] <= a[1])
                and b[2] <= a[2] and b[3] <= a[3] and b[4] <= a[4])

    def insert(self, lst, lab):
        for o in lst:
            if self.dominated(lab, o):
                return False
        lst[:] = [o for o in lst if not self.dominated(o, lab)]
        lst.append(lab)
        return True

    def extend(self, lab, step, after, rv, head=True):
        colls = 0 if step["op"] == "slice" else 1
        return (np.maximum(lab[0], self.held(after)), lab[1] + rv,
                lab[2] + int(rv.max()), lab[3] + colls, lab[4] + 1,
                lab[5] + [(step, after)])

    def forward(self, start, depth):
        """Pareto labels of every path of <= depth steps from start."""
        z = np.zeros(len(self.devs), np.int64)
        labels = {start.key: [(self.held(start), z, 0, 0, 0, [])]}
        frontier = dict(labels)
        for _ in range(depth):
            nf = {}
            for key, labs in frontier.items():
                for step, after, rv in self.moves(self.types[key]):
                    for lab in labs:
                        nl = self.extend(lab, step, after, rv)
                        if self.insert(labels.setdefault(after.key, []), nl):
                            nf.setdefault(after.key, []).append(nl)
            frontier = nf
        # drop labels that were later dominated
        return labels

    def suffixes(self, t, r, memo):
        """Pareto labels of paths of <= r steps from t to the target; peak
        counts the types after t only."""
        k = (t.key, r)
        if k in memo:
            return memo[k]
        z = np.zeros(len(self.devs), np.int64)
        out = []
        if t.key == self.spec.dst.key:
            out.append((z, z, 0, 0, 0, []))
        if r > 0:
            for step, after, rv in self.moves(t):
                for s in self.suffixes(after, r - 1, memo):
                    colls = 0 if step["op"] == "slice" else 1
                    self.insert(out, (np.maximum(self.held(after), s[0]),
                                      rv + s[1], int(rv.max()) + s[2],
                                      colls + s[3], 1 + s[4],
                                      [(step, after)] + s[5]))
        memo[k] = out
        return out

    def run(self, max_a, max_b, metric):
        """Best plan: (objective key, path) or None."""
        spec = self.spec
        src, dst = spec.src, spec.dst
        self.types.setdefault(src.key, src)
        self.types.setdefault(dst.key, dst)
        best = [None, None]
        self.considered = 0

        def offer(peak, recv, stepsum, colls, nsteps, path):
            m = recv if metric == "max" else stepsum
            other = stepsum if metric == "max" else recv
            key = (peak, m, colls, nsteps, other)
            self.considered += 1
            if best[0] is None or key < best[0]:
                best[0], best[1] = key, path

        if src.mesh is dst.mesh:
            labels = self.forward(src, max_a + max_b)
            for lab in labels.get(dst.key, []):
                offer(int(lab[0].max()), int(lab[1].max()), lab[2], lab[3],
                      lab[4], lab[5])
            return best
        labels = self.forward(src, max_a)
        dm = dst.mesh
        targets = []
        for dims, partial in enumerate_sigs(dm, len(spec.shape), ()):
            targets.extend(self.candidates(dm, dims, partial))
        memo = {}
        for t in targets:
            suf = self.suffixes(t, max_b, memo)
            if not suf:
                continue
            ht = self.held(t)
            sp = np.array([np.maximum(ht, s[0]) for s in suf])
            sr = np.array([s[1] for s in suf])
            sss = np.array([s[2] for s in suf])
            sc = np.array([s[3] for s in suf])
            sn = np.array([s[4] for s in suf])
            for key, labs in labels.items():
                a = self.types[key]
                if a.mesh is not src.mesh or (a.partial and
                                              not self.cross_sums):
                    continue
                step = {"op": "transfer", "from_mesh": src.mesh.name,
                        "to_mesh": dm.name}
                tr = transition(spec, a, "transfer", step, t)
                rv = self.recv_vec(tr)
                for lab in labs:
                    peak = np.maximum(lab[0][None, :], sp).max(axis=1)
                    recv = (lab[1][None, :] + rv[None, :] + sr).max(axis=1)
                    ss = lab[2] + int(rv.max()) + sss
                    cc = lab[3] + 1 + sc
                    nn = lab[4] + 1 + sn
                    m = recv if metric == "max" else ss
                    o = ss if metric == "max" else recv
                    j = np.lexsort((o, nn, cc, m, peak))[0]
                    self.considered += len(suf)
                    key_ = (int(peak[j]), int(m[j]), int(cc[j]), int(nn[j]),
                            int(o[j]))
                    if best[0] is None or key_ < best[0]:
                        best[0] = key_
                        best[1] = lab[5] + [(step, t)] + suf[j][5]
        return best


def plan_json(spec, path):
    """A plan in redistplan's JSON format (figures from a replay)."""
    out = {"name": spec.name}
    out.update(spec.mesh_json())
    out.update({"shape": list(spec.shape), "dtype": spec.raw["dtype"],
                "reduce": spec.reduce, "from": spec.raw["from"],
                "to": spec.raw["to"]})
    steps = []
    for step, after in path:
        st = {"op": step["op"]}
        if step["op"] == "transfer":
            st["from_mesh"], st["to_mesh"] = step["from_mesh"], step["to_mesh"]
        else:
            if step.get("mesh") is not None:
                st["mesh"] = step["mesh"]
            for k in FIELDS[step["op"]]:
                st[k] = step[k]
        st["after"] = type_json(after, not spec.v1)
        steps.append(st)
    out["steps"] = steps
    r = replay(spec, out)
    for k, st in enumerate(steps):
        t = r.types[k + 1]
        st["local_shape"] = t.local_shape()
        st["local_bytes"] = max(t.held(d) for d in spec.devices) * spec.elem
        st["recv_bytes"] = max(r.step_recv[k].values(), default=0)
    stats = dict(r.stats)
    stats["recv_bytes_per_device"] = [r.recv[d] for d in spec.devices]
    stats["peak_bytes_per_device"] = [r.peak[d] for d in spec.devices]
    stats["objective"] = "bytes"
    out["stats"] = stats
    return out, r


def run_search(spec, args, metric):
    s = Searcher(spec, args.layouts, args.permute, args.cross_sums)
    best = s.run(args.max_a, args.max_b, metric)
    if best[0] is None:
        return None, None, s
    plan, r = plan_json(spec, best[1])
    return plan, r, s


def search_space_text(args):
    ops = "slice/all_gather/all_to_all/reduce_scatter/all_reduce"
    if args.permute:
        ops += "/permute"
    return ("<=%d %s on the source mesh + transfer%s to any non-partial type "
            "+ <=%d on the target mesh; layouts: %s"
            % (args.max_a, ops,
               " (summing pending sums)" if args.cross_sums else "",
               args.max_b,
               "ceil (and the spec's own)" if args.layouts == "ceil"
               else "ceil/balanced/chunk/derived (and the spec's own)"))


def cmd_search(args):
    spec = Spec(load_json(args.spec), args.spec)
    plan, r, s = run_search(spec, args, args.recv)
    if plan is None:
        print("NO PLAN %s in the search space (%s)"
              % (spec.name, search_space_text(args)))
        return EXIT_NOPLAN
    st = plan["stats"]
    line = ("OPTIMUM %s: peak %d B, recv %d B (max over devices), step-sum "
            "recv %d B, collectives %d, memory-efficient %s; %d types, "
            "%d edges tried, %d plans weighed"
            % (spec.name, st["peak_bytes"], st["recv_bytes"], r.stepsum,
               st["collectives"], "yes" if st["memory_efficient"] else "no",
               len(s.types), s.nedges, s.considered))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(plan, f, indent=1)
            f.write("\n")
    if not args.json_only:
        print(line)
    print(json.dumps(plan, indent=1))
    return EXIT_OK


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------

def cmd_compare(args):
    spec = Spec(load_json(args.spec), args.spec)
    cmd = [args.redistplan, "plan", "--json", "--objective", "bytes",
           args.spec] + (["--cross-sums"] if args.cross_sums
                         else ["--no-cross-sums"])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("ERROR %s: cannot run %s: %s" % (spec.name, args.redistplan, e))
        return EXIT_BAD
    best, br, _ = run_search(spec, args, "max")
    if p.returncode == 3:
        if best is None:
            print("AGREE %s: redistplan finds no plan, nor does the search"
                  % spec.name)
            return EXIT_OK
        print("FAIL %s: redistplan says no plan (exit 3: %s), the search "
              "finds peak %d recv %d" % (spec.name, p.stderr.strip(),
                                         best["stats"]["peak_bytes"],
                                         best["stats"]["recv_bytes"]))
        return EXIT_INVALID
    if p.returncode != 0:
        print("ERROR %s: redistplan exited %d: %s"
              % (spec.name, p.returncode, p.stderr.strip()[:500]))
        return EXIT_BAD
    try:
        plan = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print("ERROR %s: redistplan printed no JSON (%s)" % (spec.name, e))
        return EXIT_BAD
    if args.keep:
        with open(args.keep, "w") as f:
            f.write(p.stdout)
    try:
        r = replay(spec, plan, Values(spec, args.seed))
    except (Invalid, BadInput) as e:
        print("FAIL %s: redistplan's plan is rejected: %s" % (spec.name, e))
        return EXIT_INVALID
    ops = " ".join(st["op"] for st in plan["steps"])
    if r.errors:
        print("FAIL %s: redistplan's plan states wrong figures:" % spec.name)
        for e in r.errors:
            print("  " + e)
        return EXIT_INVALID
    rs = r.stats
    mine = "peak %d recv %d step-sum %d coll %d [%s]" % (
        rs["peak_bytes"], rs["recv_bytes"], r.stepsum, rs["collectives"], ops)
    if best is None:
        print("BETTER %s: redistplan's plan (%s) is outside the search space "
              "(%s), which has no plan" % (spec.name, mine,
                                           search_space_text(args)))
        return EXIT_OK
    bs = best["stats"]
    theirs = "peak %d recv %d step-sum %d coll %d [%s]" % (
        bs["peak_bytes"], bs["recv_bytes"], br.stepsum, bs["collectives"],
        " ".join(st["op"] for st in best["steps"]))
    a = (rs["peak_bytes"], rs["recv_bytes"])
    b = (bs["peak_bytes"], bs["recv_bytes"])
    if a > b:
        # Is the plan optimal under the C planner's own secondary figure
        # (sum over steps of each step's max recv, doc/uneven.md)?
        alt, ar, _ = run_search(spec, args, "stepsum")
        word, note = "FAIL", ""
        if (alt is not None and rs["peak_bytes"] == alt["stats"]["peak_bytes"]
                and r.stepsum <= ar.stepsum):
            word = "FAIL-OBJECTIVE"
            note = (" (but it is optimal for the step-sum recv figure, "
                    "%d, which doc/uneven.md names as the objective)"
                    % ar.stepsum)
        print("%s %s: redistplan %s is worse than the search optimum %s%s"
              % (word, spec.name, mine, theirs, note))
        if args.verbose:
            print(json.dumps(best, indent=1))
        explore(spec, args, rs, r)
        return EXIT_INVALID
    verdict = "AGREE" if a == b else "BETTER"
    extra = ""
    if a == b and rs["collectives"] != bs["collectives"]:
        extra = " (collectives differ)"
    print("%s %s: redistplan %s; search %s%s"
          % (verdict, spec.name, mine, theirs, extra))
    explore(spec, args, rs, r)
    return EXIT_OK


def explore(spec, args, rs, r):
    """With --explore: the richer layout space, for information only."""
    if not args.explore or args.layouts == "rules":
        return
    a2 = argparse.Namespace(**vars(args))
    a2.layouts = "rules"
    best, br, _ = run_search(spec, a2, "max")
    if best is None:
        return
    bs = best["stats"]
    if (bs["peak_bytes"], bs["recv_bytes"]) < (rs["peak_bytes"],
                                               rs["recv_bytes"]):
        print("  NOTE %s: with balanced/chunk/derived intermediate layouts "
              "the search finds peak %d recv %d step-sum %d [%s]"
              % (spec.name, bs["peak_bytes"], bs["recv_bytes"], br.stepsum,
                 " ".join(_describe_step(st) for st in best["steps"])))


def _describe_step(st):
    t = st["after"]
    lay = ""
    if "split" in t:
        lay += " split=" + t["split"]
    if "blocks" in t:
        lay += " blocks=" + json.dumps(t["blocks"]).replace(" ", "")
    return "%s(%s%s)" % (st["op"], json.dumps(t["dims"]).replace(" ", ""),
                         lay)


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="replay a plan at element level")
    c.add_argument("spec")
    c.add_argument("plan")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--max-elements", type=int, default=1 << 22,
                   help="replay values only up to this many elements "
                   "(default 4Mi); larger arrays are checked at box level")

    def search_opts(p):
        p.add_argument("--max-a", type=int, default=2,
                       help="most steps on the source mesh (default 2)")
        p.add_argument("--max-b", type=int, default=2,
                       help="most steps on the target mesh (default 2)")
        p.add_argument("--layouts", choices=("ceil", "rules"), default="ceil",
                       help="layouts of the types a plan passes through: "
                       "ceil (default), or also balanced, chunk and the "
                       "layout derived from the step's input (rules); the "
                       "spec's own source / target layouts always")
        p.add_argument("--permute", action="store_true",
                       help="also try permute steps")
        p.add_argument("--cross-sums", action="store_true",
                       help="also try transfers that sum the source's "
                       "pending contributions (redistplan's default; "
                       "without it, compare with --no-cross-sums)")
    s = sub.add_parser("search", help="exhaustive search (small specs)")
    s.add_argument("spec")
    search_opts(s)
    s.add_argument("--recv", choices=("max", "stepsum"), default="max",
                   help="second objective: stats.recv_bytes (max over "
                   "devices of their total; default) or the sum over steps "
                   "of each step's largest recv")
    s.add_argument("-o", "--output", help="also write the plan JSON here")
    s.add_argument("--json-only", action="store_true")
    m = sub.add_parser("compare", help="redistplan's plan against the oracle")
    m.add_argument("spec")
    m.add_argument("--redistplan", required=True)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--timeout", type=float, default=120)
    m.add_argument("--keep", help="write redistplan's plan here")
    m.add_argument("-v", "--verbose", action="store_true")
    m.add_argument("--explore", action="store_true",
                   help="also search with --layouts rules and say (NOTE) "
                   "when that finds a better plan than redistplan's; "
                   "never a failure")
    search_opts(m)
    args = ap.parse_args(argv)
    try:
        return {"check": cmd_check, "search": cmd_search,
                "compare": cmd_compare}[args.cmd](args)
    except BadInput as e:
        print("BAD INPUT: %s" % e, file=sys.stderr)
        return EXIT_BAD


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `| head` is fine
    sys.exit(main())
