/*
 * redistplan check SPEC... [--junit FILE] [cost options]: validate spec
 * files and their `expect` blocks against the plan of the objective the
 * cost options choose (--objective, as `plan` has it).  One PASS/FAIL/ERROR
 * line per spec (a spec without `expect` passes when a plan exists, and
 * says so), then "N passed, M failed", with ", E errors" when specs could
 * not be checked (bad input).  Exit 0 all pass, 1 a failure, 2 bad input.
 * --junit: one testcase per spec, named by the spec's name, with its time;
 * the file is checked for writing before any spec is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"


typedef struct {
    const char *path;
    char name[256]; /* the spec's name; its path when it has none */
    int outcome;    /* 0 pass, 1 fail, 2 error */
    double seconds;
    char reason[1024];
} result_t;

static int has_expect(const redist_expect_t *ex)
{
    return ex->has_max_collectives || ex->has_max_recv_bytes ||
           ex->has_max_peak_bytes || ex->has_ops || ex->has_infeasible;
}

/* The expectations the plan misses, "; "-separated (empty: none). */
static void judge(const redist_plan_t *plan, const redist_expect_t *ex,
                  char *out, size_t size)
{
    size_t pos = 0;
    redist_plan_stats_t s;
    redist_plan_stats(plan, &s);
    out[0] = '\0';
    if (ex->has_max_collectives && s.collectives > ex->max_collectives)
        cli_appendf(out, size, &pos, "%s%d collectives > max_collectives %lld",
                    pos ? "; " : "", s.collectives,
                    (long long)ex->max_collectives);
    if (ex->has_max_recv_bytes && s.recv_bytes > ex->max_recv_bytes)
        cli_appendf(out, size, &pos, "%srecv %llu bytes > max_recv_bytes %llu",
                    pos ? "; " : "", (unsigned long long)s.recv_bytes,
                    (unsigned long long)ex->max_recv_bytes);
    if (ex->has_max_peak_bytes && s.peak_bytes > ex->max_peak_bytes)
        cli_appendf(out, size, &pos, "%speak %llu bytes > max_peak_bytes %llu",
                    pos ? "; " : "", (unsigned long long)s.peak_bytes,
                    (unsigned long long)ex->max_peak_bytes);
    if (!ex->has_ops)
        return;
    int n = redist_plan_num_steps(plan), same = n == ex->nops;
    for (int i = 0; same && i < n; i++) {
        redist_step_view_t v;
        redist_plan_step(plan, i, &v);
        same = strcmp(redist_op_name(v.op), ex->ops[i]) == 0;
    }
    if (same)
        return;
    cli_appendf(out, size, &pos, "%sops are [", pos ? "; " : "");
    for (int i = 0; i < n; i++) {
        redist_step_view_t v;
        redist_plan_step(plan, i, &v);
        cli_appendf(out, size, &pos, "%s%s", i ? ", " : "",
                    redist_op_name(v.op));
    }
    cli_appendf(out, size, &pos, "], expected [");
    for (int i = 0; i < ex->nops; i++)
        cli_appendf(out, size, &pos, "%s%s", i ? ", " : "", ex->ops[i]);
    cli_appendf(out, size, &pos, "]");
}

/* The outcome of a spec whose expect block says no plan exists. */
static void judge_infeasible(redist_status_t st, const redist_plan_t *plan,
                             const redist_error_t *err, result_t *r)
{
    char buf[1024];
    if (st == REDIST_ERR_INFEASIBLE) {
        snprintf(r->reason, sizeof r->reason, "no plan, as expected (%s)",
                 err->text);
        return;
    }
    r->outcome = 1;
    if (st == REDIST_OK)
        snprintf(r->reason, sizeof r->reason,
                 "expected no plan, but a plan of %d steps exists",
                 redist_plan_num_steps(plan));
    else
        snprintf(r->reason, sizeof r->reason, "planning failed: %s",
                 redist_error_format(err, buf, sizeof buf));
}

/* A plan that meets the expect block: what it is. */
static void passed(const redist_plan_t *plan, const redist_expect_t *ex,
                   const cli_cost_args *cost, result_t *r)
{
    redist_plan_stats_t s;
    redist_plan_stats(plan, &s);
    int n = snprintf(r->reason, sizeof r->reason,
                     "%s%d collective%s, recv %llu bytes, peak %llu bytes%s",
                     has_expect(ex) ? "" : "no expect: a plan exists: ",
                     s.collectives, s.collectives == 1 ? "" : "s",
                     (unsigned long long)s.recv_bytes,
                     (unsigned long long)s.peak_bytes,
                     s.memory_efficient ? "" : " (bound not met)");
    size_t pos = n > 0 && (size_t)n < sizeof r->reason ? (size_t)n : 0;
    if (cost->objective == REDIST_OBJECTIVE_BYTES)
        cli_appendf(r->reason, sizeof r->reason, &pos, "; objective bytes");
    else
        cli_appendf(r->reason, sizeof r->reason, &pos,
                    "; objective time, %.2f us modelled", s.time_s * 1e6);
}

