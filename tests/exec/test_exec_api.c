/*
 * The executor's C API: scratch figures before running, argument errors,
 * and collective failure through the per-rank entry point (every device
 * fails together, none hangs): a bad argument on one rank, ranks given
 * different plans, a backend failure in the middle of a plan, a world of
 * the wrong size.  Also repeated execution on one world and the
 * one-call sim runner on special plans (no steps, slices only).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../../src/exec/exec_internal.h"
#include "../../src/testing/pattern.h"
#include "../../src/backend/sim/sim_internal.h"

static int checks, failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

static redist_plan_t *make_plan(const char *mesh, const char *shape,
                                const char *dtype, const char *from,
                                const char *fp, const char *to,
                                const char *reduce)
{
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_from_strings(mesh, shape, dtype, from, fp, to, NULL,
                                 reduce, NULL, 0, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err)) {
        fprintf(stderr, "setup: %s\n", err.text);
        exit(2);
    }
    redist_spec_free(spec);
    return plan;
}

typedef struct bufs {
    int64_t n;
    void **src, **dst;
} bufs;

static bufs alloc_bufs(const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    bufs b;
    b.n = redist_mesh_num_devices(redist_spec_mesh(s));
    b.src = calloc((size_t)b.n, sizeof *b.src);
    b.dst = calloc((size_t)b.n, sizeof *b.dst);
    for (int64_t r = 0; r < b.n; r++) {
        b.src[r] = malloc((size_t)redist_spec_src_bytes(s));
        b.dst[r] = malloc((size_t)redist_spec_dst_bytes(s));
        rd_pattern_fill(s, r, b.src[r]);
    }
    return b;
}

static void free_bufs(bufs *b)
{
    for (int64_t r = 0; r < b->n; r++) {
        free(b->src[r]);
        free(b->dst[r]);
    }
    free(b->src);
    free(b->dst);
}

static int all_exact(const redist_plan_t *plan, const bufs *b)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    for (int64_t r = 0; r < b->n; r++)
        if (rd_pattern_check(s, r, b->dst[r], NULL))
            return 0;
    return 1;
}

/* ------------------------------------------------ per-rank threads */

typedef struct job {
    const redist_plan_t *plan;
    redist_backend_t *be;
    void *src, *dst;
    redist_exec_options_t opts;
    int times;
    redist_status_t st;
    redist_error_t err;
    redist_exec_report_t rep;
} job;

static void *job_main(void *arg)
{
    job *j = arg;
    for (int t = 0; t < j->times; t++) {
        redist_error_clear(&j->err);
        j->st = redist_plan_execute(j->plan, j->be, j->src, j->dst, &j->opts,
                                    &j->rep, &j->err);
        if (j->st)
            break;
    }
    return NULL;
}

static void run_jobs(job *jobs, int64_t n)
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    for (int64_t r = 0; r < n; r++)
        pthread_create(&th[r], NULL, job_main, &jobs[r]);
    for (int64_t r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    free(th);
}

static job *setup_jobs(redist_sim_t *w, int64_t n, const redist_plan_t *plan,
                       bufs *b)
{
    job *jobs = calloc((size_t)n, sizeof *jobs);
    for (int64_t r = 0; r < n; r++) {
        jobs[r].plan = plan;
        jobs[r].be = redist_sim_backend(w, r);
        jobs[r].src = b->src[r % b->n];
        jobs[r].dst = b->dst[r % b->n];
        jobs[r].times = 1;
    }
    return jobs;
}

