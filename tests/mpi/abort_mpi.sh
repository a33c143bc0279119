#!/bin/bash
# A failure on one rank in the middle of a run ends every rank, never a
# hang (abort_mpi.c; include/redist/mpi.h, FAILURE).
# Usage: abort_mpi.sh MPIRUN ABORT_MPI [MPIRUN ARGS...]
# For each mode (plan, prepared, set, meshes): K = 0 must pass with exact
# results; K = 1, 2 (rank 1's first or second op failing) must end the
# job within LIMIT seconds with a non-zero exit and rank 1's line
# "redist: device 1 failed in the middle of a plan".  noabort: rank 1
# must return the injected error (REDIST_MPI_NO_ABORT).
set -u
mpirun=$1 prog=$2
shift 2
LIMIT=${ABORT_LIMIT:-60}
fails=0
run() { # MODE K -> output in $out, exit status in $rc
    out=$(timeout -k 5 "$LIMIT" "$mpirun" "$@" -np 4 "$prog" "$mode" "$k" 2>&1)
    rc=$?
}
for mode in plan prepared set meshes noabort; do
    for k in 0 1 2; do
        [ "$mode" = noabort ] && [ "$k" = 2 ] && continue
        run "$@"
        what="$mode K=$k"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            echo "FAIL $what: HANG (no end within ${LIMIT}s)"; fails=$((fails + 1))
        elif [ "$k" = 0 ]; then
            if [ "$rc" != 0 ]; then
                echo "FAIL $what: exit $rc without a failure"; echo "$out"
                fails=$((fails + 1))
            else echo "ok   $what: exact"; fi
        elif [ "$mode" = noabort ]; then
            if [ "$rc" = 0 ] || ! grep -q "rank 1 returned: .*injected" <<<"$out"; then
                echo "FAIL $what: rank 1 did not return the error (exit $rc)"
                echo "$out"; fails=$((fails + 1))
            else echo "ok   $what: returned on rank 1"; fi
        elif [ "$rc" = 0 ] ||
             ! grep -q "redist: device 1 failed in the middle of a plan.*injected" <<<"$out"; then
            echo "FAIL $what: exit $rc, no abort message"; echo "$out"
            fails=$((fails + 1))
        else
            echo "ok   $what: ended (exit $rc)"
        fi
    done
done
exit $((fails > 0))
