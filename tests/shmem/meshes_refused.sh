#!/bin/bash
# A two-mesh spec under `run --backend shmem`: every PE refuses it before
# any data moves, exit 2, with the reason (doc/meshes.md).
# usage: meshes_refused.sh OSHRUN REDISTPLAN SPEC [OSHRUN ARGS...]
oshrun=$1 rp=$2 spec=$3
shift 3
out=$(timeout 120 "$oshrun" "$@" -np 8 "$rp" run "$spec" --backend shmem \
    --shrink 2>&1)
rc=$?
n=$(grep -c "the OpenSHMEM backend does not run two-mesh plans yet" <<<"$out")
if [ "$rc" -ne 0 ] && [ "$n" -ge 1 ] && [ "$rc" -ne 124 ]; then
    echo "shmem two-mesh: refused on every PE (exit $rc)"
    exit 0
fi
echo "FAIL: exit $rc, $n messages"
echo "$out" | tail -20
exit 1
