"""Planning: meshes, sharding types, specs and plans (doc/python.md).

The C layer (redist._redist) takes plain data; this module turns what
users already write (JAX PartitionSpec-like tuples, DTensor placements,
NumPy dtypes) into it.  A Spec is built by writing the spec-file JSON of
doc/spec-format.md section 3 and loading it with the C loader, so errors carry the
JSON path of the bad value ("from.dims[1][0]") and every key the loader
learns works here unchanged.

Version-2 keys (doc/spec-format.md sections 7-10): split / blocks
(Type(split=..., blocks=...)), named meshes with device lists
(Mesh(devices=..., name=...); Spec((src_mesh, dst_mesh), ...) writes
"meshes" and each type's "mesh") and many arrays (Arrays, in _sets.py).
_LOADER_KEYS lists the keys written; 'split' is left out when every dim
divides (every rule then gives the same blocks).
"""

import json
import os
from collections import namedtuple

from . import _redist
from ._redist import SpecError, PlanError

# Version-2 spec keys the linked C loader accepts (doc/spec-format.md sections 7-10).
_LOADER_KEYS = frozenset({"split", "blocks", "meshes", "devices", "arrays"})

_SPLIT_RULES = ("ceil", "balanced", "chunk")

# ------------------------------------------------------------------ dtypes

_DTYPE_ALIASES = {
    "float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32",
    "float": "f32", "single": "f32", "float64": "f64", "double": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "complex64": "c64", "complex128": "c128", "cfloat": "c64",
    "cdouble": "c128",
}

_NUMPY_NAMES = {"f16": "float16", "f32": "float32", "f64": "float64",
                "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32",
                "u64": "uint64", "c64": "complex64", "c128": "complex128"}


def dtype_name(dtype):
    """The spec-file name ("bf16", "f32", ...) of a dtype given as that
    name, a NumPy dtype or scalar type (np.float32, np.dtype("f4")), a
    NumPy name ("float32"), or anything whose str() ends in one
    ("torch.float32", ml_dtypes' bfloat16)."""
    if isinstance(dtype, str):
        s = dtype
    else:
        s = None
        try:
            import numpy
            s = numpy.dtype(dtype).name
        except Exception:
            pass
        if s is None:
            s = getattr(dtype, "__name__", None) or str(dtype)
    key = s.strip().lower().rsplit(".", 1)[-1]
    key = _DTYPE_ALIASES.get(key, key)
    if key not in _redist.DTYPES:
        raise ValueError(f"dtype {dtype!r}: not one of {', '.join(_redist.DTYPES)} "
                         "(or their NumPy names)")
    return key


def numpy_dtype(name):
    """The NumPy dtype of a spec-file dtype name; bf16 (which NumPy lacks)
    gives uint16, the view redist.execute accepts for it."""
    import numpy
    name = dtype_name(name)
    if name == "bf16":
        return numpy.dtype(numpy.uint16)
    return numpy.dtype(_NUMPY_NAMES[name])

# -------------------------------------------------------------------- mesh


