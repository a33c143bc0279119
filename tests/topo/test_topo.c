/*
 * The topology layer (libredist_topo) through its C API:
 *   - synthetic topologies, an hwloc XML file written by hwloc itself, and
 *     the local machine load, with the right counts per level;
 *   - the link between two ranks at every level (cache, NUMA, package,
 *     node, network) under the default placement, a rank map rule
 *     (map_by numa / package / pu) and explicit maps over several hosts;
 *   - which mesh axis maps to which level, for several meshes and
 *     placements, including wrapping onto more hosts;
 *   - the time objective chooses differently from the default objective
 *     under a topology, differently under two placements of one topology,
 *     and the default objective's plan never changes; every such plan runs
 *     exactly under the sim backend;
 *   - errors: bad synthetic strings, unreadable and invalid XML, rank
 *     maps with syntax errors (line and column) and bad values (paths),
 *     placements smaller than the mesh.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redist.h"
#include "redist/topo.h"
#include "../../src/testing/pattern.h"

static int passed, failed;
#define CHECK(c)                                                             \
    do {                                                                     \
        if (c)                                                               \
            passed++;                                                        \
        else {                                                               \
            failed++;                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                     \
        }                                                                    \
    } while (0)

static char tmpdir[256];

static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static redist_topo_t *synthetic(const char *desc)
{
    redist_topo_t *t = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_topo_load_synthetic(desc, &t, &err)) {
        char buf[512];
        fprintf(stderr, "synthetic %s: %s\n", desc,
                redist_error_format(&err, buf, sizeof buf));
    }
    return t;
}

static redist_mesh_t *mesh(int n, const char *const names[],
                           const int64_t sizes[])
{
    redist_mesh_t *m = NULL;
    redist_mesh_create(n, names, sizes, &m, NULL);
    return m;
}

/* The axis links of `m` under `pl`, as a string "cache,numa,...". */
static const char *links_of(const redist_placement_t *pl,
                            const redist_mesh_t *m)
{
    static char buf[512];
    redist_cost_model_t cm;
    redist_error_t err;
    size_t pos = 0;
    redist_cost_model_default(&cm);
    redist_error_clear(&err);
    if (redist_topo_axis_links(pl, m, &cm, &err)) {
        snprintf(buf, sizeof buf, "error: %s", err.text);
        return buf;
    }
    buf[0] = '\0';
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        pos += (size_t)snprintf(buf + pos, sizeof buf - pos, "%s%s",
                                a ? "," : "",
                                redist_link_name((redist_link_t)cm.axis_link[a]));
    return buf;
}

static void test_load(void)
{
    redist_topo_info_t in;
    redist_topo_t *t = synthetic("pack:2 numa:2 core:8 pu:1");
    CHECK(t != NULL);
    if (t) {
        redist_topo_get_info(t, &in);
        CHECK(in.packages == 2 && in.numa_nodes == 4 && in.cores == 32 &&
              in.pus == 32);
        CHECK(strcmp(in.cache_name, "core") == 0 && in.caches == 32);
        CHECK(strstr(in.source, "synthetic") != NULL);
        CHECK(strstr(in.levels, "Package:2") != NULL);
        redist_topo_free(t);
    }
    /* " pu:1" appended when the last level is not pu */
    t = synthetic("pack:2 core:4");
    CHECK(t != NULL);
    if (t) {
        redist_topo_get_info(t, &in);
        CHECK(in.packages == 2 && in.numa_nodes == 1 && in.cores == 8 &&
              in.pus == 8);
        redist_topo_free(t);
    }
    t = synthetic("pack:2 numa:2 l3:2 core:2 pu:2");
    CHECK(t != NULL);
    if (t) {
        redist_topo_get_info(t, &in);
        CHECK(in.packages == 2 && in.numa_nodes == 4 && in.caches == 8 &&
              in.cores == 16 && in.pus == 32);
        CHECK(strcmp(in.cache_name, "L3") == 0);
        redist_topo_free(t);
    }
    /* the local machine */
    redist_error_t err;
    redist_error_clear(&err);
    CHECK(redist_topo_load_local(&t, &err) == REDIST_OK);
    if (t) {
        redist_topo_get_info(t, &in);
        CHECK(in.pus >= 1 && in.cores >= 1 && in.packages >= 1);
        redist_topo_free(t);
    }
    /* an XML file written by hwloc from a synthetic machine */
    hwloc_topology_t hw;
    char path[512];
    snprintf(path, sizeof path, "%s/machine.xml", tmpdir);
    CHECK(hwloc_topology_init(&hw) == 0);
    CHECK(hwloc_topology_set_synthetic(hw, "pack:4 l3:2 core:3 pu:2") == 0);
    CHECK(hwloc_topology_load(hw) == 0);
    CHECK(hwloc_topology_export_xml(hw, path, 0) == 0);
    hwloc_topology_destroy(hw);
    t = NULL;
    CHECK(redist_topo_load_xml(path, &t, &err) == REDIST_OK);
    if (t) {
        redist_topo_get_info(t, &in);
        CHECK(in.packages == 4 && in.caches == 8 && in.cores == 24 &&
              in.pus == 48);
        CHECK(strstr(in.source, "machine.xml") != NULL);
        redist_topo_free(t);
    }
}

