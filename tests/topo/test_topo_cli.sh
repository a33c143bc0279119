#!/bin/bash
# The topology commands end to end:
#   1. `redistplan topo` on this machine, a synthetic one and an hwloc XML
#      file (written by `topo`'s own loader through a synthetic machine
#      when lstopo is missing), with and without a spec;
#   2. `plan --synthetic/--xml/--rank-map`: axis links from a topology; the
#      bytes objective's plan equals its plan without one for every spec under
#      every topology; the time objective chooses differently where the
#      topology says so;
#   3. `run --objective time` (exchange plans) exact under sim on every
#      spec under three sets of axis links (generic and fused; with the
#      default links also --preserve-src);
#   4. error messages naming the file and place (bad XML, bad synthetic
#      string, bad rank maps).
# `quick` (sanitizer builds): in 3., one link set and one mode per spec,
# in rotation.
#   test_topo_cli.sh REDISTPLAN SOURCE_ROOT [quick]
set -u
unset OMPI_COMM_WORLD_SIZE PMI_SIZE
RP=$1
quick=${3:-}
. "$(dirname "$0")/../cli/harness.sh"
cd "$2" || exit 2
has() { # TEXT FILE DESCRIPTION
    if grep -qF -- "$1" "$2"; then ok; else bad "$3: no \"$1\" in:"; sed 's/^/    /' "$2" | head -20; fi
}

# 1. topo
expect_rc 0 "topo (this machine)" "$RP" topo
has "machine   local machine" "$T/out" "local machine"
has "ranks     default: one rank per core in order" "$T/out" "default placement"
expect_rc 0 "topo synthetic" "$RP" topo --synthetic "pack:2 numa:2 core:8 pu:1"
has "per host  2 packages, 4 NUMA nodes, no caches, 32 cores, 32 PUs" "$T/out" "synthetic counts"
expect_rc 0 "topo with a spec" "$RP" topo - --mesh data=2,model=4 --shape 4096x16384 \
    --dtype bf16 --from 'data|model' --to 'data,model|' --synthetic "pack:2 core:4"
has "  data           2       4  node" "$T/out" "data spans the packages"
has "  model          4       1  numa" "$T/out" "model within a package"
has "0 (h0 p0 n0 c0), 4 (h0 p1 n0 c4)" "$T/out" "example group of data"
has "plan of the bytes objective" "$T/out" "bytes plan printed"
has "plan of the time objective" "$T/out" "time plan printed"
has "all_to_all     model    numa" "$T/out" "step link"
# the fsdp spec: the time objective replaces three steps by one exchange
expect_rc 0 "topo fsdp" "$RP" topo specs/fsdp-rows-to-2d-columns.json --synthetic "pack:2 core:4"
has "exchange       -        node" "$T/out" "exchange crosses the packages"
has "x faster)" "$T/out" "speedup line"
expect_rc 0 "topo --objective time" "$RP" topo specs/fsdp-rows-to-2d-columns.json \
    --synthetic "pack:2 core:4" --objective time
if grep -q "plan of the default objective" "$T/out"; then bad "--objective time prints one plan"; else ok; fi
# a rank map: packages round robin, the other way round
echo '{"ranks_per_host": 8, "map_by": "package"}' >"$T/bypkg.json"
expect_rc 0 "topo with a rank map" "$RP" topo specs/partial-two-axes-reduce-scatter.json \
    --synthetic "pack:2 core:4" --rank-map "$T/bypkg.json"
has "  x              2       4  numa" "$T/out" "x within a package"
has "  y              4       1  node" "$T/out" "y across packages"
has "the time objective keeps the bytes objective's plan" "$T/out" "same plan under this map"
expect_rc 0 "topo --axis-links override" "$RP" topo specs/partial-two-axes-reduce-scatter.json \
    --synthetic "pack:2 core:4" --axis-links x=network
