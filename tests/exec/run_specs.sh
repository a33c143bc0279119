#!/bin/sh
# `redistplan run` end to end (sim backend): every spec in specs/ at a
# reduced shape, in the default, --preserve-src and --fused modes; every
# dtype x reduce op on a spec with partial axes; the exit codes of a
# mismatch (1) and of bad input (2).
#   run_specs.sh REDISTPLAN SPECDIR
set -u
# the default backend is sim only outside an MPI launcher
unset OMPI_COMM_WORLD_SIZE PMI_SIZE
rp=$1
dir=$2
pass=0
fail=0

expect() { # CODE DESCRIPTION ARGS... : run `redistplan run ARGS`
    want=$1; what=$2; shift 2
    out=$("$rp" run "$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what: exit $rc, expected $want"
        echo "$out" | sed 's/^/    /'
    fi
}

expect_text() { # TEXT DESCRIPTION : the last run's output contains TEXT
    case $out in
    *"$1"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $2: no \"$1\" in:"; echo "$out" | sed 's/^/    /' ;;
    esac
}

for f in "$dir"/*.json; do
    name=$(basename "$f" .json)
    want=0
    [ "$name" = partial-target-not-in-source ] && want=2
    for mode in "" --preserve-src --fused; do
        expect $want "$name $mode" "$f" --shrink --max-bytes 2000000 $mode
    done
done

for dt in f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 c64 c128; do
    for op in sum max min prod; do
        expect 0 "hsdp-grad-sync --dtype $dt --reduce $op" \
            "$dir/hsdp-grad-sync.json" --shape 48x8 --dtype $dt --reduce $op
        expect 0 "partial-two-axes --dtype $dt --reduce $op --fused" \
            "$dir/partial-two-axes-reduce-scatter.json" --shape 16x3 \
            --dtype $dt --reduce $op --fused
    done
done

expect 1 "corrupted result" "$dir/megatron-col-to-row-parallel.json" \
    --shrink --max-bytes 100000 --corrupt-device 5
expect_text "MISMATCH on device 5 (data=1,model=1)" "mismatch names the device"
expect 2 "too large without --shrink" "$dir/fft-3d-pencil-transpose.json"
expect_text "use --shrink" "too-large message"
expect 2 "mpi backend not built" "$dir/megatron-col-to-row-parallel.json" \
    --backend mpi
expect 2 "unknown backend" "$dir/megatron-col-to-row-parallel.json" \
    --backend tcp
expect 2 "bad --shape" "$dir/megatron-col-to-row-parallel.json" --shape 7x3
expect 2 "wrong number of dims" "$dir/megatron-col-to-row-parallel.json" \
    --shape 64
expect 2 "bad dtype" "$dir/megatron-col-to-row-parallel.json" --dtype f8
expect 2 "missing spec file" "$dir/no-such-spec.json"
expect 0 "inline spec" - --mesh x=2,y=3 --shape 12x6 --dtype i32 \
    --from 'x|y' --to 'y|x'
expect 0 "inline spec, partial, repeat" - --mesh x=3,y=2 --shape 6x4x2 \
    --dtype bf16 --from '|y|' --from-partial x --to 'x||y' --repeat 3
expect_text "exact: 6 devices" "inline report"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
