/*
 * Topology (hwloc) and rank placement: the link level of each mesh axis.
 *
 * A topology is loaded with hwloc (the local machine, an XML file or a
 * synthetic description), reduced to a table of its PUs (core, outermost
 * cache, NUMA node, package of each), and hwloc's object is freed: the
 * rest of the library, and the placements, only read that table.
 *
 * Link between two ranks: the first level, from the top, at which their
 * locations differ (host, package, NUMA node, cache).  Because it is the
 * first difference in a fixed order, link(x, z) <= max(link(x, y),
 * link(y, z)) (an ultrametric): the slowest link within a group is the
 * slowest from its first member.  So an axis costs O(devices) to
 * analyse: every group once, every member once.
 */
#include <errno.h>
#include <hwloc.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/topo.h"
#include "../spec/spec_internal.h"

typedef struct rd_puloc {
    int core, cache, numa, package;
} rd_puloc;

struct redist_topo {
    redist_topo_info_t info;
    int npu;
    rd_puloc *pu;  /* by logical PU index */
    int *core_pu;  /* first PU of each core */
};

/* ----------------------------------------------------------- loading */

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
    int ncores = ncore_obj, ncache = 0, nocache = 0;
    int level = 0;
    for (int i = 0; i < npu; i++) {
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
            l->core = ncores++; /* a PU without a core is its own core */
            t->core_pu[l->core] = i;
        }
        l->package = pkg ? (int)pkg->logical_index : 0;
        l->numa = -1; /* set below */
        byos[i].os = pu->os_index;
        byos[i].pu = i;
        if (cache) {
            /* userdata is ours: the cache's number + 1 once numbered */
            if (!cache->userdata) {
                cache->userdata = (void *)(intptr_t)++ncache;
                if (!level)
                    level = cache_level(cache);
            }
            l->cache = (int)(intptr_t)cache->userdata - 1;
        } else {
            l->cache = -1; /* numbered by core below */
            nocache = 1;
        }
    }
    for (int k = 0; k < ncore_obj; k++)
        if (t->core_pu[k] < 0) /* a core without PUs */
            t->core_pu[k] = 0;
    /* each PU's NUMA node: the first whose cpuset holds it (its cpuset
     * names PUs by OS index), else 0 */
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
    free(byos);
    for (int i = 0; i < npu; i++)
        if (t->pu[i].numa < 0)
            t->pu[i].numa = 0;
    int ndomains = ncache;
    if (nocache) {
        /* PUs without a cache share one only with their own core */
        for (int i = 0; i < npu; i++)
            if (t->pu[i].cache < 0)
                t->pu[i].cache = ncache + t->pu[i].core;
        ndomains = 0;
        for (int i = 0; i < npu; i++)
            if (t->pu[i].cache + 1 > ndomains)
                ndomains = t->pu[i].cache + 1;
    }
    redist_topo_info_t *in = &t->info;
    in->packages = npkg > 0 ? npkg : 1;
    in->numa_nodes = nnuma > 0 ? nnuma : 1;
    in->caches = ndomains;
    in->cores = ncores;
    in->pus = npu;
    if (ncache && level > 0)
        snprintf(in->cache_name, sizeof in->cache_name, "L%d", level);
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

/* Check a synthetic description word by word (hwloc only says "invalid")
 * and append " pu:1" when its last level is not pu. */
