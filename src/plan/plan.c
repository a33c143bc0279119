/*
 * Plans: creation (solver + replay), read-only views, statistics and the
 * verifier.
 *
 * The verifier replays a sequence of steps with the step table alone: for
 * each step it checks the kind's precondition on the current type, applies
 * its effect, recomputes the local shape, the local bytes and the exact
 * received bytes from the kind's formula, and tracks the peak.  It shares
 * no code with the solver's search.  Types are compared up to their
 * size-1 axes (rd_step_apply, rd_ctype_equiv; doc/design.md).  Every plan
 * object is built by this replay (the solver's path included), so a plan
 * that exists is valid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"

typedef unsigned __int128 u128;

static int64_t split_count(const redist_type_t *t, const redist_mesh_t *m,
                           int dim)
{
    int64_t p = 1;
    for (int j = 0; j < t->dim_naxes[dim]; j++)
        p *= m->size[t->dims[dim][j]];
    return p;
}

/* A step's view: the op and the arguments its kind has (else -1). */
static void view_init(redist_step_view_t *v, const rd_step *s)
{
    unsigned f = rd_step_kinds[s->op].fields;
    memset(v, 0, sizeof *v);
    v->op = (redist_op_t)s->op;
    v->dim = f & RD_F_DIM ? s->dim : -1;
    v->from_dim = f & RD_F_FROM_DIM ? s->from_dim : -1;
    v->to_dim = f & RD_F_TO_DIM ? s->to_dim : -1;
    v->axis = f & RD_F_AXIS ? s->axis : -1;
}

void rd_plan_path_multiples(const redist_plan_t *plan,
                            int64_t q[REDIST_MAX_DIMS])
{
    const redist_spec_t *s = plan->spec;
    for (int i = 0; i < s->ndims; i++)
        q[i] = 1;
    for (int k = -1; k <= plan->nsteps; k++) {
        const redist_type_t *t = k < 0                ? &s->from
                                 : k == plan->nsteps ? &s->to
                                                     : &plan->steps[k].after;
        /* the mesh the type lives on (two meshes: the step's) */
        const redist_mesh_t *m = rd_spec_side_mesh(
            s, k < 0 ? 0 : k == plan->nsteps ? 1 : plan->steps[k].mesh);
        for (int i = 0; i < s->ndims; i++) {
            int64_t p = split_count(t, m, i);
            q[i] = q[i] / (int64_t)rd_gcd_u64((uint64_t)q[i], (uint64_t)p) * p;
        }
    }
}

/* The smallest prime factor of r >= 2 (r itself when prime, or when it
 * has none up to 10^6). */
static int64_t smallest_factor(int64_t r)
{
    for (int64_t p = 2; p <= 1000000 && p * p <= r; p++)
        if (r % p == 0)
            return p;
    return r;
}

int64_t rd_shrink_step(int64_t shape[], const int64_t q[], int ndims)
{
    int best = -1;
    for (int i = 0; i < ndims; i++)
        if (shape[i] / q[i] > 1 &&
            (best < 0 || shape[i] / q[i] > shape[best] / q[best]))
            best = i;
    if (best < 0)
        return 1;
    int64_t f = smallest_factor(shape[best] / q[best]);
    shape[best] /= f;
    return f;
}

int64_t redist_plan_shrink_shape(const redist_plan_t *plan, int64_t shape[])
{
    int64_t q[REDIST_MAX_DIMS];
    if (!plan || !shape)
        return 0;
    rd_plan_path_multiples(plan, q);
    return rd_shrink_step(shape, q, plan->spec->ndims);
}

/* Exact sum of fractions num/den, den kept as an lcm of axis sizes. */
typedef struct {
    u128 num;
    uint64_t den;
    int overflow;
} frac_t;

static void frac_add(frac_t *f, u128 num, uint64_t den)
{
    uint64_t g = rd_gcd_u64(f->den, den);
    uint64_t l = f->den / g * den;
    u128 a, b;
    if (__builtin_mul_overflow(f->num, (u128)(l / f->den), &a) ||
        __builtin_mul_overflow(num, (u128)(l / den), &b) ||
        __builtin_add_overflow(a, b, &f->num))
        f->overflow = 1;
    f->den = l;
}