class Mesh:
    """A device mesh: ordered named axes, devices row-major (the first axis
    varies slowest), as doc/spec-format.md section 1 and JAX's Mesh.

        Mesh({"data": 2, "model": 4})  or  Mesh([("data", 2), ("model", 4)])

    `devices` (the global device id, i.e. the MPI rank, of each mesh device,
    row-major; default 0..size-1) and `name` are the keys of
    doc/spec-format.md section 8: a Spec over two meshes takes two named
    Mesh objects, Spec((train, infer), ...)."""

    __slots__ = ("axes", "devices", "name", "size")

    def __init__(self, axes, *, devices=None, name=None):
        if isinstance(axes, Mesh):
            axes, devices, name = axes.axes, axes.devices, axes.name
        items = list(axes.items()) if hasattr(axes, "items") else list(axes)
        try:
            pairs = tuple((n, int(s)) for n, s in items)
        except (TypeError, ValueError):
            raise TypeError("Mesh: a dict {name: size} or a sequence of "
                            "(name, size) pairs") from None
        for n, _ in pairs:
            if not isinstance(n, str):
                raise TypeError(f"Mesh: axis name {n!r} is not a str")
        object.__setattr__(self, "axes", pairs)
        object.__setattr__(self, "size", _redist.mesh_check(
            tuple(n for n, _ in pairs), tuple(s for _, s in pairs)))
        if devices is not None:
            devices = tuple(int(d) for d in devices)
            if len(devices) != self.size:
                raise ValueError(f"Mesh: {len(devices)} devices for a mesh of "
                                 f"{self.size}")
            if devices == tuple(range(self.size)):
                devices = None
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Mesh: name {name!r} is not a str")
        object.__setattr__(self, "devices", devices)
        object.__setattr__(self, "name", name)

    def __setattr__(self, k, v):
        raise AttributeError("Mesh is immutable")

    @property
    def names(self):
        return tuple(n for n, _ in self.axes)

    @property
    def sizes(self):
        return tuple(s for _, s in self.axes)

    @property
    def shape(self):
        """{name: size}, as jax.sharding.Mesh.shape."""
        return dict(self.axes)

    def __len__(self):
        return len(self.axes)

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axes == other.axes
                and self.devices == other.devices and self.name == other.name)

    def __hash__(self):
        return hash((self.axes, self.devices, self.name))

    def __repr__(self):
        inner = ", ".join(f"{n!r}: {s}" for n, s in self.axes)
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("devices", "name")
                        if getattr(self, k) is not None)
        return f"Mesh({{{inner}}}{extra})"

    def to_json_obj(self):
        """The spec file's "mesh" value."""
        return [[n, s] for n, s in self.axes]

    def to_meshes_entry(self):
        """This mesh's entry in a spec file's "meshes" (section 8)."""
        return {"axes": self.to_json_obj(),
                "devices": list(self.device_ids)}

    @property
    def device_ids(self):
        """The global device id (MPI rank) of each mesh device, row-major."""
        return self.devices if self.devices is not None else tuple(range(self.size))

    def rank_of(self, device):
        """The mesh rank of global device `device`, or None outside it."""
        try:
            return self.device_ids.index(int(device))
        except ValueError:
            return None

    def coords(self, rank):
        """The coordinates of device `rank`, one per axis."""
        if not 0 <= rank < self.size:
            raise IndexError(f"rank {rank} of a mesh of {self.size} devices")
        out = []
        for s in reversed(self.sizes):
            out.append(rank % s)
            rank //= s
        return tuple(reversed(out))

# -------------------------------------------------------------------- type


def _dim_axes(d, where):
    if d is None:
        return ()
    if isinstance(d, str):
        return (d,)
    try:
        axes = tuple(d)
    except TypeError:
        raise TypeError(f"{where}: a dim is None, an axis name or a tuple of "
                        f"axis names, not {d!r}") from None
    for a in axes:
        if not isinstance(a, str):
            raise TypeError(f"{where}: axis {a!r} is not a str")
    return axes


