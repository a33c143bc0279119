#!/usr/bin/env bash
# A cluster of N "hosts" on this machine, for tests that need more than
# one node: each host is a Linux network namespace with a hostname of its
# own (a UTS namespace, entered by agent.sh / mpirun.sh), joined by veth
# pairs to a bridge in a namespace of its own (the switch).  Addresses are
# 198.18.0.1 ... 198.18.0.N/24 (the benchmarking range, RFC 2544), used
# only inside these namespaces: nothing is added to this machine's own
# network namespace, and no route leads out.
#
#   cluster.sh [--hosts N] [--timeout SECS] [--link RATE[,DELAY]]
#              -- COMMAND [ARG...]
#
# --link limits every host's link, as a slower network would: each host's
# eth0 sends at most RATE, and the switch's port sends to it at most RATE
# (tc on both ends of the veth: a token bucket, `tbf`, with a 128 KiB
# burst, room for 50 ms of queue; or with DELAY, `netem` delaying what the
# host sends by DELAY at RATE).  Units as tc writes them: 1gbit, 0.2ms.
# A packet between two hosts is limited by the sender's and the
# receiver's port.  Ranks of one host share memory and are not limited.
# The queues go with the veths at teardown.
#
# sets the cluster up, runs COMMAND (in this machine's namespace, under
# `timeout SECS`, default 600) with
#   MH_PREFIX     the namespaces' prefix: $MH_PREFIX-h0 ... -h(N-1), -sw
#                 (the switch; host i's end of the bridge is vh<i> there)
#   MH_HOSTS      N
#   MH_HOSTNAMES  the hosts' names, "mh0 mh1 ..." (mh0 runs mpirun)
#   MH_DIR        a scratch folder, removed at the end
#   MH_MPIRUN     mpirun.sh: mpirun on host mh0 across the cluster
#   MH_AGENT      agent.sh: the remote shell of Open MPI's rsh launcher
#   MH_LINK       RATE[,DELAY] of --link, or empty
# and tears everything down when COMMAND ends, fails, times out, or this
# script is interrupted (INT, TERM): every process left in a namespace is
# killed, the namespaces (and with them the veths and the bridge) are
# deleted.  Namespaces of earlier runs whose script was killed outright
# (SIGKILL) are deleted at the start, with their scratch folders.
# Exit: COMMAND's status (124 on timeout); 77 with one line
# "multihost: skipped: REASON" on stderr when
# this machine cannot host namespaces (not root, no `ip` or `unshare`, no
# network namespace, veth or bridge support; no `tc`, or no netem for a
# DELAY: some kernels lack it); 2 on bad usage.
set -u
hosts=2
limit=600
link=
while [ $# -gt 0 ]; do
    case $1 in
    --hosts) hosts=${2:-}; shift 2 ;;
    --timeout) limit=${2:-}; shift 2 ;;
    --link) link=${2:-}; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: cluster.sh [--hosts N] [--timeout SECS] [--link RATE[,DELAY]] -- COMMAND..." >&2
       exit 2 ;;
    esac
done
case $hosts in [1-9]) ;; *) echo "cluster.sh: --hosts: 1 to 9, not '$hosts'" >&2; exit 2 ;; esac
case $limit in ''|*[!0-9]*) echo "cluster.sh: --timeout: seconds, not '$limit'" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "cluster.sh: no COMMAND" >&2; exit 2; }
rate=${link%%,*}
delay=
[[ $link == *,* ]] && delay=${link#*,}
if [ -n "$link" ] && ! [[ $rate =~ ^[0-9.]+[kmg]?bit$ && ( -z $delay || $delay =~ ^[0-9.]+(us|ms)$ ) ]]; then
    echo "cluster.sh: --link: RATE[,DELAY] as tc writes them (e.g. 1gbit or 1gbit,0.2ms), not '$link'" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "multihost: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
[ -z "$link" ] || command -v tc >/dev/null 2>&1 || skip "--link needs 'tc' (iproute2)"
for tool in ip unshare timeout; do
    command -v "$tool" >/dev/null 2>&1 || skip "no '$tool' command (iproute2, util-linux, coreutils)"
done

prefix=rdmh$$
sw=$prefix-sw
dir=
teardown_prefix() { # PREFIX: kill what runs in its namespaces, delete them
    local ns pids
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-"); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-"); do
        ip netns del "$ns" 2>/dev/null
    done
}
teardown() {
    trap - EXIT INT TERM
    teardown_prefix "$prefix"
    [ -n "$dir" ] && rm -rf "$dir"
}
trap teardown EXIT
child=
interrupted() {
    echo "cluster.sh: interrupted" >&2
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
    exit 130
}
trap interrupted INT TERM