static uint64_t ceil_div(u128 num, uint64_t den, int *overflow)
{
    u128 q = num / den + (num % den != 0);
    if (q > UINT64_MAX) {
        *overflow = 1;
        return UINT64_MAX;
    }
    return (uint64_t)q;
}

/* "steps[i]", the path of step i in errors (built only for an error). */
static const char *step_path(char buf[32], int i)
{
    snprintf(buf, 32, "steps[%d]", i);
    return buf;
}

/* The type part of step i of a replay: the kind's precondition and
 * effect from `cur` (up to size-1 axes), then the stated `after`. */
static redist_status_t replay_type(const redist_spec_t *spec,
                                   const rd_ctx *cx, const rd_ctype *cur,
                                   const rd_step *st, int i, rd_ctype *next,
                                   redist_verify_result_t *res,
                                   redist_error_t *err)
{
    char why[256], tf[256], path[32];
    if (st->op < 0 || st->op >= REDIST_OP_COUNT) {
        res->failed_step = i;
        return rd_error(err, REDIST_ERR_PLAN, NULL, step_path(path, i),
                        "unknown op %d", st->op);
    }
    const rd_step_kind *k = &rd_step_kinds[st->op];
    if (rd_step_apply(cx, cur, st, next, why, sizeof why)) {
        redist_type_t t;
        rd_ctype_to_type(cur, &t);
        res->failed_step = i;
        return rd_error(err, REDIST_ERR_PLAN, NULL, step_path(path, i),
                        "illegal %s from %s: %s", k->name,
                        redist_type_format(&t, &spec->mesh, tf, sizeof tf),
                        why);
    }
    if (!(k->fields & RD_F_AFTER) && st->after_mode != RD_AFTER_NONE) {
        if (rd_ctype_equiv(cx, &st->after, next)) {
            *next = st->after; /* the plan's own labels */
        } else if (st->after_mode == RD_AFTER_STATED) {
            redist_type_t t, t2;
            char tf2[256];
            rd_ctype_to_type(next, &t);
            rd_ctype_to_type(&st->after, &t2);
            res->failed_step = i;
            return rd_error(err, REDIST_ERR_PLAN, NULL, step_path(path, i),
                            "the step leads to %s, not to the stated %s",
                            redist_type_format(&t, &spec->mesh, tf, sizeof tf),
                            redist_type_format(&t2, &spec->mesh, tf2,
                                               sizeof tf2));
        }
    }
    return REDIST_OK;
}

/* The replay must end at the target type. */
static redist_status_t replay_end(const redist_spec_t *spec, const rd_ctx *cx,
                                  const rd_ctype *cur, int n,
                                  redist_verify_result_t *res,
                                  redist_error_t *err)
{
    rd_ctype dst;
    char tf[256], tf2[256];
    rd_ctype_from_type(&dst, &spec->to);
    if (rd_ctype_equiv(cx, cur, &dst))
        return REDIST_OK;
    redist_type_t t;
    rd_ctype_to_type(cur, &t);
    res->failed_step = n;
    return rd_error(err, REDIST_ERR_PLAN, NULL, "steps",
                    "the plan ends at %s, not at the target %s",
                    redist_type_format(&t, &spec->mesh, tf, sizeof tf),
                    redist_type_format(&spec->to, &spec->mesh, tf2,
                                       sizeof tf2));
}

void rd_uplan_free(rd_uplan *up)
{
    if (!up)
        return;
    for (int i = 0; up->lays && i < up->nlays; i++)
        rd_layout_free(&up->lays[i]);
    free(up->lays);
    free(up->dev_recv);
    free(up->dev_peak);
    memset(up, 0, sizeof *up);
}

/* The layout after step i of an uneven replay, of type nt: the one the
 * step states, else the ceil rule; its block counts must be nt's. */
