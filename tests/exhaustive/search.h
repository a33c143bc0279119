/*
 * search.h - an independent, exhaustive reference search for the default
 * objective of doc/spec-format.md section 2 (minimal peak local bytes, then minimal
 * total received bytes, then fewest collectives).
 *
 * Written from doc/spec-format.md alone (and the rule that types differing only
 * in size-1 axes are the same, doc/design.md): it shares no code with
 * src/ and reads the spec through the public accessors only.  It is slow
 * by design (it enumerates every sharding type of the spec and runs a
 * plain Dijkstra per candidate peak) and meant for small meshes in tests.
 */
#ifndef REDIST_TEST_SEARCH_H
#define REDIST_TEST_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "redist.h"

/** Limits of the reference search (the tests stay far below them). */
#define RX_MAX_AXES 8
#define RX_MAX_DIMS 8

__extension__ typedef unsigned __int128 rx_u128;

/** A redistribution problem as plain values. */
typedef struct rx_problem {
    int naxes;
    char name[RX_MAX_AXES][REDIST_MAX_NAME + 1];
    int64_t size[RX_MAX_AXES];
    int ndims;
    int64_t shape[RX_MAX_DIMS];
    uint64_t elem_size;
    redist_type_t from, to;
} rx_problem_t;

/** The lexicographic optimum found by rx_search. */
typedef struct rx_result {
    int feasible;         /**< 0: the target cannot be reached at all */
    uint64_t src_bytes, dst_bytes;
    uint64_t peak_bytes;  /**< least peak local bytes of any plan */
    rx_u128 recv_num;     /**< least exact total recv = recv_num / recv_den */
    uint64_t recv_den;    /**< lcm of all axis sizes */
    uint64_t recv_ceil;   /**< ceil(recv_num / recv_den) */
    int collectives;      /**< fewest collectives at that (peak, recv) */
    int steps;            /**< steps of one optimal path (slices included) */
    long ntypes;          /**< sharding types enumerated */
    int caps_tried;       /**< Dijkstra runs (candidate peaks tried) */
    char path[4096];      /**< one optimal path, readable */
} rx_result_t;

/**
 * Fill *out from a spec through the public accessors.  Returns 0, or -1
 * when the spec exceeds RX_MAX_AXES / RX_MAX_DIMS.
 */
int rx_problem_from_spec(const redist_spec_t *spec, rx_problem_t *out);

/**
 * Exhaustive lexicographic optimum of `p`.  Returns 0 (out->feasible says
 * whether a plan exists), -1 on allocation failure or an internal
 * inconsistency (a message is printed to stderr).
 */
int rx_search(const rx_problem_t *p, rx_result_t *out);

/** Readable form of a type with the problem's axis names. */
char *rx_format_type(const rx_problem_t *p, const redist_type_t *t, char *buf,
                     size_t size);

#endif
