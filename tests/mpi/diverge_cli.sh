#!/bin/bash
# Rank divergence of `redistplan run` and `redistplan calibrate` under a
# launcher: one rank (rank 1 of 3) is given different arguments or
# environment.  Every case must end, within TIMEOUT seconds (a hang is a
# failure, reported as HANG), with exit 2 on every rank and a clear error
# on every rank:
#   fp     the ranks were given the same command but for one option: every
#          rank prints "the ranks disagree on FIELD: rank 1 has ...";
#   local  rank 1 fails on its own (a bad value, a bad spec): rank 1 prints
#          its own reason, every other rank "rank 1: <that reason>".
# The cases cover every option of the help texts: the options of `run`
# (its own, the backends', the cost and the inline spec options) and of
# `calibrate` are read from `redistplan run --help` and `redistplan
# calibrate --help`, and an option without a case fails the suite, so a
# new option cannot skip it.  Also: the same command on every rank works
# (exit 0), and a failure alike on every rank is one message (rank 0's).
#
#   diverge_cli.sh MODE LAUNCHER REDISTPLAN [LAUNCHER ARGS...]
# MODE: mpi (run --backend mpi and calibrate, under mpirun) or shmem (run
# --backend shmem, under oshrun).  DIVERGE_QUICK=1 (sanitizer builds, where
# one launch takes 5-15 s): only the cases marked Q=1, one of each kind,
# and no coverage check (the plain build makes it), with TIMEOUT 120 s.
set -u
mode=$1
launcher=$2
rp=$3
shift 3
largs=("$@" --mca mpi_yield_when_idle 1)
QUICK=${DIVERGE_QUICK:-}
TIMEOUT=${DIVERGE_TIMEOUT:-$([ -n "$QUICK" ] && echo 120 || echo 30)}
Q= # Q=1 t ...: a case of the quick run
JOBS=${DIVERGE_JOBS:-2} # launchers at a time
NP=2 # ranks of a case; NP=3 t ... for a case at 3 ranks
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ------------------------------------------------------------ the wrapper
# wrapper DIR REDISTPLAN: rank 1 runs DIR/args1 when it exists, the others
# DIR/args0 (one argument per line; a line "env:NAME=VALUE" sets the
# environment); stdout, stderr and the exit code land in DIR/{out,err,rc}.R
# (the messages are all out before any rank exits: MPI_Finalize waits for
# every rank)
cat >"$tmp/wrapper.sh" <<'EOF'
#!/bin/bash
d=$1
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
f=$d/args0
[ "$r" = 1 ] && [ -f "$d/args1" ] && f=$d/args1
envs=()
args=()
while IFS= read -r a; do
    case $a in
    env:*) envs+=("${a#env:}") ;;
    *) args+=("$a") ;;
    esac
done <"$f"
env "${envs[@]}" "$2" "${args[@]}" >"$d/out.$r" 2>"$d/err.$r"
echo "$?" >"$d/rc.$r"
exit 0 # else the launcher may kill the others before they record theirs
EOF
chmod +x "$tmp/wrapper.sh"

# -------------------------------------------------------------- helpers
ncase=0
covered=" "
bad() { # DESCRIPTION
    fail=$((fail + 1))
    echo "FAIL: $1"
}
dump() { # DIR
    for r in $(seq 0 $(($(sed -n 5p "$1/meta") - 1))); do
        echo "    rank $r: exit $(cat "$1/rc.$r" 2>/dev/null || echo -)"
        sed 's/^/      /' "$1/err.$r" 2>/dev/null | head -n 6
    done
}

# launch DIR: run the case (DIR/hang when it did not end in time)
launch() {
    local t0 t1 rc np
    np=$(sed -n 5p "$1/meta")
    t0=$(date +%s.%N)
    timeout -k 5 "$TIMEOUT" "$launcher" --allow-run-as-root --oversubscribe \
        -q "${largs[@]}" -np "$np" "$tmp/wrapper.sh" "$1" "$rp" \
        >"$1/launcher.out" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}' >"$1/seconds"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        touch "$1/hang"
    fi
}

