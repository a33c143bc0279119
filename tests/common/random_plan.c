/*
 * Random plans for the tests: see random_plan.h.
 */
#include "random_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/testing/pattern.h"
#include "../../src/plan/steps.h"
#include "../../src/exec/meshes.h"

/* ------------------------------------------------------------ numbers */

uint64_t rp_next(rp_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

int64_t rp_in(rp_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rp_next(r) % (uint64_t)(hi - lo + 1));
}

void rp_seed(rp_rng *r, const char *arg, uint64_t stream)
{
    if (arg)
        r->s = strtoull(arg, NULL, 10) * 0x9e3779b97f4a7c15ULL | 1;
    r->s ^= stream * 0x2545f4914f6cdd1dULL;
}

uint32_t rp_subset(rp_rng *r, int n, int den)
{
    uint32_t set = 0;
    for (int a = 0; a < n; a++)
        if (rp_next(r) % (uint64_t)den == 0)
            set |= 1u << a;
    return set;
}

uint64_t rp_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void rp_fill_bits(void *buf, uint64_t bytes, uint64_t seed, int64_t dev)
{
    unsigned char *p = buf;
    for (uint64_t i = 0; i < bytes; i += 8) {
        uint64_t v = rp_mix(seed ^ ((uint64_t)dev << 40) ^ (i >> 3));
        for (uint64_t k = 0; k < 8 && i + k < bytes; k++)
            p[i + k] = (unsigned char)(v >> (8 * k));
    }
}

/* ------------------------------------------------------------- meshes */

const char *const rp_axis_names[4] = {"a", "b", "c", "d"};

redist_mesh_t *rp_mesh_upto(rp_rng *r, int64_t small, int64_t large)
{
    int64_t max_devices = rp_next(r) % 10 == 0 ? large : small;
    for (;;) {
        int naxes = (int)rp_in(r, 1, 4);
        int64_t sizes[4], d = 1;
        for (int a = 0; a < naxes; a++) {
            sizes[a] = rp_in(r, 1, 4);
            d *= sizes[a];
        }
        if (d > max_devices)
            continue;
        redist_mesh_t *m = NULL;
        redist_mesh_create(naxes, rp_axis_names, sizes, &m, NULL);
        return m;
    }
}

redist_mesh_t *rp_mesh_exact(rp_rng *r, int64_t n, int spread)
{
    int64_t f[64]; /* the prime factors of n, ascending */
    int nf = 0;
    int64_t left = n;
    for (int64_t p = 2; p <= left; p++)
        while (left % p == 0) {
            f[nf++] = p;
            left /= p;
        }
    int64_t sizes[4] = {1, 1, 1, 1};
    int naxes;
    if (!spread) {
        naxes = (int)rp_in(r, 1, 4);
        for (int i = 0; i < nf; i++)
            sizes[rp_in(r, 0, naxes - 1)] *= f[i];
    } else {
        for (int i = nf - 1; i > 0; i--) {
            int j = (int)rp_in(r, 0, i);
            int64_t x = f[i];
            f[i] = f[j];
            f[j] = x;
        }
        naxes = (int)rp_in(r, 1, nf < 3 ? (nf ? nf : 1) : 3);
        for (int i = 0; i < nf; i++)
            sizes[i < naxes ? i : rp_in(r, 0, naxes - 1)] *= f[i];
        if (naxes < 4 && rp_next(r) % 5 == 0) { /* an axis of size 1 */
            int at = (int)rp_in(r, 0, naxes);
            for (int a = naxes; a > at; a--)
                sizes[a] = sizes[a - 1];
            sizes[at] = 1;
            naxes++;
        }
    }
    redist_mesh_t *mesh = NULL;
    redist_mesh_create(naxes, rp_axis_names, sizes, &mesh, NULL);
    return mesh;
}

/* -------------------------------------------------------------- types */

