/*
 * The report of a case: lines on rank 0's standard output, and one CSV
 * row per (case, implementation) with --csv (the columns: csv_header;
 * bench/report.py reads them).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

void csv_header(FILE *f)
{
    fprintf(f, "case,spec,devices,oversub,shape,dtype,src_bytes,dst_bytes,"
               "lack_bytes,uneven,impl,status,reps,median_s,min_s,max_s,q1_s,q3_s,gbps,"
               "own_bytes,rss_extra_bytes,peak_rss_bytes,pss_extra_bytes,"
               "faults_median,faults_max,plan_ops,plan_recv_bytes,plan_us,passes,exchanges,note\n");
}

void plan_ops(const redist_plan_t *plan, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int k = 0; k < redist_plan_num_steps(plan) && pos < n; k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        pos += (size_t)snprintf(buf + pos, n - pos, "%s%s", k ? "+" : "",
                                redist_op_name(v.op));
    }
    if (!buf[0])
        snprintf(buf, n, "none");
}

void shape_str(const redist_spec_t *s, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < redist_spec_ndims(s) && pos < n; i++)
        pos += (size_t)snprintf(buf + pos, n - pos, "%s%lld", i ? "x" : "",
                                (long long)redist_spec_shape(s)[i]);
}

/* The figures of one implementation in one case (max over ranks). */
typedef struct row {
    uint64_t own, extra, hwm, pss, flt, flt_max;
    double med, mn, mx, q1, q3, gbps; /* q1, q3: the quartiles */
} row_t;

/* Collective: every rank calls it for every implementation. */
static void row_figures(const bcase_t *c, impl_t *im, int reps, row_t *r)
{
    memset(r, 0, sizeof *r);
    if (im->on) {
        qsort(im->t, (size_t)reps, sizeof(double), cmp_double);
        r->med = reps % 2 ? im->t[reps / 2]
                          : 0.5 * (im->t[reps / 2 - 1] + im->t[reps / 2]);
        r->mn = im->t[0];
        r->mx = im->t[reps - 1];
        r->q1 = im->t[reps / 4];
        r->q3 = im->t[(3 * reps) / 4];
        r->own = umax_over_ranks(im->own);
        r->extra = umax_over_ranks(im->rss_extra);
        r->hwm = umax_over_ranks(im->hwm);
        r->pss = umax_over_ranks(im->pss);
        qsort(im->fl, (size_t)reps, sizeof(double), cmp_double);
        r->flt = (uint64_t)im->fl[reps / 2];
        r->flt_max = (uint64_t)im->fl[reps - 1];
    }
    r->gbps = r->med > 0 ? (double)c->x.lack_max / r->med * 1e-9 : 0;
}

static void say_row(const impl_t *im, const row_t *r)
{
    if (im->on) {
        char ob[32], eb[32];
        fmt_bytes(r->own, ob, sizeof ob);
        fmt_bytes(r->extra, eb, sizeof eb);
        say("   %-18s %10.3f ms  [%8.3f .. %8.3f]  %6.2f GB/s  own %10s  "
            "rss+ %10s  faults %6llu (max %llu)%s\n",
            im->impl->name, r->med * 1e3, r->mn * 1e3, r->mx * 1e3, r->gbps,
            ob, eb, (unsigned long long)r->flt, (unsigned long long)r->flt_max,
            im->failed ? "  WRONG RESULT" : "");
    } else if (strcmp(im->why, "not selected") != 0)
        say("   %-18s skipped: %s\n", im->impl->name, im->why);
}

static void csv_row(FILE *csv, const bcase_t *c, const impl_t *im,
                    const row_t *r, const char *label, const char *specname,
                    int reps)
{
    const char *status = !im->on ? "skip" : im->failed ? "FAIL" : "ok";
    char shp[128], ops[256];
    shape_str(c->spec, shp, sizeof shp);
    const redist_plan_t *plan = im->plan ? im->plan : c->plan;
    redist_plan_stats_t st;
    plan_ops(plan, ops, sizeof ops);
    redist_plan_stats(plan, &st);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(csv,
            "%s,%s,%d,%d,%s,%s,%llu,%llu,%llu,%d,%s,%s,%d,%.6e,%.6e,"
            "%.6e,%.6e,%.6e,%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%s,%llu,%.1f,%d,"
            "%lld,"
            "\"%s\"\n",
            label, specname, g_size, g_size > cores, shp,
            redist_dtype_name(c->dt), (unsigned long long)c->src_bytes,
            (unsigned long long)c->dst_bytes,
            (unsigned long long)c->x.lack_max,
            redist_spec_is_uneven(c->spec), im->impl->name, status,
            im->on ? reps : 0, r->med, r->mn, r->mx, r->q1, r->q3, r->gbps,
            (unsigned long long)r->own, (unsigned long long)r->extra,
            (unsigned long long)r->hwm, (unsigned long long)r->pss,
            (unsigned long long)r->flt, (unsigned long long)r->flt_max, ops,
            (unsigned long long)st.recv_bytes, c->plan_us, im->passes,
            im->exchanges, im->on ? "" : im->why);
}

/* The case's header lines: types, sizes, plans. */
static void say_case(const bcase_t *c, const char *specname)
{
    char sb[32], db[32], lb[32], pb[32], ops[256];
    redist_plan_stats_t pst;
    plan_ops(c->plan, ops, sizeof ops);
    redist_plan_stats(c->plan, &pst);
    fmt_bytes(c->src_bytes, sb, sizeof sb);
    fmt_bytes(c->dst_bytes, db, sizeof db);
    fmt_bytes(c->x.lack_max, lb, sizeof lb);
    fmt_bytes(pst.recv_bytes, pb, sizeof pb);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char tf[256], tt[256];
    redist_type_format(redist_spec_from(c->spec), c->mesh, tf, sizeof tf);
    redist_type_format(redist_spec_to(c->spec), c->mesh, tt, sizeof tt);
    say("\n== %s  (%s, %d ranks%s)\n   %s %s -> %s; per rank src %s, dst %s, "
        "must receive %s (max)\n   plan %s (%.1f us), receives %s per "
        "rank\n",
        c->name, specname, g_size, g_size > cores ? ", oversubscribed" : "",
        redist_dtype_name(c->dt), tf, tt, sb, db, lb, ops, c->plan_us, pb);
    if (c->plan_bytes) {
        char tops[256], tb[32];
        redist_plan_stats_t tst;
        plan_ops(c->plan_bytes, tops, sizeof tops);
        redist_plan_stats(c->plan_bytes, &tst);
        fmt_bytes(tst.recv_bytes, tb, sizeof tb);
        say("   bytes-objective plan %s, receives %s per rank\n", tops, tb);
    }
}

void report_case(bcase_t *c, const char *label, const char *specname,
                 const opts_t *o, FILE *csv)
{
    say_case(c, specname);
    for (int k = 0; k < bench_nimpls; k++) {
        impl_t *im = &c->im[k];
        row_t r;
        row_figures(c, im, o->reps, &r);
        say_row(im, &r);
        if (csv && g_rank == 0 && strcmp(im->why, "not selected") != 0)
            csv_row(csv, c, im, &r, label, specname, o->reps);
        if (im->failed)
            g_failures++;
    }
}