# A case: DIR/args0 (every rank), DIR/args1 (rank 1), DIR/meta (what to
# check: KIND OPTION WANT PATTERN NP, one per line).
new_case() { # KIND OPTION WANT PATTERN
    if [ -n "$QUICK" ] && [ -z "$Q" ]; then
        d=$tmp/skipped
        rm -rf "$d"
        mkdir "$d"
        return
    fi
    ncase=$((ncase + 1))
    d=$tmp/case$ncase
    mkdir "$d"
    printf '%s\n' "$1" "$2" "$3" "$4" "$NP" >"$d/meta"
}

# t OPTION KIND PATTERN -- ARGS... [-- RANK1 ARGS...]
#   KIND fp: every rank prints "disagree on PATTERN" (an extended regex);
#   KIND local: rank 1 prints PATTERN (fixed text), the others "rank 1: "
#   then PATTERN; both: exit 2 everywhere.  Rank 1's arguments are ARGS
#   followed by RANK1 ARGS, or RANK1 ARGS alone when they begin with "=".
t() {
    local opt=$1 kind=$2 pat=$3 a
    shift 4
    covered="$covered$opt "
    new_case "$kind" "$opt" 2 "$pat"
    local base=() odd=() sep=0
    for a in "$@"; do
        if [ "$sep" = 0 ] && [ "$a" = "--" ]; then sep=1; continue; fi
        if [ "$sep" = 0 ]; then base+=("$a"); else odd+=("$a"); fi
    done
    printf '%s\n' "${base[@]}" >"$d/args0"
    if [ "${#odd[@]}" -gt 0 ] && [ "${odd[0]}" = "=" ]; then
        printf '%s\n' "${odd[@]:1}" >"$d/args1"
    else
        printf '%s\n' "${base[@]}" "${odd[@]}" >"$d/args1"
    fi
}

# same CODE DESCRIPTION ARGS...: every rank given ARGS exits CODE; with
# CODE 2 only rank 0 prints (the same message, once)
same() {
    new_case same "$2" "$1" ""
    shift 2
    printf '%s\n' "$@" >"$d/args0"
}

# check DIR: the case's outcome against its meta
check() {
    local d=$1 kind opt want pat np r ok=1 what
    { read -r kind; read -r opt; read -r want; read -r pat; read -r np; } \
        <"$d/meta"
    what="$opt ($kind) on rank 1"
    [ "$kind" = same ] && what="$opt"
    if [ -e "$d/hang" ]; then
        bad "$what: HANG (no answer in $TIMEOUT s)"
        dump "$d"
        return
    fi
    for r in $(seq 0 $((np - 1))); do
        if [ "$(cat "$d/rc.$r" 2>/dev/null)" != "$want" ]; then
            ok=0
            echo "  rank $r: exit $(cat "$d/rc.$r" 2>/dev/null || echo none), expected $want"
        fi
        case $kind in
        same)
            if [ "$want" = 2 ]; then # (the launcher's own lines aside)
                if [ "$r" = 0 ]; then grep -q '^redistplan: ' "$d/err.0" || ok=0
                else grep -q '^redistplan: ' "$d/err.$r" && ok=0; fi
            fi ;;
        fp)
            grep -Eq "the ranks disagree on ($pat): rank 1 has" \
                "$d/err.$r" || {
                ok=0
                echo "  rank $r: no \"disagree on $pat\""
            } ;;
        local)
            if [ "$r" = 1 ]; then
                grep -F -- "$pat" "$d/err.$r" | grep -vq "rank 1: " || {
                    ok=0
                    echo "  rank 1: not its own \"$pat\""
                }
            else
                grep -F "rank 1: " "$d/err.$r" | grep -Fq -- "$pat" || {
                    ok=0
                    echo "  rank $r: no \"rank 1: ...$pat\""
                }
            fi ;;
        esac
    done
    if [ "$ok" = 1 ]; then
        pass=$((pass + 1))
    else
        bad "$what: $(cat "$d/seconds") s"
        dump "$d"
    fi
}

# run every case, JOBS launchers at a time, then check them
run_cases() {
    local i
    for i in $(seq 1 "$ncase"); do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
        launch "$tmp/case$i" &
    done
    wait
    for i in $(seq 1 "$ncase"); do check "$tmp/case$i"; done
}

# the options of `redistplan CMD --help`: the first word of each option
# line ("  --shrink ...", "  -o FILE, --output FILE ...")
options_of() {
    "$rp" "$1" --help 2>&1 | grep -oE -- '^  (-[a-z]|--[a-z][a-z-]*)' |
        sed 's/^ *//' | sort -u
}