class Type:
    """A sharding type: for each array dim the mesh axes that split it
    (major first), and the partial axes (pending reductions).

        Type(("data", None))                  PartitionSpec("data", None)
        Type((("data", "model"), None))       PartitionSpec(("data", "model"), None)
        Type((None, "model"), partial=("data",))

    A dim is None (replicated), one axis name or a tuple of them, as in a
    JAX PartitionSpec; a PartitionSpec object itself is accepted.  A type
    with fewer dims than the array is padded with replicated dims.  `split`,
    `blocks` and `mesh` are the version-2 keys of doc/spec-format.md sections 7-8.
    `reduce` records the op of DTensor Partial placements (from_dtensor)."""

    __slots__ = ("dims", "partial", "split", "blocks", "mesh", "reduce")

    def __init__(self, dims=(), partial=(), *, split=None, blocks=None,
                 mesh=None, reduce=None):
        if isinstance(dims, Type):
            t = dims
            dims, partial, split, blocks, mesh, reduce = (
                t.dims, t.partial, t.split, t.blocks, t.mesh, t.reduce)
        if isinstance(dims, (str, type(None))):
            dims = (dims,)
        d = tuple(_dim_axes(x, f"dim {i}") for i, x in enumerate(dims))
        p = tuple(_dim_axes(partial, "partial"))
        if split is not None and split not in _SPLIT_RULES:
            raise ValueError(f"split: one of {', '.join(_SPLIT_RULES)}, "
                             f"not {split!r}")
        if blocks is not None:
            blocks = tuple(None if b is None else tuple(int(x) for x in b)
                           for b in blocks)
        set_ = object.__setattr__
        set_(self, "dims", d)
        set_(self, "partial", p)
        set_(self, "split", split)
        set_(self, "blocks", blocks)
        set_(self, "mesh", mesh)
        set_(self, "reduce", reduce)

    def __setattr__(self, k, v):
        raise AttributeError("Type is immutable")

    @property
    def ndim(self):
        return len(self.dims)

    def padded(self, ndim):
        """This type with replicated dims appended up to `ndim`."""
        if self.ndim > ndim:
            raise ValueError(f"type {self!r} has {self.ndim} dims, the array {ndim}")
        if self.ndim == ndim:
            return self
        t = Type(self)
        object.__setattr__(t, "dims", self.dims + ((),) * (ndim - self.ndim))
        if self.blocks is not None and len(self.blocks) < ndim:
            object.__setattr__(t, "blocks", tuple(self.blocks) +
                               (None,) * (ndim - len(self.blocks)))
        return t

    def partition_spec(self):
        """The dims as a PartitionSpec-like tuple (None, "x" or a tuple)."""
        return tuple(None if not d else d[0] if len(d) == 1 else d
                     for d in self.dims)

    def _key(self):
        return (self.dims, frozenset(self.partial), self.split, self.blocks,
                self.mesh)

    def __eq__(self, other):
        if isinstance(other, tuple):
            other = Type(other)
        return isinstance(other, Type) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        s = f"Type({self.partition_spec()!r}"
        if self.partial:
            s += f", partial={self.partial!r}"
        for k in ("split", "blocks", "mesh", "reduce"):
            if getattr(self, k) is not None:
                s += f", {k}={getattr(self, k)!r}"
        return s + ")"

    def __str__(self):
        s = "[" + ", ".join("{" + ",".join(d) + "}" for d in self.dims) + "]"
        if self.partial:
            s += " partial{" + ",".join(self.partial) + "}"
        return s

    def to_json_obj(self, shape=None, mesh=None):
        """The spec file's "from" / "to" value.  With the array's shape
        and mesh, a 'split' the C loader does not read yet is left out
        when every dim divides (every rule then gives the same blocks)."""
        o = {"dims": [list(d) for d in self.dims], "partial": list(self.partial)}
        if self.split is not None:
            if "split" in _LOADER_KEYS or not _divides(self, shape, mesh):
                o["split"] = self.split
        if self.blocks is not None:
            if "blocks" not in _LOADER_KEYS:
                raise NotImplementedError(
                    "Type(blocks=...): explicit block lengths (doc/spec-format.md "
                    "section 7) are not supported by this libredist yet")
            o["blocks"] = [None if b is None else list(b) for b in self.blocks]
        if self.mesh is not None:
            if "meshes" not in _LOADER_KEYS:
                raise NotImplementedError(
                    "Type(mesh=...): named meshes (doc/spec-format.md section 8) are "
                    "not supported by this libredist yet")
            o["mesh"] = self.mesh
        return o


def _divides(t, shape, mesh):
    if shape is None or mesh is None:
        return False
    sizes = dict(mesh.axes)
    for n, d in zip(shape, t.dims):
        k = 1
        for a in d:
            k *= sizes.get(a, 1)
        if n % k:
            return False
    return True


def _as_type(t, what):
    if isinstance(t, Type):
        return t
    if isinstance(t, dict):
        return Type(t.get("dims", ()), t.get("partial", ()),
                    split=t.get("split"), blocks=t.get("blocks"),
                    mesh=t.get("mesh"))
    if t is None or isinstance(t, (str, tuple, list)):
        return Type(t if t is not None else ())
    raise TypeError(f"{what}: a redist.Type, a PartitionSpec-like tuple or a "
                    f"dict, not {type(t).__name__}")

# ----------------------------------------------------------- conversions


def _mesh_pairs(mesh_axes):
    if isinstance(mesh_axes, Mesh):
        return mesh_axes.axes
    items = mesh_axes.items() if hasattr(mesh_axes, "items") else mesh_axes
    return tuple((str(n), int(s)) for n, s in items)


