"""Tests of the two-mesh oracle (oracle.py): it accepts hand-written valid
plans and rejects broken ones.  Nothing here needs the C tool (compare is
tested against a fake redistplan script).

Run:  /usr/bin/python3 -m pytest -q tests/meshes
"""

import copy
import json
import os
import stat
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle  # noqa: E402

SPECS = os.path.join(HERE, "specs")


def spec_path(name):
    return os.path.join(SPECS, name + ".json")


def run(argv, capsys):
    rc = oracle.main(argv)
    out = capsys.readouterr()
    return rc, out.out + out.err


def check(spec, plan, tmp_path, capsys):
    """Run `check` on a plan dict; return (exit code, output)."""
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(plan))
    return run(["check", spec_path(spec), str(p)], capsys)


def step(op, after, **kw):
    s = {"op": op}
    s.update(kw)
    s["after"] = after
    return s


# ---------------------------------------------------------------------------
# Hand-written plans for partial-sum-disjoint:
#   train dp=2,tp=2 on 0-3, from [[tp],[]] partial{dp}, f32 [8,12]
#   infer tp=4 on 4-7, to [[],[tp]]
# Source block 4x12 = 192 B; target block 8x3 = 96 B.
# ---------------------------------------------------------------------------

RS_TRANSFER = {
    "steps": [
        step("reduce_scatter",
             {"mesh": "train", "dims": [["tp", "dp"], []], "partial": []},
             mesh="train", dim=0, axis="dp",
             local_shape=[2, 12], local_bytes=96, recv_bytes=96),
        step("transfer", {"mesh": "infer", "dims": [[], ["tp"]], "partial": []},
             from_mesh="train", to_mesh="infer",
             local_shape=[8, 3], local_bytes=96, recv_bytes=96),
    ],
    "stats": {"src_bytes": 192, "dst_bytes": 96, "peak_bytes": 192,
              "recv_bytes": 96, "collectives": 2, "memory_efficient": True,
              "recv_bytes_per_device": [96] * 8,
              "peak_bytes_per_device": [192] * 4 + [96] * 4},
}

AR_TRANSFER = {
    "steps": [
        # all_reduce: ceil(2(s-1)/s * 192) = 192 B
        step("all_reduce", {"mesh": "train", "dims": [["tp"], []],
                            "partial": []},
             mesh="train", axis="dp", local_shape=[4, 12], recv_bytes=192),
        step("transfer", {"mesh": "infer", "dims": [[], ["tp"]]},
             from_mesh="train", to_mesh="infer", recv_bytes=96),
    ],
    "stats": {"peak_bytes": 192, "recv_bytes": 192, "collectives": 2,
              "memory_efficient": True},
}

# Through a replicated type on infer: 384 B per infer device, over the
# bound max(src_d, dst_d) = 96 B there, so memory_efficient is false.
REPLICATED_DETOUR = {
    "steps": [
        step("reduce_scatter", {"mesh": "train", "dims": [["tp", "dp"], []]},
             mesh="train", dim=0, axis="dp", recv_bytes=96),
        step("transfer", {"mesh": "infer", "dims": [[], []]},
             from_mesh="train", to_mesh="infer",
             local_shape=[8, 12], recv_bytes=384),
        step("slice", {"mesh": "infer", "dims": [[], ["tp"]]},
             mesh="infer", dim=1, axis="tp", local_shape=[8, 3],
             recv_bytes=0),
    ],
    "stats": {"src_bytes": 192, "dst_bytes": 96, "peak_bytes": 384,
              "recv_bytes": 384, "collectives": 2,
              "memory_efficient": False},
}


@pytest.mark.parametrize("plan", [RS_TRANSFER, AR_TRANSFER, REPLICATED_DETOUR],
                         ids=["rs+transfer", "ar+transfer", "replicated"])
def test_valid_partial_plans(plan, tmp_path, capsys):
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 0, out
    assert out.startswith("VALID")