# every option of `need` has a case
coverage() { # WHAT OPTIONS...
    local what=$1 o
    shift
    [ -n "$QUICK" ] && return
    for o in "$@"; do
        case $covered in
        *" $o "*) pass=$((pass + 1)) ;;
        *) bad "$what option $o has no divergence case" ;;
        esac
    done
}

# --------------------------------------------------------------- inputs
cat >"$tmp/a.json" <<'EOF'
{"name": "a", "mesh": [["x", 3]], "shape": [6, 12], "dtype": "f32",
 "from": {"dims": [["x"], []]}, "to": {"dims": [[], ["x"]]}}
EOF
sed 's/"shape": \[6, 12\]/"shape": [12, 12]/' "$tmp/a.json" >"$tmp/b.json"
echo '{"name": "a", "mesh": [["x", 3]],' >"$tmp/broken.json"
cat >"$tmp/set.json" <<'EOF'
{"name": "s", "mesh": [["x", 2]], "arrays": [
 {"name": "a", "shape": [4, 8], "from": {"dims": [["x"], []]},
  "to": {"dims": [[], ["x"]]}},
 {"name": "b", "shape": [4, 6], "from": {"dims": [[], []], "partial": ["x"]},
  "to": {"dims": [["x"], []]}}]}
EOF
cat >"$tmp/cost.json" <<'EOF'
{"links": {"node": {"alpha": 2e-6, "beta": 3e-10}}, "gamma": 1e-10}
EOF

run_opts=($(options_of run))

