/*
 * The exchange step executed under the sim backend, checked exactly
 * (every element of every device, the pattern of src/exec/pattern.h).
 *
 * Three sources of plans, each run with a random dtype and reduce op, the
 * generic (pack / point-to-point / unpack) or the fused sim path, with or
 * without REDIST_EXEC_PRESERVE_SRC:
 *   - direct: one exchange straight from a random source type to a random
 *     target type with the same partial set (uneven block overlaps, axes
 *     moved between dims, replicated axes that become sharded and back);
 *   - chains: random walks mixing exchanges with every other step kind,
 *     built with redist_plan_from_steps;
 *   - timed: random specs planned with the time objective under random
 *     axis links (what `redistplan run --objective time` runs).
 * Checks: data exact; the traffic each device reports equals the
 * planner's need (rd_exchange_need) for single exchanges; scratch
 * high-water <= the promise, the promise <= max(src, dst) for
 * memory-efficient plans (2 max with PRESERVE_SRC); the source intact
 * when promised.  Then: a backend without the exchange op refuses the
 * plan on every device with a clear error, before any data moves.
 *
 *   test_exchange [DIRECT [CHAINS [TIMED [SEED]]]]
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../../src/exec/exec_internal.h"
#include "../../src/exec/pattern.h"
#include "../../src/plan/steps.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int64_t rnd_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static int runs, failures, skipped, exchanges, packed, unpacked;
static int checks, check_failures;
static const char *axis_names[4] = {"a", "b", "c", "d"};

#define CHECK(c)                                                             \
    do {                                                                     \
        checks++;                                                            \
        if (!(c)) {                                                          \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                     \
        }                                                                    \
    } while (0)

static void fail(const char *what, const redist_plan_t *plan, const char *fmt,
                 ...) __attribute__((format(printf, 3, 4)));
static void fail(const char *what, const redist_plan_t *plan, const char *fmt,
                 ...)
{
    failures++;
    if (failures > 10)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (%s run %d): ", what, runs);
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

/* Run one plan with random options; check everything.  `need` (or
 * UINT64_MAX) is the exact number of bytes the most needy device
 * receives, for plans of one exchange. */