void rp_type(rp_rng *r, const redist_mesh_t *m, int nd, uint32_t partial_ok,
             int partial_weight, uint32_t fixed_partial, redist_type_t *t)
{
    int naxes = redist_mesh_num_axes(m);
    int order[REDIST_MAX_AXES];
    for (int i = 0; i < naxes; i++)
        order[i] = i;
    for (int i = naxes - 1; i > 0; i--) {
        int j = (int)rp_in(r, 0, i);
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    redist_type_init(t, nd);
    for (int k = 0; k < naxes; k++) {
        int a = order[k];
        if (fixed_partial >> a & 1u) {
            redist_type_add_partial(t, a);
            continue;
        }
        int c = (int)rp_in(r, 0, nd + partial_weight);
        if (c < nd)
            redist_type_push_axis(t, c, a);
        else if (c > nd && (partial_ok >> a & 1u))
            redist_type_add_partial(t, a);
    }
}

/* ------------------------------------------------------------- specs */

int64_t rp_lcm(int64_t a, int64_t b)
{
    int64_t x = a, y = b;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

int64_t rp_split_count(const redist_mesh_t *m, const redist_type_t *t, int i)
{
    int64_t p = 1;
    for (int k = 0; k < t->dim_naxes[i]; k++)
        p *= redist_mesh_axis_size(m, t->dims[i][k]);
    return p;
}

void rp_shape_between(rp_rng *r, rp_problem *p, int mult, int extra_axis)
{
    const redist_mesh_t *m = p->mesh;
    p->elems = 1;
    for (int i = 0; i < p->nd; i++) {
        p->shape[i] = rp_lcm(rp_split_count(m, &p->from, i),
                          rp_split_count(m, &p->to, i)) *
                      rp_in(r, 1, mult);
        if (extra_axis && rp_next(r) % 2)
            p->shape[i] *= redist_mesh_axis_size(
                m, (int)rp_in(r, 0, redist_mesh_num_axes(m) - 1));
        p->elems *= p->shape[i];
    }
}

void rp_shape_walk(rp_rng *r, rp_problem *p, int mult)
{
    const redist_mesh_t *m = p->mesh;
    p->elems = 1;
    for (int i = 0; i < p->nd; i++) {
        p->shape[i] = rp_split_count(m, &p->from, i) * rp_in(r, 1, mult);
        for (int a = 0; a < redist_mesh_num_axes(m); a++)
            if (rp_next(r) % 3 == 0)
                p->shape[i] *= redist_mesh_axis_size(m, a);
        p->elems *= p->shape[i];
    }
}

void rp_dtype_reduce(rp_rng *r, rp_problem *p)
{
    p->dtype = (redist_dtype_t)rp_in(r, 0, REDIST_DTYPE_COUNT - 1);
    p->reduce = (redist_reduce_t)rp_in(r, 0, REDIST_REDUCE_COUNT - 1);
}

int rp_ndims(rp_rng *r)
{
    return rp_next(r) % 16 == 0 ? 0 : (int)rp_in(r, 1, 3);
}

void rp_planned(rp_rng *r, const redist_mesh_t *m, int mult, rp_problem *p)
{
    p->mesh = m;
    p->nd = rp_ndims(r);
    rp_type(r, m, p->nd, 0xf, 1, 0, &p->from);
    rp_type(r, m, p->nd, p->from.partial, 1, 0, &p->to);
    rp_shape_between(r, p, mult, 1);
    rp_dtype_reduce(r, p);
}

void rp_walk_start(rp_rng *r, const redist_mesh_t *m, int mult,
                   rp_problem *p)
{
    p->mesh = m;
    p->nd = rp_ndims(r);
    rp_type(r, m, p->nd, 0xf, 2, 0, &p->from);
    p->to = p->from;
    rp_shape_walk(r, p, mult);
    rp_dtype_reduce(r, p);
}

redist_status_t rp_spec(const rp_problem *p, redist_spec_t **spec,
                        redist_error_t *err)
{
    return redist_spec_create(p->mesh, p->nd, p->shape, p->dtype, &p->from,
                              &p->to, p->reduce, NULL, spec, err);
}

redist_status_t rp_plan(const rp_problem *p, const redist_plan_options_t *po,
                        redist_plan_t **plan, redist_error_t *err)
{
    redist_spec_t *spec = NULL;
    redist_error_clear(err);
    redist_status_t st = rp_spec(p, &spec, err);
    if (!st)
        st = redist_plan_create(spec, po, plan, err);
    redist_spec_free(spec);
    return st;
}

redist_status_t rp_uneven_spec(rp_rng *r, rp_problem *p,
                               redist_spec_t **spec, redist_error_t *err)
{
    int64_t k[2][REDIST_MAX_DIMS];
    p->elems = 1;
    for (int i = 0; i < p->nd; i++) {
        k[0][i] = rp_split_count(p->mesh, &p->from, i);
        k[1][i] = rp_split_count(p->mesh, &p->to, i);
        int64_t m = k[0][i] > k[1][i] ? k[0][i] : k[1][i];
        p->shape[i] = rp_in(r, 1, 2 * m + 2);
        p->elems *= p->shape[i];
    }
    redist_spec_t *base = NULL;
    redist_status_t st = rp_spec(p, &base, err);
    if (st)
        return st;
    redist_layout_t lay[2];
    int64_t len[2][REDIST_MAX_DIMS][64];
    memset(lay, 0, sizeof lay);
    for (int side = 0; side < 2; side++) {
        lay[side].split = (redist_split_t)rp_in(r, 0, REDIST_SPLIT_COUNT - 1);
        for (int i = 0; i < p->nd; i++) {
            int64_t kk = k[side][i], left = p->shape[i];
            if (kk > 64 || rp_next(r) % 3)
                continue;
            for (int64_t j = 0; j < kk; j++) { /* zero lengths are common */
                int64_t l = j + 1 == kk ? left : rp_in(r, 0, left);
                if (rp_next(r) % 3 == 0)
                    l = 0;
                if (j + 1 == kk)
                    l = left;
                len[side][i][j] = l;
                left -= l;
            }
            lay[side].blocks[i] = len[side][i];
            lay[side].nblocks[i] = kk;
        }
    }
    st = redist_spec_with_layouts(base, &lay[0], &lay[1], spec, err);
    redist_spec_free(base);
    return st;
}

/* -------------------------------------------------------------- walks */

typedef struct moves {
    int n;
    rd_step st[512];
} moves;

static void collect(void *user, const rd_step *step, const rd_ctype *out)
{
    moves *mv = user;
    (void)out;
    if (mv->n < 512)
        mv->st[mv->n++] = *step;
}

int rp_random_walk(rp_rng *r, rp_problem *p, int max_len, int exchanges,
                   rp_walk *w)
{
    memset(w, 0, sizeof *w);
    p->to = p->from;
    redist_spec_t *spec0 = NULL;
    if (rp_spec(p, &spec0, NULL))
        return -1;
    rd_ctx cx;
    rd_ctx_init(&cx, spec0);
    redist_spec_free(spec0);
    cx.dst_partial = 0; /* any partial axis may be reduced */
    rd_ctype cur;
    rd_ctype_from_type(&cur, &p->from);
    if (max_len > RP_WALK_MAX)
        max_len = RP_WALK_MAX;
    int len = (int)rp_in(r, 1, max_len);
    static moves mv;
    for (int k = 0; k < len; k++) {
        rd_step pick;
        int exchange = exchanges && rp_next(r) % 2;
        if (exchange) { /* to a random type, if the shape divides */
            redist_type_t t, c;
            rd_ctype_to_type(&cur, &c);
            rp_type(r, p->mesh, p->nd, 0, 0, c.partial, &t);
            memset(&pick, 0, sizeof pick);
            pick.op = REDIST_OP_EXCHANGE;
            pick.dim = pick.from_dim = pick.to_dim = pick.axis = -1;
            rd_ctype_from_type(&pick.after, &t);
            int64_t l[REDIST_MAX_DIMS];
            if (rd_ctype_local(&cx, &pick.after, l))
                continue;
        } else {
            mv.n = 0;
            for (int o = 0; o < REDIST_OP_COUNT; o++)
                if (rd_step_kinds[o].enumerate)
                    rd_step_kinds[o].enumerate(&cx, &cur, collect, &mv);
            if (!exchanges) {
                rd_ctype *targets = NULL;
                long nt = rd_permute_targets(&cx, &cur, 64, &targets);
                for (long t = 0; t < nt && mv.n < 512; t++) {
                    if (memcmp(&targets[t], &cur, sizeof cur) == 0)
                        continue;
                    rd_step ps;
                    memset(&ps, 0, sizeof ps);
                    ps.op = REDIST_OP_PERMUTE;
                    ps.dim = ps.from_dim = ps.to_dim = ps.axis = -1;
                    ps.after = targets[t];
                    mv.st[mv.n++] = ps;
                }
                free(targets);
            }
            /* nothing legal: without exchanges, nothing will be */
            if (mv.n == 0)
                continue;
            pick = mv.st[rp_next(r) % (uint64_t)mv.n];
        }
        rd_ctype next;
        if (rd_step_kinds[pick.op].apply(&cx, &cur, &pick, &next, w->refused,
                                         sizeof w->refused))
            break;
        w->refused[0] = '\0';
        w->exchanges += exchange;
        redist_step_view_t *v = &w->steps[w->n++];
        memset(v, 0, sizeof *v);
        v->op = (redist_op_t)pick.op;
        v->dim = pick.dim;
        v->from_dim = pick.from_dim;
        v->to_dim = pick.to_dim;
        v->axis = pick.axis;
        rd_ctype_to_type(&next, &v->after);
        cur = next;
    }
    rd_ctype_to_type(&cur, &p->to);
    return 0;
}

redist_status_t rp_walk_plan(const rp_problem *p, const rp_walk *w,
                             redist_plan_t **plan, redist_error_t *err)
{
    redist_spec_t *spec = NULL;
    redist_error_clear(err);
    redist_status_t st = rp_spec(p, &spec, err);
    if (!st)
        st = redist_plan_from_steps(spec, w->n, w->steps, plan, err);
    redist_spec_free(spec);
    return st;
}

/* ------------------------------------------------- runs under the sim */

void rp_free_blocks(void **blocks, int64_t n)
{
    if (!blocks)
        return;
    for (int64_t i = 0; i < n; i++)
        free(blocks[i]);
    free(blocks);
}

redist_status_t rp_sim_expect(const redist_plan_t *plan, uint64_t seed,
                              unsigned sim_flags,
                              const redist_exec_options_t *opts, void ***dst,
                              redist_error_t *err)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_spec_num_devices(s);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    void **ss = calloc((size_t)D, sizeof *ss);
    void **dd = calloc((size_t)D, sizeof *dd);
    for (int64_t r = 0; r < D; r++) {
        ss[r] = malloc((size_t)S);
        dd[r] = malloc((size_t)T);
        rp_fill_bits(ss[r], S, seed, r);
        memset(dd[r], 0x5c, (size_t)T);
    }
    redist_status_t st =
        redist_exec_sim_run(plan, ss, dd, sim_flags, opts, NULL, NULL, err);
    rp_free_blocks(ss, D);
    *dst = dd;
    return st;
}

void rp_fail(rp_tally *t, const char *what, const redist_plan_t *plan,
             const char *fmt, ...)
{
    t->failures++;
    if (t->failures > 10)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (%s run %d): ", what, t->runs);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (plan) {
        char *j = redist_plan_to_json(plan);
        if (j)
            fprintf(stderr, "%s\n", j);
        free(j);
    }
}

