"""Many arrays (doc/spec-format.md section 10, doc/arrays.md): Arrays,
PlanSet, load_arrays, plan_set and the whole-model helper state_dict_spec.

As a Spec, an Arrays is written as spec-file JSON ("arrays", the shared
"mesh" or "meshes", "budget_bytes") and read by the C loader, so its
errors carry the JSON path of the bad value ("arrays[3].to.dims[1]").  A
PlanSet is redist_plan_set_create's set: every array's plan and the
rounds they run in under the budget.  Each array's Spec and Plan are views
into the C objects (they keep them alive).
"""

import json
import os
from collections import namedtuple

from . import _redist
from ._types import (Spec, Plan, Mesh, _array_doc, _as_meshes, _meshes_obj,
                     _array_obj, _cost_args, _links_arg, _mesh_link_arg,
                     _OBJECTIVES)


def _lend_spec(arrays, i):
    s = Spec.__new__(Spec)
    arrays._spec(i, s)
    s._init_fields(None)
    return s


class Arrays(_redist.Arrays):
    """Many arrays on shared meshes, with an optional scratch budget
    (doc/spec-format.md section 10):

        Arrays(mesh, {"wq": dict(shape=(4096, 4096), dtype="bf16",
                                 src=("tp", None), dst=(None, "tp")),
                      ...}, budget_bytes=256 << 20, name="sync")

    mesh: a Mesh (or what Mesh() takes), or two named Mesh objects
    (src_mesh, dst_mesh) shared by every array (section 8).  arrays: a
    mapping of name to a dict with shape, dtype, src, dst and optionally
    reduce (as Spec takes them) or a (shape, dtype, src, dst) tuple; or a
    sequence of named Spec objects on that mesh.  budget_bytes: the most
    scratch any device may use at once beyond the caller's arrays (None:
    no budget, one round).  Raises SpecError from the C loader, with
    paths such as arrays[3].to.dims[1]."""

    def __init__(self, mesh, arrays, *, budget_bytes=None, name=None):
        src_mesh, dst_mesh = _as_meshes(mesh)
        pair = (src_mesh, dst_mesh) if dst_mesh is not None else src_mesh
        docs = []
        if hasattr(arrays, "items"):
            items = list(arrays.items())
        else:
            items = []
            for s in arrays:
                if not isinstance(s, Spec) or not s.name:
                    raise TypeError("arrays: a mapping of name to (shape, "
                                    "dtype, src, dst), or named redist.Spec "
                                    "objects")
                if s.meshes != ((src_mesh, dst_mesh) if dst_mesh else (src_mesh,)):
                    raise ValueError(f"array {s.name!r}: its meshes are not "
                                     "the set's")
                items.append((s.name, s))
        for n, a in items:
            if not isinstance(n, str):
                raise TypeError(f"array name {n!r} is not a str")
            if isinstance(a, Spec):
                doc = _array_obj(a)
            else:
                if isinstance(a, dict):
                    kw = dict(a)
                    try:
                        args = (kw.pop("shape"), kw.pop("dtype", "f32"),
                                kw.pop("src", ()), kw.pop("dst", ()),
                                kw.pop("reduce", None))
                    except KeyError:
                        raise ValueError(f"array {n!r}: no shape") from None
                    if kw:
                        raise ValueError(f"array {n!r}: unknown keys "
                                         f"{', '.join(sorted(kw))}")
                else:
                    if not isinstance(a, (tuple, list)) or not 2 <= len(a) <= 5:
                        raise TypeError(f"array {n!r}: a dict or a tuple "
                                        "(shape, dtype[, src, dst, reduce]), "
                                        f"not {a!r}")
                    args = tuple(a) + ((), (), None)[len(a) - 2:]
                doc = _array_doc(pair, *args, None)
                doc.pop("_types")
                for k in ("mesh", "meshes"):
                    doc.pop(k, None)
            docs.append({"name": n, **doc})
        if not docs:
            raise ValueError("Arrays: no arrays")
        top = {}
        if name is not None:
            top["name"] = name
        top.update(_meshes_obj(src_mesh, dst_mesh))
        if budget_bytes is not None:
            top["budget_bytes"] = int(budget_bytes)
        top["arrays"] = docs
        self._load_buffer(json.dumps(top), "<redist.Arrays>")
        self._init_fields()

    @classmethod
    def from_json(cls, text, source="<string>"):
        """Arrays from spec-file JSON text (str, bytes or a dict)."""
        if isinstance(text, dict):
            text = json.dumps(text)
        a = cls.__new__(cls)
        a._load_buffer(text, source)
        a._init_fields()
        return a

    def _init_fields(self):
        self.name, n, self.is_set, self.budget_bytes = self._info()
        self._specs = [_lend_spec(self, i) for i in range(n)]
        self.names = tuple(s.name for s in self._specs)

    def __len__(self):
        return len(self._specs)

    def __iter__(self):
        return iter(self._specs)

    def __getitem__(self, key):
        """An array's Spec, by name or index."""
        if isinstance(key, str):
            try:
                key = self.names.index(key)
            except ValueError:
                raise KeyError(f"no array {key!r} in the set") from None
        return self._specs[key]

    @property
    def meshes(self):
        return self._specs[0].meshes

    def to_json_obj(self):
        """The set as a spec-file dict (section 10)."""
        top = {}
        if self.name:
            top["name"] = self.name
        s0 = self._specs[0]
        top.update(_meshes_obj(s0.src_mesh, s0.dst_mesh if s0.two_mesh else None))
        if self.budget_bytes is not None:
            top["budget_bytes"] = self.budget_bytes
        top["arrays"] = [{"name": s.name, **_array_obj(s)} for s in self._specs]
        return top

    def __repr__(self):
        return (f"<redist.Arrays {self.name or '(unnamed)'}: {len(self)} arrays, "
                f"budget {self.budget_bytes}>")


