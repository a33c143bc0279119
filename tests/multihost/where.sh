#!/bin/sh
# where.sh DIR PROGRAM [ARG...]: a rank of a netns cluster (cluster.sh)
# writes where it runs to DIR/where.RANK, one line
#   RANK HOSTNAME NETNS-INODE ADDRESS
# (its network namespace as /proc/self/ns/net names it, its address on
# eth0), then becomes PROGRAM.  The harness compares the lines with the
# placement it asked for.
dir=$1
shift
r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}
ns=$(readlink /proc/self/ns/net | tr -dc 0-9)
addr=$(ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')
echo "$r $(hostname) $ns ${addr:-none}" >"$dir/where.$r"
exec "$@"
