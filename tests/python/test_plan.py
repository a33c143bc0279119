"""The planning API against the C library and the CLI: plan JSON and
tables equal to `redistplan plan` for every spec of specs/, exceptions
with their places, the JAX / DTensor converters, dtypes, verify."""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import redist


def cli(redistplan, *args):
    return subprocess.run([redistplan, *args], capture_output=True, text=True,
                          timeout=60)


def spec_files():
    return sorted(glob.glob(os.path.join(os.environ["SPECS_DIR"], "*.json")))


@pytest.mark.parametrize("path", spec_files(), ids=os.path.basename)
def test_specs_match_cli(redistplan, path):
    r = cli(redistplan, "plan", path, "--json")
    if r.returncode != 0:
        # bad input (2) is a SpecError, no plan (3) a PlanError
        cls = {2: redist.SpecError, 3: redist.PlanError}[r.returncode]
        with pytest.raises(cls) as e:
            redist.plan(redist.load_spec(path))
        assert str(e.value) in r.stderr
        return
    spec = redist.load_spec(path)
    plan = redist.plan(spec)
    assert plan.to_json() == r.stdout.rstrip("\n")
    doc = json.loads(r.stdout)
    assert plan.to_dict() == doc
    assert [s.op for s in plan.steps] == [s["op"] for s in doc["steps"]]
    assert [s.recv_bytes for s in plan.steps] == [s["recv_bytes"] for s in doc["steps"]]
    assert [list(s.local_shape) for s in plan.steps] == [s["local_shape"] for s in doc["steps"]]
    assert plan.peak_bytes == doc["stats"]["peak_bytes"]
    assert plan.recv_bytes == doc["stats"]["recv_bytes"]
    assert plan.stats["collectives"] == doc["stats"]["collectives"]
    for s, d in zip(plan.steps, doc["steps"]):
        assert [list(x) for x in s.after.dims] == d["after"]["dims"]
        assert sorted(s.after.partial) == sorted(d["after"].get("partial", []))
    assert str(plan) == cli(redistplan, "plan", path).stdout
    assert plan.table(grid=False) == cli(redistplan, "plan", path, "--no-grid").stdout
    assert redist.verify(plan).valid
    assert redist.verify(spec, plan.to_json()).valid
    # the spec round-trips through its Python form
    again = redist.Spec.from_json(spec.to_json_obj())
    assert again.to_json_obj() == spec.to_json_obj()
    assert redist.plan(again).to_json() == plan.to_json()
    # expect block, as `redistplan check` reads it
    e = spec.expect
    if "max_peak_bytes" in e:
        assert plan.peak_bytes <= e["max_peak_bytes"]
    if "ops" in e:
        assert tuple(s.op for s in plan.steps) == e["ops"]


def test_time_objective_and_links_match_cli(redistplan, specs_dir, tmp_path):
    path = os.path.join(specs_dir, "fsdp-rows-to-2d-columns.json")
    spec = redist.load_spec(path)
    p = redist.plan(spec, objective="time", topology={"fsdp": "network", "tensor": "numa"})
    r = cli(redistplan, "plan", path, "--json", "--objective", "time",
            "--axis-links", "fsdp=network,tensor=numa")
    assert r.returncode == 0 and p.to_json() == r.stdout.rstrip("\n")
    assert p.stats["time_s"] > 0 and all(s.time_s >= 0 for s in p.steps)
    cost = {"links": {"node": {"alpha": 2e-6, "beta": 1e-9}}, "gamma": 1e-10}
    f = tmp_path / "cost.json"
    f.write_text(json.dumps(cost))
    a = redist.plan(spec, objective="time", cost=cost)
    b = redist.plan(spec, objective="time", cost=f)
    r = cli(redistplan, "plan", path, "--json", "--objective", "time", "--cost", str(f))
    assert a.to_json() == b.to_json() == r.stdout.rstrip("\n")
    with pytest.raises(redist.SpecError) as e:
        redist.plan(spec, topology="fsdp=warp")
    assert e.value.status == redist.ERR_INVALID
    with pytest.raises(redist.SpecError) as e:
        redist.plan(spec, cost={"links": {"node": {"alpha": -1}}})
    assert "alpha" in str(e.value)
    with pytest.raises(ValueError):
        redist.plan(spec, objective="fast")


