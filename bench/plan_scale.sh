#!/usr/bin/env bash
# Planning at cluster scale: the time and memory of `redistplan plan` for
# meshes of 1 024 to 65 536 devices (dp x fsdp x tp x pp shapes of large
# training runs), on the transitions such runs make, even and uneven.
# Prints a markdown table (one run per cell: the planner is
# deterministic; wall time and max RSS from /usr/bin/time).
#
#   bench/plan_scale.sh [REDISTPLAN]      (default build/src/redistplan)
set -eu
rp=${1:-build/src/redistplan}
[ -x "$rp" ] || { echo "plan_scale.sh: no $rp (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "plan_scale.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }

meshes="dp=8,fsdp=16,tp=8 dp=32,fsdp=16,tp=8 dp=32,fsdp=16,tp=8,pp=4 dp=64,fsdp=16,tp=8,pp=8"
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

printf '| case | devices | mesh | plan | wall s | max RSS MiB |\n|---|---:|---|---|---:|---:|\n'
echo "$cases" | while IFS='|' read -r name shape dtype f0 f1 t0 t1; do
    for m in $meshes; do
        out=$( { /usr/bin/time -f 'TIME %e %M' "$rp" plan - --mesh "$m" \
            --shape "$shape" --dtype "$dtype" --from "$f0|$f1" \
            --to "$t0|$t1" >/tmp/plan_scale.$$ ; } 2>&1 ) || true
        t=$(echo "$out" | sed -n 's/^TIME \([^ ]*\) .*/\1/p')
        kb=$(echo "$out" | sed -n 's/^TIME [^ ]* \(.*\)/\1/p')
        steps=$(sed -n 's/^  \([0-9]* collectives\{0,1\}, [0-9]* steps\{0,1\}\).*/\1/p' /tmp/plan_scale.$$ | head -1)
        [ -n "$steps" ] || steps="no plan ($(head -c 60 /tmp/plan_scale.$$))"
        printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$(devices "$m")" \
            "$m" "$steps" "$t" "$(( ${kb:-0} / 1024 ))"
    done
done
rm -f /tmp/plan_scale.$$
