#!/usr/bin/env bash
# `redistplan calibrate` under mpirun at NP ranks (suite mpi):
# - a run with small --reps and --sizes exits 0, prints its table, writes
#   a cost file and a rank map; calibrate_check asserts the values are
#   sane (alpha, bandwidth, gamma ranges), that NP >= 2 measures at least
#   one level and exactly the levels the ranks' placement spans (each by
#   its lowest pair), that NP = 1 measures none (and says so on stderr);
# - `plan --objective time --cost FILE` loads the file (exit 0) and
#   `topo SPEC --cost FILE` shows the measured values;
# - `-o -` writes only the JSON on stdout, `--quiet` prints nothing;
# - errors: an unknown option, a bad --sizes and an unwritable -o path
#   exit 2 with one message (naming the option or the path) on every rank,
#   never hang (timeout 60);
# - NP = 1 also runs calibrate without a launcher.
# MODE `quick` (sanitizer builds, where each mpirun takes seconds): the
# -o -, --quiet and error runs at NP = 2 only, without the bad --sizes and
# --rank-map-out cases.
#   test_calibrate.sh NP REDISTPLAN CALIBRATE_CHECK SPECDIR full|quick \
#                     MPIRUN [MPIRUN ARGS...]
set -u
np=$1
rp=$2
check=$3
spec=$4/megatron-col-to-row-parallel.json
mode=$5
shift 5
extra=1 # the -o -, --quiet and error runs
if [ "$mode" = quick ] && [ "$np" -ne 2 ]; then
    extra=0
fi
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL (np $np): $1"
    for f in "$tmp/out" "$tmp/err"; do
        [ -s "$f" ] && sed 's/^/    /' "$f"
    done
    return 0
}
has() { # FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then ok; else bad "$3: no \"$2\""; fi
}
launcher=("$@") # mpirun and its arguments
runcal() { # ARGS...: calibrate ARGS under mpirun at NP ranks; out, err
    timeout 60 "${launcher[@]}" -np "$np" "$rp" calibrate "$@" \
        >"$tmp/out" 2>"$tmp/err"
}
quick=(--reps 3 --sizes "8,256K")

# --- a calibration: table, file, rank map
runcal "${quick[@]}" -o "$tmp/cost.json" --rank-map-out "$tmp/map.json"
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "calibrate exited $rc"; fi
has "$tmp/out" "wrote $tmp/cost.json" "table"
has "$tmp/out" "bandwidth (GB/s)" "table"
has "$tmp/out" "reductions" "table"
if [ "$np" -eq 1 ]; then
    has "$tmp/err" "no link level could be measured with one rank" "one rank"
fi
if "$check" "$tmp/cost.json" "$np" "$tmp/map.json" >"$tmp/lines" 2>"$tmp/err"; then
    ok
else
    bad "calibrate_check $tmp/cost.json $np"
    cat "$tmp/cost.json" "$tmp/map.json" | sed 's/^/    /'
fi

# --- the planner loads it; topo shows the measured values
if "$rp" plan "$spec" --objective time --cost "$tmp/cost.json" >"$tmp/out" 2>"$tmp/err"; then
    ok
else
    bad "plan --objective time --cost exited $?"
fi
has "$tmp/out" "objective: time" "plan --cost"
if "$rp" topo "$spec" --cost "$tmp/cost.json" >"$tmp/out" 2>"$tmp/err"; then
    ok
else
    bad "topo --cost exited $?"
fi
while IFS= read -r line; do
    if grep -qxF -- "$line" "$tmp/out"; then ok; else bad "topo --cost does not show \"$line\""; fi
done <"$tmp/lines"

# --- -o -: the JSON alone on stdout; --quiet: nothing on stdout
if [ "$extra" -eq 1 ]; then
    runcal --reps 2 --sizes 8,64K -o -
    rc=$?
    cp "$tmp/out" "$tmp/stdout.json"
    if [ "$rc" -eq 0 ] && "$check" "$tmp/stdout.json" "$np" >/dev/null 2>"$tmp/err"; then
        ok
    else
        bad "-o -: exit $rc, or stdout is not the cost file alone"
    fi
    runcal --reps 2 --sizes 8,64K --quiet -o "$tmp/q.json"
    rc=$?
    if [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && [ -s "$tmp/q.json" ]; then
        ok
    else
        bad "--quiet: exit $rc, stdout not empty or no file"
    fi
fi

# --- errors: exit 2, one message, every rank ends
expect_error() { # TEXT DESCRIPTION ARGS...
    text=$1
    what=$2
    shift 2
    runcal "$@"
    rc=$?
    n=$(cat "$tmp/out" "$tmp/err" | grep -c '^redistplan')
    if [ "$rc" -eq 2 ] && [ "$n" -eq 1 ] && grep -qF -- "$text" "$tmp/err"; then
        ok
    else
        bad "$what: exit $rc (124: a hang), $n messages, expected exit 2 and one naming \"$text\""
    fi
}
if [ "$np" -ge 2 ] && [ "$extra" -eq 1 ]; then
    expect_error "unknown option --bogus" "unknown option" --bogus
    expect_error "cannot write /nonexistent/dir/x.json" "unwritable -o" \
        --reps 2 --sizes 8,64K -o /nonexistent/dir/x.json
    if [ "$mode" != quick ]; then
        expect_error "--sizes" "bad --sizes" --sizes 64,8
        expect_error "cannot write /nonexistent/dir/map.json" \
            "unwritable --rank-map-out" --reps 2 --sizes 8,64K \
            -o "$tmp/y.json" --rank-map-out /nonexistent/dir/map.json
    fi
fi

# --- no launcher: one rank, gamma only
if [ "$np" -eq 1 ]; then
    if timeout 60 "$rp" calibrate --reps 2 --sizes 8,64K -o "$tmp/direct.json" \
        >"$tmp/out" 2>"$tmp/err" &&
        "$check" "$tmp/direct.json" 1 >/dev/null 2>>"$tmp/err"; then
        ok
    else
        bad "calibrate without a launcher"
    fi
    has "$tmp/err" "no link level could be measured with one rank" "no launcher"
fi

echo "calibrate np $np: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
