#!/usr/bin/env bash
# Planning at cluster scale: the time and memory of `redistplan plan` for
# meshes of 1 024 to 65 536 devices (dp x fsdp x tp x pp shapes of large
# training runs), on the transitions such runs make, even and uneven.
# Prints markdown tables (one run per cell: the planner is
# deterministic; wall time and max RSS from /usr/bin/time): one mesh, then
# two meshes (the model sync from the training mesh to inference
# replicas, planned with a synthetic topology of 8-device nodes).
#
#   bench/plan_scale.sh [REDISTPLAN] [meshes]   (default build/src/redistplan;
#                                                `meshes`: the second table only)
set -eu
rp=${1:-build/src/redistplan}
[ -x "$rp" ] || { echo "plan_scale.sh: no $rp (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "plan_scale.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }

meshes=${PLAN_SCALE_MESHES:-"dp=8,fsdp=16,tp=8 dp=32,fsdp=16,tp=8 dp=32,fsdp=16,tp=8,pp=4 dp=64,fsdp=16,tp=8,pp=8"}
# NAME|SHAPE|DTYPE|FROM|TO: the weights of a layer and an embedding
cases="fsdp-gather|8192x8192|bf16|fsdp|tp|fsdp,tp|
tp-col-to-row|8192x28672|bf16||tp|tp|
rows-to-cols|8192x8192|bf16|dp,fsdp|tp|tp|dp
vocab-50257-gather|50257x4096|bf16|tp||fsdp,tp|
vocab-50257-rows-to-cols|50257x4096|bf16|dp,fsdp|tp|tp|dp"

devices() { # the product of a mesh's axis sizes
    local p=1 a
    for a in $(echo "$1" | tr ',' ' '); do p=$((p * ${a#*=})); done
    echo "$p"
}

# measure ARGS...: `redistplan plan ARGS` timed; sets steps, t (wall s),
# cpu (user + system s: what a loaded machine distorts least), mib
measure() {
    local out kb
    out=$( { /usr/bin/time -f 'TIME %e %M %U %S' "$rp" plan "$@" \
        >/tmp/plan_scale.$$ ; } 2>&1 ) || true
    t=$(echo "$out" | sed -n 's/^TIME \([^ ]*\) .*/\1/p')
    kb=$(echo "$out" | sed -n 's/^TIME [^ ]* \([^ ]*\) .*/\1/p')
    cpu=$(echo "$out" | sed -n 's/^TIME [^ ]* [^ ]* \(.*\)/\1/p' |
        awk '{printf "%.2f", $1 + $2}')
    mib=$(( ${kb:-0} / 1024 ))
    steps=$(sed -n 's/^  \([0-9]* collectives\{0,1\}, [0-9]* steps\{0,1\}\).*/\1/p' /tmp/plan_scale.$$ | head -1)
    [ -n "$steps" ] || steps="no plan ($(head -c 60 /tmp/plan_scale.$$)$(echo "$out" | grep -v '^TIME' | head -c 80))"
}

if [ "${2:-}" != meshes ]; then
printf '| case | devices | mesh | plan | wall s | max RSS MiB |\n|---|---:|---|---|---:|---:|\n'
echo "$cases" | while IFS='|' read -r name shape dtype f0 f1 t0 t1; do
    for m in $meshes; do
        measure - --mesh "$m" --shape "$shape" --dtype "$dtype" \
            --from "$f0|$f1" --to "$t0|$t1"
        printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$(devices "$m")" \
            "$m" "$steps" "$t" "$mib"
    done
done
fi

# Two meshes: the training mesh (devices 0..N-1) sends its weights to
# inference replicas, `rep x tp=8`, either on N other devices (disjoint)
# or on the same N devices reshaped (overlap).  The spec files are
# written here (explicit device lists, as spec-format.md section 8 asks);
# the topology: 8 ranks per node, 2 packages of 4 cores each.
# NAME|SHAPE|FROM|TO on the training / the inference mesh
mcases="q-proj|8192x8192|fsdp|tp|tp|
down-proj-rows|28672x8192|tp,fsdp||tp|
vocab-50257|50257x4096|fsdp,tp|||tp"
dir=$(mktemp -d /tmp/plan_scale.XXXXXX)
echo '{"ranks_per_host": 8, "map_by": "core"}' >"$dir/ranks.json"
printf '\n| two meshes | devices | training mesh | inference | plan | wall s | cpu s | max RSS MiB |\n|---|---:|---|---|---|---:|---:|---:|\n'
echo "$mcases" | while IFS='|' read -r name shape f0 f1 t0 t1; do
    for m in $meshes; do
        n=$(devices "$m")
        for where in disjoint overlap; do
            python3 - "$dir/s.json" "$name" "$shape" "$m" "$where" "$f0" "$f1" "$t0" "$t1" <<'PY'
import json, sys
out, name, shape, mesh, where, f0, f1, t0, t1 = sys.argv[1:]
axes = [[a.split("=")[0], int(a.split("=")[1])] for a in mesh.split(",")]
n = 1
for _, s in axes:
    n *= s
first = n if where == "disjoint" else 0
dims = lambda a, b: [[x for x in a.split(",") if x], [x for x in b.split(",") if x]]
json.dump({"name": "%s-%s" % (name, where),
           "meshes": {"train": {"axes": axes, "devices": list(range(n))},
                      "infer": {"axes": [["rep", n // 8], ["tp", 8]],
                                "devices": list(range(first, first + n))}},
           "shape": [int(x) for x in shape.split("x")], "dtype": "bf16",
           "from": {"mesh": "train", "dims": dims(f0, f1)},
           "to": {"mesh": "infer", "dims": dims(t0, t1)}}, open(out, "w"))
PY
            measure "$dir/s.json" --no-grid --synthetic "pack:2 core:4" \
                --rank-map "$dir/ranks.json"
            printf '| %s %s | %s | %s | rep=%s,tp=8 %s | %s | %s | %s | %s |\n' \
                "$name" "$where" "$n" "$m" "$((n / 8))" "$where" "$steps" "$t" \
                "$cpu" "$mib"
        done
    done
done
rm -rf "$dir" /tmp/plan_scale.$$