static void test_collective_failures(void)
{
    redist_plan_t *plan = make_plan("x=2,y=3", "12x6", "f32", "x|y", NULL,
                                    "y|x", NULL);
    redist_plan_t *other = make_plan("x=2,y=3", "12x6", "f64", "x|y", NULL,
                                     "y|x", NULL);
    bufs b = alloc_bufs(plan);
    int64_t n = b.n;
    redist_sim_t *w = NULL;

    /* success, three times in a row on one world */
    redist_sim_create(n, 0, &w, NULL);
    job *jobs = setup_jobs(w, n, plan, &b);
    for (int64_t r = 0; r < n; r++) {
        jobs[r].times = 3;
        jobs[r].opts.flags = REDIST_EXEC_PRESERVE_SRC;
    }
    run_jobs(jobs, n);
    int ok = 1;
    for (int64_t r = 0; r < n; r++)
        ok &= jobs[r].st == REDIST_OK;
    CHECK(ok && all_exact(plan, &b), "per-rank execution, repeated");
    CHECK(redist_backend_rank(jobs[4].be) == 4 &&
          redist_backend_size(jobs[4].be) == n &&
          strcmp(redist_backend_name(jobs[4].be), "sim") == 0,
          "backend accessors");
    free(jobs);

    /* a NULL destination on rank 2: everybody fails, nobody hangs */
    jobs = setup_jobs(w, n, plan, &b);
    jobs[2].dst = NULL;
    run_jobs(jobs, n);
    ok = jobs[2].st == REDIST_ERR_INVALID &&
         strstr(jobs[2].err.text, "NULL buffer") != NULL;
    for (int64_t r = 0; r < n; r++)
        if (r != 2)
            ok &= jobs[r].st == REDIST_ERR_INVALID &&
                  strstr(jobs[r].err.text, "device 2 failed") != NULL;
    CHECK(ok, "bad argument on one rank fails every rank (%s / %s)",
          jobs[2].err.text, jobs[0].err.text);
    free(jobs);

    /* the world is still usable after an agreed failure */
    jobs = setup_jobs(w, n, plan, &b);
    run_jobs(jobs, n);
    ok = 1;
    for (int64_t r = 0; r < n; r++)
        ok &= jobs[r].st == REDIST_OK;
    CHECK(ok && all_exact(plan, &b), "world usable after an agreed failure");
    free(jobs);

    /* different plans on different ranks */
    jobs = setup_jobs(w, n, plan, &b);
    jobs[5].plan = other;
    run_jobs(jobs, n);
    ok = 1;
    for (int64_t r = 0; r < n; r++)
        ok &= jobs[r].st == REDIST_ERR_MISMATCH;
    CHECK(ok, "different plans: REDIST_ERR_MISMATCH everywhere (%s)",
          jobs[0].err.text);
    free(jobs);

    /* a backend failure in the middle of the plan */
    rd_sim_inject_failure(w, 3, 0);
    jobs = setup_jobs(w, n, plan, &b);
    run_jobs(jobs, n);
    ok = jobs[3].st == REDIST_ERR_BACKEND && jobs[3].rep.failed_step == 0 &&
         strstr(jobs[3].err.text, "injected") != NULL;
    for (int64_t r = 0; r < n; r++)
        if (r != 3)
            ok &= jobs[r].st == REDIST_ERR_BACKEND &&
                  strstr(jobs[r].err.text, "device 3 failed") != NULL;
    CHECK(ok, "mid-plan failure aborts every rank (%s / %s)",
          jobs[3].err.text, jobs[0].err.text);
    free(jobs);
    /* ... and the world stays failed */
    jobs = setup_jobs(w, n, plan, &b);
    run_jobs(jobs, n);
    ok = 1;
    for (int64_t r = 0; r < n; r++)
        ok &= jobs[r].st != REDIST_OK;
    CHECK(ok, "an aborted world stays failed");
    free(jobs);
    redist_sim_free(w);

    /* a mid-plan failure through the one-call runner, fused path too */
    for (unsigned fl = 0; fl <= REDIST_SIM_FUSED; fl += REDIST_SIM_FUSED) {
        redist_sim_create(n, fl, &w, NULL);
        rd_sim_inject_failure(w, 1, 0);
        redist_error_t err;
        redist_error_clear(&err);
        redist_exec_report_t rep;
        redist_status_t st = rd_sim_run_world(w, plan, b.src, b.dst, NULL,
                                              &rep, NULL, &err);
        CHECK(st == REDIST_ERR_BACKEND && strstr(err.text, "injected") &&
              rep.failed_step == 0,
              "runner reports the failing device's error (%s)", err.text);
        redist_sim_free(w);
    }

    /* a world of the wrong size: every rank fails the same way */
    redist_sim_create(n + 1, 0, &w, NULL);
    jobs = setup_jobs(w, n + 1, plan, &b);
    run_jobs(jobs, n + 1);
    ok = 1;
    for (int64_t r = 0; r <= n; r++)
        ok &= jobs[r].st == REDIST_ERR_INVALID;
    CHECK(ok, "world size != mesh size (%s)", jobs[0].err.text);
    free(jobs);
    redist_sim_free(w);

    free_bufs(&b);
    redist_plan_free(plan);
    redist_plan_free(other);
}

