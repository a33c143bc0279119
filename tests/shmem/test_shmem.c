/*
 * The OpenSHMEM backend under oshrun: random plans on meshes of exactly
 * the job's PE count (every factorisation, size-1 axes, non-power-of-two
 * strides), run through every mode of the backend and checked
 *   - exactly, every element, with the pattern of src/testing/pattern.h;
 *   - bit for bit against the sim backend on random bits (NaNs, signed
 *     zeros, denormals: reductions must combine in the same order with the
 *     same kernels);
 *   - for memory: measured high-water <= the promise; in symmetric mode
 *     the executor's part is the sim backend's with REDIST_SIM_FUSED; the
 *     whole promise, work area included, at most max(src, dst) for
 *     memory-efficient plans (2 max with PRESERVE_SRC); the source intact
 *     when it should be;
 * plus collective failure: a bad argument or a different plan on one PE,
 * an injected failure in the middle of a plan (every PE returns, the
 * context stays failed), a wrong device count at creation.
 *
 * Modes: symmetric src/dst (shmem_malloc: puts straight into dst) or
 * private ones (malloc: receive into symmetric scratch), whole steps or
 * REDIST_SHMEM_PACKED, reductions pulled (shmem_ptr) or pushed through a
 * deliberately tiny work area (REDIST_SHMEM_NO_PTR: many rounds), and
 * one mode per plan with a random reduction protocol where it applies
 * (rd_shmem_prefer): every protocol must have run.
 *
 * Uneven specs (doc/spec-format.md section 7) run in every mode too, private
 * buffers exactly each PE's blocks (NULL when empty), symmetric ones the
 * largest block.
 *
 *   oshrun -np P test_shmem [PLANNED [WALKS [SEED [UNEVEN]]]]
 *
 * The random meshes, specs and walks come from tests/common/random_plan.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../../src/testing/pattern.h"
#include "../../src/backend/shmem/shmem_internal.h"
#include "../common/random_plan.h"

/* The OpenSHMEM backend runs the six steps of the bytes objective, not
 * exchange. */
static const redist_plan_options_t bytes_opts = {
    .objective = REDIST_OBJECTIVE_BYTES};

static rp_rng rng = {0x9e3779b97f4a7c15ULL};

static int me, npes;
static int runs, failures, skipped, checks, swept;
/* memory-efficient runs on private buffers */
static int private_runs;
/* reductions per protocol: the backend's choice, and preferred ones */
static uint64_t chosen[RED_NMODES], preferred[RED_NMODES];
static const char *const mode_names[RED_NMODES] = {
    "pull", "get", "copy+pull", "copy+get", "push", "push-work", "serial"};
static int op_count[REDIST_OP_COUNT], mode_count[8];
static int dtype_count[REDIST_DTYPE_COUNT], reduce_count[REDIST_REDUCE_COUNT];
static redist_shmem_t *ctx_plain, *ctx_packed, *ctx_push;

static void fail(const char *what, const redist_plan_t *plan, const char *fmt,
                 ...) __attribute__((format(printf, 3, 4)));
static void fail(const char *what, const redist_plan_t *plan, const char *fmt,
                 ...)
{
    failures++;
    if (failures > 5)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (PE %d, %s, run %d): ", me, what, runs);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (plan && failures == 1) {
        char *j = redist_plan_to_json(plan);
        if (j)
            fprintf(stderr, "%s\n", j);
        free(j);
    }
}

