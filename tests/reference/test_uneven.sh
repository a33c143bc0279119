#!/usr/bin/env bash
# The uneven-dims cross-check: every uneven plan of specs/ and random small
# uneven specs are replayed by the independent model (uneven_model.py:
# explicit element sets, exhaustive optimum): the bytes objective's plans
# must be valid, within the bound they claim and optimal; the default (time)
# objective's plans valid with exact stats (the model has no cost model).
# usage: test_uneven.sh REDISTPLAN SOURCE_ROOT [RANDOM_CASES] [SEED]
set -u
RP=$1
ROOT=$2
N=${3:-60}
SEED=${4:-1}
MODEL=$ROOT/tests/reference/uneven_model.py
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
for s in "$ROOT"/specs/*.json; do
    "$RP" plan "$s" --json --objective bytes >"$T/p.json" 2>/dev/null || continue
    grep -q '"recv_bytes_per_device"' "$T/p.json" || continue
    # the exhaustive model is for small meshes and shapes only
    python3 - "$s" <<'PY' || continue
import json, math, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if math.prod(d["shape"]) <= 4096 and
         math.prod(s for _, s in d["mesh"]) <= 16 else 1)
PY
    if timeout 120 python3 "$MODEL" verify "$s" "$T/p.json" >"$T/v" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $(basename "$s"): $(cat "$T/v")"
    fi
    # the default (time) plan: replayed, its stats exact
    if "$RP" plan "$s" --json >"$T/t.json" &&
        timeout 120 python3 "$MODEL" verify "$s" "$T/t.json" replay >"$T/v" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $(basename "$s") (time): $(cat "$T/v")"
    fi
done
timeout 240 python3 "$MODEL" random "$N" "$SEED" "$RP" >"$T/r" 2>&1
rc=$?
grep FAIL "$T/r" | head -5
tail -1 "$T/r"
[ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
echo "uneven: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
