/*
 * test_exhaustive - the solver's optimality against an independent
 * exhaustive search (tests/exhaustive/search.c) on random small specs,
 * under both objectives.
 *
 *   test_exhaustive [CASES [SEED [links]]]
 *                                      (default 20000 cases, a fixed seed)
 *
 * With "links" (meson's exhaustive-links) each case also draws a link level
 * for each mesh axis, and the time objective's checks plan with the
 * built-in numbers on those levels (the reports add --axis-links): a
 * permute's or an exchange's link then depends on which axes it moves.
 *
 * Each case is a random spec built through the C API: 1-4 mesh axes of
 * sizes 1-4, 1-3 array dims made of small factors (so that divisibility
 * varies), random source and target types (the source may be partial, the
 * target's partial set is a subset of the source's), random dtype and
 * reduce op.  For each case:
 *   (a) the bytes objective: redist_plan_create's peak, recv (ceil of the
 *       exact total) and collectives equal the exhaustive optimum, and the
 *       exact total, recomputed here from the step views, equals the exact
 *       optimum;
 *   (b) redist_plan_verify accepts the plan;
 *   (c) its JSON, fed back through redist_plan_verify_buffer, is valid with
 *       the same statistics;
 *   (d) redist_plan_from_steps with the plan's own step views reproduces
 *       the same statistics;
 *   (e) planning twice gives byte-identical JSON;
 *   (f) the time objective (the default; built-in cost model,
 *       redist_cost_model_default) against rx_search_time:
 *       - the plan's peak equals the reference's least peak (the exchange
 *         edge may lower it below the bytes objective's), and its
 *         stats.time_s the least modelled time within the planner's
 *         rounding (a part in 10^9 plus a femtosecond); it says it is
 *         optimal, with bounds equal to its own figures;
 *       - its step views, replayed here: each step's recv_bytes (an
 *         exchange's: the most any device lacks, device by device),
 *         local bytes and time_s (rx_step_time, the README's step table)
 *         and their sums agree with the stats; the verifier agrees too;
 *       - collectives: the reference gives the least time of a plan of
 *         each collective count.  When no count other than the
 *         reference's fewest (among plans of exactly the least time)
 *         comes within rounding of a nonzero least time, or the least
 *         time is 0, the plan must have that count.  Otherwise the count
 *         is open (the planner rounds each step to whole femtoseconds, so
 *         two plans of exactly equal modelled time may differ there): it
 *         must be one whose least time is within rounding.  Such ties are
 *         counted, and the first few where the plan takes more
 *         collectives than the fewest at exactly that time are printed;
 *       - the reference's own optimal path, rebuilt with
 *         redist_plan_from_steps and verified with
 *         redist_plan_verify_buffer_cost, is valid with the reference's
 *         peak, collectives and time (the reference's paths are plans);
 *   (g) with a search budget of 2 types, redist_plan_create still returns
 *       a valid plan (the constructive one) whose stated lower bounds
 *       hold: no smaller peak than the optimum's, and, at the optimum's
 *       peak, no fewer bytes; a plan it calls optimal is the optimum.  The
 *       same under the time objective, against its own optimum.
 * Every plan of (a) and (f) must say it is proven optimal (stats.optimal).
 * The first failures print the spec in the inline form of `redistplan`.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redist.h"
#include "exhaustive/search.h"

#define DEFAULT_CASES 20000
#define DEFAULT_SEED 0x5eed2024u
#define MAX_REPORTS 10
#define MAX_TIE_EXAMPLES 3

/* ---------------------------------------------------------- generator */

/* Options of the bytes objective, which the reference search implements
 * (doc/spec-format.md section 2). */
static const redist_plan_options_t bytes_opts = {
    .objective = REDIST_OBJECTIVE_BYTES};

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t x = rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n). */
static int rng_below(int n) { return (int)((rng_next() >> 33) % (uint64_t)n); }

typedef struct {
    int naxes;
    const char *names[4];
    int64_t sizes[4];
    int ndims;
    int64_t shape[3];
    redist_dtype_t dtype;
    redist_reduce_t reduce;
    redist_type_t from, to;
    int links;          /* the links mode: axis_link holds each axis's level */
    uint8_t axis_link[4];
} gcase_t;

/* The links mode (third argument "links"): each case also draws a link
 * level for each axis, and the time objective plans under the built-in
 * numbers with those levels (--axis-links). */
static int links_mode;

static const char *const axis_names[4] = {"x", "y", "z", "w"};

static int divisible(const gcase_t *c, const redist_type_t *t)
{
    for (int d = 0; d < c->ndims; d++) {
        int64_t prod = 1;
        for (int k = 0; k < t->dim_naxes[d]; k++)
            prod *= c->sizes[t->dims[d][k]];
        if (c->shape[d] % prod != 0)
            return 0;
    }
    return 1;
}

/* A random type: the axes in a random order, each one partial (always
 * when in `must_partial`; with probability partial_pct% when in
 * `may_partial`), else replicated or appended as the minor of a random
 * dim (so the order within a dim is random too). */