static redist_status_t check_synthetic(const char *desc, const char *src,
                                       char *fixed, size_t size,
                                       redist_error_t *err)
{
    static const char *types = "types: pack, numa, group, die, l3, l2, l1, "
                               "core, pu; e.g. \"pack:2 numa:2 core:8 pu:1\"";
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
        const char *colon = memchr(w, ':', (size_t)wl);
        size_t tl = colon ? (size_t)(colon - w) : (size_t)wl;
        const char *paren = memchr(w, '(', (size_t)wl);
        if (paren && (size_t)(paren - w) < tl)
            tl = (size_t)(paren - w);
        char tname[32];
        hwloc_obj_type_t type;
        if (tl == 0 || tl >= sizeof tname)
            return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                            "word %d \"%.*s\": expected TYPE:COUNT (%s)",
                            word, wl, w, types);
        memcpy(tname, w, tl);
        tname[tl] = '\0';
        if (hwloc_type_sscanf(tname, &type, NULL, 0) < 0)
            return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                            "word %d \"%.*s\": unknown object type \"%s\" "
                            "(%s)",
                            word, wl, w, tname, types);
        if (!colon)
            return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                            "word %d \"%.*s\": expected TYPE:COUNT, the "
                            "count is missing (%s)",
                            word, wl, w, types);
        const char *c = colon + 1, *end = w + wl;
        const char *d = c;
        long long n = 0;
        for (; d < end && *d >= '0' && *d <= '9'; d++)
            if (n <= REDIST_TOPO_SYNTHETIC_MAX_OBJECTS) /* saturates */
                n = n * 10 + (*d - '0');
        if (d == c || n < 1 || (d < end && *d != '('))
            return rd_error(err, REDIST_ERR_INVALID, src, NULL,
                            "word %d \"%.*s\": the count must be a positive "
                            "integer",
                            word, wl, w);
        if (n > REDIST_TOPO_SYNTHETIC_MAX_LEVEL)
            return rd_error(err, REDIST_ERR_LIMIT, src, NULL,
                            "word %d \"%.*s\": a count is at most %d (hwloc "
                            "loads wide levels slowly); split the level, e.g. "
                            "\"pack:4 core:128\" for 512 cores",
                            word, wl, w, REDIST_TOPO_SYNTHETIC_MAX_LEVEL);
        level_objects *= n;
        if (level_objects > REDIST_TOPO_SYNTHETIC_MAX_PUS)
            return rd_error(err, REDIST_ERR_LIMIT, src, NULL,
                            "word %d \"%.*s\": the counts multiply to more "
                            "than %d PUs; a synthetic topology is one host of "
                            "at most that many (more hosts: a rank map)",
                            word, wl, w, REDIST_TOPO_SYNTHETIC_MAX_PUS);
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
                        "empty description (%s)", types);
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

/* ---------------------------------------------------------- placement */

enum { PL_RULE, PL_EXPLICIT };

struct redist_placement {
    int npu, ncores;
    rd_puloc *pu;
    int mode;
    int64_t nranks; /* INT64_MAX: unbounded */
    int64_t nhosts; /* 0: unbounded */
    char **names;   /* nhosts names or NULL */
    /* PL_RULE: rank r on host r / per_host, PU slot_pu[r % per_host] */
    int64_t per_host;
    int *slot_pu;
    /* PL_EXPLICIT */
    int64_t *host;
    int *rank_pu;
    char desc[384];
};

static redist_placement_t *placement_new(const redist_topo_t *t)
{
    redist_placement_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pu = malloc((size_t)t->npu * sizeof *p->pu);
    if (!p->pu) {
        free(p);
        return NULL;
    }
    memcpy(p->pu, t->pu, (size_t)t->npu * sizeof *p->pu);
    p->npu = t->npu;
    p->ncores = t->info.cores;
    return p;
}

void redist_placement_free(redist_placement_t *p)
{
    if (!p)
        return;
    if (p->names)
        for (int64_t h = 0; h < p->nhosts; h++)
            free(p->names[h]);
    free(p->names);
    free(p->pu);
    free(p->slot_pu);
    free(p->host);
    free(p->rank_pu);
    free(p);
}