int rp_on_mesh(const redist_spec_t *s, int side, int64_t dev)
{
    const redist_mesh_t *m = redist_spec_side_mesh(s, side);
    for (int64_t k = 0; k < redist_mesh_num_devices(m); k++)
        if (redist_spec_mesh_device(s, side, k) == dev)
            return 1;
    return 0;
}

int rp_transfer_step(const redist_plan_t *plan)
{
    int n = redist_plan_num_steps(plan);
    for (int k = 0; k < n; k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        if (v.op == REDIST_OP_TRANSFER)
            return k;
    }
    return -1;
}

void rp_show_over(const redist_plan_t *plan, const char *who, int64_t dev,
                  int c, unsigned flags, uint64_t sb, uint64_t db,
                  uint64_t hw)
{
    if (hw <= (sb > db ? sb : db) || !getenv("RP_SHOW_OVER"))
        return;
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "OVER %s %lld case %d flags %u sb %llu db %llu hw %llu:",
                     who, (long long)dev, c, flags, (unsigned long long)sb,
                     (unsigned long long)db, (unsigned long long)hw);
    for (int k = 0; k < redist_plan_num_steps(plan) && n > 0 &&
                    (size_t)n < sizeof line;
         k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        n += snprintf(line + n, sizeof line - (size_t)n, " %s",
                      redist_op_name(v.op));
    }
    fprintf(stderr, "%s\n", line); /* one write: ranks' lines stay whole */
    if (getenv("RP_SHOW_PLAN")) {
        char *j = redist_plan_to_json(plan);
        fprintf(stderr, "%s\n", j ? j : "(no JSON)");
        free(j);
    }
}

/* Can a phase of k whole steps (one pass each, its output never its
 * input) run in the caller's buffers and a lent one alone: SRC (cap cs,
 * written only when `wsrc`), DST (cap cd; the last step's output always
 * fits) and the lent buffer (cap cl, 0: none), ending in DST or copied
 * there?  out[j]: the most any device holds after step j (the program's
 * pass sizes).  The model of the executor's buffer assignment
 * (src/exec/assign.c) with no scratch. */
static int zero_scratch(int k, const uint64_t out[], uint64_t cs, int wsrc,
                        uint64_t cd, uint64_t cl)
{
    unsigned reach = 1; /* bit b: the data can be in SRC, DST, lent */
    uint64_t cap[3] = {cs, cd, cl};
    int ok[3] = {wsrc, 1, cl > 0};
    for (int j = 0; j < k; j++) {
        unsigned next = 0;
        for (int b = 0; b < 3; b++)
            if (ok[b] && (out[j] <= cap[b] || (b == 1 && j == k - 1)) &&
                (reach & ~(1u << b)))
                next |= 1u << b;
        reach = next;
    }
    return reach != 0;
}

/* Does phase `side` of a two-mesh plan (steps k0..k1-1) run within the
 * room the bound leaves it on device `dev`, for certain?  One step: one
 * whole step from SRC to DST needs no scratch.  More: only all_gather,
 * all_to_all, reduce_scatter, permute and exchange steps (one pass each
 * with whole steps), and zero_scratch with the device's own blocks:
 * phase A from the source block (written only without PRESERVE_SRC) to
 * the S block, lent the destination buffer on a device of both meshes
 * whose S block is not placed there; phase B from the R block (never
 * preserved, and allocated at its own size or at a step's output size
 * where that fits beside the S block held: the sim picks the size that
 * leaves the device the least) to the destination.  On a fused world
 * (`fused`) on `dev` alone: it runs whole steps.  Else on every device
 * of the mesh: the sim runs its default program when it leaves no
 * device over the bound, else whole steps when they leave fewer over
 * (none). */
static int phase_sure(const redist_plan_t *plan, int side, int k0, int k1,
                      int preserve, int fused, int64_t dev)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int n = redist_plan_num_steps(plan), kt = rp_transfer_step(plan);
    uint64_t out[64];
    if (k1 - k0 <= 1)
        return 1;
    if (k1 - k0 > 64)
        return 0;
    for (int k = k0; k < k1; k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        if (v.op != REDIST_OP_ALL_GATHER && v.op != REDIST_OP_ALL_TO_ALL &&
            v.op != REDIST_OP_REDUCE_SCATTER && v.op != REDIST_OP_PERMUTE &&
            v.op != REDIST_OP_EXCHANGE)
            return 0;
        out[k - k0] = v.local_bytes;
    }
    int both_own = kt > 0 && kt < n - 1;
    const redist_mesh_t *m = redist_spec_side_mesh(s, side);
    for (int64_t r = 0; r < redist_mesh_num_devices(m); r++) {
        int64_t d = redist_spec_mesh_device(s, side, r);
        if (fused && d != dev)
            continue;
        uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, d);
        uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
        rd_tlists t;
        rd_tlists_head(plan, d, &t);
        uint64_t S = rd_tlists_bytes(&t, 0), R = rd_tlists_bytes(&t, 1);
        int s_in_dst = both_own && t.in_dst && S > 0 && S <= db;
        uint64_t lend = t.in_dst && !s_in_dst ? db : 0;
        int ok = side ? zero_scratch(k1 - k0, out, R, 1, db, 0)
                      : zero_scratch(k1 - k0, out, sb, !preserve, S, lend);
        /* phase B: or an R block as large as a step's output, beside the
         * S block held (not in the destination) */
        uint64_t held = k0 > 0 && kt > 0 && t.in_src && !s_in_dst ? S : 0;
        uint64_t bound = sb > db ? sb : db;
        for (int j = 0; side && !ok && j < k1 - k0; j++)
            ok = out[j] > R && out[j] + held <= bound &&
                 zero_scratch(k1 - k0, out, out[j], 1, db, 0);
        if (!ok)
            return 0;
    }
    return 1;
}

