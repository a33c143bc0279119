#!/usr/bin/env bash
# End-to-end tests of redistplan: exit codes, messages, check, verify, JSON.
# usage: test_cli.sh REDISTPLAN SOURCE_ROOT [quick]
# quick (sanitizer builds): without the checks of answers alone that plan
# whole models (specs/arrays against scripts/model_spec.py) and the
# golden plan files; every other command still runs.
set -u
RP=$1
ROOT=$2
QUICK=${3:-}
. "$(dirname "$0")/harness.sh"

# 1. Golden invalid specs: exit 2 and exactly the recorded message, which
#    must contain the case's key phrase.
cd "$ROOT/tests/specs/invalid" || exit 1
for f in *.json; do
    b=${f%.json}
    "$RP" plan "$f" >/dev/null 2>"$T/err"
    rc=$?
    [ "$rc" -eq 2 ] || { bad "$b: exit $rc, want 2"; continue; }
    got=$(sed 's/^redistplan: //' "$T/err")
    want=$(cat "$b.msg")
    [ "$got" = "$want" ] || { bad "$b: message differs"; echo "    got:  $got"; echo "    want: $want"; continue; }
    grep -qiF -- "$(cat "$b.expect")" <<<"$got" || { bad "$b: lacks '$(cat "$b.expect")'"; continue; }
    case "$got" in "$f"*) ok ;; *) bad "$b: message does not name the file" ;; esac
done
# check reports bad input as ERROR and exits 2, still counting the rest.
expect_rc 2 "check on an invalid spec" "$RP" check 33-blocks-wrong-sum.json "$ROOT/specs/megatron-col-to-row-parallel.json"
grep -q '^ERROR 33-blocks-wrong-sum.json: ' "$T/out" && grep -q '^1 passed, 0 failed, 1 error (not checked: bad input)$' "$T/out" && ok || bad "check ERROR line / summary (errors apart from failures)"
cd "$ROOT" || exit 1