# namespaces left by runs killed outright: their script is gone, a zombie
# (no command line) or another program by now
for old in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^rdmh\([0-9][0-9]*\)-sw$/\1/p'); do
    if ! tr '\0' ' ' 2>/dev/null <"/proc/$old/cmdline" | grep -q 'cluster\.sh'; then
        teardown_prefix "rdmh$old"
        rm -rf "/tmp/rdmh$old".*
    fi
done

ip netns add "$sw" 2>/dev/null || skip "cannot create a network namespace (ip netns add)"
ip -n "$sw" link set lo up
ip -n "$sw" link add br0 type bridge 2>/dev/null || skip "no bridge support (ip link add type bridge)"
ip -n "$sw" link set br0 up
names=
for ((i = 0; i < hosts; i++)); do
    ns=$prefix-h$i
    ip netns add "$ns" || { echo "cluster.sh: ip netns add $ns failed" >&2; exit 1; }
    ip -n "$ns" link set lo up
    ip -n "$sw" link add "vh$i" type veth peer name eth0 netns "$ns" 2>/dev/null ||
        skip "no veth support (ip link add type veth)"
    ip -n "$sw" link set "vh$i" master br0 up
    ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ -n "$link" ] && [ -z "$delay" ]; then
        ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 128kb latency 50ms &&
            ip netns exec "$sw" tc qdisc add dev "vh$i" root tbf rate "$rate" burst 128kb latency 50ms ||
            skip "cannot limit the links (tc qdisc add ... tbf)"
    elif [ -n "$link" ]; then
        # queues long enough that the rate delays packets, never drops them
        ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" limit 100000 2>/dev/null &&
            ip netns exec "$sw" tc qdisc add dev "vh$i" root netem rate "$rate" limit 100000 2>/dev/null ||
            skip "--link with a DELAY needs the netem queueing discipline, which this kernel lacks (tc: unknown qdisc kind); give a RATE alone"
    fi
    names="$names${names:+ }mh$i"
done
# every host reaches mh0 (a refused connection to its port 9 proves it)
for ((i = 1; i < hosts; i++)); do
    reached=0
    for _ in $(seq 20); do
        if timeout 2 ip netns exec "$prefix-h$i" \
            bash -c 'exec 3<>/dev/tcp/198.18.0.1/9' 2>&1 | grep -q refused; then
            reached=1
            break
        fi
        sleep 0.2
    done
    [ "$reached" -eq 1 ] || { echo "cluster.sh: mh$i cannot reach mh0 (198.18.0.1)" >&2; exit 1; }
done
dir=$(mktemp -d "/tmp/$prefix.XXXXXX")
# a boot id of its own per host (agent.sh, mpirun.sh bind it over
# /proc/sys/kernel/random/boot_id): UCX tells machines apart by it
for h in $names; do
    cat /proc/sys/kernel/random/uuid >"$dir/boot_id.$h"
done
export MH_PREFIX=$prefix MH_HOSTS=$hosts MH_HOSTNAMES=$names MH_DIR=$dir \
    MH_MPIRUN=$here/mpirun.sh MH_AGENT=$here/agent.sh MH_LINK=$link
# in the background, so that a signal reaches this script's trap at once
# (bash runs traps only between foreground commands)
timeout -k 10 "$limit" "$@" &
child=$!
wait "$child"
rc=$?
child=
[ "$rc" -eq 124 ] && echo "cluster.sh: COMMAND ran past ${limit}s and was stopped" >&2
exit "$rc"
