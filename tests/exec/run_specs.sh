#!/bin/sh
# `redistplan run` end to end (sim backend): every spec in specs/ at a
# reduced shape, every spec of specs/arrays at its own, in the default, --preserve-src and --fused modes; every
# dtype x reduce op on a spec with partial axes and on a 0-dim array; the
# exit codes of a mismatch (1) and of bad input (2).
# `quick` (sanitizer builds): one mode per spec, and every other dtype
# with one op, in rotation.
#   run_specs.sh REDISTPLAN SPECDIR [quick]
set -u
# the default backend is sim only outside an MPI launcher
unset OMPI_COMM_WORLD_SIZE PMI_SIZE
rp=$1
dir=$2
quick=${3:-}
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

k=0
for f in "$dir"/*.json; do
    name=$(basename "$f" .json)
    want=0
    [ "$name" = partial-target-not-in-source ] && want=2
    # uneven dims (doc/spec-format.md section 7): also at their own shape
    if "$rp" plan "$f" --json 2>/dev/null | grep -q '"recv_bytes_per_device"'; then
        expect 0 "$name (uneven, own shape)" "$f" --max-bytes 2000000000
    fi
    for mode in default --preserve-src --fused; do
        # quick: the spec's turn of the three modes only
        [ -n "$quick" ] && case $((k % 3)):$mode in
            0:default | 1:--preserve-src | 2:--fused) ;;
            *) continue ;;
        esac
        [ "$mode" = default ] && mode=
        expect $want "$name $mode" "$f" --shrink --max-bytes 2000000 $mode
    done
    k=$((k + 1))
done

for dt in f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 c64 c128; do
    ops="sum max min prod"
    # quick: every other dtype, one op each
    [ -n "$quick" ] && { set -- $ops; shift $((k % 4)); ops=$1; k=$((k + 1));
                         [ $((k % 2)) -eq 0 ] && continue; }
    for op in $ops; do
        expect 0 "hsdp-grad-sync --dtype $dt --reduce $op" \
            "$dir/hsdp-grad-sync.json" --shape 48x8 --dtype $dt --reduce $op
        expect 0 "partial-two-axes --dtype $dt --reduce $op --fused" \
            "$dir/partial-two-axes-reduce-scatter.json" --shape 16x3 \
            --dtype $dt --reduce $op --fused
    done
done

# scalar-run-overflow: a 0-dim array is one element per device (the data
# pattern once indexed dim -1); partial axes reduce, every dtype once and
# every op in turn (each op meets three or four dtypes), in each mode
expect 0 "scalar, no steps" - --mesh x=2,y=2 --shape '' --from '' --to ''
expect_text "exact: 4 devices, 4 elements checked" "scalar copy: report"
i=0
for dt in f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 c64 c128; do
    case $((i % 4)) in 0) op=sum ;; 1) op=max ;; 2) op=min ;; 3) op=prod ;; esac
    case $((i % 3)) in 0) mode="" ;; 1) mode=--fused ;; 2) mode=--preserve-src ;; esac
    i=$((i + 1))
    expect 0 "scalar --dtype $dt --reduce $op $mode" - --mesh x=2,y=3 \
        --shape '' --from '' --from-partial x,y --to '' --to-partial y \
        --dtype $dt --reduce $op $mode
    expect_text "exact: 6 devices, 6 elements checked" "scalar $dt $op"
done
expect 0 "scalar, every partial axis reduced" - --mesh x=2,y=2,z=2 \
    --shape '' --from '' --from-partial x,y,z --to '' --reduce prod --dtype i8
expect_text "plan      all_reduce" "scalar: one all_reduce"
expect 1 "scalar, corrupted" - --mesh x=2 --shape '' --from '' \
    --from-partial x --to '' --corrupt-device 1
expect_text "MISMATCH on device 1 (x=1): local index 0 [], global index 0 []" \
    "scalar mismatch"

expect 1 "corrupted result" "$dir/megatron-col-to-row-parallel.json" \
    --shrink --max-bytes 100000 --corrupt-device 5
expect_text "MISMATCH on device 5 (data=1,model=1)" "mismatch names the device"
# cli-corrupt-device-out-of-range: a device outside the mesh is bad input
expect 2 "--corrupt-device out of range" - --mesh x=2 --shape 8x8 \
    --from 'x|' --to '|' --corrupt-device 5
expect_text "device 5 is not in the mesh (2 devices: 0 to 1)" \
    "--corrupt-device range message"
for bad in -1 abc 1x ''; do
    expect 2 "--corrupt-device '$bad'" - --mesh x=2 --shape 8x8 \
        --from 'x|' --to '|' --corrupt-device "$bad"
    expect_text "--corrupt-device: not a device number" "--corrupt-device $bad"
done
expect 2 "too large without --shrink" "$dir/fft-3d-pencil-transpose.json"
expect_text "use --shrink" "too-large message"
expect_text "simulating this spec takes" "too-large message names the sim"
expect 2 "mpi backend not built" "$dir/megatron-col-to-row-parallel.json" \
    --backend mpi
expect 2 "unknown backend" "$dir/megatron-col-to-row-parallel.json" \
    --backend tcp
expect 0 "uneven --shape" "$dir/megatron-col-to-row-parallel.json" --shape 7x3
expect_text "exact: 8 devices" "uneven --shape runs exactly"
expect 0 "uneven, n < k, empty blocks" - --mesh x=2,y=3 --shape 5x2 \
    --dtype i16 --from 'x|y' --to 'y|x' --from-blocks '0,5|' --to-split balanced
expect_text "exact: 6 devices" "empty blocks run exactly"
expect 2 "bad --shape" "$dir/megatron-col-to-row-parallel.json" --shape 7x0
expect 2 "wrong number of dims" "$dir/megatron-col-to-row-parallel.json" \
    --shape 64
expect 2 "bad dtype" "$dir/megatron-col-to-row-parallel.json" --dtype f8
expect 2 "missing spec file" "$dir/no-such-spec.json"
expect 0 "inline spec" - --mesh x=2,y=3 --shape 12x6 --dtype i32 \
    --from 'x|y' --to 'y|x'
expect 0 "inline spec, partial, repeat" - --mesh x=3,y=2 --shape 6x4x2 \
    --dtype bf16 --from '|y|' --from-partial x --to 'x||y' --repeat 3
expect_text "exact: 6 devices" "inline report"

# specs with many arrays (doc/arrays.md): every array exact, the scratch
# within the budget; the example and shrunk copies of the model specs
# run, the two-mesh ones (train to infer, checkpoint 8 to 6, KV cache on
# 16 devices) included
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$src/scripts/model_spec.py" --variant reshaped --shrink 64 \
    --layers 2 -o "$tmp/llama8b-reshaped-small.json"
# gradients: reduce-scatters combined, the largest kept as collectives
# under the budget
python3 "$src/scripts/model_spec.py" --variant grads --shrink 64 \
    --layers 2 -o "$tmp/llama8b-grads-small.json"
for f in "$dir/arrays/mlp-block-resharded.json" "$tmp/llama8b-reshaped-small.json" \
         "$tmp/llama8b-grads-small.json"; do
    name=arrays/$(basename "$f" .json)
    expect 0 "$name" "$f" --max-bytes 2000000000
    expect_text "result    exact:" "$name report"
done
for v in train-to-infer checkpoint kv-cache; do
    python3 "$src/scripts/model_spec.py" --variant $v --shrink 64 \
        --layers 2 -o "$tmp/$v-small.json"
    expect 0 "arrays/$v (two meshes)" "$tmp/$v-small.json"
    expect_text "result    exact:" "arrays/$v report"
done
# --preserve-src: the sources must come back untouched (checked element
# by element), --repeat: every run exact, sources refilled between runs
expect 0 "arrays with --preserve-src" "$dir/arrays/mlp-block-resharded.json" \
    --preserve-src --repeat 2
expect_text "source    preserved (--preserve-src)" "arrays with --preserve-src"
expect_text "runs      2" "arrays with --preserve-src, runs"
expect 0 "arrays/checkpoint, --preserve-src" "$tmp/checkpoint-small.json" \
    --preserve-src
expect_text "result    exact:" "arrays/checkpoint, --preserve-src report"
expect 0 "arrays, --repeat 3" "$dir/arrays/mlp-block-resharded.json" --repeat 3
expect_text "result    exact:" "arrays, --repeat 3 report"
expect 2 "arrays over --max-bytes" "$dir/arrays/mlp-block-resharded.json" \
    --max-bytes 1000
expect_text "use --shrink or a larger --max-bytes" "arrays over --max-bytes"
# --shrink: a smaller copy of the set (the same steps, every type
# divisible, the budget scaled), exact, within its budget, its rounds kept
python3 "$src/scripts/model_spec.py" --variant reshaped --shrink 16 \
    --layers 2 -o "$tmp/reshaped16.json"
expect 0 "arrays --shrink" "$tmp/reshaped16.json" --shrink --max-bytes 4M \
    --preserve-src
expect_text " of 21 arrays (--shrink: the same steps" "arrays --shrink report"
expect_text ": within" "arrays --shrink within its budget"
expect_text "result    exact: 21 arrays on 4 devices" "arrays --shrink exact"
expect 0 "arrays --shrink, two meshes" "$tmp/train-to-infer-small.json" --shrink \
    --max-bytes 300K
expect_text "result    exact:" "arrays --shrink, two meshes, report"
expect 2 "arrays --shrink too far" "$dir/arrays/mlp-block-resharded.json" \
    --shrink --max-bytes 1000
expect_text "shrunk as far as the plans allow" "arrays --shrink too far"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
