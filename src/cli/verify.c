/*
 * `redistplan verify SPEC PLAN.json [cost options]`: replay a plan (its
 * own or written elsewhere) step by step with
 * redist_plan_verify_file_cost; print its peak, bytes, modelled time,
 * memory efficiency, and how it compares with the optimum of the objective
 * of the cost options (time by default).  Exit 0 valid, 1 invalid plan, 2
 * bad input.
 */
#include <stdio.h>

#include "cli.h"

/* Is a plan with these figures optimal for `obj`, against the optimum
 * `o` of redist_plan_create?  1 yes, 0 no, -1 not known (the optimum was
 * not proven and the plan does not meet its lower bounds).  Times are
 * compared up to the solver's rounding (a part in 10^9, a picosecond). */
static int verify_optimal(redist_objective_t obj,
                          const redist_verify_result_t *r,
                          const redist_plan_stats_t *o)
{
    double slack = o->time_s * 1e-9 + 1e-12;
    if (!o->optimal) { /* only the lower bounds are known */
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

/* The lines of a valid plan: its figures, then whether it is optimal for
 * the objective of the options (time by default), quoting that
 * objective's optimum.  Never "yes" for a plan that says it is not proven
 * optimal, nor against the bytes objective for a plan with an exchange
 * step (outside that objective's steps). */
static void report(const redist_spec_t *spec, const redist_verify_result_t *res,
                   const redist_plan_options_t *opts, int given_model)
{
    printf("valid plan: %d step%s, %d collective%s\n", res->steps,
           res->steps == 1 ? "" : "s", res->collectives,
           res->collectives == 1 ? "" : "s");
    printf("  peak %llu bytes per device; received %llu bytes per device\n",
           (unsigned long long)res->peak_bytes,
           (unsigned long long)res->recv_bytes);
    if (opts->cost)
        printf("  modelled time %.2f us (%s cost model)\n", res->time_s * 1e6,
               given_model ? "given" : "built-in");
    uint64_t src = redist_spec_src_bytes(spec),
             dst = redist_spec_dst_bytes(spec);
    printf("  memory-efficient: %s (max(src, dst) = %llu bytes)\n",
           res->memory_efficient ? "yes" : "no",
           (unsigned long long)(src > dst ? src : dst));
    const char *on =
        opts->objective == REDIST_OBJECTIVE_BYTES ? "bytes" : "time";
    redist_plan_t *best = NULL;
    redist_error_t e2;
    redist_error_clear(&e2);
    if (redist_plan_create(spec, opts, &best, &e2) != REDIST_OK) {
        printf("  optimal for the %s objective: not known (no plan: %s)\n", on,
               e2.text);
        return;
    }
    redist_plan_stats_t o;
    redist_plan_stats(best, &o);
    int opt = verify_optimal(opts->objective, res, &o);
    int xchg = opts->objective == REDIST_OBJECTIVE_BYTES &&
               res->exchange_steps > 0;
    char of[64] = "";
    if (opts->objective == REDIST_OBJECTIVE_TIME)
        snprintf(of, sizeof of, "%.2f us modelled, ", o.time_s * 1e6);
    printf("  optimal for the %s objective: %s (%s: peak %llu, %sreceived "
           "%llu, %d collective%s)\n",
           on,
           xchg ? "not applicable: the plan has an exchange step, which the "
                  "bytes objective does not use"
           : opt > 0 && res->stated_unproven
               ? "not claimed: the plan says it is not proven optimal (its "
                 "search budget ran out), though its figures meet the "
                 "optimum"
           : opt > 0  ? "yes"
           : opt == 0 ? "no"
                      : "not known",
           o.optimal ? "its optimum"
                     : "its best plan found, not proven optimal: the search "
                       "budget ran out",
           (unsigned long long)o.peak_bytes, of,
           (unsigned long long)o.recv_bytes, o.collectives,
           o.collectives == 1 ? "" : "s");
    redist_plan_free(best);
}

int cli_cmd_verify(const cli_command *self, int argc, char **argv)
{
    cli_spec_args sa;
    cli_cost_args ca;
    const char *pos[2] = {NULL, NULL};
    cli_cmdline c = {.cmd = self->name, .spec = &sa, .cost = &ca, .pos = pos,
                     .maxpos = 2, .pos_words = "SPEC PLAN.json"};
    if (cli_parse(&c, argc, argv))
        return CLI_BAD_INPUT;
    sa.path = pos[0];
    if (c.npos < 2) {
        fprintf(stderr, "redistplan: verify: usage: redistplan verify SPEC "
                        "PLAN.json\n");
        return CLI_BAD_INPUT;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL;
    if (cli_load_spec(&sa, REDIST_SPEC_ALLOW_UNPLANNABLE, &spec, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    redist_plan_options_t opts = {0};
    redist_cost_model_t cost;
    if (cli_plan_options(self->name, &ca, redist_spec_mesh(spec), &cost,
                         &opts)) {
        redist_spec_free(spec);
        return CLI_BAD_INPUT;
    }
    redist_verify_result_t res;
    redist_status_t st =
        redist_plan_verify_file_cost(spec, pos[1], opts.cost, &res, &err);
    int rc = CLI_OK;
    if (st == REDIST_OK) {
        report(spec, &res, &opts,
               ca.file || ca.axis_links || ca.topo.xml || ca.topo.synthetic ||
                   ca.topo.rank_map);
    } else if (st == REDIST_ERR_PLAN) {
        cli_print_error(&err);
        printf("invalid plan\n");
        rc = CLI_FAIL;
    } else {
        cli_print_error(&err);
        rc = CLI_BAD_INPUT;
    }
    redist_spec_free(spec);
    return rc;
}
