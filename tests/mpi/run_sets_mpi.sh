#!/bin/sh
# `redistplan run SET` under mpirun or oshrun (doc/arrays.md): shrunk
# copies of the Llama-style model specs of specs/arrays
# (scripts/model_spec.py: two layers, every dim / 64) between two meshes,
# run exact on every rank (PE) within their budgets, the checkpoint
# twice with its sources preserved; the wrong -np is refused on every
# rank; over OpenSHMEM, a symmetric heap too small for the set's arena
# fails on every PE saying how to set SHMEM_SYMMETRIC_SIZE; rank 1 given
# another --repeat, --shrink or --max-bytes (over OpenSHMEM also another
# heap) is refused on every rank before anything runs; --shrink runs a
# smaller copy of a set exact; a set of one-mesh arrays on a mesh of two
# axes runs exact.  SETS_QUICK=1 (sanitizer builds, where a launch costs
# about 1.2-1.5 s per rank, leak checking included): the train-to-infer
# run, the wrong -np and the heap too small (test_sets_* cover the rest
# there; mpi-diverge-cli the divergence).
#   run_sets_mpi.sh mpi|shmem LAUNCHER REDISTPLAN SRCDIR [LAUNCHER ARGS...]
set -u
be=$1 launcher=$2 rp=$3 src=$4
shift 4
case $be in
mpi) units=ranks hint="run it under mpirun -np 8" ;;
shmem) units=PEs hint="run it under oshrun --mca osc ^rdma -np 8" ;;
*) echo "run_sets_mpi.sh: unknown backend $be"; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
expect() { # CODE TEXT DESCRIPTION NP SPEC ARGS... : the run's exit and text
    want=$1 text=$2 what=$3 np=$4
    shift 4
    out=$("$launcher" $largs -np "$np" "$rp" run "$@" --backend "$be" 2>&1)
    rc=$?
    case $rc:$out in
    "$want":*"$text"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $be: $what: exit $rc, expected $want and \"$text\""
       echo "$out" | sed 's/^/    /' ;;
    esac
}
largs="$*"
quick=${SETS_QUICK:-}
for v in train-to-infer checkpoint; do
    python3 "$src/scripts/model_spec.py" --variant $v --shrink 64 --layers 2 \
        -o "$tmp/$v.json" || exit 1
done
expect 0 "result    exact: 21 arrays on 8 $units" train-to-infer 8 \
    "$tmp/train-to-infer.json"
case $out in
*"budget 65536: within"*) pass=$((pass + 1)) ;;
*) fail=$((fail + 1)); echo "FAIL: $be: train-to-infer: not within its budget" ;;
esac
[ -z "$quick" ] && expect 0 "source    preserved (--preserve-src)
  result    exact: 21 arrays on 8 $units" "checkpoint --preserve-src --repeat 2" \
    8 "$tmp/checkpoint.json" --preserve-src --repeat 2
expect 2 "$hint (this job has 4 $units)" "wrong -np" 4 "$tmp/checkpoint.json"
# one-mesh arrays on a mesh of two axes: their collectives run on its axes
[ -z "$quick" ] &&
    expect 0 "result    exact: 5 arrays on 4 $units" "mlp-block-resharded (dp x tp)" 4 \
        "$src/specs/arrays/mlp-block-resharded.json" --repeat 2
# --shrink: a smaller copy of the set (the same steps on every rank)
if [ -z "$quick" ]; then
    expect 0 "result    exact: 21 arrays on 8 $units" "train-to-infer --shrink" 8 \
        "$tmp/train-to-infer.json" --shrink --max-bytes 300K
    case $out in
    *"of 21 arrays (--shrink: the same steps"*": within"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $be: train-to-infer --shrink: not shrunk within its budget" ;;
    esac
fi
# rank 1 diverges: RANK1 holds its extra arguments, or env:NAME=VALUE
cat >"$tmp/rank1.sh" <<'EOF'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
if [ "$r" = 1 ]; then
    case $RANK1 in
    env:*) export "${RANK1#env:}"; exec "$@" ;;
    *) exec "$@" $RANK1 ;;
    esac
fi
exec "$@"
EOF
diverge() { # FIELD RANK1 : rank 1 differs, exit 2 naming FIELD
    RANK1=$2
    export RANK1
    out=$("$launcher" $largs -np 8 sh "$tmp/rank1.sh" "$rp" run \
        "$tmp/checkpoint.json" --backend "$be" 2>&1)
    rc=$?
    case $rc:$out in
    2:*"disagree on $1"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $be: rank 1 with $2: exit $rc"
       echo "$out" | sed 's/^/    /' ;;
    esac
}
if [ -z "$quick" ]; then
    diverge --repeat "--repeat 2"
    diverge --shrink "--shrink"
    diverge --max-bytes "--max-bytes 64M"
fi
if [ "$be" = shmem ]; then
    [ -z "$quick" ] &&
        diverge "the symmetric heap size" "env:SHMEM_SYMMETRIC_SIZE=300000000"
    # every dim / 16, one layer: an arena of about 2.4 MB per PE
    python3 "$src/scripts/model_spec.py" --variant train-to-infer --shrink 16 \
        --layers 1 --budget 16777216 -o "$tmp/t16.json" || exit 1
    export SHMEM_SYMMETRIC_SIZE=2000000
    expect 2 "set SHMEM_SYMMETRIC_SIZE=" \
        "symmetric heap too small" 8 "$tmp/t16.json" --shmem-work 65536
    unset SHMEM_SYMMETRIC_SIZE
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