static void random_type(const gcase_t *c, redist_type_t *t,
                        uint32_t may_partial, int partial_pct,
                        uint32_t must_partial)
{
    int order[4];
    redist_type_init(t, c->ndims);
    for (int a = 0; a < c->naxes; a++)
        order[a] = a;
    for (int a = c->naxes - 1; a > 0; a--) {
        int j = rng_below(a + 1), tmp = order[a];
        order[a] = order[j];
        order[j] = tmp;
    }
    for (int k = 0; k < c->naxes; k++) {
        int a = order[k];
        if (must_partial >> a & 1u) {
            redist_type_add_partial(t, a);
            continue;
        }
        if ((may_partial >> a & 1u) && rng_below(100) < partial_pct) {
            redist_type_add_partial(t, a);
            continue;
        }
        int r = rng_below(c->ndims + 1); /* ndims: replicated */
        if (r < c->ndims)
            redist_type_push_axis(t, r, a);
    }
}

static void random_case(gcase_t *c)
{
    /* Weighted towards larger problems (more axes, more dims, dims with
     * more factors), where the search space and the solver's pruning are
     * most interesting; small ones still come up often. */
    static const int64_t dimvals[] = {1, 2, 3, 4, 6, 8, 12, 16, 24,
                                      6, 8, 12, 16, 24, 24};
    static const int64_t sizevals[] = {1, 2, 2, 2, 3, 3, 3, 4, 4, 4};
    static const int naxesvals[] = {1, 2, 2, 3, 3, 3, 4, 4, 4, 4};
    static const int ndimsvals[] = {1, 2, 2, 3, 3};
    for (;;) {
        memset(c, 0, sizeof *c);
        c->naxes = naxesvals[rng_below(10)];
        for (int a = 0; a < c->naxes; a++) {
            c->names[a] = axis_names[a];
            c->sizes[a] = sizevals[rng_below(10)];
        }
        c->ndims = ndimsvals[rng_below(5)];
        for (int d = 0; d < c->ndims; d++)
            c->shape[d] = dimvals[rng_below(15)];
        c->dtype = (redist_dtype_t)rng_below(REDIST_DTYPE_COUNT);
        c->reduce = (redist_reduce_t)rng_below(REDIST_REDUCE_COUNT);
        uint32_t all = (1u << c->naxes) - 1;
        int src_partial_pct = rng_below(3) == 0 ? 0 : 30;
        for (int tries = 0; tries < 20; tries++) {
            random_type(c, &c->from, all, src_partial_pct, 0);
            if (divisible(c, &c->from))
                break;
        }
        if (!divisible(c, &c->from))
            continue;
        /* the target keeps a random subset of the source's partial axes */
        uint32_t keep = 0;
        for (int a = 0; a < c->naxes; a++)
            if ((c->from.partial >> a & 1u) && rng_below(100) < 35)
                keep |= 1u << a;
        for (int tries = 0; tries < 20; tries++) {
            if (rng_below(20) == 0)
                c->to = c->from; /* identity now and then */
            else
                random_type(c, &c->to, 0, 0, keep);
            if ((c->to.partial & ~c->from.partial) == 0 && divisible(c, &c->to))
                break;
        }
        if ((c->to.partial & ~c->from.partial) == 0 && divisible(c, &c->to)) {
            c->links = links_mode;
            for (int a = 0; links_mode && a < c->naxes; a++)
                c->axis_link[a] = (uint8_t)rng_below(REDIST_LINK_COUNT);
            return;
        }
    }
}

/* The cost model of the time objective's checks: the built-in one, with
 * the case's axis links in the links mode. */
static void case_model(const gcase_t *c, redist_cost_model_t *model)
{
    redist_cost_model_default(model);
    for (int a = 0; c->links && a < c->naxes; a++)
        model->axis_link[a] = c->axis_link[a];
}

/* ------------------------------------------------------------ reports */

static void inline_type(const gcase_t *c, const redist_type_t *t, char *buf,
                        size_t size, char *pbuf, size_t psize)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int d = 0; d < t->ndims; d++) {
        if (d)
            pos += (size_t)snprintf(buf + pos, size - pos, "|");
        for (int k = 0; k < t->dim_naxes[d]; k++)
            pos += (size_t)snprintf(buf + pos, size - pos, "%s%s",
                                    k ? "," : "", c->names[t->dims[d][k]]);
    }
    pos = 0;
    pbuf[0] = '\0';
    for (int a = 0; a < c->naxes; a++)
        if (t->partial >> a & 1u)
            pos += (size_t)snprintf(pbuf + pos, psize - pos, "%s%s",
                                    pos ? "," : "", c->names[a]);
}

static void print_case(const gcase_t *c, FILE *f)
{
    char mesh[128], shape[64], from[128], fp[64], to[128], tp[64];
    size_t pos = 0;
    for (int a = 0; a < c->naxes; a++)
        pos += (size_t)snprintf(mesh + pos, sizeof mesh - pos, "%s%s=%" PRId64,
                                a ? "," : "", c->names[a], c->sizes[a]);
    pos = 0;
    for (int d = 0; d < c->ndims; d++)
        pos += (size_t)snprintf(shape + pos, sizeof shape - pos,
                                "%s%" PRId64, d ? "x" : "", c->shape[d]);
    inline_type(c, &c->from, from, sizeof from, fp, sizeof fp);
    inline_type(c, &c->to, to, sizeof to, tp, sizeof tp);
    fprintf(f, "  spec: redistplan plan - --mesh %s --shape %s --dtype %s "
               "--from '%s'%s%s --to '%s'%s%s --reduce %s",
            mesh, shape, redist_dtype_name(c->dtype), from,
            fp[0] ? " --from-partial " : "", fp, to,
            tp[0] ? " --to-partial " : "", tp, redist_reduce_name(c->reduce));
    for (int a = 0; c->links && a < c->naxes; a++)
        fprintf(f, "%s%s=%s", a ? "," : " --axis-links ", c->names[a],
                redist_link_name((redist_link_t)c->axis_link[a]));
    fprintf(f, "\n");
}