static void run_plan(const char *what, const redist_plan_t *plan,
                     uint64_t need)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_mesh_num_devices(redist_spec_mesh(s));
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T;
    redist_exec_options_t opts = {0};
    if (rnd() % 3 == 0)
        opts.flags |= REDIST_EXEC_PRESERVE_SRC;
    unsigned sim_flags = rnd() % 2 ? REDIST_SIM_FUSED : 0;
    int preserve = (opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    redist_plan_stats_t stats;
    redist_plan_stats(plan, &stats);

    redist_sim_t *probe = NULL;
    redist_sim_create(D, sim_flags, &probe, NULL);
    redist_exec_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_plan_exec_info(plan, redist_sim_backend(probe, 0), &opts, &info,
                              &err)) {
        fail(what, plan, "exec_info: %s", err.text);
        redist_sim_free(probe);
        return;
    }
    redist_sim_free(probe);
    rd_program prog;
    if (rd_program_build(plan, 0, 0, 0, &prog, NULL) == REDIST_OK)
        for (int k = 0; k < prog.npasses; k++) {
            packed += prog.pass[k].kind == RD_PASS_XPACK;
            unpacked += prog.pass[k].kind == RD_PASS_XUNPACK;
            exchanges += prog.pass[k].kind == RD_PASS_XCHG &&
                         prog.pass[k].x.op == REDIST_OP_EXCHANGE;
        }
    rd_program_free(&prog);

    void **src = calloc((size_t)D, sizeof *src);
    void **dst = calloc((size_t)D, sizeof *dst);
    redist_exec_report_t *per = calloc((size_t)D, sizeof *per);
    for (int64_t r = 0; r < D; r++) {
        src[r] = malloc((size_t)S);
        dst[r] = malloc((size_t)T);
        rd_pattern_fill(s, r, src[r]);
        memset(dst[r], 0xEE, (size_t)T);
    }
    redist_exec_report_t rep;
    redist_status_t st = redist_exec_sim_run(plan, src, dst, sim_flags, &opts,
                                             &rep, per, &err);
    runs++;
    if (st) {
        fail(what, plan, "execute: %s (%s)", err.text,
             redist_status_string(st));
        goto out;
    }
    rd_mismatch mm;
    for (int64_t r = 0; r < D; r++) {
        if (rd_pattern_check(s, r, dst[r], &mm)) {
            fail(what, plan,
                 "%s%s %s %s: device %lld local %llu global %llu: expected "
                 "%s got %s",
                 sim_flags ? "fused " : "", preserve ? "preserve " : "",
                 redist_dtype_name(redist_spec_dtype(s)),
                 redist_reduce_name(redist_spec_reduce(s)), (long long)r,
                 (unsigned long long)mm.local_index,
                 (unsigned long long)mm.global_index, mm.expected, mm.got);
            goto out;
        }
        if ((preserve || !info.writes_src) &&
            rd_pattern_check_src(s, r, src[r], &mm)) {
            fail(what, plan, "source modified (preserve %d, writes_src %d) "
                             "on device %lld",
                 preserve, info.writes_src, (long long)r);
            goto out;
        }
    }
    if (need != UINT64_MAX && rep.recv_bytes != need)
        fail(what, plan, "most received %llu bytes, the planner's need %llu",
             (unsigned long long)rep.recv_bytes, (unsigned long long)need);
    if (need != UINT64_MAX) {
        uint64_t sent = 0, recv = 0;
        for (int64_t r = 0; r < D; r++) {
            sent += per[r].sent_bytes;
            recv += per[r].recv_bytes;
        }
        if (sent != recv)
            fail(what, plan, "sent %llu bytes in all, received %llu",
                 (unsigned long long)sent, (unsigned long long)recv);
    }
    if (rep.scratch_high_water > info.scratch_bytes ||
        rep.scratch_bytes != info.scratch_bytes)
        fail(what, plan, "scratch high-water %llu, promise %llu / %llu",
             (unsigned long long)rep.scratch_high_water,
             (unsigned long long)rep.scratch_bytes,
             (unsigned long long)info.scratch_bytes);
    if (stats.memory_efficient && info.scratch_bytes > (preserve ? 2 * M : M))
        fail(what, plan, "promise %llu over the bound (M = %llu, preserve %d)",
             (unsigned long long)info.scratch_bytes, (unsigned long long)M,
             preserve);
    if (info.scratch_bytes > 2 * stats.peak_bytes)
        fail(what, plan, "promise %llu over 2 peak",
             (unsigned long long)info.scratch_bytes);
out:
    for (int64_t r = 0; r < D; r++) {
        free(src[r]);
        free(dst[r]);
    }
    free(src);
    free(dst);
    free(per);
}

static redist_mesh_t *random_mesh(int max_devices)
{
    for (;;) {
        int naxes = (int)rnd_in(1, 4);
        int64_t sizes[4], d = 1;
        for (int a = 0; a < naxes; a++) {
            sizes[a] = rnd_in(1, 4);
            d *= sizes[a];
        }
        if (d > max_devices)
            continue;
        redist_mesh_t *m = NULL;
        redist_mesh_create(naxes, axis_names, sizes, &m, NULL);
        return m;
    }
}

static int max_devices(void) { return rnd() % 10 == 0 ? 128 : 32; }

/* A random type over the axes not in `partial` (those stay partial);
 * other axes: replicated or on a random dim, random order. */
