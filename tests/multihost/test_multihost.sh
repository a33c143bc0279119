#!/usr/bin/env bash
# The MPI backend across hosts: run inside a cluster of 4 hosts
# (cluster.sh --hosts 4), one Open MPI job per case, launched by mpirun.sh
# (rsh launcher, agent.sh; tcp between hosts, vader within one).
#
#   test_multihost.sh REDISTPLAN TEST_MPI SPECDIR [full]
#
#  1. placement: every job's ranks write where they run (where.sh); rank r
#     must run on host mh(r / K) (K ranks per host), in that host's
#     network namespace (the inode of /run/netns/...), at its address.
#     Every run on 2 hosts or more prints the host map its ranks
#     discovered (redist_mpi_discover_hosts): it must be the layout's;
#     test_hosts ($MH_TEST_HOSTS) checks the call itself on 3 hosts x 2.
#     One all_gather moves 2 MiB into a host: its veth must carry them.
#     The same job with btls self,vader only must fail: ranks on two hosts
#     cannot reach each other by shared memory (they are two nodes to
#     Open MPI).
#  2. every spec of SPECDIR, its mesh divided (largest axis first, by its
#     smallest prime factor) until it fits the layout, its shape shrunk
#     (--shrink), run with --backend mpi, exact on every rank; the layouts
#     (2, 3, 4 hosts x 1, 2 ranks) and the modes (packed, native
#     reductions) rotate over the specs.  `full`: every spec at up to 8
#     ranks, 2 per host, and again 1 per host when it has 4 ranks or fewer.
#  2b. two meshes and many arrays: every two-mesh spec of SPECDIR/meshes
#     (--shrink) on its device count spread over the hosts (4 hosts x 2,
#     2 hosts x 2 for 4 devices; `full`: also 4 hosts x 3), and a shrunk Llama
#     train-to-inference set (12 arrays, two meshes, scripts/model_spec.py)
#     on 4 hosts x 2: exact on every rank.
#  3. random plans (tests/mpi/test_mpi ... random): 3 hosts x 1 and
#     4 hosts x 2 (`full`: every layout, more cases).
#  4. calibrate on 2 hosts x 2 with mh0's and mh1's links limited to
#     100 Mbit/s (tc tbf): the network level measured near that rate, a
#     level within a host separately and much faster (skipped, with a
#     line, without tc);
#  5. a host dies mid-run: its processes are killed, or its link is set
#     down; the job must end on the survivors with Open MPI's message, an
#     error exit and no process left, in seconds (not at the timeout).
# Prints one line per job with its time; ends "N passed, M failed".
set -u
rp=$1
tmpi=$2
specdir=$3
full=${4:-}
limit=120 # seconds per job (the machine may be loaded)
[ -n "$full" ] && limit=300
here=$(cd "$(dirname "$0")" && pwd)
: "${MH_PREFIX:?run under cluster.sh}" "${MH_DIR:?}" "${MH_HOSTS:?}"
[ "$MH_HOSTS" -ge 4 ] || { echo "test_multihost.sh: needs 4 hosts, not $MH_HOSTS"; exit 2; }
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
inode=() # of each host's network namespace
for ((h = 0; h < MH_HOSTS; h++)); do inode[h]=$(stat -L -c %i "/run/netns/$MH_PREFIX-h$h"); done
rx() { # HOST: bytes received on its eth0
    ip netns exec "$MH_PREFIX-h$1" cat /sys/class/net/eth0/statistics/rx_bytes
}

# job TAG K NP PROGRAM [ARG...]: PROGRAM on NP ranks, K per host, under
# a timeout of $limit s; sets out, rc, ms, hosts and why ("exit N" or
# "timed out"); checks the placement when the job started
job() {
    local tag=$1 per=$2 np=$3 h r line want
    shift 3
    hosts=$(((np + per - 1) / per))
    rm -f "$MH_DIR"/where.*
    local t0
    t0=$(now_ms)
    out=$(timeout -k 5 "$limit" "$MH_MPIRUN" --per-host "$per" -np "$np" \
        "$here/where.sh" "$MH_DIR" "$@" 2>&1)
    rc=$?
    ms=$(($(now_ms) - t0))
    why="exit $rc"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="timed out after ${limit}s"; return; fi
    for ((r = 0; r < np; r++)); do
        h=$((r / per))
        want="$r mh$h ${inode[h]} 198.18.0.$((h + 1))/24"
        line=
        [ -f "$MH_DIR/where.$r" ] && read -r line <"$MH_DIR/where.$r"
        if [ "$line" != "$want" ]; then
            bad "$tag: rank $r ran at '$line', not '$want' (rank, host, netns, address)"
            return
        fi
    done
    ok
}