def test_mesh():
    m = redist.Mesh({"data": 2, "model": 4})
    assert m == redist.Mesh([("data", 2), ("model", 4)])
    assert m.names == ("data", "model") and m.sizes == (2, 4) and m.size == 8
    assert m.shape == {"data": 2, "model": 4}
    assert m.coords(5) == (1, 1)
    with pytest.raises(redist.SpecError) as e:
        redist.Mesh({"a,b": 2})
    assert e.value.status == redist.ERR_INVALID and "a,b" in str(e.value)
    with pytest.raises(redist.SpecError):
        redist.Mesh([("x", 2), ("x", 2)])
    with pytest.raises(redist.SpecError):
        redist.Mesh({"x": 0})
    with pytest.raises(TypeError):
        redist.Mesh([(1, 2)])
    with pytest.raises(TypeError):
        redist.Mesh(5)
    with pytest.raises(ValueError):
        redist.Mesh({"x\0y": 2})
    assert redist.Mesh({"x": 2}, devices=[0, 1]).devices is None
    # a mesh on other devices: written as "meshes" (doc/spec-format.md
    # section 8), it plans over devices 0..5 (doc/python.md, "Two meshes")
    placed = redist.Spec(redist.Mesh({"x": 2}, devices=[4, 5]), (4,), "f32",
                         ("x",), ())
    assert placed.num_devices == 6 and placed.src_block_shape(3) is None
    assert placed.src_block_shape(5) == (2,)
    assert redist.verify(redist.plan(placed)).valid


def test_spec_forms_and_errors():
    mesh = {"data": 2, "model": 4}
    a = redist.Spec(mesh, (64, 32), np.float32, ("data", "model"), (("data", "model"), None))
    b = redist.Spec(mesh, [64, 32], "float32", redist.Type(("data", "model")),
                    {"dims": [["data", "model"], []]}, reduce="sum")
    c = redist.Spec(mesh, (64, 32), np.dtype("f4"), ("data", "model"),
                    redist.from_named_sharding(mesh, (("data", "model"),)))
    assert a.to_json_obj() == b.to_json_obj() == c.to_json_obj()
    assert a.dtype == "f32" and a.src_bytes == 32 * 8 * 4 and a.dst_local_shape == (8, 32)
    assert a.src_slices(5) == (slice(32, 64), slice(8, 16))
    assert a.dst_slices(5) == (slice(40, 48), slice(0, 32))
    # partial source, padded dims, reduce from the type
    p = redist.Spec(mesh, (8, 8, 4), "bf16", redist.Type(("data",), partial=("model",)),
                    ("data", "model"), reduce="max")
    assert p.src == redist.Type(("data", None, None), partial=("model",))
    assert p.reduce == "max" and p.np_dtype == np.uint16
    with pytest.raises(redist.SpecError) as e:
        redist.Spec(mesh, (64, 32), "f32", ("data", "zz"), ())
    assert e.value.path == "from.dims[1][0]" and e.value.file == "<redist.Spec>"
    assert e.value.line is None and 'axis "zz"' in e.value.message
    # a dim that does not divide is planned (uneven dims, ceil by default)
    u = redist.Spec(mesh, (63, 32), "f32", ("data", None), ())
    assert u.src_local_shape is None and redist.plan(u).peak_bytes > 0
    with pytest.raises(redist.SpecError) as e:
        redist.Spec.from_json({"mesh": [["data", 2], ["model", 4]],
                               "shape": [63, 32], "dtype": "f32",
                               "from": {"dims": [["data"], []],
                                        "blocks": [[30, 30], None]},
                               "to": {"dims": [[], []]}})
    assert e.value.path.startswith("from.blocks[0]") and "63" in str(e.value)
    with pytest.raises(redist.SpecError) as e:
        redist.Spec(mesh, (64, 32), "f32", (), redist.Type((), partial=("data",)))
    with pytest.raises(ValueError):
        redist.Spec(mesh, (64, 32), "float128", (), ())
    with pytest.raises(TypeError):
        redist.Spec(mesh, (64, 32), "f32", 3.5, ())
    with pytest.raises(ValueError):
        redist.Spec(mesh, (64,), "f32", ("data", None), ())
    # an unplannable target: a spec only with the flag, then no plan
    s = redist.Spec(mesh, (64, 32), "f32", (), redist.Type((), partial=("data",)),
                    allow_unplannable=True)
    with pytest.raises(redist.PlanError) as e:
        redist.plan(s)
    assert e.value.status == redist.ERR_INFEASIBLE
    assert isinstance(e.value, redist.Error)
    with pytest.raises(redist.PlanError) as e:
        redist.plan(a, max_peak_bytes=1)
    assert e.value.status == redist.ERR_INFEASIBLE
    assert isinstance(redist.Spec.many(mesh, {"a": ((4,), "f32")}), redist.Arrays)
    # explicit blocks: padded with the rule for the dims not named
    eb = redist.Spec(mesh, (64, 32), "f32", redist.Type(("data", None), blocks=[[40, 24], None]), ())
    assert redist.plan(eb).recv_bytes == 40 * 32 * 4  # the 24-row device lacks 40 rows


