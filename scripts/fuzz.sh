#!/usr/bin/env bash
# Build the libFuzzer targets with clang (address + undefined sanitizers)
# and run each for a bounded time.  usage: scripts/fuzz.sh [SECONDS]
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
out=build-fuzz
mkdir -p "$out/corpus-spec" "$out/corpus-plan"
srcs=$(ls src/core/*.c src/spec/*.c src/plan/*.c)
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude"
for t in spec plan; do
    clang $flags $srcs tests/fuzz/fuzz_$t.c -ljansson -o "$out/fuzz_$t"
done
cp specs/*.json tests/specs/invalid/*.json "$out/corpus-spec/"
cp tests/specs/golden/*.json "$out/corpus-plan/"
# -rss_limit_mb guards the planner's memory; -timeout flags slow inputs.
for t in spec plan; do
    echo "fuzz_$t: ${secs}s"
    if ! "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus-$t" >"$out/fuzz_$t.log" 2>&1; then
        tail -60 "$out/fuzz_$t.log"
        echo "fuzz_$t: FAILED (crash input saved in $out/)"
        exit 1
    fi
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$out/fuzz_$t.log"
done