static void test_links(void)
{
    redist_topo_t *t = synthetic("pack:2 numa:2 l3:2 core:2 pu:2");
    redist_placement_t *p = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (!t)
        return;
    CHECK(redist_placement_default(t, &p, &err) == REDIST_OK);
    if (p) {
        /* one rank per core: cores 0,1 share an L3; 2,3 the next L3 of
         * the NUMA node; 4..7 the other NUMA node; 8.. the other package;
         * rank 16 is on the next host */
        CHECK(redist_placement_num_ranks(p) == INT64_MAX);
        CHECK(redist_placement_link(p, 0, 1) == REDIST_LINK_CACHE);
        CHECK(redist_placement_link(p, 0, 2) == REDIST_LINK_NUMA);
        CHECK(redist_placement_link(p, 1, 5) == REDIST_LINK_PACKAGE);
        CHECK(redist_placement_link(p, 3, 8) == REDIST_LINK_NODE);
        CHECK(redist_placement_link(p, 0, 16) == REDIST_LINK_NETWORK);
        CHECK(redist_placement_link(p, 17, 16) == REDIST_LINK_CACHE);
        redist_topo_location_t l;
        CHECK(redist_placement_location(p, 17, &l) == REDIST_OK &&
              l.host == 1 && l.core == 1 && l.pu == 2 && l.package == 0);
        CHECK(redist_placement_location(p, 9, &l) == REDIST_OK &&
              l.host == 0 && l.core == 9 && l.package == 1 && l.numa == 2);
        /* axes of 2: the last axis within an L3, then NUMA, package,
         * host, network (doc/spec-format.md: the first axis varies slowest) */
        const char *n5[] = {"h", "a", "b", "c", "d"};
        int64_t s5[] = {2, 2, 2, 2, 2};
        redist_mesh_t *m = mesh(5, n5, s5);
        CHECK(strcmp(links_of(p, m), "network,node,package,numa,cache") == 0);
        redist_topo_axis_t ax;
        CHECK(redist_topo_axis_info(p, m, 2, &ax, &err) == REDIST_OK);
        CHECK(ax.size == 2 && ax.stride == 4 && ax.groups == 16 &&
              ax.groups_at[REDIST_LINK_PACKAGE] == 16 && ax.example == 0);
        redist_mesh_free(m);
        /* an axis of 4 over cores 0..3 spans two L3s (numa), the other of
         * 4 spans NUMA nodes and packages (node) */
        const char *n2[] = {"data", "model"};
        int64_t s2[] = {4, 4};
        m = mesh(2, n2, s2);
        CHECK(strcmp(links_of(p, m), "node,numa") == 0);
        CHECK(redist_topo_axis_info(p, m, 0, &ax, &err) == REDIST_OK);
        CHECK(ax.stride == 4 && ax.groups == 4 &&
              ax.groups_at[REDIST_LINK_NODE] == 4);
        redist_mesh_free(m);
        /* 64 ranks wrap onto 4 hosts */
        int64_t s3[] = {4, 16};
        m = mesh(2, n2, s3);
        CHECK(strcmp(links_of(p, m), "network,node") == 0);
        redist_mesh_free(m);
        redist_placement_free(p);
    }
    /* rules: map_by pu puts ranks 0,1 on one core's two PUs */
    const char *path = write_file("pu.json",
                                  "{\"ranks_per_host\": 32, \"map_by\": "
                                  "\"pu\", \"hosts\": [\"n0\", \"n1\"]}");
    p = NULL;
    CHECK(redist_placement_load_file(t, path, &p, &err) == REDIST_OK);
    if (p) {
        CHECK(redist_placement_num_ranks(p) == 64);
        CHECK(redist_placement_num_hosts(p) == 2);
        char name[32];
        redist_placement_host_name(p, 1, name, sizeof name);
        CHECK(strcmp(name, "n1") == 0);
        CHECK(redist_placement_link(p, 0, 1) == REDIST_LINK_CACHE);
        CHECK(redist_placement_link(p, 0, 4) == REDIST_LINK_NUMA);
        CHECK(redist_placement_link(p, 31, 32) == REDIST_LINK_NETWORK);
        const char *n2[] = {"x", "y"};
        int64_t s2[] = {16, 4};
        redist_mesh_t *m = mesh(2, n2, s2);
        CHECK(strcmp(links_of(p, m), "network,cache") == 0);
        redist_mesh_free(m);
        redist_placement_free(p);
    }
    /* map_by numa: round robin over the 4 NUMA nodes */
    path = write_file("numa.json", "{\"ranks_per_host\": 8, \"map_by\": "
                                   "\"numa\"}");
    p = NULL;
    CHECK(redist_placement_load_file(t, path, &p, &err) == REDIST_OK);
    if (p) {
        redist_topo_location_t l;
        CHECK(redist_placement_location(p, 1, &l) == REDIST_OK &&
              l.numa == 1 && l.core == 4);
        CHECK(redist_placement_location(p, 4, &l) == REDIST_OK &&
              l.numa == 0 && l.core == 1);
        CHECK(redist_placement_link(p, 0, 4) == REDIST_LINK_CACHE);
        CHECK(redist_placement_link(p, 0, 1) == REDIST_LINK_PACKAGE);
        CHECK(redist_placement_link(p, 0, 2) == REDIST_LINK_NODE);
        const char *n2[] = {"x", "y"};
        int64_t s2[] = {2, 4}; /* x: ranks r, r+4 (same NUMA node) */
        redist_mesh_t *m = mesh(2, n2, s2);
        CHECK(strcmp(links_of(p, m), "cache,node") == 0);
        redist_mesh_free(m);
        redist_placement_free(p);
    }
    /* explicit: two hosts by name, cores and PUs */
    path = write_file("explicit.json",
                      "{\"hosts\": [\"a\", \"b\"], \"ranks\": [\n"
                      "  {\"host\": \"a\", \"core\": 0},\n"
                      "  {\"host\": \"a\", \"pu\": 1},\n"
                      "  {\"host\": \"b\", \"core\": 0},\n"
                      "  {\"host\": 1, \"core\": 8}]}");
    p = NULL;
    CHECK(redist_placement_load_file(t, path, &p, &err) == REDIST_OK);
    if (p) {
        CHECK(redist_placement_num_ranks(p) == 4);
        CHECK(redist_placement_link(p, 0, 1) == REDIST_LINK_CACHE);
        CHECK(redist_placement_link(p, 0, 2) == REDIST_LINK_NETWORK);
        CHECK(redist_placement_link(p, 2, 3) == REDIST_LINK_NODE);
        const char *n2[] = {"x", "y"};
        int64_t s2[] = {2, 2};
        redist_mesh_t *m = mesh(2, n2, s2);
        CHECK(strcmp(links_of(p, m), "network,node") == 0);
        redist_mesh_free(m);
        /* a mesh larger than the map */
        int64_t s3[] = {2, 4};
        m = mesh(2, n2, s3);
        CHECK(strstr(links_of(p, m), "the placement has 4 ranks, the mesh 8 "
                                     "devices") != NULL);
        redist_mesh_free(m);
        redist_placement_free(p);
    }
    /* locations gathered at run time (what an MPI job would pass) */
    int64_t hosts[4] = {0, 0, 1, 1};
    int pus[4] = {0, 16, 0, 16};
    p = NULL;
    CHECK(redist_placement_create(t, 4, hosts, pus, &p, &err) == REDIST_OK);
    if (p) {
        CHECK(redist_placement_link(p, 0, 1) == REDIST_LINK_NODE);
        CHECK(redist_placement_link(p, 1, 2) == REDIST_LINK_NETWORK);
        redist_placement_free(p);
    }
    pus[3] = 32;
    redist_error_clear(&err);
    CHECK(redist_placement_create(t, 4, hosts, pus, &p, &err) ==
          REDIST_ERR_INVALID);
    CHECK(strcmp(err.path, "ranks[3]") == 0 &&
          strstr(err.text, "PU 32 is out of range") != NULL);
    redist_topo_free(t);
}