/* A spec with "arrays": the set must plan under its budget (its rounds
 * for runs that keep the sources with --preserve-src: `preserve`), and
 * every array's plan must verify and meet the array's expect block. */
static void check_set(const char *path, const redist_arrays_t *arrays,
                      const redist_plan_options_t *opts, int preserve,
                      result_t *r)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_plan_set_t *set = NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0};
    char buf[1024];
    if (redist_arrays_name(arrays)[0])
        snprintf(r->name, sizeof r->name, "%s", redist_arrays_name(arrays));
    if (redist_plan_set_create(arrays, opts, NULL, &eo, &set, &err)) {
        r->outcome = 1;
        cli_error_source(&err, path);
        snprintf(r->reason, sizeof r->reason, "no plan: %s",
                 redist_error_format(&err, buf, sizeof buf));
        return;
    }
    for (int i = 0; i < redist_plan_set_num_arrays(set) && !r->outcome; i++) {
        const redist_plan_t *plan = redist_plan_set_plan(set, i);
        redist_expect_t ex;
        redist_verify_result_t vr;
        char miss[900];
        redist_spec_expect(redist_plan_spec(plan), &ex);
        const char *nm = redist_spec_name(redist_plan_spec(plan));
        if (redist_plan_verify(plan, &vr, &err)) {
            r->outcome = 1;
            snprintf(r->reason, sizeof r->reason,
                     "array \"%.60s\": the verifier rejects the plan: %.900s",
                     nm, redist_error_format(&err, buf, sizeof buf));
        } else if (ex.has_infeasible && ex.infeasible) {
            r->outcome = 1;
            snprintf(r->reason, sizeof r->reason,
                     "array \"%.60s\": expected no plan, but one exists", nm);
        } else {
            judge(plan, &ex, miss, sizeof miss);
            if (miss[0]) {
                r->outcome = 1;
                snprintf(r->reason, sizeof r->reason, "array \"%.60s\": %s",
                         nm, miss);
            }
        }
    }
    if (!r->outcome) {
        redist_plan_set_stats_t t;
        redist_plan_set_stats(set, &t);
        size_t pos = 0;
        cli_appendf(r->reason, sizeof r->reason, &pos,
                    "%d arrays in %d round%s%s, scratch %llu bytes per "
                    "device",
                    t.narrays, t.nrounds, t.nrounds == 1 ? "" : "s",
                    preserve ? " (--preserve-src)" : "",
                    (unsigned long long)t.scratch_bytes);
        if (t.budget_bytes != REDIST_NO_BUDGET)
            cli_appendf(r->reason, sizeof r->reason, &pos,
                        " (budget %llu)", (unsigned long long)t.budget_bytes);
        cli_appendf(r->reason, sizeof r->reason, &pos,
                    "; every array's plan verified and meets its expect%s",
                    t.memory_efficient ? "" : " (bound not met)");
    }
    redist_plan_set_free(set);
}

