#!/usr/bin/env bash
# The network level across hosts, measured: `redistplan run --backend mpi`
# on a cluster of 2 network-namespace hosts whose links are limited with
# tc (tests/multihost/cluster.sh --link), each spec under three plans, in
# the same cluster, interleaved round by round:
#   bytes     --objective bytes (fewest bytes per device; version 1)
#   time      the time objective with the hosts discovered at run time (the
#             axes that span hosts on the network level) and the cost file
#             `redistplan calibrate` measured across the same hosts
#   time/1    the time objective with every axis on one level (what a
#             run on one host plans: --axis-links AXIS=node for each axis)
# For each: the bytes the hosts' links carried (the sum over both hosts'
# eth0 of received bytes: the data between hosts plus Open MPI's own
# traffic) and the run's time (the slowest rank's best of --repeat R
# runs), medians over N rounds with min-max, and time ratios.
#
#   bench/multihost_net.sh [--link RATE[,DELAY]] [--rounds N] [--repeat R]
#                          [--max-bytes B] [REDISTPLAN] [SPEC...]
#
# Defaults: --link 1gbit, 5 rounds, --repeat 3, --max-bytes 128M (each
# spec runs at the shape its bytes plan shrinks to under that bound, the
# same for the three plans), build/src/redistplan, the specs of
# doc/multihost.md's figures.  Needs root and what cluster.sh needs (exit 77 otherwise).
# Takes about (3 plans x specs x rounds) jobs of a few seconds each.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
link=1gbit
rounds=5
repeat=3
maxb=128M
while [ $# -gt 0 ]; do
    case $1 in
    --link) link=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --max-bytes) maxb=$2; shift 2 ;;
    --inside) shift; break ;;
    -*) echo "usage: multihost_net.sh [--link RATE[,DELAY]] [--rounds N] [--repeat R] [--max-bytes B] [REDISTPLAN] [SPEC...]" >&2; exit 2 ;;
    *) break ;;
    esac
done
if [ -z "${MH_PREFIX:-}" ]; then # start the cluster, run this script in it
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        BENCH_ROUNDS=$rounds BENCH_REPEAT=$repeat BENCH_MAXB=$maxb
    exec "$root/tests/multihost/cluster.sh" --hosts 2 --link "$link" \
        --timeout 3000 -- "$here/multihost_net.sh" --inside "$@"
fi
rp=${1:-$root/build/src/redistplan}
[ $# -gt 0 ] && shift
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("$root/specs/fsdp-rows-to-2d-columns.json"
    "$root/specs/partial-two-axes-reduce-scatter.json"
    "$root/specs/vit-attention-heads-resplit.json")
[ -x "$rp" ] || { echo "multihost_net.sh: no $rp (build first)" >&2; exit 2; }

rx() { # the bytes both hosts' eth0 received so far
    echo $(($(ip netns exec "$MH_PREFIX-h0" cat /sys/class/net/eth0/statistics/rx_bytes) +
            $(ip netns exec "$MH_PREFIX-h1" cat /sys/class/net/eth0/statistics/rx_bytes)))
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
minmax() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {print lo "-" hi}'; }

echo "# multihost_net: 2 hosts, links $MH_LINK, $BENCH_ROUNDS rounds, --repeat $BENCH_REPEAT, --max-bytes $BENCH_MAXB"
echo "# load before: $(uptime | sed 's/.*load/load/')"
cost=$MH_DIR/cost.json
"$MH_MPIRUN" --per-host 2 -np 4 "$rp" calibrate -o "$cost" --reps 10 --quiet ||
    { echo "multihost_net.sh: calibrate failed" >&2; exit 1; }
echo "# calibrate, 2 hosts x 2 ranks: $(tr -d '\n' <"$cost" | sed 's/.*"links"/"links"/')"

for spec in "${specs[@]}"; do
    name=$(basename "$spec" .json)
    read -r np node_links < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["mesh"]
n = 1
for _, s in m:
    n *= s
print(n, ",".join("%s=node" % a for a, _ in m))' "$spec")
    per=$((np / 2))
    # one shape for every plan: the bytes plan's under --shrink
    out=$("$MH_MPIRUN" --per-host "$per" -np "$np" "$rp" run "$spec" \
        --backend mpi --shrink --max-bytes "$BENCH_MAXB" --objective bytes 2>&1)
    shape=$(echo "$out" | sed -n 's/^run [^:]*: backend mpi, [0-9]* ranks, [a-z0-9]*\[\([^ ]*\)\],.*/\1/p' | tr ',' x)
    [ -n "$shape" ] || { echo "$name: no run" >&2; echo "$out" >&2; continue; }
    declare -A t=() b=() plan=()
    for ((i = 0; i < BENCH_ROUNDS; i++)); do
        for v in bytes time time/1; do
            case $v in
            bytes) opt=(--objective bytes) ;;
            time) opt=(--cost "$cost") ;;
            time/1) opt=(--cost "$cost" --axis-links "$node_links") ;;
            esac
            r0=$(rx)
            out=$("$MH_MPIRUN" --per-host "$per" -np "$np" "$rp" run "$spec" \
                --backend mpi --shape "$shape" --repeat "$BENCH_REPEAT" \
                "${opt[@]}" 2>&1)
            r1=$(rx)
            if [[ $out != *"exact: $np ranks"* ]]; then
                echo "$name $v: not exact" >&2
                echo "$out" >&2
                continue
            fi
            ms=$(echo "$out" | sed -n 's/^  time      \([0-9.]*\) ms.*/\1/p')
            t[$v]="${t[$v]:-} $ms"
            b[$v]="${b[$v]:-} $(( (r1 - r0) / 1000 ))"
            [ "$i" -eq 0 ] && plan[$v]=$(echo "$out" | sed -n 's/^  plan      \(.*\); peak.*/\1/p')
        done
    done
    echo
    echo "## $name: $np ranks, $per per host, shape $shape"
    echo "| plan | steps | kB over the links, median (min-max) | ms, median (min-max) | time / bytes's |"
    echo "|---|---|---:|---:|---:|"
    tb=$(echo "${t[bytes]:-}" | tr ' ' '\n' | sed '/^$/d' | median)
    for v in bytes time time/1; do
        tm=$(echo "${t[$v]:-}" | tr ' ' '\n' | sed '/^$/d' | median)
        bm=$(echo "${b[$v]:-}" | tr ' ' '\n' | sed '/^$/d' | median)
        printf '| %s | %s | %s (%s) | %s (%s) | %s |\n' "$v" "${plan[$v]:-}" \
            "$bm" "$(echo "${b[$v]:-}" | tr ' ' '\n' | sed '/^$/d' | minmax)" \
            "$tm" "$(echo "${t[$v]:-}" | tr ' ' '\n' | sed '/^$/d' | minmax)" \
            "$(awk -v a="$tm" -v b="$tb" 'BEGIN {if (a && b) printf "%.2fx", a / b}')"
    done
    unset t b plan
done
echo
echo "# load after: $(uptime | sed 's/.*load/load/')"
