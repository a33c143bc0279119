/*
 * End-to-end execution of random plans under the sim backend, checked
 * exactly (every element of every device) with the pattern of
 * src/exec/pattern.h.
 *
 * Two sources of plans:
 *   - planned: random specs (meshes of 1-4 axes of sizes 1-4, 1-3 dims,
 *     partial axes) solved by redist_plan_create;
 *   - walks: random sequences of legal steps of every kind (from the
 *     planner's step table), which reach layouts an optimal plan never
 *     takes (all_gather then all_to_all, permutes with partial axes, ...),
 *     built with redist_plan_from_steps.
 * Every run uses a random dtype and reduce op, the generic or the fused
 * sim path, and with or without REDIST_EXEC_PRESERVE_SRC, and checks:
 *   - the data is exact on every device;
 *   - the measured scratch high-water mark <= the promise
 *     (redist_plan_scratch_bytes), which is the reported promise;
 *   - promise <= max(src, dst) for memory-efficient plans with the default
 *     options, <= 2 max(src, dst) with PRESERVE_SRC, <= 2 peak always,
 *     0 for plans of slices only;
 *   - the source is intact whenever PRESERVE_SRC is given or the program
 *     says it does not write it.
 *
 *   test_exec_random [PLANNED [WALKS [SEED]]]
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../../src/exec/pattern.h"
#include "../../src/plan/steps.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
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

static int runs, failures, skipped;
static int op_count[REDIST_OP_COUNT];
static int dtype_count[REDIST_DTYPE_COUNT], reduce_count[REDIST_REDUCE_COUNT];
static const char *axis_names[4] = {"a", "b", "c", "d"};

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

/* Run one plan with random options; check everything. */
static void run_plan(const char *what, const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_mesh_num_devices(redist_spec_mesh(s));
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T;
    redist_exec_options_t opts = {0};
    if (rnd() % 3 == 0)
        opts.flags |= REDIST_EXEC_PRESERVE_SRC;
    unsigned sim_flags = rnd() % 2 ? REDIST_SIM_FUSED : 0;
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

    void **src = calloc((size_t)D, sizeof *src);
    void **dst = calloc((size_t)D, sizeof *dst);
    for (int64_t r = 0; r < D; r++) {
        src[r] = malloc((size_t)S);
        dst[r] = malloc((size_t)T);
        rd_pattern_fill(s, r, src[r]);
        memset(dst[r], 0xEE, (size_t)T);
    }
    redist_exec_report_t rep;
    redist_status_t st = redist_exec_sim_run(plan, src, dst, sim_flags, &opts,
                                             &rep, NULL, &err);
    runs++;
    int preserve = (opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    if (st) {
        fail(what, plan, "execute: %s (%s)", err.text,
             redist_status_string(st));
    } else {
        rd_mismatch mm;
        for (int64_t r = 0; r < D; r++) {
            if (rd_pattern_check(s, r, dst[r], &mm)) {
                fail(what, plan,
                     "%s%s %s %s: device %lld local %llu global %llu: "
                     "expected %s got %s",
                     sim_flags ? "fused " : "", preserve ? "preserve" : "",
                     redist_dtype_name(redist_spec_dtype(s)),
                     redist_reduce_name(redist_spec_reduce(s)),
                     (long long)r, (unsigned long long)mm.local_index,
                     (unsigned long long)mm.global_index, mm.expected, mm.got);
                break;
            }
            if ((preserve || !info.writes_src) &&
                rd_pattern_check_src(s, r, src[r], &mm)) {
                fail(what, plan, "source modified (preserve %d, writes_src "
                                 "%d) on device %lld",
                     preserve, info.writes_src, (long long)r);
                break;
            }
        }
        if (rep.scratch_high_water > info.scratch_bytes ||
            rep.scratch_bytes != info.scratch_bytes)
            fail(what, plan, "scratch high-water %llu, reported promise "
                             "%llu, promise %llu",
                 (unsigned long long)rep.scratch_high_water,
                 (unsigned long long)rep.scratch_bytes,
                 (unsigned long long)info.scratch_bytes);
        if (stats.memory_efficient &&
            info.scratch_bytes > (preserve ? 2 * M : M))
            fail(what, plan, "promise %llu over the bound (M = %llu, "
                             "preserve %d)",
                 (unsigned long long)info.scratch_bytes,
                 (unsigned long long)M, preserve);
        if (info.scratch_bytes > 2 * stats.peak_bytes)
            fail(what, plan, "promise %llu over 2 peak",
                 (unsigned long long)info.scratch_bytes);
        if (stats.collectives == 0 && info.scratch_bytes != 0)
            fail(what, plan, "a plan without collectives needs scratch %llu",
                 (unsigned long long)info.scratch_bytes);
        if (rep.steps_done != redist_plan_num_steps(plan) ||
            rep.failed_step != -1)
            fail(what, plan, "report: steps_done %d failed_step %d",
                 rep.steps_done, rep.failed_step);
        if (rep.writes_src != info.writes_src)
            fail(what, plan, "report.writes_src %d, info %d", rep.writes_src,
                 info.writes_src);
    }
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        op_count[v.op]++;
    }
    dtype_count[redist_spec_dtype(s)]++;
    reduce_count[redist_spec_reduce(s)]++;
    for (int64_t r = 0; r < D; r++) {
        free(src[r]);
        free(dst[r]);
    }
    free(src);
    free(dst);
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

static int max_devices(void)
{
    /* mostly small meshes (threads are per device), a few large ones */
    return rnd() % 10 == 0 ? 256 : 32;
}

/* A random type: each axis replicated, partial (if allowed) or appended
 * to a random dim; axis order within a dim random. */
static void random_type(const redist_mesh_t *m, int nd, uint32_t partial_ok,
                        int partial_weight, redist_type_t *t)
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
    for (int k = 0; k < naxes; k++) {
        int a = order[k];
        int c = (int)rnd_in(0, nd + partial_weight);
        if (c < nd)
            redist_type_push_axis(t, c, a);
        else if (c > nd && (partial_ok >> a & 1u))
            redist_type_add_partial(t, a);
    }
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

static int64_t split_count(const redist_mesh_t *m, const redist_type_t *t,
                           int i)
{
    int64_t p = 1;
    for (int k = 0; k < t->dim_naxes[i]; k++)
        p *= redist_mesh_axis_size(m, t->dims[i][k]);
    return p;
}

static void planned_case(void)
{
    redist_mesh_t *m = random_mesh(max_devices());
    int nd = (int)rnd_in(1, 3);
    redist_type_t from, to;
    random_type(m, nd, 0xf, 1, &from);
    random_type(m, nd, from.partial, 1, &to);
    int64_t shape[3];
    int64_t elems = 1;
    for (int i = 0; i < nd; i++) {
        shape[i] = lcm(split_count(m, &from, i), split_count(m, &to, i)) *
                   rnd_in(1, 2);
        /* room for intermediate splits */
        if (rnd() % 2)
            shape[i] *= redist_mesh_axis_size(
                m, (int)rnd_in(0, redist_mesh_num_axes(m) - 1));
        elems *= shape[i];
    }
    redist_dtype_t dt = (redist_dtype_t)rnd_in(0, REDIST_DTYPE_COUNT - 1);
    redist_reduce_t op = (redist_reduce_t)rnd_in(0, REDIST_REDUCE_COUNT - 1);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {.max_states = 200000};
    if (elems > 20000 ||
        redist_spec_create(m, nd, shape, dt, &from, &to, op, NULL, &spec,
                           NULL) ||
        redist_plan_create(spec, &po, &plan, NULL)) {
        skipped++;
    } else {
        run_plan("planned", plan);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------- walks */

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

static void walk_case(void)
{
    redist_mesh_t *m = random_mesh(max_devices());
    int nd = (int)rnd_in(1, 3);
    redist_type_t from;
    random_type(m, nd, 0xf, 2, &from);
    int64_t shape[3], elems = 1;
    for (int i = 0; i < nd; i++) {
        /* every axis may end up on any dim: make dims divisible by the
         * product of a random subset of the axes, times 1 or 2 */
        shape[i] = split_count(m, &from, i) * rnd_in(1, 2);
        for (int a = 0; a < redist_mesh_num_axes(m); a++)
            if (rnd() % 3 == 0)
                shape[i] *= redist_mesh_axis_size(m, a);
        elems *= shape[i];
    }
    redist_dtype_t dt = (redist_dtype_t)rnd_in(0, REDIST_DTYPE_COUNT - 1);
    redist_reduce_t op = (redist_reduce_t)rnd_in(0, REDIST_REDUCE_COUNT - 1);
    redist_spec_t *spec0 = NULL;
    if (elems > 20000 ||
        redist_spec_create(m, nd, shape, dt, &from, &from, op, NULL, &spec0,
                           NULL)) {
        skipped++;
        redist_mesh_free(m);
        return;
    }
    rd_ctx cx;
    rd_ctx_init(&cx, spec0);
    cx.dst_partial = 0; /* any partial axis may be reduced */
    rd_ctype cur;
    rd_ctype_from_type(&cur, &from);
    int len = (int)rnd_in(1, 6), n = 0;
    redist_step_view_t views[6];
    static moves mv;
    for (int k = 0; k < len; k++) {
        mv.n = 0;
        for (int o = 0; o < REDIST_OP_COUNT; o++)
            if (rd_step_kinds[o].enumerate)
                rd_step_kinds[o].enumerate(&cx, &cur, collect, &mv);
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
        if (mv.n == 0)
            break;
        rd_step pick = mv.st[rnd() % (uint64_t)mv.n];
        rd_ctype next;
        char why[256];
        if (rd_step_kinds[pick.op].apply(&cx, &cur, &pick, &next, why,
                                         sizeof why))
            break;
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
    if (redist_spec_create(m, nd, shape, dt, &from, &to, op, NULL, &spec,
                           &err) ||
        redist_plan_from_steps(spec, n, views, &plan, &err)) {
        fail("walk", NULL, "building the walk's plan: %s", err.text);
    } else {
        run_plan("walk", plan);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_spec_free(spec0);
    redist_mesh_free(m);
}

int main(int argc, char **argv)
{
    int planned = argc > 1 ? atoi(argv[1]) : 1500;
    int walks = argc > 2 ? atoi(argv[2]) : 1500;
    if (argc > 3)
        rng = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ULL | 1;
    for (int i = 0; i < planned; i++)
        planned_case();
    for (int i = 0; i < walks; i++)
        walk_case();
    printf("runs %d (skipped %d specs: too large or no plan)\n", runs,
           skipped);
    printf("steps by op:");
    for (int o = 0; o < REDIST_OP_COUNT; o++)
        printf(" %s %d", redist_op_name((redist_op_t)o), op_count[o]);
    printf("\nruns by dtype:");
    for (int d = 0; d < REDIST_DTYPE_COUNT; d++)
        printf(" %s %d", redist_dtype_name((redist_dtype_t)d), dtype_count[d]);
    printf("\nruns by reduce:");
    for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
        printf(" %s %d", redist_reduce_name((redist_reduce_t)o),
               reduce_count[o]);
    printf("\n%d passed, %d failed\n", runs - failures, failures);
    return failures != 0;
}
