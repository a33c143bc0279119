#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install what is missing,
# build, and plan an example redistribution from specs/.
# usage: scripts/plan-example.sh [SPEC] [redistplan plan options...]
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh plan
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
spec=${1:-specs/megatron-col-to-row-parallel.json}
[ $# -gt 0 ] && shift
exec build/src/redistplan plan "$spec" "$@"