def load_arrays(path):
    """Load a spec file with "arrays" (a one-array spec file loads as a
    set of one, is_set False).  SpecError carries .file and .path."""
    a = Arrays.__new__(Arrays)
    a._load_file(os.fspath(path))
    a._init_fields()
    return a


Round = namedtuple("Round", "index arrays scratch_bytes recv_bytes "
                   "peak_bytes time_s collectives exchanges")
Round.__doc__ = """One round of a PlanSet: its index, the names of its
arrays, and redist_round_stats_t's figures (the scratch per device at
most; recv, peak and time the sums of its arrays' plan figures)."""


class PlanSet(_redist.PlanSet):
    """The plans of an Arrays and the rounds they run in (plan_set builds
    it; include/redist/exec.h).  str() is the table of `redistplan plan`;
    .plans (name -> Plan), .rounds (Round), .stats, .to_json().
    .endpoint: None (planned for MPI and the simulator), or "shmem"
    (planned for an OpenSHMEM Executor's endpoint: plan_set(executor=))."""

    def __init__(self, arrays, *, objective="time", cost=None, topology=None,
                 max_peak_bytes=0, max_states=0, preserve_src=True,
                 executor=None, mesh_link=None):
        if not isinstance(arrays, Arrays):
            raise TypeError(f"plan_set: a redist.Arrays, not "
                            f"{type(arrays).__name__}")
        if objective not in _OBJECTIVES:
            raise ValueError(f"objective: 'bytes' or 'time', not {objective!r}")
        endpoint = None
        if executor is not None:
            if not hasattr(executor, "_endpoint"):
                raise TypeError(f"executor: a redist.shmem.Executor (MPI "
                                f"sets need none), not "
                                f"{type(executor).__name__}")
            endpoint = executor._endpoint()
        path, text = _cost_args(cost)
        self._create(arrays, _OBJECTIVES[objective], int(max_peak_bytes),
                     int(max_states), path, text,
                     _links_arg(topology, arrays[0].mesh), bool(preserve_src),
                     endpoint, _mesh_link_arg(mesh_link))
        self.endpoint = None if executor is None else "shmem"
        self.arrays = arrays
        self.objective = objective
        self.preserve_src = bool(preserve_src)
        self.names = arrays.names
        self._plans = None

    def __len__(self):
        return len(self.names)

    @property
    def plans(self):
        """{name: Plan}: each array's plan (a view into the set)."""
        if self._plans is None:
            out = {}
            for i, n in enumerate(self.names):
                p, s = Plan.__new__(Plan), Spec.__new__(Spec)
                self._plan(i, p, s)
                s._init_fields(None)
                p.spec, p.objective, p._steps = s, self.objective, None
                out[n] = p
            self._plans = out
        return dict(self._plans)

    def _index(self, name):
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no array {name!r} in the set") from None

    def round_of(self, name):
        """The round of array `name`."""
        return self._array(self._index(name))[0]

    def scratch_of(self, name):
        """Array `name`'s executor scratch per device (bytes, at most)."""
        return self._array(self._index(name))[1]

    @property
    def rounds(self):
        """The rounds, in the order they run (a list of Round)."""
        by = {}
        for i, n in enumerate(self.names):
            by.setdefault(self._array(i)[0], []).append(n)
        out = []
        for r in range(self._stats()["nrounds"]):
            d = self._round(r)
            out.append(Round(r, tuple(by.get(r, ())), d["scratch_bytes"],
                             d["recv_bytes"], d["peak_bytes"], d["time_s"],
                             d["collectives"], d["exchanges"]))
        return out

    @property
    def stats(self):
        """redist_plan_set_stats as a dict (narrays, nrounds, budget_bytes
        (None without a budget), scratch_bytes, peak_bytes, recv_bytes,
        time_s, collectives, exchanges, memory_efficient)."""
        return self._stats()

    num_rounds = property(lambda self: self._stats()["nrounds"])
    scratch_bytes = property(lambda self: self._stats()["scratch_bytes"])
    peak_bytes = property(lambda self: self._stats()["peak_bytes"])
    recv_bytes = property(lambda self: self._stats()["recv_bytes"])

    def to_dict(self):
        """The set's JSON (section 10) as a dict."""
        return json.loads(self.to_json())

    def src_block_shapes(self, rank):
        """{name: shape of device `rank`'s source block, or None where it
        holds none (outside a two-mesh array's source mesh)}."""
        return {s.name: s.src_block_shape(rank) for s in self.arrays}

    def dst_block_shapes(self, rank):
        """As src_block_shapes, for the destination blocks."""
        return {s.name: s.dst_block_shape(rank) for s in self.arrays}

    def __str__(self):
        return self.table()

    def __repr__(self):
        try:
            st = self._stats()
        except ValueError:
            return "<redist.PlanSet (not planned)>"
        return (f"<redist.PlanSet {self.arrays.name or '(unnamed)'}: "
                f"{st['narrays']} arrays in {st['nrounds']} rounds, scratch "
                f"{st['scratch_bytes']} B>")