/* Does the sim backend keep two-mesh device `dev` within
 * max(src_d, dst_d) for certain?  S_d <= src_d and R_d <= dst_d; on a
 * device of both meshes whose phases both have steps, S sits in the
 * destination buffer when it fits, else (S_d > dst_d >= R_d, so R_d <
 * src_d) R in the source buffer unless PRESERVE_SRC: so S and R together
 * are within the bound unless PRESERVE_SRC and S_d > dst_d; and each
 * phase on its meshes runs within the room the bound leaves it beside
 * them when phase_sure (doc/meshes.md). */
static int sim_within(const redist_plan_t *plan, int64_t dev, int preserve,
                      int fused)
{
    int n = redist_plan_num_steps(plan), kt = rp_transfer_step(plan);
    const redist_spec_t *s = redist_plan_spec(plan);
    if (kt < 0)
        return 0;
    int on_a = rp_on_mesh(s, REDIST_SIDE_FROM, dev);
    int on_b = rp_on_mesh(s, REDIST_SIDE_TO, dev);
    if (preserve && on_a && on_b && kt > 0 && kt < n - 1) {
        rd_tlists t;
        rd_tlists_head(plan, dev, &t);
        if (rd_tlists_bytes(&t, 0) >
            redist_spec_device_bytes(s, REDIST_SIDE_TO, dev))
            return 0;
    }
    return (!on_a || phase_sure(plan, 0, 0, kt, preserve, fused, dev)) &&
           (!on_b || phase_sure(plan, 1, kt + 1, n, preserve, fused, dev));
}

int rp_sim_check(rp_rng *rng, rp_tally *t, const char *what,
                 const redist_plan_t *plan, uint64_t need)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_spec_num_devices(s);
    int two = redist_spec_num_meshes(s) == 2;
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T;
    redist_exec_options_t opts = {0};
    if (rp_next(rng) % 3 == 0)
        opts.flags |= REDIST_EXEC_PRESERVE_SRC;
    unsigned sim_flags = rp_next(rng) % 2 ? REDIST_SIM_FUSED : 0;
    int preserve = (opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    redist_plan_stats_t stats;
    redist_plan_stats(plan, &stats);

    redist_sim_t *probe = NULL;
    redist_sim_create(D, sim_flags, &probe, NULL);
    redist_exec_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_plan_exec_info(plan, redist_sim_backend(probe, 0), &opts,
                              &info, &err)) {
        rp_fail(t, what, plan, "exec_info: %s", err.text);
        redist_sim_free(probe);
        return -1;
    }
    redist_sim_free(probe);

    void **src = calloc((size_t)D, sizeof *src);
    void **dst = calloc((size_t)D, sizeof *dst);
    redist_exec_report_t *per = calloc((size_t)D, sizeof *per);
    /* exactly each device's block (uneven dims: an empty one is NULL),
     * so that ASan sees any access past it */
    int uneven = redist_spec_is_uneven(s);
    for (int64_t r = 0; r < D; r++) {
        uint64_t sd = redist_spec_device_bytes(s, REDIST_SIDE_FROM, r);
        uint64_t td = redist_spec_device_bytes(s, REDIST_SIDE_TO, r);
        src[r] = sd ? malloc((size_t)sd) : NULL;
        dst[r] = td ? malloc((size_t)td) : NULL;
        if (src[r])
            rd_pattern_fill(s, r, src[r]);
        if (dst[r])
            memset(dst[r], 0xEE, (size_t)td);
    }
    redist_exec_report_t rep;
    redist_status_t st = redist_exec_sim_run(plan, src, dst, sim_flags, &opts,
                                             &rep, per, &err);
    t->runs++;
    if (st) {
        rp_fail(t, what, plan, "execute: %s (%s)", err.text,
                redist_status_string(st));
        goto out;
    }
    rd_mismatch mm;
    for (int64_t r = 0; r < D; r++) {
        if (rd_pattern_check(s, r, dst[r], &mm)) {
            rp_fail(t, what, plan,
                    "%s%s %s %s: device %lld local %llu global %llu: "
                    "expected %s got %s",
                    sim_flags ? "fused " : "", preserve ? "preserve " : "",
                    redist_dtype_name(redist_spec_dtype(s)),
                    redist_reduce_name(redist_spec_reduce(s)), (long long)r,
                    (unsigned long long)mm.local_index,
                    (unsigned long long)mm.global_index, mm.expected, mm.got);
            break;
        }
        if ((preserve || !info.writes_src) &&
            rd_pattern_check_src(s, r, src[r], &mm)) {
            rp_fail(t, what, plan,
                    "source modified (preserve %d, writes_src %d) on device "
                    "%lld",
                    preserve, info.writes_src, (long long)r);
            break;
        }
    }
    if (need != UINT64_MAX) {
        uint64_t sent = 0, recv = 0;
        for (int64_t r = 0; r < D; r++) {
            sent += per[r].sent_bytes;
            recv += per[r].recv_bytes;
        }
        if (rep.recv_bytes != need)
            rp_fail(t, what, plan,
                    "most received %llu bytes, the planner's need %llu",
                    (unsigned long long)rep.recv_bytes,
                    (unsigned long long)need);
        if (sent != recv)
            rp_fail(t, what, plan, "sent %llu bytes in all, received %llu",
                    (unsigned long long)sent, (unsigned long long)recv);
    }
    if (rep.scratch_high_water > info.scratch_bytes ||
        rep.scratch_bytes != info.scratch_bytes)
        rp_fail(t, what, plan,
                "scratch high-water %llu, reported promise %llu, promise "
                "%llu",
                (unsigned long long)rep.scratch_high_water,
                (unsigned long long)rep.scratch_bytes,
                (unsigned long long)info.scratch_bytes);
    /* every device's measured scratch against max(src_d, dst_d), failed
     * where it holds for certain: one mesh, even, memory-efficient and
     * without PRESERVE_SRC (a + b <= M, assign.c); two meshes where
     * sim_within says so (those over it counted).  Two meshes: every
     * device's within the promise (the run's report is the largest
     * device's). */
    for (int64_t r = 0; r < D; r++) {
        uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, r);
        uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, r);
        int over = per[r].scratch_high_water > (sb > db ? sb : db);
        int sure = two ? sim_within(plan, r, preserve, sim_flags != 0)
                       : !uneven && stats.memory_efficient && !preserve;
        if (two) {
            t->devices++;
            t->over_bound += over;
            t->sure += sure;
        }
        if (over && sure)
            rp_fail(t, what, plan,
                    "%sdevice %lld: scratch %llu over max(src_d, dst_d) = "
                    "%llu, where the sim keeps it within",
                    sim_flags ? "fused " : "", (long long)r,
                    (unsigned long long)per[r].scratch_high_water,
                    (unsigned long long)(sb > db ? sb : db));
        if (two && (per[r].scratch_high_water > info.scratch_bytes ||
                    per[r].scratch_bytes != info.scratch_bytes))
            rp_fail(t, what, plan,
                    "device %lld: scratch %llu, reported promise %llu, "
                    "promise %llu",
                    (long long)r,
                    (unsigned long long)per[r].scratch_high_water,
                    (unsigned long long)per[r].scratch_bytes,
                    (unsigned long long)info.scratch_bytes);
    }
    /* uneven dims: the program is sized by the largest device, and the
     * caller's buffers count with the smallest (doc/uneven.md) */
    /* two meshes: the S and R blocks besides the phases' scratch
     * (doc/meshes.md), so the one-mesh bounds below do not apply */
    if (!uneven && !two && stats.memory_efficient &&
        info.scratch_bytes > (preserve ? 2 * M : M))
        rp_fail(t, what, plan,
                "promise %llu over the bound (M = %llu, preserve %d)",
                (unsigned long long)info.scratch_bytes, (unsigned long long)M,
                preserve);
    if (!two && info.scratch_bytes > 2 * stats.peak_bytes)
        rp_fail(t, what, plan, "promise %llu over 2 peak",
                (unsigned long long)info.scratch_bytes);
    if (stats.collectives == 0 && info.scratch_bytes != 0)
        rp_fail(t, what, plan, "a plan without collectives needs scratch %llu",
                (unsigned long long)info.scratch_bytes);
    if (rep.steps_done != redist_plan_num_steps(plan) || rep.failed_step != -1)
        rp_fail(t, what, plan, "report: steps_done %d failed_step %d",
                rep.steps_done, rep.failed_step);
    if (rep.writes_src != info.writes_src)
        rp_fail(t, what, plan, "report.writes_src %d, info %d", rep.writes_src,
                info.writes_src);