static void test_arguments(void)
{
    redist_plan_t *plan = make_plan("x=2", "4x4", "f32", "x|", NULL, "|x",
                                    NULL);
    bufs b = alloc_bufs(plan);
    redist_error_t err;
    redist_exec_info_t info;
    redist_exec_report_t rep;
    redist_exec_options_t bad = {0x80};

    redist_error_clear(&err);
    CHECK(redist_plan_exec_info(NULL, NULL, NULL, &info, &err) ==
              REDIST_ERR_INVALID, "exec_info NULL plan");
    redist_error_clear(&err);
    CHECK(redist_plan_exec_info(plan, NULL, &bad, &info, &err) ==
              REDIST_ERR_INVALID && strstr(err.text, "flags"),
          "exec_info unknown flag");
    CHECK(redist_plan_scratch_bytes(NULL, NULL, NULL) == 0,
          "scratch of NULL plan");
    redist_error_clear(&err);
    CHECK(redist_plan_execute(plan, NULL, b.src[0], b.dst[0], NULL, &rep,
                              &err) == REDIST_ERR_INVALID &&
              rep.failed_step == -1,
          "execute with NULL backend");
    redist_error_clear(&err);
    CHECK(redist_exec_sim_run(plan, NULL, b.dst, 0, NULL, &rep, NULL, &err) ==
              REDIST_ERR_INVALID, "sim run with NULL src array");
    redist_error_clear(&err);
    CHECK(redist_exec_sim_run(plan, b.src, b.dst, 0, &bad, &rep, NULL, &err) ==
              REDIST_ERR_INVALID, "sim run with unknown flag");
    redist_error_clear(&err);
    CHECK(redist_exec_sim_run(plan, b.src, b.dst, 0x10, NULL, &rep, NULL,
                              &err) == REDIST_ERR_INVALID,
          "sim run with unknown sim flag");
    redist_sim_t *w = NULL;
    redist_error_clear(&err);
    CHECK(redist_sim_create(0, 0, &w, &err) == REDIST_ERR_LIMIT && !w,
          "sim of 0 devices");
    CHECK(redist_sim_create(REDIST_SIM_MAX_DEVICES + 1, 0, &w, NULL) ==
              REDIST_ERR_LIMIT, "sim too large");
    redist_sim_create(2, 0, &w, NULL);
    CHECK(redist_sim_backend(w, 2) == NULL && redist_sim_backend(w, -1) ==
          NULL, "sim endpoint out of range");
    redist_sim_free(w);
    redist_sim_free(NULL);
    free_bufs(&b);
    redist_plan_free(plan);
}

