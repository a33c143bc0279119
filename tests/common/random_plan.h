/*
 * Random plans for the tests (tests/exec, tests/mpi, tests/shmem): a
 * seedable generator, random meshes, types and specs, random walks of
 * legal steps from the planner's step table (src/plan/steps.h), random
 * bits and their expected result under the sim backend, and the exact
 * check of one plan run under the sim backend (src/testing/pattern.h).
 * Nothing here needs MPI or OpenSHMEM.
 */
#ifndef REDIST_TESTS_RANDOM_PLAN_H
#define REDIST_TESTS_RANDOM_PLAN_H

#include <stdint.h>

#include "redist.h"

/* ------------------------------------------------------------ numbers */

/* xorshift64 (13, 7, 17); the state must not be 0.  Each test keeps its
 * own, e.g. `static rp_rng rng = {0x9e3779b97f4a7c15ULL};`. */
typedef struct rp_rng {
    uint64_t s;
} rp_rng;

uint64_t rp_next(rp_rng *r);
/* Uniform in [lo, hi] (up to the modulo bias). */
int64_t rp_in(rp_rng *r, int64_t lo, int64_t hi);
/* The tests' SEED argument: when `arg` is not NULL the state becomes
 * SEED * 0x9e3779b97f4a7c15, made odd; then it is XORed with
 * stream * 0x2545f4914f6cdd1d (a stream per rank count; 0: unchanged). */
void rp_seed(rp_rng *r, const char *arg, uint64_t stream);
/* A subset of the axes 0..n-1, each one in with probability 1/den. */
uint32_t rp_subset(rp_rng *r, int n, int den);

/* splitmix64's finaliser. */
uint64_t rp_mix(uint64_t x);
/* Random bits, a function of (seed, device, offset) only. */
void rp_fill_bits(void *buf, uint64_t bytes, uint64_t seed, int64_t dev);

/* ------------------------------------------------------------- meshes */

extern const char *const rp_axis_names[4]; /* "a", "b", "c", "d" */

/* 1-4 axes of sizes 1-4, at most `small` devices, or one time in ten at
 * most `large` devices. */
redist_mesh_t *rp_mesh_upto(rp_rng *r, int64_t small, int64_t large);
/* Exactly n devices.  spread 0: 1-4 axes, each prime factor of n on a
 * random one (often several axes of size 1).  spread 1: the prime
 * factors shuffled into 1-3 axes, none of size 1, then one time in five
 * an axis of size 1 inserted at a random place. */
redist_mesh_t *rp_mesh_exact(rp_rng *r, int64_t n, int spread);

/* -------------------------------------------------------------- types */

/* A random type of nd dims: the axes in a random order; an axis of
 * `fixed_partial` is partial (no draw); any other is appended to one of
 * the nd dims, replicated, or, with partial_weight chances in
 * nd + 1 + partial_weight, partial if in `partial_ok` (else
 * replicated). */
void rp_type(rp_rng *r, const redist_mesh_t *m, int nd, uint32_t partial_ok,
             int partial_weight, uint32_t fixed_partial, redist_type_t *t);

/* ------------------------------------------------------------- specs */

typedef struct rp_problem {
    const redist_mesh_t *mesh;
    int nd;
    int64_t shape[REDIST_MAX_DIMS];
    int64_t elems; /* product of the shape */
    redist_type_t from, to;
    redist_dtype_t dtype;
    redist_reduce_t reduce;
} rp_problem;

/* The least common multiple of two positive numbers. */
int64_t rp_lcm(int64_t a, int64_t b);
/* How many blocks type t splits dim i into (the product of its axes). */
int64_t rp_split_count(const redist_mesh_t *m, const redist_type_t *t, int i);
/* Each dim: lcm of the source's and the target's split counts times
 * 1..mult, and with `extra_axis`, one time in two, times the size of a
 * random axis (room for intermediate splits). */
