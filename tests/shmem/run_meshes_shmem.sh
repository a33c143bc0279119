#!/bin/bash
# `redistplan run --backend shmem` of the two-mesh example specs
# (specs/meshes), shrunk, under oshrun: OSHRUN REDISTPLAN DIR [OSHRUN
# ARGS...].  PE d is device d: each spec runs on as many PEs as it has
# devices (oversubscribed here), twice in a row, with symmetric buffers
# and, for every other spec, private ones (--shmem-private: the phases
# land in symmetric scratch first); every element is checked on every PE
# and the scratch high-water mark against the promise.  The wrong PE
# count is refused on every PE.  MESHES_QUICK=1 (the sanitizer build, where each
# 8-PE run takes about 12 s): the first spec only, with private
# buffers (the random two-mesh plans of shmem-meshes-np* cover the
# rest there).
oshrun=$1 redistplan=$2 dir=$3
shift 3
bad=0 n=0 k=0
for spec in "$dir"/*.json; do
    [ "${MESHES_QUICK:-0}" = 1 ] && [ "$n" -ge 1 ] && break
    n=$((n + 1))
    np=$("$redistplan" plan --json "$spec" | python3 -c \
        'import json,sys; print(len(json.load(sys.stdin)["stats"]["peak_bytes_per_device"]))')
    extra=()
    k=$((k + 1))
    # every other spec private; under MESHES_QUICK the one spec private
    [ $((k % 2)) -eq 0 ] || [ "${MESHES_QUICK:-0}" = 1 ] &&
        extra=(--shmem-private)
    out=$(timeout 150 "$oshrun" "$@" -np "$np" "$redistplan" run "$spec" \
        --backend shmem --shrink --max-bytes 4M --repeat 2 "${extra[@]}" 2>&1)
    if ! grep -q "result    exact" <<<"$out"; then
        echo "FAIL: $(basename "$spec") on $np PEs ${extra[*]}"
        echo "$out" | tail -20
        bad=$((bad + 1))
    else
        echo "ok: $(basename "$spec") on $np PEs ${extra[*]}: $(grep 'result    exact' <<<"$out")"
    fi
done
spec="$dir/weight-sync-q-proj-fsdp-tp-to-tp4.json"
out=$(timeout 150 "$oshrun" "$@" -np 4 "$redistplan" run "$spec" \
    --backend shmem --shrink 2>&1)
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "run it with oshrun -np 8" <<<"$out"; then
    echo "FAIL: 4 PEs for 8 devices: exit $rc"
    echo "$out" | tail -20
    bad=$((bad + 1))
fi
echo "shmem meshes specs: $n specs, $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