/* Scratch figures and special plans. */
static void test_scratch(void)
{
    struct {
        const char *mesh, *shape, *dtype, *from, *fp, *to, *reduce;
        int slices_only;
    } cases[] = {
        /* no steps: one copy, no scratch */
        {"x=2,y=2", "8x8", "f32", "x|y", NULL, "x|y", NULL, 1},
        /* slices only: straight from src to dst */
        {"x=2,y=4", "16x16", "bf16", "|", NULL, "x|y", NULL, 1},
        {"x=2,y=4", "16x16", "c128", "|", NULL, "y,x|", NULL, 1},
        /* all_to_all with pack and unpack, src == dst size */
        {"x=2,y=3", "12x6x6", "i16", "|x|y", NULL, "y|x|", NULL, 0},
        /* src > dst: reduce_scatter then more */
        {"x=2,y=2", "8x8", "f16", "|", "x,y", "x|y", "max", 0},
        /* dst > src: all_gather */
        {"x=4", "8x8", "u8", "|x", NULL, "|", NULL, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        redist_plan_t *plan =
            make_plan(cases[c].mesh, cases[c].shape, cases[c].dtype,
                      cases[c].from, cases[c].fp, cases[c].to,
                      cases[c].reduce);
        const redist_spec_t *s = redist_plan_spec(plan);
        uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
        uint64_t M = S > T ? S : T;
        for (int preserve = 0; preserve < 2; preserve++) {
            redist_exec_options_t opts = {preserve ? REDIST_EXEC_PRESERVE_SRC
                                                   : 0};
            redist_exec_info_t info;
            redist_plan_exec_info(plan, NULL, &opts, &info, NULL);
            CHECK(info.bound_bytes == M && info.src_bytes == S &&
                      info.dst_bytes == T,
                  "case %zu: info sizes", c);
            CHECK(info.scratch_bytes ==
                      redist_plan_scratch_bytes(plan, NULL, &opts),
                  "case %zu: scratch_bytes shorthand", c);
            CHECK(info.scratch_bytes <= (preserve ? 2 * M : M),
                  "case %zu: scratch %llu over the bound", c,
                  (unsigned long long)info.scratch_bytes);
            if (cases[c].slices_only)
                CHECK(info.scratch_bytes == 0 && !info.writes_src &&
                          info.collectives == 0,
                      "case %zu: no scratch without collectives", c);
            if (preserve)
                CHECK(!info.writes_src, "case %zu: preserve", c);
            bufs b = alloc_bufs(plan);
            redist_exec_report_t rep;
            redist_error_t err;
            redist_error_clear(&err);
            redist_status_t st = redist_exec_sim_run(plan, b.src, b.dst, 0,
                                                     &opts, &rep, NULL, &err);
            CHECK(st == REDIST_OK && all_exact(plan, &b),
                  "case %zu: run (%s)", c, err.text);
            CHECK(rep.scratch_high_water <= info.scratch_bytes &&
                      rep.scratch_bytes == info.scratch_bytes,
                  "case %zu: high-water %llu > promise %llu", c,
                  (unsigned long long)rep.scratch_high_water,
                  (unsigned long long)info.scratch_bytes);
            free_bufs(&b);
        }
        redist_plan_free(plan);
    }
    /* the default mode spares the source when it costs nothing: a
     * gather along the leading dim lands in dst directly */
    redist_plan_t *plan = make_plan("x=4", "8x8", "f32", "x|", NULL, "|",
                                    NULL);
    redist_exec_info_t info;
    redist_plan_exec_info(plan, NULL, NULL, &info, NULL);
    CHECK(!info.writes_src && info.scratch_bytes == 0,
          "all_gather along the leading dim into dst: no scratch, source "
          "kept (scratch %llu, writes %d)",
          (unsigned long long)info.scratch_bytes, info.writes_src);
    redist_plan_free(plan);
}

/* A backend whose exchanges may only receive into its own scratch (what
 * a one-sided backend with a symmetric heap declares): every exchange
 * writes SA or SB, and the data still ends in DST. */
static void test_recv_in_scratch(void)
{
    const char *to[] = {"y|x", "|x,y", "x,y|", "|"};
    for (int c = 0; c < 4; c++) {
        redist_plan_t *plan = make_plan("x=2,y=3", "12x6", "f32", "x|y",
                                        NULL, to[c], NULL);
        for (unsigned flags = 0; flags <= REDIST_EXEC_PRESERVE_SRC;
             flags += REDIST_EXEC_PRESERVE_SRC) {
            rd_program p;
            int ok = rd_program_build(plan, RD_CAP_RECV_IN_SCRATCH, 0, flags,
                                      &p, NULL) == REDIST_OK;
            for (int k = 0; ok && k < p.npasses; k++) {
                if (p.pass[k].kind == RD_PASS_XCHG)
                    ok &= p.pass[k].out_buf == RD_BUF_SA ||
                          p.pass[k].out_buf == RD_BUF_SB;
                ok &= p.pass[k].in_buf != p.pass[k].out_buf ||
                      p.pass[k].inplace_ok;
                ok &= k + 1 == p.npasses || p.pass[k + 1].in_buf ==
                                                p.pass[k].out_buf;
            }
            ok &= p.npasses == 0 || p.pass[p.npasses - 1].out_buf ==
                                        RD_BUF_DST;
            ok &= p.scratch[0] + p.scratch[1] <=
                  2 * redist_plan_peak_bytes(plan);
            CHECK(ok, "receive-in-scratch assignment (to %s, flags %u)",
                  to[c], flags);
            rd_program_free(&p);
        }
        redist_plan_free(plan);
    }
}

int main(void)
{
    test_recv_in_scratch();
    test_arguments();
    test_scratch();
    test_collective_failures();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
