/*
 * `redistplan calibrate`, rank 0's part after the measurements
 * (calibrate.c measures): the fit of alpha and beta per link level, the
 * cost model file (machine, method, measured levels, gamma) loaded back as
 * a self-check, the rank map of --rank-map-out, the warnings about how
 * the ranks were placed, and the table on standard output.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"

void cal_ascii(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

/* One JSON value on one line (steals v); NULL on failure. */
static char *dump_any(json_t *v)
{
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(6))
                : NULL;
    json_decref(v);
    return t;
}

static void fmt_size(uint64_t b, char *buf, size_t n)
{
    if (b >= 1024 && b % 1024 == 0)
        redist_bytes_format(b, buf, n);
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
}

/* Write `text` to `path` ("-": standard output). */
static int write_text(const char *path, const char *text, char *why,
                      size_t n)
{
    if (strcmp(path, "-") == 0) {
        fputs(text, stdout);
        fflush(stdout);
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    int bad = fputs(text, f) < 0;
    if (fclose(f) || bad) {
        snprintf(why, n, "%s", strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}

/* The rank map of where the ranks ran (doc/topology.md, one entry per
 * rank), for `redistplan topo/plan --rank-map`. */
static char *rank_map_json(char **names, int nhosts, const int64_t *hosts,
                           const int *pus, int n)
{
    size_t cap = 256 + (size_t)n * 48, pos = 0;
    for (int k = 0; k < nhosts; k++)
        cap += 2 * strlen(names[k]) + 8;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    cli_appendf(t, cap, &pos,
                "{\n  \"comment\": \"written by redistplan calibrate: where "
                "each rank of the job ran (logical PU indexes)\",\n"
                "  \"hosts\": [");
    for (int k = 0; k < nhosts; k++) {
        char *nm = dump_any(json_string(names[k]));
        if (!nm) {
            free(t);
            return NULL;
        }
        cli_appendf(t, cap, &pos, "%s%s", k ? ", " : "", nm);
        free(nm);
    }
    cli_appendf(t, cap, &pos, "],\n  \"ranks\": [");
    for (int k = 0; k < n; k++)
        cli_appendf(t, cap, &pos, "%s\n    {\"host\": %lld, \"pu\": %d}",
                    k ? "," : "", (long long)hosts[k], pus[k]);
    cli_appendf(t, cap, &pos, "\n  ]\n}\n");
    return t;
}

static void print_ranks(const cal_setup *s, const cal_rank *all, int n)
{
    printf("  %4s  %-16s %7s %5s %6s %5s %5s  %s\n", "rank", "host",
           "package", "numa", "cache", "core", "pu", "location");
    for (int r = 0; r < n; r++) {
        redist_topo_location_t l;
        if (redist_placement_location(s->pl, r, &l))
            break;
        printf("  %4d  %-16.64s %7d %5d %6d %5d %5d  %s\n", r,
               s->names[l.host], l.package, l.numa, l.cache, l.core, l.pu,
               all[r].bound ? "bound" : "not bound: last PU");
    }
}

/* Measured values -> model; warnings on stderr. */
static void fit(const double t[NL][2], const int pairs[NL][2],
                uint64_t large, redist_cost_model_t *m, int measured[NL])
{
    redist_cost_model_t def;
    redist_cost_model_default(&def);
    for (int l = 0; l < NL; l++) {
        measured[l] = pairs[l][0] >= 0;
        if (!measured[l])
            continue;
        const char *name = redist_link_name((redist_link_t)l);
        double ts = t[l][0], tl = t[l][1], L = (double)large;
        double alpha = ts, beta;
        if (!(alpha > 0) || !(alpha <= 1e3)) {
            fprintf(stderr,
                    "redistplan: calibrate: %s: the small message took %g "
                    "s, not a usable latency; alpha keeps its default "
                    "(%g s)\n",
                    name, ts, def.alpha[l]);
            alpha = def.alpha[l];
        }
        beta = (tl - alpha) / L;
        if (!(tl > alpha) || !(L / (tl - alpha) <= CAL_MAX_BW)) {
            if (tl > 0 && tl / L <= 1e3 && L / tl <= CAL_MAX_BW) {
                beta = tl / L;
                fprintf(stderr,
                        "redistplan: calibrate: %s: the %.0f B message "
                        "(%.3f us one way) is not measurably slower than "
                        "the small one (%.3f us): beta is its whole one-way "
                        "time per byte, %.4g s/B (%.2f GB/s); use a larger "
                        "--sizes LARGE\n",
                        name, L, tl * 1e6, ts * 1e6, beta, 1e-9 / beta);
            } else {
                beta = def.beta[l];
                fprintf(stderr,
                        "redistplan: calibrate: %s: the %.0f B message "
                        "took %g s, not a usable bandwidth; beta keeps its "
                        "default (%g s/B)\n",
                        name, L, tl, beta);
            }
        }
        if (!(beta <= 1e3))
            beta = def.beta[l];
        m->alpha[l] = alpha;
        m->beta[l] = beta;
    }
}

static int close_enough(double a, double b)
{
    return fabs(a - b) <= 1e-5 * fabs(b);
}

/* The fitted model: measured[l] for the levels of some pair. */
typedef struct cal_model {
    redist_cost_model_t def, m;
    int measured[NL], nmeasured;
} cal_model;

static void model(const cal_opts *o, const cal_result *res, cal_model *cm)
{
    redist_cost_model_default(&cm->def);
    cm->m = cm->def;
    fit(res->t, res->pairs, o->large, &cm->m, cm->measured);
    cm->nmeasured = 0;
    for (int l = 0; l < NL; l++)
        cm->nmeasured += cm->measured[l];
    if (res->gamma_s > 0 && res->gamma_s <= 1e3)
        cm->m.gamma = res->gamma_s;
    else
        fprintf(stderr,
                "redistplan: calibrate: the reduction could not be timed "
                "(%s); gamma keeps its default (%g s/B)\n",
                res->gamma_s < 0 ? "out of memory" : "no measurable time",
                cm->def.gamma);
}

/* "host, ... (2x CPU model)" */
static void describe_machine(const cal_setup *s, char *machine, size_t n)
{
    size_t pos = 0;
    machine[0] = '\0';
    for (int h = 0; h < s->nhosts && h < 4; h++)
        cli_appendf(machine, n, &pos, "%s%.64s", h ? ", " : "", s->names[h]);
    if (s->nhosts > 4)
        cli_appendf(machine, n, &pos, ", ... (%d hosts)", s->nhosts);
    if (s->model[0])
        cli_appendf(machine, n, &pos, " (%s%dx %s)",
                    s->nhosts > 1 ? "each " : "", s->npkg, s->model);
    cal_ascii(machine);
}

/* The "method" of the file: how every figure was measured. */
static void describe_method(const cal_opts *o, const cal_setup *s, int n,
                            const cal_result *res, const cal_model *cm,
                            char *method, size_t size)
{
    char sb[32], lb[32], gb[32];
    size_t pos = 0;
    fmt_size(o->small, sb, sizeof sb);
    fmt_size(o->large, lb, sizeof lb);
    fmt_size(res->gbytes, gb, sizeof gb);
    method[0] = '\0';
    cli_appendf(method, size, &pos,
                "MPI ping-pong (MPI_Send/MPI_Recv) between one pair of ranks "
                "per link level (");
    if (!cm->nmeasured)
        cli_appendf(method, size, &pos, "none: %d rank%s", n,
                    n == 1 ? "" : "s");
    for (int l = 0, k = 0; l < NL; l++)
        if (cm->measured[l])
            cli_appendf(method, size, &pos, "%s%s: ranks %d-%d",
                        k++ ? "; " : "", redist_link_name((redist_link_t)l),
                        res->pairs[l][0], res->pairs[l][1]);
    cli_appendf(method, size, &pos,
                "), %s and %s messages, minimum of %d round trips after %d "
                "warm-up ones; alpha = one-way time of the small message, "
                "beta = (one-way time of the large message - alpha) / its "
                "bytes; gamma: f64 sum of two %s buffers with the executor's "
                "reduction kernel on rank 0, minimum of %d; %d rank%s on %d "
                "host%s, %s",
                sb, lb, (int)o->reps, CAL_WARMUP, gb, (int)o->reps, n,
                n == 1 ? "" : "s", s->nhosts, s->nhosts == 1 ? "" : "s",
                s->all_bound ? (n == 1 ? "bound within one core"
                                       : "each bound within one core")
                             : (n == 1 ? "not bound to one core"
                                       : "not all bound to one core (their "
                                         "PU is where they last ran)"));
}

/* The file's text, one level per line as in doc/topology.md; NULL when
 * out of memory. */
static char *file_text(const char *machine, const char *method,
                       const cal_model *cm)
{
    char *full = NULL, *mj = dump_any(json_string(machine)),
         *tj = dump_any(json_string(method)),
         *gj = dump_any(json_real(cm->m.gamma)), *lj[NL];
    int ok = mj && tj && gj;
    for (int l = 0; l < NL; l++) {
        lj[l] = cm->measured[l]
                    ? dump_any(json_pack("{s:f,s:f}", "alpha",
                                         cm->m.alpha[l], "beta",
                                         cm->m.beta[l]))
                    : NULL;
        ok &= !cm->measured[l] || lj[l] != NULL;
    }
    size_t cap = 4096 + strlen(method) + strlen(machine) * 2, pos = 0;
    if (ok && (full = malloc(cap))) {
        cli_appendf(full, cap, &pos,
                    "{\n  \"machine\": %s,\n  \"method\": %s,\n"
                    "  \"links\": {",
                    mj, tj);
        for (int l = 0, k = 0; l < NL; l++)
            if (cm->measured[l])
                cli_appendf(full, cap, &pos, "%s\n    \"%s\": %s",
                            k++ ? "," : "",
                            redist_link_name((redist_link_t)l), lj[l]);
        cli_appendf(full, cap, &pos, "%s},\n  \"gamma\": %s\n}\n",
                    cm->nmeasured ? "\n  " : "", gj);
    }
    free(mj);
    free(tj);
    free(gj);
    for (int l = 0; l < NL; l++)
        free(lj[l]);
    return full;
}

/* Write the file and load it back: it must hold what was measured. */
static int write_checked(const cal_opts *o, const char *full,
                         const cal_model *cm)
{
    char why[256];
    if (write_text(o->out, full, why, sizeof why)) {
        fprintf(stderr, "redistplan: calibrate: cannot write %s: %s\n",
                o->out, why);
        return CLI_BAD_INPUT;
    }
    redist_cost_model_t back = cm->def;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st =
        strcmp(o->out, "-") == 0
            ? redist_cost_model_load_buffer(full, strlen(full), "<stdout>",
                                            &back, &err)
            : redist_cost_model_load_file(o->out, &back, &err);
    int same = !st && close_enough(back.gamma, cm->m.gamma);
    for (int l = 0; l < NL && same; l++)
        same = close_enough(back.alpha[l], cm->m.alpha[l]) &&
               close_enough(back.beta[l], cm->m.beta[l]);
    if (same)
        return CLI_OK;
    if (st)
        cli_print_error(&err);
    fprintf(stderr, "redistplan: calibrate: %s does not load back as written "
                    "(a bug)\n",
            o->out);
    return CLI_BAD_INPUT;
}

/* What the placement of the ranks makes doubtful. */
static void warnings(const cal_opts *o, const cal_setup *s, int n,
                     const cal_result *res, const cal_model *cm)
{
    for (int l = 0; l < NL; l++)
        if (cm->measured[l] && res->same_pu[l])
            fprintf(stderr,
                    "redistplan: calibrate: %s: ranks %d and %d ran on the "
                    "same PU (no two ranks at this level on distinct ones): "
                    "the figures measure time-sharing, not a link; bind "
                    "one rank per core (mpirun --bind-to core)\n",
                    redist_link_name((redist_link_t)l), res->pairs[l][0],
                    res->pairs[l][1]);
    if (n > 1 && !s->all_bound)
        fprintf(stderr,
                "redistplan: calibrate: not every rank is bound to one core "
                "(mpirun binds none when oversubscribed, and to a socket "
                "above 2 ranks): a rank's PU is where it last ran, so the "
                "levels may not be the ones the pairs used while measuring; "
                "run with mpirun --bind-to core\n");
    if (n == 1)
        fprintf(stderr,
                "redistplan: calibrate: no link level could be measured "
                "with one rank (run it under mpirun -np 2 or more, e.g. "
                "mpirun -np 4 --bind-to core redistplan calibrate); %s "
                "holds gamma only, every level keeps its default\n",
                strcmp(o->out, "-") ? o->out : "the output");
}

/* The table on standard output. */
static void print_table(const cal_opts *o, const cal_setup *s,
                        const cal_rank *all, int n, const char *machine,
                        const cal_result *res, const cal_model *cm)
{
    char sb[32], lb[32], gb[32];
    fmt_size(o->small, sb, sizeof sb);
    fmt_size(o->large, lb, sizeof lb);
    fmt_size(res->gbytes, gb, sizeof gb);
    printf("calibrate: %d rank%s on %d host%s: %s\n", n, n == 1 ? "" : "s",
           s->nhosts, s->nhosts == 1 ? "" : "s", machine);
    if (n <= 16)
        print_ranks(s, all, n);
    printf("  %s and %s messages, minimum of %d round trips (one-way time "
           "= half)\n",
           sb, lb, (int)o->reps);
    printf("  %-8s %-9s %11s %17s\n", "level", "pair", "alpha (us)",
           "bandwidth (GB/s)");
    for (int l = 0; l < NL; l++) {
        const char *name = redist_link_name((redist_link_t)l);
        if (cm->measured[l]) {
            char pair[32];
            snprintf(pair, sizeof pair, "%d-%d", res->pairs[l][0],
                     res->pairs[l][1]);
            printf("  %-8s %-9s %11.2f %17.2f\n", name, pair,
                   cm->m.alpha[l] * 1e6, 1e-9 / cm->m.beta[l]);
        } else {
            printf("  %-8s %-9s %11.2f %17.2f  (no pair: default)\n", name,
                   "-", cm->def.alpha[l] * 1e6, 1e-9 / cm->def.beta[l]);
        }
    }
    printf("  reductions %.2f GB/s (f64 sum of two %s buffers)\n",
           1e-9 / cm->m.gamma, gb);
    printf("wrote %s; plan with it: redistplan plan SPEC --objective time "
           "--cost %s\n",
           o->out, o->out);
    if (o->rank_map)
        printf("wrote %s (where the ranks ran): redistplan topo SPEC "
               "--rank-map %s --cost %s\n",
               o->rank_map, o->rank_map, o->out);
}

int cal_report(const cal_opts *o, const cal_setup *s, const cal_rank *all,
               int n, const cal_result *res)
{
    cal_model cm;
    char machine[512], method[2048], why[256];
    model(o, res, &cm);
    describe_machine(s, machine, sizeof machine);
    describe_method(o, s, n, res, &cm, method, sizeof method);
    char *full = file_text(machine, method, &cm);
    if (!full) {
        fprintf(stderr, "redistplan: calibrate: out of memory\n");
        return CLI_BAD_INPUT;
    }
    int rc = write_checked(o, full, &cm);
    free(full);
    if (rc)
        return rc;
    if (o->rank_map) {
        char *rm = rank_map_json(s->names, s->nhosts, s->hosts, s->pus, n);
        if (!rm || write_text(o->rank_map, rm, why, sizeof why)) {
            fprintf(stderr, "redistplan: calibrate: cannot write %s: %s\n",
                    o->rank_map, rm ? why : "out of memory");
            rc = CLI_BAD_INPUT;
        }
        free(rm);
        if (rc)
            return rc;
    }
    warnings(o, s, n, res, &cm);
    if (!o->quiet && strcmp(o->out, "-") != 0)
        print_table(o, s, all, n, machine, res, &cm);
    return CLI_OK;
}
