/*
 * redist/topo.h - machine topology (hwloc) and rank placement, to derive
 * the link level of each mesh axis for the time objective's cost model.
 *
 * Library libredist_topo (libredist + hwloc), built only when hwloc is
 * found.  Link with `pkg-config --libs redist-topo`.  libredist and the
 * planner never include hwloc.h: this layer only fills
 * redist_cost_model_t.axis_link (redist/plan.h), which a caller may as
 * well set by hand (redist_cost_model_set_axis_links).
 *
 * Model.  A topology describes one host (every host of a cluster is
 * assumed alike): packages, NUMA nodes, shared caches, cores and PUs, as
 * hwloc sees them.  A placement says where each rank runs: a host index
 * and a PU of that host.  Two ranks communicate over the slowest level
 * they do not share, checked from the top:
 *     different hosts                      REDIST_LINK_NETWORK
 *     same host, different packages        REDIST_LINK_NODE
 *     same package, different NUMA nodes   REDIST_LINK_PACKAGE
 *     same NUMA node, different caches     REDIST_LINK_NUMA
 *     same cache (or core)                 REDIST_LINK_CACHE
 * "Cache" is the outermost CPU cache above a PU (usually the L3); without
 * cache objects (synthetic topologies without them) a rank shares a cache
 * only with ranks on its own core.  This relation is an ultrametric, so
 * the slowest link of a group of ranks is the slowest link from its first
 * member to the others.
 *
 * A mesh axis's groups are the devices that differ only in their
 * coordinate on that axis (ranks row-major, doc/spec-format.md section 1: the
 * first axis varies slowest).  redist_topo_axis_links sets, for each
 * axis, the slowest level any of its groups spans.
 *
 * Conventions as in redist/core.h: status codes, an optional
 * redist_error_t naming the file and place, outputs written only on
 * success, objects freed by the matching *_free (NULL accepted).  Nothing
 * here prints or aborts.
 */
#ifndef REDIST_TOPO_H
#define REDIST_TOPO_H

#include "redist/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One host's topology (immutable once loaded). */
typedef struct redist_topo redist_topo_t;

/** The machine this process runs on (hwloc discovery; honours hwloc's
 *  own environment variables such as HWLOC_XMLFILE). */
REDIST_API redist_status_t redist_topo_load_local(redist_topo_t **out,
                                       redist_error_t *err);
/** An hwloc XML file (`lstopo machine.xml` on the machine to plan for),
 *  a regular file of at most 16 MiB.  Errors name the file: REDIST_ERR_IO
 *  (cannot read it, or not a regular file), REDIST_ERR_LIMIT (larger),
 *  REDIST_ERR_PARSE (not an hwloc XML topology). */
REDIST_API redist_status_t redist_topo_load_xml(const char *path, redist_topo_t **out,
                                     redist_error_t *err);
/**
 * A synthetic description in hwloc's syntax, levels from the top down,
 * each TYPE:COUNT: "pack:2 numa:2 core:8 pu:1", "pack:2 l3:1 core:16".
 * Types as hwloc spells them (pack/package, numa, group, die, l3/l2/l1,
 * core, pu).  When the last level is not pu, " pu:1" is appended.
 * Errors (REDIST_ERR_INVALID) name the bad word and its position.
 * Sizes are capped (REDIST_ERR_LIMIT) before hwloc sees them, because
 * hwloc's load time grows with the square of the object count and worse
 * with the count under one parent: each COUNT at most
 * REDIST_TOPO_SYNTHETIC_MAX_LEVEL, their product (the PUs of the host) at
 * most REDIST_TOPO_SYNTHETIC_MAX_PUS, and all objects (every level, memory
 * children included) at most REDIST_TOPO_SYNTHETIC_MAX_OBJECTS.  A
 * description is one host; a cluster is hosts of it (a rank map).
 */
#define REDIST_TOPO_SYNTHETIC_MAX_LEVEL 256
#define REDIST_TOPO_SYNTHETIC_MAX_PUS 4096
#define REDIST_TOPO_SYNTHETIC_MAX_OBJECTS 16384
REDIST_API redist_status_t redist_topo_load_synthetic(const char *desc,
                                           redist_topo_t **out,
                                           redist_error_t *err);
REDIST_API void redist_topo_free(redist_topo_t *topo);

/** What a topology holds, per host. */
typedef struct redist_topo_info {
    int packages;   /**< 1 when the topology has no package objects */
    int numa_nodes; /**< at least 1 */
    int caches;     /**< cache domains (see cache_name) */
    int cores;      /**< 0-based logical core indexes 0..cores-1 */
    int pus;        /**< processing units (hardware threads) */
    /** "L3", "L2", ...: the cache level that defines REDIST_LINK_CACHE;
     *  "core" when the topology has no cache objects. */
    char cache_name[16];
    /** Where it came from: "local machine", "hwloc XML FILE" or
     *  "synthetic DESC". */
    char source[REDIST_ERROR_SOURCE_LENGTH];
    /** hwloc's synthetic export without attributes ("Package:2 Core:4
     *  PU:1"), or "" for an asymmetric machine. */
    char levels[256];
    /** The host name hwloc reports, or "". */
    char hostname[64];
} redist_topo_info_t;

/** What `topo` holds (NULL: *out is left alone). */
REDIST_API void redist_topo_get_info(const redist_topo_t *topo, redist_topo_info_t *out);