out:
    rp_free_blocks(src, D);
    rp_free_blocks(dst, D);
    free(per);
    return 0;
}

/* n distinct devices of 0..max-1 in a random order. */
static void rp_devices(rp_rng *r, int64_t n, int64_t max, int64_t *out)
{
    int64_t all[64];
    for (int64_t d = 0; d < max; d++)
        all[d] = d;
    for (int64_t d = max - 1; d > 0; d--) {
        int64_t j = rp_in(r, 0, d), x = all[d];
        all[d] = all[j];
        all[j] = x;
    }
    memcpy(out, all, (size_t)n * sizeof *out);
}

redist_status_t rp_meshes_spec(rp_rng *r, int64_t max, int *kind,
                               redist_spec_t **spec, redist_error_t *err)
{
    *kind = (int)rp_in(r, 0, 3);
    return rp_meshes_spec_kind(r, max, *kind, spec, err);
}

redist_status_t rp_meshes_spec_kind(rp_rng *r, int64_t max, int kind,
                                    redist_spec_t **spec, redist_error_t *err)
{
    int64_t na, nb, da[64], db[64];
    if (max < 2)
        max = 2;
    if (max > 64)
        max = 64;
    switch (kind) {
    case 4: /* the same devices in the same order (planned as one mesh) */
        na = nb = rp_in(r, 1, max);
        for (int64_t d = 0; d < na; d++)
            da[d] = db[d] = d;
        break;
    case 0: /* disjoint: the source's devices first */
        na = rp_in(r, 1, max - 1);
        nb = rp_in(r, 1, max - na);
        for (int64_t d = 0; d < na; d++)
            da[d] = d;
        for (int64_t d = 0; d < nb; d++)
            db[d] = na + d;
        break;
    case 1: { /* overlapping ranges */
        na = rp_in(r, 1, max);
        nb = rp_in(r, 1, max);
        int64_t shift = rp_in(r, 0, max - nb);
        for (int64_t d = 0; d < na; d++)
            da[d] = d;
        for (int64_t d = 0; d < nb; d++)
            db[d] = shift + d;
        break;
    }
    case 2: /* the same devices, another shape and order */
        na = nb = rp_in(r, 1, max);
        for (int64_t d = 0; d < na; d++)
            da[d] = d;
        rp_devices(r, nb, nb, db);
        break;
    default: /* any devices, any order */
        na = rp_in(r, 1, max);
        nb = rp_in(r, 1, max);
        rp_devices(r, na, max, da);
        rp_devices(r, nb, max, db);
        break;
    }
    redist_mesh_t *ma = rp_mesh_exact(r, na, (int)rp_in(r, 0, 1));
    redist_mesh_t *mb = rp_mesh_exact(r, nb, (int)rp_in(r, 0, 1));
    rp_problem p;
    memset(&p, 0, sizeof p);
    p.nd = rp_ndims(r);
    rp_type(r, ma, p.nd, ~0u, 1, 0, &p.from);
    rp_type(r, mb, p.nd, 0, 0, 0, &p.to);
    for (int i = 0; i < p.nd; i++) {
        int64_t ka = rp_split_count(ma, &p.from, i);
        int64_t kb = rp_split_count(mb, &p.to, i);
        int64_t k = ka > kb ? ka : kb;
        p.shape[i] = rp_next(r) % 2 ? rp_lcm(ka, kb) * rp_in(r, 1, 2)
                                    : rp_in(r, 1, 2 * k + 2);
    }
    p.mesh = ma;
    rp_dtype_reduce(r, &p);
    redist_placed_mesh_t pa = {"src", ma, da}, pb = {"dst", mb, db};
    redist_spec_t *s0 = NULL;
    redist_status_t st = redist_spec_create_meshes(
        &pa, &pb, p.nd, p.shape, p.dtype, &p.from, &p.to, p.reduce, "random",
        &s0, err);
    if (!st) {
        redist_layout_t la = {(redist_split_t)rp_in(r, 0, 2), {0}, {0}};
        redist_layout_t lb = {(redist_split_t)rp_in(r, 0, 2), {0}, {0}};
        st = redist_spec_with_layouts(s0, &la, &lb, spec, err);
    }
    redist_spec_free(s0);
    redist_mesh_free(ma);
    redist_mesh_free(mb);
    return st;
}

