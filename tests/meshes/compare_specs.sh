#!/bin/bash
# oracle.py compare on every spec of a folder: PYTHON ORACLE REDISTPLAN DIR.
# Fails when any plan is invalid, states a figure wrongly, or is worse
# than the exhaustive search's optimum.
py=$1 oracle=$2 redistplan=$3 dir=$4
bad=0 n=0
for spec in "$dir"/*.json; do
    n=$((n + 1))
    if ! "$py" "$oracle" compare "$spec" --redistplan "$redistplan"; then
        bad=$((bad + 1))
    fi
done
echo "meshes-model-specs: $n specs, $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
