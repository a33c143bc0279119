#!/usr/bin/env python3
"""Write array-set specs (doc/spec-format.md section 10) for a Llama-style
8B model: its full bf16 weight set or its KV cache.

Variants (--variant):
  train-to-infer  weights, FSDP+TP on train dp=2,tp=2 (devices 0-3) to
                  inference tp=4 on other devices (4-7): two meshes.
  reshaped        the same move on the same 4 devices, one mesh
                  [["dp",2],["tp",2]]; the inference tp=4 sharding is the
                  axis list ["dp","tp"] (device = dp*2+tp: tp rank order).
  checkpoint      weights saved FSDP over 8 ranks, loaded FSDP over 6
                  (devices 0-5; the `balanced` rule: 6 divides no dim).
  grads           the gradients of an FSDP+TP step on dp=2,tp=2 (one
                  mesh): each weight's gradient sharded as tp shards the
                  weight, its sums pending over dp, reduce-scattered to
                  the weight's FSDP+TP sharding.
  kv-cache        the K and V cache of every layer, [batch, kv_heads,
                  seq, head_dim], from prefill (dp=4,tp=2; devices 0-7)
                  to decode (tp=8; devices 8-15).

--shrink K divides every dim by K, rounding up (run-sized copies), and
the default budget by K*K (the weights are 2-D, so the rounds stay close
to the full size's; --budget is taken as given).  --layers N keeps the
first N layers.  --expect REDISTPLAN fills each
array's `expect` with the figures of the plan that REDISTPLAN prints
(`plan --json`), as the other example specs hold theirs.

  python3 scripts/model_spec.py --variant reshaped -o specs/arrays/X.json
"""

import argparse
import json
import subprocess
import sys
import tempfile

# Llama-3-8B shapes.
VOCAB, HIDDEN, FFN, LAYERS = 128256, 4096, 14336, 32
KV_HEADS, HEAD_DIM = 8, 128
MIB = 1 << 20

# The specs' names (and files, specs/arrays/NAME.json).
NAMES = {"train-to-infer": "sync-train-to-infer", "reshaped": "sync-reshaped",
         "checkpoint": "checkpoint-8-to-6-ranks",
         "grads": "grads-fsdp-dp2-tp2",
         "kv-cache": "kv-cache-dp4-tp2-to-tp8"}

COLUMN = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
ROW = ("o_proj", "down_proj")


def weight_list(layers):
    """(name, shape, kind) of every weight, in the checkpoint's order;
    kind is column, row, vocab or norm."""
    kv = KV_HEADS * HEAD_DIM
    shapes = {"q_proj": [HIDDEN, HIDDEN], "k_proj": [kv, HIDDEN],
              "v_proj": [kv, HIDDEN], "o_proj": [HIDDEN, HIDDEN],
              "gate_proj": [FFN, HIDDEN], "up_proj": [FFN, HIDDEN],
              "down_proj": [HIDDEN, FFN]}
    out = [("model.embed_tokens.weight", [VOCAB, HIDDEN], "vocab")]
    for i in range(layers):
        p = "model.layers.%d." % i
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out.append((p + "self_attn." + n + ".weight", shapes[n],
                        "column" if n in COLUMN else "row"))
        for n in ("gate_proj", "up_proj", "down_proj"):
            out.append((p + "mlp." + n + ".weight", shapes[n],
                        "column" if n in COLUMN else "row"))
        out.append((p + "input_layernorm.weight", [HIDDEN], "norm"))
        out.append((p + "post_attention_layernorm.weight", [HIDDEN], "norm"))
    out.append(("model.norm.weight", [HIDDEN], "norm"))
    out.append(("lm_head.weight", [VOCAB, HIDDEN], "vocab"))
    return out


# Source (FSDP+TP on dp=2,tp=2) and inference (tp=4) dims of each kind.
TRAIN = {"column": [["tp", "dp"], []], "vocab": [["tp", "dp"], []],
         "row": [["dp"], ["tp"]], "norm": [["dp"]]}
INFER = {"column": [["tp"], []], "vocab": [["tp"], []],
         "row": [[], ["tp"]], "norm": [[]]}


def without_dp(dims):
    """The dims with dp taken out (a gradient before its reduce-scatter)."""
    return [[x for x in d if x != "dp"] for d in dims]


def infer_on_train_mesh(dims):
    """The tp=4 dims written on the dp=2,tp=2 mesh: tp rank = dp*2+tp."""
    return [["dp", "tp"] if d == ["tp"] else d for d in dims]


