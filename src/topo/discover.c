/*
 * Topology discovery with hwloc: the local machine, an hwloc XML file or
 * a synthetic description.  hwloc's tree is reduced to a table of its
 * PUs (core, outermost cache, NUMA node, package of each) in
 * O(PUs log PUs), and hwloc's object is freed: the rest of the topology
 * layer (placement.c, rank_map.c, links.c) only reads that table.
 * Synthetic descriptions are checked word by word and capped before
 * hwloc loads them (hwloc only says "invalid", and loads wide levels
 * slowly).  Memory: O(PUs).
 */
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static int cache_level(hwloc_obj_t o)
{
    return o->attr ? (int)o->attr->cache.depth : 0;
}

typedef struct {
    unsigned os; /* a PU's OS index, and its logical index */
    int pu;
} rd_os_pu;

static int cmp_os(const void *a, const void *b)
{
    unsigned x = ((const rd_os_pu *)a)->os, y = ((const rd_os_pu *)b)->os;
    return (x > y) - (x < y);
}

/* The PU table from hwloc's PUs (their core, outermost cache and
 * package), in logical order; byos[i] = PU i's OS index.  The counts of
 * the cores (PUs without a core are their own), of the caches found and
 * whether some PU has none, and the first cache's level. */
typedef struct pu_counts {
    int ncores, ncache, nocache, level;
} pu_counts;

static void pu_table(hwloc_topology_t hw, redist_topo_t *t, int ncore_obj,
                     rd_os_pu *byos, pu_counts *n)
{
    n->ncores = ncore_obj;
    for (int i = 0; i < t->npu; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, (unsigned)i);
        hwloc_obj_t cache = NULL, core = NULL, pkg = NULL;
        for (hwloc_obj_t o = pu->parent; o; o = o->parent) {
            if (hwloc_obj_type_is_cache(o->type))
                cache = o; /* the outermost one wins */
            if (o->type == HWLOC_OBJ_CORE && !core)
                core = o;
            if (o->type == HWLOC_OBJ_PACKAGE && !pkg)
                pkg = o;
        }
        rd_puloc *l = &t->pu[i];
        if (core) {
            l->core = (int)core->logical_index;
            if (t->core_pu[l->core] < 0) /* PUs come in logical order */
                t->core_pu[l->core] = i;
        } else {
            l->core = n->ncores++; /* a PU without a core is its own core */
            t->core_pu[l->core] = i;
        }
        l->package = pkg ? (int)pkg->logical_index : 0;
        l->numa = -1; /* set by pu_numa */
        byos[i].os = pu->os_index;
        byos[i].pu = i;
        if (cache) {
            /* userdata is ours: the cache's number + 1 once numbered */
            if (!cache->userdata) {
                cache->userdata = (void *)(intptr_t)++n->ncache;
                if (!n->level)
                    n->level = cache_level(cache);
            }
            l->cache = (int)(intptr_t)cache->userdata - 1;
        } else {
            l->cache = -1; /* numbered by core in extract */
            n->nocache = 1;
        }
    }
    for (int k = 0; k < ncore_obj; k++)
        if (t->core_pu[k] < 0) /* a core without PUs */
            t->core_pu[k] = 0;
}

/* Each PU's NUMA node: the first whose cpuset holds it (its cpuset names
 * PUs by OS index), else 0.  Sorts byos. */
static void pu_numa(hwloc_topology_t hw, redist_topo_t *t, rd_os_pu *byos,
                    int nnuma)
{
    int npu = t->npu;
    qsort(byos, (size_t)npu, sizeof *byos, cmp_os);
    for (int j = 0; j < nnuma; j++) {
        hwloc_obj_t n =
            hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)j);
        if (!n->cpuset)
            continue;
        unsigned os;
        hwloc_bitmap_foreach_begin(os, n->cpuset)
        {
            rd_os_pu key = {os, 0};
            rd_os_pu *f = bsearch(&key, byos, (size_t)npu, sizeof *byos,
                                  cmp_os);
            if (f && t->pu[f->pu].numa < 0)
                t->pu[f->pu].numa = j;
        }
        hwloc_bitmap_foreach_end();
    }
    for (int i = 0; i < npu; i++)
        if (t->pu[i].numa < 0)
            t->pu[i].numa = 0;
}

