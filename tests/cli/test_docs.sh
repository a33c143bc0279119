#!/usr/bin/env bash
# The help texts and README against the program:
#   1. bare `redistplan` lists every command; `redistplan --help` too;
#      `redistplan CMD --help` and `-h` exit 0 with the usage, the options
#      and an example, for every command; every option a help text lists
#      is one the command accepts;
#   2. README's command table names the commands and options of the help;
#   3. README's C snippet, compiled as written (c_snippet.py), runs and
#      prints its plan;
#   4. every transcript quoted in README runs and prints what is quoted
#      (doc_transcripts.py).
# usage: test_docs.sh REDISTPLAN SOURCE_ROOT C_SNIPPET_EXE
set -u
RP=$1
ROOT=$2
SNIPPET=$3
. "$(dirname "$0")/harness.sh"

# 1. the commands and their help
"$RP" >"$T/out" 2>"$T/bare"
[ $? -eq 2 ] && ok || bad "bare redistplan: exit, want 2"
"$RP" --help >"$T/list" 2>&1 && ok || bad "redistplan --help: exit"
cmp -s "$T/bare" "$T/list" && ok || bad "bare redistplan and --help list differently"
cmds=$(sed -n '/^commands:/,/^$/p' "$T/list" | awk 'NF > 1 {print $1}')
[ "$(echo $cmds)" = "plan check verify topo run calibrate" ] && ok ||
    bad "the commands listed: $(echo $cmds)"
for c in $cmds; do
    for h in --help -h; do
        "$RP" "$c" "$h" >"$T/h" 2>"$T/err"
        rc=$?
        [ $rc -eq 0 ] && [ ! -s "$T/err" ] && ok || bad "$c $h: exit $rc"
        grep -q "^usage: redistplan $c" "$T/h" && grep -q '^exit codes: 0 ' "$T/h" &&
            ok || bad "$c $h: no usage or exit codes"
        grep -qE '^ +(mpirun .*)?redistplan '"$c"'\b' "$T/h" && ok ||
            bad "$c $h: no example"
    done
    "$RP" help "$c" | cmp -s - "$T/h" && ok || bad "redistplan help $c differs"
    # every option the help lists is accepted (no "unknown option"; run
    # in $T, where the files they might write go)
    (cd "$T" && grep -oE -- '^  (-[a-z]|--[a-z][a-z-]*)' "$T/h" | sed 's/^ *//' | sort -u |
    while read -r o; do
        "$RP" "$c" "$o" x y </dev/null >/dev/null 2>"$T/e"
        if grep -q 'unknown option' "$T/e"; then
            echo "FAIL: $c --help lists $o, which $c refuses"
            echo x >>"$T/refused"
        fi
    done)
done
[ -e "$T/refused" ] && bad "options listed but refused" || ok
"$RP" bogus >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q '^redistplan: unknown command "bogus"' "$T/err" && ok ||
    bad "unknown command"

# 2. README's table of commands: each row's command and options are in the
#    command's help
grep -E '^\| `(plan|check|verify|topo|run|calibrate)\b' "$ROOT/README.md" >"$T/rows"
[ "$(cut -d'`' -f2 "$T/rows" | awk '{print $1}' | xargs)" = "$(echo $cmds)" ] &&
    ok || bad "README's table does not list the commands in order"
while read -r row; do
    c=$(cut -d'`' -f2 <<<"$row" | awk '{print $1}')
    "$RP" "$c" --help >"$T/h" 2>&1
    for o in $(cut -d'`' -f2 <<<"$row" | grep -oE -- '(--[a-z][a-z-]*|-o)\b' | sort -u); do
        grep -qE -- "^  ($o\b|-[a-z] [A-Z]+, $o\b|-[a-z], $o\b)|, $o\b" "$T/h" && ok ||
            bad "README's table: $c $o is not in redistplan $c --help"
    done
done <"$T/rows"

# 3. README's C snippet
"$SNIPPET" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/err" ] && ok || bad "README C snippet: exit $rc: $(cat "$T/err")"
printf 'step 1: all_to_all\npeak 16777216 bytes\n' | cmp -s - "$T/out" && ok ||
    bad "README C snippet output: $(cat "$T/out")"

# 4. README's transcripts
python3 "$ROOT/tests/cli/doc_transcripts.py" "$RP" "$ROOT" "$ROOT/README.md" && ok ||
    bad "README transcripts"

finish test_docs
