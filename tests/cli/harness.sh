# The frame of the shell tests of redistplan, sourced by tests/cli/*.sh
# and tests/topo/test_topo_cli.sh: a scratch folder $T removed at exit,
# the counters, ok / bad, expect_rc, and finish (the summary line and the
# exit status, last).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

expect_rc() { # WANT DESCRIPTION CMD... : its output in $T/out, $T/err
    local want=$1 desc=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else
        bad "$desc: exit $rc, want $want"
        sed 's/^/    /' "$T/err" | head -5
    fi
}

finish() { # NAME
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
