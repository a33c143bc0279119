/*
 * redistplan - plan, check and verify array redistributions.
 *
 *   redistplan plan SPEC [--json] [--no-grid] [--max-peak BYTES] ...
 *   redistplan check SPEC... [--junit FILE] [--objective time|bytes]
 *   redistplan verify SPEC PLAN.json [--objective time|bytes] ...
 *
 * Exit codes follow FORMATS.md section 5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "cli.h"

static const char *usage_text =
    "usage: redistplan COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  plan SPEC [--json] [--no-grid] [--max-peak BYTES] [--max-states N]\n"
    "            [--objective time|bytes] [--cost FILE] [--axis-links "
    "AXIS=LEVEL,...]\n"
    CLI_TOPO_PLAN_OPTIONS
    "      print the optimal plan.  --objective time (the default): minimal\n"
    "      peak, then modelled time under the built-in cost model (or\n"
    "      --cost, --axis-links, a topology), then collectives;\n"
    "      every step, the direct exchange included.  --objective bytes\n"
    "      (version 1): minimal peak, then bytes, then collectives, six\n"
    "      steps (no exchange).  LEVEL: cache numa package node network\n"
    CLI_TOPO_PLAN_USAGE
    "  check SPEC... [--junit FILE] [--objective time|bytes]\n"
    "      validate specs and their expect blocks against the plan of the\n"
    "      objective (time by default); 'N passed, M failed'\n"
    "  verify SPEC PLAN.json [--objective time|bytes] [--cost FILE]\n"
    "         [--axis-links AXIS=LEVEL,...]\n"
    "      replay a plan step by step; report peak, bytes, modelled time,\n"
    "      memory efficiency, and whether it is optimal for the objective\n"
    "      (time by default, as `plan`)\n"
    "%s"
    CLI_TOPO_USAGE
    CLI_CALIBRATE_USAGE
    "\n"
    "a SPEC is a JSON file (see README), or '-' with the inline options:\n"
    "  --mesh data=2,model=4      axes in order (ranks are row-major)\n"
    "  --shape 4096x16384         global shape\n"
    "  --dtype bf16               f16 bf16 f32 f64 i8..i64 u8..u64 c64 c128 "
    "(default f32)\n"
    "  --from 'data|model'        dims separated by '|', axes of a dim\n"
    "  --to 'data,model|'           major first separated by ','\n"
    "  --from-partial x,y         partial axes of the source (and "
    "--to-partial)\n"
    "  --reduce sum               sum max min prod (default sum)\n"
    "  --name NAME\n"
    "example:\n"
    "  redistplan plan - --mesh x=2,y=4 --shape 1024x512 --from 'x,y|' "
    "--to '|x,y'\n"
    "\n"
    "exit codes: 0 ok; 1 check/verify failure or data mismatch; 2 bad "
    "input;\n"
    "            3 no plan exists (plan)\n";

static const char *extra_usage = "";

void cli_set_extra_usage(const char *text) { extra_usage = text; }

void cli_usage(FILE *f) { fprintf(f, usage_text, extra_usage); }

void cli_print_error(const redist_error_t *err)
{
    char buf[1024], safe[2048];
    cli_sanitize(redist_error_format(err, buf, sizeof buf), safe,
                 sizeof safe);
    fprintf(stderr, "redistplan: %s\n", safe);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) { /* digits only: strtoull takes " -1" for 2^64-1 */
        uint64_t d = (uint64_t)(*s - '0');
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* An unsigned option value, or a message naming the option. */
static int u64_option(const char *opt, const char *what, const char *s,
                      uint64_t *out)
{
    char safe[128];
    if (!cli_parse_u64(s, out))
        return 0;
    cli_sanitize(s, safe, sizeof safe);
    fprintf(stderr, "redistplan: %s: \"%s\" is not %s (digits only, no "
                    "sign, space or suffix; at most 18446744073709551615)\n",
            opt, safe, what);
    return -1;
}

/* Options shared by the commands that read one spec. */
int cli_spec_option(cli_spec_args *a, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--mesh",  "--shape",        "--dtype",
                                        "--from",  "--from-partial", "--to",
                                        "--to-partial", "--reduce", "--name"};
    const char **slots[] = {&a->mesh,    &a->shape,        &a->dtype,
                            &a->from,    &a->from_partial, &a->to,
                            &a->to_partial, &a->reduce,    &a->name};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t n = strlen(names[k]);
        if (strncmp(argv[*i], names[k], n) != 0)
            continue;
        if (argv[*i][n] == '=') {
            *slots[k] = argv[*i] + n + 1;
            return 1;
        }
        if (argv[*i][n] != '\0')
            continue;
        if (*i + 1 >= argc) {
            fprintf(stderr, "redistplan: %s needs a value\n", names[k]);
            return -1;
        }
        *slots[k] = argv[++*i];
        return 1;
    }
    return 0;
}

