"""Two meshes and many arrays from Python, planning side (one process):
the repository's specs/meshes and specs/arrays files load, plan and print
exactly what `redistplan plan` prints (table, grids, --plans, --json);
specs built in Python equal the files; per-device figures, block shapes
outside a mesh, rounds under budgets; clear errors with the place."""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import redist

SPECS = os.environ["SPECS_DIR"]
MESH_FILES = sorted(glob.glob(os.path.join(SPECS, "meshes", "*.json")))
ARRAY_FILES = sorted(glob.glob(os.path.join(SPECS, "arrays", "*.json")))


def cli(redistplan, *args):
    r = subprocess.run([redistplan, "plan", *args], capture_output=True,
                       text=True, check=True)
    return r.stdout


def test_files_found():
    assert len(MESH_FILES) >= 5 and len(ARRAY_FILES) >= 5


# ------------------------------------------------------------ two meshes

def test_cross_sums_plan_like_cli(redistplan):
    # pending sums carried through the transfer (doc/meshes.md): the
    # default, the same plan as `redistplan plan` (and --cross-sums);
    # cross_sums=False is `--no-cross-sums`, and they differ on the spec
    # written for it
    path = os.path.join(os.path.dirname(MESH_FILES[0]),
                        "grad-partial-dp8-to-tp16-crossing.json")
    spec = redist.load_spec(path)
    cross = redist.plan(spec)
    assert cross.to_json() == redist.plan(spec, cross_sums=True).to_json()
    assert cross.to_json() + "\n" == cli(redistplan, path, "--json")
    assert str(cross) == cli(redistplan, path, "--cross-sums")
    plain = redist.plan(spec, cross_sums=False)
    assert plain.to_json() + "\n" == cli(redistplan, path, "--json",
                                         "--no-cross-sums")
    assert str(plain) == cli(redistplan, path, "--no-cross-sums")
    assert [s.op for s in cross] == ["transfer"]
    assert [s.op for s in plain] != ["transfer"]
    assert cross.recv_bytes < plain.recv_bytes


def test_mesh_link_like_cli(redistplan, tmp_path):
    # the level between the meshes (doc/meshes.md): on a slow network the
    # contributions no longer cross; the same plan as `--mesh-link`, for
    # one array and a set; a bad level is a SpecError naming mesh_link
    path = os.path.join(os.path.dirname(MESH_FILES[0]),
                        "grad-partial-dp8-to-tp16-crossing.json")
    spec = redist.load_spec(path)
    cost = {"links": {"network": {"alpha": 2e-5, "beta": 1e-8}}}
    cost_file = tmp_path / "slownet.json"
    cost_file.write_text(json.dumps(cost))
    slow = redist.plan(spec, cost=cost, mesh_link="network")
    assert [s.op for s in slow] == ["reduce_scatter", "transfer"]
    assert slow.to_json() + "\n" == cli(redistplan, path, "--json", "--cost",
                                        str(cost_file), "--mesh-link",
                                        "network")
    assert [s.op for s in redist.plan(spec, cost=cost)] == ["transfer"]
    with pytest.raises(redist.SpecError, match="mesh_link"):
        redist.plan(spec, mesh_link="warp")
    with pytest.raises(TypeError, match="mesh_link"):
        redist.plan(spec, mesh_link=4)
    arrays = redist.Arrays(spec.meshes, [spec])
    s = redist.plan_set(arrays, cost=cost, mesh_link="network")
    assert [st.op for st in s.plans[spec.name]] == ["reduce_scatter",
                                                     "transfer"]