/* Plan under the axis links of a topology and placement; check that the
 * default objective's plan is the plain one and return the time
 * objective's plan (run exactly under sim first). */
static int plan_ops(const redist_plan_t *p, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int k = 0; k < redist_plan_num_steps(p); k++) {
        redist_step_view_t v;
        redist_plan_step(p, k, &v);
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%s", k ? "," : "",
                                redist_op_name(v.op));
    }
    return redist_plan_num_steps(p);
}

static int run_exact(const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_mesh_num_devices(redist_spec_mesh(s));
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    void **src = calloc((size_t)D, sizeof *src);
    void **dst = calloc((size_t)D, sizeof *dst);
    int ok = src && dst;
    for (int64_t r = 0; ok && r < D; r++) {
        src[r] = malloc((size_t)S);
        dst[r] = malloc((size_t)T);
        ok = src[r] && dst[r];
        if (ok)
            rd_pattern_fill(s, r, src[r]);
    }
    redist_error_t err;
    redist_error_clear(&err);
    if (ok && redist_exec_sim_run(plan, src, dst, 0, NULL, NULL, NULL, &err))
        ok = 0;
    rd_mismatch mm;
    for (int64_t r = 0; ok && r < D; r++)
        ok = !rd_pattern_check(s, r, dst[r], &mm);
    for (int64_t r = 0; src && dst && r < D; r++) {
        free(src[r]);
        free(dst[r]);
    }
    free(src);
    free(dst);
    return ok;
}