static void check(int ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    checks++;
    if (ok)
        return;
    failures++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (PE %d): ", me);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* The same on every PE: a reduction of one int. */
static int all_max(int v)
{
    static long src, dst, wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long sync[SHMEM_REDUCE_SYNC_SIZE];
    static int init;
    static long *s, *d, *w, *p;
    if (!init) {
        s = shmem_malloc(sizeof src);
        d = shmem_malloc(sizeof dst);
        w = shmem_malloc(sizeof wrk);
        p = shmem_malloc(sizeof sync);
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            p[i] = SHMEM_SYNC_VALUE;
        shmem_barrier_all();
        init = 1;
    }
    *s = v;
    shmem_long_max_to_all(d, s, 1, 0, 0, npes, w, p);
    shmem_barrier_all(); /* pSync reusable */
    return (int)*d;
}

typedef struct mode {
    redist_shmem_t *ctx;
    int symmetric, preserve, random_data;
    const char *name;
    int prefer; /* a reduction protocol (rd_shmem_prefer), or -1 */
} mode;

/* One execution of `plan` in mode m; checks everything. */
static void run_mode(const char *what, const redist_plan_t *plan,
                     const mode *m, uint64_t seed)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T;
    redist_exec_options_t opts = {m->preserve ? REDIST_EXEC_PRESERVE_SRC : 0};
    redist_plan_stats_t stats;
    redist_plan_stats(plan, &stats);
    int64_t D = redist_mesh_num_devices(redist_spec_mesh(s));

    /* buffers: symmetric (the same on every PE: uneven dims, the largest
     * block) or private (uneven: exactly this PE's blocks, NULL when
     * empty) */
    int uneven = redist_spec_is_uneven(s);
    void *src, *dst;
    if (m->symmetric) {
        src = shmem_malloc((size_t)S);
        dst = shmem_malloc((size_t)T);
    } else {
        if (uneven) {
            S = redist_spec_device_bytes(s, REDIST_SIDE_FROM, me);
            T = redist_spec_device_bytes(s, REDIST_SIDE_TO, me);
        }
        src = S ? malloc((size_t)S) : NULL;
        dst = T ? malloc((size_t)T) : NULL;
    }
    void *expect = NULL;
    if (m->random_data) {
        /* PE 0 runs the sim on the same random inputs and puts each
         * device's result to it */
        expect = shmem_malloc((size_t)T);
        if (me == 0) {
            void **dd = NULL;
            redist_error_t e;
            redist_error_clear(&e);
            if (rp_sim_expect(plan, seed, REDIST_SIM_FUSED, &opts, &dd, &e))
                fail(what, plan, "sim: %s", e.text);
            for (int64_t r = 0; r < D; r++)
                shmem_putmem(expect, dd[r], (size_t)T, (int)r);
            rp_free_blocks(dd, D);
            shmem_quiet();
        }
        shmem_barrier_all();
        rp_fill_bits(src, S, seed, me);
    } else if (src) {
        rd_pattern_fill(s, me, src);
    }
    if (dst)
        memset(dst, 0xA5, (size_t)T);

    redist_shmem_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    uint64_t before[RED_NMODES], after[RED_NMODES];
    rd_shmem_prefer(m->ctx, m->prefer);
    rd_shmem_mode_counts(m->ctx, before);
    if (redist_shmem_exec_info(m->ctx, plan, src, dst, &opts, &info, &err))
        fail(what, plan, "exec_info: %s", err.text);
    if (info.symmetric != m->symmetric)
        fail(what, plan, "exec_info says symmetric %d, buffers %d",
             info.symmetric, m->symmetric);
    redist_exec_report_t rep;
    redist_status_t st = redist_shmem_execute(m->ctx, plan, src, dst, &opts,
                                              &rep, &err);
    rd_shmem_mode_counts(m->ctx, after);
    rd_shmem_prefer(m->ctx, -1);
    for (int k = 0; k < RED_NMODES; k++)
        (m->prefer < 0 ? chosen : preferred)[k] += after[k] - before[k];
    runs++;
    mode_count[(m->ctx == ctx_packed) * 4 + (m->ctx == ctx_push) * 2 +
               m->symmetric]++;
    char tag[160];
    snprintf(tag, sizeof tag, "%s, %s%s%s%s%s, %s %s", what, m->name,
             m->prefer >= 0 ? " " : "",
             m->prefer >= 0 ? mode_names[m->prefer] : "",
             m->preserve ? " preserve" : "",
             m->random_data ? " random-bits" : "",
             redist_dtype_name(redist_spec_dtype(s)),
             redist_reduce_name(redist_spec_reduce(s)));
    if (st) {
        fail(tag, plan, "execute: %s (%s)", err.text,
             redist_status_string(st));
    } else {
        rd_mismatch mm;
        if (m->random_data) {
            if (memcmp(dst, expect, (size_t)T) != 0) {
                uint64_t i = 0;
                while (((unsigned char *)dst)[i] ==
                       ((unsigned char *)expect)[i])
                    i++;
                fail(tag, plan, "differs from sim at byte %llu of %llu",
                     (unsigned long long)i, (unsigned long long)T);
            }
        } else if (rd_pattern_check(s, me, dst, &mm)) {
            fail(tag, plan, "local %llu global %llu: expected %s got %s",
                 (unsigned long long)mm.local_index,
                 (unsigned long long)mm.global_index, mm.expected, mm.got);
        }
        if (!m->random_data && (m->preserve || !info.exec.writes_src) &&
            rd_pattern_check_src(s, me, src, &mm))
            fail(tag, plan, "source modified (preserve %d, writes_src %d)",
                 m->preserve, info.exec.writes_src);
        if (rep.scratch_high_water > info.scratch_bytes ||
            rep.scratch_bytes != info.scratch_bytes)
            fail(tag, plan, "scratch high-water %llu, reported promise %llu, "
                            "promise %llu",
                 (unsigned long long)rep.scratch_high_water,
                 (unsigned long long)rep.scratch_bytes,
                 (unsigned long long)info.scratch_bytes);
        if (m->symmetric && m->ctx != ctx_packed) {
            /* the same promise as the sim's whole-step path, except that
             * the sim runs an uneven reduce_scatter whole (no packed
             * boxes: less) */
            redist_sim_t *probe = NULL;
            redist_sim_create(D, REDIST_SIM_FUSED, &probe, NULL);
            uint64_t simp = redist_plan_scratch_bytes(
                plan, redist_sim_backend(probe, 0), &opts);
            redist_sim_free(probe);
            int uneven_rs = 0;
            for (int k = 0; redist_spec_is_uneven(s) &&
                            k < redist_plan_num_steps(plan); k++) {
                redist_step_view_t v;
                uneven_rs |= !redist_plan_step(plan, k, &v) &&
                             v.op == REDIST_OP_REDUCE_SCATTER;
            }
            if (uneven_rs ? simp > info.exec.scratch_bytes
                          : info.exec.scratch_bytes != simp)
                fail(tag, plan, "symmetric promise %llu, sim fused %llu",
                     (unsigned long long)info.exec.scratch_bytes,
                     (unsigned long long)simp);
            if (redist_shmem_uses_ptr(m->ctx) && info.work_bytes &&
                m->prefer < 0)
                fail(tag, plan, "work area promised with shmem_ptr");
        }
        if (stats.memory_efficient && m->prefer < 0 && !uneven &&
            (!m->symmetric || m->ctx != ctx_packed)) {
            /* the whole promise, work area included: reductions read in
             * place, push into free symmetric memory or into the work
             * area within what max(src, dst) leaves, else use a protocol
             * with no work space (gets, or one sender at a time).
             * Private buffers: exchanges run in place in one symmetric
             * buffer. */
            uint64_t bound = m->preserve ? 2 * M : M;
            private_runs += !m->symmetric;
            if (info.scratch_bytes > bound)
                fail(tag, plan, "promise %llu (executor %llu, work area "
                                "%llu) over the bound %llu",
                     (unsigned long long)info.scratch_bytes,
                     (unsigned long long)info.exec.scratch_bytes,
                     (unsigned long long)info.work_bytes,
                     (unsigned long long)bound);
        }
        if (info.exec.scratch_bytes > 2 * stats.peak_bytes &&
            info.exec.scratch_bytes > 2 * M)
            fail(tag, plan, "promise %llu over 2 peak",
                 (unsigned long long)info.exec.scratch_bytes);
        if (rep.steps_done != redist_plan_num_steps(plan) ||
            rep.failed_step != -1)
            fail(tag, plan, "report: steps_done %d failed_step %d",
                 rep.steps_done, rep.failed_step);
    }
    if (expect)
        shmem_free(expect);
    if (m->symmetric) {
        shmem_free(dst);
        shmem_free(src);
    } else {
        free(dst);
        free(src);
    }
}