# 2. check on specs/: all pass, summary line, JUnit XML.
expect_rc 0 "check specs" "$RP" check specs/*.json --junit "$T/junit.xml"
n=$(ls specs/*.json | wc -l)
tail -1 "$T/out" | grep -qx "$n passed, 0 failed" && ok || bad "check summary: $(tail -1 "$T/out")"
grep -c '<testcase ' "$T/junit.xml" | grep -qx "$n" && ok || bad "junit testcase count"
grep -q "tests=\"$n\" failures=\"0\" errors=\"0\"" "$T/junit.xml" && ok || bad "junit totals"

# A failing expectation: exit 1 with the reason.
sed 's/"max_collectives": 1/"max_collectives": 0/' specs/megatron-col-to-row-parallel.json >"$T/tight.json"
expect_rc 1 "check failing expect" "$RP" check "$T/tight.json" --junit "$T/j2.xml"
grep -q '^FAIL .*1 collectives > max_collectives 0' "$T/out" && ok || bad "check FAIL reason"
grep -q '<failure message=' "$T/j2.xml" && ok || bad "junit failure element"
sed 's/"ops": \["all_to_all"\]/"ops": ["all_gather", "slice"]/' specs/megatron-col-to-row-parallel.json >"$T/ops.json"
expect_rc 1 "check wrong ops" "$RP" check "$T/ops.json"
grep -q 'ops are \[all_to_all\], expected \[all_gather, slice\]' "$T/out" && ok || bad "ops reason"

# check: --objective as plan has it (time by default: the expect blocks of
# specs/ are the time objective's; the bytes objective's plan fails the
# exchange one); a spec without expect passes and says so; JUnit names each
# test by its spec's name, with times; an unwritable --junit fails before
# any spec is checked.
expect_rc 0 "check, default objective" "$RP" check specs/fsdp-rows-to-2d-columns.json
grep -q '^PASS .*; objective time, [0-9.]* us modelled$' "$T/out" && ok || bad "check names the objective: $(head -1 "$T/out")"
expect_rc 0 "check --objective time" "$RP" check specs/fsdp-rows-to-2d-columns.json --objective time
expect_rc 1 "check --objective bytes (not the expected exchange)" "$RP" check specs/fsdp-rows-to-2d-columns.json --objective bytes
grep -q '^FAIL .*ops are \[slice, all_to_all, permute\], expected \[exchange\]' "$T/out" && ok || bad "check --objective bytes: $(head -1 "$T/out")"
expect_rc 2 "check --objective bogus" "$RP" check specs/fsdp-rows-to-2d-columns.json --objective fast
grep -qx 'redistplan: check: --objective: time or bytes, not fast' "$T/err" && ok || bad "check --objective message: $(cat "$T/err")"
# pending sums may cross meshes by default; --no-cross-sums resolves them
# on the source mesh (doc/meshes.md); both at once is bad input
X=specs/meshes/grad-partial-dp8-to-tp16-crossing.json
expect_rc 0 "check a crossing spec" "$RP" check "$X"
grep -q '^PASS .*: 1 collective, recv 8388608 bytes' "$T/out" && ok || bad "default crossing: $(head -1 "$T/out")"
expect_rc 0 "check --no-cross-sums" "$RP" check "$X" --no-cross-sums
grep -q '^PASS .*: 2 collectives, recv 14680064 bytes' "$T/out" && ok || bad "--no-cross-sums: $(head -1 "$T/out")"
# the level between the meshes (--mesh-link): on a slow network the
# contributions no longer cross; the plan's cost model names it
echo '{"links": {"network": {"alpha": 2e-5, "beta": 1e-8}}}' >"$T/slownet.json"
expect_rc 0 "plan, slow network between the meshes" "$RP" plan "$X" --json \
    --cost "$T/slownet.json" --mesh-link network
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [s["op"] for s in d["steps"]] == ["reduce_scatter", "transfer"] and d["stats"]["cost_model"]["mesh_link"] == "network" else 1)' "$T/out" \
    && ok || bad "--mesh-link network: $(head -c 300 "$T/out")"
expect_rc 0 "plan, the same model, derived level" "$RP" plan "$X" --json \
    --cost "$T/slownet.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [s["op"] for s in d["steps"]] == ["transfer"] and "mesh_link" not in d["stats"]["cost_model"] else 1)' "$T/out" \
    && ok || bad "no --mesh-link: $(head -c 300 "$T/out")"
expect_rc 2 "--mesh-link warp" "$RP" plan "$X" --mesh-link warp
grep -qx 'redistplan: <command line>: --mesh-link: unknown link level "warp" (levels: cache, numa, package, node, network)' "$T/err" && ok || bad "--mesh-link message: $(cat "$T/err")"
expect_rc 2 "--cross-sums with --no-cross-sums" "$RP" plan "$X" --cross-sums --no-cross-sums
grep -qx 'redistplan: <command line>: --cross-sums and --no-cross-sums: give one' "$T/err" && ok || bad "both cross options: $(cat "$T/err")"
python3 - specs/megatron-col-to-row-parallel.json "$T/noexpect.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); del d["expect"]; json.dump(d, open(sys.argv[2], "w"))
PY
expect_rc 0 "check without expect" "$RP" check "$T/noexpect.json" --junit "$T/j3.xml"
grep -q '^PASS .*noexpect.json: no expect: a plan exists: 1 collective' "$T/out" && ok || bad "check no-expect line: $(head -1 "$T/out")"
python3 - "$T/j3.xml" "$T/junit.xml" <<'PY' && ok || bad "junit names and times"
import sys, xml.etree.ElementTree as ET
for f in sys.argv[1:]:
    s = ET.parse(f).getroot().find("testsuite")
    float(s.get("time"))
    for c in s.findall("testcase"):
        assert not c.get("name").endswith(".json"), c.get("name")
        assert c.get("file").endswith(".json")
        assert float(c.get("time")) >= 0
names = [c.get("name") for c in ET.parse(sys.argv[2]).getroot().iter("testcase")]
assert "megatron-col-to-row-parallel" in names, names
PY
expect_rc 2 "check --junit into a missing directory" "$RP" check specs/megatron-col-to-row-parallel.json --junit "$T/missing/dir/x.xml"
grep -qx "redistplan: check: --junit $T/missing/dir/x.xml: cannot write: No such file or directory" "$T/err" && ok || bad "junit up-front message: $(cat "$T/err")"
[ ! -s "$T/out" ] && ok || bad "check --junit unwritable: checked specs anyway"

# 3. plan: exit codes.
expect_rc 0 "plan table" "$RP" plan specs/megatron-col-to-row-parallel.json
grep -q 'memory-efficient: yes' "$T/out" && grep -q 'all_to_all' "$T/out" && ok || bad "plan table content"
grep -q 'after step 1' "$T/out" && ok || bad "plan grid"
expect_rc 0 "plan unmeetable bound" "$RP" plan specs/vit-attention-heads-resplit.json --no-grid --objective bytes
grep -q 'memory-efficient: no' "$T/out" && ok || bad "memory-efficient: no in summary"
# The default objective is time (doc/spec-format.md section 9): the built-in cost
# model, named in the table and the JSON; --objective bytes is version 1.
expect_rc 0 "plan, default objective" "$RP" plan specs/fsdp-rows-to-2d-columns.json --no-grid
grep -q 'objective: time; built-in cost model' "$T/out" && grep -q ' exchange ' "$T/out" && ok || bad "default objective is time: $(cat "$T/out")"
expect_rc 0 "plan --json, default objective" "$RP" plan specs/fsdp-rows-to-2d-columns.json --json
python3 -c 'import json,sys; st=json.load(open(sys.argv[1]))["stats"]; sys.exit(0 if st["objective"] == "time" and st["cost_model"]["source"] == "built-in" and st["cost_model"]["axis_links"] == {"fsdp": "node", "tensor": "node"} else 1)' "$T/out" && ok || bad "JSON names the objective and cost model"
cp "$T/out" "$T/deftime.json"
expect_rc 0 "plan --objective time" "$RP" plan specs/fsdp-rows-to-2d-columns.json --json --objective time
cmp -s "$T/out" "$T/deftime.json" && ok || bad "--objective time is the default"
expect_rc 0 "plan --objective bytes" "$RP" plan specs/fsdp-rows-to-2d-columns.json --no-grid --objective bytes
grep -q '  objective: bytes' "$T/out" && ! grep -q ' exchange ' "$T/out" && ok || bad "bytes objective: $(cat "$T/out")"
# row2col at 4 ranks: the single exchange (what doc/bench.md measured
# fastest); at 2 ranks the single all_to_all
expect_rc 0 "row2col, 4 ranks" "$RP" plan - --mesh x=2,y=2 --shape 2048x2048 --dtype f64 --from 'x,y|' --to '|x,y' --json
python3 -c 'import json,sys; sys.exit(0 if [s["op"] for s in json.load(open(sys.argv[1]))["steps"]] == ["exchange"] else 1)' "$T/out" && ok || bad "row2col at 4 ranks: one exchange"
expect_rc 0 "row2col, 2 ranks" "$RP" plan - --mesh x=2 --shape 2048x2048 --dtype f64 --from 'x|' --to '|x' --json
python3 -c 'import json,sys; sys.exit(0 if [s["op"] for s in json.load(open(sys.argv[1]))["steps"]] == ["all_to_all"] else 1)' "$T/out" && ok || bad "row2col at 2 ranks: one all_to_all"
# A set's rounds for runs that keep the source (doc/arrays.md): the
# reshaped weight sync's exchanges then need scratch, 5 rounds under
# 256 MiB instead of 1; --preserve-src on one array is bad input.
expect_rc 0 "plan set" "$RP" plan "$ROOT/specs/arrays/llama8b-sync-reshaped.json" --json
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; sys.exit(0 if t["rounds"] == 1 and t["scratch_bytes"] == 0 else 1)' "$T/out" && ok || bad "set without --preserve-src: one round, no scratch"
expect_rc 0 "plan set --preserve-src" "$RP" plan "$ROOT/specs/arrays/llama8b-sync-reshaped.json" --json --preserve-src
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["totals"]; sys.exit(0 if t["rounds"] == 5 and 0 < t["scratch_bytes"] <= d["budget_bytes"] else 1)' "$T/out" && ok || bad "set with --preserve-src: 5 rounds within the budget"
expect_rc 2 "plan --preserve-src, one array" "$RP" plan specs/megatron-col-to-row-parallel.json --preserve-src
grep -q 'preserve-src is for a spec with "arrays"' "$T/err" && ok || bad "--preserve-src on one array: message"
# check gates a set's rounds as plan groups them, --preserve-src too
expect_rc 0 "check set --preserve-src" "$RP" check "$ROOT/specs/arrays/llama8b-sync-reshaped.json" --preserve-src
grep -q "291 arrays in 5 rounds (--preserve-src)" "$T/out" && ok || bad "check set --preserve-src: 5 rounds"
expect_rc 0 "check set" "$RP" check "$ROOT/specs/arrays/llama8b-sync-reshaped.json"
grep -q "291 arrays in 1 round, scratch 0 bytes" "$T/out" && ok || bad "check set: one round, no scratch"
# The model specs of specs/arrays are what scripts/model_spec.py writes
# (their expect blocks from this redistplan's plans).
for v in train-to-infer:sync-train-to-infer reshaped:sync-reshaped \
         checkpoint:checkpoint-8-to-6-ranks kv-cache:kv-cache-dp4-tp2-to-tp8 \
         grads:grads-fsdp-dp2-tp2; do
    [ -n "$QUICK" ] && continue
    expect_rc 0 "model_spec.py --variant ${v%%:*}" python3 "$ROOT/scripts/model_spec.py" \
        --variant "${v%%:*}" --expect "$RP" -o "$T/model.json"
    cmp -s "$T/model.json" "$ROOT/specs/arrays/llama8b-${v#*:}.json" && ok ||
        bad "specs/arrays/llama8b-${v#*:}.json differs from what scripts/model_spec.py writes"
done
expect_rc 0 "model_spec.py --shrink 8 --layers 2" python3 "$ROOT/scripts/model_spec.py" \
    --variant reshaped --shrink 8 --layers 2 -o "$T/model.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); a={x["name"]: x for x in d["arrays"]}; sys.exit(0 if len(a) == 21 and a["lm_head.weight"]["shape"] == [16032, 512] and d["budget_bytes"] == 4194304 else 1)' "$T/model.json" && ok || bad "model_spec.py --shrink 8 --layers 2: $(head -c 300 "$T/model.json")"
expect_rc 3 "plan under too small --max-peak" "$RP" plan specs/megatron-col-to-row-parallel.json --max-peak 1000
grep -q 'no plan within max peak 1000 bytes' "$T/err" && ok || bad "max-peak message"
expect_rc 0 "plan with tiny --max-states (a plan, not proven optimal)" "$RP" plan specs/four-axis-mesh-3d-activations.json --max-states 3 --objective bytes
grep -q 'optimal: not proven: the search reached its budget of 3 types' "$T/out" && ok || bad "budget note in the table"
expect_rc 0 "plan --json with tiny --max-states" "$RP" plan specs/four-axis-mesh-3d-activations.json --max-states 3 --json --objective bytes
grep -q '"optimal": false' "$T/out" && ok || bad "optimal: false in the JSON"
expect_rc 2 "plan missing file" "$RP" plan "$T/nope.json"
grep -q "nope.json: cannot open" "$T/err" && ok || bad "missing file message"
expect_rc 2 "plan unknown option" "$RP" plan specs/megatron-col-to-row-parallel.json --bogus
expect_rc 2 "no command" "$RP"
expect_rc 0 "help" "$RP" --help

# 4. inline specs.
expect_rc 0 "inline plan" "$RP" plan - --mesh x=2,y=4 --shape 1024x512 --dtype f32 --from 'x,y|' --to '|x,y' --json --objective bytes
grep -q '"op": "all_to_all"' "$T/out" && ok || bad "inline plan ops"
expect_rc 2 "inline unknown axis" "$RP" plan - --mesh x=2,y=4 --shape 1024x512 --from 'x,z|' --to '|x,y'
grep -q '<command line>: --from: axis "z" is not in the mesh (axes: x, y)' "$T/err" && ok || bad "inline error names the option: $(cat "$T/err")"
expect_rc 2 "inline rank mismatch" "$RP" plan - --mesh x=2 --shape 8x8 --from 'x' --to '|x'
expect_rc 0 "inline uneven plans" "$RP" plan - --mesh x=3 --shape 8x8 --from 'x|' --to '|' --json
grep -q '"recv_bytes_per_device": \[' "$T/out" && ok || bad "uneven plan lists per-device figures"
expect_rc 2 "inline bad blocks" "$RP" plan - --mesh x=2,y=2 --shape 5x3 --from 'x,y|' --from-blocks '1,1,1,3|' --to 'x,y|'
grep -q '<command line>: --from-blocks: the block lengths sum to more' "$T/err" && ok || bad "inline blocks message: $(cat "$T/err")"
expect_rc 2 "inline bad split" "$RP" plan - --mesh x=3 --shape 8 --from 'x' --from-split cyclic --to ''
grep -q -- '--from-split: unknown split rule "cyclic"' "$T/err" && ok || bad "inline split message: $(cat "$T/err")"
expect_rc 2 "layout options with a file" "$RP" plan specs/megatron-col-to-row-parallel.json --to-split chunk
# the (5,3) ceil <-> chunk case: 2/1/1/1 rows under chunk, 2/2/1/0 under ceil
expect_rc 0 "chunk to ceil" "$RP" plan - --mesh x=2,y=2 --shape 5x3 --from 'x,y|' --from-split chunk --to 'x,y|' --no-grid
grep -q 'blocks dim 0: 2,1,1,1 (chunk)' "$T/out" && grep -q 'blocks dim 0: 2,2,1,0 (ceil)' "$T/out" && ok || bad "chunk/ceil blocks lines"
# uneven plans round-trip: plan -> JSON -> verify, both objectives; a
# tampered layout or a wrong memory claim is an invalid plan
for s in dtensor-chunk-to-jax-ceil attention-32-heads-over-6 uneven-reduce-scatter chunk-to-ceil-5x3; do
    for obj in bytes time; do
        "$RP" plan "specs/$s.json" --json --objective $obj >"$T/u.json" || { bad "$s $obj: no plan"; continue; }
        expect_rc 0 "$s $obj verifies" "$RP" verify "specs/$s.json" "$T/u.json"
    done
done
"$RP" plan specs/chunk-to-ceil-5x3.json --json --objective bytes >"$T/u.json"
python3 - "$T/u.json" "$T/u2.json" "$T/u3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["steps"][0]["after"]["blocks"] = [[4, 1], [1, 2]]
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
d["stats"]["memory_efficient"] = True
json.dump(d, open(sys.argv[3], "w"))
PY
expect_rc 1 "tampered uneven blocks" "$RP" verify specs/chunk-to-ceil-5x3.json "$T/u2.json"
grep -q 'would need elements it cannot get' "$T/err" && ok || bad "locality message: $(cat "$T/err")"
expect_rc 1 "wrong memory claim" "$RP" verify specs/chunk-to-ceil-5x3.json "$T/u3.json"
# n < k: 3 rows over 4 devices, the last one empty
expect_rc 0 "fewer rows than blocks" "$RP" plan - --mesh x=4 --shape 3x2 --from '|' --to 'x|' --json
python3 -c "import json,sys; d=json.load(open('$T/out')); sys.exit(0 if d['stats']['peak_bytes_per_device']==[24,24,24,24] and d['steps'][0]['op']=='slice' else 1)" && ok || bad "n < k plan"
expect_rc 0 "run executes an uneven plan" "$RP" run - --mesh x=3 --shape 8 --from 'x' --to ''
grep -q 'exact: 3 devices' "$T/out" && ok || bad "run uneven: $(cat "$T/out")"
expect_rc 2 "target partial not in source" "$RP" plan - --mesh x=2 --shape 8 --from '' --to '' --to-partial x
grep -q 'partial in the target but not in the source' "$T/err" && ok || bad "partial message"
expect_rc 0 "partial source" "$RP" plan - --mesh x=2,y=3 --shape 12x6 --from '|' --from-partial x,y --to 'x|y' --reduce max --json
grep -q '"reduce_scatter"' "$T/out" && ok || bad "reduce_scatter in partial plan"

# The limits: 16 axes and 16 dims plan (a permute group too large to
# enumerate falls back to permuting into the target).
m16=a=2,b=2,c=2,d=2,e=2,f=2,g=2,h=2,i=2,j=2,k=2,l=2,m=2,n=2,o=2,p=2
expect_rc 0 "16 axes, reorder" "$RP" plan - --mesh $m16 --shape 65536 --from 'a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p' --to 'b,a,c,d,e,f,g,h,i,j,k,l,m,n,o,p' --json
grep -q '"op": "permute"' "$T/out" && ok || bad "16-axis reorder is one permute"
expect_rc 0 "16 dims" "$RP" plan - --mesh a=2 --shape 2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2 --from 'a|||||||||||||||' --to '|||||||||||||||a' --json
grep -q '"op": "all_to_all"' "$T/out" && ok || bad "16-dim all_to_all"
expect_rc 2 "17 axes" "$RP" plan - --mesh $m16,q=2 --shape 8 --from '' --to ''

# 5. verify: the solver's own plans, tampered plans, malformed plans.
for s in specs/*.json; do
    grep -q '"infeasible": true' "$s" && continue
    "$RP" plan "$s" --json >"$T/p.json" || { bad "plan --json $s"; continue; }
    "$RP" verify "$s" "$T/p.json" >"$T/v" 2>&1 && grep -q 'optimal for the time objective: yes' "$T/v" && ok || bad "verify $s: $(cat "$T/v")"
done
# verify names its objective and never mixes optima: the exchange plan
# (29360128 B) against the bytes optimum is not applicable, the bytes plan
# against the time optimum is not optimal, each against its own is
S=specs/fsdp-rows-to-2d-columns.json
"$RP" plan "$S" --json >"$T/xt.json"
"$RP" plan "$S" --json --objective bytes >"$T/xb.json"
expect_rc 0 "verify exchange plan, bytes objective" "$RP" verify "$S" "$T/xt.json" --objective bytes
grep -q 'optimal for the bytes objective: not applicable: the plan has an exchange step' "$T/out" && ! grep -q 'objective: yes' "$T/out" && ok || bad "verify exchange/bytes: $(cat "$T/out")"
expect_rc 0 "verify bytes plan, time objective" "$RP" verify "$S" "$T/xb.json"
grep -q 'optimal for the time objective: no (its optimum: peak 234881024, [0-9.]* us modelled, received 29360128, 1 collective)' "$T/out" && ok || bad "verify bytes/time: $(cat "$T/out")"
expect_rc 0 "verify bytes plan, bytes objective" "$RP" verify "$S" "$T/xb.json" --objective bytes
grep -q 'optimal for the bytes objective: yes (its optimum: peak 234881024, received 88080384, 2 collectives)' "$T/out" && ok || bad "verify bytes/bytes: $(cat "$T/out")"
# a plan that says it is not proven optimal is never reported optimal:
# the optimal plan marked so, and a budget-3 plan of the bytes objective
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["stats"]["optimal"]=False; json.dump(d, open(sys.argv[2], "w"))' "$T/xt.json" "$T/xu.json"
expect_rc 0 "verify unproven plan" "$RP" verify "$S" "$T/xu.json"
grep -q 'optimal for the time objective: not claimed: the plan says it is not proven optimal' "$T/out" && ! grep -q 'objective: yes' "$T/out" && ok || bad "verify unproven: $(cat "$T/out")"
"$RP" plan specs/four-axis-mesh-3d-activations.json --max-states 3 --json --objective bytes >"$T/xu3.json"
expect_rc 0 "verify budget-3 plan" "$RP" verify specs/four-axis-mesh-3d-activations.json "$T/xu3.json" --objective bytes
grep -q 'optimal for the bytes objective: no' "$T/out" && ok || bad "verify budget-3: $(cat "$T/out")"
expect_rc 2 "verify --objective unknown" "$RP" verify "$S" "$T/xt.json" --objective fastest
"$RP" plan specs/megatron-col-to-row-parallel.json --json >"$T/p.json"
sed 's/"recv_bytes": 12582912/"recv_bytes": 1/' "$T/p.json" >"$T/wrong.json"
expect_rc 1 "verify wrong recv_bytes" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/wrong.json"
grep -q 'recv_bytes stated wrongly' "$T/err" && ok || bad "wrong recv message"
cat >"$T/illegal.json" <<'J'
{"steps": [{"op": "all_gather", "dim": 0, "axis": "model"}]}
J
expect_rc 1 "verify illegal step" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/illegal.json"
grep -q 'steps\[0\]: illegal all_gather' "$T/err" && ok || bad "illegal step message: $(cat "$T/err")"
cat >"$T/short.json" <<'J'
{"steps": []}
J
expect_rc 1 "verify plan that stops early" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/short.json"
grep -q 'not at the target' "$T/err" && ok || bad "early stop message"
cat >"$T/handmade.json" <<'J'
{"steps": [{"op": "all_gather", "dim": 1, "axis": "model"},
           {"op": "slice", "dim": 0, "axis": "model"}]}
J
expect_rc 0 "verify valid non-optimal plan" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/handmade.json"
grep -q 'memory-efficient: no' "$T/out" && grep -q 'optimal for the time objective: no' "$T/out" && ok || bad "non-optimal report: $(cat "$T/out")"
printf '{"steps": [' >"$T/broken.json"
expect_rc 2 "verify unparsable plan" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/broken.json"
grep -q 'broken.json:1:' "$T/err" && ok || bad "plan syntax error position"
echo '{"steps": 3}' >"$T/shape.json"
expect_rc 2 "verify plan without steps array" "$RP" verify specs/megatron-col-to-row-parallel.json "$T/shape.json"

# 6. The time objective (cost model, exchange step).
S=specs/fsdp-rows-to-2d-columns.json
expect_rc 0 "time objective" "$RP" plan "$S" --objective time --axis-links fsdp=network,tensor=numa --json
cp "$T/out" "$T/time.json"
grep -q '"op": "exchange"' "$T/time.json" && grep -q '"objective": "time"' "$T/time.json" && ok || bad "time objective picks the exchange"
expect_rc 0 "verify an exchange plan" "$RP" verify "$S" "$T/time.json"
grep -q 'valid plan: 1 step, 1 collective' "$T/out" && ok || bad "verify exchange: $(cat "$T/out")"
expect_rc 0 "bytes objective with a cost model" "$RP" plan "$S" --objective bytes --axis-links fsdp=network,tensor=numa --json
cp "$T/out" "$T/bytes.json"
expect_rc 0 "bytes objective" "$RP" plan "$S" --objective bytes --json
cp "$T/out" "$T/bytes0.json"
python3 - "$T/bytes.json" "$T/time.json" "$T/bytes0.json" <<'PY' && ok || bad "time objective vs bytes"
import json, sys
b, t, g = (json.load(open(p)) for p in sys.argv[1:4])
ops = lambda d: [s["op"] for s in d["steps"]]
# a cost model does not change the bytes objective's plan; time wins under it
assert ops(b) == ops(g), (ops(b), ops(g))
assert t["stats"]["time_s"] < b["stats"]["time_s"], (t["stats"], b["stats"])
assert t["stats"]["peak_bytes"] <= b["stats"]["peak_bytes"]
PY
# Memory: the time objective keeps the least peak; for the spec whose bound
# the six ops cannot meet, an exchange meets it.
expect_rc 0 "time objective, unmeetable bound" "$RP" plan specs/vit-attention-heads-resplit.json --objective time --json
grep -q '"memory_efficient": true' "$T/out" && grep -q '"op": "exchange"' "$T/out" && ok || bad "exchange meets the bound"
expect_rc 0 "time objective reorders reduce-scatters" "$RP" plan specs/partial-two-axes-reduce-scatter.json --objective time --axis-links x=network,y=cache --json
echo '{"links": {"numa": {"alpha": 1e-6, "beta": 2e-10}}, "gamma": 1e-10}' >"$T/cost.json"
expect_rc 0 "cost file" "$RP" plan "$S" --objective time --cost "$T/cost.json" --no-grid
grep -q 'modelled time' "$T/out" && ok || bad "modelled time printed"
echo '{"links": {"nvlink": {"alpha": 1e-6}}}' >"$T/badcost.json"
expect_rc 2 "cost file with an unknown level" "$RP" plan "$S" --objective time --cost "$T/badcost.json"
grep -q 'badcost.json: links.nvlink: unknown link level' "$T/err" && ok || bad "cost error message: $(cat "$T/err")"
expect_rc 2 "unknown objective" "$RP" plan "$S" --objective fastest
expect_rc 2 "axis link on an unknown axis" "$RP" plan "$S" --objective time --axis-links zz=numa
expect_rc 2 "unknown link level" "$RP" plan "$S" --objective time --axis-links fsdp=infiniband

# 8. Hostile inputs (each case named after the defect it guards against).
# spec-fifo-hang: a FIFO, a directory or a device as any input file is
# refused at once (opened without waiting for a writer), never read.
mkfifo "$T/fifo"
M=specs/megatron-col-to-row-parallel.json
expect_rc 2 "spec-fifo-hang: plan" timeout 10 "$RP" plan "$T/fifo"
grep -qF "$T/fifo: cannot read a spec from a FIFO (named pipe): only regular files are read" "$T/err" && ok || bad "spec-fifo-hang: message: $(cat "$T/err")"
expect_rc 2 "spec-fifo-hang: check" timeout 10 "$RP" check "$T/fifo" "$T"
grep -q "^ERROR $T: $T: cannot read a spec from a directory" "$T/out" && ok || bad "spec-fifo-hang: directory: $(cat "$T/out")"
expect_rc 2 "spec-fifo-hang: verify" timeout 10 "$RP" verify "$M" "$T/fifo"
grep -qF "cannot read a plan from a FIFO" "$T/err" && ok || bad "spec-fifo-hang: plan message: $(cat "$T/err")"
expect_rc 2 "spec-fifo-hang: --cost" timeout 10 "$RP" plan "$M" --cost "$T/fifo"
grep -qF "cannot read a cost model from a FIFO" "$T/err" && ok || bad "spec-fifo-hang: cost message: $(cat "$T/err")"
expect_rc 2 "spec-fifo-hang: device" timeout 10 "$RP" plan /dev/zero
grep -qF "/dev/zero: cannot read a spec from a character device" "$T/err" && ok || bad "spec-fifo-hang: device message: $(cat "$T/err")"

# spec-16MiB-exact-rejected: the limit is 16 MiB inclusive.
small='{"mesh": [["x", 2]], "shape": [8], "from": {"dims": [["x"]]}, "to": {"dims": [[]]}}'
{ head -c $((16777216 - ${#small})) /dev/zero | tr '\0' ' '; printf '%s' "$small"; } >"$T/big.json"
[ "$(stat -c %s "$T/big.json")" -eq 16777216 ] && ok || bad "16 MiB spec size"
expect_rc 0 "spec-16MiB-exact-rejected: 16777216 bytes" "$RP" plan "$T/big.json" --no-grid
echo >>"$T/big.json"
expect_rc 2 "spec-16MiB-exact-rejected: 16777217 bytes" "$RP" plan "$T/big.json"
grep -qF "big.json: file is larger than 16777216 bytes; not a spec" "$T/err" && ok || bad "16 MiB message: $(cat "$T/err")"
rm -f "$T/big.json"

# junit-invalid-xml-control-chars: control characters of a spec reach
# neither the terminal nor the XML report raw.
IV=tests/specs/invalid
expect_rc 2 "junit-invalid-xml-control-chars: check" "$RP" check "$IV/43-dtype-control-chars.json" "$IV/42-name-control-chars.json" "$IV/41-axis-name-control-char.json" "$M" --junit "$T/ctl.xml"
python3 - "$T/ctl.xml" "$T/out" "$T/err" <<'PY' && ok || bad "junit-invalid-xml-control-chars: XML or output"
import re, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()          # raises on invalid XML
cases = root.findall('.//testcase')
assert len(cases) == 4, len(cases)
msg = cases[0].find('error').get('message')
assert '"\\u0001<&"\\u001b]0;pwned\\u0007"' in msg, msg
for f in sys.argv[2:]:
    text = open(f, 'rb').read()
    assert not re.search(rb'[\x00-\x08\x0b-\x1f\x7f]', text), (f, text)
PY
grep -qF 'dtype: unknown dtype "\u0001<&"\u001b]0;pwned\u0007"' "$T/out" && ok || bad "check line escapes: $(cat "$T/out")"

# cli-u64-leading-space-negative: --max-peak and --max-states take digits
# only (strtoull read " -1" as 2^64-1).
for v in ' -1' '-1' '+1' '' '1 ' ' 1' '0x10' '1e3' '18446744073709551616'; do
    expect_rc 2 "cli-u64-leading-space-negative: --max-peak '$v'" "$RP" plan "$M" --max-peak "$v"
    grep -qF -- "--max-peak: \"$v\" is not a byte count" "$T/err" && ok || bad "--max-peak '$v' message: $(cat "$T/err")"
    expect_rc 2 "cli-u64-leading-space-negative: --max-states '$v'" "$RP" plan "$M" --max-states "$v"
    grep -qF -- "--max-states: \"$v\" is not a count" "$T/err" && ok || bad "--max-states '$v' message: $(cat "$T/err")"
done
expect_rc 0 "--max-peak 2^64-1" "$RP" plan "$M" --max-peak 18446744073709551615 --no-grid

# verify-wrong-json-type: a field of the wrong JSON type is bad input
# (exit 2, naming its path), whatever the rest of the plan.
cat >"$T/vs.json" <<'J'
{"name":"p","mesh":[["x",2],["y",3],["z",2]],"shape":[12,6,4],"dtype":"f32",
 "from":{"dims":[["x"],["y"],[]],"partial":["z"]},"to":{"dims":[["y"],["x"],[]]}}
J
"$RP" plan "$T/vs.json" --objective bytes --json >"$T/vp.json" || bad "plan of the verify spec"
"$RP" verify "$T/vs.json" "$T/vp.json" >/dev/null && ok || bad "the plan itself verifies"
# Each case: a description, a Python edit of the plan p (s = its steps),
# the exit code and the message; one python3 run writes all the plans.
cases=(
  "after.dims entry|s[0]['after']['dims'][0] = [5]|2|steps[0].after.dims[0][0]: expected an axis name (a string), got an integer"
  "after.dims|s[0]['after']['dims'] = 'x'|2|steps[0].after.dims: expected an array of axis lists, got a string"
  "after.dims[1]|s[0]['after']['dims'][1] = None|2|steps[0].after.dims[1]: expected an array of axis names, got null"
  "after.partial entry|s[0]['after']['partial'] = [7]|2|steps[0].after.partial[0]: expected an axis name (a string), got an integer"
  "after.partial string|s[0]['after']['partial'] = 'z'|2|steps[0].after.partial: expected an array of axis names, got a string"
  "after.partial object|s[0]['after']['partial'] = {'anything': [1]}|2|steps[0].after.partial: expected an array of axis names, got an object"
  "after|s[1]['after'] = []|2|steps[1].after: expected a type {\"dims\": [...], \"partial\": [...]}, got an array"
  "dim|s[0]['dim'] = '2'|2|steps[0].dim: expected an integer, got a string"
  "axis|s[0]['axis'] = 0|2|steps[0].axis: expected an axis name (a string), got an integer"
  "recv_bytes|s[0]['recv_bytes'] = 'z'|2|steps[0].recv_bytes: expected a count (an integer >= 0), got a string"
  "negative recv_bytes|s[0]['recv_bytes'] = -96|2|steps[0].recv_bytes: expected a count (an integer >= 0), got -96"
  "local_bytes|s[0]['local_bytes'] = 96.0|2|steps[0].local_bytes: expected a count (an integer >= 0), got a real number"
  "local_shape|s[0]['local_shape'] = {}|2|steps[0].local_shape: expected an array of integers, got an object"
  "local_shape entry|s[0]['local_shape'][1] = '2'|2|steps[0].local_shape[1]: expected an integer, got a string"
  "stats|p['stats'] = [1]|2|stats: expected an object, got an array"
  "stats.peak_bytes|p['stats']['peak_bytes'] = '192'|2|stats.peak_bytes: expected a count (an integer >= 0), got a string"
  "stats.memory_efficient|p['stats']['memory_efficient'] = 1|2|stats.memory_efficient: expected true or false, got an integer"
  "type error after an illegal step|s[0]['axis'] = 'x'; s[3]['after']['partial'] = 'z'|2|steps[3].after.partial: expected an array of axis names, got a string"
  "wrong local_bytes|s[0]['local_bytes'] = 1|1|steps[0]: local_bytes stated wrongly: each device holds 96 bytes after the step"
  "wrong memory_efficient|p['stats']['memory_efficient'] = False|1|stats.memory_efficient: stated wrongly: the replay gives true"
  "dim 4611686018427387904|s[0]['dim'] = 4611686018427387904|1|steps[0]: illegal reduce_scatter from [{x}, {y}, {}] partial{z}: dim 4611686018427387904 is not a dim of the array (0..2)"
  "dim -9223372036854775807|s[0]['dim'] = -9223372036854775807|1|steps[0]: illegal reduce_scatter from [{x}, {y}, {}] partial{z}: dim -9223372036854775807 is not a dim of the array (0..2)"
  "dim 3|s[0]['dim'] = 3|1|steps[0]: illegal reduce_scatter from [{x}, {y}, {}] partial{z}: dim 3 is not a dim of the array (0..2)"
  "dim -1|s[0]['dim'] = -1|1|steps[0]: illegal reduce_scatter from [{x}, {y}, {}] partial{z}: dim -1 is not a dim of the array (0..2)"
  "to_dim 99 at step 1|s[1]['to_dim'] = 99|1|steps[1]: illegal all_to_all from [{x}, {y}, {z}]: to_dim 99 is not a dim of the array (0..2)"
  "an earlier illegal step first|s[0]['axis'] = 'x'; s[1]['to_dim'] = 99|1|steps[0]: illegal reduce_scatter from [{x}, {y}, {}] partial{z}: reduce_scatter needs a partial axis; axis 0 is not"
)
printf '%s\n' "${cases[@]}" | python3 -c '
import json, sys
base = json.load(open(sys.argv[1]))
for i, line in enumerate(sys.stdin):
    p = json.loads(json.dumps(base)); s = p["steps"]
    exec(line.split("|")[1])
    json.dump(p, open("%s/w%d.json" % (sys.argv[2], i), "w"))
' "$T/vp.json" "$T"
i=0
for c in "${cases[@]}"; do
    IFS='|' read -r desc _ code msg <<<"$c"
    # verify-wrong-json-type (exit 2: bad input, naming the path) and
    # verify-dim-clamped-message (a dim shown as written)
    expect_rc "$code" "verify: $desc" "$RP" verify "$T/vs.json" "$T/w$i.json"
    grep -qxF -- "redistplan: $T/w$i.json: $msg" "$T/err" && ok || bad "verify: $desc: $(cat "$T/err")"
    i=$((i + 1))
done

# cli-unclear-messages: the range, not the type; the NUL byte's place
# (golden 37); axis names with separators (goldens 38-40, and inline);
# an axis given twice to --axis-links.
echo '{"links":{"numa":{"alpha":-1,"beta":-1}}}' >"$T/cost-neg.json"
expect_rc 2 "cli-unclear-messages: cost alpha -1" "$RP" plan "$M" --cost "$T/cost-neg.json"
grep -qxF "redistplan: $T/cost-neg.json: links.numa.alpha: -1 s is out of range: seconds from 0 to 1000" "$T/err" && ok || bad "cost range message: $(cat "$T/err")"
echo '{"gamma": "fast"}' >"$T/cost-type.json"
expect_rc 2 "cli-unclear-messages: cost gamma string" "$RP" plan "$M" --cost "$T/cost-type.json"
grep -qF "gamma: expected seconds (a number from 0 to 1000), got a string" "$T/err" && ok || bad "cost type message: $(cat "$T/err")"
printf '{"gamma": 1e-9,\n "links"\0: {}}' >"$T/cost-nul.json"
expect_rc 2 "cli-unclear-messages: cost NUL byte" "$RP" plan "$M" --cost "$T/cost-nul.json"
grep -qF "cost-nul.json:2:9: the file holds a NUL byte (byte 25 of 30)" "$T/err" && ok || bad "cost NUL message: $(cat "$T/err")"
expect_rc 2 "cli-unclear-messages: plan NUL byte" "$RP" verify "$M" "$T/cost-nul.json"
grep -qF "cost-nul.json:2:9: the file holds a NUL byte" "$T/err" && ok || bad "plan NUL message: $(cat "$T/err")"
expect_rc 2 "cli-unclear-messages: inline axis name with |" "$RP" plan - --mesh 'x=2,a|b=2' --shape 8 --from '' --to ''
grep -qF "<command line>: --mesh: axis name \"a|b\" contains '|'" "$T/err" && ok || bad "inline axis name message: $(cat "$T/err")"
expect_rc 2 "cli-unclear-messages: --name with ESC" "$RP" plan - --mesh x=2 --shape 8 --from '' --to '' --name "$(printf 'n\033]0;t\007')"
grep -qF "<command line>: --name: the name contains the control character U+001B at byte 2" "$T/err" && ok || bad "inline name message: $(cat "$T/err")"
expect_rc 2 "cli-unclear-messages: --axis-links axis twice" "$RP" plan "$M" --axis-links data=numa,data=node
grep -qxF 'redistplan: <command line>: --axis-links: axis "data" is given twice' "$T/err" && ok || bad "axis-links twice message: $(cat "$T/err")"

# 7. Golden plan JSON for every spec (deliberate output changes only:
#    regenerate with scripts/update-golden.sh).
for s in specs/*.json; do
    [ -n "$QUICK" ] && break
    b=$(basename "$s" .json)
    g=tests/specs/golden/$b.plan.json
    [ -f "$g" ] || continue
    "$RP" plan "$s" --json >"$T/g.json" 2>/dev/null
    cmp -s "$T/g.json" "$g" && ok || bad "golden plan differs: $b"
done

finish cli