static redist_status_t step_layout(const redist_spec_t *spec,
                                   const rd_step *s, const redist_type_t *nt,
                                   int i, const char *path, rd_layout *nl,
                                   redist_verify_result_t *res,
                                   redist_error_t *err)
{
    int r = s->lay ? rd_layout_copy(nl, s->lay)
                   : rd_layout_rule(nl, nt, &spec->mesh, spec->ndims,
                                    spec->shape, REDIST_SPLIT_CEIL, NULL);
    if (r)
        return rd_error(err, r == -2 ? REDIST_ERR_LIMIT : REDIST_ERR_NOMEM,
                        NULL, path, "cannot build the layout after the step");
    for (int d = 0; d < spec->ndims; d++) {
        int64_t k = split_count(nt, &spec->mesh, d);
        if (nl->ndims != spec->ndims || nl->k[d] != k) {
            res->failed_step = i;
            return rd_error(err, REDIST_ERR_PLAN, NULL, path,
                            "the stated blocks of dim %d are not %lld blocks",
                            d, (long long)k);
        }
    }
    return REDIST_OK;
}

/* Each device's received bytes (tot[d] / D, rounded up) and their
 * largest, res->recv_bytes. */
static redist_status_t device_recv(const u128 *tot, uint64_t D, rd_uplan *x,
                                   redist_verify_result_t *res,
                                   redist_error_t *err)
{
    int overflow = 0;
    for (int64_t d = 0; d < x->ndevices; d++) {
        x->dev_recv[d] = ceil_div(tot[d], D, &overflow);
        if (x->dev_recv[d] > res->recv_bytes)
            res->recv_bytes = x->dev_recv[d];
    }
    if (overflow || res->recv_bytes > (uint64_t)INT64_MAX)
        return rd_error(err, REDIST_ERR_OVERFLOW, NULL, NULL,
                        "received bytes overflow a signed 64-bit count");
    return REDIST_OK;
}

/* An uneven replay's illegal step i (from cur; why: the reason). */
static redist_status_t uillegal(const redist_spec_t *spec, const rd_step *s,
                                const rd_ctype *cur, int i, const char *path,
                                const char *why, redist_verify_result_t *res,
                                redist_error_t *err)
{
    redist_type_t t;
    char tf[256];
    rd_ctype_to_type(cur, &t);
    res->failed_step = i;
    return rd_error(err, REDIST_ERR_PLAN, NULL, path, "illegal %s from %s: %s",
                    rd_step_kinds[s->op].name,
                    redist_type_format(&t, &spec->mesh, tf, sizeof tf), why);
}

/* An uneven replay's view of step s (after nt, layout nl, figures ev;
 * received bytes scaled by D). */
static void uview(redist_step_view_t *v, const rd_step *s,
                  const redist_type_t *nt, const rd_layout *nl,
                  const rd_ueval *ev, uint64_t D)
{
    int ov = 0;
    view_init(v, s);
    v->after = *nt;
    rd_layout_max_elems(nl, v->local_shape);
    v->local_bytes = ev->max_held;
    v->recv_bytes = ceil_div(ev->max_recv, D, &ov);
    v->time_s = ev->max_time;
}

/* The replay of an uneven spec: as rd_replay, with a layout per step
 * (stated, else the ceil rule of its type), locality in place of
 * divisibility, and per-device held and received bytes (uneven.c). */
