/*
 * The table of step kinds (doc/spec-format.md section 2).  One table feeds the
 * solver (which moves exist from a type), the verifier (precondition and
 * effect of a given step), the printer and the JSON reader and writer
 * (names and fields) and the byte accounting (recv formula).
 */
#ifndef REDIST_STEPS_H
#define REDIST_STEPS_H

#include "redist/plan.h"
#include "../spec/spec_internal.h"
#include "../core/layout.h"

/* A compact sharding type used inside the planner: the axes of all dims
 * concatenated (dim 0's list first, each major first), the count per dim,
 * and the partial mask.  Unused tail entries are zero so that two equal
 * types are equal byte for byte. */
typedef struct rd_ctype {
    uint8_t ndims;
    uint8_t nax; /* axes in dims, total */
    uint8_t cnt[REDIST_MAX_DIMS];
    uint8_t seq[REDIST_MAX_AXES];
    /* zero, except in the uneven search (solver.c), where bit i of
     * anchor[0] | anchor[1] << 8 says that dim i's layout is anchored at
     * the source (src/core/layout.c): the struct is hashed byte for byte */
    uint8_t anchor[2];
    uint32_t partial;
} rd_ctype;

/* Everything the step kinds need to know of the problem. */
typedef struct rd_ctx {
    int naxes, ndims;
    int64_t size[REDIST_MAX_AXES];
    int64_t shape[REDIST_MAX_DIMS];
    uint64_t elem_size;
    uint32_t dst_partial; /* partial axes the target keeps */
    uint32_t nontrivial;  /* axes of size > 1 */
    /* 1: the spec is uneven; the kinds' preconditions drop divisibility
     * (locality on layouts replaces it: rd_ustep_eval) */
    int uneven;
} rd_ctx;

/* What a step's `after` means to the replay.  For permute and exchange
 * it is always the target.  For the other kinds: */
enum {
    RD_AFTER_NONE,   /* not given: the replay computes it */
    RD_AFTER_STATED, /* must be equivalent to the effect, then replaces it */
    RD_AFTER_HINT    /* replaces the effect when equivalent, else ignored */
};

/* A step's arguments (unused fields -1). */
typedef struct rd_step {
    int op;
    int dim, from_dim, to_dim, axis;
    int after_mode; /* RD_AFTER_*, for kinds without RD_F_AFTER */
    rd_ctype after;
    /* uneven specs: the layout after the step (NULL: the ceil rule of
     * `after`); owned by whoever built the steps */
    const rd_layout *lay;
} rd_step;

enum {
    RD_F_DIM = 1u << 0,
    RD_F_FROM_DIM = 1u << 1,
    RD_F_TO_DIM = 1u << 2,
    RD_F_AXIS = 1u << 3,
    RD_F_AFTER = 1u << 4 /* the step is defined by its target type */
};

typedef void (*rd_emit_fn)(void *user, const rd_step *step,
                           const rd_ctype *out);

typedef struct rd_step_kind {
    const char *name;
    unsigned fields;
    int collective;
    /* 1: received bytes are the exact need of the most needy device
     * (exchange), not the L-based formula below. */
    int recv_need;
    /* messages per device for the cost model: rounds_mul_s * s +
     * rounds_add (exchange: one per peer). */
    int rounds_mul_s, rounds_add;
    /* received bytes per device = L * (mul_s * s + add) / (div_s ? s : 1),
     * L = local bytes before the step, s = size of the axis. */
    int recv_mul_s, recv_add, recv_div_s;
    const char *recv_formula; /* the same, for people */
    const char *precondition; /* for people */
    /* Check the precondition of `st` on `in` and write the type after it.
     * Returns 0, or -1 with a reason in why. */
    int (*apply)(const rd_ctx *cx, const rd_ctype *in, const rd_step *st,
                 rd_ctype *out, char *why, size_t whylen);
    /* Emit every legal step of this kind from `in` (NULL for permute, whose
     * targets the solver enumerates by group with rd_permute_targets). */
    void (*enumerate)(const rd_ctx *cx, const rd_ctype *in, rd_emit_fn emit,
                      void *user);
} rd_step_kind;

extern const rd_step_kind rd_step_kinds[REDIST_OP_COUNT];

/* Size-1 axes.  A mesh axis of size 1 never changes a local shape or a
 * block index, and a reduction over it is no reduction: types that differ
 * only in where their size-1 axes sit (a dim's list, partial, replicated)
 * give every device the same data and are EQUIVALENT.  The replay works up
 * to this equivalence (rd_step_apply); the solver leaves size-1 axes out
 * of its search altogether. */
/* `in` without its size-1 axes (the canonical member of its class). */
void rd_ctype_canon(const rd_ctx *cx, const rd_ctype *in, rd_ctype *out);
/* 1 when a and b are equivalent. */
int rd_ctype_equiv(const rd_ctx *cx, const rd_ctype *a, const rd_ctype *b);
/* Precondition and effect of `st` up to equivalence: the kind's apply on
 * `in`, or, when that fails, on `in` without its size-1 axes.  A step on a
 * size-1 axis only relabels: legal from every type (its dims in range),
 * with the kind's effect when that applies and `in` unchanged otherwise.
 * Returns 0, or -1 with the reason. */