void rp_mixed_plan(rp_rng *r, const redist_mesh_t *m, int i,
                   redist_plan_t **plan, int *uneven)
{
    rp_problem p;
    *plan = NULL;
    *uneven = 0;
    if (i % 2) {
        rp_walk w;
        rp_walk_start(r, m, 2, &p);
        if (!rp_random_walk(r, &p, 4, 1, &w))
            rp_walk_plan(&p, &w, plan, NULL);
    } else if (i % 4 == 2) {
        redist_spec_t *spec = NULL;
        rp_planned(r, m, 2, &p);
        if (p.nd > 0 && !rp_uneven_spec(r, &p, &spec, NULL) &&
            p.elems <= 6000)
            redist_plan_create(spec, NULL, plan, NULL);
        if (*plan)
            *uneven = redist_spec_is_uneven(spec);
        redist_spec_free(spec);
    } else {
        rp_planned(r, m, 2, &p);
        rp_plan(&p, NULL, plan, NULL);
    }
}

/* ----------------------------------------------------------- sets */

redist_spec_t *rp_set_spec(rp_rng *r, const redist_mesh_t *m,
                           const char *name)
{
    for (int t = 0; t < 20; t++) {
        rp_problem p;
        redist_spec_t *s = NULL, *n = NULL, *tmp = NULL;
        rp_planned(r, m, 2, &p);
        int uneven = rp_in(r, 0, 2) == 0;
        if (uneven ? rp_uneven_spec(r, &p, &s, NULL) : rp_spec(&p, &s, NULL))
            continue;
        redist_layout_t lf = {0}, lt = {0};
        lf.split = redist_spec_split(s, 0);
        lt.split = redist_spec_split(s, 1);
        if (!redist_spec_create(redist_spec_mesh(s), redist_spec_ndims(s),
                                redist_spec_shape(s), redist_spec_dtype(s),
                                redist_spec_from(s), redist_spec_to(s),
                                redist_spec_reduce(s), name, &tmp, NULL) &&
            redist_spec_with_layouts(tmp, &lf, &lt, &n, NULL))
            n = NULL;
        redist_spec_free(tmp);
        redist_spec_free(s);
        if (n)
            return n;
    }
    return NULL;
}

void rp_set_budgets(const redist_plan_set_t *set, uint64_t *most,
                    uint64_t *sum)
{
    *most = *sum = 0;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        uint64_t x = redist_plan_set_array_scratch(set, i);
        *most = x > *most ? x : *most;
        *sum += x;
    }
    redist_round_stats_t one;
    if (redist_plan_set_num_rounds(set) == 1 &&
        !redist_plan_set_round(set, 0, &one)) {
        *most += one.scratch_bytes - *sum;
        *sum = one.scratch_bytes;
    }
    /* the set's plans under budget 0: the smallest that works, named */
    enum { MAX = 64 };
    int n = redist_plan_set_num_arrays(set);
    const redist_spec_t *sp[MAX];
    redist_arrays_t *a = NULL;
    redist_plan_set_t *z = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    if (n > MAX)
        return;
    for (int i = 0; i < n; i++)
        sp[i] = redist_plan_spec(redist_plan_set_plan(set, i));
    const char *at = NULL, *key = "smallest budget that works is ";
    redist_status_t st = redist_arrays_create("least", n, sp, 0, &a, &e);
    if (!st)
        st = redist_plan_set_replay(set, a, NULL, &z, &e);
    if (!st)
        *most = 0;
    else if (st == REDIST_ERR_INFEASIBLE && (at = strstr(e.text, key)))
        *most = strtoull(at + strlen(key), NULL, 10);
    redist_plan_set_free(z);
    redist_arrays_free(a);
}

redist_plan_set_t *rp_set_make(redist_spec_t *const specs[], int n,
                               uint64_t budget, const redist_backend_t *be)
{
    return rp_set_make_cross(specs, n, budget, be, 0);
}

redist_plan_set_t *rp_set_make_cross(redist_spec_t *const specs[], int n,
                                     uint64_t budget,
                                     const redist_backend_t *be, int cross)
{
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = NULL;
    redist_plan_options_t po = {0};
    po.no_cross_sums = !cross;
    if (!redist_arrays_create("set", n, (const redist_spec_t *const *)specs,
                              budget, &a, NULL))
        redist_plan_set_create(a, &po, be, NULL, &set, NULL);
    redist_arrays_free(a);
    return set;
}

redist_spec_t *rp_set_two_spec(rp_rng *r, int64_t size, const char *name)
{
    for (int t = 0; t < 40; t++) {
        redist_spec_t *s = NULL, *n = NULL, *tmp = NULL;
        int kind;
        if (rp_meshes_spec(r, size, &kind, &s, NULL))
            continue;
        if (redist_spec_num_devices(s) != size) {
            redist_spec_free(s);
            continue;
        }
        redist_placed_mesh_t pm[2];
        int64_t *dev[2] = {NULL, NULL};
        int ok = 1;
        for (int side = 0; side < 2; side++) {
            const redist_mesh_t *m = redist_spec_side_mesh(s, side);
            int64_t nd = redist_mesh_num_devices(m);
            dev[side] = malloc((size_t)nd * sizeof *dev[side]);
            ok = ok && dev[side];
            for (int64_t k = 0; dev[side] && k < nd; k++)
                dev[side][k] = redist_spec_mesh_device(s, side, k);
            pm[side] = (redist_placed_mesh_t){redist_spec_mesh_name(s, side),
                                              m, dev[side]};
        }
        redist_layout_t lf = {0}, lt = {0};
        lf.split = redist_spec_split(s, 0);
        lt.split = redist_spec_split(s, 1);
        if (!ok ||
            (!redist_spec_create_meshes(&pm[0], &pm[1], redist_spec_ndims(s),
                                        redist_spec_shape(s),
                                        redist_spec_dtype(s),
                                        redist_spec_from(s),
                                        redist_spec_to(s),
                                        redist_spec_reduce(s), name, &tmp,
                                        NULL) &&
             redist_spec_with_layouts(tmp, &lf, &lt, &n, NULL)))
            n = NULL;
        redist_spec_free(tmp);
        redist_spec_free(s);
        free(dev[0]);
        free(dev[1]);
        if (n)
            return n;
    }
    return NULL;
}