/* Reduce hwloc's tree to the PU table in O(PUs log PUs) (plus the
 * NUMA nodes' cpusets); hw is left to the caller. */
static redist_status_t extract(hwloc_topology_t hw, const char *source,
                               redist_topo_t **out, redist_error_t *err)
{
    int npu = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    if (npu <= 0)
        return rd_error(err, REDIST_ERR_INVALID, source, NULL,
                        "the topology has no processing units (PUs)");
    int ncore_obj = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
    if (ncore_obj < 0)
        ncore_obj = 0;
    redist_topo_t *t = calloc(1, sizeof *t);
    if (t) {
        t->pu = calloc((size_t)npu, sizeof *t->pu);
        t->core_pu =
            calloc((size_t)npu + (size_t)ncore_obj, sizeof *t->core_pu);
    }
    rd_os_pu *byos = malloc((size_t)npu * sizeof *byos);
    if (!t || !t->pu || !t->core_pu || !byos) {
        free(byos);
        redist_topo_free(t);
        return rd_error(err, REDIST_ERR_NOMEM, source, NULL, "out of memory");
    }
    t->npu = npu;
    for (int k = 0; k < ncore_obj; k++)
        t->core_pu[k] = -1;
    int nnuma = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
    int npkg = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PACKAGE);
    pu_counts n = {0, 0, 0, 0};
    pu_table(hw, t, ncore_obj, byos, &n);
    pu_numa(hw, t, byos, nnuma);
    free(byos);
    int ndomains = n.ncache;
    if (n.nocache) {
        /* PUs without a cache share one only with their own core */
        for (int i = 0; i < npu; i++)
            if (t->pu[i].cache < 0)
                t->pu[i].cache = n.ncache + t->pu[i].core;
        ndomains = 0;
        for (int i = 0; i < npu; i++)
            if (t->pu[i].cache + 1 > ndomains)
                ndomains = t->pu[i].cache + 1;
    }
    redist_topo_info_t *in = &t->info;
    in->packages = npkg > 0 ? npkg : 1;
    in->numa_nodes = nnuma > 0 ? nnuma : 1;
    in->caches = ndomains;
    in->cores = n.ncores;
    in->pus = npu;
    if (n.ncache && n.level > 0)
        snprintf(in->cache_name, sizeof in->cache_name, "L%d", n.level);
    else
        snprintf(in->cache_name, sizeof in->cache_name, "core");
    rd_strlcpy(in->source, source, sizeof in->source);
    if (hwloc_topology_export_synthetic(
            hw, in->levels, sizeof in->levels,
            HWLOC_TOPOLOGY_EXPORT_SYNTHETIC_FLAG_NO_ATTRS) < 0)
        in->levels[0] = '\0';
    const char *host =
        hwloc_obj_get_info_by_name(hwloc_get_root_obj(hw), "HostName");
    rd_strlcpy(in->hostname, host ? host : "", sizeof in->hostname);
    *out = t;
    return REDIST_OK;
}

redist_status_t redist_topo_load_local(redist_topo_t **out,
                                       redist_error_t *err)
{
    hwloc_topology_t hw;
    const char *src = "local machine";
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL output");
    if (hwloc_topology_init(&hw))
        return rd_error(err, REDIST_ERR_NOMEM, src, NULL,
                        "hwloc_topology_init failed");
    redist_status_t st;
    if (hwloc_topology_load(hw))
        st = rd_error(err, REDIST_ERR_IO, src, NULL,
                      "hwloc cannot discover this machine: %s",
                      strerror(errno));
    else
        st = extract(hw, src, out, err);
    hwloc_topology_destroy(hw);
    return st;
}