def test_load_spec_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "mesh": [["x", 2]],\n  "shape": [4] "x"}\n')
    with pytest.raises(redist.SpecError) as e:
        redist.load_spec(bad)
    v = e.value
    assert v.file == str(bad) and v.line == 3 and v.column > 0
    assert v.status == redist.ERR_PARSE and v.status_name == redist.status_string(v.status)
    assert str(v).startswith(f"{bad}:3:{v.column}: JSON syntax error")
    sem = tmp_path / "sem.json"
    sem.write_text(json.dumps({"mesh": [["x", 2]], "shape": [4], "from": {"dims": [["y"]]},
                               "to": {"dims": [[]]}}))
    with pytest.raises(redist.SpecError) as e:
        redist.load_spec(sem)
    assert e.value.path == "from.dims[0][0]" and e.value.line is None
    with pytest.raises(redist.SpecError) as e:
        redist.load_spec(tmp_path / "missing.json")
    assert e.value.status == redist.ERR_IO
    with pytest.raises(redist.SpecError) as e:
        redist.load_spec(tmp_path)  # a directory: refused at once
    assert e.value.status == redist.ERR_IO
    with pytest.raises(TypeError):
        redist.load_spec(None)


def test_two_mesh_spec_loads():
    # each type's axes are read on its own mesh (tests/python/test_v2_plan.py
    # has the rest)
    path = os.path.join(os.environ["SPECS_DIR"], "meshes",
                        "grad-partial-dp-to-inference-tp.json")
    spec = redist.load_spec(path)
    assert spec.two_mesh and spec.src.mesh != spec.dst.mesh
    assert all(a in spec.src_mesh.names for d in spec.src.dims for a in d)
    assert all(a in spec.dst_mesh.names for d in spec.dst.dims for a in d)
    assert redist.verify(redist.plan(spec)).valid


def test_steps_and_verify():
    spec = redist.Spec({"x": 2, "y": 2}, (8, 8), "f64", redist.Type((None, None), partial=("x",)),
                       ("x", "y"))
    plan = redist.plan(spec)
    assert len(plan) == len(plan.steps) >= 1
    assert plan.steps[-1].after == spec.dst
    assert plan[0] == plan.steps[0] and list(plan) == plan.steps
    ops = {s.op for s in plan}
    assert ops <= set(redist.OPS)
    r = redist.verify(plan)
    assert r.valid and r.peak_bytes == plan.peak_bytes and r.failed_step is None
    doc = plan.to_dict()
    doc["steps"] = doc["steps"][:-1]
    with pytest.raises(redist.PlanError) as e:
        redist.verify(spec, doc)
    assert e.value.status == redist.ERR_PLAN and e.value.result["valid"] is False
    with pytest.raises(redist.SpecError):
        redist.verify(spec, "{ not json")
    with pytest.raises(TypeError):
        redist.verify(spec)
    with pytest.raises(TypeError):
        redist.plan("spec.json")
    assert "all_to_all" in repr(redist.plan(redist.Spec({"x": 2}, (4, 4), "f32", ("x",), (None, "x"))))