/** Where one rank runs: host index and logical indexes on that host. */
typedef struct redist_topo_location {
    int64_t host;
    int pu, core, cache, numa, package;
} redist_topo_location_t;

/* ---------------------------------------------------------- placement */

/** Where each rank runs (immutable; holds its own copy of what it needs
 *  of the topology, which may be freed first). */
typedef struct redist_placement redist_placement_t;

/**
 * The default placement: ranks in order, one per core (logical core
 * order), host 0 first; rank r runs on host r / C, core r % C, where C is
 * the topology's core count.  Any number of ranks.
 */
REDIST_API redist_status_t redist_placement_default(const redist_topo_t *topo,
                                         redist_placement_t **out,
                                         redist_error_t *err);

/** Explicit locations (e.g. gathered from the ranks of an MPI job):
 *  rank r runs on host hosts[r] (>= 0) and PU pus[r] (a logical PU
 *  index of the topology).  Arrays of nranks entries, copied. */
REDIST_API redist_status_t redist_placement_create(const redist_topo_t *topo,
                                        int64_t nranks, const int64_t hosts[],
                                        const int pus[],
                                        redist_placement_t **out,
                                        redist_error_t *err);

/**
 * A rank map file (JSON; doc/topology.md).  Either one entry per rank:
 *   {"hosts": ["node0", "node1"],
 *    "ranks": [{"host": 0, "core": 0}, {"host": "node1", "pu": 5}, ...]}
 * or a rule, as mpirun's --map-by:
 *   {"hosts": 4, "ranks_per_host": 8, "map_by": "numa"}
 * "hosts" is a list of names or a count, optional; a rank names its host
 * by index or name and its place by "core" or "pu" (logical indexes).
 * map_by: "core" (default: k-th rank of a host on core k), "pu", "numa"
 * or "package" (round robin over the NUMA nodes / packages, each taking
 * its next core).  Unknown keys are errors.  Errors name the file and the
 * place: "map.json:3:14: ..." for syntax, "map.json: ranks[2].pu: ..."
 * for values.  The file: a regular file of at most 64 MiB.
 */
REDIST_API redist_status_t redist_placement_load_file(const redist_topo_t *topo,
                                           const char *path,
                                           redist_placement_t **out,
                                           redist_error_t *err);
REDIST_API redist_status_t redist_placement_load_buffer(const redist_topo_t *topo,
                                             const char *text, size_t len,
                                             const char *source,
                                             redist_placement_t **out,
                                             redist_error_t *err);
REDIST_API void redist_placement_free(redist_placement_t *pl);

/** Ranks placed; INT64_MAX when unbounded (the default placement, or a
 *  rule without a host count).  NULL: 0. */
REDIST_API int64_t redist_placement_num_ranks(const redist_placement_t *pl);
/** Hosts named or counted; 0 when unbounded.  NULL: 0. */
REDIST_API int64_t redist_placement_num_hosts(const redist_placement_t *pl);
/** The name of host h: its name in the rank map, else "host<h>" (also
 *  for a NULL placement; a NULL buf: nothing). */
REDIST_API void redist_placement_host_name(const redist_placement_t *pl, int64_t host,
                                char *buf, size_t size);
/** A one-line description ("default: one rank per core, 8 per host").
 *  NULL: "". */
REDIST_API const char *redist_placement_description(const redist_placement_t *pl);
/** Location of a rank (REDIST_ERR_INVALID when out of range). */
REDIST_API redist_status_t redist_placement_location(const redist_placement_t *pl,
                                          int64_t rank,
                                          redist_topo_location_t *out);
/** The link level between two ranks.  NULL or out of range:
 *  REDIST_LINK_NETWORK. */
REDIST_API redist_link_t redist_placement_link(const redist_placement_t *pl, int64_t r1,
                                    int64_t r2);

/* ------------------------------------------------------ mesh axes */

/** How one mesh axis maps onto the machine. */
typedef struct redist_topo_axis {
    redist_link_t link;  /**< the slowest level any of its groups spans */
    int64_t size;        /**< axis size (group size) */
    int64_t stride;      /**< rank distance between group neighbours */
    int64_t groups;      /**< number of groups (devices / size) */
    /** groups whose slowest link is each level */
    int64_t groups_at[REDIST_LINK_COUNT];
    int64_t example;     /**< first rank of the first group at `link` */
} redist_topo_axis_t;

/** Largest mesh (devices) the axis analysis visits. */
#define REDIST_TOPO_MAX_DEVICES (1LL << 26)

/** Axis `axis` of `mesh` under placement `pl`.  REDIST_ERR_INVALID when
 *  the placement has fewer ranks than the mesh has devices,
 *  REDIST_ERR_LIMIT above REDIST_TOPO_MAX_DEVICES. */
REDIST_API redist_status_t redist_topo_axis_info(const redist_placement_t *pl,
                                      const redist_mesh_t *mesh, int axis,
                                      redist_topo_axis_t *out,
                                      redist_error_t *err);

/** Set model->axis_link[a] for every axis of the mesh (the other fields
 *  of the model are left alone). */
REDIST_API redist_status_t redist_topo_axis_links(const redist_placement_t *pl,
                                       const redist_mesh_t *mesh,
                                       redist_cost_model_t *model,
                                       redist_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
