/*
 * `redistplan run --backend sim`: every device of the mesh in this
 * process (redist_exec_sim_run, one thread per device).  Each source
 * block is filled with the exact pattern of src/testing/pattern.h, the plan
 * runs `repeat` times (the best by the slowest device's time counts),
 * and every element of every device is checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct sim_buffers {
    int64_t n;
    void **src, **dst;
} sim_buffers;

static void buffers_free(sim_buffers *b)
{
    for (int64_t r = 0; r < b->n; r++) {
        if (b->src)
            free(b->src[r]);
        if (b->dst)
            free(b->dst[r]);
    }
    free(b->src);
    free(b->dst);
}

static int buffers_alloc(sim_buffers *b, int64_t D, uint64_t S, uint64_t T)
{
    b->n = D;
    b->src = calloc((size_t)D, sizeof *b->src);
    b->dst = calloc((size_t)D, sizeof *b->dst);
    if (!b->src || !b->dst)
        return -1;
    for (int64_t r = 0; r < D; r++) {
        b->src[r] = malloc((size_t)S);
        b->dst[r] = malloc((size_t)T);
        if (!b->src[r] || !b->dst[r])
            return -1;
    }
    return 0;
}

/* The best of r->repeat runs into *best (and its wall time). */
static redist_status_t runs(const cli_run *r, sim_buffers *b,
                            redist_exec_report_t *best, double *best_wall,
                            redist_error_t *err)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    uint64_t T = redist_spec_dst_bytes(s);
    redist_exec_report_t rep;
    memset(best, 0, sizeof *best);
    *best_wall = 0;
    for (uint64_t it = 0; it < r->repeat; it++) {
        for (int64_t d = 0; d < b->n; d++) {
            rd_pattern_fill(s, d, b->src[d]);
            memset(b->dst[d], 0xA5, (size_t)T);
        }
        double t0 = cli_now();
        redist_status_t st = redist_exec_sim_run(
            r->plan, b->src, b->dst, r->fused ? REDIST_SIM_FUSED : 0,
            &r->opts, &rep, NULL, err);
        double wall = cli_now() - t0;
        if (st)
            return st;
        if (it == 0 || rep.seconds < best->seconds) {
            *best = rep;
            *best_wall = wall;
        }
    }
    return REDIST_OK;
}

/* Check every element of every device: CLI_OK or CLI_MISMATCH. */
static int check(const cli_run *r, sim_buffers *b)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    int preserve = (r->opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    rd_mismatch mm;
    int bad = 0, src_bad = 0;
    if (r->corrupt >= 0 && r->corrupt < b->n) /* testing aid */
        ((unsigned char *)b->dst[r->corrupt])[redist_spec_dst_bytes(s) - 1] ^=
            0x5a;
    for (int64_t d = 0; d < b->n && !bad; d++) {
        bad = rd_pattern_check(s, d, b->dst[d], &mm);
        if (!bad && preserve)
            src_bad = bad = rd_pattern_check_src(s, d, b->src[d], &mm);
    }
    if (bad) {
        cli_run_mismatch(s, mm.device, &mm, src_bad);
        return CLI_MISMATCH;
    }
    cli_run_exact(s, (long long)b->n, "devices");
    return CLI_OK;
}

int cli_sim_run(const cli_run *r, redist_sim_t *world)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    int64_t D = redist_spec_num_devices(s);
    redist_exec_info_t info;
    redist_exec_report_t best;
    redist_error_t err;
    sim_buffers b = {0, NULL, NULL};
    double wall;
    char b1[64], b2[64], b3[64];
    int rc = CLI_BAD_INPUT;
    redist_error_clear(&err);
    if (redist_plan_exec_info(r->plan, redist_sim_backend(world, 0), &r->opts,
                              &info, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    if (buffers_alloc(&b, D, redist_spec_src_bytes(s),
                      redist_spec_dst_bytes(s))) {
        fprintf(stderr, "redistplan: run: out of memory for the simulated "
                        "buffers\n");
        goto out;
    }
    cli_run_head(r, r->fused ? "sim (fused)" : "sim", (long long)D,
                 "devices");
    if (runs(r, &b, &best, &wall, &err)) {
        cli_print_error(&err);
        fprintf(stderr, "redistplan: run: execution failed\n");
        goto out;
    }
    cli_run_buffers(s, "device");
    cli_fmt_bytes(best.scratch_high_water, b1, sizeof b1);
    cli_fmt_bytes(info.scratch_bytes, b2, sizeof b2);
    cli_fmt_bytes(info.bound_bytes, b3, sizeof b3);
    printf("  scratch   high-water %s per device (promised %s; max(src, "
           "dst) %s)\n", b1, b2, b3);
    cli_run_source((r->opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0,
                   best.writes_src);
    cli_fmt_bytes(best.recv_bytes, b1, sizeof b1);
    printf("  traffic   received %s per device (most)\n", b1);
    printf("  time      %.3f ms (slowest device%s), %.3f ms wall with "
           "threads\n",
           best.seconds * 1e3, r->repeat > 1 ? ", best of repeats" : "",
           wall * 1e3);
    rc = check(r, &b);
out:
    buffers_free(&b);
    return rc;
}
