#!/usr/bin/env bash
# Install what redist needs on Debian 12 (only the packages that are
# missing).  usage: scripts/setup.sh [plan|test|bench]
#   plan   compiler, meson, jansson, python3-dev (plan with redistplan or
#          the Python package)
#   test   + MPI, OpenSHMEM, hwloc, clang (fuzzer, sanitizers), python3,
#          the Python package's build and tests (python3-dev, numpy,
#          mpi4py, pytest), iproute2 (network namespaces of the
#          multihost suite)
#   bench  + gnuplot, ScaLAPACK
set -eu
profile=${1:-plan}
pkgs="gcc libc6-dev meson ninja-build pkg-config libjansson-dev python3-dev"
case "$profile" in
plan) ;;
test) pkgs="$pkgs libopenmpi-dev openmpi-bin libhwloc-dev clang libclang-rt-14-dev python3 valgrind python3-numpy python3-mpi4py python3-pytest iproute2" ;;
bench) pkgs="$pkgs libopenmpi-dev openmpi-bin libhwloc-dev python3 gnuplot-nox libscalapack-openmpi-dev python3-numpy python3-mpi4py" ;;
*) echo "usage: scripts/setup.sh [plan|test|bench]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