uint64_t rp_set_largest(const redist_plan_set_t *set, int count)
{
    uint64_t sc[8] = {0}, sum = 0;
    count = count < 8 ? count : 8;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        uint64_t x = redist_plan_set_array_scratch(set, i);
        for (int j = 0; j < count; j++)
            if (x > sc[j]) {
                uint64_t y = sc[j];
                sc[j] = x;
                x = y;
            }
    }
    for (int j = 0; j < count; j++)
        sum += sc[j];
    return sum;
}

/* The set's source blocks filled, the destinations poisoned. */
static void set_fill(const redist_plan_set_t *set, int64_t rank,
                     void *const src[], void *const dst[])
{
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        if (src[i])
            rd_pattern_fill(s, rank, src[i]);
        if (dst[i])
            memset(dst[i], 0xEE,
                   (size_t)redist_spec_device_bytes(s, 1, rank));
    }
}

/* One run's figures and results on this rank; 0 when right. */
static int set_judge(const redist_plan_set_t *set,
                     const redist_set_prepared_t *p,
                     const redist_exec_report_t *rep, uint64_t budget, int c,
                     int run, int64_t rank, int64_t size, void *const dst[])
{
    if (budget != REDIST_NO_BUDGET &&
        (rep->scratch_high_water > budget ||
         rep->scratch_high_water < rep->scratch_bytes)) {
        fprintf(stderr, "rank %lld case %d: scratch %llu (arena %llu) > "
                        "budget %llu\n",
                (long long)rank, c,
                (unsigned long long)rep->scratch_high_water,
                (unsigned long long)rep->scratch_bytes,
                (unsigned long long)budget);
        return 1;
    }
    uint64_t msgs = redist_set_prepared_messages(p),
             xs = redist_set_prepared_exchanges(p), most = 0;
    /* combined: a round's exchanges go out together, so a round takes at
     * most as many combined exchanges as its array with the most steps
     * (one at most per step, two for an all_reduce: its contributions,
     * then the gather), not their sum */
    for (int k = 0; k < redist_plan_set_num_rounds(set); k++) {
        uint64_t m = 0;
        for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
            const redist_plan_t *pl = redist_plan_set_plan(set, i);
            uint64_t n = (uint64_t)redist_plan_num_steps(pl);
            for (int q = 0; q < redist_plan_num_steps(pl); q++) {
                redist_step_view_t v;
                n += !redist_plan_step(pl, q, &v) &&
                     v.op == REDIST_OP_ALL_REDUCE;
            }
            if (redist_plan_set_round_of(set, i) == k && n > m)
                m = n;
        }
        most += m;
    }
    if (xs > most) {
        fprintf(stderr, "rank %lld case %d: %llu combined exchanges, more "
                        "than the rounds' most steps of an array (%llu)\n",
                (long long)rank, c, (unsigned long long)xs,
                (unsigned long long)most);
        return 1;
    }
    /* the plan's figure is what the runner does (an uneven plan's
     * collectives, a set's lowered ones and transfers are exchanges) */
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    if (xs != (uint64_t)t.exchanges) {
        fprintf(stderr, "rank %lld case %d: %llu combined exchanges run, "
                        "the set's figure says %d\n",
                (long long)rank, c, (unsigned long long)xs, t.exchanges);
        return 1;
    }
    if (msgs > xs * (uint64_t)(size - 1)) {
        fprintf(stderr, "rank %lld case %d: %llu messages for %llu combined "
                        "exchanges on %lld ranks\n",
                (long long)rank, c, (unsigned long long)msgs,
                (unsigned long long)xs, (long long)size);
        return 1;
    }
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        rd_mismatch mm;
        if (dst[i] && rd_pattern_check(s, rank, dst[i], &mm)) {
            fprintf(stderr, "rank %lld case %d run %d: array %s element "
                            "%llu: expected %s, got %s\n",
                    (long long)rank, c, run, redist_spec_name(s),
                    (unsigned long long)mm.local_index, mm.expected, mm.got);
            return 1;
        }
    }
    return 0;
}

int rp_set_run_twice(const redist_plan_set_t *set, uint64_t budget, int c,
                     redist_backend_t *be, void (*after)(void *user),
                     void *user)
{
    return rp_set_run_counted(set, budget, c, be, after, user, NULL);
}

int rp_set_run_counted(const redist_plan_set_t *set, uint64_t budget, int c,
                       redist_backend_t *be, void (*after)(void *user),
                       void *user, uint64_t *messages)
{
    int n = redist_plan_set_num_arrays(set), bad = 0;
    int64_t rank = redist_backend_rank(be), size = redist_backend_size(be);
    void **src = calloc((size_t)n, sizeof *src);
    void **dst = calloc((size_t)n, sizeof *dst);
    for (int i = 0; src && dst && i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        uint64_t sb = redist_spec_device_bytes(s, 0, rank),
                 db = redist_spec_device_bytes(s, 1, rank);
        src[i] = sb ? malloc(sb) : NULL;
        dst[i] = db ? malloc(db) : NULL;
    }
    redist_error_t e = REDIST_ERROR_INIT;
    redist_set_prepared_t *p = NULL;
    redist_status_t st =
        src && dst ? redist_plan_set_prepare(set, be, src, dst, &p, &e)
                   : REDIST_ERR_NOMEM;
    for (int k = 0; k < 2 && !st && !bad; k++) {
        set_fill(set, rank, src, dst);
        redist_exec_report_t rep;
        if ((st = redist_set_run(p, &rep, &e)))
            break;
        if (after)
            after(user);
        bad = set_judge(set, p, &rep, budget, c, k, rank, size, dst);
        if (messages)
            *messages = redist_set_prepared_messages(p);
    }
    if (st) {
        fprintf(stderr, "rank %lld case %d: %s\n", (long long)rank, c,
                e.text);
        bad = 1;
    }
    redist_set_prepared_free(p);
    for (int i = 0; src && dst && i < n; i++) {
        free(src[i]);
        free(dst[i]);
    }
    free(src);
    free(dst);
    return bad;
}