# want_map NP K: the host of each rank, as `redistplan run` prints what
# every rank discovered (rank r on host r / K)
want_map() {
    local r m=
    for ((r = 0; r < $1; r++)); do m="$m${m:+ }$((r / $2))"; done
    echo "$m"
}

# expect_ok TAG K NP ARGS...: `redistplan run ARGS` exact on NP ranks;
# on 2 hosts or more, the hosts discovered at run time must be the
# layout's (redist_mpi_discover_hosts, printed by run)
expect_ok() {
    local tag=$1 per=$2 np=$3 map
    shift 3
    job "$tag" "$per" "$np" "$rp" run "$@" --backend mpi
    map="hosts     $hosts discovered, host of each rank: $(want_map "$np" "$per")"
    if [ "$rc" -eq 0 ] && [[ $out == *"exact: $np ranks"* ]] &&
       { [ "$hosts" -eq 1 ] || [[ $out == *"$map"* ]]; }; then
        ok
        printf '  %-58s %d hosts x %d  %5d ms\n' "$tag" "$hosts" "$per" "$ms"
    else
        bad "$tag on $hosts hosts x $per: $why (expected exact and '$map')"
        echo "$out" | sed 's/^/    /'
    fi
}

echo "[${SECONDS}s] placement"
# 2 MiB of f32 gathered by each of 2 ranks on 2 hosts
gather=(- --mesh x=2 --shape 1048576 --from x --to '')
rx0=$(rx 0) rx1=$(rx 1)
expect_ok "all_gather of 4 MiB, 2 hosts" 1 2 "${gather[@]}"
rx0=$(($(rx 0) - rx0)) rx1=$(($(rx 1) - rx1))
if [ "$rx0" -ge 2097152 ] && [ "$rx1" -ge 2097152 ]; then ok; else
    bad "the veths of mh0, mh1 received $rx0, $rx1 bytes: less than the 2 MiB each rank gathered"; fi
echo "  bytes received on the veths of mh0, mh1: $rx0, $rx1"
# Open MPI 4.1's mpirun may crash while it forwards that message
# ("ORTE_ERROR_LOG: Data unpack had inadequate space in file
# .../show_help.c"): then the job has failed all the same.  Messages
# printed as they come (not aggregated) make the crash rarer.
MH_BTL=self,vader OMPI_MCA_orte_base_help_aggregate=0 \
    job "btl self,vader only" 1 2 "$rp" run "${gather[@]}" --backend mpi
if [ "$rc" -ne 0 ] && [[ $out != *"exact:"* ]] &&
   [[ $out == *"unable to reach each other"* || $out == *"show_help.c"* ]]; then ok; else
    bad "btl self,vader across 2 hosts: $why, expected Open MPI's 'unable to reach each other'"
    echo "$out" | sed 's/^/    /'
fi

# the library's own discovery (redist_mpi_discover_hosts): rank r on
# mh(r / 2), a sub-communicator's hosts renumbered, failures on one rank
# fail every rank (test_hosts.c)
if [ -n "${MH_TEST_HOSTS:-}" ]; then
    job "hosts discovered" 2 6 "$MH_TEST_HOSTS" 2
    if [ "$rc" -eq 0 ] && [[ $out == *"6 ranks on 3 hosts: ok"* ]]; then
        ok
        printf '  %-58s %d hosts x %d  %5d ms\n' "hosts discovered (test_hosts)" "$hosts" 2 "$ms"
    else
        bad "test_hosts on 3 hosts x 2: $why"
        echo "$out" | sed 's/^/    /'
    fi
fi