def plan_set(arrays, *, objective="time", cost=None, topology=None,
             max_peak_bytes=0, max_states=0, preserve_src=True, executor=None,
             mesh_link=None):
    """Plan every array of an Arrays and group them into rounds under its
    budget (redist_plan_set_create).  Options as plan(); preserve_src
    (default True, as execute) sizes each array's scratch for runs that
    never write the source blocks; the table then equals `redistplan plan
    --preserve-src` (preserve_src=False: without it).  executor: a
    redist.shmem.Executor to plan for its endpoint, which a set needs to
    run on OpenSHMEM (its programs and scratch are that endpoint's; the
    set then runs on OpenSHMEM Executors of the same options only).
    mesh_link: as plan() (two-mesh arrays).
    Raises PlanError (ERR_INFEASIBLE when an array alone needs more
    scratch than the budget: the message names it and the least budget
    that works)."""
    return PlanSet(arrays, objective=objective, cost=cost, topology=topology,
                   max_peak_bytes=max_peak_bytes, max_states=max_states,
                   preserve_src=preserve_src, executor=executor,
                   mesh_link=mesh_link)


def _rule(rule, name, shape, what):
    if callable(rule):
        return rule(name, shape)
    if hasattr(rule, "get") and not isinstance(rule, (tuple, list)):
        if name in rule:
            return rule[name]
        if None in rule:
            return rule[None]
        raise ValueError(f"{what}: no sharding for {name!r} (give it, or a "
                         "default under the key None)")
    return rule


def state_dict_spec(state, src_mesh, dst_mesh, src, dst, *, budget_bytes=None,
                    name=None):
    """The many-array spec that syncs a whole model's state dict from one
    mesh to another (a trainer's weights to an inference engine,
    a checkpoint resharded):

        spec = redist.state_dict_spec(
            {"wq": ((4096, 4096), "bf16"), "norm": ((4096,), "f32")},
            train, infer,
            src={"wq": ("tp", None), None: ()},     # None: the default
            dst=lambda name, shape: ("tp",) if len(shape) == 2 else (),
            budget_bytes=256 << 20)

    state: a mapping of parameter name to (global shape, dtype), or to any
    object with .shape and .dtype (a NumPy array, a torch tensor or
    jax.ShapeDtypeStruct: only those two are read).  src_mesh, dst_mesh:
    named Mesh objects (the same object twice: one mesh).  src, dst: the
    sharding of every array, as a Type or PartitionSpec-like tuple for all
    of them, a mapping of name to one (with an optional default under the
    key None), or a callable (name, shape) -> one.  Returns an Arrays
    (plan it with plan_set)."""
    meshes = src_mesh if src_mesh is dst_mesh else (src_mesh, dst_mesh)
    arrays = {}
    for n, v in state.items():
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            shape, dtype = tuple(v.shape), v.dtype
        elif isinstance(v, (tuple, list)) and len(v) == 2:
            shape, dtype = v
        else:
            raise TypeError(f"state[{n!r}]: (shape, dtype) or an object with "
                            f".shape and .dtype, not {v!r}")
        shape = tuple(int(x) for x in shape)
        arrays[n] = dict(shape=shape, dtype=dtype,
                         src=_rule(src, n, shape, "src"),
                         dst=_rule(dst, n, shape, "dst"))
    return Arrays(meshes, arrays, budget_bytes=budget_bytes, name=name)


__all__ = ["Arrays", "PlanSet", "Round", "load_arrays", "plan_set",
           "state_dict_spec"]
