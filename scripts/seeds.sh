#!/usr/bin/env bash
# Run the random suites of two meshes and many arrays over many seeds.
# The test suite runs each at fixed seeds; other seeds draw other specs,
# and every failure found this way so far was a real bug or a claim too
# strong.  usage: scripts/seeds.sh [FIRST [LAST [BUILD]]]
# (default seeds 1000..1019, build directory `build`).  For each seed:
#   sim     test_meshes 100 cases, test_sets 100 cases
#   mpi     test_meshes_mpi at 5 ranks, test_sets_mpi at 3 and 7 ranks
#   shmem   test_meshes_shmem at 3 and 8 PEs, test_sets_shmem at 4 and 6
# (oversubscribed on a small machine), each under a timeout: a run that
# hangs is reported as one (exit 124).  Prints each failing run's command
# and its first lines of output, then a summary; exits 1 if any failed.
# Reproduce one by its command; the MPI and OpenSHMEM two-mesh tests
# print runs over max(src_d, dst_d) with RP_SHOW_OVER=1 (and their plans
# with RP_SHOW_PLAN=1 too).
set -u
cd "$(dirname "$0")/.."
first=${1:-1000}
last=${2:-1019}
build=${3:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_osc=^rdma REDIST_AGREE_TIMEOUT=60
launch="--oversubscribe -q --mca btl self,vader"
runs=0
fails=0
one() { # timeout-seconds command...
    local secs=$1
    shift
    local out rc
    out=$(timeout "$secs" "$@" 2>&1)
    rc=$?
    runs=$((runs + 1))
    if [ $rc -ne 0 ]; then
        fails=$((fails + 1))
        echo "FAIL (exit $rc): $*"
        echo "$out" | grep -v "^mpi meshes\|^two-mesh plans" | head -5 |
            sed 's/^/    /'
    fi
}
for seed in $(seq "$first" "$last"); do
    one 300 "$build/tests/exec/test_meshes" 100 "$seed"
    one 300 "$build/tests/exec/test_sets" 100 "$seed"
    if [ -x "$build/tests/mpi/test_meshes_mpi" ]; then
        one 120 mpirun $launch -np 5 "$build/tests/mpi/test_meshes_mpi" 20 "$seed"
        for np in 3 7; do
            one 120 mpirun $launch -np $np "$build/tests/mpi/test_sets_mpi" 20 "$seed"
        done
    fi
    if [ -x "$build/tests/shmem/test_meshes_shmem" ]; then
        for np in 3 8; do
            one 120 oshrun $launch -np $np "$build/tests/shmem/test_meshes_shmem" 20 "$seed"
        done
        for np in 4 6; do
            one 120 oshrun $launch -np $np "$build/tests/shmem/test_sets_shmem" 20 "$seed"
        done
    fi
done
echo "seeds $first..$last: $runs runs, $fails failed"
[ $fails -eq 0 ]