@pytest.mark.parametrize("path", MESH_FILES, ids=os.path.basename)
def test_mesh_files_plan_like_cli(path, redistplan):
    spec = redist.load_spec(path)
    assert spec.two_mesh and len(spec.meshes) == 2
    plan = redist.plan(spec)
    assert plan.table(grid=False) == cli(redistplan, path, "--no-grid")
    assert str(plan) == cli(redistplan, path)
    assert plan.to_json() + "\n" == cli(redistplan, path, "--json")
    bplan = redist.plan(spec, objective="bytes")
    assert bplan.to_json() + "\n" == cli(redistplan, path, "--json",
                                         "--objective", "bytes")
    # the transfer step, on the target's mesh; the phases on theirs
    ops = [s.op for s in plan]
    assert ops.count("transfer") == 1
    t = ops.index("transfer")
    for i, s in enumerate(plan):
        want = spec.dst_mesh.name if i >= t else spec.src_mesh.name
        assert s.mesh == want and s.after.mesh == want
    # per-device figures over devices 0..N-1; devices outside a mesh
    pd = plan.per_device
    assert set(pd) >= {"recv_bytes", "peak_bytes"}
    assert len(pd["recv_bytes"]) == spec.num_devices
    assert max(pd["peak_bytes"]) == plan.peak_bytes
    assert max(pd["recv_bytes"]) == plan.recv_bytes
    for d in range(spec.num_devices):
        for side, m in ((0, spec.src_mesh), (1, spec.dst_mesh)):
            shape = (spec.src_block_shape, spec.dst_block_shape)[side](d)
            if m.rank_of(d) is None:
                assert shape is None
            else:
                assert shape is not None and len(shape) == len(spec.shape)
    # the source blocks tile the array once per replica
    v = redist.verify(plan)
    assert v.valid and v.peak_bytes == plan.peak_bytes
    v2 = redist.verify(spec, plan.to_json())
    assert v2.valid and v2.recv_bytes == plan.recv_bytes
    # expect block as in the file
    with open(path) as f:
        assert spec.expect.keys() == json.load(f)["expect"].keys()


@pytest.mark.parametrize("path", MESH_FILES, ids=os.path.basename)
def test_mesh_files_roundtrip_through_python(path):
    spec = redist.load_spec(path)
    again = redist.Spec((spec.src_mesh, spec.dst_mesh), spec.shape, spec.dtype,
                        spec.src, spec.dst, spec.reduce, name=spec.name)
    assert again.to_json_obj() == {k: v for k, v in spec.to_json_obj().items()
                                   if k != "expect"}
    assert redist.plan(again).to_json() == redist.plan(spec).to_json()
    assert redist.Spec.from_json(spec.to_json_obj()).meshes == spec.meshes


def test_two_meshes_built_in_python():
    train = redist.Mesh({"dp": 2, "tp": 2}, name="train")
    infer = redist.Mesh({"tp": 4}, devices=range(4, 8), name="infer")
    spec = redist.Spec((train, infer), (64, 32), np.float32,
                       src=(("tp", "dp"), None), dst=("tp", None))
    assert spec.two_mesh and spec.num_devices == 8
    assert spec.src.mesh == "train" and spec.dst.mesh == "infer"
    assert spec.src_block_shape(0) == (16, 32) and spec.src_block_shape(4) is None
    assert spec.dst_block_shape(3) is None and spec.dst_block_shape(5) == (16, 32)
    assert spec.dst_slices(4) == (slice(0, 16), slice(0, 32))
    assert infer.rank_of(6) == 2 and infer.rank_of(1) is None
    plan = redist.plan(spec)
    assert [s.op for s in plan] == ["transfer"]
    assert plan.per_device["recv_bytes"] == [0] * 4 + [2048] * 4
    # same devices, reshaped: the default device lists
    a = redist.Mesh({"x": 2, "y": 2}, name="a")
    b = redist.Mesh({"z": 4}, name="b")
    s2 = redist.Spec((a, b), (8, 8), "f64", src=("x", "y"), dst=(None, "z"))
    assert s2.num_devices == 4 and all(s2.dst_block_shape(d) == (8, 2)
                                       for d in range(4))
    assert redist.verify(redist.plan(s2)).valid
    # a one-mesh spec keeps its Step.mesh None and no per-device lists
    one = redist.plan(redist.Spec({"x": 2}, (4,), "f32", ("x",), ()))
    assert one.steps[0].mesh is None and one.per_device == {}


def test_two_mesh_errors():
    a = redist.Mesh({"x": 2}, name="a")
    with pytest.raises(ValueError, match="its own name"):
        redist.Spec((a, redist.Mesh({"x": 2})), (4,), "f32", ("x",), ("x",))
    with pytest.raises(ValueError, match="its own name"):
        redist.Spec((a, a), (4,), "f32", ("x",), ("x",))
    b = redist.Mesh({"y": 2}, devices=(2, 3), name="b")
    with pytest.raises(redist.SpecError) as e:
        redist.Spec((a, b), (4,), "f32", ("x",), ("x",))
    assert e.value.path.startswith("to.dims") and "x" in str(e.value)
    with pytest.raises(redist.SpecError) as e:
        redist.Spec((a, b), (4,), "f32", redist.Type(("x",), mesh="zz"), ("y",))
    assert "from.mesh" in str(e.value) and "<redist.Spec>" in str(e.value)
    with pytest.raises(ValueError, match="2 devices for a mesh of 3"):
        redist.Mesh({"x": 3}, devices=(0, 1))
    with pytest.raises(redist.SpecError):
        redist.Spec((a, redist.Mesh({"y": 2}, devices=(5, 5), name="c")),
                    (4,), "f32", ("x",), ("y",))
    # a partial target across meshes: no plan
    s = redist.Spec((a, b), (4,), "f32", ("x",), redist.Type((None,), ("y",)),
                    allow_unplannable=True)
    with pytest.raises(redist.PlanError) as e:
        redist.plan(s)
    assert e.value.status == redist.ERR_INFEASIBLE
    b_spec = redist.Spec((a, b), (4,), "f32", ("x",), ("y",))
    assert b_spec.src_block_shape(4) is None  # beyond both meshes: nothing
    with pytest.raises(ValueError, match="out of range"):
        b_spec.src_block_shape(-1)


