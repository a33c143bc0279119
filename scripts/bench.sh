#!/usr/bin/env bash
# The benchmark suite in one command (doc/bench.md gives the latest run's
# duration; 13 minutes on a quiet 2-core machine):
# redist's MPI and OpenSHMEM backends (one-shot calls, prepared objects,
# non-blocking start + wait; default-objective plans, and the bytes
# objective's where they differ) against gather-then-slice, a
# hand-written MPI_Alltoallv / MPI_Alltoallw exchange of exact boxes,
# ScaLAPACK pdgemr2d and a memcpy roofline (bench/bench_redist), on the
# specs of specs/ scaled per rank, on 2-D ownership transposes and on
# uneven splits; a model's weight sync as one set of arrays, on one mesh
# and from training ranks to inference ranks, and a checkpoint 8 -> 6 ranks
# (bench/bench_sets); then the planner (bench/bench_planner).  Writes CSVs, table.md (results, ratios, memory)
# and PNG plots into the results folder, and prints the ratio tables.
#
# usage: scripts/bench.sh [RESULTS_DIR]          (default bench/results)
# Environment:
#   BENCH_REPS     timed runs per implementation and case (default 10)
#   BENCH_QUICK=1  a smoke test: small sizes, 3 reps (numbers meaningless)
#   BENCH_SHMEM=0  leave out the OpenSHMEM backend
#   BENCH_PLANNER_LIMIT  seconds per planner step (default 180; 20 with
#                  BENCH_QUICK)
#   BENCH_IMPLS    the implementations (default: all built but
#                  redist-mpi-packed; pdgemr2d where noted below)
# Exit status: 0, or 1 when an implementation gave a wrong result (every
# result is checked element by element before its time is reported).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results}
reps=${BENCH_REPS:-10}
quick=${BENCH_QUICK:-0}
use_shmem=${BENCH_SHMEM:-1}
t_start=$(date +%s)

scripts/setup.sh bench
build="build-bench"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=debugoptimized >/dev/null
fi
ninja -C "$build" bench/bench_redist bench/bench_planner bench/bench_sets >/dev/null
bench="$build/bench/bench_redist"
[ -x "$bench" ] || { echo "bench.sh: bench_redist was not built (no MPI?)" >&2; exit 2; }

mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.png "$out"/*.txt "$out"/*.err "$out"/table.md "$out"/run.log
rm -rf "$out/plotdata"
exec > >(tee "$out/run.log") 2>&1

cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Transport: Open MPI's ob1 over shared memory (vader) with CMA single
# copy (process_vm_readv: one copy per byte moved); osc/rdma excluded,
# without which shmem_finalize segfaults (Open MPI 4.1.4).  OpenSHMEM puts
# go through spml/ucx.  More ranks than cores: no binding, yield when idle.
mca=(--mca pml ob1 --mca btl "self,vader" --mca btl_vader_single_copy_mechanism cma
     --mca osc '^rdma')
shmem_flag=()
features=$(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader "$bench" --features)
case " $features " in
*" shmem "*) [ "$use_shmem" = 1 ] && shmem_flag=(--shmem) ;;
esac

{
    echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores," \
         "$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)," \
         "Linux $(uname -r), $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release)"
    echo "mpi: $(mpirun --version 2>/dev/null | head -1); compiler: $(cc --version | head -1)"
    echo "build: meson debugoptimized (-O2 -g), $build; bench_redist built with: $features"
    echo "source: git $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
         "+ $(git status --porcelain 2>/dev/null | wc -l) uncommitted paths"
    echo "transport: ${mca[*]}; ranks > $cores cores: --oversubscribe --bind-to none" \
         "--mca mpi_yield_when_idle 1; else --bind-to core"
    echo "shmem: ${shmem_flag[*]:-off} (same processes as the MPI implementations; symmetric" \
         "heap SHMEM_SYMMETRIC_HEAP_SIZE per group, src/dst symmetric)"
    echo "method: 1 warm-up + $reps timed rounds, implementations alternated (order rotated" \
         "every round), MPI_Barrier + MPI_Wtime, max over ranks; every element checked after" \
         "the warm-up, the last timed run and the memory probe"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

csv="$out/redist.csv"
fail=0
run() { # run NP SYMMETRIC_HEAP ARGS...: one bench_redist job
    local np=$1 heap=$2
    shift 2
    local place=(--bind-to core)
    if [ "$np" -gt "$cores" ]; then
        place=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
    fi
    echo
    echo "### $np ranks: $*"
    # Open MPI 4.1.4 reads SHMEM_SYMMETRIC_HEAP_SIZE (the OpenSHMEM name,
    # SHMEM_SYMMETRIC_SIZE, is ignored: the heap stays at 256 MiB)
    SHMEM_SYMMETRIC_HEAP_SIZE=$heap mpirun -np "$np" "${place[@]}" "${mca[@]}" \
        -x SHMEM_SYMMETRIC_HEAP_SIZE "$bench" --reps "$reps" --keep-going \
        --csv "$csv" "${shmem_flag[@]}" "${impls[@]}" "$@" || fail=1
}

if [ "$quick" = 1 ]; then
    reps=3
    n_small=256; n_mid=512; n_big=512
    s_small=256K; s_mid=512K; s_big=1M; s_huge=2M
    u=1 # uneven cases: a quarter of their sizes
else
    n_small=2048; n_mid=4096; n_big=8192
    s_small=1M; s_mid=4M; s_big=16M; s_huge=64M
    u=4
fi
heap() { # N P: symmetric heap for src + dst + the one-shot call's scratch
          # + the prepared object's, of an N x N f64 case
    echo "$(( $1 * $1 * 8 * 4 / $2 / 1048576 + 64 ))M"
}
no_gemr=${BENCH_IMPLS:-redist-mpi,redist-mpi-prep,redist-mpi-start,redist-mpi-win,redist-mpi-bytes,redist-shmem,redist-shmem-prep,redist-shmem-bytes,gather,alltoallv,alltoallw,memcpy,transport}
impls=(--impl "$no_gemr,pdgemr2d")

# 2-D transposes of ownership, f64 N x N.  Both directions at the small
# N; at the large N one direction each (the other is its mirror), and
# ScaLAPACK only on row -> column at 4 ranks (about 5 s a call there).
# "identity" (source = target, nothing moves): the fixed cost of a call.
n=$n_small
run 2 "$(heap $n 2)" "row2col:x=2:${n}x${n}:f64:x|:|x" "col2row:x=2:${n}x${n}:f64:|x:x|" \
    "identity:x=2:${n}x${n}:f64:x|:x|"
run 4 "$(heap $n 4)" "row2col:x=2,y=2:${n}x${n}:f64:x,y|:|x,y" \
    "col2row:x=2,y=2:${n}x${n}:f64:|x,y:x,y|" \
    "grid2row:x=2,y=2:${n}x${n}:f64:x|y:x,y|" \
    "row2grid:x=2,y=2:${n}x${n}:f64:x,y|:x|y"
# 64 MiB per rank on 2 ranks, both directions: the roofline comparison
n=$n_mid
run 2 "$(heap $n 2)" --impl "$no_gemr" "row2col:x=2:${n}x${n}:f64:x|:|x" \
    "col2row:x=2:${n}x${n}:f64:|x:x|"
n=$n_big
run 2 "$(heap $n 2)" --impl "$no_gemr" "row2col:x=2:${n}x${n}:f64:x|:|x"
run 4 "$(heap $n 4)" "row2col:x=2,y=2:${n}x${n}:f64:x,y|:|x,y"
run 4 "$(heap $n 4)" --impl "$no_gemr" "grid2row:x=2,y=2:${n}x${n}:f64:x|y:x,y|"

# the specs of specs/, scaled per rank; grouped by device count
specs_of() { # device count -> spec files
    local d=$1 f
    for f in specs/*.json; do
        [ "$(python3 -c 'import json,sys,math; print(math.prod(a[1] for a in json.load(open(sys.argv[1]))["mesh"]))' "$f")" = "$d" ] && echo "$f"
    done
    return 0
}
# shellcheck disable=SC2046
run 3 512M --sizes "$s_small,$s_big,$s_huge" $(specs_of 3)
# uneven splits (doc/uneven.md), as given, about 3 MiB per rank (a
# quarter with BENCH_QUICK): a GPT-2 vocabulary of 50257 rows over 8
# (ceil blocks: 6283 x 7 and 6276) and its even twin of 50176 rows, the
# same bytes within 0.2% (the per-byte cost of unevenness); a 197-token
# sequence over 8 (25 x 7 and 22; specs/vit-sequence-parallel-197.json
# has it over 4); 8 ranks' rows onto the first 6 (explicit blocks, the
# last two empty: a job shrinking from 8 to 6 ranks)
h=$((64 * u)) b=$((200 * u))
uneven=("vocab-uneven:tp=8:50257x${h}:bf16:tp|:|tp"
        "vocab-even:tp=8:50176x${h}:bf16:tp|:|tp"
        "seq197-over-8:sp=8:$((16 * u))x197x768:bf16:|sp|:||sp"
        "shrink-8-to-6:x=8:$((1200 * u))x1536:f32:x|:x|::$b,$b,$b,$b,$b,$b,0,0|")
# shellcheck disable=SC2046
run 8 256M --sizes "$s_small,$s_big" $(specs_of 8) "identity:x=8:1024x256:f32:x|:x|" \
    "${uneven[@]}"
# shellcheck disable=SC2046
run 12 64M --sizes "$s_small,$s_mid" $(specs_of 12)
# shellcheck disable=SC2046
run 16 64M --sizes "$s_small,$s_mid" $(specs_of 16)
# shellcheck disable=SC2046
run 32 64M --sizes "$s_small,$s_mid" $(specs_of 32)

# model sync (bench/bench_sets.c, doc/bench.md "Model sync"): the
# Llama-style 8B weight set reshaped from dp=2,tp=2 to tp=4 on 4 ranks
# (scripts/model_spec.py --variant reshaped), every dim divided by 8
# (by 32 with BENCH_QUICK): redist's plan set under three budgets against
# per-tensor MPI_Allgatherv + slice and per-tensor MPI_Alltoallv; then on
# two meshes at 8 ranks, every dim divided by 16 (64 with BENCH_QUICK):
# training dp=2,tp=2 on ranks 0-3 to inference tp=4 on ranks 4-7
# (allgather + a broadcast to the inference ranks), and the checkpoint
# saved on 8 ranks loaded on 6
echo
echo "### model sync"
k=8
k2=16
[ "$quick" = 1 ] && k=32 && k2=64
sets_run() { # NP VARIANT K REPS
    local np=$1 place=(--bind-to core)
    python3 scripts/model_spec.py --variant "$2" --shrink "$3" \
        -o "$out/sets-$2.json"
    [ "$np" -gt "$cores" ] &&
        place=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" |
        tee -a "$out/sets.txt"
    mpirun -np "$np" "${place[@]}" "${mca[@]}" "$build/bench/bench_sets" \
        "$out/sets-$2.json" --reps "$4" --csv "$out/sets.csv" |
        tee -a "$out/sets.txt" || fail=1
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" |
        tee -a "$out/sets.txt"
}
sets_run 4 reshaped "$k" "$((reps * 2))"
sets_run 8 train-to-infer "$k2" "$((reps * 2))"
sets_run 8 checkpoint "$k2" "$((reps * 2))"

# planner: the bytes objective on even specs (--even: the workload of
# version 1's bench, whose medians doc/bench.md compares across runs),
# every class up to 6 axes, then a few plans of 7 and 8 axes; the default
# (time) objective on even specs up to 6 axes; then the mix bench_planner
# draws without --even, where a dim shorter than its axes' product makes
# the spec uneven (doc/uneven.md), up to 5 axes with the time objective:
# there a 6-axis problem can take minutes (doc/bench.md, Planner), so
# each step has a time limit (BENCH_PLANNER_LIMIT seconds: 180, 20 with
# BENCH_QUICK); a step stopped by it keeps the classes it finished, and
# says so
echo
echo "### planner"
planner="$build/bench/bench_planner"
if [ "$quick" = 1 ]; then p1=5; p2=1; plimit=20; else p1=50; p2=3; plimit=180; fi
plimit=${BENCH_PLANNER_LIMIT:-$plimit}
# bench_planner exits 1 when a plan fails; at 7-8 axes a few random
# problems exceed the search budget (4 million types): counted, not fatal
run_planner() { # TAG REPS ARGS...
    local tag=$1 r=$2 nf rc=0
    shift 2
    timeout "$plimit" "$planner" --reps "$r" "$@" \
        --csv "$out/planner_$tag.csv" \
        >"$out/planner_$tag.txt" 2>"$out/planner_$tag.err" || rc=$?
    cat "$out/planner_$tag.txt"
    if [ "$rc" = 124 ]; then
        echo "planner ($tag): stopped after $plimit s; the" \
             "classes above are complete" | tee -a "$out/planner_$tag.txt"
    fi
    nf=$(grep -c "plan failed" "$out/planner_$tag.err" || true)
    if [ "$nf" != 0 ]; then
        echo "planner: $nf plan(s) failed:"
        sort "$out/planner_$tag.err" | uniq -c
    fi
}
run_planner 6 "$p1" --max-axes 6 --objective bytes --even
run_planner 8 "$p2" --seed 11 --objective bytes --even
run_planner time "$p1" --max-axes 6 --even
run_planner mixed "$p1" --max-axes 5
touch "$out/planner_6.csv" "$out/planner_8.csv"
{
    head -1 "$out/planner_6.csv"
    tail -n +2 "$out/planner_6.csv"
    tail -n +2 "$out/planner_8.csv" | awk -F, '$1 >= 7'
} >"$out/planner.csv"
rm -f "$out/planner_6.csv" "$out/planner_8.csv"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
python3 bench/report.py "$out"
t_end=$(date +%s)
echo
echo "bench.sh: $((t_end - t_start)) s; results in $out (redist.csv, planner.csv, table.md," \
     "time_vs_size.png, memory.png, planner.png, sets.csv, sets.txt, run.log)" | tee -a "$out/machine.txt"
if [ "$fail" != 0 ]; then
    echo "bench.sh: WRONG RESULTS or failed runs above (search run.log for VERIFICATION FAILED)" >&2
    exit 1
fi