static void random_dims(const redist_mesh_t *m, int nd, uint32_t partial,
                        redist_type_t *t)
{
    int naxes = redist_mesh_num_axes(m);
    int order[4] = {0, 1, 2, 3};
    for (int i = naxes - 1; i > 0; i--) {
        int j = (int)rnd_in(0, i);
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    redist_type_init(t, nd);
    t->partial = partial;
    for (int k = 0; k < naxes; k++) {
        int a = order[k];
        if (partial >> a & 1u)
            continue;
        int c = (int)rnd_in(0, nd);
        if (c < nd)
            redist_type_push_axis(t, c, a);
    }
}

static int64_t split_count(const redist_mesh_t *m, const redist_type_t *t,
                           int i)
{
    int64_t p = 1;
    for (int k = 0; k < t->dim_naxes[i]; k++)
        p *= redist_mesh_axis_size(m, t->dims[i][k]);
    return p;
}

static int64_t lcm(int64_t a, int64_t b)
{
    int64_t x = a, y = b;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

static redist_step_view_t exchange_view(const redist_type_t *after)
{
    redist_step_view_t v;
    memset(&v, 0, sizeof v);
    v.op = REDIST_OP_EXCHANGE;
    v.dim = v.from_dim = v.to_dim = v.axis = -1;
    v.after = *after;
    return v;
}

static uint64_t planner_need(const redist_spec_t *spec,
                             const redist_type_t *a, const redist_type_t *b)
{
    rd_ctx cx;
    rd_ctype ca, cb;
    uint64_t elems, peers;
    rd_ctx_init(&cx, spec);
    rd_ctype_from_type(&ca, a);
    rd_ctype_from_type(&cb, b);
    if (rd_exchange_need(&cx, &ca, &cb, RD_EXCHANGE_LIMIT, &elems, &peers))
        return UINT64_MAX;
    return elems * cx.elem_size;
}

static void direct_case(void)
{
    redist_mesh_t *m = random_mesh(max_devices());
    int nd = (int)rnd_in(1, 3);
    uint32_t partial = 0;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (rnd() % 5 == 0)
            partial |= 1u << a;
    redist_type_t from, to;
    random_dims(m, nd, partial, &from);
    random_dims(m, nd, partial, &to);
    int64_t shape[3], elems = 1;
    for (int i = 0; i < nd; i++) {
        /* sometimes blocks of unrelated sizes (uneven overlaps) */
        shape[i] = lcm(split_count(m, &from, i), split_count(m, &to, i)) *
                   rnd_in(1, 3);
        elems *= shape[i];
    }
    redist_dtype_t dt = (redist_dtype_t)rnd_in(0, REDIST_DTYPE_COUNT - 1);
    redist_reduce_t op = (redist_reduce_t)rnd_in(0, REDIST_REDUCE_COUNT - 1);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (elems > 30000 || redist_spec_create(m, nd, shape, dt, &from, &to, op,
                                            NULL, &spec, &err)) {
        skipped++;
    } else {
        redist_step_view_t v = exchange_view(&to);
        if (redist_plan_from_steps(spec, 1, &v, &plan, &err)) {
            fail("direct", NULL, "building the plan: %s", err.text);
        } else {
            redist_plan_stats_t st;
            redist_plan_stats(plan, &st);
            uint64_t need = planner_need(spec, &from, &to);
            if (st.recv_bytes != need)
                fail("direct", plan, "plan recv %llu, need %llu",
                     (unsigned long long)st.recv_bytes,
                     (unsigned long long)need);
            if (!st.memory_efficient)
                fail("direct", plan, "a single exchange is not "
                                     "memory-efficient");
            run_plan("direct", plan, need);
        }
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------ chains */

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

static void chain_case(void)
{
    redist_mesh_t *m = random_mesh(max_devices());
    int nd = (int)rnd_in(1, 3);
    int naxes = redist_mesh_num_axes(m);
    uint32_t partial = 0;
    for (int a = 0; a < naxes; a++)
        if (rnd() % 4 == 0)
            partial |= 1u << a;
    redist_type_t from;
    random_dims(m, nd, partial, &from);
    int64_t shape[3], elems = 1;
    for (int i = 0; i < nd; i++) {
        shape[i] = split_count(m, &from, i) * rnd_in(1, 2);
        for (int a = 0; a < naxes; a++)
            if (rnd() % 3 == 0)
                shape[i] *= redist_mesh_axis_size(m, a);
        elems *= shape[i];
    }
    redist_dtype_t dt = (redist_dtype_t)rnd_in(0, REDIST_DTYPE_COUNT - 1);
    redist_reduce_t op = (redist_reduce_t)rnd_in(0, REDIST_REDUCE_COUNT - 1);
    redist_spec_t *spec0 = NULL;
    if (elems > 20000 || redist_spec_create(m, nd, shape, dt, &from, &from,
                                            op, NULL, &spec0, NULL)) {
        skipped++;
        redist_mesh_free(m);
        return;
    }
    rd_ctx cx;
    rd_ctx_init(&cx, spec0);
    cx.dst_partial = 0;
    rd_ctype cur;
    rd_ctype_from_type(&cur, &from);
    int len = (int)rnd_in(1, 5), n = 0, nx = 0;
    redist_step_view_t views[5];
    static moves mv;
    for (int k = 0; k < len; k++) {
        rd_step pick;
        if (rnd() % 2) { /* an exchange to a random divisible type */
            redist_type_t t, c;
            rd_ctype_to_type(&cur, &c);
            random_dims(m, nd, c.partial, &t);
            memset(&pick, 0, sizeof pick);
            pick.op = REDIST_OP_EXCHANGE;
            pick.dim = pick.from_dim = pick.to_dim = pick.axis = -1;
            rd_ctype_from_type(&pick.after, &t);
            int64_t l[REDIST_MAX_DIMS];
            if (rd_ctype_local(&cx, &pick.after, l))
                continue;
            nx++;
        } else {
            mv.n = 0;
            for (int o = 0; o < REDIST_OP_COUNT; o++)
                if (rd_step_kinds[o].enumerate)
                    rd_step_kinds[o].enumerate(&cx, &cur, collect, &mv);
            if (mv.n == 0)
                continue;
            pick = mv.st[rnd() % (uint64_t)mv.n];
        }
        rd_ctype next;
        char why[256];
        if (rd_step_kinds[pick.op].apply(&cx, &cur, &pick, &next, why,
                                         sizeof why)) {
            fail("chain", NULL, "step table refused a step: %s", why);
            break;
        }
        redist_step_view_t *v = &views[n++];
        memset(v, 0, sizeof *v);
        v->op = (redist_op_t)pick.op;
        v->dim = pick.dim;
        v->from_dim = pick.from_dim;
        v->to_dim = pick.to_dim;
        v->axis = pick.axis;
        rd_ctype_to_type(&next, &v->after);
        cur = next;
    }
    redist_type_t to;
    rd_ctype_to_type(&cur, &to);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (nx == 0) {
        skipped++;
    } else if (redist_spec_create(m, nd, shape, dt, &from, &to, op, NULL,
                                  &spec, &err) ||
               redist_plan_from_steps(spec, n, views, &plan, &err)) {
        fail("chain", NULL, "building the chain's plan: %s", err.text);
    } else {
        run_plan("chain", plan, UINT64_MAX);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_spec_free(spec0);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------- timed */

static void timed_case(void)
{
    redist_mesh_t *m = random_mesh(max_devices());
    int nd = (int)rnd_in(1, 3);
    int naxes = redist_mesh_num_axes(m);
    uint32_t partial = 0;
    for (int a = 0; a < naxes; a++)
        if (rnd() % 4 == 0)
            partial |= 1u << a;
    redist_type_t from, to;
    random_dims(m, nd, partial, &from);
    /* the target may reduce some partial axes */
    random_dims(m, nd, partial & (uint32_t)rnd(), &to);
    int64_t shape[3], elems = 1;
    for (int i = 0; i < nd; i++) {
        shape[i] = lcm(split_count(m, &from, i), split_count(m, &to, i)) *
                   rnd_in(1, 2);
        if (rnd() % 2)
            shape[i] *= redist_mesh_axis_size(m, (int)rnd_in(0, naxes - 1));
        elems *= shape[i];
    }
    redist_dtype_t dt = (redist_dtype_t)rnd_in(0, REDIST_DTYPE_COUNT - 1);
    redist_reduce_t op = (redist_reduce_t)rnd_in(0, REDIST_REDUCE_COUNT - 1);
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    for (int a = 0; a < naxes; a++)
        cm.axis_link[a] = (uint8_t)rnd_in(0, REDIST_LINK_COUNT - 1);
    redist_plan_options_t po = {.max_states = 200000,
                                .objective = REDIST_OBJECTIVE_TIME,
                                .cost = &cm};
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (elems > 20000 ||
        redist_spec_create(m, nd, shape, dt, &from, &to, op, NULL, &spec,
                           NULL) ||
        redist_plan_create(spec, &po, &plan, NULL)) {
        skipped++;
    } else {
        run_plan("timed", plan, UINT64_MAX);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------- a backend without exchange */

typedef struct {
    const redist_plan_t *plan;
    redist_backend_t *be;
    void *src, *dst;
    redist_status_t st;
    redist_error_t err;
} job_t;

static void *job_run(void *p)
{
    job_t *j = p;
    redist_error_clear(&j->err);
    j->st = redist_plan_execute(j->plan, j->be, j->src, j->dst, NULL, NULL,
                                &j->err);
    return NULL;
}

static void no_exchange_backend(void)
{
    redist_spec_t *s = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    CHECK(redist_spec_from_strings("x=2,y=2", "16", "f32", "x", NULL, "y",
                                   NULL, NULL, NULL, 0, &s, &err) == 0);
    if (!s)
        return;
    redist_step_view_t v = exchange_view(redist_spec_to(s));
    CHECK(redist_plan_from_steps(s, 1, &v, &plan, &err) == REDIST_OK);
    redist_sim_t *w = NULL;
    CHECK(redist_sim_create(4, 0, &w, &err) == REDIST_OK);
    if (!plan || !w) {
        redist_plan_free(plan);
        redist_spec_free(s);
        redist_sim_free(w);
        return;
    }
    rd_backend_ops ops = *redist_sim_backend(w, 0)->ops;
    ops.exchange = NULL;
    ops.name = "nox";
    for (int r = 0; r < 4; r++)
        redist_sim_backend(w, r)->ops = &ops;
    redist_exec_info_t info;
    CHECK(redist_plan_exec_info(plan, redist_sim_backend(w, 0), NULL, &info,
                                &err) == REDIST_ERR_INVALID);
    CHECK(strstr(err.text, "backend nox does not run exchange steps") !=
          NULL);
    /* no backend given: the figures of a backend that runs everything */
    CHECK(redist_plan_exec_info(plan, NULL, NULL, &info, NULL) == REDIST_OK);
    job_t jobs[4];
    pthread_t th[4];
    float bufs[8][8];
    memset(bufs, 0, sizeof bufs);
    for (int r = 0; r < 4; r++) {
        jobs[r].plan = plan;
        jobs[r].be = redist_sim_backend(w, r);
        jobs[r].src = bufs[r];
        jobs[r].dst = bufs[4 + r];
        pthread_create(&th[r], NULL, job_run, &jobs[r]);
    }
    for (int r = 0; r < 4; r++) {
        pthread_join(th[r], NULL);
        CHECK(jobs[r].st == REDIST_ERR_INVALID);
        CHECK(strstr(jobs[r].err.text, "does not run exchange steps (step "
                                       "1)") != NULL);
    }
    redist_sim_free(w);
    redist_plan_free(plan);
    redist_spec_free(s);
}

int main(int argc, char **argv)
{
    int direct = argc > 1 ? atoi(argv[1]) : 400;
    int chains = argc > 2 ? atoi(argv[2]) : 400;
    int timed = argc > 3 ? atoi(argv[3]) : 400;
    if (argc > 4)
        rng = strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ULL | 1;
    for (int i = 0; i < direct; i++)
        direct_case();
    for (int i = 0; i < chains; i++)
        chain_case();
    for (int i = 0; i < timed; i++)
        timed_case();
    no_exchange_backend();
    printf("runs %d (skipped %d: too large, no plan or no exchange); "
           "exchange steps %d (%d packed, %d unpacked, the others direct)\n",
           runs, skipped, exchanges, packed, unpacked);
    printf("checks %d, %d failed\n", checks, check_failures);
    printf("%d passed, %d failed\n", runs - failures, failures);
    return failures != 0 || check_failures != 0;
}
