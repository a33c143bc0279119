/*
 * Placements (redist/topo.h): where each rank runs, a host and a PU of
 * the topology, by the default rule (one rank per core in order), an
 * explicit list (redist_placement_create) or a rank map (rank_map.c);
 * and the link between two ranks: the first level, from the top, at
 * which their locations differ (host, package, NUMA node, cache).
 * Because it is the first difference in a fixed order, link(x, z) <=
 * max(link(x, y), link(y, z)) (an ultrametric), which links.c uses.
 * Cost: O(1) per query; memory: a copy of the PU table plus O(ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

redist_placement_t *rd_placement_new(const redist_topo_t *t)
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
    redist_placement_t *p = rd_placement_new(t);
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
    redist_placement_t *p = rd_placement_new(t);
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

void rd_placement_where(const redist_placement_t *p, int64_t r,
                        int64_t *host, int *pu)
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
    rd_placement_where(p, r, &h, &pu);
    out->host = h;
    out->pu = pu;
    out->core = p->pu[pu].core;
    out->cache = p->pu[pu].cache;
    out->numa = p->pu[pu].numa;
    out->package = p->pu[pu].package;
    return REDIST_OK;
}

redist_link_t rd_placement_link_of(const redist_placement_t *p, int64_t h1,
                                   int u1, int64_t h2, int u2)
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
    rd_placement_where(p, r1, &h1, &u1);
    rd_placement_where(p, r2, &h2, &u2);
    return rd_placement_link_of(p, h1, u1, h2, u2);
}