/* lstopo writes some kilobytes per core: 16 MiB is far beyond any machine */
#define RD_MAX_XML_BYTES (16u << 20)

redist_status_t redist_topo_load_xml(const char *path, redist_topo_t **out,
                                     redist_error_t *err)
{
    hwloc_topology_t hw;
    char *buf;
    size_t len;
    if (!path || !out)
        return rd_error(err, REDIST_ERR_INVALID, path, NULL,
                        "NULL argument");
    redist_status_t st = rd_read_file(path, RD_MAX_XML_BYTES,
                                      "an hwloc XML topology", &buf, &len, err);
    if (st)
        return st;
    if (hwloc_topology_init(&hw)) {
        free(buf);
        return rd_error(err, REDIST_ERR_NOMEM, path, NULL,
                        "hwloc_topology_init failed");
    }
    char src[REDIST_ERROR_SOURCE_LENGTH];
    snprintf(src, sizeof src, "hwloc XML %.200s", path);
    /* hwloc reads the buffer up to its length, the terminating NUL
     * included */
    if (len > INT_MAX - 1 ||
        hwloc_topology_set_xmlbuffer(hw, buf, (int)len + 1) ||
        hwloc_topology_load(hw))
        st = rd_error(err, REDIST_ERR_PARSE, path, NULL,
                      "not an hwloc XML topology (hwloc cannot load it; "
                      "`HWLOC_XML_VERBOSE=1 lstopo -i %.120s` shows why; "
                      "write one with `lstopo FILE.xml` on the machine)",
                      path);
    else if ((st = extract(hw, src, out, err)))
        rd_error_set_source(err, path);
    hwloc_topology_destroy(hw);
    free(buf);
    return st;
}

static const char *synthetic_types =
    "types: pack, numa, group, die, l3, l2, l1, core, pu; e.g. \"pack:2 "
    "numa:2 core:8 pu:1\"";

/* Word w (wl chars) of a synthetic description, TYPE:COUNT with optional
 * attributes: its type, and *level_objects (the objects of the level
 * above) multiplied by its count; else the status, and the reason in
 * why. */
static redist_status_t check_word(const char *w, int wl,
                                  hwloc_obj_type_t *type,
                                  long long *level_objects, char *why,
                                  size_t size)
{
    const char *colon = memchr(w, ':', (size_t)wl);
    size_t tl = colon ? (size_t)(colon - w) : (size_t)wl;
    const char *paren = memchr(w, '(', (size_t)wl);
    if (paren && (size_t)(paren - w) < tl)
        tl = (size_t)(paren - w);
    char tname[32];
    if (tl == 0 || tl >= sizeof tname) {
        snprintf(why, size, "expected TYPE:COUNT (%s)", synthetic_types);
        return REDIST_ERR_INVALID;
    }
    memcpy(tname, w, tl);
    tname[tl] = '\0';
    if (hwloc_type_sscanf(tname, type, NULL, 0) < 0) {
        snprintf(why, size, "unknown object type \"%s\" (%s)", tname,
                 synthetic_types);
        return REDIST_ERR_INVALID;
    }
    if (!colon) {
        snprintf(why, size, "expected TYPE:COUNT, the count is missing (%s)",
                 synthetic_types);
        return REDIST_ERR_INVALID;
    }
    const char *c = colon + 1, *end = w + wl;
    const char *d = c;
    long long n = 0;
    for (; d < end && *d >= '0' && *d <= '9'; d++)
        if (n <= REDIST_TOPO_SYNTHETIC_MAX_OBJECTS) /* saturates */
            n = n * 10 + (*d - '0');
    if (d == c || n < 1 || (d < end && *d != '(')) {
        snprintf(why, size, "the count must be a positive integer");
        return REDIST_ERR_INVALID;
    }
    if (n > REDIST_TOPO_SYNTHETIC_MAX_LEVEL) {
        snprintf(why, size,
                 "a count is at most %d (hwloc loads wide levels slowly); "
                 "split the level, e.g. \"pack:4 core:128\" for 512 cores",
                 REDIST_TOPO_SYNTHETIC_MAX_LEVEL);
        return REDIST_ERR_LIMIT;
    }
    *level_objects *= n;
    if (*level_objects > REDIST_TOPO_SYNTHETIC_MAX_PUS) {
        snprintf(why, size,
                 "the counts multiply to more than %d PUs; a synthetic "
                 "topology is one host of at most that many (more hosts: a "
                 "rank map)",
                 REDIST_TOPO_SYNTHETIC_MAX_PUS);
        return REDIST_ERR_LIMIT;
    }
    return REDIST_OK;
}