static void run_plan(const char *what, const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    /* every mode once on exact data, one random mode on random bits; one
     * of them makes the reductions use a random protocol where they can */
    mode modes[7] = {
        {ctx_plain, 1, 0, 0, "symmetric", -1},
        {ctx_plain, 0, 0, 0, "private", -1},
        {ctx_packed, (int)(rp_next(&rng) % 2), 0, 0, "packed", -1},
        {ctx_push, (int)(rp_next(&rng) % 2), 0, 0, "push", -1},
        {ctx_plain, (int)(rp_next(&rng) % 2), 1, 0, "preserve", -1},
        {rp_next(&rng) % 2 ? ctx_plain : ctx_push, (int)(rp_next(&rng) % 2),
         (int)(rp_next(&rng) % 2), 0, "prefer",
         (int)(rp_next(&rng) % RED_NMODES)},
        {NULL, 0, 0, 1, "random", -1},
    };
    modes[6] = modes[rp_next(&rng) % 6];
    /* uneven dims: the blocks differ by PE; the pattern checks them */
    modes[6].random_data = !redist_spec_is_uneven(s);
    modes[6].preserve = (int)(rp_next(&rng) % 2);
    uint64_t seed = rp_next(&rng);
    for (int k = 0; k < 7; k++)
        run_mode(what, plan, &modes[k], seed);
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        op_count[v.op]++;
    }
    dtype_count[redist_spec_dtype(s)]++;
    reduce_count[redist_spec_reduce(s)]++;
}

