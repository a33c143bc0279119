#!/usr/bin/env bash
# Regenerate the golden plan JSON and error messages after a deliberate
# change of output.  usage: scripts/update-golden.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/.."
RP=$(realpath "${1:-build}")/src/redistplan
for s in specs/*.json; do
    b=$(basename "$s" .json)
    if "$RP" plan "$s" --json >"tests/specs/golden/$b.plan.json" 2>/dev/null; then :; else
        rm -f "tests/specs/golden/$b.plan.json"
    fi
done
cd tests/specs/invalid
for f in *.json; do
    "$RP" plan "$f" 2>&1 >/dev/null | sed 's/^redistplan: //' >"${f%.json}.msg" || true
done