void rp_shape_between(rp_rng *r, rp_problem *p, int mult, int extra_axis);
/* Each dim: the source's split count times 1..mult, times each axis's
 * size with probability 1/3 (any axis may end up on any dim). */
void rp_shape_walk(rp_rng *r, rp_problem *p, int mult);
/* A random dtype, then a random reduce op. */
void rp_dtype_reduce(rp_rng *r, rp_problem *p);
/* The number of dims of a random problem: 1-3, or one time in 16 none
 * (a scalar: one element; partial axes still reduce). */
int rp_ndims(rp_rng *r);
/* A problem to plan on m: rp_ndims dims, a source with any partial axes, a
 * target that keeps some of them (rp_shape_between(mult, extra)), a
 * random dtype and reduce op. */
void rp_planned(rp_rng *r, const redist_mesh_t *m, int mult, rp_problem *p);

/* Draw i of a mix of random plans on mesh m (the prepared-object tests):
 * odd i a random walk (exchanges included), i % 4 == 2 an uneven spec of
 * at most 6000 elements under the default objective, else a planned even
 * spec.  *plan is NULL when none came out (the same on every rank, which
 * draws the same); *uneven is 1 for an uneven plan. */
void rp_mixed_plan(rp_rng *r, const redist_mesh_t *m, int i,
                   redist_plan_t **plan, int *uneven);
/* The start of a walk on m: rp_ndims dims, a source with many partial axes,
 * rp_shape_walk(mult), a random dtype and reduce op; to = from. */
void rp_walk_start(rp_rng *r, const redist_mesh_t *m, int mult,
                   rp_problem *p);
/* redist_spec_create of p. */
redist_status_t rp_spec(const rp_problem *p, redist_spec_t **spec,
                        redist_error_t *err);
/* redist_plan_create of p's spec (which is not kept: the plan has its
 * copy); err may be NULL. */
redist_status_t rp_plan(const rp_problem *p, const redist_plan_options_t *po,
                        redist_plan_t **plan, redist_error_t *err);

/* p's shape redrawn for uneven dims (doc/spec-format.md section 7): each dim
 * 1..2k+2 for k the larger split count of the source and target (often
 * n < k, rarely even), and its spec with random layouts: a rule per side
 * (ceil, balanced, chunk) and, one dim in three, explicit block lengths
 * (zero lengths included).  err may be NULL. */
redist_status_t rp_uneven_spec(rp_rng *r, rp_problem *p,
                               redist_spec_t **spec, redist_error_t *err);

/* A random two-mesh spec (doc/meshes.md) on at most `max` (2..64)
 * devices: *kind 0 disjoint meshes, 1 overlapping ranges, 2 the same
 * devices in another shape and order, 3 any devices in any order; each
 * mesh from rp_mesh_exact, a source with any partial axes, a target
 * without, dims often uneven, a random rule per side, dtype and reduce
 * op.  err may be NULL. */
redist_status_t rp_meshes_spec(rp_rng *r, int64_t max, int *kind,
                               redist_spec_t **spec, redist_error_t *err);
/* The same, of one kind: 0 disjoint, 1 overlapping ranges, 2 the same
 * devices in another order, 3 any devices, 4 the same devices in the
 * same order (a reshape on the same devices). */
redist_status_t rp_meshes_spec_kind(rp_rng *r, int64_t max, int kind,
                                    redist_spec_t **spec, redist_error_t *err);

/* -------------------------------------------------------------- walks */

#define RP_WALK_MAX 6

typedef struct rp_walk {
    int n;                                 /* steps */
    redist_step_view_t steps[RP_WALK_MAX]; /* for redist_plan_from_steps */
    int exchanges;                         /* of which exchange steps */
    char refused[256]; /* "": else the step table refused a step (why);
                          the walk stopped before it */
} rp_walk;