static redist_status_t ureplay(const redist_spec_t *spec, const rd_step *steps,
                               int n, const redist_cost_model_t *cm,
                               redist_step_view_t *views,
                               redist_verify_result_t *res, rd_uplan *up,
                               redist_error_t *err)
{
    rd_ctx cx;
    rd_ctype cur, dst;
    rd_uctx u;
    rd_ueval ev;
    rd_uplan x;
    char why[256], path[32];
    redist_status_t st = REDIST_OK;
    rd_ctx_init(&cx, spec);
    cx.uneven = 1;
    rd_ctype_from_type(&cur, &spec->from);
    rd_ctype_from_type(&dst, &spec->to);
    memset(res, 0, sizeof *res);
    memset(&x, 0, sizeof x);
    res->failed_step = -1;
    res->steps = n;
    int64_t nd = spec->mesh.ndevices;
    if (nd > RD_UNEVEN_MAX_DEVICES)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, "mesh",
                        "uneven dims over %lld devices: per-device figures "
                        "are computed for at most %d devices",
                        (long long)nd, RD_UNEVEN_MAX_DEVICES);
    uint64_t D = 1;
    for (int a = 0; a < cx.naxes; a++)
        if (spec->from.partial >> a & 1u)
            D = D / rd_gcd_u64(D, (uint64_t)cx.size[a]) * (uint64_t)cx.size[a];
    rd_uctx_init(&u, &cx, &cur, &spec->lay[0], &dst, &spec->lay[1], D, cm);
    uint32_t all = (uint32_t)((1ull << cx.naxes) - 1);
    u128 *tot = calloc((size_t)nd, sizeof *tot);
    u128 *srecv = calloc((size_t)nd, sizeof *srecv);
    uint64_t *held = calloc((size_t)nd, sizeof *held);
    x.dev_peak = calloc((size_t)nd, sizeof *x.dev_peak);
    x.dev_recv = calloc((size_t)nd, sizeof *x.dev_recv);
    x.lays = calloc((size_t)(n ? n : 1), sizeof *x.lays);
    x.ndevices = nd;
    if (!tot || !srecv || !held || !x.dev_peak || !x.dev_recv || !x.lays) {
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    rd_uheld(&u, &cur, &spec->lay[0], all, &ev, x.dev_peak);
    res->peak_bytes = ev.max_held;
    int within = 1;
    const rd_layout *curl = &spec->lay[0];
    for (int i = 0; i < n; i++) {
        const rd_step *s = &steps[i];
        rd_ctype next;
        redist_type_t nt;
        snprintf(path, sizeof path, "steps[%d]", i);
        if ((st = replay_type(spec, &cx, &cur, s, i, &next, res, err)))
            goto done;
        rd_ctype_to_type(&next, &nt);
        rd_layout *nl = &x.lays[i];
        x.nlays = i + 1;
        if ((st = step_layout(spec, s, &nt, i, path, nl, res, err)))
            goto done;
        if (rd_ustep_eval(&u, s, &cur, curl, &next, nl, all, &ev, srecv, held,
                          why, sizeof why)) {
            st = uillegal(spec, s, &cur, i, path, why, res, err);
            goto done;
        }
        for (int64_t d = 0; d < nd; d++) {
            tot[d] += srecv[d];
            if (held[d] > x.dev_peak[d])
                x.dev_peak[d] = held[d];
        }
        within &= ev.within;
        if (ev.max_held > res->peak_bytes)
            res->peak_bytes = ev.max_held;
        if (rd_step_kinds[s->op].collective)
            res->collectives++;
        if (s->op == REDIST_OP_EXCHANGE)
            res->exchange_steps++;
        if (cm)
            res->time_s += ev.max_time;
        if (views)
            uview(&views[i], s, &nt, nl, &ev, D);
        cur = next;
        curl = nl;
    }
    if ((st = replay_end(spec, &cx, &cur, n, res, err)))
        goto done;
    if (!rd_layout_equal(curl, &spec->lay[1])) {
        res->failed_step = n;
        st = rd_error(err, REDIST_ERR_PLAN, NULL, "steps",
                      "the plan ends at the target type with other blocks "
                      "than the target's (split or blocks of the last "
                      "step)");
        goto done;
    }
    if ((st = device_recv(tot, D, &x, res, err)))
        goto done;
    res->memory_efficient = within;
    res->valid = 1;
done:
    rd_uctx_free(&u);
    free(tot);
    free(srecv);
    free(held);
    if (!st && up)
        *up = x;
    else
        rd_uplan_free(&x);
    return st;
}