if [ "$mode" = mpi ]; then
    I=(run - --mesh x=3 --shape 6x12 --from 'x|' --to '|x' --backend mpi)
    F=(run "$tmp/a.json" --backend mpi)
    Q=1 NP=3 same 0 "the same command on every rank" "${I[@]}"
    NP=3 same 2 "the same bad option on every rank" "${I[@]}" --repeat 0

    # every option given differently on rank 1
    if "$rp" run --help | grep -q -- '^  --shmem-packed'; then
        t --backend fp "the backend" -- "${I[@]}" -- --backend shmem
    fi
    t --backend local "--backend sim runs every device in one process" -- \
        "${I[@]}" -- --backend sim
    t --shrink fp "--shrink" -- "${I[@]}" -- --shrink
    t --shape fp "the spec's shape" -- "${I[@]}" -- --shape 12x12
    t --shape fp "the shape run" -- "${F[@]}" -- --shape 12x12
    t --max-bytes fp "--max-bytes" -- "${I[@]}" -- --max-bytes 64M
    t --dtype fp "the dtype" -- "${I[@]}" -- --dtype f64
    t --reduce fp "the reduction" -- "${I[@]}" -- --reduce max
    t --preserve-src fp "--preserve-src" -- "${I[@]}" -- --preserve-src
    t --fused fp "--fused" -- "${I[@]}" -- --fused
    Q=1 t --repeat fp "--repeat" -- "${I[@]}" -- --repeat 2
    t --corrupt-device fp "--corrupt-device" -- "${I[@]}" -- \
        --corrupt-device 1
    t --objective fp "the plan|--objective" -- "${I[@]}" -- \
        --objective bytes
    t --no-cross-sums fp "the plan|--no-cross-sums" -- "${I[@]}" -- \
        --no-cross-sums
    t --mesh-link fp "the plan|--mesh-link" -- "${I[@]}" -- \
        --mesh-link network
    # a set: the planning options are agreed too
    S=(run "$tmp/set.json" --backend mpi)
    t --mesh-link fp "the plans|--mesh-link" -- "${S[@]}" -- \
        --mesh-link network
    t --objective fp "the plans|--objective" -- "${S[@]}" -- \
        --objective bytes
    t --cost fp "the plans|--cost" -- "${S[@]}" -- --cost "$tmp/cost.json"
    t --cost fp "the plan|--cost" -- "${I[@]}" -- --cost "$tmp/cost.json"
    t --axis-links fp "the plan|--cost|--axis-links" -- "${I[@]}" -- \
        --axis-links x=network
    if "$rp" run --help | grep -q -- '^  --synthetic'; then # with hwloc
        t --synthetic fp "the plan|--synthetic" -- "${I[@]}" -- \
            --synthetic "pack:3 core:1"
        t --xml local "no-such.xml: cannot open" -- "${I[@]}" -- \
            --xml "$tmp/no-such.xml"
        t --rank-map local "broken.json:" -- "${I[@]}" -- \
            --rank-map "$tmp/broken.json"
    fi
    t --help fp "--help" -- "${I[@]}" -- --help
    t --max-scratch fp "--max-scratch" -- "${I[@]}" -- --max-scratch 1M
    t --mpi-packed fp "--mpi-packed" -- "${I[@]}" -- --mpi-packed
    t --mpi-native-reduce fp "--mpi-native-reduce" -- "${I[@]}" -- \
        --mpi-native-reduce
    # the spec: inline options, another file, another content
    NP=3 t --mesh fp "the mesh" -- "${I[@]}" -- --mesh x=2
    t --from fp "the source type" -- "${I[@]}" -- --from '|x'
    t --to fp "the target type" -- "${I[@]}" -- --to 'x|'
    t --from-partial fp "the source type" -- "${I[@]}" -- --from '|' \
        --from-partial x
    t --to-partial fp "the source type|the target type" -- "${I[@]}" -- \
        --from '|' --from-partial x --to '|' --to-partial x
    t --name fp "the spec name" -- "${I[@]}" -- --name other
    # uneven-dims layout options: a bad value fails on rank 1 alone
    t --from-split local "--from-split: unknown split rule" -- "${I[@]}" -- \
        --from-split bogus
    t --to-split local "--to-split: unknown split rule" -- "${I[@]}" -- \
        --to-split bogus
    t --from-blocks local "--from-blocks: dim 0 is split into 3 blocks" -- \
        "${I[@]}" -- --from-blocks '1,1|'
    t --to-blocks local "--to-blocks: dim 1 is split into 3 blocks" -- \
        "${I[@]}" -- --to-blocks '|1,1'
    # two meshes: another device order, another shape, a bad list
    M=(run - --from-mesh 'a:x=3@0-2' --to-mesh 'b:y=3@0-2' --shape 6x12
       --from 'x|' --to '|y' --backend mpi)
    Q=1 NP=3 same 0 "the same two-mesh command on every rank" "${M[@]}"
    NP=3 t --from-mesh fp "the source mesh" -- "${M[@]}" -- \
        --from-mesh 'a:x=3@2,1,0'
    NP=3 t --to-mesh fp "the target mesh" -- "${M[@]}" -- \
        --to-mesh 'b:y=3@1,2,0'
    NP=3 t --to-mesh local "--to-mesh: 2 devices listed" -- "${M[@]}" -- \
        --to-mesh 'b:y=3@0-1'
    NP=3 t --from-mesh local "give --mesh" -- "${M[@]}" -- --mesh x=3
    t SPEC fp "the spec's shape" -- "${F[@]}" -- = \
        run "$tmp/b.json" --backend mpi
    # rank 1 fails on its own, before MPI would have started
    Q=1 NP=3 t SPEC local "cannot open" -- "${F[@]}" -- = \
        run "$tmp/missing.json" --backend mpi
    t SPEC local "JSON syntax error" -- "${F[@]}" -- = \
        run "$tmp/broken.json" --backend mpi
    t --repeat local "--repeat: not a count" -- "${I[@]}" -- --repeat 0
    Q=1 t --bogus local "unknown option --bogus" -- "${I[@]}" -- --bogus
    t --backend local "unknown backend" -- "${I[@]}" -- --backend gpu
    # a dim that does not divide is a valid (uneven) spec: rank 1's shape
    # differs from the others'
    t --shape fp "the spec's shape" -- "${I[@]}" -- --shape 7x12
    t --shape local "not a positive integer" -- "${I[@]}" -- --shape 7x0
    # uneven layouts (the plan hash covers them)
    U=(run - --mesh x=3 --shape 7x13 --from 'x|' --to '|x' --backend mpi)
    t --from-split fp "the plan" -- "${U[@]}" -- --from-split balanced
    t --to-split fp "the plan" -- "${U[@]}" -- --to-split balanced
    t --from-blocks fp "the plan" -- "${U[@]}" -- --from-blocks '0,3,4|'
    t --to-blocks fp "the plan" -- "${U[@]}" -- --to-blocks '|5,4,4'
    Q=1 t --max-bytes local "over --max-bytes" -- "${I[@]}" -- --max-bytes 1
    t --axis-links local "--axis-links" -- "${I[@]}" -- --axis-links x=moon
    t --max-scratch local "--max-scratch: not a byte count" -- "${I[@]}" -- \
        --max-scratch 0
    t --mpi-packed local "need --backend mpi" -- "${I[@]}" -- \
        --backend sim --mpi-packed
    t --reduce local "unknown op" -- "${F[@]}" -- --reduce avg
    mpi_opts=()
    for o in "${run_opts[@]}"; do
        case $o in --shmem-*) ;; *) mpi_opts+=("$o") ;; esac
    done
    coverage run "${mpi_opts[@]}"

    # calibrate (built with MPI and hwloc)
    if "$rp" calibrate --help 2>&1 | grep -q 'not in this build'; then
        echo "calibrate: not in this build (no hwloc): its cases skipped"
    else
        C=(calibrate -o "$tmp/c.json" --sizes 8,1K --reps 2)
        same 0 "calibrate: the same command on every rank" "${C[@]}" --quiet
        t -o fp "-o" -- "${C[@]}" -- -o "$tmp/d.json"
        t --sizes fp "--sizes" -- "${C[@]}" -- --sizes 8,2K
        Q=1 t --reps fp "--reps" -- "${C[@]}" -- --reps 3
        t --quiet fp "--quiet" -- "${C[@]}" -- --quiet
        t --rank-map-out fp "--rank-map-out" -- "${C[@]}" -- \
            --rank-map-out "$tmp/rm.json"
        t --help fp "--help" -- "${C[@]}" -- --help
        t --reps local "--reps: not a count" -- "${C[@]}" -- --reps 0
        t --sizes local "--sizes: expected" -- "${C[@]}" -- --sizes 8
        t --bogus local "unknown option --bogus" -- "${C[@]}" -- --bogus
        coverage calibrate $(options_of calibrate)
    fi