int rp_set_phases(redist_backend_t *be, int k, int tight, int for_be, int c)
{
    int64_t size = redist_backend_size(be);
    char *json = malloc(4096 + (size_t)size * 48 + (size_t)k * 256);
    if (!json)
        return 1;
    size_t pos = (size_t)sprintf(
        json, "{\"meshes\": {\"a\": {\"axes\": [[\"x\", %lld]], \"devices\": [",
        (long long)size);
    /* mesh rank r is device size - 1 - r: the phase's peers must be
     * translated */
    for (int64_t d = size - 1; d >= 0; d--)
        pos += (size_t)sprintf(json + pos, "%s%lld", d < size - 1 ? ", " : "",
                               (long long)d);
    pos += (size_t)sprintf(json + pos,
                           "]}, \"b\": {\"axes\": [[\"y\", %lld]], "
                           "\"devices\": [",
                           (long long)size);
    for (int64_t d = 0; d < size; d++)
        pos += (size_t)sprintf(json + pos, "%s%lld", d ? ", " : "",
                               (long long)d);
    pos += (size_t)sprintf(json + pos, "]}}, \"arrays\": [");
    for (int i = 0; i < k; i++)
        pos += (size_t)sprintf(
            json + pos,
            "%s{\"name\": \"p%d\", \"shape\": [%lld, %d], \"dtype\": \"f32\", "
            "\"from\": {\"mesh\": \"a\", \"dims\": [[], []], \"partial\": "
            "[\"x\"]}, \"to\": {\"mesh\": \"b\", \"dims\": [[\"y\"], []]}}",
            i ? ", " : "", i, 12 * (long long)size, 24 + 8 * (i % 2));
    sprintf(json + pos, "]}");
    redist_arrays_t *a = NULL, *tb = NULL;
    redist_plan_set_t *set = NULL;
    redist_plan_options_t po = {0};
    po.no_cross_sums = 1; /* the sums on the source mesh: phase A */
    const redist_backend_t *kind = for_be ? be : NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    uint64_t budget = REDIST_NO_BUDGET;
    if (!redist_arrays_load_buffer(json, strlen(json), "phases.json", 0, &a,
                                   &e))
        redist_plan_set_create(a, &po, kind, NULL, &set, &e);
    if (set && tight) {
        const redist_spec_t *sp[64];
        budget = rp_set_largest(set, 3);
        redist_plan_set_free(set);
        set = NULL;
        for (int i = 0; i < k && i < 64; i++)
            sp[i] = redist_arrays_get(a, i);
        if (k <= 64 && !redist_arrays_create("t", k, sp, budget, &tb, &e))
            redist_plan_set_create(tb, &po, kind, NULL, &set, &e);
    }
    free(json);
    int bad = 0;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    /* the combined exchanges a round must make: its array with the most
     * (a lowered all_reduce two, a reduce_scatter or transfer one), not
     * one collective per array and phase step */
    int most = 0, steps = 0;
    for (int r = 0; set && r < t.nrounds; r++) {
        int m = 0, phase = 0;
        for (int i = 0; i < k; i++) {
            const redist_plan_t *pl = redist_plan_set_plan(set, i);
            int n = 0;
            if (redist_plan_set_round_of(set, i) != r)
                continue;
            for (int q = 0; q < redist_plan_num_steps(pl); q++) {
                redist_step_view_t v;
                redist_plan_step(pl, q, &v);
                int comb = redist_plan_set_step_combined(set, i, q);
                n += comb == 1 ? 1 + (v.op == REDIST_OP_ALL_REDUCE) : 0;
                phase += v.op != REDIST_OP_TRANSFER;
                bad |= v.op != REDIST_OP_TRANSFER && comb != (k > 1);
            }
            m = n > m ? n : m;
        }
        most += m;
        steps += phase;
        redist_round_stats_t rs;
        redist_plan_set_round(set, r, &rs);
        bad |= rs.exchanges != m ||
               (budget != REDIST_NO_BUDGET && rs.scratch_bytes > budget);
    }
    if (!set || bad || t.exchanges != most || !steps ||
        (k > 2 && t.exchanges >= t.nrounds + steps) ||
        (tight && k > 3 && t.nrounds < 2)) {
        fprintf(stderr, "rank %lld: %d two-mesh arrays%s: %s; %d rounds, %d "
                        "exchanges (want %d), %d phase steps\n",
                (long long)redist_backend_rank(be), k,
                tight ? " under a budget" : "", set ? "planned" : e.text,
                t.nrounds, t.exchanges, most, steps);
        bad = 1;
    } else {
        bad = rp_set_run_counted(set, budget, c, be, NULL, NULL, NULL);
    }
    redist_plan_set_free(set);
    redist_arrays_free(tb);
    redist_arrays_free(a);
    return bad;
}

int rp_set_uneven_all_reduces_combined(const redist_plan_set_t *set,
                                       int combined)
{
    int n = 0;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_plan_t *p = redist_plan_set_plan(set, i);
        redist_step_view_t v;
        n += redist_spec_is_uneven(redist_plan_spec(p)) &&
             redist_plan_num_steps(p) == 1 && !redist_plan_step(p, 0, &v) &&
             v.op == REDIST_OP_ALL_REDUCE &&
             redist_plan_set_step_combined(set, i, 0) == combined;
    }
    return n;
}

int rp_set_uneven_all_reduces(redist_backend_t *be, int k, int for_be, int c)
{
    int64_t size = redist_backend_size(be), s = size / 2;
    /* mesh y=2, x=size/2; the planner picks one all_reduce for these
     * at x = 2 and 3 (at x = 4 a reduce_scatter and an exchange) */
    if (size % 2 || s < 2 || s > 3)
        return 0;
    char mesh[32], shape[32], name[16];
    snprintf(mesh, sizeof mesh, "y=2,x=%lld", (long long)s);
    redist_spec_t *specs[64];
    int made = 0, bad = 0;
    for (int i = 0; i < k && i < 64; i++) {
        /* 3 rows over y: blocks 2 and 1 */
        snprintf(shape, sizeof shape, "3x%lld", (long long)(s + i % 3));
        snprintf(name, sizeof name, "u%d", i);
        if (!redist_spec_from_strings(mesh, shape, "f32", "y|", "x", "y|",
                                      NULL, NULL, name, 0, &specs[made],
                                      NULL))
            made++;
    }
    redist_plan_set_t *set =
        made == k ? rp_set_make(specs, made, REDIST_NO_BUDGET,
                                for_be ? be : NULL)
                  : NULL;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    int lowered = rp_set_uneven_all_reduces_combined(set, k > 1);
    uint64_t msgs = 0;
    if (!set || lowered != k || t.nrounds != 1 || t.exchanges != (k > 1) * 2) {
        fprintf(stderr, "rank %lld: %d uneven all_reduces: %s, %d lowered, "
                        "%d rounds, %d exchanges\n",
                (long long)redist_backend_rank(be), k,
                set ? "planned" : "no set", lowered, t.nrounds, t.exchanges);
        bad = 1;
    } else {
        bad = rp_set_run_counted(set, REDIST_NO_BUDGET, c, be, NULL, NULL,
                                 &msgs);
        /* each exchange: one message to every other member of the group */
        if (k > 1 && msgs != 2 * (uint64_t)(s - 1)) {
            fprintf(stderr, "rank %lld: %d uneven all_reduces: %llu "
                            "messages, want %lld\n",
                    (long long)redist_backend_rank(be), k,
                    (unsigned long long)msgs, 2 * (long long)(s - 1));
            bad = 1;
        }
    }
    redist_plan_set_free(set);
    for (int i = 0; i < made; i++)
        redist_spec_free(specs[i]);
    return bad;
}