def from_named_sharding(mesh_axes, partition_spec, *, partial=(), ndim=None):
    """The Type of a JAX NamedSharding given as plain data: the mesh's axes
    (jax's `mesh.shape`, a {name: size} mapping, or (name, size) pairs) and
    the PartitionSpec (a tuple: None, an axis name or a tuple of names per
    dim).  Trailing dims a PartitionSpec leaves out are replicated (give
    `ndim` to pad).  Unknown or repeated axis names raise ValueError."""
    names = [n for n, _ in _mesh_pairs(mesh_axes)]
    dims = tuple(partition_spec) if partition_spec is not None else ()
    t = Type(dims, partial)
    seen = set()
    for i, d in enumerate(t.dims):
        for a in d:
            if a not in names:
                raise ValueError(f"PartitionSpec dim {i}: axis {a!r} is not in "
                                 f"the mesh (axes: {', '.join(names)})")
            if a in seen:
                raise ValueError(f"PartitionSpec: axis {a!r} is used twice")
            seen.add(a)
    for a in t.partial:
        if a not in names or a in seen:
            raise ValueError(f"partial axis {a!r} is not a free axis of the mesh")
    return t.padded(ndim) if ndim is not None else t


_DT_REDUCE = {"sum": "sum", "max": "max", "min": "min", "prod": "prod",
              "product": "prod"}


def _placement(p, i):
    """(kind, arg) of a DTensor placement as plain data: ("Shard", 0),
    ("Replicate",), ("Partial", "sum"), "Shard(0)", "Replicate()",
    "Partial()" or "Partial(max)"."""
    if isinstance(p, str):
        s = p.strip()
        kind, _, rest = s.partition("(")
        arg = rest.rstrip(")").strip().strip("'\"") if rest else ""
        if kind == "Shard":
            arg = arg.split("=")[-1]
        p = (kind, arg) if arg else (kind,)
    if not isinstance(p, (tuple, list)) or not p:
        raise TypeError(f"placement {i}: a tuple such as ('Shard', 0) or a str "
                        f"such as 'Shard(0)', not {p!r}")
    kind = str(p[0])
    if kind == "Shard":
        if len(p) != 2:
            raise ValueError(f"placement {i}: Shard takes the tensor dim")
        return kind, int(p[1])
    if kind == "Replicate":
        return kind, None
    if kind == "Partial":
        op = str(p[1]).lower() if len(p) > 1 else "sum"
        op = op.split("=")[-1].strip("'\"") if op else "sum"
        if op not in _DT_REDUCE:
            raise ValueError(f"placement {i}: Partial({op}) has no redist "
                             f"reduction (sum, max, min, prod)")
        return kind, _DT_REDUCE[op]
    raise ValueError(f"placement {i}: unknown kind {kind!r} (Shard, Replicate, "
                     "Partial)")


def from_dtensor(mesh_shape_names, placements, *, ndim=None):
    """The Type of a PyTorch DTensor given as plain data: the DeviceMesh as
    (name, size) pairs or {name: size} (its mesh_dim_names and shape), and
    one placement per mesh dim: ("Shard", d), ("Replicate",),
    ("Partial", "sum") or the strings "Shard(0)", "Replicate()",
    "Partial(sum)".  Mesh dims that Shard the same tensor dim split it in
    mesh-dim order (the first is the major one), as DTensor does; the type
    says split="chunk" (DTensor's rule for uneven dims).  The Partial op is
    kept as the type's `reduce` (all Partial placements must agree).
    `ndim` (the tensor's rank) pads the dims; without it the type has as
    many dims as the highest sharded one needs."""
    pairs = _mesh_pairs(mesh_shape_names)
    placements = list(placements)
    if len(placements) != len(pairs):
        raise ValueError(f"{len(placements)} placements for a mesh of "
                         f"{len(pairs)} dims")
    parsed = [_placement(p, i) for i, p in enumerate(placements)]
    top = max([a for k, a in parsed if k == "Shard"], default=-1) + 1
    n = top if ndim is None else ndim
    dims = [[] for _ in range(n)]
    partial, reduce = [], None
    for (name, _), (kind, arg) in zip(pairs, parsed):
        if kind == "Shard":
            if arg < 0:
                arg += n
            if not 0 <= arg < n:
                raise ValueError(f"Shard({arg}) on mesh dim {name!r}: the "
                                 f"tensor has {n} dims")
            dims[arg].append(name)
        elif kind == "Partial":
            if reduce is not None and reduce != arg:
                raise ValueError(f"Partial placements reduce by both {reduce} "
                                 f"and {arg}; redist has one reduction per array")
            reduce = arg
            partial.append(name)
    return Type(tuple(tuple(d) for d in dims), tuple(partial), split="chunk",
                reduce=reduce)

# -------------------------------------------------------------------- spec


