/*
 * The topology layer's insides (private to src/topo/, libredist_topo):
 * the PU table discovery (discover.c) reduces hwloc's tree to, and the
 * placements (placement.c, rank_map.c) that put ranks on it; links.c
 * derives the link level of each mesh axis from them.  The contract is
 * include/redist/topo.h.
 */
#ifndef REDIST_TOPO_INTERNAL_H
#define REDIST_TOPO_INTERNAL_H

#include "redist/topo.h"
#include "../core/internal.h"

typedef struct rd_puloc {
    int core, cache, numa, package;
} rd_puloc;

struct redist_topo {
    redist_topo_info_t info;
    int npu;
    rd_puloc *pu;  /* by logical PU index */
    int *core_pu;  /* first PU of each core */
};

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

/* placement.c: an empty placement holding a copy of t's PU table (NULL
 * without memory); where rank r runs; the link between two locations. */
redist_placement_t *rd_placement_new(const redist_topo_t *t);
void rd_placement_where(const redist_placement_t *p, int64_t r,
                        int64_t *host, int *pu);
redist_link_t rd_placement_link_of(const redist_placement_t *p, int64_t h1,
                                   int u1, int64_t h2, int u2);

#endif
