#!/usr/bin/env bash
# Build the libFuzzer targets with clang (address + undefined sanitizers)
# and run each for a bounded time.  usage: scripts/fuzz.sh [SECONDS]
# (per target; default 40: the three targets take two minutes in all).
#   spec  the spec loader, then the solver and verifier on what loads
#   plan  the plan reader and verifier: SPEC NUL PLAN inputs
#   exec  small specs planned or walked, run under the sim backend and
#         checked exactly (every element, scratch against the promise)
# Seeds come from the repository: specs/, tests/specs/, the hand-written
# seeds of tests/fuzz/seeds/TARGET/ (shapes specs/ lacks) and each
# target's past crashes in tests/fuzz/regress/TARGET/.  A crash leaves
# its input in build-fuzz/; fix it, then add the input to
# tests/fuzz/regress/TARGET/ (the suite replays it: tests/fuzz/meson.build).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-40}
out=build-fuzz
targets="spec plan exec"
for t in $targets; do mkdir -p "$out/corpus-$t"; done
planner=$(ls src/core/*.c src/spec/*.c src/plan/*.c)
executor="$(ls src/exec/*.c src/backend/sim/*.c src/testing/*.c)
          tests/common/random_plan.c"
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude"
# (the spec target plans sets of arrays, which the executor's scratch
# figures group into rounds: it links the executor too)
clang $flags -pthread $planner $executor tests/fuzz/fuzz_spec.c -ljansson -lm \
    -o "$out/fuzz_spec"
clang $flags $planner tests/fuzz/fuzz_plan.c -ljansson -o "$out/fuzz_plan"
clang $flags -pthread $planner $executor tests/fuzz/fuzz_exec.c -ljansson -lm \
    -o "$out/fuzz_exec"

# seeds: every spec and invalid spec; each golden plan after its spec (and
# alone, for the reader's fixed spec); each spec planned by either
# objective and walked (the tail after the NUL byte picks)
cp specs/*.json specs/meshes/*.json specs/arrays/*.json tests/specs/invalid/*.json "$out/corpus-spec/"
for p in tests/specs/golden/*.plan.json; do
    name=$(basename "$p" .plan.json)
    cp "$p" "$out/corpus-plan/$name.plan.json"
    if [ -f "specs/$name.json" ]; then
        { cat "specs/$name.json"; printf '\000'; cat "$p"; } \
            >"$out/corpus-plan/$name.pair"
    fi
done
for s in specs/*.json; do
    name=$(basename "$s" .json)
    cp "$s" "$out/corpus-exec/$name.json"
    for tail in 001 002 006; do
        { cat "$s"; printf "\\000\\$tail"; } >"$out/corpus-exec/$name.$tail"
    done
done
for t in $targets; do
    for d in "tests/fuzz/seeds/$t" "tests/fuzz/regress/$t"; do
        if [ -d "$d" ]; then cp "$d"/* "$out/corpus-$t/"; fi
    done
done

# -rss_limit_mb guards the planner's memory; -timeout flags slow inputs.
for t in $targets; do
    echo "fuzz_$t: ${secs}s"
    if ! "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus-$t" >"$out/fuzz_$t.log" 2>&1; then
        tail -60 "$out/fuzz_$t.log"
        echo "fuzz_$t: FAILED (crash input saved in $out/)"
        exit 1
    fi
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$out/fuzz_$t.log"
done