redist_status_t rd_replay(const redist_spec_t *spec, const rd_step *steps,
                          int n, const redist_cost_model_t *cm,
                          redist_step_view_t *views,
                          redist_verify_result_t *res, rd_uplan *up,
                          redist_error_t *err)
{
    rd_ctx cx;
    rd_ctype cur;
    char path[32];
    frac_t total = {0, 1, 0};
    int overflow = 0;
    redist_status_t st;
    if (spec->uneven)
        return ureplay(spec, steps, n, cm, views, res, up, err);
    rd_ctx_init(&cx, spec);
    rd_ctype_from_type(&cur, &spec->from);
    memset(res, 0, sizeof *res);
    res->failed_step = -1;
    res->steps = n;
    uint64_t L = spec->src_bytes;
    res->peak_bytes = L;
    for (int i = 0; i < n; i++) {
        const rd_step *st_ = &steps[i];
        rd_ctype next;
        if ((st = replay_type(spec, &cx, &cur, st_, i, &next, res, err)))
            return st;
        const rd_step_kind *k = &rd_step_kinds[st_->op];
        u128 num;
        uint64_t den, elems = 0, peers = 0;
        /* an exchange's need is enumerated once, for both figures */
        int bad = st_->op == REDIST_OP_EXCHANGE
                      ? rd_exchange_need(&cx, &cur, &next, RD_EXCHANGE_LIMIT,
                                         &elems, &peers)
                      : rd_step_recv(&cx, st_, &cur, L, &num, &den);
        if (!bad && st_->op == REDIST_OP_EXCHANGE) {
            num = (u128)elems * cx.elem_size;
            den = 1;
        }
        if (bad) {
            res->failed_step = i;
            return rd_error(err, REDIST_ERR_LIMIT, NULL,
                            step_path(path, i),
                            "exchange over more than %llu device "
                            "coordinate combinations: too large to check",
                            (unsigned long long)RD_EXCHANGE_LIMIT);
        }
        frac_add(&total, num, den);
        uint64_t L_before = L;
        rd_ctype before = cur;
        if (k->collective)
            res->collectives++;
        if (st_->op == REDIST_OP_EXCHANGE)
            res->exchange_steps++;
        cur = next;
        int64_t local[REDIST_MAX_DIMS];
        rd_ctype_local(&cx, &cur, local);
        L = rd_ctype_elems(&cx, &cur) * cx.elem_size;
        if (L > res->peak_bytes)
            res->peak_bytes = L;
        if (views) {
            redist_step_view_t *v = &views[i];
            view_init(v, st_);
            rd_ctype_to_type(&cur, &v->after);
            memcpy(v->local_shape, local, sizeof(int64_t) * (size_t)cx.ndims);
            v->local_bytes = L;
            v->recv_bytes = ceil_div(num, den, &overflow);
            if (cm) {
                v->time_s = rd_step_time(&cx, cm, st_, &before, L_before, &cur,
                                         v->recv_bytes, peers);
                res->time_s += v->time_s;
            }
        }
    }
    res->recv_bytes = ceil_div(total.num, total.den, &overflow);
    if (overflow || total.overflow || res->recv_bytes > (uint64_t)INT64_MAX)
        return rd_error(err, REDIST_ERR_OVERFLOW, NULL, NULL,
                        "received bytes overflow a signed 64-bit count");
    uint64_t bound = spec->src_bytes > spec->dst_bytes ? spec->src_bytes
                                                       : spec->dst_bytes;
    res->memory_efficient = res->peak_bytes <= bound;
    if ((st = replay_end(spec, &cx, &cur, n, res, err)))
        return st;
    res->valid = 1;
    return REDIST_OK;
}