redist_status_t redist_placement_default(const redist_topo_t *t,
                                         redist_placement_t **out,
                                         redist_error_t *err)
{
    if (!t || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL argument");
    redist_placement_t *p = placement_new(t);
    if (p)
        p->slot_pu = malloc((size_t)t->info.cores * sizeof *p->slot_pu);
    if (!p || !p->slot_pu) {
        redist_placement_free(p);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    p->mode = PL_RULE;
    p->per_host = t->info.cores;
    for (int k = 0; k < t->info.cores; k++)
        p->slot_pu[k] = t->core_pu[k];
    p->nranks = INT64_MAX;
    p->nhosts = 0;
    snprintf(p->desc, sizeof p->desc,
             "default: one rank per core in order, %d per host", t->info.cores);
    *out = p;
    return REDIST_OK;
}

redist_status_t redist_placement_create(const redist_topo_t *t,
                                        int64_t nranks, const int64_t hosts[],
                                        const int pus[],
                                        redist_placement_t **out,
                                        redist_error_t *err)
{
    if (!t || !out || nranks < 1 || !hosts || !pus)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL argument or no ranks");
    int64_t nh = 0;
    for (int64_t r = 0; r < nranks; r++) {
        char path[48];
        snprintf(path, sizeof path, "ranks[%lld]", (long long)r);
        if (hosts[r] < 0)
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "host %lld is negative", (long long)hosts[r]);
        if (pus[r] < 0 || pus[r] >= t->npu)
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "PU %d is out of range (the topology has %d PUs: "
                            "0..%d)",
                            pus[r], t->npu, t->npu - 1);
        if (hosts[r] >= nh) /* the count, without overflow at INT64_MAX */
            nh = hosts[r] == INT64_MAX ? INT64_MAX : hosts[r] + 1;
    }
    redist_placement_t *p = placement_new(t);
    if (p) {
        p->host = malloc((size_t)nranks * sizeof *p->host);
        p->rank_pu = malloc((size_t)nranks * sizeof *p->rank_pu);
    }
    if (!p || !p->host || !p->rank_pu) {
        redist_placement_free(p);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    p->mode = PL_EXPLICIT;
    memcpy(p->host, hosts, (size_t)nranks * sizeof *p->host);
    memcpy(p->rank_pu, pus, (size_t)nranks * sizeof *p->rank_pu);
    p->nranks = nranks;
    p->nhosts = nh;
    snprintf(p->desc, sizeof p->desc, "%lld ranks on %lld host%s",
             (long long)nranks, (long long)nh, nh == 1 ? "" : "s");
    *out = p;
    return REDIST_OK;
}

/* ------------------------------------------------------- rank map JSON */

typedef struct {
    const redist_topo_t *t;
    const char *src;
    redist_error_t *err;
} mapctx;

static redist_status_t bad(mapctx *c, const char *path, const char *fmt, ...)
    RD_PRINTF(3, 4);
static redist_status_t bad(mapctx *c, const char *path, const char *fmt, ...)
{
    char text[REDIST_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return rd_error(c->err, REDIST_ERR_INVALID, c->src, path, "%s", text);
}

static redist_status_t get_index(mapctx *c, json_t *v, const char *path,
                                 int64_t limit, const char *what,
                                 int64_t *out)
{
    if (!json_is_integer(v))
        return bad(c, path, "expected %s index (an integer), got %s", what,
                   rd_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= limit)
        return bad(c, path, "%s %lld is out of range (the topology has %lld "
                            "%ss: 0..%lld)",
                   what, (long long)x, (long long)limit, what,
                   (long long)limit - 1);
    *out = (int64_t)x;
    return REDIST_OK;
}

/* The PUs of the `ranks_per_host` slots of a host under `map_by`. */
static redist_status_t rule_slots(mapctx *c, const char *map_by,
                                  int64_t per_host, int *slot)
{
    const redist_topo_t *t = c->t;
    if (strcmp(map_by, "core") == 0 || strcmp(map_by, "pu") == 0) {
        int pu = map_by[0] == 'p';
        int64_t cap = pu ? t->npu : t->info.cores;
        if (per_host > cap)
            return bad(c, "ranks_per_host",
                       "%lld ranks per host do not fit on the %lld %ss of "
                       "a host (map_by %s)",
                       (long long)per_host, (long long)cap,
                       pu ? "PU" : "core", map_by);
        for (int64_t k = 0; k < per_host; k++)
            slot[k] = pu ? (int)k : t->core_pu[k];
        return REDIST_OK;
    }
    int numa = strcmp(map_by, "numa") == 0;
    if (!numa && strcmp(map_by, "package") != 0)
        return bad(c, "map_by", "unknown value \"%.60s\" (core, pu, numa, "
                                "package)",
                   map_by);
    int nobj = numa ? t->info.numa_nodes : t->info.packages;
    /* the objects' cores in logical order; objects without cores skipped */
    int *ncore = calloc((size_t)nobj, sizeof *ncore);
    int *objs = calloc((size_t)nobj, sizeof *objs);
    redist_status_t st = REDIST_OK;
    if (!ncore || !objs) {
        st = rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL,
                      "out of memory");
        goto out;
    }
    for (int k = 0; k < t->info.cores; k++) {
        const rd_puloc *l = &t->pu[t->core_pu[k]];
        ncore[numa ? l->numa : l->package]++;
    }
    int nuse = 0;
    for (int j = 0; j < nobj; j++)
        if (ncore[j])
            objs[nuse++] = j;
    for (int64_t k = 0; k < per_host && !st; k++) {
        int j = objs[k % nuse];
        int want = (int)(k / nuse), seen = 0, found = -1;
        for (int q = 0; q < t->info.cores && found < 0; q++) {
            const rd_puloc *l = &t->pu[t->core_pu[q]];
            if ((numa ? l->numa : l->package) == j && seen++ == want)
                found = q;
        }
        if (found < 0)
            st = bad(c, "ranks_per_host",
                     "%lld ranks per host do not fit: %s %d has %d cores, "
                     "the rule needs %lld (map_by %s)",
                     (long long)per_host, numa ? "NUMA node" : "package", j,
                     ncore[j], (long long)((per_host - k % nuse + nuse - 1) / nuse), map_by);
        else
            slot[k] = t->core_pu[found];
    }
out:
    free(ncore);
    free(objs);
    return st;
}

static redist_status_t parse_map(mapctx *c, json_t *root,
                                 redist_placement_t **out)
{
    const redist_topo_t *t = c->t;
    const char *key;
    json_t *v;
    char path[96];
    redist_placement_t *p = NULL;
    redist_status_t st = REDIST_OK;
    if (!json_is_object(root))
        return bad(c, NULL, "a rank map is a JSON object, not %s", rd_json_kind(root));
    json_object_foreach(root, key, v) {
        if (strcmp(key, "hosts") && strcmp(key, "ranks") &&
            strcmp(key, "ranks_per_host") && strcmp(key, "map_by") &&
            strcmp(key, "comment")) {
            snprintf(path, sizeof path, "%.80s", key);
            return bad(c, path, "unknown key \"%.80s\" (allowed: hosts, "
                                "ranks, ranks_per_host, map_by, comment)",
                       key);
        }
    }
    json_t *hosts = json_object_get(root, "hosts");
    json_t *ranks = json_object_get(root, "ranks");
    json_t *per = json_object_get(root, "ranks_per_host");
    json_t *map_by = json_object_get(root, "map_by");
    if (ranks && (per || map_by))
        return bad(c, per ? "ranks_per_host" : "map_by",
                   "give either \"ranks\" (one entry per rank) or "
                   "\"ranks_per_host\" with \"map_by\", not both");
    if (!ranks && !per)
        return bad(c, NULL, "expected \"ranks\" (one entry per rank) or "
                            "\"ranks_per_host\" (a rule)");
    int64_t nhosts = 0;
    if (hosts) {
        if (json_is_integer(hosts)) {
            if (json_integer_value(hosts) < 1 ||
                json_integer_value(hosts) > 1000000000)
                return bad(c, "hosts", "%lld is out of range: a host count "
                                       "from 1 to 10^9",
                           (long long)json_integer_value(hosts));
            nhosts = json_integer_value(hosts);
        } else if (json_is_array(hosts)) {
            nhosts = (int64_t)json_array_size(hosts);
            if (nhosts == 0)
                return bad(c, "hosts", "the host list is empty");
            for (size_t i = 0; i < (size_t)nhosts; i++) {
                json_t *h = json_array_get(hosts, i);
                snprintf(path, sizeof path, "hosts[%zu]", i);
                if (!json_is_string(h) || !json_string_length(h))
                    return bad(c, path, "expected a host name, got %s",
                               json_is_string(h) ? "an empty string"
                                                 : rd_json_kind(h));
                for (size_t j = 0; j < i; j++)
                    if (strcmp(json_string_value(h),
                               json_string_value(json_array_get(hosts, j))) ==
                        0)
                        return bad(c, path, "host \"%.60s\" is listed twice "
                                            "(also hosts[%zu])",
                                   json_string_value(h), j);
            }
        } else {
            return bad(c, "hosts", "expected a list of host names or a "
                                   "count, got %s",
                       rd_json_kind(hosts));
        }
    }
    if (!(p = placement_new(t)))
        goto nomem;
    if (per) {
        if (!json_is_integer(per)) {
            st = bad(c, "ranks_per_host", "expected a count from 1 to 10^6, "
                                          "got %s",
                     rd_json_kind(per));
            goto fail;
        }
        if (json_integer_value(per) < 1 || json_integer_value(per) > 1000000) {
            st = bad(c, "ranks_per_host", "%lld is out of range: a count "
                                          "from 1 to 10^6",
                     (long long)json_integer_value(per));
            goto fail;
        }
        if (map_by && !json_is_string(map_by)) {
            st = bad(c, "map_by", "expected core, pu, numa or package, got "
                                  "%s",
                     rd_json_kind(map_by));
            goto fail;
        }
        const char *mb = map_by ? json_string_value(map_by) : "core";
        p->mode = PL_RULE;
        p->per_host = json_integer_value(per);
        if (!(p->slot_pu = malloc((size_t)p->per_host * sizeof *p->slot_pu)))
            goto nomem;
        if ((st = rule_slots(c, mb, p->per_host, p->slot_pu)))
            goto fail;
        p->nhosts = nhosts;
        p->nranks = nhosts ? nhosts * p->per_host : INT64_MAX;
        char hs[48];
        if (nhosts)
            snprintf(hs, sizeof hs, "%lld host%s", (long long)nhosts,
                     nhosts == 1 ? "" : "s");
        else
            snprintf(hs, sizeof hs, "as many hosts as needed");
        snprintf(p->desc, sizeof p->desc,
                 "rank map %.200s: %lld ranks per host by %s, %s", c->src,
                 (long long)p->per_host, mb, hs);
    } else {
        if (!json_is_array(ranks) || json_array_size(ranks) == 0) {
            st = bad(c, "ranks", "expected a non-empty list of {\"host\": H, "
                                 "\"core\": C} or {\"host\": H, \"pu\": P}, "
                                 "got %s",
                     json_is_array(ranks) ? "an empty list" : rd_json_kind(ranks));
            goto fail;
        }
        int64_t n = (int64_t)json_array_size(ranks), maxh = -1;
        p->mode = PL_EXPLICIT;
        p->host = malloc((size_t)n * sizeof *p->host);
        p->rank_pu = malloc((size_t)n * sizeof *p->rank_pu);
        if (!p->host || !p->rank_pu)
            goto nomem;
        for (int64_t r = 0; r < n; r++) {
            json_t *e = json_array_get(ranks, (size_t)r);
            snprintf(path, sizeof path, "ranks[%lld]", (long long)r);
            if (!json_is_object(e)) {
                st = bad(c, path, "expected {\"host\": H, \"core\": C} or "
                                  "{\"host\": H, \"pu\": P}, got %s",
                         rd_json_kind(e));
                goto fail;
            }
            json_object_foreach(e, key, v) {
                if (strcmp(key, "host") && strcmp(key, "core") &&
                    strcmp(key, "pu")) {
                    snprintf(path, sizeof path, "ranks[%lld].%.40s",
                             (long long)r, key);
                    st = bad(c, path, "unknown key \"%.40s\" (allowed: host, "
                                      "core, pu)",
                             key);
                    goto fail;
                }
            }
            json_t *h = json_object_get(e, "host");
            json_t *co = json_object_get(e, "core");
            json_t *pu = json_object_get(e, "pu");
            int64_t hv = 0, x = 0;
            if (h) {
                snprintf(path, sizeof path, "ranks[%lld].host", (long long)r);
                if (json_is_string(h)) {
                    hv = -1;
                    if (json_is_array(hosts))
                        for (size_t j = 0; j < json_array_size(hosts); j++)
                            if (strcmp(json_string_value(h),
                                       json_string_value(
                                           json_array_get(hosts, j))) == 0)
                                hv = (int64_t)j;
                    if (hv < 0) {
                        st = bad(c, path, "host \"%.60s\" is not in \"hosts\"",
                                 json_string_value(h));
                        goto fail;
                    }
                } else if (json_is_integer(h)) {
                    hv = json_integer_value(h);
                    int64_t lim = nhosts ? nhosts : 1000000000;
                    if (hv < 0 || hv >= lim) {
                        st = bad(c, path, "host %lld is out of range "
                                          "(0..%lld%s)",
                                 (long long)hv, (long long)lim - 1,
                                 nhosts ? ": the hosts listed" : "");
                        goto fail;
                    }
                } else {
                    st = bad(c, path, "expected a host index or name, got "
                                      "%s",
                             rd_json_kind(h));
                    goto fail;
                }
            }
            if (!co == !pu) {
                snprintf(path, sizeof path, "ranks[%lld]", (long long)r);
                st = bad(c, path, "give exactly one of \"core\" and \"pu\"");
                goto fail;
            }
            snprintf(path, sizeof path, "ranks[%lld].%s", (long long)r,
                     co ? "core" : "pu");
            if ((st = get_index(c, co ? co : pu, path,
                                co ? t->info.cores : t->npu,
                                co ? "core" : "PU", &x)))
                goto fail;
            p->host[r] = hv;
            p->rank_pu[r] = co ? t->core_pu[x] : (int)x;
            if (hv > maxh)
                maxh = hv;
        }
        p->nranks = n;
        p->nhosts = nhosts ? nhosts : maxh + 1;
        snprintf(p->desc, sizeof p->desc,
                 "rank map %.200s: %lld rank%s on %lld host%s", c->src,
                 (long long)n, n == 1 ? "" : "s", (long long)p->nhosts,
                 p->nhosts == 1 ? "" : "s");
    }
    if (json_is_array(hosts)) {
        if (!(p->names = calloc((size_t)p->nhosts, sizeof *p->names)))
            goto nomem;
        for (int64_t h = 0; h < p->nhosts; h++) {
            const char *s = json_string_value(json_array_get(hosts, (size_t)h));
            if (!(p->names[h] = malloc(strlen(s) + 1)))
                goto nomem;
            memcpy(p->names[h], s, strlen(s) + 1);
        }
    }
    *out = p;
    return REDIST_OK;
nomem:
    st = rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL, "out of memory");
fail:
    redist_placement_free(p);
    return st;
}