has "network*" "$T/out" "override marked"
echo '{"links": {"node": {"alpha": 2e-6, "beta": 1e-9}}}' >"$T/cost.json"
expect_rc 0 "topo --cost" "$RP" topo specs/megatron-col-to-row-parallel.json --synthetic "pack:2 core:4" --cost "$T/cost.json"
has "node            2.00              1.00" "$T/out" "calibrated node link"
# two hosts of 4 cores: 8 ranks wrap onto the second host
expect_rc 0 "topo wrapping onto hosts" "$RP" topo specs/megatron-col-to-row-parallel.json --synthetic "core:4"
has "  data           2       4  network" "$T/out" "data across hosts"
# an XML file: written by lstopo when it is installed, else a hand-made
# minimal hwloc XML
if command -v lstopo-no-graphics >/dev/null 2>&1; then
    lstopo-no-graphics -i "pack:2 l3:2 core:2 pu:1" "$T/m.xml" 2>/dev/null
fi
if [ ! -s "$T/m.xml" ]; then
    cat >"$T/m.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" allowed_cpuset="0x0000000f" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4"/>
      </object>
      <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5">
        <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6"/>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0x0000000c" complete_cpuset="0x0000000c" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7">
      <object type="Core" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="8">
        <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="9"/>
      </object>
      <object type="Core" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="10">
        <object type="PU" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="11"/>
      </object>
    </object>
    <object type="NUMANode" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="12" local_memory="1073741824"/>
  </object>
</topology>
XML
fi
expect_rc 0 "topo --xml" "$RP" topo --xml "$T/m.xml"
has "machine   hwloc XML $T/m.xml" "$T/out" "XML source"
has "2 packages" "$T/out" "XML packages"
expect_rc 0 "plan --xml" "$RP" plan - --mesh x=2,y=2 --shape 8x8 --from 'x|y' --to 'y|x' \
    --xml "$T/m.xml" --objective time --no-grid
has "modelled time" "$T/out" "plan under an XML topology"