/* A random walk of 1..max_len (<= RP_WALK_MAX) legal steps from p->from
 * (p's shape, dtype and op); p->to becomes where it ends.  exchanges 0:
 * each step is drawn among every legal step of every kind of the step
 * table and every permute target (layouts an optimal plan never takes:
 * all_gather then all_to_all, permutes with partial axes, ...).
 * exchanges 1: each step is, one time in two, an exchange to a random
 * type with the same partial set (no step when the shape does not
 * divide), else drawn among the step table's legal steps (permute
 * targets not offered).  Returns 0, or -1 (nothing drawn) when the spec
 * from p->from to itself cannot be made. */
int rp_random_walk(rp_rng *r, rp_problem *p, int max_len, int exchanges,
                   rp_walk *w);
/* The walk's plan: redist_plan_from_steps of p's spec and w's steps;
 * err may be NULL. */
redist_status_t rp_walk_plan(const rp_problem *p, const rp_walk *w,
                             redist_plan_t **plan, redist_error_t *err);

/* ------------------------------------------------- runs under the sim */

/* Every device's result of `plan` under the sim backend (sim_flags, opts)
 * on the sources rp_fill_bits(seed, device): *dst gets one block per
 * device (T bytes, 0x5c before the run; rp_free_blocks), whatever the
 * status. */
redist_status_t rp_sim_expect(const redist_plan_t *plan, uint64_t seed,
                              unsigned sim_flags,
                              const redist_exec_options_t *opts, void ***dst,
                              redist_error_t *err);
void rp_free_blocks(void **blocks, int64_t n);

/* Failures of the sim tests: counted; the first ten printed, with the
 * plan's JSON when there is a plan. */
typedef struct rp_tally {
    int runs, failures;
    /* two-mesh runs: devices run, those whose measured scratch is over
     * the contract's max(src_d, dst_d) (counted; failed where the sim
     * keeps it within for certain), and those where it does (`sure`) */
    int devices, over_bound, sure;
} rp_tally;

