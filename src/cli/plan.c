/*
 * `redistplan plan SPEC`: the optimal plan as a table (redist_plan_print)
 * or JSON (doc/spec-format.md section 4); a spec with "arrays", the plan
 * set (redist_plan_set_print, --plans adds each array's table).  Exit 0
 * ok, 2 bad input, 3 no plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Planning failed: the error, and the exit code (3 no plan, 2 bad input). */
static int failed(redist_status_t st, redist_error_t *err, const char *path)
{
    cli_error_source(err, path);
    cli_print_error(err);
    return st == REDIST_ERR_INFEASIBLE || st == REDIST_ERR_LIMIT
               ? CLI_NO_PLAN
               : CLI_BAD_INPUT;
}

/* Print and free a JSON text (NULL: out of memory). */
static int emit(char *text)
{
    if (!text) {
        fprintf(stderr, "redistplan: out of memory\n");
        return CLI_BAD_INPUT;
    }
    puts(text);
    free(text);
    return CLI_OK;
}

/* A spec with "arrays" (doc/arrays.md): the plan set, its rounds. */
static int plan_set(const cli_command *self, const char *path,
                    redist_arrays_t *arrays, cli_cost_args *ca,
                    redist_plan_options_t *opts, int json, int detail,
                    int preserve)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_cost_model_t cost;
    redist_plan_set_t *set = NULL;
    if (cli_plan_options(self->name, ca,
                         redist_spec_mesh(redist_arrays_get(arrays, 0)), &cost,
                         opts))
        return CLI_BAD_INPUT;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0};
    redist_status_t st = redist_plan_set_create(arrays, opts, NULL, &eo, &set,
                                                &err);
    if (st)
        return failed(st, &err, path);
    int rc = json ? emit(redist_plan_set_to_json(set))
                  : (redist_plan_set_print(set, stdout, detail), CLI_OK);
    redist_plan_set_free(set);
    return rc;
}

int cli_cmd_plan(const cli_command *self, int argc, char **argv)
{
    cli_spec_args sa;
    cli_cost_args ca;
    redist_plan_options_t opts = {0};
    redist_cost_model_t cost;
    int json = 0, nogrid = 0, detail = 0, preserve = 0;
    const cli_opt own[] = {
        {.name = "--json", .kind = CLI_FLAG, .out = &json},
        {.name = "--plans", .kind = CLI_FLAG, .out = &detail},
        {.name = "--no-grid", .kind = CLI_FLAG, .out = &nogrid},
        {.name = "--preserve-src", .kind = CLI_FLAG, .out = &preserve},
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
    if (sa.path && strcmp(sa.path, "-") != 0 && !sa.mesh && !sa.from_mesh) {
        redist_arrays_t *arrays = NULL;
        if (redist_arrays_load_file(sa.path, 0, &arrays, &err)) {
            cli_print_error(&err);
            return CLI_BAD_INPUT;
        }
        if (redist_arrays_is_set(arrays)) {
            int rc = plan_set(self, sa.path, arrays, &ca, &opts, json, detail,
                              preserve);
            redist_arrays_free(arrays);
            return rc;
        }
        redist_arrays_free(arrays);
    }
    if (preserve) {
        fprintf(stderr, "redistplan: plan: --preserve-src is for a spec with "
                        "\"arrays\" (its rounds)\n");
        return CLI_BAD_INPUT;
    }
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
    if (st)
        return failed(st, &err, sa.path);
    int rc = json ? emit(redist_plan_to_json(plan))
                  : (redist_plan_print(plan, stdout, !nogrid), CLI_OK);
    redist_plan_free(plan);
    return rc;
}