static void check_one(const char *path, const cli_cost_args *cost,
                      int preserve, result_t *r)
{
    redist_error_t err;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_expect_t ex;
    char buf[1024];
    redist_plan_options_t opts = {0};
    redist_cost_model_t model;
    r->path = path;
    r->outcome = 0;
    r->reason[0] = '\0';
    snprintf(r->name, sizeof r->name, "%s", path);
    redist_error_clear(&err);
    redist_arrays_t *arrays = NULL;
    redist_status_t st = redist_arrays_load_file(path, 0, &arrays, &err);
    if (!st && redist_arrays_is_set(arrays)) {
        if (cli_plan_options_err("check", cost,
                                 redist_spec_mesh(redist_arrays_get(arrays, 0)),
                                 &model, &opts, &err)) {
            r->outcome = 2;
            snprintf(r->reason, sizeof r->reason, "%s",
                     redist_error_format(&err, buf, sizeof buf));
        } else {
            check_set(path, arrays, &opts, preserve, r);
        }
        redist_arrays_free(arrays);
        return;
    }
    redist_arrays_free(arrays);
    redist_error_clear(&err);
    st = redist_spec_load_file(path, 0, &spec, &err);
    if (!st && redist_spec_name(spec)[0])
        snprintf(r->name, sizeof r->name, "%s", redist_spec_name(spec));
    if (st || cli_plan_options_err("check", cost, redist_spec_mesh(spec),
                                   &model, &opts, &err)) {
        r->outcome = 2;
        snprintf(r->reason, sizeof r->reason, "%s",
                 redist_error_format(&err, buf, sizeof buf));
        redist_spec_free(spec);
        return;
    }
    redist_spec_expect(spec, &ex);
    st = redist_plan_create(spec, &opts, &plan, &err);
    redist_verify_result_t vr;
    if (ex.has_infeasible && ex.infeasible) {
        judge_infeasible(st, plan, &err, r);
    } else if (st) {
        r->outcome = 1;
        cli_error_source(&err, path);
        snprintf(r->reason, sizeof r->reason, "no plan: %s",
                 redist_error_format(&err, buf, sizeof buf));
    } else if (redist_plan_verify(plan, &vr, &err)) {
        r->outcome = 1;
        snprintf(r->reason, sizeof r->reason, "the verifier rejects the "
                 "plan: %s",
                 redist_error_format(&err, buf, sizeof buf));
    } else {
        judge(plan, &ex, r->reason, sizeof r->reason);
        if (r->reason[0])
            r->outcome = 1;
        else
            passed(plan, &ex, cost, r);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
}

/* Text as an XML attribute or element: made safe as on the terminal
 * (XML 1.0 cannot hold most control characters, even as &#1;), then the
 * markup characters escaped. */
static void xml_escape(FILE *f, const char *text)
{
    char safe[4 * sizeof ((result_t *)0)->reason];
    cli_sanitize(text, safe, sizeof safe);
    for (const char *s = safe; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

static int write_junit(const char *file, const result_t *res, int n)
{
    FILE *f = fopen(file, "w");
    if (!f)
        return -1;
    int fails = 0, errors = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        fails += res[i].outcome == 1;
        errors += res[i].outcome == 2;
        total += res[i].seconds;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<testsuites><testsuite name=\"redistplan check\" tests=\"%d\" "
            "failures=\"%d\" errors=\"%d\" time=\"%.6f\">\n",
            n, fails, errors, total);
    for (int i = 0; i < n; i++) {
        fprintf(f, "  <testcase classname=\"redistplan.check\" name=\"");
        xml_escape(f, res[i].name);
        fprintf(f, "\" file=\"");
        xml_escape(f, res[i].path);
        fprintf(f, "\" time=\"%.6f\">", res[i].seconds);
        if (res[i].outcome) {
            fprintf(f, "<%s message=\"",
                    res[i].outcome == 1 ? "failure" : "error");
            xml_escape(f, res[i].reason);
            fprintf(f, "\"/>");
        } else {
            fprintf(f, "<system-out>");
            xml_escape(f, res[i].reason);
            fprintf(f, "</system-out>");
        }
        fprintf(f, "</testcase>\n");
    }
    fprintf(f, "</testsuite></testsuites>\n");
    return fclose(f) ? -1 : 0;
}

static int junit_error(const char *junit, const char *why)
{
    char safe[1024];
    cli_sanitize(junit, safe, sizeof safe);
    fprintf(stderr, "redistplan: check: --junit %s: cannot write: %s\n", safe,
            why);
    return CLI_BAD_INPUT;
}

/* Check every spec, print a line each and the summary, write the JUnit
 * report; the exit code. */
static int check_all(const char **paths, int np, result_t *res,
                     const char *junit, const cli_cost_args *cost,
                     int preserve)
{
    int passed = 0, failed = 0, errors = 0;
    for (int i = 0; i < np; i++) {
        const result_t *r = &res[i];
        double t0 = cli_now();
        check_one(paths[i], cost, preserve, &res[i]);
        res[i].seconds = cli_now() - t0;
        const char *tag = r->outcome == 0 ? "PASS" : r->outcome == 1 ? "FAIL"
                                                                     : "ERROR";
        char path[1024], reason[4 * sizeof r->reason];
        cli_sanitize(r->path, path, sizeof path);
        cli_sanitize(r->reason, reason, sizeof reason);
        printf("%s %s: %s\n", tag, path, reason);
        passed += r->outcome == 0;
        failed += r->outcome == 1;
        errors += r->outcome == 2;
    }
    printf("%d passed, %d failed", passed, failed);
    if (errors)
        printf(", %d error%s (not checked: bad input)", errors,
               errors == 1 ? "" : "s");
    printf("\n");
    int rc = errors ? CLI_BAD_INPUT : failed ? CLI_FAIL : CLI_OK;
    if (junit && write_junit(junit, res, np))
        rc = junit_error(junit, strerror(errno));
    return rc;
}

int cli_cmd_check(const cli_command *self, int argc, char **argv)
{
    const char *junit = NULL;
    int preserve = 0; /* sets: rounds for runs that keep the sources */
    cli_cost_args cost;
    char why[256];
    const cli_opt own[] = {{.name = "--junit", .kind = CLI_STR, .out = &junit},
                           {.name = "--preserve-src", .kind = CLI_FLAG,
                            .out = &preserve},
                           {.name = NULL}};
    const char **paths = calloc((size_t)argc, sizeof *paths);
    result_t *res = calloc((size_t)argc, sizeof *res);
    int rc = CLI_BAD_INPUT;
    cli_cmdline c = {.cmd = self->name, .own = own, .cost = &cost,
                     .pos = paths, .maxpos = argc,
                     .pos_words = "SPEC files"};
    if (!paths || !res)
        fprintf(stderr, "redistplan: out of memory\n");
    else if (cli_parse(&c, argc, argv) != CLI_OK)
        rc = CLI_BAD_INPUT;
    else if (c.npos == 0)
        fprintf(stderr, "redistplan: check: no spec files given\n");
    else if (junit && cli_check_writable(junit, why, sizeof why))
        rc = junit_error(junit, why);
    else
        rc = check_all(paths, c.npos, res, junit, &cost, preserve);
    free(res);
    free(paths);
    return rc;
}