def test_dtypes():
    for np_t, name in [(np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64"),
                       (np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"),
                       (np.int64, "i64"), (np.uint8, "u8"), (np.uint16, "u16"),
                       (np.uint32, "u32"), (np.uint64, "u64"), (np.complex64, "c64"),
                       (np.complex128, "c128")]:
        assert redist.dtype_name(np_t) == name
        assert redist.dtype_name(np.dtype(np_t)) == name
        assert redist.dtype_name(np.dtype(np_t).name) == name
        assert redist.dtype_name(name) == name
        assert redist.numpy_dtype(name) == np.dtype(np_t)
    assert redist.dtype_name("bfloat16") == "bf16"
    assert redist.dtype_name("torch.bfloat16") == "bf16"
    assert redist.dtype_name("torch.float32") == "f32"
    with pytest.raises(ValueError):
        redist.dtype_name(np.bool_)
    assert set(redist.DTYPES) == {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64",
                                  "u8", "u16", "u32", "u64", "c64", "c128"}


def test_from_named_sharding():
    axes = {"data": 2, "model": 4}
    t = redist.from_named_sharding(axes, ("data", None))
    assert t.dims == (("data",), ()) and t.partial == ()
    t = redist.from_named_sharding(list(axes.items()), (("data", "model"), None), ndim=3)
    assert t.dims == (("data", "model"), (), ())
    assert t.partition_spec() == (("data", "model"), None, None)
    assert redist.from_named_sharding(axes, ()).dims == ()
    assert redist.from_named_sharding(axes, (None,), partial=("model",)).partial == ("model",)
    with pytest.raises(ValueError):
        redist.from_named_sharding(axes, ("tensor",))
    with pytest.raises(ValueError):
        redist.from_named_sharding(axes, ("data", "data"))
    with pytest.raises(ValueError):
        redist.from_named_sharding(axes, ("data",), partial=("data",))
    with pytest.raises(TypeError):
        redist.from_named_sharding(axes, (3,))
    # and it plans as the spec file says
    spec = redist.Spec(axes, (4096, 16384), "bf16",
                       redist.from_named_sharding(axes, ("data", "model")),
                       redist.from_named_sharding(axes, (("data", "model"),)))
    assert [s.op for s in redist.plan(spec)] == ["all_to_all"]


def test_from_dtensor():
    mesh = [("dp", 2), ("tp", 4)]
    t = redist.from_dtensor(mesh, [("Shard", 0), ("Replicate",)])
    assert t.dims == (("dp",),) and t.partial == () and t.split == "chunk"
    t = redist.from_dtensor(mesh, ["Shard(1)", "Shard(1)"], ndim=3)
    assert t.dims == ((), ("dp", "tp"), ())
    t = redist.from_dtensor(dict(mesh), [("Shard", -1), ("Partial", "max")], ndim=2)
    assert t.dims == ((), ("dp",)) and t.partial == ("tp",) and t.reduce == "max"
    t = redist.from_dtensor(mesh, ["Replicate()", "Partial()"])
    assert t.partial == ("tp",) and t.reduce == "sum"
    assert redist.from_dtensor(mesh, ["Replicate()", ("Partial", "product")]).reduce == "prod"
    with pytest.raises(ValueError):
        redist.from_dtensor(mesh, [("Shard", 0)])
    with pytest.raises(ValueError):
        redist.from_dtensor(mesh, [("Partial", "avg"), ("Replicate",)])
    with pytest.raises(ValueError):
        redist.from_dtensor(mesh, [("Partial", "sum"), ("Partial", "max")])
    with pytest.raises(ValueError):
        redist.from_dtensor(mesh, [("Shard", 3), ("Replicate",)], ndim=2)
    with pytest.raises(ValueError):
        redist.from_dtensor(mesh, [("Strided", 0), ("Replicate",)])
    # a DTensor all-reduce: Partial -> Replicate, the reduce op from the type
    spec = redist.Spec(mesh, (16, 8), "f32",
                       redist.from_dtensor(mesh, [("Shard", 0), ("Partial", "max")], ndim=2),
                       redist.from_dtensor(mesh, [("Shard", 0), ("Replicate",)], ndim=2))
    assert spec.reduce == "max"
    assert [s.op for s in redist.plan(spec)] == ["all_reduce"]
    with pytest.raises(ValueError):
        redist.Spec(mesh, (16, 8), "f32",
                    redist.from_dtensor(mesh, [("Shard", 0), ("Partial", "max")], ndim=2),
                    redist.from_dtensor(mesh, [("Partial", "sum"), ("Replicate",)], ndim=2))


def test_types():
    t = redist.Type(("data", None))
    assert t == ("data", None) and hash(t) == hash(redist.Type(("data", None)))
    assert str(redist.Type((("a", "b"), None), partial=("c",))) == "[{a,b}, {}] partial{c}"
    assert redist.Type("x").dims == (("x",),)
    with pytest.raises(AttributeError):
        t.dims = ()
    with pytest.raises(ValueError):
        redist.Type(("x",), split="cyclic")
    with pytest.raises(TypeError):
        redist.Type((1,))