redist_status_t redist_placement_load_buffer(const redist_topo_t *t,
                                             const char *text, size_t len,
                                             const char *source,
                                             redist_placement_t **out,
                                             redist_error_t *err)
{
    const char *src = source ? source : "<string>";
    json_t *root;
    if (!t || !out || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL argument");
    redist_status_t pst = rd_json_parse(text, len, src, &root, err);
    if (pst)
        return pst;
    mapctx c = {t, src, err};
    redist_status_t st = parse_map(&c, root, out);
    json_decref(root);
    return st;
}

#define RD_MAP_MAX_BYTES (64u << 20)

redist_status_t redist_placement_load_file(const redist_topo_t *t,
                                           const char *path,
                                           redist_placement_t **out,
                                           redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL path");
    redist_status_t st =
        rd_read_file(path, RD_MAP_MAX_BYTES, "a rank map", &buf, &len, err);
    if (st)
        return st;
    st = redist_placement_load_buffer(t, buf, len, path, out, err);
    free(buf);
    return st;
}

/* ---------------------------------------------------------- queries */

int64_t redist_placement_num_ranks(const redist_placement_t *p)
{
    return p ? p->nranks : 0;
}

int64_t redist_placement_num_hosts(const redist_placement_t *p)
{
    return p ? p->nhosts : 0;
}

void redist_placement_host_name(const redist_placement_t *p, int64_t h,
                                char *buf, size_t size)
{
    if (!buf || !size)
        return;
    if (p && p->names && h >= 0 && h < p->nhosts)
        rd_strlcpy(buf, p->names[h], size);
    else
        snprintf(buf, size, "host%lld", (long long)h);
}

const char *redist_placement_description(const redist_placement_t *p)
{
    return p ? p->desc : "";
}

static void where(const redist_placement_t *p, int64_t r, int64_t *host,
                  int *pu)
{
    if (p->mode == PL_EXPLICIT) {
        *host = p->host[r];
        *pu = p->rank_pu[r];
    } else {
        *host = r / p->per_host;
        *pu = p->slot_pu[r % p->per_host];
    }
}

redist_status_t redist_placement_location(const redist_placement_t *p,
                                          int64_t r,
                                          redist_topo_location_t *out)
{
    if (!p || !out || r < 0 || r >= p->nranks)
        return REDIST_ERR_INVALID;
    int64_t h;
    int pu;
    where(p, r, &h, &pu);
    out->host = h;
    out->pu = pu;
    out->core = p->pu[pu].core;
    out->cache = p->pu[pu].cache;
    out->numa = p->pu[pu].numa;
    out->package = p->pu[pu].package;
    return REDIST_OK;
}

static redist_link_t link_of(const redist_placement_t *p, int64_t h1, int u1,
                             int64_t h2, int u2)
{
    const rd_puloc *a = &p->pu[u1], *b = &p->pu[u2];
    if (h1 != h2)
        return REDIST_LINK_NETWORK;
    if (a->package != b->package)
        return REDIST_LINK_NODE;
    if (a->numa != b->numa)
        return REDIST_LINK_PACKAGE;
    if (a->cache != b->cache)
        return REDIST_LINK_NUMA;
    return REDIST_LINK_CACHE;
}

redist_link_t redist_placement_link(const redist_placement_t *p, int64_t r1,
                                    int64_t r2)
{
    if (!p || r1 < 0 || r2 < 0 || r1 >= p->nranks || r2 >= p->nranks)
        return REDIST_LINK_NETWORK;
    int64_t h1, h2;
    int u1, u2;
    where(p, r1, &h1, &u1);
    where(p, r2, &h2, &u2);
    return link_of(p, h1, u1, h2, u2);
}

/* ------------------------------------------------------- mesh axes */

static redist_status_t check_mesh(const redist_placement_t *p,
                                  const redist_mesh_t *m, redist_error_t *err)
{
    if (!p || !m)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL argument");
    int64_t D = redist_mesh_num_devices(m);
    if (D > REDIST_TOPO_MAX_DEVICES)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "the mesh has %lld devices; the topology analysis "
                        "visits at most %lld",
                        (long long)D, (long long)REDIST_TOPO_MAX_DEVICES);
    if (p->nranks < D)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "the placement has %lld rank%s, the mesh %lld "
                        "devices (%s)",
                        (long long)p->nranks, p->nranks == 1 ? "" : "s",
                        (long long)D, p->desc);
    return REDIST_OK;
}

