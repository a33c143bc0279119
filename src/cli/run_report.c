/* The report of `redistplan run` (run.h). */
#include <stdio.h>
#include <string.h>

#include "run.h"

void cli_run_head(const cli_run *r, const char *backend, long long n,
                  const char *what)
{
    const redist_plan_t *plan = r->plan;
    const int64_t *orig = r->orig;
    const redist_spec_t *s = redist_plan_spec(plan);
    const char *name = redist_spec_name(s);
    int nd = redist_spec_ndims(s);
    char sh[256], sh0[256], ops[512], b1[64];
    redist_shape_format(redist_spec_shape(s), nd, sh, sizeof sh);
    printf("run %s: backend %s, %lld %s, %s%s, reduce %s\n",
           name[0] ? name : "(unnamed)", backend, n, what,
           redist_dtype_name(redist_spec_dtype(s)), sh,
           redist_reduce_name(redist_spec_reduce(s)));
    if (memcmp(orig, redist_spec_shape(s), sizeof(int64_t) * (size_t)nd)) {
        redist_shape_format(orig, nd, sh0, sizeof sh0);
        printf("  shape     %s of the spec runs as %s%s\n", sh0, sh,
               r->shrink ? " (--shrink: same steps, every type divisible)" : "");
    }
    size_t pos = 0;
    int steps = redist_plan_num_steps(plan);
    ops[0] = '\0';
    for (int k = 0; k < steps && pos + 1 < sizeof ops; k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        pos += (size_t)snprintf(ops + pos, sizeof ops - pos, "%s%s",
                                k ? ", " : "", redist_op_name(v.op));
    }
    if (steps == 0)
        snprintf(ops, sizeof ops, "(no steps: a copy)");
    redist_plan_stats_t stats;
    redist_plan_stats(plan, &stats);
    cli_fmt_bytes(stats.peak_bytes, b1, sizeof b1);
    printf("  plan      %s (%d collective%s); peak %s per device\n", ops,
           stats.collectives, stats.collectives == 1 ? "" : "s", b1);
}

void cli_run_buffers(const redist_spec_t *s, const char *unit)
{
    char b1[64], b2[64];
    cli_fmt_bytes(redist_spec_src_bytes(s), b1, sizeof b1);
    cli_fmt_bytes(redist_spec_dst_bytes(s), b2, sizeof b2);
    printf("  buffers   src %s, dst %s per %s\n", b1, b2, unit);
}

void cli_rank_result_fill(cli_rank_result *r, const redist_exec_report_t *best,
                          const redist_spec_t *s, int64_t rank,
                          const void *src, const void *dst, int preserve)
{
    memset(r, 0, sizeof *r);
    r->best = *best;
    r->bad = rd_pattern_check(s, rank, dst, &r->mm);
    if (!r->bad && preserve)
        r->src_bad = r->bad = rd_pattern_check_src(s, rank, src, &r->mm);
    if (!r->bad && r->best.scratch_high_water > r->best.scratch_bytes)
        r->bad = CLI_OVER_PROMISE;
}

void cli_run_maxima(const cli_rank_result *all, int n, cli_run_max *m)
{
    memset(m, 0, sizeof *m);
    m->over = -1;
    for (int r = 0; r < n; r++) {
        const redist_exec_report_t *b = &all[r].best;
        if (b->scratch_bytes > m->promise)
            m->promise = b->scratch_bytes;
        if (b->scratch_high_water > b->scratch_bytes && m->over < 0)
            m->over = r;
        if (b->seconds > m->seconds) {
            m->seconds = b->seconds;
            m->worst = r;
        }
        if (b->scratch_high_water > m->high)
            m->high = b->scratch_high_water;
        if (b->recv_bytes > m->recv)
            m->recv = b->recv_bytes;
        m->writes |= b->writes_src;
    }
}

void cli_run_rank_table(const redist_spec_t *spec, const cli_rank_result *all,
                        int n, const char *unit)
{
    if (n > 64)
        return;
    printf("  %4s  coords%*s time ms   scratch high-water   received bytes  "
           "result\n",
           unit, 10, "");
    for (int r = 0; r < n; r++) {
        char co[128];
        cli_fmt_device(spec, r, co, sizeof co);
        const redist_exec_report_t *b = &all[r].best;
        printf("  %4d  %-16s %8.3f   %18llu   %14llu  %s\n", r, co,
               b->seconds * 1e3, (unsigned long long)b->scratch_high_water,
               (unsigned long long)b->recv_bytes,
               all[r].bad ? "MISMATCH" : "exact");
    }
}

void cli_run_source(int preserve, int writes)
{
    printf("  source    %s\n",
           preserve ? "preserved (--preserve-src)"
           : writes ? "used as work space (contents now unspecified)"
                    : "not written");
}

void cli_run_traffic_time(const cli_run_max *m, const char *unit,
                          double best, double wall, int repeated)
{
    char b[64];
    cli_fmt_bytes(m->recv, b, sizeof b);
    printf("  traffic   received %s per %s (most)\n", b, unit);
    printf("  time      %.3f ms (slowest %s: %d%s), %.3f ms wall\n",
           best * 1e3, unit, m->worst, repeated ? ", best of repeats" : "",
           wall * 1e3);
}

void cli_run_mismatch(const redist_spec_t *s, int64_t device,
                      const rd_mismatch *mm, int src_bad)
{
    int nd = redist_spec_ndims(s);
    char where[256], lc[128], gc[128];
    cli_fmt_device(s, device, where, sizeof where);
    redist_shape_format(mm->local, nd, lc, sizeof lc);
    redist_shape_format(mm->global, nd, gc, sizeof gc);
    if (src_bad)
        printf("  result    SOURCE MODIFIED despite --preserve-src:\n");
    printf("  result    MISMATCH on device %lld (%s): local index %llu %s, "
           "global index %llu %s: expected %s, got %s\n",
           (long long)device, where, (unsigned long long)mm->local_index, lc,
           (unsigned long long)mm->global_index, gc, mm->expected, mm->got);
}

void cli_run_exact(const redist_spec_t *s, long long n, const char *units)
{
    long long per = (long long)(redist_spec_dst_bytes(s) /
                                redist_dtype_size(redist_spec_dtype(s)));
    printf("  result    exact: %lld %s, %lld elements checked\n", n, units,
           n * per);
}

void cli_run_result(const redist_spec_t *s, const cli_rank_result *all, int n,
                    const char *units)
{
    for (int r = 0; r < n; r++)
        if (all[r].bad == CLI_OVER_PROMISE) {
            char where[256];
            cli_fmt_device(s, r, where, sizeof where);
            printf("  result    SCRATCH OVER ITS PROMISE on device %d (%s): "
                   "high-water %llu B, promised %llu B\n",
                   r, where,
                   (unsigned long long)all[r].best.scratch_high_water,
                   (unsigned long long)all[r].best.scratch_bytes);
            return;
        } else if (all[r].bad) {
            cli_run_mismatch(s, r, &all[r].mm, all[r].src_bad);
            return;
        }
    cli_run_exact(s, n, units);
}