static void print_plan(const redist_plan_t *plan, FILE *f)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int n = redist_plan_num_steps(plan);
    fprintf(f, "  solver path:");
    for (int i = 0; i < n; i++) {
        redist_step_view_t v;
        char tf[256];
        if (redist_plan_step(plan, i, &v))
            break;
        fprintf(f, "%s %s(", i ? ";" : "", redist_op_name(v.op));
        if (v.op == REDIST_OP_ALL_TO_ALL)
            fprintf(f, "%d->%d, %s", v.from_dim, v.to_dim,
                    redist_mesh_axis_name(mesh, v.axis));
        else if (v.axis >= 0 && v.dim >= 0)
            fprintf(f, "dim=%d, %s", v.dim, redist_mesh_axis_name(mesh, v.axis));
        else if (v.axis >= 0)
            fprintf(f, "%s", redist_mesh_axis_name(mesh, v.axis));
        fprintf(f, ") -> %s [recv %" PRIu64,
                redist_type_format(&v.after, mesh, tf, sizeof tf),
                v.recv_bytes);
        if (v.time_s > 0)
            fprintf(f, ", %.6f us", v.time_s * 1e6);
        fprintf(f, "]");
    }
    fprintf(f, "\n");
}

/* ------------------------------------------- independent plan replay */

/* Within the rounding of the planner's times (whole femtoseconds per
 * step, doc/design.md "The time objective"). */
static int time_close(double a, double b)
{
    double m = a > b ? a : b;
    return fabs(a - b) <= 1e-9 * m + 1e-15;
}

/* Recompute, from doc/spec-format.md section 2 alone, the exact received bytes of
 * the plan's steps (in units of 1/den, den a multiple of every axis size)
 * and its peak, from the step views.  Each view's local_bytes must be the
 * size of its `after` type and its recv_bytes the ceiling of the exact
 * figure (an exchange: the most any device lacks, device by device).
 * With a cost model (else NULL), each view's time_s must also be the
 * step's modelled time (rx_step_time: the README's step table), and *time
 * is their sum.  Returns 0, or -1 with a reason in `why`. */
static int replay_exact(const redist_plan_t *plan, const rx_problem_t *p,
                        uint64_t den, const redist_cost_model_t *model,
                        rx_u128 *total, uint64_t *peak, double *time,
                        char *why, size_t whysize)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    uint64_t L = redist_spec_src_bytes(spec);
    redist_type_t before = *redist_spec_from(spec);
    *total = 0;
    *peak = L;
    *time = 0;
    for (int i = 0; i < redist_plan_num_steps(plan); i++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, i, &v)) {
            snprintf(why, whysize, "step %d: no view", i);
            return -1;
        }
        uint64_t elems = 1;
        for (int d = 0; d < p->ndims; d++) {
            int64_t prod = 1;
            for (int k = 0; k < v.after.dim_naxes[d]; k++)
                prod *= p->size[v.after.dims[d][k]];
            if (p->shape[d] % prod != 0 ||
                v.local_shape[d] != p->shape[d] / prod) {
                snprintf(why, whysize, "step %d: local_shape[%d] = %" PRId64
                         " disagrees with its after type", i, d,
                         v.local_shape[d]);
                return -1;
            }
            elems *= (uint64_t)(p->shape[d] / prod);
        }
        uint64_t Lafter = elems * p->elem_size;
        if (v.local_bytes != Lafter) {
            snprintf(why, whysize, "step %d: local_bytes %" PRIu64
                     ", expected %" PRIu64, i, v.local_bytes, Lafter);
            return -1;
        }
        rx_u128 LD = (rx_u128)L * den, s = 1, r;
        if (v.op != REDIST_OP_PERMUTE && v.op != REDIST_OP_EXCHANGE) {
            if (v.axis < 0 || v.axis >= p->naxes) {
                snprintf(why, whysize, "step %d: axis %d", i, v.axis);
                return -1;
            }
            s = (rx_u128)p->size[v.axis];
        }
        switch (v.op) {
        case REDIST_OP_SLICE: r = 0; break;
        case REDIST_OP_ALL_GATHER: r = (s - 1) * LD; break;
        case REDIST_OP_ALL_TO_ALL:
        case REDIST_OP_REDUCE_SCATTER: r = (s - 1) * LD / s; break;
        case REDIST_OP_ALL_REDUCE: r = 2 * (s - 1) * LD / s; break;
        case REDIST_OP_PERMUTE: r = LD; break;
        case REDIST_OP_EXCHANGE: {
            uint64_t lack, peers;
            rx_exchange_need(p, &before, &v.after, &lack, &peers);
            r = (rx_u128)lack * den;
            break;
        }
        default:
            snprintf(why, whysize, "step %d: op %d", i, (int)v.op);
            return -1;
        }
        if (v.recv_bytes != (uint64_t)((r + den - 1) / den)) {
            snprintf(why, whysize, "step %d: recv_bytes %" PRIu64
                     ", expected ceil(%.4f)", i, v.recv_bytes,
                     (double)r / (double)den);
            return -1;
        }
        if (model) {
            double st;
            if (rx_step_time(p, model, v.op, v.axis, &before, &v.after, &st)) {
                snprintf(why, whysize, "step %d: no modelled time", i);
                return -1;
            }
            if (!time_close(st, v.time_s)) {
                snprintf(why, whysize, "step %d (%s): time_s %.9g, the "
                         "step table gives %.9g", i, redist_op_name(v.op),
                         v.time_s, st);
                return -1;
            }
            *time += st;
        }
        *total += r;
        L = Lafter;
        before = v.after;
        if (L > *peak)
            *peak = L;
    }
    return 0;
}