int rd_step_apply(const rd_ctx *cx, const rd_ctype *in, const rd_step *st,
                  rd_ctype *out, char *why, size_t whylen);

void rd_ctx_init(rd_ctx *cx, const redist_spec_t *spec);
void rd_ctype_from_type(rd_ctype *c, const redist_type_t *t);
void rd_ctype_to_type(const rd_ctype *c, redist_type_t *t);
/* Local shape; returns 0, or -1 if some dim is not divisible. */
int rd_ctype_local(const rd_ctx *cx, const rd_ctype *t, int64_t local[]);
/* Start of the block a device with coordinates `coord` holds along each
 * dim in type t (block length local[i]). */
void rd_ctype_block_start(const rd_ctx *cx, const rd_ctype *t,
                          const int64_t local[], const int64_t coord[],
                          int64_t start[]);
uint64_t rd_ctype_elems(const rd_ctx *cx, const rd_ctype *t);
/* Mask of mesh axes used in dims. */
uint32_t rd_ctype_sharded(const rd_ctype *t);
/* Where each axis sits in t: dim[x] its dim (-1: none) and str[x] its
 * stride in that dim's block index (the product of the sizes of the axes
 * after it in the list); k[i] (k may be NULL) dim i's block count. */
void rd_ctype_places(const rd_ctx *cx, const rd_ctype *t,
                     int dim[REDIST_MAX_AXES], int64_t str[REDIST_MAX_AXES],
                     int64_t k[REDIST_MAX_DIMS]);
/* First position of dim i's list in seq. */
static inline int rd_ctype_start(const rd_ctype *t, int dim)
{
    int p = 0;
    for (int i = 0; i < dim; i++)
        p += t->cnt[i];
    return p;
}

/* Exact received bytes of a step from type `before` (local bytes L):
 * numerator and denominator (den is 1 or the axis size).  Returns 0, or
 * -1 for an exchange too large to analyse (more than RD_EXCHANGE_LIMIT
 * device coordinate combinations). */
int rd_step_recv(const rd_ctx *cx, const rd_step *st, const rd_ctype *before,
                 uint64_t local_bytes, unsigned __int128 *num, uint64_t *den);

#define RD_EXCHANGE_LIMIT (1ull << 22)

/* For an exchange from `a` to `b` (same partial set): the most elements
 * any device lacks of its `b` block, and the most devices any device
 * receives from (each missing piece comes from the holder that agrees
 * with the receiver on every axis `a` does not shard).  Enumerates the
 * coordinates of the axes either type shards; -1 past `limit` of them. */
int rd_exchange_need(const rd_ctx *cx, const rd_ctype *a, const rd_ctype *b,
                     uint64_t limit, uint64_t *max_elems,
                     uint64_t *max_peers);

/* 1 when rd_exchange_need(cx, a, b, limit, ...) would return 0, without
 * the enumeration. */
int rd_exchange_analysable(const rd_ctx *cx, const rd_ctype *a,
                           const rd_ctype *b, uint64_t limit);

/* rd_exchange_need that may stop early: stop(user, elems, peers) is
 * called with lower bounds of the two maxima (some device needs that many
 * elements, some device receives from that many) each time they grow, the
 * first time before any enumeration (never when every dim is nested:
 * the exact maxima then cost less than asking); when it returns nonzero
 * the search ends and 1 is returned (*max_elems, *max_peers unset).  Else
 * as rd_exchange_need (0 and the exact maxima, or -1).  stop may be
 * NULL. */
typedef int (*rd_need_stop_fn)(void *user, uint64_t elems, uint64_t peers);
int rd_exchange_need_until(const rd_ctx *cx, const rd_ctype *a,
                           const rd_ctype *b, uint64_t limit,
                           rd_need_stop_fn stop, void *user,
                           uint64_t *max_elems, uint64_t *max_peers);

/* Modelled seconds of a step from `before` (L bytes) to `after`. */
double rd_step_time(const rd_ctx *cx, const redist_cost_model_t *cm,
                    const rd_step *st, const rd_ctype *before, uint64_t L,
                    const rd_ctype *after, uint64_t recv_bytes,
                    uint64_t peers);
/* rd_step_time in two parts, for many devices of one step: the link the
 * step is charged on (-1 for a local step), then the time on it. */
int rd_step_link(const rd_ctx *cx, const redist_cost_model_t *cm,
                 const rd_step *st, const rd_ctype *before,
                 const rd_ctype *after);
double rd_step_time_on(const rd_ctx *cx, const redist_cost_model_t *cm,
                       const rd_step *st, int link, uint64_t L,
                       uint64_t recv_bytes, uint64_t peers);
/* The slowest link level among the axes along which a redistribution from
 * a to b moves data (permute, exchange): those a shards whose coordinate
 * shifts a device's a block and b block differently (another dim, or
 * another stride relative to the dim's block count); 0 when none. */