static void choose(const char *desc, const char *map, const char *spec_mesh,
                   const char *shape, const char *from, const char *fp,
                   const char *to, const char *want_default,
                   const char *want_time)
{
    redist_topo_t *t = synthetic(desc);
    redist_placement_t *p = NULL;
    redist_spec_t *s = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    CHECK(t != NULL);
    if (!t)
        return;
    if (map)
        CHECK(redist_placement_load_buffer(t, map, strlen(map), "map", &p,
                                           &err) == REDIST_OK);
    else
        CHECK(redist_placement_default(t, &p, &err) == REDIST_OK);
    CHECK(redist_spec_from_strings(spec_mesh, shape, "f32", from, fp, to,
                                   NULL, NULL, NULL, 0, &s, &err) ==
          REDIST_OK);
    if (!p || !s)
        goto out;
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    CHECK(redist_topo_axis_links(p, redist_spec_mesh(s), &cm, &err) ==
          REDIST_OK);
    redist_plan_t *plain = NULL, *bytes = NULL, *timed = NULL;
    redist_plan_options_t o, ob;
    memset(&o, 0, sizeof o);
    memset(&ob, 0, sizeof ob);
    ob.objective = o.objective = REDIST_OBJECTIVE_BYTES;
    o.cost = &cm;
    CHECK(redist_plan_create(s, &ob, &plain, &err) == REDIST_OK);
    CHECK(redist_plan_create(s, &o, &bytes, &err) == REDIST_OK);
    o.objective = REDIST_OBJECTIVE_TIME;
    CHECK(redist_plan_create(s, &o, &timed, &err) == REDIST_OK);
    if (plain && bytes && timed) {
        char a[256], b[256], c[256];
        plan_ops(plain, a, sizeof a);
        plan_ops(bytes, b, sizeof b);
        plan_ops(timed, c, sizeof c);
        /* a cost model never changes the bytes objective's plan */
        CHECK(strcmp(a, b) == 0);
        CHECK(strcmp(a, want_default) == 0);
        CHECK(strcmp(c, want_time) == 0);
        if (strcmp(c, want_time) || strcmp(a, want_default))
            fprintf(stderr, "  %s, %s: default %s, time %s (wanted %s, %s)\n",
                    desc, map ? map : "default placement", a, c, want_default,
                    want_time);
        redist_plan_stats_t sb, st;
        redist_plan_stats(bytes, &sb);
        redist_plan_stats(timed, &st);
        CHECK(st.peak_bytes <= sb.peak_bytes);
        CHECK(st.peak_bytes < sb.peak_bytes || st.time_s <= sb.time_s);
        CHECK(run_exact(timed));
        CHECK(run_exact(plain));
    }
    redist_plan_free(plain);
    redist_plan_free(bytes);
    redist_plan_free(timed);
out:
    redist_spec_free(s);
    redist_placement_free(p);
    redist_topo_free(t);
}

