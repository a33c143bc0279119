#!/usr/bin/env bash
# Cross-check every plan of specs/ with the executable model of the
# contract (reference_model.py, an exhaustive Python search): the plan must
# be valid in the model and match the model's optimum (peak, bytes, steps).
# The model is version 1 of the contract: the plans of --objective bytes.
# usage: test_reference.sh REDISTPLAN SOURCE_ROOT REFERENCE_MODEL
set -u
RP=$1
ROOT=$2
REF=$3
. "$(dirname "$0")/harness.sh"
for s in "$ROOT"/specs/*.json; do
    b=$(basename "$s")
    if grep -q '"infeasible": true' "$s"; then
        python3 "$REF" solve "$s" >"$T/r" 2>&1
        grep -q '"feasible": false' "$T/r" && ok || bad "$b: model finds a plan"
        continue
    fi
    "$RP" plan "$s" --json --objective bytes >"$T/p.json" || { bad "$b: no plan"; continue; }
    # uneven specs (doc/spec-format.md section 7) are outside this model:
    # tests/reference/uneven_model.py checks them
    grep -q '"recv_bytes_per_device"' "$T/p.json" && continue
    python3 "$REF" verify "$s" "$T/p.json" >"$T/v" 2>&1
    if python3 - "$T/v" "$T/p.json" <<'PY'
import json, math, sys
v = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
ok = (v["valid"] and v["peak_bytes"] == v["opt_peak_bytes"]
      and abs(v["bytes"] - v["opt_bytes"]) < 1e-6 * max(1.0, v["opt_bytes"])
      and v["collectives"] == v["opt_steps"]
      and p["stats"]["peak_bytes"] == v["peak_bytes"]
      and p["stats"]["recv_bytes"] == math.ceil(v["bytes"] - 1e-9)
      and p["stats"]["collectives"] == v["collectives"])
sys.exit(0 if ok else 1)
PY
    then ok; else bad "$b: $(cat "$T/v")"; fi
done
finish reference