static redist_status_t plan_build(const redist_spec_t *spec,
                                  const rd_step *steps, int n,
                                  const redist_cost_model_t *cm,
                                  redist_plan_t **out, redist_error_t *err)
{
    redist_verify_result_t res;
    redist_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    p->spec = rd_spec_clone(spec);
    p->steps = calloc((size_t)(n ? n : 1), sizeof *p->steps);
    if (!p->spec || !p->steps) {
        redist_plan_free(p);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    p->nsteps = n;
    redist_status_t st = rd_replay(spec, steps, n, cm, p->steps, &res, &p->u,
                                   err);
    if (st) {
        redist_plan_free(p);
        return st;
    }
    p->stats.src_bytes = spec->src_bytes;
    p->stats.dst_bytes = spec->dst_bytes;
    p->stats.peak_bytes = res.peak_bytes;
    p->stats.recv_bytes = res.recv_bytes;
    p->stats.collectives = res.collectives;
    p->stats.steps = n;
    p->stats.memory_efficient = res.memory_efficient;
    if (cm) {
        p->has_cost = 1;
        p->cost = *cm;
        for (int i = 0; i < n; i++)
            p->stats.time_s += p->steps[i].time_s;
    }
    *out = p;
    return REDIST_OK;
}

redist_status_t redist_plan_create(const redist_spec_t *spec,
                                   const redist_plan_options_t *opts,
                                   redist_plan_t **out, redist_error_t *err)
{
    rd_step *path = NULL;
    int n = 0;
    rd_solve_info info;
    if (!spec || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    if (spec->two) {
        redist_status_t st = rd_solve_check_options(spec, opts, err);
        return st ? st : rd_plan_meshes(spec, opts, out, err);
    }
    redist_status_t st = rd_solve(spec, opts, &path, &n, &info, err);
    if (st)
        return st;
    redist_plan_t *p = NULL;
    redist_cost_model_t defaults;
    const redist_cost_model_t *cm = opts ? opts->cost : NULL;
    redist_objective_t objective = rd_objective(opts);
    if (!cm && objective == REDIST_OBJECTIVE_TIME) {
        redist_cost_model_default(&defaults);
        cm = &defaults;
    }
    st = plan_build(spec, path, n, cm, &p, err);
    free(path);
    rd_solve_info_free(&info);
    if (st)
        return st;
    p->states = info.states;
    p->objective = objective;
    p->solved = 1;
    p->unproven = info.unproven;
    p->max_states = info.max_states;
    redist_plan_stats_t *x = &p->stats;
    x->optimal = info.optimal;
    if (info.optimal) {
        x->bound_peak_bytes = x->peak_bytes;
        if (p->objective == REDIST_OBJECTIVE_TIME)
            x->bound_time_s = x->time_s;
        else
            x->bound_recv_bytes = x->recv_bytes;
    } else {
        x->bound_peak_bytes = info.bound_peak;
        if (p->objective == REDIST_OBJECTIVE_TIME)
            x->bound_time_s = info.bound_time;
        else
            x->bound_recv_bytes = info.bound_recv;
    }
    *out = p;
    return REDIST_OK;
}

void redist_plan_free(redist_plan_t *plan)
{
    if (!plan)
        return;
    redist_spec_free(plan->spec);
    free(plan->steps);
    rd_uplan_free(&plan->u);
    rd_mplan_free(plan->m);
    free(plan);
}

const redist_spec_t *redist_plan_spec(const redist_plan_t *plan)
{
    return plan ? plan->spec : NULL;
}

int redist_plan_num_steps(const redist_plan_t *plan)
{
    return plan ? plan->nsteps : 0;
}

redist_status_t redist_plan_step(const redist_plan_t *plan, int i,
                                 redist_step_view_t *view)
{
    if (!plan || !view || i < 0 || i >= plan->nsteps)
        return REDIST_ERR_INVALID;
    *view = plan->steps[i];
    return REDIST_OK;
}

int redist_plan_step_link(const redist_plan_t *plan, int i,
                          const redist_cost_model_t *cm)
{
    if (!plan || i < 0 || i >= plan->nsteps || plan->m ||
        !plan->steps[i].recv_bytes)
        return -1;
    redist_cost_model_t def;
    if (!cm) {
        redist_cost_model_default(&def);
        cm = &def;
    } else if (redist_cost_model_validate(cm, &plan->spec->mesh, NULL)) {
        return -1;
    }
    const redist_step_view_t *v = &plan->steps[i];
    rd_ctx cx;
    rd_step st;
    rd_ctype before, after;
    rd_ctx_init(&cx, plan->spec);
    rd_ctype_from_type(&before, i ? &plan->steps[i - 1].after
                                  : &plan->spec->from);
    rd_ctype_from_type(&after, &v->after);
    rd_step_from_view(&st, v, RD_AFTER_STATED);
    if (st.axis >= cx.naxes || (st.axis >= 0 && cx.size[st.axis] == 1))
        return -1;
    int l = rd_step_link(&cx, cm, &st, &before, &after);
    return l >= 0 && l < REDIST_LINK_COUNT ? l : -1;
}

void redist_plan_stats(const redist_plan_t *plan, redist_plan_stats_t *out)
{
    if (!out)
        return;
    if (!plan)
        memset(out, 0, sizeof *out);
    else
        *out = plan->stats;
}

uint64_t redist_plan_peak_bytes(const redist_plan_t *plan)
{
    return plan ? plan->stats.peak_bytes : 0;
}

uint64_t redist_plan_states_visited(const redist_plan_t *plan)
{
    return plan ? plan->states : 0;
}

void rd_step_from_view(rd_step *s, const redist_step_view_t *v, int mode)
{
    memset(s, 0, sizeof *s);
    s->op = (int)v->op;
    s->dim = v->dim;
    s->from_dim = v->from_dim;
    s->to_dim = v->to_dim;
    s->axis = v->axis;
    s->after_mode = mode;
    if (mode != RD_AFTER_NONE ||
        ((unsigned)v->op < REDIST_OP_COUNT &&
         (rd_step_kinds[v->op].fields & RD_F_AFTER)))
        rd_ctype_from_type(&s->after, &v->after);
}

redist_status_t redist_plan_from_steps(const redist_spec_t *spec, int nsteps,
                                       const redist_step_view_t steps[],
                                       redist_plan_t **out,
                                       redist_error_t *err)
{
    /* no cost model; the objective stated as it always was */
    return rd_plan_from_steps_cost(spec, nsteps, steps, NULL,
                                   spec && spec->two ? REDIST_OBJECTIVE_BYTES
                                                     : REDIST_OBJECTIVE_TIME,
                                   out, err);
}

/* The plan's own steps as the replay takes them: each stated `after`,
 * each step's layout (an uneven plan's blocks); NULL out of memory. */
static rd_step *own_path(const redist_plan_t *plan)
{
    rd_step *path = calloc((size_t)(plan->nsteps ? plan->nsteps : 1),
                           sizeof *path);
    for (int i = 0; path && i < plan->nsteps; i++) {
        rd_step_from_view(&path[i], &plan->steps[i], RD_AFTER_STATED);
        path[i].lay = rd_plan_step_layout(plan, i);
    }
    return path;
}

redist_status_t redist_plan_replay(const redist_plan_t *plan,
                                   const redist_spec_t *spec,
                                   redist_plan_t **out, redist_error_t *err)
{
    if (!plan || !spec || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    *out = NULL;
    if (redist_spec_num_meshes(spec) != redist_spec_num_meshes(plan->spec) ||
        spec->ndims != plan->spec->ndims)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "spec",
                        "the plan's steps are for a spec of %d mesh(es) and "
                        "%d dims, not %d and %d",
                        redist_spec_num_meshes(plan->spec), plan->spec->ndims,
                        redist_spec_num_meshes(spec), spec->ndims);
    redist_status_t st;
    if (plan->has_cost &&
        (st = redist_cost_model_validate(&plan->cost, &spec->mesh, err)))
        return st;
    const redist_cost_model_t *cm = plan->has_cost ? &plan->cost : NULL;
    int same = !memcmp(spec->shape, plan->spec->shape,
                       (size_t)spec->ndims * sizeof *spec->shape);
    if (spec->two)
        return rd_plan_meshes_from_steps(spec, plan->nsteps, plan->steps, cm,
                                         plan->objective, same ? plan : NULL,
                                         out, err);
    if (!same)
        return rd_plan_from_steps_cost(spec, plan->nsteps, plan->steps, cm,
                                       plan->objective, out, err);
    /* the same shape: the plan's own steps and layouts, as
     * redist_plan_verify replays them (an uneven plan's blocks are the
     * solver's, which its steps' types do not say) */
    rd_step *path = own_path(plan);
    if (!path)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    st = plan_build(spec, path, plan->nsteps, cm, out, err);
    free(path);
    if (!st)
        (*out)->objective = plan->objective;
    return st;
}

redist_status_t rd_plan_from_steps_cost(const redist_spec_t *spec,
                                        int nsteps,
                                        const redist_step_view_t steps[],
                                        const redist_cost_model_t *cm,
                                        redist_objective_t objective,
                                        redist_plan_t **out,
                                        redist_error_t *err)
{
    if (!spec || !out || nsteps < 0 || (nsteps > 0 && !steps))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    if (spec->two)
        return rd_plan_meshes_from_steps(spec, nsteps, steps, cm, objective,
                                         NULL, out, err);
    rd_step *path = calloc((size_t)(nsteps ? nsteps : 1), sizeof *path);
    if (!path)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    /* Every field is checked before anything indexes by it: the op here,
     * `after` here (against the mesh and rank), the dims and axis by the
     * kind's apply in the replay. */
    for (int i = 0; i < nsteps; i++) {
        const redist_step_view_t *v = &steps[i];
        char what[48];
        redist_error_t tmp;
        snprintf(what, sizeof what, "steps[%d]", i);
        if ((unsigned)v->op >= REDIST_OP_COUNT) {
            free(path);
            return rd_error(err, REDIST_ERR_PLAN, NULL, what,
                            "unknown op %d", (int)v->op);
        }
        snprintf(what, sizeof what, "steps[%d].after", i);
        redist_error_clear(&tmp);
        int ok = rd_type_check(&v->after, &spec->mesh, spec->ndims, NULL,
                               what, &tmp) == REDIST_OK;
        if (rd_step_kinds[v->op].fields & RD_F_AFTER) {
            if (!ok) {
                free(path);
                return rd_error(err, REDIST_ERR_PLAN, NULL, tmp.path, "%s",
                                tmp.text);
            }
            rd_step_from_view(&path[i], v, RD_AFTER_NONE);
        } else {
            /* optional for these kinds: kept when it is a type of this
             * spec equivalent to the effect */
            rd_step_from_view(&path[i], v,
                              ok ? RD_AFTER_HINT : RD_AFTER_NONE);
        }
    }
    redist_status_t st = plan_build(spec, path, nsteps, cm, out, err);
    free(path);
    if (!st)
        (*out)->objective = objective;
    return st;
}

redist_status_t redist_plan_verify(const redist_plan_t *plan,
                                   redist_verify_result_t *out,
                                   redist_error_t *err)
{
    redist_verify_result_t res;
    if (!plan)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    if (plan->m) {
        /* two meshes: the replay of its own plan document, which states
         * every step and figure (json_read.c) */
        char *text = redist_plan_to_json(plan);
        if (!text)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        redist_status_t st = redist_plan_verify_buffer_cost(
            plan->spec, text, strlen(text), "plan",
            plan->has_cost ? &plan->cost : NULL, out, err);
        free(text);
        return st;
    }
    rd_step *path = own_path(plan);
    redist_step_view_t *views = calloc((size_t)(plan->nsteps ? plan->nsteps
                                                             : 1),
                                       sizeof *views);
    if (!path || !views) {
        free(path);
        free(views);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    redist_status_t st = rd_replay(plan->spec, path, plan->nsteps,
                                   plan->has_cost ? &plan->cost : NULL, views,
                                   &res, NULL, err);
    /* The recorded views and statistics must agree with the replay. */
    for (int i = 0; st == REDIST_OK && i < plan->nsteps; i++) {
        const redist_step_view_t *a = &plan->steps[i], *b = &views[i];
        char path_s[32];
        snprintf(path_s, sizeof path_s, "steps[%d]", i);
        if (!redist_type_equal(&a->after, &b->after) ||
            a->local_bytes != b->local_bytes ||
            a->recv_bytes != b->recv_bytes ||
            memcmp(a->local_shape, b->local_shape,
                   sizeof(int64_t) * (size_t)plan->spec->ndims) != 0) {
            res.valid = 0;
            res.failed_step = i;
            st = rd_error(err, REDIST_ERR_PLAN, NULL, path_s,
                          "recorded step disagrees with its replay");
        }
    }
    if (st == REDIST_OK &&
        (res.peak_bytes != plan->stats.peak_bytes ||
         res.recv_bytes != plan->stats.recv_bytes ||
         res.collectives != plan->stats.collectives)) {
        res.valid = 0;
        st = rd_error(err, REDIST_ERR_PLAN, NULL, "stats",
                      "recorded statistics disagree with the replay");
    }
    free(path);
    free(views);
    if (out)
        *out = res;
    return st;
}

const rd_layout *rd_plan_step_layout(const redist_plan_t *plan, int i)
{
    if (plan && plan->m) {
        /* a two-mesh plan: the phases' layouts, the transfer's R */
        const redist_plan_t *a = plan->m->phase[0];
        if (i >= 0 && i < a->nsteps)
            return rd_plan_step_layout(a, i);
        if (i == a->nsteps)
            return rd_layout_is_even(&plan->m->recvd.lay, plan->spec->shape)
                       ? NULL
                       : &plan->m->recvd.lay;
        return rd_plan_step_layout(plan->m->phase[1], i - a->nsteps - 1);
    }
    if (!plan || !plan->u.lays || i < 0 || i >= plan->u.nlays)
        return NULL;
    return &plan->u.lays[i];
}