# ------------------------------------------------------------ many arrays

@pytest.mark.parametrize("path", ARRAY_FILES, ids=os.path.basename)
def test_array_files_plan_like_cli(path, redistplan):
    arrays = redist.load_arrays(path)
    assert arrays.is_set and len(arrays) == len(arrays.names) > 1
    ps = redist.plan_set(arrays, preserve_src=False)
    assert ps.table() == cli(redistplan, path)
    assert str(ps) == ps.table()
    assert ps.table(plans=True) == cli(redistplan, path, "--plans")
    assert ps.to_json() + "\n" == cli(redistplan, path, "--json")
    pp = redist.plan_set(arrays)  # preserve_src=True, the default
    assert pp.table() == cli(redistplan, path, "--preserve-src")
    # rounds: every array in exactly one, scratch within the budget
    rounds = ps.rounds
    assert sorted(n for r in rounds for n in r.arrays) == sorted(arrays.names)
    st = ps.stats
    assert st["nrounds"] == len(rounds) == ps.num_rounds
    assert st["budget_bytes"] == arrays.budget_bytes
    for r in rounds:
        if arrays.budget_bytes is not None:
            assert r.scratch_bytes <= arrays.budget_bytes
        assert r.scratch_bytes >= sum(ps.scratch_of(n) for n in r.arrays)
        assert r.peak_bytes == sum(ps.plans[n].peak_bytes for n in r.arrays)
        for n in r.arrays:
            assert ps.round_of(n) == r.index
    assert st["scratch_bytes"] == max(r.scratch_bytes for r in rounds)
    assert st["recv_bytes"] == sum(r.recv_bytes for r in rounds)
    d = ps.to_dict()
    assert [a["array"] for a in d["arrays"]] == list(arrays.names)
    # each array's plan equals planning its spec alone
    name = arrays.names[-1]
    alone = redist.plan(redist.Spec.from_json(arrays[name].to_json_obj()))
    assert ps.plans[name].table(grid=False) == alone.table(grid=False)
    assert ps.plans[name].spec.name == name


@pytest.mark.parametrize("path", ARRAY_FILES, ids=os.path.basename)
def test_array_files_roundtrip_through_python(path):
    arrays = redist.load_arrays(path)
    again = redist.Arrays.from_json(arrays.to_json_obj())
    assert again.names == arrays.names and again.budget_bytes == arrays.budget_bytes
    assert redist.plan_set(again).to_json() == redist.plan_set(arrays).to_json()
    specs = [arrays[n] for n in arrays.names]
    m = specs[0].meshes
    rebuilt = redist.Spec.many(m if len(m) == 2 else m[0], specs,
                               budget_bytes=arrays.budget_bytes,
                               name=arrays.name)
    assert redist.plan_set(rebuilt).table() == redist.plan_set(arrays).table()


def test_many_built_in_python():
    mesh = redist.Mesh({"dp": 2, "tp": 2})
    arrays = redist.Spec.many(mesh, {
        "w": dict(shape=(64, 32), dtype="bf16", src=("tp", None), dst=(None, "tp")),
        "b": ((32,), np.float32, ("dp",), ()),
        "w2": ((64, 32), "u16", ("tp", None), (None, "tp")),
        "g": dict(shape=(16, 16), dtype="f32",
                  src=redist.Type((None, None), ("dp",)), dst=("dp", None)),
    }, name="blk")
    assert arrays.names == ("w", "b", "w2", "g") and arrays.budget_bytes is None
    ps = redist.plan_set(arrays)
    assert ps.num_rounds == 1 and len(ps) == 4
    assert set(ps.plans) == {"w", "b", "w2", "g"}
    assert ps.src_block_shapes(0) == {"w": (32, 32), "b": (16,), "w2": (32, 32),
                                      "g": (16, 16)}
    # the smallest budget that runs: each error of a too-small budget
    # names an array and the least budget it needs (its buffers and the
    # set's reduction work space); raise the budget until it plans
    def smallest(e):
        assert e.status == redist.ERR_INFEASIBLE
        return int(str(e).rsplit("the smallest budget that works is ", 1)[1])

    most, tight = 1, None
    for _ in range(len(arrays) + 1):
        try:
            tight = redist.plan_set(redist.Spec.many(mesh, list(arrays),
                                                     budget_bytes=most))
            break
        except redist.PlanError as e:
            assert smallest(e) > most
            most = smallest(e)
    assert tight is not None and most > 1
    assert all(r.scratch_bytes <= most for r in tight.rounds)
    assert tight.num_rounds >= 2
    with pytest.raises(redist.PlanError) as e:
        redist.plan_set(redist.Spec.many(mesh, list(arrays), budget_bytes=most - 1))
    assert smallest(e.value) == most