redist_status_t cli_load_spec(const cli_spec_args *a, unsigned flags,
                              redist_spec_t **out, redist_error_t *err)
{
    if (a->path && strcmp(a->path, "-") != 0) {
        if (a->mesh || a->shape || a->from || a->to) {
            redist_error_clear(err);
            err->status = REDIST_ERR_INVALID;
            snprintf(err->text, sizeof err->text,
                     "give either a spec file or the inline options "
                     "(with '-'), not both");
            return REDIST_ERR_INVALID;
        }
        return redist_spec_load_file(a->path, flags, out, err);
    }
    return redist_spec_from_strings(a->mesh, a->shape, a->dtype, a->from,
                                    a->from_partial, a->to, a->to_partial,
                                    a->reduce, a->name, flags, out, err);
}

static int cmd_plan(int argc, char **argv)
{
    cli_spec_args sa;
    redist_plan_options_t opts;
    int json = 0, grid = 1;
    const char *cost_file = NULL, *axis_links = NULL;
    redist_cost_model_t cost;
    cli_topo_args ta = {NULL, NULL, NULL};
    memset(&sa, 0, sizeof sa);
    memset(&opts, 0, sizeof opts);
    for (int i = 2; i < argc; i++) {
        int r = cli_spec_option(&sa, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--no-grid") == 0)
            grid = 0;
        else if (strcmp(argv[i], "--max-peak") == 0 && i + 1 < argc) {
            if (u64_option("--max-peak", "a byte count", argv[++i],
                           &opts.max_peak_bytes))
                return 2;
        } else if (strcmp(argv[i], "--max-states") == 0 && i + 1 < argc) {
            if (u64_option("--max-states", "a count", argv[++i],
                           &opts.max_states))
                return 2;
        } else if (strcmp(argv[i], "--objective") == 0 && i + 1 < argc) {
            if (cli_objective_option(argv[++i], &opts.objective))
                return 2;
        } else if (strcmp(argv[i], "--cost") == 0 && i + 1 < argc) {
            cost_file = argv[++i];
        } else if (strcmp(argv[i], "--axis-links") == 0 && i + 1 < argc) {
            axis_links = argv[++i];
        } else if (strcmp(argv[i], "--xml") == 0 && i + 1 < argc) {
            ta.xml = argv[++i];
        } else if (strcmp(argv[i], "--synthetic") == 0 && i + 1 < argc) {
            ta.synthetic = argv[++i];
        } else if (strcmp(argv[i], "--rank-map") == 0 && i + 1 < argc) {
            ta.rank_map = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "redistplan: plan: unknown option %s\n", argv[i]);
            return 2;
        } else if (!sa.path)
            sa.path = argv[i];
        else {
            fprintf(stderr, "redistplan: plan takes one spec\n");
            return 2;
        }
    }
    if (!sa.path && !sa.mesh) {
        fprintf(stderr, "redistplan: plan: missing SPEC (a file, or '-' with "
                        "--mesh ...)\n");
        return 2;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL;
    if (cli_load_spec(&sa, 0, &spec, &err)) {
        cli_print_error(&err);
        return 2;
    }
    int topo = ta.xml || ta.synthetic || ta.rank_map;
    if (cost_file || axis_links || topo ||
        opts.objective == REDIST_OBJECTIVE_TIME) {
        redist_cost_model_default(&cost);
#ifndef REDIST_HAVE_HWLOC
        if (topo) {
            fprintf(stderr, "redistplan: plan: --xml, --synthetic and "
                            "--rank-map need a redistplan built with hwloc "
                            "(libhwloc-dev); use --axis-links\n");
            redist_spec_free(spec);
            return 2;
        }
#endif
        if ((cost_file &&
             redist_cost_model_load_file(cost_file, &cost, &err)) ||
#ifdef REDIST_HAVE_HWLOC
            (topo && cli_topo_axis_links(&ta, redist_spec_mesh(spec), &cost,
                                         &err)) ||
#endif
            (axis_links &&
             redist_cost_model_set_axis_links(&cost, redist_spec_mesh(spec),
                                              axis_links, &err))) {
            cli_print_error(&err);
            redist_spec_free(spec);
            return 2;
        }
        opts.cost = &cost;
    }
    redist_plan_t *plan = NULL;
    redist_status_t st = redist_plan_create(spec, &opts, &plan, &err);
    if (st) {
        rd_cli_source(&err, sa.path);
        cli_print_error(&err);
        redist_spec_free(spec);
        return st == REDIST_ERR_INFEASIBLE || st == REDIST_ERR_LIMIT ? 3 : 2;
    }
    int rc = 0;
    if (json) {
        char *text = redist_plan_to_json(plan);
        if (!text) {
            fprintf(stderr, "redistplan: out of memory\n");
            rc = 2;
        } else {
            puts(text);
            free(text);
        }
    } else {
        redist_plan_print(plan, stdout, grid);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    return rc;
}

void rd_cli_source(redist_error_t *err, const char *path)
{
    if (err->source[0] == '\0')
        snprintf(err->source, sizeof err->source, "%s",
                 path && strcmp(path, "-") ? path : "<command line>");
}

/* Model the time of plans for `verify`: the options' cost model. */
static int cost_options(const char *cost_file, const char *axis_links,
                        const redist_spec_t *spec, redist_cost_model_t *cost,
                        redist_error_t *err)
{
    redist_cost_model_default(cost);
    return (cost_file && redist_cost_model_load_file(cost_file, cost, err)) ||
           (axis_links &&
            redist_cost_model_set_axis_links(cost, redist_spec_mesh(spec),
                                             axis_links, err));
}

/* Is a plan with these figures optimal for `obj`, against the optimum
 * `o` of redist_plan_create?  1 yes, 0 no, -1 not known (the optimum was
 * not proven and the plan does not meet its lower bounds).  Times are
 * compared up to the solver's rounding (a part in 10^9, a picosecond). */
static int verify_optimal(redist_objective_t obj,
                          const redist_verify_result_t *r,
                          const redist_plan_stats_t *o)
{
    double slack = o->time_s * 1e-9 + 1e-12;
    if (!o->optimal) {
        /* only the lower bounds are known */
        if (r->peak_bytes > o->bound_peak_bytes)
            return r->peak_bytes > o->peak_bytes ? 0 : -1;
        if (obj == REDIST_OBJECTIVE_TIME)
            return r->time_s <= o->bound_time_s + slack ? 1 : -1;
        return r->recv_bytes <= o->bound_recv_bytes ? 1 : -1;
    }
    if (r->peak_bytes != o->peak_bytes)
        return r->peak_bytes < o->peak_bytes;
    if (obj == REDIST_OBJECTIVE_TIME) {
        if (r->time_s > o->time_s + slack)
            return 0;
        if (r->time_s < o->time_s - slack)
            return 1;
    }
    if (r->recv_bytes != o->recv_bytes)
        return r->recv_bytes < o->recv_bytes;
    return r->collectives <= o->collectives;
}

static int cmd_verify(int argc, char **argv)
{
    cli_spec_args sa;
    const char *plan_path = NULL, *cost_file = NULL, *axis_links = NULL;
    redist_plan_options_t opts;
    redist_cost_model_t cost;
    memset(&sa, 0, sizeof sa);
    memset(&opts, 0, sizeof opts);
    for (int i = 2; i < argc; i++) {
        int r = cli_spec_option(&sa, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (strcmp(argv[i], "--objective") == 0 && i + 1 < argc) {
            if (cli_objective_option(argv[++i], &opts.objective))
                return 2;
            continue;
        }
        if (strcmp(argv[i], "--cost") == 0 && i + 1 < argc) {
            cost_file = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--axis-links") == 0 && i + 1 < argc) {
            axis_links = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "redistplan: verify: unknown option %s\n",
                    argv[i]);
            return 2;
        }
        if (!sa.path)
            sa.path = argv[i];
        else if (!plan_path)
            plan_path = argv[i];
        else {
            fprintf(stderr, "redistplan: verify takes SPEC PLAN.json\n");
            return 2;
        }
    }
    if (!sa.path || !plan_path) {
        fprintf(stderr, "redistplan: verify: usage: redistplan verify SPEC "
                        "PLAN.json\n");
        return 2;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL;
    if (cli_load_spec(&sa, REDIST_SPEC_ALLOW_UNPLANNABLE, &spec, &err)) {
        cli_print_error(&err);
        return 2;
    }
    int timed = opts.objective == REDIST_OBJECTIVE_TIME || cost_file ||
                axis_links;
    if (timed && cost_options(cost_file, axis_links, spec, &cost, &err)) {
        cli_print_error(&err);
        redist_spec_free(spec);
        return 2;
    }
    if (timed)
        opts.cost = &cost;
    redist_verify_result_t res;
    redist_status_t st = redist_plan_verify_file_cost(spec, plan_path,
                                                      opts.cost, &res, &err);
    int rc;
    if (st == REDIST_OK) {
        printf("valid plan: %d step%s, %d collective%s\n", res.steps,
               res.steps == 1 ? "" : "s", res.collectives,
               res.collectives == 1 ? "" : "s");
        printf("  peak %llu bytes per device; received %llu bytes per "
               "device\n",
               (unsigned long long)res.peak_bytes,
               (unsigned long long)res.recv_bytes);
        if (timed)
            printf("  modelled time %.2f us (%s cost model)\n",
                   res.time_s * 1e6, cost_file ? "the --cost file's"
                                                : "the built-in");
        uint64_t bound = redist_spec_src_bytes(spec) >
                                 redist_spec_dst_bytes(spec)
                             ? redist_spec_src_bytes(spec)
                             : redist_spec_dst_bytes(spec);
        printf("  memory-efficient: %s (max(src, dst) = %llu bytes)\n",
               res.memory_efficient ? "yes" : "no",
               (unsigned long long)bound);
        redist_plan_t *best = NULL;
        redist_error_t e2;
        redist_error_clear(&e2);
        const char *on = cli_objective_name(opts.objective);
        if (redist_plan_create(spec, &opts, &best, &e2) == REDIST_OK) {
            redist_plan_stats_t o;
            redist_plan_stats(best, &o);
            int opt = verify_optimal(opts.objective, &res, &o);
            int xchg = opts.objective == REDIST_OBJECTIVE_BYTES &&
                       res.exchange_steps > 0;
            char of[128];
            if (opts.objective == REDIST_OBJECTIVE_TIME)
                snprintf(of, sizeof of, "%.2f us modelled, ",
                         o.time_s * 1e6);
            else
                of[0] = '\0';
            /* never "yes" for a plan that says it is not proven, nor
             * against the optimum of a vocabulary it does not use */
            printf("  optimal for the %s objective: %s (%s: peak %llu, %s"
                   "received %llu, %d collective%s)\n",
                   on,
                   xchg ? "not applicable: the plan has an exchange step, "
                          "which the bytes objective does not use"
                   : opt > 0 && res.stated_unproven
                       ? "not claimed: the plan says it is not proven "
                         "optimal (its search budget ran out), though its "
                         "figures meet the optimum"
                   : opt > 0  ? "yes"
                   : opt == 0 ? "no"
                              : "not known",
                   o.optimal ? "its optimum"
                             : "its best plan found, not proven optimal: "
                               "the search budget ran out",
                   (unsigned long long)o.peak_bytes, of,
                   (unsigned long long)o.recv_bytes, o.collectives,
                   o.collectives == 1 ? "" : "s");
            redist_plan_free(best);
        } else {
            printf("  optimal for the %s objective: not known (no plan: "
                   "%s)\n",
                   on, e2.text);
        }
        rc = 0;
    } else if (st == REDIST_ERR_PLAN) {
        cli_print_error(&err);
        printf("invalid plan\n");
        rc = 1;
    } else {
        cli_print_error(&err);
        rc = 2;
    }
    redist_spec_free(spec);
    return rc;
}

int main(int argc, char **argv)
{
    cli_register_extensions();
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        cli_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("redistplan %s\n", REDIST_VERSION_STRING);
        return 0;
    }
    if (strcmp(argv[1], "plan") == 0)
        return cmd_plan(argc, argv);
    if (strcmp(argv[1], "check") == 0)
        return cli_cmd_check(argc, argv);
    if (strcmp(argv[1], "verify") == 0)
        return cmd_verify(argc, argv);
    int rc = cli_dispatch_extension(argc, argv);
    if (rc >= 0)
        return rc;
    fprintf(stderr, "redistplan: unknown command \"%s\"\n", argv[1]);
    cli_usage(stderr);
    return 2;
}