void rp_fail(rp_tally *t, const char *what, const redist_plan_t *plan,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Two meshes: is global device `dev` on the mesh of `side`?  The index
 * of the plan's transfer step (-1: none). */
int rp_on_mesh(const redist_spec_t *s, int side, int64_t dev);
int rp_transfer_step(const redist_plan_t *plan);
/* With RP_SHOW_OVER in the environment: print a run over max(sb, db) on
 * stderr (`who` device `dev`, case c, exec flags, blocks, high-water
 * mark, the plan's steps); with RP_SHOW_PLAN too, the plan's JSON. */
void rp_show_over(const redist_plan_t *plan, const char *who, int64_t dev,
                  int c, unsigned flags, uint64_t sb, uint64_t db,
                  uint64_t hw);

/* Run `plan` under the sim backend with random options (PRESERVE_SRC one
 * time in three, the fused path one time in two) on the exact pattern and
 * check: the data on every device; the source intact when PRESERVE_SRC is
 * given or the program does not write it; scratch high-water <= the
 * promise, which is the reported one; the promise <= max(src, dst) for
 * memory-efficient plans (2 max with PRESERVE_SRC), <= 2 peak, 0 without
 * collectives; the report's steps and writes_src.  need (else
 * UINT64_MAX): the exact bytes the most needy device receives, and every
 * byte sent is received.  Returns 0 (a run, t->runs counts it), or -1
 * when exec_info refused the plan (a failure). */
int rp_sim_check(rp_rng *r, rp_tally *t, const char *what,
                 const redist_plan_t *plan, uint64_t need);

/* ------------------------------------------------------------- sets */

/* A random one-mesh spec on m named `name` for a set of arrays: planned
 * even, or one time in three uneven (its rules kept); NULL when 20 draws
 * gave none. */
redist_spec_t *rp_set_spec(rp_rng *r, const redist_mesh_t *m,
                           const char *name);
/* Of a set planned without a budget (one round): the smallest budget
 * that works (the largest array's scratch, with the round's work-space
 * reserve; or less, where the set says less works with budget 0: arrays
 * whose reductions a tight budget keeps as collectives, doc/arrays.md)
 * and the one round's scratch (every array at once). */
void rp_set_budgets(const redist_plan_set_t *set, uint64_t *most,
                    uint64_t *sum);
/* The scratch of the `count` (at most 8) arrays of `set` that need the
 * most, added up: a budget that makes rounds of about that many. */
uint64_t rp_set_largest(const redist_plan_set_t *set, int count);
/* The set "set" of specs[0..n) under `budget`, planned for `be`'s kind
 * (NULL: the generic programs), default plan options; NULL when it does
 * not plan. */
redist_plan_set_t *rp_set_make(redist_spec_t *const specs[], int n,
                               uint64_t budget, const redist_backend_t *be);
/* The same, pending sums allowed to cross between meshes (cross). */
redist_plan_set_t *rp_set_make_cross(redist_spec_t *const specs[], int n,
                                     uint64_t budget,
                                     const redist_backend_t *be, int cross);
/* A random two-mesh spec on exactly `size` devices (every one in one
 * of its meshes) named `name` for a set (rp_meshes_spec redrawn until it
 * spans them all); NULL when 40 draws gave none. */
redist_spec_t *rp_set_two_spec(rp_rng *r, int64_t size, const char *name);
/* Prepare `set` on this rank's endpoint `be` (buffers of this rank,
 * be's rank being its device), run it twice with every element of every
 * array checked, the scratch high-water mark against `budget` and the
 * arena, the combined exchanges against the rounds' most steps of an
 * array (an all_reduce two; not their sum) and the set's exchanges
 * figure, and the messages
 * against one per other rank per combined exchange; after each run
 * `after(user)` (may be NULL: a backend's own counts).  Problems are
 * printed with case number c; 0 when exact on this rank. */
int rp_set_run_twice(const redist_plan_set_t *set, uint64_t budget, int c,
                     redist_backend_t *be, void (*after)(void *user),
                     void *user);
/* The same, with *messages (may be NULL) the messages this rank sent in
 * the last run. */
int rp_set_run_counted(const redist_plan_set_t *set, uint64_t budget, int c,
                       redist_backend_t *be, void (*after)(void *user),
                       void *user, uint64_t *messages);

/* A set of k two-mesh arrays whose phases have steps, on be's ranks:
 * sums pending over mesh "a" (every rank, in reverse order, so that the
 * phase's peers must be translated) to rows sharded over mesh "b"
 * (every rank, in order), the sums done on the source mesh (a
 * reduce_scatter there, then the transfer); planned for be's kind
 * (for_be) or generic, under no budget or (tight) the three largest
 * arrays' scratch.  With two or more arrays every phase step must be
 * lowered (combined), each round's exchanges its array's with the most
 * (with more than two arrays, fewer than the transfers' one per round
 * plus a collective per array and phase step), within the budget; then
 * rp_set_run_counted (exact, the runner's combined exchanges the
 * figure).  0 when right on this rank; c numbers the problems. */
int rp_set_phases(redist_backend_t *be, int k, int tight, int for_be, int c);
/* A set of k uneven all_reduces on be's ranks (4 or 6 of them, else
 * nothing is checked: mesh y=2, x=size/2; 3 rows split over y, sums
 * pending over x),
 * planned for be's kind (for_be) or generic: with two or more arrays
 * each lowered (combined), 2 combined exchanges in one round, then
 * rp_set_run_counted (exact, the runner's count the figure) and 2
 * (x - 1) messages from each rank; one array: the collective, no
 * exchange.  0 when right on this rank (or another size). */
int rp_set_uneven_all_reduces(redist_backend_t *be, int k, int for_be, int c);
/* The arrays of `set` that are one uneven all_reduce whose step runs in
 * the combined exchanges (combined 1) or as its collective (0). */
int rp_set_uneven_all_reduces_combined(const redist_plan_set_t *set,
                                       int combined);

#endif