/* Check a synthetic description word by word (hwloc only says "invalid")
 * and append " pu:1" when its last level is not pu. */
static redist_status_t check_synthetic(const char *desc, const char *src,
                                       char *fixed, size_t size,
                                       redist_error_t *err)
{
    const char *p = desc;
    int word = 0, levels = 0;
    long long level_objects = 1, objects = 0;
    hwloc_obj_type_t last = HWLOC_OBJ_PU;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        int wl = (int)(p - w);
        word++;
        if (*w == '[') { /* a memory child such as [numa]: one per object */
            objects += level_objects;
            continue;
        }
        char why[256];
        hwloc_obj_type_t type;
        redist_status_t st =
            check_word(w, wl, &type, &level_objects, why, sizeof why);
        if (st)
            return rd_error(err, st, src, NULL, "word %d \"%.*s\": %s", word,
                            wl, w, why);
        objects += level_objects;
        last = type;
        levels++;
    }
    if (last != HWLOC_OBJ_PU)
        objects += level_objects; /* the " pu:1" appended below */
    if (objects > REDIST_TOPO_SYNTHETIC_MAX_OBJECTS)
        return rd_error(err, REDIST_ERR_LIMIT, src, NULL,
                        "%lld objects in all levels (PUs, cores, caches, "
                        "...); at most %d",
                        objects, REDIST_TOPO_SYNTHETIC_MAX_OBJECTS);
    if (!levels)
        return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                        "empty description (%s)", synthetic_types);
    int n = snprintf(fixed, size, "%s%s", desc,
                     last == HWLOC_OBJ_PU ? "" : " pu:1");
    if (n < 0 || (size_t)n >= size)
        return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                        "description too long");
    return REDIST_OK;
}

redist_status_t redist_topo_load_synthetic(const char *desc,
                                           redist_topo_t **out,
                                           redist_error_t *err)
{
    char src[REDIST_ERROR_SOURCE_LENGTH], fixed[1024];
    hwloc_topology_t hw;
    if (!desc || !out)
        return rd_error(err, REDIST_ERR_INVALID, "synthetic", NULL,
                        "NULL argument");
    snprintf(src, sizeof src, "synthetic \"%.200s\"", desc);
    redist_status_t st = check_synthetic(desc, src, fixed, sizeof fixed, err);
    if (st)
        return st;
    if (hwloc_topology_init(&hw))
        return rd_error(err, REDIST_ERR_NOMEM, src, NULL,
                        "hwloc_topology_init failed");
    if (hwloc_topology_set_synthetic(hw, fixed) || hwloc_topology_load(hw))
        st = rd_error(err, REDIST_ERR_INVALID, src, NULL,
                      "hwloc rejects it: levels go from the largest object "
                      "down to pu, each once, caches from the outermost "
                      "(e.g. \"pack:2 numa:2 l3:1 core:8 pu:1\"; "
                      "`HWLOC_SYNTHETIC_VERBOSE=1 lstopo -i \"...\"` says "
                      "why)");
    else
        st = extract(hw, src, out, err);
    hwloc_topology_destroy(hw);
    return st;
}

void redist_topo_free(redist_topo_t *t)
{
    if (!t)
        return;
    free(t->pu);
    free(t->core_pu);
    free(t);
}

void redist_topo_get_info(const redist_topo_t *t, redist_topo_info_t *out)
{
    if (t && out)
        *out = t->info;
}