def shrink(shape, k):
    return [-(-n // k) for n in shape]


def weights_spec(variant, layers, k, budget):
    arrays = []
    for name, shape, kind in weight_list(layers):
        a = {"name": name, "shape": shrink(shape, k), "dtype": "bf16"}
        if variant == "train-to-infer":
            a["from"] = {"mesh": "train", "dims": TRAIN[kind]}
            a["to"] = {"mesh": "infer", "dims": INFER[kind]}
        elif variant == "reshaped":
            a["from"] = {"dims": TRAIN[kind]}
            a["to"] = {"dims": infer_on_train_mesh(INFER[kind])}
        elif variant == "grads":
            a["from"] = {"dims": without_dp(TRAIN[kind]), "partial": ["dp"]}
            a["to"] = {"dims": TRAIN[kind]}
        else:  # checkpoint: FSDP on dim 0 (the largest) for everything
            rest = [[] for _ in shape[1:]]
            a["from"] = {"mesh": "saved", "dims": [["fsdp"]] + rest}
            a["to"] = {"mesh": "loaded", "dims": [["fsdp"]] + rest,
                       "split": "balanced"}
        arrays.append(a)
    spec = {}
    if variant == "train-to-infer":
        spec["meshes"] = {
            "train": {"axes": [["dp", 2], ["tp", 2]], "devices": [0, 1, 2, 3]},
            "infer": {"axes": [["tp", 4]], "devices": [4, 5, 6, 7]}}
    elif variant in ("reshaped", "grads"):
        spec["mesh"] = [["dp", 2], ["tp", 2]]
    else:
        spec["meshes"] = {
            "saved": {"axes": [["fsdp", 8]], "devices": list(range(8))},
            "loaded": {"axes": [["fsdp", 6]], "devices": list(range(6))}}
    spec["budget_bytes"] = budget
    spec["arrays"] = arrays
    return spec


def kv_spec(layers, k, budget, batch, seq):
    shape = shrink([batch, KV_HEADS, seq, HEAD_DIM], k)
    arrays = []
    for i in range(layers):
        for kv in ("k", "v"):
            arrays.append({
                "name": "layers.%d.%s_cache" % (i, kv), "shape": shape,
                "dtype": "bf16",
                "from": {"mesh": "prefill", "dims": [["dp"], ["tp"], [], []]},
                "to": {"mesh": "decode", "dims": [[], ["tp"], [], []]}})
    return {"meshes": {
                "prefill": {"axes": [["dp", 4], ["tp", 2]],
                            "devices": list(range(8))},
                "decode": {"axes": [["tp", 8]],
                           "devices": list(range(8, 16))}},
            "budget_bytes": budget, "arrays": arrays}


def fill_expect(spec, redistplan):
    """Each array's expect: the figures of its plan (redistplan plan)."""
    # redistplan reads regular files only (no pipes).
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(spec, f)
        f.flush()
        out = subprocess.run([redistplan, "plan", "--json", f.name],
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("model_spec.py: %s plan failed (%d): %s"
                 % (redistplan, out.returncode, out.stderr.strip()))
    plans = {p["array"]: p for p in json.loads(out.stdout)["arrays"]}
    for a in spec["arrays"]:
        p = plans[a["name"]]
        st = p["stats"]
        a["expect"] = {"max_collectives": st["collectives"],
                       "max_recv_bytes": st["recv_bytes"],
                       "max_peak_bytes": st["peak_bytes"],
                       "ops": [s["op"] for s in p["steps"]]}


def dump(spec):
    """One array per line: diffs stay readable, files stay small."""
    head = {k: v for k, v in spec.items() if k != "arrays"}
    lines = ["{"]
    for k, v in head.items():
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(v)))
    lines.append('  "arrays": [')
    arr = spec["arrays"]
    for i, a in enumerate(arr):
        lines.append("    " + json.dumps(a) + ("," if i + 1 < len(arr) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", required=True,
                    choices=["train-to-infer", "reshaped", "checkpoint",
                             "kv-cache", "grads"])
    ap.add_argument("--shrink", type=int, default=1, metavar="K",
                    help="divide every dim by K, rounding up (default 1)")
    ap.add_argument("--layers", type=int, default=LAYERS,
                    help="layers kept (default %d)" % LAYERS)
    ap.add_argument("--budget", type=int,
                    help="budget_bytes (default 256 MiB / K^2; -1: none)")
    ap.add_argument("--batch", type=int, default=8,
                    help="kv-cache: sequences (default 8)")
    ap.add_argument("--seq", type=int, default=4096,
                    help="kv-cache: tokens per sequence (default 4096)")
    ap.add_argument("--name", help="the spec's name (default from the options)")
    ap.add_argument("--expect", metavar="REDISTPLAN",
                    help="fill each array's expect from REDISTPLAN's plan")
    ap.add_argument("-o", "--output", help="file to write (default stdout)")
    a = ap.parse_args()
    if a.budget is None:
        a.budget = -(-256 * MIB // (a.shrink * a.shrink))
    if a.shrink < 1 or not 1 <= a.layers <= LAYERS or a.budget < -1:
        ap.error("--shrink >= 1, 1 <= --layers <= %d, --budget >= -1" % LAYERS)
    budget = None if a.budget == -1 else a.budget
    if a.variant == "kv-cache":
        spec = kv_spec(a.layers, a.shrink, budget, a.batch, a.seq)
    else:
        spec = weights_spec(a.variant, a.layers, a.shrink, budget)
    if budget is None:
        del spec["budget_bytes"]
    name = a.name or "llama8b-" + NAMES[a.variant]
    if a.layers != LAYERS:
        name += "-%dlayers" % a.layers
    if a.shrink != 1:
        name += "-shrink%d" % a.shrink
    spec = {"name": name, **spec}
    if a.expect:
        fill_expect(spec, a.expect)
    text = dump(spec)
    json.loads(text)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
