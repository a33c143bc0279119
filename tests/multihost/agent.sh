#!/bin/sh
# The remote shell of a netns cluster (cluster.sh), for Open MPI's rsh
# launcher (--mca plm_rsh_agent agent.sh): `agent.sh HOST COMMAND...` runs
# COMMAND, joined by spaces and read by sh as ssh does, on HOST: inside
# HOST's network namespace, in a UTS namespace of its own whose hostname
# is HOST.  HOST is one of the cluster's names (MH_HOSTNAMES), mapped to
# its namespace through MH_PREFIX; anything else is refused (exit 255,
# what ssh returns when it cannot connect).
host=$1
shift
i=0
for h in $MH_HOSTNAMES; do
    if [ "$h" = "$host" ]; then
        exec ip netns exec "$MH_PREFIX-h$i" unshare --uts --mount \
            sh -c 'hostname "$0" && mount --bind "$1" /proc/sys/kernel/random/boot_id &&
                   exec sh -c "$2"' "$host" "$MH_DIR/boot_id.$host" "$*"
    fi
    i=$((i + 1))
done
echo "agent.sh: $host is not a host of this cluster ($MH_HOSTNAMES)" >&2
exit 255