def test_many_errors():
    mesh = redist.Mesh({"x": 2})
    with pytest.raises(redist.SpecError) as e:
        redist.Spec.many(mesh, {"a": ((4,), "f32", ("x",), ()),
                                "b": ((4,), "f32", ("zz",), ())})
    assert e.value.path.startswith("arrays[1].from.dims")
    assert "<redist.Arrays>" in str(e.value)
    with pytest.raises(ValueError, match="no shape"):
        redist.Spec.many(mesh, {"a": dict(dtype="f32")})
    with pytest.raises(ValueError, match="unknown keys"):
        redist.Spec.many(mesh, {"a": dict(shape=(4,), sharding=1)})
    with pytest.raises(ValueError, match="no arrays"):
        redist.Spec.many(mesh, {})
    with pytest.raises(TypeError, match="array 'a': a dict or a tuple"):
        redist.Spec.many(mesh, {"a": 5})
    # (shape, dtype) alone: replicated on both sides
    two = redist.Spec.many(mesh, {"a": ((4,), "f32")})
    assert two["a"].src == redist.Type(((),)) == two["a"].dst
    s = redist.Spec(mesh, (4,), "f32", ("x",), (), name="a")
    with pytest.raises(redist.SpecError, match="a"):
        redist.Spec.many(mesh, [s, s])  # two arrays of one name
    with pytest.raises(TypeError):
        redist.Spec.many(mesh, [redist.Spec(mesh, (4,), "f32")])  # unnamed
    with pytest.raises(ValueError, match="meshes"):
        redist.Spec.many(redist.Mesh({"y": 2}), [s])
    with pytest.raises(redist.SpecError) as e:
        redist.load_arrays(os.path.join(SPECS, "no-such-file.json"))
    assert e.value.status == redist.ERR_IO
    one = redist.load_arrays(MESH_FILES[0])  # a one-array file: a set of one
    assert not one.is_set and len(one) == 1
    with pytest.raises(KeyError):
        one["nope"]
    with pytest.raises(TypeError):
        redist.plan_set(s)


def test_state_dict_spec():
    train = redist.Mesh({"dp": 2, "tp": 2}, name="train")
    infer = redist.Mesh({"tp": 4}, devices=range(4, 8), name="infer")
    state = {"embed": ((128, 64), "bf16"),
             "wq": np.zeros((64, 64), np.float32),    # .shape and .dtype
             "norm": ((64,), np.float32)}
    spec = redist.state_dict_spec(
        state, train, infer,
        src={None: (("dp", "tp"),), "norm": ()},
        dst=lambda name, shape: ("tp",) if len(shape) == 2 else (),
        budget_bytes=1 << 20, name="sync")
    assert spec.names == ("embed", "wq", "norm") and spec.budget_bytes == 1 << 20
    assert spec["wq"].dtype == "f32" and spec["embed"].dtype == "bf16"
    assert spec["norm"].src == redist.Type(((),), mesh="train")
    assert spec["embed"].dst == redist.Type((("tp",), ()), mesh="infer")
    ps = redist.plan_set(spec)
    assert all(p.spec.two_mesh for p in ps.plans.values())
    with pytest.raises(TypeError, match=r"state\['w'\]"):
        redist.state_dict_spec({"w": 5}, train, infer, src=(), dst=())
    with pytest.raises(ValueError, match="no sharding for 'wq'"):
        redist.state_dict_spec(state, train, infer, src={"embed": ()}, dst=())
    same = redist.state_dict_spec({"w": ((8,), "f32")}, train, train,
                                  src=("dp",), dst=("tp",))
    assert not same["w"].two_mesh
