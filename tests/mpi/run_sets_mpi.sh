#!/bin/sh
# `redistplan run SET` under mpirun (doc/arrays.md): shrunk copies of the
# Llama-style model specs of specs/arrays (scripts/model_spec.py: two
# layers, every dim / 64) between two meshes, run exact on every rank
# within their budgets; the wrong -np is refused on every rank.
#   run_sets_mpi.sh MPIRUN REDISTPLAN SRCDIR [MPIRUN ARGS...]
set -u
mpirun=$1 rp=$2 src=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for v in train-to-infer checkpoint; do
    python3 "$src/scripts/model_spec.py" --variant $v --shrink 64 --layers 2 \
        -o "$tmp/$v.json" || exit 1
    out=$("$mpirun" "$@" -np 8 "$rp" run "$tmp/$v.json" 2>&1)
    rc=$?
    case $rc:$out in
    0:*"result    exact: 21 arrays on 8 ranks"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $v: exit $rc"; echo "$out" | sed 's/^/    /' ;;
    esac
done
out=$("$mpirun" "$@" -np 4 "$rp" run "$tmp/checkpoint.json" 2>&1)
rc=$?
case $rc:$out in
2:*"run it under mpirun -np 8"*) pass=$((pass + 1)) ;;
*) fail=$((fail + 1)); echo "FAIL: wrong -np: exit $rc"; echo "$out" | sed 's/^/    /' ;;
esac
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