redist_status_t redist_topo_axis_info(const redist_placement_t *p,
                                      const redist_mesh_t *m, int axis,
                                      redist_topo_axis_t *out,
                                      redist_error_t *err)
{
    redist_status_t st = check_mesh(p, m, err);
    if (st)
        return st;
    if (!out || axis < 0 || axis >= redist_mesh_num_axes(m))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "axis %d is not in the mesh", axis);
    int64_t D = redist_mesh_num_devices(m);
    int64_t s = redist_mesh_axis_size(m, axis), stride = 1;
    for (int b = axis + 1; b < redist_mesh_num_axes(m); b++)
        stride *= redist_mesh_axis_size(m, b);
    redist_topo_axis_t a;
    memset(&a, 0, sizeof a);
    a.link = REDIST_LINK_CACHE;
    a.size = s;
    a.stride = stride;
    a.example = 0;
    int64_t first_at[REDIST_LINK_COUNT];
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        first_at[l] = -1;
    for (int64_t base = 0; base < D; base++) {
        if ((base / stride) % s != 0)
            continue;
        int64_t h0, h;
        int u0, u;
        where(p, base, &h0, &u0);
        redist_link_t worst = REDIST_LINK_CACHE;
        for (int64_t k = 1; k < s && worst < REDIST_LINK_NETWORK; k++) {
            where(p, base + k * stride, &h, &u);
            redist_link_t l = link_of(p, h0, u0, h, u);
            if (l > worst)
                worst = l;
        }
        a.groups++;
        a.groups_at[worst]++;
        if (first_at[worst] < 0)
            first_at[worst] = base;
        if (worst > a.link)
            a.link = worst;
    }
    a.example = first_at[a.link] >= 0 ? first_at[a.link] : 0;
    *out = a;
    return REDIST_OK;
}

redist_status_t redist_topo_axis_links(const redist_placement_t *p,
                                       const redist_mesh_t *m,
                                       redist_cost_model_t *model,
                                       redist_error_t *err)
{
    redist_link_t links[REDIST_MAX_AXES];
    if (!model)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL model");
    redist_status_t st = check_mesh(p, m, err);
    for (int a = 0; !st && a < redist_mesh_num_axes(m); a++) {
        redist_topo_axis_t info;
        st = redist_topo_axis_info(p, m, a, &info, err);
        links[a] = info.link;
    }
    if (st)
        return st;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        model->axis_link[a] = (uint8_t)links[a];
    return REDIST_OK;
}