/* ----------------------------------------------------------- one case */

typedef struct {
    long cases, failed, reports;
    long nonefficient, partial_src, with_permute, fallbacks;
    long types_total;
    /* the time objective */
    long t_exchange, t_permute, t_differ, t_lower_peak, t_zero, t_ties,
        t_ties_more_coll, tie_examples;
} tally_t;

#define CASE_FAIL(...)                                                       \
    do {                                                                     \
        if (!failed && t->reports < MAX_REPORTS) {                           \
            fprintf(stderr, "FAIL case %ld: ", idx);                         \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            print_case(&c, stderr);                                          \
            t->reports++;                                                    \
            report = 1;                                                      \
        } else if (report) {                                                 \
            fprintf(stderr, "  also: ");                                     \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
        failed = 1;                                                          \
    } while (0)

static int same_stats(const redist_plan_stats_t *a, const redist_plan_stats_t *b)
{
    return a->src_bytes == b->src_bytes && a->dst_bytes == b->dst_bytes &&
           a->peak_bytes == b->peak_bytes && a->recv_bytes == b->recv_bytes &&
           a->collectives == b->collectives && a->steps == b->steps &&
           a->memory_efficient == b->memory_efficient;
}

static int same_steps(const redist_plan_t *a, const redist_plan_t *b)
{
    int n = redist_plan_num_steps(a);
    if (n != redist_plan_num_steps(b))
        return 0;
    for (int i = 0; i < n; i++) {
        redist_step_view_t x, y;
        if (redist_plan_step(a, i, &x) || redist_plan_step(b, i, &y))
            return 0;
        if (x.op != y.op || x.dim != y.dim || x.from_dim != y.from_dim ||
            x.to_dim != y.to_dim || x.axis != y.axis ||
            x.after.ndims != y.after.ndims || x.after.partial != y.after.partial)
            return 0;
        for (int d = 0; d < x.after.ndims; d++)
            if (x.after.dim_naxes[d] != y.after.dim_naxes[d] ||
                memcmp(x.after.dims[d], y.after.dims[d],
                       x.after.dim_naxes[d]) != 0)
                return 0;
    }
    return 1;
}

/* (f) the time objective: the solver's default plan against the reference
 * search's time optimum under the built-in cost model.  *tplanp receives
 * the plan (for (g)). */
static void check_time(long idx, const gcase_t *cp, const redist_spec_t *spec,
                       const rx_problem_t *prob, const redist_plan_t *bplan,
                       redist_plan_t **tplanp, tally_t *t, int *failedp,
                       int *reportp)
{
    const gcase_t c = *cp;
    int failed = *failedp, report = *reportp;
    redist_cost_model_t model;
    redist_error_t err;
    char eb[1024];
    rx_time_result_t opt;
    redist_plan_options_t o;

    case_model(&c, &model);
    if (rx_search_time(prob, &model, &opt)) {
        CASE_FAIL("reference time search failed");
        goto out;
    }
    if (!opt.feasible) {
        CASE_FAIL("reference time search found no plan");
        goto out;
    }
    memset(&o, 0, sizeof o);
    o.objective = REDIST_OBJECTIVE_TIME;
    o.cost = c.links ? &model : NULL; /* NULL: the built-in model */
    redist_error_clear(&err);
    redist_status_t st = redist_plan_create(spec, &o, tplanp, &err);
    if (st) {
        CASE_FAIL("time objective: redist_plan_create: %s (status %d)",
                  redist_error_format(&err, eb, sizeof eb), (int)st);
        goto out;
    }
    const redist_plan_t *plan = *tplanp;
    redist_plan_stats_t ps;
    redist_plan_stats(plan, &ps);
    double T = opt.time_s, tol = 1e-9 * T + 1e-15;

    /* optimality: the peak exactly, the time within rounding */
    if (ps.peak_bytes != opt.peak_bytes || !time_close(ps.time_s, T)) {
        CASE_FAIL("time objective not optimal: solver (peak %" PRIu64
                  ", %.9g s, collectives %d), reference (peak %" PRIu64
                  ", %.9g s, collectives %d)",
                  ps.peak_bytes, ps.time_s, ps.collectives, opt.peak_bytes,
                  T, opt.collectives);
        if (report) {
            print_plan(plan, stderr);
            fprintf(stderr, "  reference path: %s\n", opt.path);
        }
    }
    if (!ps.optimal || ps.bound_peak_bytes != ps.peak_bytes ||
        ps.bound_time_s != ps.time_s)
        CASE_FAIL("time objective: stats.optimal %d, bounds %" PRIu64
                  " / %.17g s for a plan of %.17g s", ps.optimal,
                  ps.bound_peak_bytes, ps.bound_time_s, ps.time_s);

    /* the step views, replayed: bytes, peak and each step's time */
    {
        rx_u128 exact, den = 1;
        uint64_t rpeak;
        double rtime;
        char why[256];
        for (int a = 0; a < prob->naxes; a++)
            den *= (rx_u128)prob->size[a];
        if (replay_exact(plan, prob, (uint64_t)den, &model, &exact, &rpeak,
                         &rtime, why, sizeof why))
            CASE_FAIL("time objective, step views: %s", why);
        else if (rpeak != ps.peak_bytes || !time_close(rtime, ps.time_s) ||
                 (uint64_t)((exact + den - 1) / den) != ps.recv_bytes)
            CASE_FAIL("time objective: replayed peak %" PRIu64 ", time %.9g"
                      ", recv %.4f; stats %" PRIu64 ", %.9g, %" PRIu64,
                      rpeak, rtime, (double)exact / (double)den,
                      ps.peak_bytes, ps.time_s, ps.recv_bytes);
    }
    int coll = 0, nexch = 0, nperm = 0;
    for (int i = 0; i < redist_plan_num_steps(plan); i++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, i, &v) == REDIST_OK) {
            coll += redist_op_is_collective(v.op);
            nexch += v.op == REDIST_OP_EXCHANGE;
            nperm += v.op == REDIST_OP_PERMUTE;
        }
    }
    if (coll != ps.collectives)
        CASE_FAIL("time objective: %d collective steps, stats say %d", coll,
                  ps.collectives);

    /* fewest collectives: among the plans of the least time the reference
     * takes the fewest (exact ties).  The planner rounds each step to
     * whole femtoseconds, so where a plan of another count lies within
     * that rounding of a nonzero optimum the choice is open (a tie,
     * counted); else (and always at time 0, where nothing is rounded) the
     * count must be the reference's. */
    if (opt.nalt > 0) {
        int tie = 0, fewest = -1;
        for (int k = 0; k < opt.nalt; k++) {
            if (opt.alt_time_s[k] <= T + tol) {
                if (fewest < 0)
                    fewest = k;
                if (k != opt.collectives && T > 0)
                    tie = 1;
            }
        }
        int kk = ps.collectives < opt.nalt - 1 ? ps.collectives
                                               : opt.nalt - 1;
        if (!tie && ps.collectives != opt.collectives)
            CASE_FAIL("time objective: %d collectives, the reference's "
                      "optimum has %d (%s)", ps.collectives, opt.collectives,
                      T > 0 ? "no other count within rounding" : "time 0");
        else if (tie && (ps.collectives < fewest ||
                         opt.alt_time_s[kk] > T + tol))
            CASE_FAIL("time objective: %d collectives; the least times by "
                      "count are off the optimum %.9g s", ps.collectives, T);
        if (tie) {
            t->t_ties++;
            if (ps.collectives > opt.collectives &&
                opt.alt_time_s[kk] == T) {
                t->t_ties_more_coll++;
                if (t->tie_examples < MAX_TIE_EXAMPLES) {
                    t->tie_examples++;
                    printf("exhaustive: tie example (case %ld): %d "
                           "collectives where %d give exactly the same "
                           "modelled time %.9g s\n",
                           idx, ps.collectives, opt.collectives, T);
                    print_case(&c, stdout);
                    print_plan(plan, stdout);
                    printf("  reference path: %s\n", opt.path);
                }
            }
        }
    }
    if (T == 0)
        t->t_zero++;

    /* the reference's own path is a plan: rebuilt from its steps through
     * the public API, it verifies, and the library's modelled time of it
     * is the reference optimum */
    if (opt.npath > 0 || opt.steps == 0) {
        redist_step_view_t rv[RX_MAX_PATH];
        redist_plan_t *rp = NULL;
        memset(rv, 0, sizeof rv);
        for (int i = 0; i < opt.npath; i++) {
            rv[i].op = opt.step[i].op;
            rv[i].dim = opt.step[i].dim;
            rv[i].from_dim = opt.step[i].from_dim;
            rv[i].to_dim = opt.step[i].to_dim;
            rv[i].axis = opt.step[i].axis;
            rv[i].after = opt.step[i].after;
        }
        redist_error_clear(&err);
        if (redist_plan_from_steps(spec, opt.npath, rv, &rp, &err)) {
            CASE_FAIL("the reference path does not replay: %s (path: %s)",
                      redist_error_format(&err, eb, sizeof eb), opt.path);
        } else {
            char *rj = redist_plan_to_json(rp);
            redist_verify_result_t vr;
            memset(&vr, 0, sizeof vr);
            redist_error_clear(&err);
            if (!rj ||
                redist_plan_verify_buffer_cost(spec, rj, strlen(rj), "<ref>",
                                               &model, &vr, &err) ||
                !vr.valid || vr.peak_bytes != opt.peak_bytes ||
                vr.collectives != opt.collectives ||
                !time_close(vr.time_s, T))
                CASE_FAIL("the reference path verifies as valid %d, peak %"
                          PRIu64 ", %d collectives, %.9g s (reference %"
                          PRIu64 ", %d, %.9g s): %s (path: %s)", vr.valid,
                          vr.peak_bytes, vr.collectives, vr.time_s,
                          opt.peak_bytes, opt.collectives, T,
                          redist_error_format(&err, eb, sizeof eb), opt.path);
            free(rj);
        }
        redist_plan_free(rp);
    } else {
        CASE_FAIL("the reference path is longer than %d steps", RX_MAX_PATH);
    }

    /* the verifier agrees */
    {
        redist_verify_result_t vr;
        redist_error_clear(&err);
        st = redist_plan_verify(plan, &vr, &err);
        if (st || !vr.valid || vr.peak_bytes != ps.peak_bytes ||
            vr.collectives != ps.collectives || vr.exchange_steps != nexch ||
            !time_close(vr.time_s, ps.time_s))
            CASE_FAIL("time objective: redist_plan_verify: status %d valid "
                      "%d time %.9g: %s", (int)st, vr.valid, vr.time_s,
                      redist_error_format(&err, eb, sizeof eb));
    }

    if (nexch)
        t->t_exchange++;
    if (nperm)
        t->t_permute++;
    if (!same_steps(plan, bplan))
        t->t_differ++;
    if (ps.peak_bytes < redist_plan_peak_bytes(bplan))
        t->t_lower_peak++;
