#!/bin/sh
# mpirun across a netns cluster (cluster.sh sets MH_*): runs Open MPI's
# mpirun on host mh0 (in its network namespace, hostname mh0); the other
# hosts' daemons start through the rsh launcher and agent.sh.
#
#   mpirun.sh [--per-host K] -np N [MPIRUN-OPTIONS...] PROGRAM [ARG...]
#
# Ranks fill the hosts in order, K per host (default 2): rank r runs on
# host mh(r / K), bound to core (r % K + r / K) % C of the C cores here
# (a rankfile), so that the first ranks of neighbouring hosts do not share
# a core.  Out-of-band and MPI traffic between hosts go over TCP on the
# cluster's subnet (pml ob1, btl tcp); ranks of one host use shared memory
# (btl vader).  The daemons' connections probe an idle peer after 1 s,
# every 1 s, 3 times (TCP keepalive): a host cut off from the network ends
# the job in seconds (without it Open MPI waits 300 s for the first probe,
# and the job hangs).  Idle ranks yield the CPU (mpi_yield_when_idle): the
# hosts share this machine's cores.  MH_MPIRUN_BIN names another mpirun
# (default: mpirun on PATH), MH_BTL other btls (default tcp,self,vader).
set -u
per=2
if [ "${1:-}" = --per-host ]; then
    per=$2
    shift 2
fi
if [ "${1:-}" != -np ] || [ -z "${2:-}" ]; then
    echo "usage: mpirun.sh [--per-host K] -np N [MPIRUN-OPTIONS...] PROGRAM [ARG...]" >&2
    exit 2
fi
np=$2
shift 2
: "${MH_PREFIX:?run under cluster.sh}" "${MH_DIR:?}" "${MH_HOSTNAMES:?}" "${MH_HOSTS:?}"
if [ "$np" -gt $((per * MH_HOSTS)) ]; then
    echo "mpirun.sh: $np ranks do not fit $MH_HOSTS hosts x $per" >&2
    exit 2
fi
cores=$(nproc)
rankfile=$MH_DIR/rankfile.$per.$np
: >"$rankfile"
r=0
while [ "$r" -lt "$np" ]; do
    h=$((r / per))
    echo "rank $r=mh$h slot=$(((r % per + h) % cores))" >>"$rankfile"
    r=$((r + 1))
done
hostfile=$MH_DIR/hostfile.$per
: >"$hostfile"
for h in $MH_HOSTNAMES; do
    echo "$h slots=$per" >>"$hostfile"
done
net=198.18.0.0/24
exec ip netns exec "$MH_PREFIX-h0" unshare --uts --mount sh -c \
    'hostname mh0 && mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"' \
    "$MH_DIR/boot_id.mh0" \
    "${MH_MPIRUN_BIN:-mpirun}" --allow-run-as-root -np "$np" \
    --hostfile "$hostfile" --rankfile "$rankfile" \
    --mca plm rsh --mca plm_rsh_agent "$MH_AGENT" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$net" --mca btl_tcp_if_include "$net" \
    --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 \
    --mca oob_tcp_keepalive_probes 3 \
    --mca pml ob1 --mca btl "${MH_BTL:-tcp,self,vader}" --mca mpi_yield_when_idle 1 "$@"