# 2. plan with a topology: the bytes objective's plan never changes
n=0
for s in specs/*.json; do
    b=$(basename "$s" .json)
    [ -f "tests/specs/golden/$b.plan.json" ] || continue
    "$RP" plan "$s" --objective bytes --json >"$T/bytes-$b.json" 2>"$T/err" || bad "plan $b --objective bytes"
done
for syn in "pack:2 core:4" "pack:2 numa:2 l3:2 core:2 pu:2" "core:2"; do
    n=$((n + 1))
    for s in specs/*.json; do
        b=$(basename "$s" .json)
        [ -f "tests/specs/golden/$b.plan.json" ] || continue
        "$RP" plan "$s" --synthetic "$syn" --objective bytes --json >"$T/p$n-$b.json" 2>"$T/err" || bad "plan $b under $syn"
    done
done
python3 - "$T" <<'PY' && ok || bad "bytes plans under topologies"
import glob, json, os, sys
tmp = sys.argv[1]
strip = lambda d: [{k: v for k, v in s.items() if k != "time_s"} for s in d["steps"]]
files = glob.glob(os.path.join(tmp, "p[0-9]-*.json"))
assert len(files) >= 45, len(files)
for f in files:
    b = os.path.basename(f)[3:-5]
    g = json.load(open(os.path.join(tmp, "bytes-" + b + ".json")))
    a = json.load(open(f))
    assert strip(a) == strip(g), (f, strip(a), strip(g))
PY
expect_rc 0 "plan --synthetic, time objective" "$RP" plan specs/fsdp-rows-to-2d-columns.json \
    --synthetic "pack:2 core:4" --objective time --json
grep -q '"op": "exchange"' "$T/out" && ok || bad "time objective under pack:2 core:4 picks the exchange"
echo '{"ranks_per_host": 1}' >"$T/one.json"
expect_rc 0 "plan --rank-map on this machine" "$RP" plan - --mesh x=2 --shape 8 --from x --to '' \
    --rank-map "$T/one.json" --objective time --no-grid
has "modelled time 3.01 us" "$T/out" "one rank per host: the gather crosses the network"
# the time objective's choice depends on the placement
expect_rc 0 "time plan, default placement" "$RP" plan specs/partial-two-axes-reduce-scatter.json \
    --synthetic "pack:2 core:4" --objective time --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [s["op"] for s in d["steps"]] == ["reduce_scatter","reduce_scatter","all_to_all"] and d["steps"][0]["axis"] == "y" else 1)' "$T/out" \
    && ok || bad "default placement: reduce-scatter over y first"
expect_rc 0 "time plan, packages round robin" "$RP" plan specs/partial-two-axes-reduce-scatter.json \
    --synthetic "pack:2 core:4" --rank-map "$T/bypkg.json" --objective time --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [s["op"] for s in d["steps"]] == ["reduce_scatter","reduce_scatter"] and d["steps"][0]["axis"] == "x" else 1)' "$T/out" \
    && ok || bad "round robin placement: the default order"

# 3. run --objective time: every spec, exact, three modes, three link sets
exchanges=0 turn=0
python3 - specs/*.json >"$T/axes" <<'PY'
import json, os, sys
for f in sys.argv[1:]:
    print(os.path.basename(f)[:-5], " ".join(a for a, _ in json.load(open(f))["mesh"]))
PY
for s in specs/*.json; do
    b=$(basename "$s" .json)
    want=0
    [ "$b" = partial-target-not-in-source ] && want=2
    axes=$(sed -n "s/^$b //p" "$T/axes")
    first=${axes%% *}
    links_slow_first=""
    links_slow_last=""
    for a in $axes; do
        if [ "$a" = "$first" ]; then
            links_slow_first+="$a=network,"; links_slow_last+="$a=cache,"
        else
            links_slow_first+="$a=numa,"; links_slow_last+="$a=network,"
        fi
    done
    link_sets=("" "--axis-links ${links_slow_first%,}" "--axis-links ${links_slow_last%,}")
    [ -n "$quick" ] && link_sets=("${link_sets[$((turn % 3))]}")
    for links in "${link_sets[@]}"; do
        modes=("" --fused)
        [ -z "$links" ] && modes+=(--preserve-src)
        if [ -n "$quick" ]; then
            modes=("${modes[$((turn % ${#modes[@]}))]}")
            turn=$((turn + 1))
        fi
        for mode in "${modes[@]}"; do
            # shellcheck disable=SC2086
            expect_rc $want "run --objective time $b $links $mode" "$RP" run "$s" --objective time \
                $links --shrink --max-bytes 2000000 $mode
            if [ "$want" -eq 0 ]; then
                has "result    exact" "$T/out" "exact: $b $links $mode"
                grep -q "plan      .*exchange" "$T/out" && exchanges=$((exchanges + 1))
            fi
        done
    done
done
[ "$exchanges" -ge "$([ -n "$quick" ] && echo 3 || echo 15)" ] && ok ||
    bad "only $exchanges runs used an exchange step"
echo "run --objective time: $exchanges runs with an exchange step"
expect_rc 2 "run: bad objective" "$RP" run specs/megatron-col-to-row-parallel.json --objective fastest
expect_rc 2 "run: bad axis link" "$RP" run specs/megatron-col-to-row-parallel.json --objective time --axis-links data=warp
has "unknown link level \"warp\"" "$T/err" "axis link message"
expect_rc 2 "run: bad cost file" "$RP" run specs/megatron-col-to-row-parallel.json --cost "$T/none.json"
has "none.json: cannot open" "$T/err" "cost file message"

# 4. errors name the file and the place
expect_rc 2 "bad synthetic" "$RP" topo --synthetic "pack:2 nuna:2 core:4"
has 'redistplan: synthetic "pack:2 nuna:2 core:4": word 2 "nuna:2": unknown object type "nuna"' "$T/err" "synthetic message"
expect_rc 2 "bad synthetic count" "$RP" plan specs/megatron-col-to-row-parallel.json --synthetic "pack:two core:4"
has 'word 1 "pack:two": the count must be a positive integer' "$T/err" "synthetic count message"
printf '<topology><object type="Machine">\n' >"$T/bad.xml"
expect_rc 2 "bad XML" "$RP" topo --xml "$T/bad.xml"
has "redistplan: $T/bad.xml: not an hwloc XML topology" "$T/err" "XML message"
expect_rc 2 "missing XML" "$RP" plan specs/megatron-col-to-row-parallel.json --xml "$T/none.xml"
has "redistplan: $T/none.xml: cannot open: No such file or directory" "$T/err" "missing XML message"
expect_rc 2 "xml and synthetic" "$RP" topo --xml "$T/m.xml" --synthetic "core:2"
printf '{"ranks": [\n  {"host": 0, "core": 1},\n  {"host": 0 "core": 2}]}\n' >"$T/syntax.json"
expect_rc 2 "rank map syntax" "$RP" topo --synthetic "pack:2 core:4" --rank-map "$T/syntax.json"
has "redistplan: $T/syntax.json:3:19: JSON syntax error: '}' expected near '\"core\"'" "$T/err" "rank map syntax message"
echo '{"ranks": [{"host": 0, "core": 0}, {"host": 0, "core": 8}]}' >"$T/range.json"
expect_rc 2 "rank map range" "$RP" topo --synthetic "pack:2 core:4" --rank-map "$T/range.json"
has "redistplan: $T/range.json: ranks[1].core: core 8 is out of range (the topology has 8 cores: 0..7)" "$T/err" "rank map range message"
echo '{"ranks": [{"host": 0, "core": 0}, {"host": 0, "core": 1}]}' >"$T/small.json"
expect_rc 2 "rank map too small" "$RP" plan specs/megatron-col-to-row-parallel.json --synthetic "pack:2 core:4" --rank-map "$T/small.json"
has "redistplan: $T/small.json: the placement has 2 ranks, the mesh 8 devices" "$T/err" "rank map size message"
echo '{"ranks_per_host": 3, "map_by": "numa", "hosts": 2}' >"$T/fit.json"
expect_rc 2 "rank map rule does not fit" "$RP" topo --synthetic "numa:2 core:1" --rank-map "$T/fit.json"
has "ranks_per_host: 3 ranks per host do not fit: NUMA node 0 has 1 cores, the rule needs 2 (map_by numa)" "$T/err" "rule message"
echo '{"ranks_per_host": 0}' >"$T/rph0.json"
expect_rc 2 "rank map: ranks_per_host 0" "$RP" topo - --mesh x=2 --shape 8x8 --from 'x|' --to '|' \
    --synthetic core:2 --rank-map "$T/rph0.json"
has "redistplan: $T/rph0.json: ranks_per_host: 0 is out of range: a count from 1 to 10^6" "$T/err" "ranks_per_host range message"
printf '{"ranks_per_host"\0: 1}' >"$T/nul.json"
expect_rc 2 "rank map with a NUL byte" "$RP" topo --synthetic core:2 --rank-map "$T/nul.json"
has "redistplan: $T/nul.json:1:18: the file holds a NUL byte (byte 18 of 22)" "$T/err" "rank map NUL message"
echo '{"links":{"numa":{"alpha":-1,"beta":-1}}}' >"$T/cost-neg.json"
expect_rc 2 "cost file: negative alpha" "$RP" topo - --mesh x=2 --shape 8x8 --from 'x|' --to '|' \
    --synthetic core:2 --cost "$T/cost-neg.json"
has "redistplan: $T/cost-neg.json: links.numa.alpha: -1 s is out of range: seconds from 0 to 1000" "$T/err" "cost range message"
echo '{"links":{"node":{"alpha":1e308,"beta":1e308}},"gamma":1e308}' >"$T/cost-huge.json"
expect_rc 2 "cost file: huge gamma" "$RP" topo - --mesh x=2 --shape 8x8 --from 'x|' --to '|' \
    --synthetic core:2 --cost "$T/cost-huge.json"
has "redistplan: $T/cost-huge.json: gamma: 1e+308 s is out of range: seconds from 0 to 1000" "$T/err" "cost range message (gamma)"
expect_rc 2 "--axis-links: an axis twice" "$RP" topo - --mesh x=2 --shape 8x8 --from 'x|' --to '|' \
    --synthetic core:2 --axis-links x=numa,x=node
has "redistplan: <command line>: --axis-links: axis \"x\" is given twice" "$T/err" "axis given twice message"
expect_rc 2 "topo: unknown option" "$RP" topo --synthtic "core:2"
expect_rc 2 "topo: two specs" "$RP" topo specs/megatron-col-to-row-parallel.json specs/fsdp-param-gather.json

# 5. topo-synthetic-unbounded: hwloc's load grows with the square of the
#    objects ("core:10000" took 72 s, "pack:100000 core:100000" minutes);
#    sizes past the limits of redist/topo.h are refused at once, and the
#    largest allowed load fast.
for d in "core:10000" "pack:100000 core:100000" "pack:64 core:64 pu:2"; do
    expect_rc 2 "synthetic $d refused" timeout 10 "$RP" topo --synthetic "$d"
done
has 'redistplan: synthetic "pack:64 core:64 pu:2": word 3 "pu:2": the counts multiply to more than 4096 PUs' "$T/err" "PU cap message"
expect_rc 2 "plan --synthetic too large" timeout 10 "$RP" plan specs/megatron-col-to-row-parallel.json --synthetic "core:10000"
has 'word 1 "core:10000": a count is at most 256' "$T/err" "level cap message"
for d in "pack:16 core:256" "core:256 pu:16"; do
    expect_rc 0 "synthetic $d (4096 PUs)" timeout 20 "$RP" topo --synthetic "$d"
    has "4096 PUs" "$T/out" "4096 PUs loaded: $d"
done

# 6. spec-fifo-hang: a FIFO, a directory or a device never blocks a loader
#    (each is opened without waiting for a writer and refused).
mkfifo "$T/fifo"
expect_rc 2 "--xml FIFO" timeout 10 "$RP" topo --xml "$T/fifo"
has "redistplan: $T/fifo: cannot read an hwloc XML topology from a FIFO (named pipe): only regular files are read" "$T/err" "XML FIFO message"
expect_rc 2 "--rank-map FIFO" timeout 10 "$RP" topo --synthetic core:2 --rank-map "$T/fifo"
has "redistplan: $T/fifo: cannot read a rank map from a FIFO (named pipe)" "$T/err" "rank map FIFO message"
expect_rc 2 "--xml directory" timeout 10 "$RP" topo --xml "$T"
has "cannot read an hwloc XML topology from a directory" "$T/err" "XML directory message"
expect_rc 2 "--rank-map /dev/zero" timeout 10 "$RP" topo --synthetic core:2 --rank-map /dev/zero
has "cannot read a rank map from a character device" "$T/err" "rank map device message"

# junit-invalid-xml-control-chars (on the terminal): host names of a rank
# map are printed with control characters escaped.
printf '{"hosts": ["h\\u001b]0;x\\u0007"], "ranks_per_host": 2}' >"$T/ctl.json"
expect_rc 0 "topo: a host name with control characters" "$RP" topo --synthetic core:2 --rank-map "$T/ctl.json"
has '0  h\u001b]0;x\u0007' "$T/out" "host name escaped"
if LC_ALL=C grep -q "$(printf '\033')" "$T/out"; then bad "a raw ESC reaches the terminal"; else ok; fi

finish topo-cli
