#!/bin/bash
# `redistplan run --backend mpi` of the two-mesh example specs
# (specs/meshes), shrunk: MPIRUN REDISTPLAN DIR [MPIRUN ARGS...].  Each
# runs on as many ranks as the spec has devices (oversubscribed here) and
# must be exact on every rank.  MESHES_QUICK=1 (the sanitizer build, where
# each run takes about 8 s): the first spec only (the random
# two-mesh plans of mpi-meshes-np* cover the rest there).
mpirun=$1 redistplan=$2 dir=$3
shift 3
bad=0 n=0
for spec in "$dir"/*.json; do
    [ "${MESHES_QUICK:-0}" = 1 ] && [ "$n" -ge 1 ] && break
    n=$((n + 1))
    np=$("$redistplan" plan --json "$spec" | python3 -c \
        'import json,sys; print(len(json.load(sys.stdin)["stats"]["peak_bytes_per_device"]))')
    out=$(timeout 120 "$mpirun" "$@" -np "$np" "$redistplan" run "$spec" \
        --backend mpi --shrink --max-bytes 4M 2>&1)
    if ! grep -q "result    exact" <<<"$out"; then
        echo "FAIL: $(basename "$spec") on $np ranks"
        echo "$out" | tail -20
        bad=$((bad + 1))
    else
        echo "ok: $(basename "$spec") on $np ranks: $(grep 'result' <<<"$out")"
    fi
done
echo "mpi meshes specs: $n specs, $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
