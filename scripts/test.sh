#!/usr/bin/env bash
# Every test from a fresh Debian 12 machine: install what is missing, build
# warning-free (-Werror), run the suite (the multihost suite too, which
# needs root and network namespaces: one line says whether it ran or why
# it was skipped), run it again under
# AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), check
# every spec of specs/, and fuzz the spec loader, the plan reader and the
# executor for a bounded time.  Ends with one line "tests: N passed, M
# failed".  Environment: FUZZ_SECONDS (default 20 per target, three
# targets; 0 skips fuzzing).
set -u
cd "$(dirname "$0")/.."
scripts/setup.sh test || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
passed=0
failed=0
count() { # count BUILD_DIR: add up meson's per-test results
    local log=$1/meson-logs/testlog.json
    [ -f "$log" ] || { failed=$((failed + 1)); return; }
    local p f
    p=$(grep -c '"result": "OK"' "$log")
    f=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log")
    passed=$((passed + p))
    failed=$((failed + f))
}
step() { echo; echo "== $*"; }
multihost() { # BUILD_DIR: did the multihost suite run (tests/multihost)?
    local line
    line=$(grep '"name": "[^"]*multihost / multihost"' "$1/meson-logs/testlog.json" 2>/dev/null)
    case $line in
    '') echo "multihost: skipped: not registered (no MPI or mpirun found)" ;;
    *'"result": "SKIP"'*)
        echo "$line" | grep -o 'multihost: skipped: [^"\\]*' | head -n 1 | grep . ||
            echo "multihost: skipped: (no reason printed)" ;;
    *) echo "multihost: ran, $(echo "$line" | grep -o '"result": "[A-Z]*"' | cut -d'"' -f4)" ;;
    esac
}

step "build (-Werror) and test"
if meson setup build-ci --wipe -Dwerror=true --buildtype=debugoptimized >/dev/null 2>&1 ||
   meson setup build-ci -Dwerror=true --buildtype=debugoptimized >/dev/null; then
    if ninja -C build-ci; then
        meson test -C build-ci --print-errorlogs
        count build-ci
        multihost build-ci
    else
        echo "build failed"; failed=$((failed + 1))
    fi
else
    echo "meson setup failed"; failed=$((failed + 1))
fi

step "AddressSanitizer + UndefinedBehaviorSanitizer build and test"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if { meson setup build-asan --wipe -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null 2>&1 ||
     meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null; } &&
   ninja -C build-asan >/dev/null; then
    meson test -C build-asan --print-errorlogs --timeout-multiplier 3
    count build-asan
else
    echo "sanitizer build failed"; failed=$((failed + 1))
fi
unset ASAN_OPTIONS UBSAN_OPTIONS

step "redistplan check specs/*.json specs/arrays/*.json"
if build-ci/src/redistplan check specs/*.json specs/arrays/*.json; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

secs=${FUZZ_SECONDS:-20}
if [ "$secs" -gt 0 ]; then
    step "libFuzzer: spec loader, plan reader and executor, ${secs}s each"
    if scripts/fuzz.sh "$secs"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