echo "[${SECONDS}s] specs (mesh divided to fit, --shrink)"
# shrink: lines "SPEC MAXDEV OUT" in, lines "OUT DEVICES MESH" out: SPEC
# with its mesh divided until it has at most MAXDEV devices, or the fewest
# with no axis below 2 (when that is 8 or fewer): the largest axis that
# stays at 2 or more first, by its smallest prime factor (6 -> 3), then
# axes to 1 when MAXDEV needs it.  OUT has no expect block (its figures are SPEC's).
# One python3 for all specs (its start is slow on some machines).
shrink() {
    python3 -c '
import json, sys
def spf(n):
    return next(p for p in range(2, n + 1) if n % p == 0)
def floor(n):  # the last size above 1 that dividing n by spf reaches
    while n > spf(n):
        n //= spf(n)
    return n
for line in sys.stdin:
    path, cap, out = line.split()
    spec = json.load(open(path))
    mesh = spec["mesh"]
    def devices():
        n = 1
        for _, s in mesh:
            n *= s
        return n
    least = 1
    for _, s in mesh:
        least *= floor(s) if s > 1 else 1
    cap = max(int(cap), least if least <= 8 else 1)
    while devices() > cap:
        keep = [a for a in mesh if a[1] > 1 and a[1] > spf(a[1])]
        axis = max(keep or [a for a in mesh if a[1] > 1], key=lambda a: a[1])
        axis[1] //= spf(axis[1])
    spec.pop("expect", None)
    json.dump(spec, open(out, "w"))
    print(out, devices(), ",".join("%s=%d" % (n, s) for n, s in mesh))
'
}
# the runs: "SPEC MAXDEV OUT K MODE..." (K ranks per host)
layouts=("2 1" "4 2" "3 1" "2 2" "4 1" "3 2")
modes=("" "--mpi-packed" "--mpi-native-reduce --preserve-src" "--mpi-packed --mpi-native-reduce")
runs=()
i=0
for f in "$specdir"/*.json; do
    mode=${modes[i % ${#modes[@]}]}
    file=$MH_DIR/$(basename "$f")
    if [ -n "$full" ]; then
        runs+=("$f 8 $file 2 $mode" "$f 4 $file.4 1 $mode")
    else
        read -r hn per <<<"${layouts[i % ${#layouts[@]}]}"
        runs+=("$f $((hn * per)) $file $per $mode")
    fi
    i=$((i + 1))
done
declare -A devs meshes
while read -r file np mesh; do
    devs[$file]=$np
    meshes[$file]=$mesh
done < <(printf '%s\n' "${runs[@]}" | cut -d' ' -f1-3 | shrink)
last=
for run in "${runs[@]}"; do
    read -r f _ file per mode <<<"$run"
    name=$(basename "$f" .json)
    np=${devs[$file]:-}
    mesh=${meshes[$file]:-}
    [ -n "$np" ] || { bad "$name: cannot divide its mesh"; continue; }
    # the divided mesh may not fit the layout: 2 per host beyond 4
    # ranks, 1 per host below 4
    [ "$np" -gt 4 ] && per=2
    [ "$np" -lt 4 ] && per=1
    [ "$name $mesh $per" = "$last" ] && continue # full: no second run
    last="$name $mesh $per"
    if [ "$name" = partial-target-not-in-source ]; then
        job "$name" "$per" "$np" "$rp" run "$file" --backend mpi --shrink
        if [ "$rc" -eq 2 ] && [[ $out == *"partial in the target but not in the source"* ]]; then
            ok; printf '  %-58s %d hosts x %d  %5d ms\n' "$name (no plan: exit 2)" "$hosts" "$per" "$ms"
        else bad "$name: $why, expected exit 2 and its reason"; echo "$out" | sed 's/^/    /'; fi
        continue
    fi
    # shellcheck disable=SC2086
    expect_ok "$name $mesh $mode" "$per" "$np" "$file" --shrink --max-bytes 2000000 $mode
done

echo "[${SECONDS}s] two meshes and many arrays"
# expect_exact TAG K NP ARGS...: `redistplan run ARGS` exact on NP ranks
expect_exact() {
    local tag=$1 per=$2 np=$3
    shift 3
    job "$tag" "$per" "$np" "$rp" run "$@" --backend mpi
    if [ "$rc" -eq 0 ] && [[ $out == *"result    exact: "*"$np ranks"* ]]; then
        ok
        printf '  %-58s %d hosts x %d  %5d ms\n' "$tag" "$hosts" "$per" "$ms"
    else
        bad "$tag on $hosts hosts x $per: $why (expected exact)"
        echo "$out" | sed 's/^/    /'
    fi
}
for f in "$specdir"/meshes/*.json; do
    np=$("$rp" plan --json "$f" | python3 -c \
        'import json,sys; print(len(json.load(sys.stdin)["stats"]["peak_bytes_per_device"]))')
    per=1
    if [ $((np % 4)) -eq 0 ]; then per=$((np / 4)); elif [ $((np % 2)) -eq 0 ]; then per=$((np / 2)); fi
    [ "$np" -eq 4 ] && per=2
    # 12 ranks (4 hosts x 3): `full` only; once, on a machine at load 20,
    # such a job printed its exact results and then never ended
    [ "$np" -gt 8 ] && [ -z "$full" ] && continue
    expect_exact "meshes/$(basename "$f" .json)" "$per" "$np" "$f" --shrink --max-bytes 2000000
    # training on ranks 0-3 (hosts 0 and 1), inference on 4-7 (hosts 2
    # and 3): planned again with the link between the meshes on the
    # network level (and the source axis that spans hosts)
    case $(basename "$f") in
    weight-sync-q-proj-fsdp-tp-to-tp4.json)
        if [[ $out == *"hosts     4 discovered, host of each rank: 0 0 1 1 2 2 3 3"* ]] &&
           [[ $out == *"network   axes across hosts: "*"the link between the meshes; planned again"* ]]; then ok; else
            bad "meshes/$(basename "$f" .json): not planned again with the meshes' link on the network level"
            echo "$out" | sed 's/^/    /'
        fi ;;
    esac
done
if python3 "$here/../../scripts/model_spec.py" --variant train-to-infer \
    --shrink 64 --layers 1 -o "$MH_DIR/set.json"; then
    expect_exact "arrays/llama8b-sync-train-to-infer (12 arrays)" 2 8 "$MH_DIR/set.json"
    # every array between the same two meshes: planned again with dp and
    # the link between the meshes on the network level
    if [[ $out == *"network   axes across hosts: dp, the link between the meshes; planned again"* ]]; then ok; else
        bad "arrays/llama8b-sync-train-to-infer: not planned again with the meshes' link on the network level"
        echo "$out" | sed 's/^/    /'
    fi
else
    bad "scripts/model_spec.py failed"
fi
# a set of one-mesh arrays on dp=2 x tp=2, 2 hosts x 2: dp spans the
# hosts, so the set is planned again with dp on the network level
expect_exact "arrays/mlp-block-resharded (5 arrays)" 2 4 "$specdir/arrays/mlp-block-resharded.json"
if [[ $out == *"hosts     2 discovered, host of each rank: 0 0 1 1"* ]] &&
   [[ $out == *"network   axes across hosts: dp; planned again"* ]]; then ok; else
    bad "arrays/mlp-block-resharded: not planned again with dp on the network level"
    echo "$out" | sed 's/^/    /'
fi

echo "[${SECONDS}s] random plans (test_mpi random)"
if [ -n "$full" ]; then rand=("2 1 100" "3 1 100" "4 1 100" "2 2 100" "3 2 40" "4 2 40")
else rand=("3 1 30" "4 2 12"); fi
for c in "${rand[@]}"; do
    read -r hn per n <<<"$c"
    job "random $hn x $per" "$per" $((hn * per)) "$tmpi" "$n" $((hn * 10 + per)) random
    if [ "$rc" -eq 0 ] && [[ $out == *", 0 failed;"* ]]; then
        ok
        printf '  %-58s %d hosts x %d  %5d ms\n' "$(echo "$out" | grep -o '[0-9]* cases')" "$hosts" "$per" "$ms"
    else
        bad "random plans on $hn hosts x $per: $why"
        echo "$out" | sed 's/^/    /'
    fi
done

echo "[${SECONDS}s] calibrate across hosts on limited links"
# mh0's and mh1's links limited to 100 Mbit/s (tc tbf at both ends, as
# cluster.sh --link does); calibrate on 2 hosts x 2 must measure the
# network level (ranks 0-2) near that rate, at most 1.3x it (the token
# bucket lets a 128 KiB burst through at once), and a level
# within a host separately, at least 2x faster (shared memory between
# oversubscribed ranks: 0.2 to 9 GB/s under load); the limits are then
# lifted.  Without tc: one line says so, and the check is not counted.
limit_links() { # add|del
    local h q=(root)
    [ "$1" = add ] && q=(root tbf rate 100mbit burst 128kb latency 200ms)
    for h in 0 1; do
        ip netns exec "$MH_PREFIX-h$h" tc qdisc "$1" dev eth0 "${q[@]}" &&
            ip netns exec "$MH_PREFIX-sw" tc qdisc "$1" dev "vh$h" "${q[@]}" || return 1
    done
}
if ! command -v tc >/dev/null 2>&1 || ! limit_links add 2>/dev/null; then
    echo "  skipped: cannot limit the links (no tc, or no tbf queueing discipline)"
    limit_links del 2>/dev/null
else
    job "calibrate on limited links" 2 4 "$rp" calibrate -o "$MH_DIR/cost.json" \
        --sizes 8,1M --reps 5 --rank-map-out "$MH_DIR/ranks.json"
    limit_links del
    verdict=$(python3 - "$MH_DIR/cost.json" "$MH_DIR/ranks.json" <<'PY' 2>&1
import json, sys
links = json.load(open(sys.argv[1]))["links"]
ranks = json.load(open(sys.argv[2]))["ranks"]
net = links.get("network")
local = [l for l in links if l != "network"]
if not net or len(local) != 1:
    sys.exit("levels %s: expected network and one level within a host" % sorted(links))
bw = 1 / net["beta"]
bw_local = 1 / links[local[0]]["beta"]
hosts = [r["host"] for r in ranks]
if hosts[0] != hosts[1] or hosts[2] != hosts[3] or hosts[0] == hosts[2]:
    sys.exit("ranks placed on hosts %s, expected 2 per host" % hosts)
if not 0.3 * 12.5e6 <= bw <= 1.3 * 12.5e6:
    sys.exit("network at %.1f MB/s, expected at most 12.5 (100 Mbit/s)" % (bw / 1e6))
if bw_local < 2 * bw:
    sys.exit("%s at %.1f MB/s, not 2x the network's %.1f" % (local[0], bw_local / 1e6, bw / 1e6))
print("network %.1f MB/s, %s %.0f MB/s" % (bw / 1e6, local[0], bw_local / 1e6))
PY
)
    if [ "$rc" -eq 0 ] && [[ $verdict == network* ]]; then
        ok
        printf '  %-58s %d hosts x %d  %5d ms\n' "calibrate: $verdict" "$hosts" 2 "$ms"
    else
        bad "calibrate on limited links: $why: $verdict"
        echo "$out" | sed 's/^/    /'
    fi
fi

echo "[${SECONDS}s] a host dies mid-run"
# die HOW: 3 hosts x 1, an all-reduce repeated for a long time; when rank
# 0 has printed its header, host mh1 dies: HOW is "kill" (its processes,
# SIGKILL) or "down" (its veth's end on the bridge)
die() {
    local how=$1 t0 t1 waited=0 h left
    rm -f "$MH_DIR"/where.* "$MH_DIR/die.out"
    t0=$(now_ms)
    timeout -k 5 60 "$MH_MPIRUN" --per-host 1 -np 3 "$here/where.sh" "$MH_DIR" \
        "$rp" run "$specdir/grad-all-reduce-data3.json" --backend mpi --shrink \
        --max-bytes 2000000 --repeat 1000000 >"$MH_DIR/die.out" 2>&1 &
    local pid=$!
    until grep -q '^  mpi ' "$MH_DIR/die.out" 2>/dev/null; do
        sleep 0.2
        waited=$((waited + 1))
        [ "$waited" -lt 150 ] && kill -0 "$pid" 2>/dev/null || break
    done
    sleep 1
    t1=$(now_ms)
    if [ "$how" = kill ]; then
        # shellcheck disable=SC2046
        kill -9 $(ip netns pids "$MH_PREFIX-h1") 2>/dev/null
    else
        ip -n "$MH_PREFIX-sw" link set vh1 down
    fi
    wait "$pid"
    rc=$?
    ms=$(($(now_ms) - t1))
    out=$(cat "$MH_DIR/die.out")
    left=
    for h in 0 1 2; do
        for _ in $(seq 25); do [ -z "$(ip netns pids "$MH_PREFIX-h$h")" ] && break; sleep 0.2; done
        [ -n "$(ip netns pids "$MH_PREFIX-h$h")" ] && left="$left mh$h"
    done
    # Open MPI says so ("lost communication"), or its launcher itself
    # crashes while reporting it (seen once: mpirun's segfault in
    # pmix_server_log / orte_rml_oob_send_buffer_nb, 30 ms after the kill;
    # a backtrace in Open MPI's runtime libraries and none in redist's)
    local told=
    [[ $out == *"ORTE has lost communication with a remote daemon"* ]] && told=1
    [[ $out == *"Signal: Segmentation fault"* && $out == *libopen-rte* &&
       $out != *libredist* && $out != *redistplan\(* ]] && told=1
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$ms" -lt 30000 ] &&
       [ -n "$told" ] && [ -z "$left" ]; then
        ok
        printf '  %-58s exit %d after %5d ms\n' "mh1 $([ "$how" = kill ] && echo "killed" || echo "link down")" "$rc" "$ms"
    else
        bad "mh1 $how: exit $rc after $ms ms (expected an error exit within 30 s, Open MPI's 'lost communication' message or its launcher's crash, no process left; left on:${left:- none})"
        echo "$out" | sed 's/^/    /'
    fi
    ip -n "$MH_PREFIX-sw" link set vh1 up
}
die kill
die down

echo "[${SECONDS}s] $pass passed, $fail failed"
[ "$fail" -eq 0 ]