static void test_choices(void)
{
    /* fsdp-rows-to-2d-columns at 1/8 scale: with fsdp across the
     * packages the time objective sends each device what it lacks in one
     * exchange instead of slice, all_to_all, permute */
    choose("pack:2 core:4", NULL, "fsdp=2,tensor=4", "256x448", "fsdp|",
           NULL, "|fsdp,tensor", "slice,all_to_all,permute", "exchange");
    /* partial over two axes: with x across packages (the default
     * placement) the time objective reduce-scatters over the fast y axis
     * first; with ranks placed round robin over the packages, y is the
     * slow one and the default order is also the fastest */
    choose("pack:2 core:4", NULL, "x=2,y=4", "512x256", "|", "x,y", "x,y|",
           "reduce_scatter,reduce_scatter",
           "reduce_scatter,reduce_scatter,all_to_all");
    choose("pack:2 core:4", "{\"ranks_per_host\": 8, \"map_by\": \"package\"}",
           "x=2,y=4", "512x256", "|", "x,y", "x,y|",
           "reduce_scatter,reduce_scatter", "reduce_scatter,reduce_scatter");
    /* a device reorder: no topology makes a permute worse than the
     * alternatives, both objectives agree */
    choose("pack:2 numa:2 core:2", NULL, "x=2,y=4", "64x64", "x,y|", NULL,
           "y,x|", "permute", "permute");
}