int rd_moved_link(const rd_ctx *cx, const redist_cost_model_t *cm,
                  const rd_ctype *a, const rd_ctype *b);

/* Every type with the same local shape and partial set as `t` (t itself
 * included), the targets of a permute.  Returns the count and fills *out
 * with a malloc'ed array; returns -1 on allocation failure and -2 when more
 * than `limit` exist. */
long rd_permute_targets(const rd_ctx *cx, const rd_ctype *t, long limit,
                        rd_ctype **out);

/* ------------------------------------------------------ uneven dims */

/* Most devices (of the mesh without size-1 axes) an uneven spec may have:
 * per-device figures enumerate them. */
#define RD_UNEVEN_MAX_DEVICES 65536

/* What the per-device evaluation of steps between layouts needs. */
typedef struct rd_uctx {
    const rd_ctx *cx;
    redist_mesh_t mesh; /* cx's axes (names unused) */
    redist_type_t src, dst;
    const rd_layout *src_l, *dst_l;
    uint64_t D; /* recv figures are scaled by D (all_reduce: 2(s-1)/s) */
    const redist_cost_model_t *cm; /* NULL: no times */
    struct rd_ubcache *bc; /* rd_ubounds' tables (NULL: none) */
} rd_uctx;

void rd_uctx_init(rd_uctx *u, const rd_ctx *cx, const rd_ctype *src,
                  const rd_layout *src_l, const rd_ctype *dst,
                  const rd_layout *dst_l, uint64_t D,
                  const redist_cost_model_t *cm);
void rd_uctx_free(rd_uctx *u);

/* Make evaluations over `mask` (rd_ustep_eval, rd_uheld) exact although
 * the mask may leave out axes that only the source or target shards: a
 * table of the least bound max(src_d, dst_d) over the devices that agree
 * on the mask's axes (a class of the evaluation is within its bound iff
 * its least member is).  0: the table is there; -1: none (no memory, or
 * too many tables): then the mask must hold every axis the source or the
 * target shards.  Cost: O(devices over the mask and those axes), once
 * per mask. */
int rd_ubounds(const rd_uctx *u, uint32_t mask);

/* Maxima over devices of one step (rd_ustep_eval). */
typedef struct rd_ueval {
    uint64_t max_held;           /* bytes after the step */
    int within;                  /* every d holds <= max(src_d, dst_d) */
    unsigned __int128 max_recv;  /* bytes received, times D */
    double max_time;             /* modelled seconds (u->cm) */
} rd_ueval;

/* Evaluate step `st` from type `bt` with layout `bl` to `at` with `al`
 * for every combination of coordinates on the axes of `mask` (the others
 * 0): locality (what a device needs after the step lies where the step's
 * data movement allows; doc/uneven.md), then held and received bytes per
 * device.  dev_recv / dev_held (NULL or indexed by rank; rank from the
 * enumerated coordinates, so give every axis in mask for them) receive
 * the per-device figures.  Returns 0, or -1 with the reason in why (none
 * when whylen is 0: why may then be NULL). */
int rd_ustep_eval(const rd_uctx *u, const rd_step *st, const rd_ctype *bt,
                  const rd_layout *bl, const rd_ctype *at,
                  const rd_layout *al, uint32_t mask, rd_ueval *ev,
                  unsigned __int128 *dev_recv, uint64_t *dev_held, char *why,
                  size_t whylen);
/* Per-device held bytes of type t with layout l, and whether each is
 * within max(src_d, dst_d) (as rd_ustep_eval, without a step). */
/* rd_ustep_eval that may stop early: after each device whose figures
 * raise a maximum or break `within`, stop(user, ev) sees the maxima so
 * far (lower bounds of the final ones; within 0 is final); when it
 * returns nonzero the evaluation ends and 1 is returned (ev then holds
 * those partial maxima).  A locality failure found first still returns
 * -1 (its reason names no device when the classes of uneven.c found it).
 * stop may be NULL. */
typedef int (*rd_ueval_stop_fn)(void *user, const rd_ueval *ev);
int rd_ustep_eval_until(const rd_uctx *u, const rd_step *st,
                        const rd_ctype *bt, const rd_layout *bl,
                        const rd_ctype *at, const rd_layout *al,
                        uint32_t mask, rd_ueval *ev, rd_ueval_stop_fn stop,
                        void *user, char *why, size_t whylen);
void rd_uheld(const rd_uctx *u, const rd_ctype *t, const rd_layout *l,
              uint32_t mask, rd_ueval *ev, uint64_t *dev_held);

/* How rd_ustep_eval_until evaluates (tests only; uneven.c): 0 by classes
 * of devices where it can (else device by device), 1 device by device
 * always, 2 as 0 after evaluating both ways without stopping early and
 * counting in rd_uneven_eval_compared the steps the classes evaluated,
 * in rd_uneven_eval_mismatches those whose results differ; 3 as 0 with
 * the classes' limits cut to a few values (their fallbacks met). */
extern int rd_uneven_eval_mode;
extern unsigned long rd_uneven_eval_compared, rd_uneven_eval_mismatches;

#endif