out:
    *failedp = failed;
    *reportp = report;
}

static void run_case(long idx, tally_t *t)
{
    gcase_t c;
    int failed = 0, report = 0;
    redist_mesh_t *mesh = NULL;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL, *plan2 = NULL, *replan = NULL, *tplan = NULL;
    redist_step_view_t *views = NULL;
    char *json = NULL, *json2 = NULL;
    redist_error_t err;
    char eb[1024];
    rx_problem_t prob;
    rx_result_t opt;

    random_case(&c);
    t->cases++;
    if (c.from.partial)
        t->partial_src++;

    redist_error_clear(&err);
    if (redist_mesh_create(c.naxes, c.names, c.sizes, &mesh, &err)) {
        CASE_FAIL("redist_mesh_create: %s",
                  redist_error_format(&err, eb, sizeof eb));
        goto out;
    }
    if (redist_spec_create(mesh, c.ndims, c.shape, c.dtype, &c.from, &c.to,
                           c.reduce, "random", &spec, &err)) {
        CASE_FAIL("redist_spec_create: %s",
                  redist_error_format(&err, eb, sizeof eb));
        goto out;
    }
    if (rx_problem_from_spec(spec, &prob) || rx_search(&prob, &opt)) {
        CASE_FAIL("reference search failed");
        goto out;
    }
    t->types_total += opt.ntypes;
    if (!opt.feasible) {
        CASE_FAIL("reference search found no plan (cannot happen: the "
                  "target's partial set is a subset of the source's)");
        goto out;
    }
    if (opt.peak_bytes > (opt.src_bytes > opt.dst_bytes ? opt.src_bytes
                                                        : opt.dst_bytes))
        t->nonefficient++;
    if (strstr(opt.path, "permute("))
        t->with_permute++;

    /* the reference search is version 1's objective: bytes */
    redist_status_t st = redist_plan_create(spec, &bytes_opts, &plan, &err);
    if (st) {
        CASE_FAIL("redist_plan_create: %s (status %d)",
                  redist_error_format(&err, eb, sizeof eb), (int)st);
        goto out;
    }
    redist_plan_stats_t ps;
    redist_plan_stats(plan, &ps);

    /* (a) optimality */
    if (ps.peak_bytes != opt.peak_bytes || ps.recv_bytes != opt.recv_ceil ||
        ps.collectives != opt.collectives) {
        double exact = (double)opt.recv_num / (double)opt.recv_den;
        CASE_FAIL("not optimal: solver (peak %" PRIu64 ", recv %" PRIu64
                  ", collectives %d), exhaustive (peak %" PRIu64
                  ", recv %" PRIu64 " [exact %.4f], collectives %d)",
                  ps.peak_bytes, ps.recv_bytes, ps.collectives,
                  opt.peak_bytes, opt.recv_ceil, exact, opt.collectives);
        if (report) {
            print_plan(plan, stderr);
            fprintf(stderr, "  exhaustive path: %s\n", opt.path);
        }
    }
    if (!ps.optimal || ps.bound_peak_bytes != ps.peak_bytes ||
        ps.bound_recv_bytes != ps.recv_bytes)
        CASE_FAIL("stats.optimal %d, bounds %" PRIu64 "/%" PRIu64
                  " for a finished search",
                  ps.optimal, ps.bound_peak_bytes, ps.bound_recv_bytes);
    /* (a') the exact total, recomputed from the step views, is the exact
     * optimum (the reported figure is only its ceiling) */
    {
        rx_u128 exact;
        uint64_t rpeak;
        char why[256];
        double rtime;
        if (replay_exact(plan, &prob, opt.recv_den, NULL, &exact, &rpeak,
                         &rtime, why, sizeof why))
            CASE_FAIL("step views: %s", why);
        else if (exact != opt.recv_num || rpeak != ps.peak_bytes)
            CASE_FAIL("exact recv of the plan %.4f (peak %" PRIu64
                      "), exhaustive optimum %.4f",
                      (double)exact / (double)opt.recv_den, rpeak,
                      (double)opt.recv_num / (double)opt.recv_den);
    }
    if (ps.src_bytes != opt.src_bytes || ps.dst_bytes != opt.dst_bytes)
        CASE_FAIL("src/dst bytes %" PRIu64 "/%" PRIu64 ", expected %" PRIu64
                  "/%" PRIu64,
                  ps.src_bytes, ps.dst_bytes, opt.src_bytes, opt.dst_bytes);
    uint64_t bound = opt.src_bytes > opt.dst_bytes ? opt.src_bytes
                                                   : opt.dst_bytes;
    if (ps.memory_efficient != (ps.peak_bytes <= bound))
        CASE_FAIL("memory_efficient %d with peak %" PRIu64 ", bound %" PRIu64,
                  ps.memory_efficient, ps.peak_bytes, bound);

    /* (b) the verifier accepts it */
    redist_verify_result_t vr;
    redist_error_clear(&err);
    st = redist_plan_verify(plan, &vr, &err);
    if (st || !vr.valid || vr.peak_bytes != ps.peak_bytes ||
        vr.recv_bytes != ps.recv_bytes || vr.collectives != ps.collectives)
        CASE_FAIL("redist_plan_verify: status %d valid %d: %s", (int)st,
                  vr.valid, redist_error_format(&err, eb, sizeof eb));

    /* (c) JSON round trip through the verifier */
    json = redist_plan_to_json(plan);
    if (!json) {
        CASE_FAIL("redist_plan_to_json returned NULL");
    } else {
        redist_error_clear(&err);
        memset(&vr, 0, sizeof vr);
        st = redist_plan_verify_buffer(spec, json, strlen(json), "<plan>",
                                       &vr, &err);
        if (st || !vr.valid || vr.peak_bytes != ps.peak_bytes ||
            vr.recv_bytes != ps.recv_bytes ||
            vr.collectives != ps.collectives || vr.steps != ps.steps)
            CASE_FAIL("redist_plan_verify_buffer(own JSON): status %d valid "
                      "%d peak %" PRIu64 " recv %" PRIu64 " coll %d: %s",
                      (int)st, vr.valid, vr.peak_bytes, vr.recv_bytes,
                      vr.collectives,
                      redist_error_format(&err, eb, sizeof eb));
    }

    /* (d) from_steps with the plan's own views */
    int n = redist_plan_num_steps(plan);
    if (n != ps.steps)
        CASE_FAIL("num_steps %d, stats.steps %d", n, ps.steps);
    views = calloc((size_t)(n ? n : 1), sizeof *views);
    if (!views) {
        CASE_FAIL("out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (redist_plan_step(plan, i, &views[i]))
            CASE_FAIL("redist_plan_step(%d) failed", i);
    redist_error_clear(&err);
    st = redist_plan_from_steps(spec, n, views, &replan, &err);
    if (st) {
        CASE_FAIL("redist_plan_from_steps: %s",
                  redist_error_format(&err, eb, sizeof eb));
    } else {
        redist_plan_stats_t rs;
        redist_plan_stats(replan, &rs);
        if (!same_stats(&rs, &ps))
            CASE_FAIL("redist_plan_from_steps stats differ: peak %" PRIu64
                      " recv %" PRIu64 " coll %d",
                      rs.peak_bytes, rs.recv_bytes, rs.collectives);
    }

    /* (e) determinism */
    redist_error_clear(&err);
    st = redist_plan_create(spec, &bytes_opts, &plan2, &err);
    if (st) {
        CASE_FAIL("second redist_plan_create: %s",
                  redist_error_format(&err, eb, sizeof eb));
    } else {
        json2 = redist_plan_to_json(plan2);
        if (!json || !json2 || strcmp(json, json2) != 0)
            CASE_FAIL("planning twice gave different JSON");
    }

    check_time(idx, &c, spec, &prob, plan, &tplan, t, &failed, &report);

    /* (g) the constructive plan when the budget runs out */
    {
        redist_plan_options_t o;
        redist_plan_t *fb = NULL;
        redist_plan_stats_t fs;
        memset(&o, 0, sizeof o);
        o.objective = REDIST_OBJECTIVE_BYTES;
        o.max_states = 2;
        redist_error_clear(&err);
        st = redist_plan_create(spec, &o, &fb, &err);
        if (st) {
            CASE_FAIL("budget 2: %s",
                      redist_error_format(&err, eb, sizeof eb));
        } else {
            redist_plan_stats(fb, &fs);
            if (redist_plan_verify(fb, NULL, &err))
                CASE_FAIL("budget 2: the plan does not verify: %s",
                          redist_error_format(&err, eb, sizeof eb));
            if (fs.optimal && (fs.peak_bytes != ps.peak_bytes ||
                               fs.recv_bytes != ps.recv_bytes ||
                               fs.collectives != ps.collectives))
                CASE_FAIL("budget 2: called optimal, but peak %" PRIu64
                          " recv %" PRIu64 " coll %d",
                          fs.peak_bytes, fs.recv_bytes, fs.collectives);
            if (fs.bound_peak_bytes > opt.peak_bytes ||
                fs.peak_bytes < opt.peak_bytes ||
                (fs.peak_bytes == opt.peak_bytes &&
                 fs.bound_recv_bytes > opt.recv_ceil))
                CASE_FAIL("budget 2: bounds peak %" PRIu64 " recv %" PRIu64
                          " against the optimum peak %" PRIu64
                          " recv %" PRIu64 " (plan peak %" PRIu64 ")",
                          fs.bound_peak_bytes, fs.bound_recv_bytes,
                          opt.peak_bytes, opt.recv_ceil, fs.peak_bytes);
            if (!fs.optimal)
                t->fallbacks++;
        }
        redist_plan_free(fb);
        fb = NULL;
        /* the time objective: the constructive plan verifies, and its time
         * bound holds against the time optimum at that peak */
        redist_plan_stats_t bs;
        redist_cost_model_t model;
        case_model(&c, &model);
        o.objective = REDIST_OBJECTIVE_TIME;
        o.max_states = 2;
        o.cost = c.links ? &model : NULL;
        if (tplan) {
            redist_plan_stats(tplan, &bs);
            redist_error_clear(&err);
            if (redist_plan_create(spec, &o, &fb, &err) ||
                redist_plan_verify(fb, NULL, &err))
                CASE_FAIL("time objective, budget 2: %s",
                          redist_error_format(&err, eb, sizeof eb));
            else {
                redist_plan_stats(fb, &fs);
                if (fs.bound_peak_bytes > bs.peak_bytes ||
                    (fs.peak_bytes == bs.peak_bytes &&
                     fs.bound_time_s > bs.time_s * (1 + 1e-9) + 1e-15))
                    CASE_FAIL("time objective, budget 2: bounds peak %" PRIu64
                              " time %.9g against the optimum's %" PRIu64
                              " / %.9g",
                              fs.bound_peak_bytes, fs.bound_time_s,
                              bs.peak_bytes, bs.time_s);
            }
        } else {
            CASE_FAIL("time objective: no plan");
        }
        redist_plan_free(fb);
    }

out:
    if (failed)
        t->failed++;
    free(json);
    free(json2);
    free(views);
    redist_plan_free(replan);
    redist_plan_free(plan2);
    redist_plan_free(plan);
    redist_plan_free(tplan);
    redist_spec_free(spec);
    redist_mesh_free(mesh);
}

int main(int argc, char **argv)
{
    long cases = DEFAULT_CASES;
    uint64_t seed = DEFAULT_SEED;
    if (argc > 1) {
        char *end;
        cases = strtol(argv[1], &end, 10);
        if (*end || cases < 0) {
            fprintf(stderr, "usage: %s [CASES [SEED [links]]]\n", argv[0]);
            return 2;
        }
    }
    if (argc > 2) {
        char *end;
        seed = strtoull(argv[2], &end, 0);
        if (*end) {
            fprintf(stderr, "usage: %s [CASES [SEED [links]]]\n", argv[0]);
            return 2;
        }
    }
    if (argc > 3) {
        if (strcmp(argv[3], "links") != 0 || argc > 4) {
            fprintf(stderr, "usage: %s [CASES [SEED [links]]]\n", argv[0]);
            return 2;
        }
        links_mode = 1;
    }
    rng_state = seed ? seed : 1;
    printf("exhaustive: %ld cases, seed %" PRIu64 "%s\n", cases, seed,
           links_mode ? ", random axis links" : "");
    fflush(stdout);

    tally_t t;
    memset(&t, 0, sizeof t);
    clock_t t0 = clock();
    for (long i = 0; i < cases; i++)
        run_case(i, &t);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("exhaustive: %ld cases (%ld with a partial source, %ld needing a "
           "peak above max(src,dst), %ld with a permute in the optimum; "
           "%.0f types per case on average; %ld plans not proven optimal "
           "under a budget of 2), %.2f s CPU\n",
           t.cases, t.partial_src, t.nonefficient, t.with_permute,
           t.cases ? (double)t.types_total / (double)t.cases : 0.0,
           t.fallbacks, secs);
    printf("exhaustive: time objective: %ld plans with an exchange, %ld with "
           "a permute, %ld differ from the bytes objective's (%ld with a "
           "lower peak), %ld of time 0; %ld where a plan of another "
           "collective count is within rounding of a nonzero least time "
           "(%ld taking more collectives than the fewest at exactly that "
           "time)\n",
           t.t_exchange, t.t_permute, t.t_differ, t.t_lower_peak, t.t_zero,
           t.t_ties, t.t_ties_more_coll);
    printf("exhaustive: %ld passed, %ld failed\n", t.cases - t.failed,
           t.failed);
    return t.failed ? 1 : 0;
}