static void test_errors(void)
{
    redist_topo_t *t = NULL;
    redist_error_t err;
    char buf[1024];
    struct {
        const char *desc, *want;
    } bad[] = {
        {"pack:2 nuna:2 core:4", "word 2 \"nuna:2\": unknown object type"},
        {"pack:0 core:4", "word 1 \"pack:0\": the count must be a positive"},
        {"pack:2 core", "word 2 \"core\": expected TYPE:COUNT"},
        {"   ", "empty description"},
        {"pack:2 core:4x", "word 2 \"core:4x\": the count must be"},
        {"pack:2 pu:2 core:2", "hwloc rejects it"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redist_error_clear(&err);
        CHECK(redist_topo_load_synthetic(bad[i].desc, &t, &err) ==
              REDIST_ERR_INVALID);
        redist_error_format(&err, buf, sizeof buf);
        CHECK(strstr(buf, bad[i].want) != NULL);
        CHECK(strncmp(buf, "synthetic \"", 11) == 0);
        if (!strstr(buf, bad[i].want))
            fprintf(stderr, "  got: %s\n", buf);
    }
    CHECK(t == NULL);
    /* sizes hwloc would take minutes to load: refused before it sees them
     * (the limits of redist/topo.h; "core:10000" took 72 s) */
    struct {
        const char *desc, *want;
    } big[] = {
        {"core:10000", "word 1 \"core:10000\": a count is at most 256"},
        {"pack:100000 core:100000", "word 1 \"pack:100000\": a count is at "
                                    "most 256"},
        {"core:99999999999999999999999", "a count is at most 256"},
        {"pack:2 core:257", "word 2 \"core:257\": a count is at most 256"},
        {"pack:64 core:64 pu:2", "word 3 \"pu:2\": the counts multiply to "
                                 "more than 4096 PUs"},
        {"pack:4 numa:4 l3:4 l2:64 l1:1 core:1 pu:1",
         "16468 objects in all levels (PUs, cores, caches, ...); at most "
         "16384"},
        {"pack:4 [numa] numa:4 l3:4 l2:64 l1:1 core:1",
         "16472 objects in all levels"},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        redist_error_clear(&err);
        CHECK(redist_topo_load_synthetic(big[i].desc, &t, &err) ==
              REDIST_ERR_LIMIT);
        redist_error_format(&err, buf, sizeof buf);
        CHECK(strstr(buf, big[i].want) != NULL);
        if (!strstr(buf, big[i].want))
            fprintf(stderr, "  big %zu: got: %s\n", i, buf);
    }
    CHECK(t == NULL);
    /* the limits themselves load */
    const char *edge[] = {"pack:16 core:256", "core:256 pu:16",
                          "pack:4 numa:4 l3:4 l2:64 core:1 pu:1"};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        redist_topo_info_t in;
        t = synthetic(edge[i]);
        CHECK(t != NULL);
        if (!t)
            continue;
        redist_topo_get_info(t, &in);
        CHECK(in.pus == REDIST_TOPO_SYNTHETIC_MAX_PUS);
        redist_topo_free(t);
        t = NULL;
    }
    /* XML: missing, not XML, XML but not hwloc's */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/none.xml", tmpdir);
    redist_error_clear(&err);
    CHECK(redist_topo_load_xml(missing, &t, &err) == REDIST_ERR_IO);
    CHECK(strcmp(err.source, missing) == 0 &&
          strstr(err.text, "cannot open") != NULL);
    const char *notxml = write_file("bad.xml", "<topology><object");
    redist_error_clear(&err);
    CHECK(redist_topo_load_xml(notxml, &t, &err) == REDIST_ERR_PARSE);
    CHECK(strcmp(err.source, notxml) == 0 &&
          strstr(err.text, "not an hwloc XML topology") != NULL);
    const char *other = write_file("other.xml", "<?xml version=\"1.0\"?>\n"
                                                "<html><body/></html>\n");
    redist_error_clear(&err);
    CHECK(redist_topo_load_xml(other, &t, &err) == REDIST_ERR_PARSE);
    CHECK(t == NULL);

    /* rank maps */
    t = synthetic("pack:2 core:4");
    if (!t)
        return;
    struct {
        const char *text, *want;
        redist_status_t st;
    } maps[] = {
        {"{\"ranks\": [\n  {\"host\": 0, \"core\": 1},\n  {\"host\": 0 "
         "\"core\": 2}]}",
         "map.json:3:19: JSON syntax error: '}' expected near '\"core\"'",
         REDIST_ERR_PARSE},
        {"", "map.json: empty file: expected a JSON object", REDIST_ERR_PARSE},
        {"{\"ranks_per_host\": 0}",
         "map.json: ranks_per_host: 0 is out of range: a count from 1 to "
         "10^6",
         REDIST_ERR_INVALID},
        {"{\"ranks_per_host\": \"2\"}",
         "ranks_per_host: expected a count from 1 to 10^6, got a string",
         REDIST_ERR_INVALID},
        {"{\"hosts\": 0, \"ranks_per_host\": 1}",
         "hosts: 0 is out of range: a host count from 1 to 10^9",
         REDIST_ERR_INVALID},
        {"[1, 2]", "a rank map is a JSON object", REDIST_ERR_INVALID},
        {"{\"ranks\": [{\"host\": 0, \"core\": 8}]}",
         "map.json: ranks[0].core: core 8 is out of range (the topology has "
         "8 cores: 0..7)",
         REDIST_ERR_INVALID},
        {"{\"ranks\": [{\"core\": 1}, {\"pu\": -1}]}",
         "ranks[1].pu: PU -1 is out of range", REDIST_ERR_INVALID},
        {"{\"ranks\": [{\"host\": 0}]}",
         "ranks[0]: give exactly one of \"core\" and \"pu\"",
         REDIST_ERR_INVALID},
        {"{\"ranks\": [{\"host\": 0, \"core\": 1, \"socket\": 0}]}",
         "ranks[0].socket: unknown key", REDIST_ERR_INVALID},
        {"{\"hosts\": [\"a\"], \"ranks\": [{\"host\": \"b\", \"core\": 1}]}",
         "ranks[0].host: host \"b\" is not in \"hosts\"", REDIST_ERR_INVALID},
        {"{\"hosts\": 2, \"ranks\": [{\"host\": 2, \"core\": 1}]}",
         "ranks[0].host: host 2 is out of range", REDIST_ERR_INVALID},
        {"{\"hosts\": [\"a\", \"a\"], \"ranks_per_host\": 1}",
         "hosts[1]: host \"a\" is listed twice", REDIST_ERR_INVALID},
        {"{\"ranks_per_host\": 9}",
         "ranks_per_host: 9 ranks per host do not fit on the 8 cores",
         REDIST_ERR_INVALID},
        {"{\"ranks_per_host\": 2, \"map_by\": \"socket\"}",
         "map_by: unknown value \"socket\"", REDIST_ERR_INVALID},
        {"{\"ranks_per_host\": 2, \"ranks\": []}", "not both",
         REDIST_ERR_INVALID},
        {"{\"hosts\": 2}", "expected \"ranks\"", REDIST_ERR_INVALID},
        {"{\"ranks\": [], \"colour\": 1}", "colour: unknown key",
         REDIST_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        redist_placement_t *p = NULL;
        const char *path = write_file("map.json", maps[i].text);
        redist_error_clear(&err);
        CHECK(redist_placement_load_file(t, path, &p, &err) == maps[i].st);
        CHECK(p == NULL);
        redist_error_format(&err, buf, sizeof buf);
        CHECK(strstr(buf, maps[i].want) != NULL);
        CHECK(strncmp(buf, path, strlen(path)) == 0);
        if (!strstr(buf, maps[i].want))
            fprintf(stderr, "  map %zu: got: %s\n", i, buf);
        redist_placement_free(p);
    }
    redist_placement_t *p = NULL;
    redist_error_clear(&err);
    CHECK(redist_placement_load_file(t, missing, &p, &err) == REDIST_ERR_IO);
    CHECK(strcmp(err.source, missing) == 0);
    redist_topo_free(t);
    /* NULL arguments are errors, not crashes */
    CHECK(redist_topo_load_synthetic(NULL, &t, NULL) == REDIST_ERR_INVALID);
    CHECK(redist_topo_load_xml(NULL, &t, NULL) == REDIST_ERR_INVALID);
    CHECK(redist_placement_default(NULL, &p, NULL) == REDIST_ERR_INVALID);
    CHECK(redist_topo_axis_links(NULL, NULL, NULL, NULL) ==
          REDIST_ERR_INVALID);
    redist_topo_free(NULL);
    redist_placement_free(NULL);
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/redist-topo-XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_load();
    test_links();
    test_choices();
    test_errors();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    printf("topo: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
