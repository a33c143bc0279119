/*
 * `redistplan plan SPEC`: the optimal plan as a table (redist_plan_print)
 * or JSON (doc/spec-format.md section 4).  Exit 0 ok, 2 bad input, 3 no plan.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cli_cmd_plan(const cli_command *self, int argc, char **argv)
{
    cli_spec_args sa;
    cli_cost_args ca;
    redist_plan_options_t opts = {0};
    redist_cost_model_t cost;
    int json = 0, nogrid = 0;
    const cli_opt own[] = {
        {.name = "--json", .kind = CLI_FLAG, .out = &json},
        {.name = "--no-grid", .kind = CLI_FLAG, .out = &nogrid},
        {.name = "--max-peak", .kind = CLI_U64, .out = &opts.max_peak_bytes,
         .what = "a byte count"},
        {.name = "--max-states", .kind = CLI_U64, .out = &opts.max_states,
         .what = "a count"},
        {.name = NULL}};
    cli_cmdline c = {.cmd = self->name, .own = own, .spec = &sa,
                     .cost = &ca, .pos = &sa.path, .maxpos = 1,
                     .pos_words = "one SPEC"};
    if (cli_parse(&c, argc, argv))
        return CLI_BAD_INPUT;
    if (!cli_spec_given(&sa)) {
        fprintf(stderr, "redistplan: plan: missing SPEC (a file, or '-' with "
                        "--mesh ...)\n");
        return CLI_BAD_INPUT;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL;
    if (cli_load_spec(&sa, 0, &spec, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    if (cli_plan_options(self->name, &ca, redist_spec_mesh(spec), &cost,
                         &opts)) {
        redist_spec_free(spec);
        return CLI_BAD_INPUT;
    }
    redist_plan_t *plan = NULL;
    redist_status_t st = redist_plan_create(spec, &opts, &plan, &err);
    redist_spec_free(spec);
    if (st) {
        rd_cli_source(&err, sa.path);
        cli_print_error(&err);
        return st == REDIST_ERR_INFEASIBLE || st == REDIST_ERR_LIMIT
                   ? CLI_NO_PLAN
                   : CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    if (json) {
        char *text = redist_plan_to_json(plan);
        if (!text) {
            fprintf(stderr, "redistplan: out of memory\n");
            rc = CLI_BAD_INPUT;
        } else {
            puts(text);
            free(text);
        }
    } else {
        redist_plan_print(plan, stdout, !nogrid);
    }
    redist_plan_free(plan);
    return rc;
}