/* A random mesh of exactly npes devices: 1 to 4 axes (some of size 1). */
static redist_mesh_t *random_mesh(void)
{
    return rp_mesh_exact(&rng, npes, 0);
}

static void planned_case(void)
{
    redist_mesh_t *m = random_mesh();
    rp_problem p;
    rp_planned(&rng, m, 3, &p);
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {.max_states = 200000};
    redist_cost_model_t cm;
    if (rp_next(&rng) % 2) { /* the time objective: plans with exchanges */
        redist_cost_model_default(&cm);
        for (int a = 0; a < redist_mesh_num_axes(m); a++)
            cm.axis_link[a] = (uint8_t)rp_in(&rng, 0, REDIST_LINK_COUNT - 1);
        po.objective = REDIST_OBJECTIVE_TIME;
        po.cost = &cm;
    }
    if (p.elems > 20000 || rp_plan(&p, &po, &plan, NULL))
        skipped++;
    else
        run_plan("planned", plan);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* Uneven dims (rp_uneven_spec): random shapes, often n < k, each side
 * its rule or explicit blocks with zero lengths, partial sums reduced by
 * uneven reduce_scatter and all_reduce. */
static void uneven_case(void)
{
    redist_mesh_t *m = random_mesh();
    rp_problem p;
    rp_planned(&rng, m, 2, &p);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {.max_states = 200000};
    if (rp_next(&rng) % 2)
        po.objective = REDIST_OBJECTIVE_TIME;
    if (p.nd == 0 || rp_uneven_spec(&rng, &p, &spec, NULL) ||
        p.elems > 20000 || redist_plan_create(spec, &po, &plan, NULL))
        skipped++;
    else
        run_plan(redist_spec_is_uneven(spec) ? "uneven" : "uneven (even)",
                 plan);
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* Random legal step sequences (layouts an optimal plan never takes). */
static void walk_case(void)
{
    redist_mesh_t *m = random_mesh();
    rp_problem p;
    rp_walk_start(&rng, m, 3, &p);
    rp_walk w;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    if (p.elems > 20000 || rp_random_walk(&rng, &p, 6, 0, &w))
        skipped++;
    else if (rp_walk_plan(&p, &w, &plan, &err))
        fail("walk", NULL, "building the walk's plan: %s", err.text);
    else
        run_plan("walk", plan);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* A reduce_scatter over dim 0 (k == 0) or an all_reduce (k == 1) over
 * every axis of a random mesh, in each of the modes, on random bits
 * against the sim. */
static void sweep_one(redist_dtype_t d, redist_reduce_t o, int k,
                      const int64_t shape[2], mode *modes, int nmodes)
{
    redist_mesh_t *m = random_mesh();
    int na = redist_mesh_num_axes(m);
    redist_type_t from, to;
    redist_type_init(&from, 2);
    redist_type_init(&to, 2);
    for (int a = 0; a < na; a++) {
        redist_type_add_partial(&from, a);
        if (k == 0)
            redist_type_push_axis(&to, 0, a);
    }
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (redist_spec_create(m, 2, shape, d, &from, &to, o, NULL, &spec,
                           NULL) ||
        redist_plan_create(spec, &bytes_opts, &plan, NULL)) {
        fail("sweep", NULL, "no plan for %s %s", redist_dtype_name(d),
             redist_reduce_name(o));
    } else {
        uint64_t seed = rp_next(&rng);
        for (int i = 0; i < nmodes; i++)
            run_mode("sweep", plan, &modes[i], seed);
        for (int q = 0; q < redist_plan_num_steps(plan); q++) {
            redist_step_view_t v;
            redist_plan_step(plan, q, &v);
            op_count[v.op]++;
        }
        dtype_count[d]++;
        reduce_count[o]++;
        swept++;
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* Every dtype x op: reduce_scatter and all_reduce, pulled, pushed and
 * with a protocol that needs no work space; then those three protocols
 * on blocks of several RD_REDUCE_BLOCK elements per member (an
 * all_reduce's ranges of unequal lengths). */
static void sweep(void)
{
    static const int spaceless[3] = {RED_GET, RED_COPY_GET, RED_SERIAL};
    for (int d = 0; d < REDIST_DTYPE_COUNT; d++)
        for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
            for (int k = 0; k < 2; k++) {
                int64_t shape[2] = {npes * 2, 5};
                mode modes[3] = {
                    {ctx_plain, 1, 0, 1, "sweep pull", -1},
                    {ctx_push, (int)(rp_next(&rng) % 2), 0, 1, "sweep push",
                     -1},
                    {rp_next(&rng) % 2 ? ctx_plain : ctx_push, 0, 0, 1,
                     "sweep", spaceless[(d + o + k) % 3]},
                };
                sweep_one((redist_dtype_t)d, (redist_reduce_t)o, k, shape,
                          modes, 3);
            }
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 2; k++) {
            int64_t shape[2] = {k ? npes * 3 + 1 : npes * 3, k ? 97 : 301};
            mode modes[2] = {
                {ctx_plain, p == 0, 0, 1, "sweep blocks", spaceless[p]},
                {ctx_push, p == 0, 0, 1, "sweep blocks", spaceless[p]},
            };
            sweep_one(p == 1 ? REDIST_BF16 : REDIST_F64,
                      p == 2 ? REDIST_REDUCE_SUM : REDIST_REDUCE_MIN, k, shape,
                      modes, 2);
        }
}

/* ---------------------------------------------------- failures */

static redist_plan_t *simple_plan(redist_reduce_t op, int64_t scale)
{
    /* all_to_all / reduce_scatter on a 1-axis mesh of npes devices */
    const char *names[1] = {"x"};
    int64_t sizes[1] = {npes}, shape[2] = {npes * 2 * scale, npes * 3};
    redist_mesh_t *m = NULL;
    redist_mesh_create(1, names, sizes, &m, NULL);
    redist_type_t from, to;
    redist_type_init(&from, 2);
    redist_type_init(&to, 2);
    if (op == REDIST_REDUCE_SUM) {
        redist_type_push_axis(&from, 0, 0);
        redist_type_push_axis(&to, 1, 0);
    } else {
        redist_type_add_partial(&from, 0);
        redist_type_push_axis(&to, 1, 0);
    }
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_spec_create(m, 2, shape, REDIST_F32, &from, &to, op, NULL, &spec,
                       NULL);
    redist_plan_create(spec, &bytes_opts, &plan, NULL);
    redist_spec_free(spec);
    redist_mesh_free(m);
    return plan;
}

static void failure_tests(void)
{
    redist_error_t err;
    redist_status_t st;
    redist_plan_t *plan = simple_plan(REDIST_REDUCE_SUM, 1);
    redist_plan_t *other = simple_plan(REDIST_REDUCE_SUM, 2);
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(redist_plan_spec(other));
    void *src = shmem_malloc((size_t)S), *dst = shmem_malloc((size_t)S);

    /* a NULL buffer on the last PE: every PE fails, nobody hangs */
    redist_error_clear(&err);
    rd_pattern_fill(s, me, src);
    st = redist_shmem_execute(ctx_plain, plan, src,
                              me == npes - 1 ? NULL : dst, NULL, NULL, &err);
    check(st == REDIST_ERR_INVALID, "NULL dst on PE %d: status %s (%s)",
          npes - 1, redist_status_string(st), err.text);
    if (me != npes - 1)
        check(strstr(err.text, "PE") != NULL, "others name the PE: %s",
              err.text);

    /* a different plan on PE 0 */
    if (npes > 1) {
        redist_error_clear(&err);
        st = redist_shmem_execute(ctx_plain, me == 0 ? other : plan, src, dst,
                                  NULL, NULL, &err);
        check(st == REDIST_ERR_MISMATCH, "different plans: status %s (%s)",
              redist_status_string(st), err.text);
    }

    /* the context still works after failures before any data moved */
    redist_error_clear(&err);
    rd_pattern_fill(s, me, src);
    st = redist_shmem_execute(ctx_plain, plan, src, dst, NULL, NULL, &err);
    rd_mismatch mm;
    check(st == REDIST_OK && !rd_pattern_check(s, me, dst, &mm),
          "execute after failures: %s", err.text);

    /* a failure in the middle of a plan, on the last PE */
    if (npes > 1) {
        redist_shmem_t *cx = NULL;
        redist_error_clear(&err);
        st = redist_shmem_create(redist_spec_mesh(s), NULL, &cx, &err);
        check(st == REDIST_OK, "create: %s", err.text);
        if (me == npes - 1)
            rd_shmem_inject_failure(cx, 0);
        redist_exec_report_t rep;
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, plan, src, dst, NULL, &rep, &err);
        check(st == REDIST_ERR_BACKEND, "injected failure: %s (%s)",
              redist_status_string(st), err.text);
        check(rep.failed_step == 0, "failed_step %d", rep.failed_step);
        if (me != npes - 1)
            check(strstr(err.text, "aborted") != NULL, "abort message: %s",
                  err.text);
        /* the context stays failed, on every PE */
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, plan, src, dst, NULL, NULL, &err);
        check(st != REDIST_OK, "a failed context fails again: %s", err.text);
        redist_shmem_free(cx);
    }

    /* a mesh of another device count */
    {
        const char *names[1] = {"x"};
        int64_t sizes[1] = {npes + 1};
        redist_mesh_t *m = NULL;
        redist_shmem_t *cx = NULL;
        redist_mesh_create(1, names, sizes, &m, NULL);
        redist_error_clear(&err);
        st = redist_shmem_create(m, NULL, &cx, &err);
        check(st == REDIST_ERR_INVALID && cx == NULL,
              "wrong device count: %s (%s)", redist_status_string(st),
              err.text);
        redist_mesh_free(m);
    }
    /* different options on one PE */
    if (npes > 1) {
        redist_shmem_options_t o = {me == 0 ? REDIST_SHMEM_PACKED : 0, 0};
        redist_shmem_t *cx = NULL;
        redist_error_clear(&err);
        st = redist_shmem_create(redist_spec_mesh(s), &o, &cx, &err);
        check(st == REDIST_ERR_MISMATCH && cx == NULL,
              "different options: %s (%s)", redist_status_string(st),
              err.text);
    }
    shmem_free(dst);
    shmem_free(src);
    redist_plan_free(other);
    redist_plan_free(plan);
}

int main(int argc, char **argv)
{
    int planned = argc > 1 ? atoi(argv[1]) : 40;
    int walks = argc > 2 ? atoi(argv[2]) : 40;
    int uneven = argc > 4 ? atoi(argv[4]) : 20;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    rp_seed(&rng, argc > 3 ? argv[3] : NULL, (uint64_t)npes);

    /* the contexts need a mesh of npes devices; any shape will do */
    const char *names[1] = {"all"};
    int64_t sizes[1] = {npes};
    redist_mesh_t *m0 = NULL;
    redist_mesh_create(1, names, sizes, &m0, NULL);
    redist_error_t err;
    redist_error_clear(&err);
    redist_shmem_options_t packed = {REDIST_SHMEM_PACKED, 0};
    /* the smallest work area: pushed reductions in many rounds */
    redist_shmem_options_t push = {REDIST_SHMEM_NO_PTR, 16 * (uint64_t)npes};
    if (redist_shmem_create(m0, NULL, &ctx_plain, &err) ||
        redist_shmem_create(m0, &packed, &ctx_packed, &err) ||
        redist_shmem_create(m0, &push, &ctx_push, &err)) {
        fprintf(stderr, "PE %d: create: %s\n", me, err.text);
        shmem_finalize();
        return 1;
    }
    redist_mesh_free(m0);
    if (me == 0)
        printf("%d PEs, shmem_ptr %s\n", npes,
               redist_shmem_uses_ptr(ctx_plain) ? "yes" : "no");

    failure_tests();
    sweep();
    for (int i = 0; i < planned; i++)
        planned_case();
    for (int i = 0; i < walks; i++)
        walk_case();
    for (int i = 0; i < uneven; i++)
        uneven_case();

    /* every protocol ran on random plans (PE 0 decides as the others) */
    if (npes > 1 && me == 0)
        for (int k = 0; k < RED_NMODES; k++)
            check(chosen[k] + preferred[k] > 0, "no reduction ran with %s",
                  mode_names[k]);
    int bad = all_max(failures);
    if (me == 0) {
        printf("plans %d random + %d dtype x op, executions %d per PE, %d "
               "other checks (skipped %d specs: too large or no plan)\n",
               planned + walks + uneven - skipped, swept, runs, checks,
               skipped);
        printf("executions by mode: symmetric %d, private %d, packed %d, "
               "push %d\n",
               mode_count[1], mode_count[0], mode_count[4] + mode_count[5],
               mode_count[2] + mode_count[3]);
        printf("private buffers: %d memory-efficient executions, all "
               "within max(src, dst)\n",
               private_runs);
        printf("reductions by protocol (chosen / preferred):");
        for (int k = 0; k < RED_NMODES; k++)
            printf(" %s %llu/%llu", mode_names[k],
                   (unsigned long long)chosen[k],
                   (unsigned long long)preferred[k]);
        printf("\n");
        printf("steps by op:");
        for (int o = 0; o < REDIST_OP_COUNT; o++)
            printf(" %s %d", redist_op_name((redist_op_t)o), op_count[o]);
        printf("\nplans by dtype:");
        for (int d = 0; d < REDIST_DTYPE_COUNT; d++)
            printf(" %s %d", redist_dtype_name((redist_dtype_t)d),
                   dtype_count[d]);
        printf("\nplans by reduce:");
        for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
            printf(" %s %d", redist_reduce_name((redist_reduce_t)o),
                   reduce_count[o]);
        printf("\n%s (PE 0: %d failures; most on one PE: %d)\n",
               bad ? "FAILED" : "passed", failures, bad);
    }
    redist_shmem_free(ctx_push);
    redist_shmem_free(ctx_packed);
    redist_shmem_free(ctx_plain);
    shmem_finalize();
    return bad != 0;
}