def test_only_steps_required(tmp_path, capsys):
    plan = {"steps": [{k: v for k, v in s.items()
                       if k in ("op", "mesh", "dim", "axis", "from_mesh",
                                "to_mesh", "after")}
                      for s in RS_TRANSFER["steps"]]}
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 0, out
    # the after of a step with a fixed effect may be left out (ceil)
    del plan["steps"][0]["after"]
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 0, out


def broken(plan, edit):
    p = copy.deepcopy(plan)
    edit(p)
    return p


BROKEN = {
    # recv of a reduce_scatter is (s-1)/s * L = 96 B, not 48
    "wrong step recv": (RS_TRANSFER, lambda p: p["steps"][0].update(
        recv_bytes=48), "recv_bytes"),
    "wrong stats recv": (RS_TRANSFER, lambda p: p["stats"].update(
        recv_bytes=192), "stats.recv_bytes"),
    "wrong per-device recv": (RS_TRANSFER, lambda p: p["stats"].update(
        recv_bytes_per_device=[96] * 4 + [0] * 4), "recv_bytes_per_device"),
    "wrong local_shape": (RS_TRANSFER, lambda p: p["steps"][1].update(
        local_shape=[8, 12]), "local_shape"),
    "wrong peak": (RS_TRANSFER, lambda p: p["stats"].update(peak_bytes=96),
                   "stats.peak_bytes"),
    "wrong collectives": (REPLICATED_DETOUR, lambda p: p["stats"].update(
        collectives=3), "stats.collectives"),
    # the reduce_scatter appends dp as the minor: [tp, dp], not [dp, tp]
    "wrong after type": (RS_TRANSFER, lambda p: p["steps"][0]["after"].update(
        dims=[["dp", "tp"], []]), "the step gives"),
    "after keeps partial": (RS_TRANSFER, lambda p: p["steps"][0][
        "after"].update(partial=["dp"]), "appears twice"),
    "after drops partial": (RS_TRANSFER, lambda p: p["steps"][0][
        "after"].update(dims=[["tp"], []]), "the step gives"),
    "memory bound claimed": (REPLICATED_DETOUR, lambda p: p["stats"].update(
        memory_efficient=True), "stats.memory_efficient"),
    # pending sums cross the transfer (RS_CROSSING is valid) but each
    # receiver then gets both contributions: the copy's figures are wrong
    "transfer from partial, a copy's recv": (
        RS_TRANSFER, lambda p: p["steps"].pop(0), "recv"),
    "transfer to partial": (RS_TRANSFER, lambda p: p.update(steps=[
        p["steps"][0],
        step("transfer", {"mesh": "infer", "dims": [[], []],
                          "partial": ["tp"]},
             from_mesh="train", to_mesh="infer")]), "partial"),
    "transfer from_mesh wrong": (RS_TRANSFER, lambda p: p["steps"][1].update(
        from_mesh="infer"), "from_mesh"),
    "step on the wrong mesh": (RS_TRANSFER, lambda p: p["steps"][0].update(
        mesh="infer"), "runs on mesh"),
    "all_reduce of a non-partial axis": (AR_TRANSFER, lambda p: p[
        "steps"][0].update(axis="tp"), "not partial"),
    "ends in the wrong type": (RS_TRANSFER, lambda p: p["steps"][1][
        "after"].update(dims=[["tp"], []]), "not the target"),
    "ends in the wrong layout": (RS_TRANSFER, lambda p: p["steps"][1][
        "after"].update(blocks=[None, [4, 4, 2, 2]]), "blocks"),
    "reduce_scatter on the wrong dim": (RS_TRANSFER, lambda p: p["steps"][
        0].update(dim=1, after={"mesh": "train", "dims": [["tp"], ["dp"]]}),
        None),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_plans_rejected(name, tmp_path, capsys):
    plan, edit, why = BROKEN[name]
    rc, out = check("partial-sum-disjoint", broken(plan, edit), tmp_path,
                    capsys)
    assert rc == 1, out
    assert out.startswith("INVALID"), out
    if why:
        assert why in out, out


# The source's pending sum over dp crosses: each device of infer receives
# both dp contributions of its block (2 x 96 B) and reduces them.
RS_CROSSING = {
    "steps": [
        step("transfer", {"mesh": "infer", "dims": [[], ["tp"]], "partial": []},
             from_mesh="train", to_mesh="infer",
             local_shape=[8, 3], local_bytes=96, recv_bytes=192),
    ],
    "stats": {"src_bytes": 192, "dst_bytes": 96, "peak_bytes": 192,
              "recv_bytes": 192, "collectives": 1, "memory_efficient": True,
              "recv_bytes_per_device": [0] * 4 + [192] * 4,
              "peak_bytes_per_device": [192] * 4 + [96] * 4},
}


def test_crossing_transfer_valid(tmp_path, capsys):
    rc, out = check("partial-sum-disjoint", RS_CROSSING, tmp_path, capsys)
    assert rc == 0 and out.startswith("VALID"), out
    for op in ("sum", "max", "min", "prod"):
        raw = json.load(open(spec_path("partial-sum-disjoint")))
        raw["reduce"] = op
        spec = oracle.Spec(raw)
        p = copy.deepcopy(RS_CROSSING)
        p["reduce"] = op
        values = oracle.Values(spec)
        r = oracle.replay(spec, p, values)   # raises on a wrong value
        assert not r.errors, r.errors
        # one contribution left out: the values are wrong
        tr = oracle.transition(spec, spec.src, "transfer",
                               {"from_mesh": "train", "to_mesh": "infer"},
                               r.types[1])
        for d in tr.how:
            kind, per = tr.how[d]
            assert kind == "sum" and len(per) == 2
            tr.how[d] = ("sum", per[:1])
        data = oracle.simulate(values, tr, values.initial(spec.src),
                               r.types[1])
        with pytest.raises(oracle.Invalid):
            oracle.check_values(values, r.types[1], data, 0)


def test_illegal_all_gather(tmp_path, capsys):
    # After the reduce_scatter the type is [[tp, dp], []]: dp is the minor
    # of dim 0, tp is not, so gathering tp is illegal.
    plan = {"steps": [
        RS_TRANSFER["steps"][0],
        step("all_gather", {"mesh": "train", "dims": [["dp"], []]},
             mesh="train", dim=0, axis="tp"),
        step("transfer", {"mesh": "infer", "dims": [[], ["tp"]]},
             from_mesh="train", to_mesh="infer")]}
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 1 and "not the minor" in out and "step 1" in out, out
    # gathering the minor is legal
    plan["steps"][1] = step("all_gather", {"mesh": "train",
                                           "dims": [["tp"], []]},
                            mesh="train", dim=0, axis="dp", recv_bytes=96)
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 0, out
    # ... but not of an axis on another dim
    plan["steps"][1] = step("all_gather", {"mesh": "train",
                                           "dims": [["tp"], []]},
                            mesh="train", dim=1, axis="dp")
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 1, out


def test_slice_of_sharded_axis_rejected(tmp_path, capsys):
    plan = {"steps": [
        step("slice", {"mesh": "train", "dims": [["tp"], ["dp"]]},
             mesh="train", dim=1, axis="dp")]}
    rc, out = check("partial-sum-disjoint", plan, tmp_path, capsys)
    assert rc == 1 and "not replicated" in out, out


# ---------------------------------------------------------------------------
# Uneven: uneven-6-to-4-balanced-ceil
#   six x=2,y=3 on 0-5, from [[x,y],[]] balanced: rows 2,2,2,2,1,1 (f32 [10,4])
#   four t=4 on 6-9, to [[t],[]] ceil: rows 3,3,3,1
# ---------------------------------------------------------------------------

def test_uneven_direct_transfer(tmp_path, capsys):
    plan = {"steps": [step("transfer", {"mesh": "four", "dims": [["t"], []]},
                           from_mesh="six", to_mesh="four",
                           local_shape=[3, 4], recv_bytes=48)],
            "stats": {"src_bytes": 32, "dst_bytes": 48, "peak_bytes": 48,
                      "recv_bytes": 48, "collectives": 1,
                      "memory_efficient": True,
                      "recv_bytes_per_device": [0] * 6 + [48, 48, 48, 16],
                      "peak_bytes_per_device": [32] * 4 + [16, 16]
                      + [48, 48, 48, 16]}}
    rc, out = check("uneven-6-to-4-balanced-ceil", plan, tmp_path, capsys)
    assert rc == 0, out


def test_uneven_gather_needs_local_layout(tmp_path, capsys):
    # Gathering y leaves [[x], []]: the groups hold rows 0-6 and 6-10, so
    # the layout must be blocks [6, 4]; ceil (5, 5) is not local (row 5).
    gather = step("all_gather", {"mesh": "six", "dims": [["x"], []],
                                 "blocks": [[6, 4], None]},
                  mesh="six", dim=0, axis="y", local_shape=[6, 4],
                  local_bytes=96, recv_bytes=64)
    plan = {"steps": [gather,
                      step("transfer", {"mesh": "four", "dims": [["t"], []]},
                           from_mesh="six", to_mesh="four", recv_bytes=48)],
            "stats": {"src_bytes": 32, "dst_bytes": 48, "peak_bytes": 96,
                      "recv_bytes": 64, "collectives": 2,
                      "memory_efficient": False}}
    rc, out = check("uneven-6-to-4-balanced-ceil", plan, tmp_path, capsys)
    assert rc == 0, out
    del plan["steps"][0]["after"]["blocks"]
    rc, out = check("uneven-6-to-4-balanced-ceil", plan, tmp_path, capsys)
    assert rc == 1 and "needs element (5," in out, out


def test_uneven_ceil_balanced_split_key(tmp_path, capsys):
    # The target's layout may be stated by split or by explicit blocks.
    for after in ({"mesh": "four", "dims": [["y"], []], "split": "balanced"},
                  {"mesh": "four", "dims": [["y"], []],
                   "blocks": [[3, 3, 2, 2], None]}):
        plan = {"steps": [step("transfer", after, from_mesh="six",
                               to_mesh="four", recv_bytes=24)],
                "stats": {"peak_bytes": 36, "recv_bytes": 24}}
        rc, out = check("uneven-6-to-4-ceil-balanced", plan, tmp_path, capsys)
        assert rc == 0, out
    plan["steps"][0]["after"] = {"mesh": "four", "dims": [["y"], []]}
    rc, out = check("uneven-6-to-4-ceil-balanced", plan, tmp_path, capsys)
    assert rc == 1 and "blocks" in out, out


# ---------------------------------------------------------------------------
# Same devices, overlap, reorder, replication
# ---------------------------------------------------------------------------

def test_same_devices_identity_receives_nothing(tmp_path, capsys):
    plan = {"steps": [step("transfer", {"mesh": "infer", "dims": [["tp"], []]},
                           from_mesh="train", to_mesh="infer",
                           recv_bytes=0)],
            "stats": {"recv_bytes": 0, "peak_bytes": 48}}
    rc, out = check("reshape-identity", plan, tmp_path, capsys)
    assert rc == 0, out
    plan["steps"][0]["recv_bytes"] = 48
    rc, out = check("reshape-identity", plan, tmp_path, capsys)
    assert rc == 1, out


def test_reordered_devices(tmp_path, capsys):
    # b lists the devices 0,2,1,3: device 2 is b's (0,1), which holds rows
    # block c=1, columns block r=0 of [[c],[r]]: what it held in a.
    plan = {"steps": [step("transfer", {"mesh": "b", "dims": [["c"], ["r"]]},
                           from_mesh="a", to_mesh="b", recv_bytes=0)]}
    rc, out = check("reorder-transpose", plan, tmp_path, capsys)
    assert rc == 0, out
    plan = {"steps": [step("transfer", {"mesh": "b", "dims": [["x"], []]},
                           from_mesh="a", to_mesh="b", recv_bytes=48)],
            "stats": {"recv_bytes_per_device": [48, 48, 48, 48]}}
    rc, out = check("reorder-reversed", plan, tmp_path, capsys)
    assert rc == 0, out


def test_overlap_keeps_what_it_holds(tmp_path, capsys):
    # Devices 2 and 3 are in both meshes and keep their rows.
    plan = {"steps": [step("transfer", {"mesh": "infer", "dims": [["tp"], []]},
                           from_mesh="train", to_mesh="infer",
                           recv_bytes=96)],
            "stats": {"recv_bytes_per_device": [0, 0, 96, 96, 96, 96]}}
    rc, out = check("overlap-0-3-to-2-5", plan, tmp_path, capsys)
    assert rc == 0, out


def test_replicated_target(tmp_path, capsys):
    plan = {"steps": [step("transfer", {"mesh": "serve", "dims": [[], ["tp"]]},
                           from_mesh="train", to_mesh="serve",
                           local_shape=[4, 4], recv_bytes=64)],
            "stats": {"src_bytes": 32, "dst_bytes": 64, "peak_bytes": 64,
                      "memory_efficient": True}}
    rc, out = check("replicated-target", plan, tmp_path, capsys)
    assert rc == 0, out


def test_partial_max(tmp_path, capsys):
    # max reduction, overlapping meshes (device 3 in both)
    plan = {"steps": [
        step("all_reduce", {"mesh": "train", "dims": [[], ["tp"]]},
             mesh="train", axis="dp", recv_bytes=48),
        step("transfer", {"mesh": "infer", "dims": [["tp"], []]},
             from_mesh="train", to_mesh="infer")]}
    rc, out = check("partial-max-overlap", plan, tmp_path, capsys)
    assert rc == 0, out


# ---------------------------------------------------------------------------
# Values: the element-level replay catches wrong data
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("reduce", ["sum", "max", "min", "prod"])
def test_contributions_reduce_to_the_array(reduce):
    raw = json.load(open(spec_path("partial-sum-disjoint")))
    raw["reduce"] = reduce
    spec = oracle.Spec(raw)
    v = oracle.Values(spec, seed=3)
    # no single contribution is the array (so a lost reduction shows)
    assert not np.array_equal(v.C[0], v.A) or not np.array_equal(v.C[1], v.A)
    plan = copy.deepcopy(RS_TRANSFER)
    r = oracle.replay(spec, plan, v)
    assert not r.errors


def test_wrong_data_detected():
    spec = oracle.Spec(json.load(open(spec_path("disjoint-2x2-to-4"))))
    v = oracle.Values(spec)
    data = v.initial(spec.src)
    oracle.check_values(v, spec.src, data, 0)      # correct data passes
    box, arr = data[2]
    arr[0, 0] += 1
    with pytest.raises(oracle.Invalid, match="device 2 holds wrong values"):
        oracle.check_values(v, spec.src, data, 0)


def test_lost_reduction_detected(monkeypatch):
    # A reduce_scatter that forgot to reduce (copies its own contribution)
    # passes every structural check; only the values show it.
    spec = oracle.Spec(json.load(open(spec_path("partial-sum-disjoint"))))
    real = oracle.simulate

    def forgetful(values, tr, data, after):
        for d, (kind, what) in tr.how.items():
            if kind == "reduce":
                tr.how[d] = ("reduce", [d])
        return real(values, tr, data, after)
    monkeypatch.setattr(oracle, "simulate", forgetful)
    with pytest.raises(oracle.Invalid, match="wrong values"):
        oracle.replay(spec, copy.deepcopy(RS_TRANSFER), oracle.Values(spec))


# ---------------------------------------------------------------------------
# Layout rules
# ---------------------------------------------------------------------------

def test_rules():
    rb = oracle.rule_bounds
    assert rb(13, [4], "ceil") == (0, 4, 8, 12, 13)
    assert rb(13, [4], "balanced") == (0, 4, 7, 10, 13)
    assert rb(13, [4], "chunk") == (0, 4, 8, 12, 13)
    assert rb(13, [2, 2], "chunk") == (0, 4, 7, 10, 13)   # 4 3 / 3 3
    assert rb(10, [6], "ceil") == (0, 2, 4, 6, 8, 10, 10)
    assert rb(2, [4], "ceil") == (0, 1, 2, 2, 2)
    assert rb(5, [2, 2], "chunk") == (0, 2, 3, 4, 5)       # 2 1 / 1 1


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_bad_input(tmp_path, capsys):
    raw = json.load(open(spec_path("disjoint-2x2-to-4")))
    raw["frm"] = 1
    sp = tmp_path / "spec.json"
    sp.write_text(json.dumps(raw))
    pl = tmp_path / "plan.json"
    pl.write_text(json.dumps({"steps": []}))
    rc, out = run(["check", str(sp), str(pl)], capsys)
    assert rc == 2 and "unknown key" in out
    pl.write_text("{\"steps\": [")
    rc, out = run(["check", spec_path("disjoint-2x2-to-4"), str(pl)], capsys)
    assert rc == 2
    pl.write_text(json.dumps({"steps": [{"op": "teleport"}]}))
    rc, out = run(["check", spec_path("disjoint-2x2-to-4"), str(pl)], capsys)
    assert rc == 2
    pl.write_text(json.dumps({"steps": [{"op": "slice", "dim": "0",
                                         "axis": "x"}]}))
    rc, out = run(["check", spec_path("disjoint-2x2-to-4"), str(pl)], capsys)
    assert rc == 2
    raw = json.load(open(spec_path("disjoint-2x2-to-4")))
    raw["meshes"]["infer"]["devices"] = [4, 4, 5, 6]
    sp.write_text(json.dumps(raw))
    rc, out = run(["check", str(sp), str(pl)], capsys)
    assert rc == 2 and "distinct" in out


def test_empty_plan_only_when_source_is_target(tmp_path, capsys):
    rc, out = check("disjoint-2x2-to-4", {"steps": []}, tmp_path, capsys)
    assert rc == 1 and "not the target" in out


# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------

ALL_SPECS = sorted(f[:-5] for f in os.listdir(SPECS) if f.endswith(".json"))


@pytest.mark.parametrize("name", ALL_SPECS)
def test_search_plan_passes_check(name, tmp_path, capsys):
    out = tmp_path / "opt.json"
    rc, text = run(["search", spec_path(name), "-o", str(out)], capsys)
    assert rc == 0, text
    rc, text = run(["check", spec_path(name), str(out)], capsys)
    assert rc == 0, text


EXPECTED = {  # (peak, recv) optima, worked out by hand
    "disjoint-2x2-to-4": (96, 96),
    "reshape-identity": (48, 0),
    "reorder-transpose": (24, 0),
    "reorder-reversed": (48, 48),
    "overlap-0-3-to-2-5": (96, 96),
    "partial-sum-disjoint": (192, 96),
    "replicated-target": (64, 64),
    "uneven-6-to-4-ceil-balanced": (36, 24),
    # slice w, reduce_scatter x into [[w, x], []] = the target's blocks
    "partial-slice-before-reduce-scatter": (128, 32),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_search_optima(name):
    spec = oracle.Spec(json.load(open(spec_path(name))))
    s = oracle.Searcher(spec)
    key, path = s.run(2, 2, "max")
    assert key[:2] == EXPECTED[name]


def brute_force(spec, max_a, max_b, layouts="ceil", cross=False):
    """Every plan of the space, no pruning: the least (peak, recv, colls).
    cross: the transfer may sum the source's pending contributions."""
    s = oracle.Searcher(spec, layouts)

    def paths(t, depth):
        yield []
        if depth:
            for st, after, rv in s.moves(t):
                for rest in paths(after, depth - 1):
                    yield [(st, after)] + rest
    dm = spec.dst.mesh
    targets = [t for dims, partial in oracle.enumerate_sigs(
        dm, len(spec.shape), ()) for t in s.candidates(dm, dims, partial)]
    best = None
    for pa in paths(spec.src, max_a):
        a = pa[-1][1] if pa else spec.src
        if a.partial and not cross:
            continue
        for t in targets:
            for pb in paths(t, max_b):
                end = pb[-1][1] if pb else t
                if end.key != spec.dst.key:
                    continue
                tstep = {"op": "transfer", "from_mesh": spec.src.mesh.name,
                         "to_mesh": dm.name}
                plan, r = oracle.plan_json(spec, pa + [(tstep, t)] + pb)
                st = plan["stats"]
                k = (st["peak_bytes"], st["recv_bytes"], st["collectives"])
                best = k if best is None or k < best else best
    return best


@pytest.mark.parametrize("name", ["partial-max-overlap", "reorder-transpose",
                                  "partial-slice-before-reduce-scatter"])
@pytest.mark.parametrize("cross", [False, True])
def test_search_matches_brute_force(name, cross):
    spec = oracle.Spec(json.load(open(spec_path(name))))
    key, _ = oracle.Searcher(spec, cross_sums=cross).run(2, 1, "max")
    assert key[:3] == brute_force(spec, 2, 1, cross=cross)


def test_search_no_plan_for_partial_target(tmp_path, capsys):
    raw = json.load(open(spec_path("disjoint-2x2-to-4")))
    raw["to"]["partial"] = ["tp"]
    raw["to"]["dims"] = [[], []]
    sp = tmp_path / "spec.json"
    sp.write_text(json.dumps(raw))
    rc, out = run(["search", str(sp)], capsys)
    assert rc == 3 and "NO PLAN" in out


# ---------------------------------------------------------------------------
# compare, against a fake redistplan that prints a given plan
# ---------------------------------------------------------------------------

def fake_tool(tmp_path, plan, rc=0):
    pf = tmp_path / "fake_plan.json"
    pf.write_text(json.dumps(plan))
    tool = tmp_path / "redistplan"
    tool.write_text("#!/bin/sh\ncat %s\nexit %d\n" % (pf, rc))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return str(tool)


def test_compare_agree_fail_better(tmp_path, capsys):
    sp = spec_path("partial-sum-disjoint")
    rc, out = run(["compare", sp, "--redistplan",
                   fake_tool(tmp_path, RS_TRANSFER)], capsys)
    assert rc == 0 and out.startswith("AGREE"), out
    # valid but receives more: FAIL
    rc, out = run(["compare", sp, "--redistplan",
                   fake_tool(tmp_path, AR_TRANSFER)], capsys)
    assert rc == 1 and out.startswith("FAIL"), out
    # larger peak: FAIL
    rc, out = run(["compare", sp, "--redistplan",
                   fake_tool(tmp_path, REPLICATED_DETOUR)], capsys)
    assert rc == 1 and out.startswith("FAIL"), out
    # an invalid plan: FAIL
    bad = broken(RS_TRANSFER, lambda p: p["steps"][0].update(mesh="infer"))
    rc, out = run(["compare", sp, "--redistplan", fake_tool(tmp_path, bad)],
                  capsys)
    assert rc == 1 and "rejected" in out, out
    # "no plan" while the search has one: FAIL
    rc, out = run(["compare", sp, "--redistplan",
                   fake_tool(tmp_path, {}, rc=3)], capsys)
    assert rc == 1, out


def test_compare_better_than_search_space(tmp_path, capsys):
    # A permute is outside the default search space; with --max-a 0 the
    # search cannot reduce the partial source at all.
    sp = spec_path("partial-sum-disjoint")
    rc, out = run(["compare", sp, "--max-a", "0", "--redistplan",
                   fake_tool(tmp_path, RS_TRANSFER)], capsys)
    assert rc == 0 and out.startswith("BETTER"), out
