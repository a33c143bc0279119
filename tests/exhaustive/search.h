/*
 * search.h - an independent, exhaustive reference search for both
 * objectives of doc/spec-format.md section 9:
 *  - bytes (section 2, version 1's default): minimal peak local bytes,
 *    then minimal total received bytes, then fewest collectives, over the
 *    six steps slice to permute (rx_search);
 *  - time (the default): minimal peak local bytes, then minimal modelled
 *    time under an alpha-beta cost model (section 6, the README's "The time
 *    objective"), then fewest collectives, over the six steps plus an
 *    `exchange` straight into the target from every type whose partial
 *    set is the target's (doc/design.md, "The time objective";
 *    rx_search_time).
 *
 * Written from the documentation alone (doc/spec-format.md, the README's
 * step table of the cost model, doc/design.md's rules for size-1 axes and
 * for the exchange edge): it shares no code with src/ and reads the spec
 * through the public accessors only.  It is slow by design (it enumerates
 * every sharding type of the spec and runs a plain Dijkstra per candidate
 * peak) and meant for small meshes in tests.
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

/** The bytes objective's optimum found by rx_search. */
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

/** One step of a path of the reference search, as redist_step_view_t's
 *  fields: axes numbered as in the problem, `after` without the size-1
 *  axes (equivalent to the type a plan states). */
typedef struct rx_step {
    redist_op_t op;
    int dim, from_dim, to_dim, axis; /* -1 where the op has none */
    redist_type_t after;
} rx_step_t;

/** The time objective's optimum found by rx_search_time. */
#define RX_MAX_ALT 32
#define RX_MAX_PATH 64
typedef struct rx_time_result {
    int feasible;         /**< 0: the target cannot be reached at all */
    uint64_t src_bytes, dst_bytes;
    uint64_t peak_bytes;  /**< least peak local bytes of any plan (the
                               exchange edge included: it may be below
                               the bytes objective's) */
    double time_s;        /**< least modelled time of a plan of that peak */
    int collectives;      /**< fewest collectives among the plans of
                               exactly that time (the same messages, bytes
                               and reduced bytes on every link level, or
                               the same value) */
    /** alt_time_s[k] for k = 0..collectives: the least time of a plan of
     *  that peak with exactly k collectives; alt_time_s[collectives + 1]:
     *  with more; INFINITY where there is none.  nalt = collectives + 2,
     *  or 0 when that exceeds RX_MAX_ALT (not computed). */
    double alt_time_s[RX_MAX_ALT];
    int nalt;
    int steps;            /**< steps of one optimal path (slices included) */
    int uses_exchange;    /**< that path ends with an exchange */
    int uses_permute;     /**< that path has a permute */
    long ntypes;          /**< sharding types enumerated */
    int caps_tried;       /**< Dijkstra runs (candidate peaks tried) */
    char path[4096];      /**< that path, readable */
    /** that path as steps (npath 0 when it is longer than RX_MAX_PATH) */
    int npath;
    rx_step_t step[RX_MAX_PATH];
} rx_time_result_t;

/**
 * Fill *out from a spec through the public accessors.  Returns 0, or -1
 * when the spec exceeds RX_MAX_AXES / RX_MAX_DIMS.
 */
int rx_problem_from_spec(const redist_spec_t *spec, rx_problem_t *out);

/**
 * Exhaustive lexicographic optimum of `p` for the bytes objective.
 * Returns 0 (out->feasible says whether a plan exists), -1 on allocation
 * failure or an internal inconsistency (a message is printed to stderr).
 */
int rx_search(const rx_problem_t *p, rx_result_t *out);

/**
 * Exhaustive lexicographic optimum of `p` for the time objective under
 * `model` (its axis_link entries are those of p's axes).  Returns as
 * rx_search.
 */
int rx_search_time(const rx_problem_t *p, const redist_cost_model_t *model,
                   rx_time_result_t *out);

/**
 * The modelled time of one step of a plan for `p` under `model`, from the
 * step's op, its axis (ignored for permute and exchange), the type before
 * it and the type after it (size-1 axes allowed anywhere: they are
 * dropped first).  The same formula the search charges.  Returns 0, or -1
 * for an op the search does not know or a malformed type.
 */
int rx_step_time(const rx_problem_t *p, const redist_cost_model_t *model,
                 redist_op_t op, int axis, const redist_type_t *before,
                 const redist_type_t *after, double *time_s);

/**
 * What an exchange from `from` to `to` needs (brute force over the
 * devices of p's mesh): the most bytes any device lacks of its target
 * block, and the most peers any device receives from (the distinct source
 * blocks overlapping its target block, its own not counted).
 */
void rx_exchange_need(const rx_problem_t *p, const redist_type_t *from,
                      const redist_type_t *to, uint64_t *lack_bytes,
                      uint64_t *peers);

/** Readable form of a type with the problem's axis names. */
char *rx_format_type(const rx_problem_t *p, const redist_type_t *t, char *buf,
                     size_t size);

#endif