def _as_meshes(mesh):
    """(src_mesh, dst_mesh or None) from a Mesh, what Mesh() takes, or a
    pair of Mesh objects (two meshes)."""
    if (isinstance(mesh, (tuple, list)) and len(mesh) == 2
            and all(isinstance(m, Mesh) for m in mesh)):
        a, b = mesh
        if a.name is None or b.name is None or a.name == b.name:
            raise ValueError("two meshes: each needs its own name "
                             "(Mesh(..., name='train'))")
        return a, b
    return (mesh if isinstance(mesh, Mesh) else Mesh(mesh)), None


def _meshes_obj(src_mesh, dst_mesh):
    """The spec file's "mesh", or its "meshes" (section 8) for two meshes
    or one placed on other devices."""
    if dst_mesh is None and src_mesh.devices is None:
        return {"mesh": src_mesh.to_json_obj()}
    ms = [src_mesh] if dst_mesh is None else [src_mesh, dst_mesh]
    return {"meshes": {m.name or "mesh": m.to_meshes_entry() for m in ms}}


def _side_type(t, what, shape, mesh, two):
    t = _as_type(t, what).padded(len(shape))
    if two and t.mesh is None:
        t = Type(t)
        object.__setattr__(t, "mesh", mesh.name)
    return t


def _array_doc(mesh, shape, dtype, src, dst, reduce, name):
    """The spec-file dict of one array (with its meshes); "_types" holds
    the (src, dst) Types."""
    src_mesh, dst_mesh = _as_meshes(mesh)
    two = dst_mesh is not None
    shape = tuple(int(n) for n in shape)
    src = _side_type(src, "src", shape, src_mesh, two)
    dst = _side_type(dst, "dst", shape, dst_mesh or src_mesh, two)
    if reduce is None:
        ops = {t.reduce for t in (src, dst) if t.reduce is not None}
        if len(ops) > 1:
            raise ValueError(f"src and dst reduce by {' and '.join(sorted(ops))}")
        reduce = ops.pop() if ops else "sum"
    doc = {}
    if name is not None:
        doc["name"] = name
    doc.update(_meshes_obj(src_mesh, dst_mesh))
    doc["shape"] = list(shape)
    doc["dtype"] = dtype_name(dtype)
    doc["from"] = src.to_json_obj(shape, src_mesh)
    doc["to"] = dst.to_json_obj(shape, dst_mesh or src_mesh)
    doc["reduce"] = str(reduce)
    doc["_types"] = (src, dst)
    return doc


def _array_obj(spec):
    """A Spec's array keys (shape, dtype, from, to, reduce, expect)."""
    doc = {"shape": list(spec.shape), "dtype": spec.dtype,
           "from": spec.src.to_json_obj(spec.shape, spec.src_mesh),
           "to": spec.dst.to_json_obj(spec.shape, spec.dst_mesh),
           "reduce": spec.reduce}
    if spec._fields["expect"]:
        doc["expect"] = {k: list(v) if isinstance(v, tuple) else v
                         for k, v in spec._fields["expect"].items()}
    return doc


