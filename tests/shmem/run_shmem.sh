#!/bin/sh
# `redistplan run --backend shmem` end to end under oshrun: every spec of
# specs/ whose mesh has at most 8 devices (at a shrunk shape, one PE per
# device), the backend's modes on a few of them, inline specs at 1, 2, 4
# and 6 PEs, a few dtypes and ops, uneven reductions with an empty
# block, and the exit codes of a wrong -np (2,
# one message), a corrupted result (1) and shmem options without the
# shmem backend (2).  (Every dtype x op and random plans are test_shmem's.)
# RUN_SHMEM_QUICK=1 (sanitizer builds, where a launch costs about 1.5 s
# per PE, leak checking included): one spec, a reduction at 3 PEs, the
# private buffers, a scalar, the uneven reduce_scatter, the failures
# (test_shmem covers every mode there).
#   run_shmem.sh OSHRUN REDISTPLAN SPECDIR [OSHRUN ARGS...]
set -u
osh=$1
rp=$2
dir=$3
shift 3
pass=0
fail=0

expect() { # CODE NP DESCRIPTION ARGS... : oshrun -np NP redistplan run ARGS
    want=$1; np=$2; what=$3; shift 3
    out=$("$osh" "$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what (-np $np): exit $rc, expected $want"
        echo "$out" | tail -40 | sed 's/^/    /'
    fi
}

oshrun_run() { # CODE NP DESCRIPTION SPEC ARGS...
    want=$1; np=$2; what=$3; shift 3
    expect "$want" "$np" "$what" $osh_args -np "$np" "$rp" run "$@" \
        --backend shmem
}

expect_text() { # TEXT DESCRIPTION : the last run's output contains TEXT
    case $out in
    *"$1"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $2: no \"$1\" in:"; echo "$out" | sed 's/^/    /' ;;
    esac
}

osh_args="$*"
small="--shrink --max-bytes 2000000"

# every spec that fits 8 PEs, whole steps into symmetric buffers
for f in "$dir"/*.json; do
    name=$(basename "$f" .json)
    # the device count: the product of the sizes on the "mesh" line
    d=$(grep '"mesh"' "$f" | head -n 1 | sed 's/"[^"]*"//g' |
        tr -c '0-9\n' ' ' |
        awk '{p = 1; for (i = 1; i <= NF; i++) p *= $i; print p}')
    want=0
    [ "$name" = partial-target-not-in-source ] && want=2
    [ -n "$d" ] || { fail=$((fail + 1)); echo "FAIL: $name: no device count"; continue; }
    [ "$d" -le 8 ] || continue
    # sanitizer builds (RUN_SHMEM_QUICK=1): a reduction (uneven blocks
    # below)
    if [ -n "${RUN_SHMEM_QUICK:-}" ]; then
        case $name in
        grad-all-reduce-data3) ;;
        *) continue ;;
        esac
    fi
    oshrun_run $want "$d" "$name" "$f" $small
    [ $want -eq 0 ] && expect_text "result    exact: $d PEs" "$name exact"
done

# the modes of the backend
meg=$dir/megatron-col-to-row-parallel.json
fsdp=$dir/fsdp-rows-to-2d-columns.json
hsdp=$dir/hsdp-grad-sync.json
two=$dir/partial-two-axes-reduce-scatter.json
quick=${RUN_SHMEM_QUICK:-}
if [ -z "$quick" ]; then
    oshrun_run 0 8 "fsdp-rows-to-2d-columns --shmem-private" "$fsdp" $small \
        --shmem-private
    expect_text "private src/dst" "private buffers reported"
    oshrun_run 0 8 "megatron --shmem-packed --repeat 3" "$meg" $small \
        --shmem-packed --repeat 3
    expect_text "best of repeats" "repeat reported"
fi
if [ -z "$quick" ]; then
    oshrun_run 0 8 "hsdp-grad-sync --shmem-no-ptr" "$hsdp" $small \
        --shmem-no-ptr --shmem-work 4K
    expect_text "pushed through the work area: 1 (per call)" "push reported"
fi
if [ -z "$quick" ]; then
    oshrun_run 0 8 "partial-two-axes --preserve-src --dtype bf16 --reduce max" \
        "$two" $small --preserve-src --dtype bf16 --reduce max
    expect_text "preserved (--preserve-src)" "preserve reported"
    expect_text "reductions pulled by load (shmem_ptr): 2 (per call)" \
        "reduction protocols reported"
fi
oshrun_run 0 3 "grad-all-reduce-data3 --shmem-no-ptr --shmem-private" \
    "$dir/grad-all-reduce-data3.json" $small --shmem-no-ptr --shmem-private \
    --dtype f16 --reduce prod

# inline specs at the other PE counts
if [ -z "$quick" ]; then
    oshrun_run 0 4 "inline 4 PEs, 2 axes" - --mesh x=2,y=2 --shape 8x12 \
        --dtype u8 --from 'x|y' --to 'y|x'
    oshrun_run 0 1 "inline 1 PE" - --mesh x=1 --shape 6x4 --dtype c128 \
        --from 'x|' --to '|x'
    oshrun_run 0 2 "inline 2 PEs, partial" - --mesh x=2 --shape 8x6 \
        --dtype i16 --from '|' --from-partial x --to 'x|' --reduce min
    oshrun_run 0 6 "inline 6 PEs, stride 3" - --mesh x=2,y=3 --shape 12x18x3 \
        --dtype c64 --from '|y|' --from-partial x --to 'x||y' --reduce sum
    expect_text "exact: 6 PEs" "inline report"
fi

# a 0-dim array (one element per PE; its data pattern once indexed dim
# -1 and crashed): the plain copy, then partial axes reduced by each op
oshrun_run 0 2 "scalar copy" - --mesh x=2 --shape '' --from '' --to ''
expect_text "exact: 2 PEs, 2 elements checked" "scalar copy: exact"
for c in "sum c128" "max u8 --shmem-packed" "min f32 --shmem-no-ptr" \
    "prod bf16 --shmem-private --preserve-src"; do
    set -- $c
    [ -n "${RUN_SHMEM_QUICK:-}" ] && [ "$1" != min ] && continue
    op=$1 dt=$2
    shift 2
    oshrun_run 0 4 "scalar $op $dt $*" - --mesh x=2,y=2 --shape '' --from '' \
        --from-partial x,y --to '' --to-partial y --reduce "$op" \
        --dtype "$dt" "$@"
    expect_text "exact: 4 PEs, 4 elements checked" "scalar $op: exact"
done

# uneven dims, a reduce_scatter whose last block is empty (its buffer
# NULL: shmem_ptr(NULL) once aborted the job) and whose pushed reduction
# needs work space only on the PEs of the smaller block (once past the
# promise made from the largest): each protocol, the promise checked per
# PE by run (sanitizer builds: the pushed protocol, through the work area,
# only)
for extra in "" "--shmem-no-ptr" "--shmem-private" "--shmem-packed"; do
    [ -n "${RUN_SHMEM_QUICK:-}" ] && [ "$extra" != --shmem-no-ptr ] && continue
    oshrun_run 0 8 "uneven reduce_scatter, empty block ${extra:-default}" - \
        --mesh a=1,b=2,c=2,d=2 --shape 3 --dtype c64 --from a \
        --from-partial c --to d,c --to-split balanced $extra
    expect_text "exact: 8 PEs" "uneven reduce_scatter ${extra:-default}: exact"
done

# failures
oshrun_run 2 2 "wrong -np" "$meg" $small
expect_text "has 8 devices but 2 PEs were started: run it with oshrun -np 8" \
    "wrong -np message"
n=$(printf '%s\n' "$out" | grep -c "redistplan: run:")
if [ "$n" -eq 1 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: wrong -np: $n messages, expected one"
    echo "$out" | sed 's/^/    /'
fi
oshrun_run 1 4 "corrupted result" - --mesh x=4 --shape 8x8 --from 'x|' \
    --to '|x' --corrupt-device 2
expect_text "MISMATCH on device 2 (x=2)" "mismatch names the device"
out=$("$rp" run "$meg" $small --shmem-packed 2>&1)
rc=$?
if [ "$rc" -eq 2 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: --shmem-packed with sim: exit $rc"
fi
expect_text "need --backend shmem" "shmem option without the backend"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