else
    I=(run - --mesh x=3 --shape 6x12 --from 'x|' --to '|x' --backend shmem)
    Q=1 NP=3 same 0 "the same command on every PE" "${I[@]}"
    Q=1 NP=3 same 2 "a symmetric heap too small on every PE" \
        env:SMA_SYMMETRIC_SIZE=2M "${I[@]}" --shape 3x786432 --dtype f64
    t --shmem-packed fp "--shmem-packed" -- "${I[@]}" -- --shmem-packed
    t --shmem-no-ptr fp "--shmem-no-ptr" -- "${I[@]}" -- --shmem-no-ptr
    Q=1 t --shmem-private fp "--shmem-private" -- "${I[@]}" -- --shmem-private
    t --shmem-work fp "--shmem-work" -- "${I[@]}" -- --shmem-work 4K
    t --shmem-work local "--shmem-work: not a byte count" -- "${I[@]}" -- \
        --shmem-work 0
    t --shmem-private local "need --backend shmem" -- "${I[@]}" -- \
        --backend sim --shmem-private
    Q=1 NP=3 t SMA_SYMMETRIC_SIZE fp "the symmetric heap size \(SMA_SYMMETRIC_SIZE\)" \
        -- "${I[@]}" -- = env:SMA_SYMMETRIC_SIZE=2M "${I[@]}"
    t --backend fp "the backend" -- "${I[@]}" -- --backend mpi
    t --backend local "--backend sim runs every device in one process" -- \
        "${I[@]}" -- --backend sim
    t --repeat fp "--repeat" -- "${I[@]}" -- --repeat 2
    t --preserve-src fp "--preserve-src" -- "${I[@]}" -- --preserve-src
    t --mesh fp "the mesh" -- "${I[@]}" -- --mesh x=2
    t --from-split fp "the plan" -- run - --mesh x=3 --shape 7x13 \
        --from 'x|' --to '|x' --backend shmem -- --from-split balanced
    Q=1 t --repeat local "--repeat: not a count" -- "${I[@]}" -- --repeat x
    shmem_opts=()
    for o in "${run_opts[@]}"; do
        case $o in --shmem-*) shmem_opts+=("$o") ;; esac
    done
    coverage run "${shmem_opts[@]}"
fi

run_cases
echo "diverge_cli $mode${QUICK:+ (quick)}: $ncase cases at 2 or 3 ranks, $pass passed, $fail failed"
[ "$fail" -eq 0 ]