class Spec(_redist.Spec):
    """A redistribution problem (doc/spec-format.md section 3):

        Spec(mesh, shape, dtype, src, dst, reduce="sum", name=None)

    mesh: a Mesh or what Mesh() takes, or two named Mesh objects
    (src_mesh, dst_mesh) for a spec over two meshes (section 8; each type
    then lives on its own mesh); shape: the global shape; dtype: a
    NumPy dtype, its name or a spec-file name; src / dst: a Type, a
    PartitionSpec-like tuple or a spec-file dict {"dims": ..., "partial":
    ...}; reduce: the op of partial axes (default: the types' own, from
    from_dtensor, else "sum").  Raises SpecError (with .path such as
    "to.dims[1]") when the C loader rejects it."""

    def __init__(self, mesh, shape, dtype="f32", src=(), dst=(), reduce=None,
                 *, name=None, allow_unplannable=False):
        doc = _array_doc(mesh, shape, dtype, src, dst, reduce, name)
        types = doc.pop("_types")
        self._load_buffer(json.dumps(doc), "<redist.Spec>",
                          _redist.SPEC_ALLOW_UNPLANNABLE if allow_unplannable else 0)
        self._init_fields(types)

    @classmethod
    def from_json(cls, text, source="<string>", *, allow_unplannable=False):
        """A spec from spec-file JSON text (str, bytes or a dict)."""
        if isinstance(text, dict):
            text = json.dumps(text)
        s = cls.__new__(cls)
        s._load_buffer(text, source,
                       _redist.SPEC_ALLOW_UNPLANNABLE if allow_unplannable else 0)
        s._init_fields(None)
        return s

    @staticmethod
    def many(mesh, arrays, *, budget_bytes=None, name=None):
        """Many arrays in one spec (doc/spec-format.md section 10): the
        redist.Arrays(mesh, arrays, budget_bytes=, name=) (see there)."""
        from ._sets import Arrays
        return Arrays(mesh, arrays, budget_bytes=budget_bytes, name=name)

    def _init_fields(self, types):
        info = self._info()
        self._fields = info
        meshes = []
        for key in ("src_mesh", "dst_mesh"):
            mname, axes, devs = info[key]
            meshes.append(Mesh(axes, devices=devs, name=mname or None))
        self.src_mesh, self.dst_mesh = meshes
        self.mesh = meshes[0]
        if types is not None:
            self.src, self.dst = types
            return
        # a loaded spec's rule comes back; explicit "blocks" of a loaded
        # file are not visible through the public C API yet (the plan
        # made from the loaded spec has them; a re-serialised Type has not)
        two = info["num_meshes"] == 2
        self.src = Type(*info["src"], split=None if info["src_split"] == "ceil"
                        else info["src_split"],
                        mesh=self.src_mesh.name if two else None)
        self.dst = Type(*info["dst"], split=None if info["dst_split"] == "ceil"
                        else info["dst_split"],
                        mesh=self.dst_mesh.name if two else None)

    two_mesh = property(lambda self: self._fields["num_meshes"] == 2,
                        doc="True for a spec over two meshes (section 8).")
    num_devices = property(lambda self: self._fields["num_devices"],
                           doc="The devices (MPI ranks) a plan runs on: "
                           "0..num_devices-1.")

    @property
    def meshes(self):
        """(src_mesh, dst_mesh) for a two-mesh spec, else (mesh,)."""
        return (self.src_mesh, self.dst_mesh) if self.two_mesh else (self.mesh,)

    name = property(lambda self: self._fields["name"])
    shape = property(lambda self: self._fields["shape"])
    dtype = property(lambda self: self._fields["dtype"],
                     doc="The doc/spec-format.md dtype name ('bf16', 'f32', ...).")
    reduce = property(lambda self: self._fields["reduce"])
    src_bytes = property(lambda self: self._fields["src_bytes"],
                         doc="Bytes of a device's source block.")
    dst_bytes = property(lambda self: self._fields["dst_bytes"],
                         doc="Bytes of a device's destination block.")
    # None for a spec with uneven dims: each device's shape differs
    src_local_shape = property(lambda self: self._fields["src_local_shape"])
    dst_local_shape = property(lambda self: self._fields["dst_local_shape"])
    expect = property(lambda self: dict(self._fields["expect"]),
                      doc="The spec file's expect block (a dict).")

    @property
    def np_dtype(self):
        """The NumPy dtype of the blocks (uint16 for bf16)."""
        return numpy_dtype(self.dtype)

    def _box(self, side, rank):
        rank = int(rank)
        if self.two_mesh and rank >= self.num_devices:
            return None  # a rank beyond both meshes holds nothing
        return self._block(side, rank)

    def _slices(self, side, rank):
        box = self._box(side, rank)
        return None if box is None else tuple(slice(a, b) for a, b in box)

    def src_slices(self, rank):
        """The global index ranges of device `rank`'s source block (a tuple
        of slices: global_array[spec.src_slices(r)]), by the source's split
        rule (uneven dims included: blocks may differ or be empty).  Partial
        axes hold contributions, not slices: they are not reflected here.
        `rank` is a global device id (the MPI rank); None for a device
        outside the source's mesh (two meshes; also a rank >= num_devices,
        which takes part in a run without holding anything)."""
        return self._slices(0, rank)

    def dst_slices(self, rank):
        """As src_slices, for the destination block."""
        return self._slices(1, rank)

    def _shape(self, side, rank):
        box = self._box(side, rank)
        return None if box is None else tuple(b - a for a, b in box)

    def src_block_shape(self, rank):
        """The shape of device `rank`'s source block (with uneven dims it
        differs by device; src_local_shape is the same for every device
        and None then).  None for a device outside the source's mesh."""
        return self._shape(0, rank)

    def dst_block_shape(self, rank):
        """As src_block_shape, for the destination block."""
        return self._shape(1, rank)

    def to_json_obj(self):
        """The spec as a spec-file dict (doc/spec-format.md section 3)."""
        doc = {}
        if self.name:
            doc["name"] = self.name
        doc.update(_meshes_obj(self.src_mesh, self.dst_mesh
                               if self.two_mesh else None))
        doc.update(_array_obj(self))
        return doc

    def __repr__(self):
        return (f"Spec({self.mesh!r}, {self.shape!r}, {self.dtype!r}, "
                f"{self.src!r}, {self.dst!r}, reduce={self.reduce!r}"
                + (f", name={self.name!r})" if self.name else ")"))


