#!/usr/bin/env bash
# redistplan under a launcher when the ranks do not all run the same
# `run` (src/cli/launch.c: the agreement's deadline):
#   1. `run --backend sim` under mpirun -np 2: refused (exit 2, the reason);
#   2. one rank is still outside MPI (it sleeps 20 s) when the others
#      start: they give up after REDIST_AGREE_TIMEOUT (2 s) naming what
#      they waited for (MPI_Init), and the job ends at once.  (A rank that
#      exits before MPI_Init instead races Open MPI's own check, which may
#      end the job first with its message.)
#   3. one rank starts MPI but never joins (mpi_idle): the others give up
#      on the agreement's first collective (after 20 s) and abort the job;
#   4. one rank runs `plan` while the others `run`: every rank ends with
#      plan's refusal, at once;
#   5. a REDIST_AGREE_TIMEOUT that is not a number: a warning, the run
#      works with the default.
# Every case is bounded by `timeout`, well above the 2 s deadline: a hang
# fails the case.
# usage: launch_cli.sh MPIRUN REDISTPLAN MPI_IDLE [MPIRUN ARGS...]
set -u
mpirun=$1
rp=$2
idle=$3
shift 3
cd "$(dirname "$0")/../.." || exit 1 # the source root: specs/
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; sed 's/^/    /' "$T/err" | head -8; }

R=(run - --mesh x=3 --shape 6x6 --from 'x|' --to '|x' --backend mpi)
# rank 1 runs "$@" of the case, every other rank redistplan "${R[@]}"
cat >"$T/mixed.sh" <<EOS
#!/usr/bin/env bash
if [ "\$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "\$@"; fi
exec "$rp" $(printf "'%s' " "${R[@]}")
EOS
chmod +x "$T/mixed.sh"

# case NAME WANT_RC PATTERN NP CMD...: run under mpirun with a 2 s deadline
case_() {
    local name=$1 want=$2 pat=$3 np=$4
    shift 4
    local t0=$SECONDS
    REDIST_AGREE_TIMEOUT=${AGREE:-2} timeout 60 "$mpirun" "$@" -x REDIST_AGREE_TIMEOUT \
        -np "$np" "${CMD[@]}" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ $rc -eq 124 ]; then bad "$name: hangs"; return; fi
    if [ "$want" = nonzero ] && [ $rc -ne 0 ] || [ "$want" = "$rc" ]; then ok; else
        bad "$name: exit $rc, want $want"
        return
    fi
    grep -qE -- "$pat" "$T/err" && ok || bad "$name: no message /$pat/"
    echo "$name: exit $rc in $((SECONDS - t0)) s"
}

CMD=("$rp" run specs/megatron-col-to-row-parallel.json --backend sim --shrink)
AGREE=30 case_ "sim under mpirun" 2 '^redistplan: run: --backend sim runs every device in one process, but a launcher started 2 ranks' 2 "$@"
[ "$(grep -c 'backend sim runs' "$T/err")" -eq 1 ] && ok || bad "sim under mpirun: not one message"

CMD=("$T/mixed.sh" sleep 20)
case_ "a rank never reaches MPI_Init" nonzero 'rank 0 waited 2 s for every rank to start \(MPI_Init\).*some rank never joined' 3 "$@"

# (20 s: MPI_Init itself, under the same deadline, takes seconds on a
# loaded machine)
CMD=("$T/mixed.sh" "$idle" 50)
AGREE=20 case_ "a rank in MPI never joins" nonzero 'rank [02] waited 20 s for every rank to report whether it failed .*aborting the job' 3 "$@"

CMD=("$T/mixed.sh" "$rp" plan specs/megatron-col-to-row-parallel.json)
AGREE=30 case_ "plan beside run" 2 '^redistplan: run: rank 1: plan: runs in one process, not under a launcher of 3 ranks' 3 "$@"
grep -q '^redistplan: plan: runs in one process' "$T/err" && ok || bad "plan beside run: rank 1's own message"

CMD=("$rp" "${R[@]}")
AGREE=soon case_ "REDIST_AGREE_TIMEOUT=soon" 0 'REDIST_AGREE_TIMEOUT: not a number of seconds \(> 0\): "soon"; waiting 60 s' 3 "$@"
grep -q 'result    exact: 3 ranks' "$T/out" && ok || bad "REDIST_AGREE_TIMEOUT=soon: the run"

echo "launch_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
