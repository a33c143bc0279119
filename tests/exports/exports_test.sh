#!/bin/sh
# The library boundary: every shared library of redist (libredist and the
# backend libraries built here) exports only names with the public prefix
# redist_, and together they export exactly the calls the installed
# headers mark REDIST_API.  Usage: exports_test.sh INCLUDE_DIR LIB.so...
set -eu
inc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
: >"$tmp/exported"
for lib in "$@"; do
    nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$tmp/syms"
    # _end: liboshmem exports its own _end, so ld also exports the
    # linker-made _end of a library that links liboshmem; not our symbol.
    grep -v -e '^redist_' -e '^_end$' "$tmp/syms" >"$tmp/bad" || true
    if [ -s "$tmp/bad" ]; then
        echo "FAIL: $(basename "$lib") exports names outside redist_:"
        sed 's/^/  /' "$tmp/bad"
        fail=1
    fi
    n=$(grep -c '^redist_' "$tmp/syms" || true)
    echo "$(basename "$lib"): $n redist_ symbols"
    grep '^redist_' "$tmp/syms" >>"$tmp/exported" || true
done
sort -u -o "$tmp/exported" "$tmp/exported"
# Declared public calls of the headers whose libraries were given.
for lib in "$@"; do
    case $(basename "$lib") in
    libredist.so*) hs="core spec plan exec" ;;
    libredist_*.so*)
        h=$(basename "$lib" | sed 's/^libredist_//; s/\.so.*//')
        hs=$h ;;
    *) hs= ;;
    esac
    for h in $hs; do
        { tr '\n' ' ' <"$inc/redist/$h.h"; echo; } |
            sed 's/REDIST_API/\n&/g' |
            sed -n 's/^REDIST_API[^(]*\b\(redist_[A-Za-z0-9_]*\) *(.*/\1/p'
    done
done | sort -u >"$tmp/declared"
if [ ! -s "$tmp/declared" ]; then
    echo "FAIL: no REDIST_API declaration found under $inc"
    fail=1
fi
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
    echo "FAIL: declared (<) and exported (>) calls differ:"
    diff "$tmp/declared" "$tmp/exported" | grep '^[<>]' || true
    fail=1
fi
echo "$(wc -l <"$tmp/declared") public calls declared"
exit $fail