def load_spec(path, *, allow_unplannable=False):
    """Load a spec file.  SpecError carries .file, .path (a JSON path) and,
    for syntax errors, .line and .column."""
    s = Spec.__new__(Spec)
    s._load_file(os.fspath(path),
                 _redist.SPEC_ALLOW_UNPLANNABLE if allow_unplannable else 0)
    s._init_fields(None)
    return s

# -------------------------------------------------------------------- plan

Step = namedtuple("Step", "op dim from_dim to_dim axis after local_shape "
                  "local_bytes recv_bytes time_s mesh")
Step.__doc__ = """One step of a plan (doc/spec-format.md section 2): op name; dim
(slice, all_gather, reduce_scatter), from_dim / to_dim (all_to_all) or
None; axis name (None for permute and exchange); the Type after it; the
local shape and bytes per device after it; the bytes each device receives
(the most any device receives); the modelled time (0 without a cost
model); the name of the mesh the step runs on (a transfer: the target's)
for a two-mesh plan, else None."""

VerifyResult = namedtuple("VerifyResult", "valid peak_bytes recv_bytes "
                          "collectives steps memory_efficient failed_step")

_OBJECTIVES = {"time": _redist.OBJECTIVE_TIME, "bytes": _redist.OBJECTIVE_BYTES}


def _cost_args(cost):
    if cost is None:
        return None, None
    if isinstance(cost, dict):
        return None, json.dumps(cost)
    return os.fspath(cost), None


def _mesh_link_arg(level):
    if level is None or isinstance(level, str):
        return level
    raise TypeError("mesh_link: a link level ('cache', 'numa', 'package', "
                    f"'node' or 'network') or None, not {type(level).__name__}")


def _links_arg(topology, mesh):
    if topology is None:
        return None
    if isinstance(topology, str):
        return topology
    if hasattr(topology, "items"):
        return ",".join(f"{a}={lv}" for a, lv in topology.items())
    raise TypeError("topology: the link level of each mesh axis, as "
                    "{'data': 'network', 'model': 'numa'} or "
                    "'data=network,model=numa'")


class Plan(_redist.Plan):
    """An optimal plan for a Spec (redist.plan builds it).  A sequence of
    Steps; .peak_bytes, .recv_bytes, .stats, .to_json(), .table(); str()
    is the table `redistplan plan` prints."""

    def __init__(self, spec, *, objective="time", cost=None, topology=None,
                 max_peak_bytes=0, max_states=0, cross_sums=True,
                 mesh_link=None):
        if not isinstance(spec, Spec):
            raise TypeError(f"plan: a redist.Spec, not {type(spec).__name__}")
        if objective not in _OBJECTIVES:
            raise ValueError(f"objective: 'bytes' or 'time', not {objective!r}")
        path, text = _cost_args(cost)
        self._create(spec, _OBJECTIVES[objective], int(max_peak_bytes),
                     int(max_states), path, text, _links_arg(topology, spec.mesh),
                     bool(cross_sums), _mesh_link_arg(mesh_link))
        self.spec = spec
        self.objective = objective
        self._steps = None

    @property
    def steps(self):
        """The steps, a list of Step."""
        if self._steps is None:
            self._steps = [self._make_step(i) for i in range(len(self))]
        return list(self._steps)

    def _make_step(self, i):
        f = list(self._step(i))
        spec = self.spec
        mesh = (spec.src_mesh, spec.dst_mesh)[f[10]].name if spec.two_mesh else None
        f[5] = Type(*f[5], mesh=mesh)
        f[10] = mesh
        return Step(*f)

    def __getitem__(self, i):
        return self.steps[i]

    def __iter__(self):
        return iter(self.steps)

    @property
    def stats(self):
        """redist_plan_stats as a dict (src_bytes, dst_bytes, peak_bytes,
        recv_bytes, collectives, steps, memory_efficient, time_s, optimal,
        bound_*, states_visited)."""
        return self._stats()

    peak_bytes = property(lambda self: self._stats()["peak_bytes"])
    recv_bytes = property(lambda self: self._stats()["recv_bytes"])
    collectives = property(lambda self: self._stats()["collectives"])
    memory_efficient = property(lambda self: self._stats()["memory_efficient"])
    optimal = property(lambda self: self._stats()["optimal"])

    def to_dict(self):
        """The plan object of doc/spec-format.md section 4 as a dict."""
        return json.loads(self.to_json())

    @property
    def per_device(self):
        """The plan's per-device figures over devices 0..N-1 (a two-mesh
        plan's stats, doc/spec-format.md section 8) as a dict such as
        {"recv_bytes": [...], "peak_bytes": [...]}; {} for a one-mesh
        plan, whose figures are the same bound for every device."""
        st = self.to_dict()["stats"]
        return {k[:-len("_per_device")]: v for k, v in st.items()
                if k.endswith("_per_device")}

    def __str__(self):
        return self.table()

    def __repr__(self):
        ops = ", ".join(s.op for s in self.steps)
        return (f"<redist.Plan {self.spec.name or 'spec'}: [{ops}] peak "
                f"{self.peak_bytes} B, recv {self.recv_bytes} B>")


def plan(spec, *, objective="time", cost=None, topology=None,
         max_peak_bytes=0, max_states=0, cross_sums=True, mesh_link=None):
    """Plan a Spec (redist_plan_create).

    objective: "time", the default (least peak, then modelled time under
    the built-in cost model unless cost or topology is given, then
    collectives; may use exchange steps) or "bytes" (version 1: least
    peak, then received bytes, then collectives).
    cost: a cost file path (`redistplan calibrate -o`) or its dict.
    topology: the link level of each mesh axis ({"data": "network"} or
    "data=network,model=numa"), as `--axis-links`.  mesh_link: two meshes,
    the level between the source mesh and devices outside it ("network"),
    as `--mesh-link` (None: the slowest source axis, at least node).
    max_peak_bytes,
    max_states: as the C options (0: none / the default).  cross_sums
    (default True): two-mesh plans may carry pending sums through the
    transfer (the receivers sum them, doc/meshes.md); False resolves them
    on the source mesh first (`redistplan plan --no-cross-sums`).  Every
    backend and plan sets run both.
    Raises PlanError
    (.status ERR_INFEASIBLE, ERR_LIMIT...) or SpecError for a bad cost
    model."""
    return Plan(spec, objective=objective, cost=cost, topology=topology,
                max_peak_bytes=max_peak_bytes, max_states=max_states,
                cross_sums=cross_sums, mesh_link=mesh_link)


def verify(plan_or_spec, plan_json=None, *, path=None):
    """Replay a plan step by step with the independent verifier.

    verify(plan): a Plan.  verify(spec, text_or_dict) or verify(spec,
    path=FILE): a plan document (doc/spec-format.md section 4) for a Spec.
    Returns a VerifyResult; raises PlanError (with .result) for an invalid
    plan, SpecError for an unreadable document."""
    if isinstance(plan_or_spec, Plan):
        if plan_json is not None or path is not None:
            raise TypeError("verify(plan) takes no document")
        r = plan_or_spec._verify()
    elif isinstance(plan_or_spec, Spec):
        if path is not None:
            r = _redist.verify_file(plan_or_spec, os.fspath(path))
        elif plan_json is not None:
            if isinstance(plan_json, dict):
                plan_json = json.dumps(plan_json)
            r = _redist.verify_text(plan_or_spec, plan_json, "<plan>")
        else:
            raise TypeError("verify(spec, plan_json) or verify(spec, path=...)")
    else:
        raise TypeError("verify: a redist.Plan, or a redist.Spec and a plan "
                        "document")
    return VerifyResult(**r)


__all__ = ["Mesh", "Type", "Spec", "Plan", "Step", "VerifyResult",
           "load_spec", "plan", "verify", "from_named_sharding",
           "from_dtensor", "dtype_name", "numpy_dtype", "SpecError",
           "PlanError"]
