/*
 * `redistplan verify SPEC PLAN.json`: replay a plan (its own or written
 * elsewhere) step by step with redist_plan_verify_file; print its peak,
 * bytes, memory efficiency, and how it compares with the optimum of the
 * default objective.  Exit 0 valid, 1 invalid plan, 2 bad input.
 */
#include <stdio.h>

#include "cli.h"

/* The lines of a valid plan. */
static void report(const redist_spec_t *spec, const redist_verify_result_t *res)
{
    printf("valid plan: %d step%s, %d collective%s\n", res->steps,
           res->steps == 1 ? "" : "s", res->collectives,
           res->collectives == 1 ? "" : "s");
    printf("  peak %llu bytes per device; received %llu bytes per device\n",
           (unsigned long long)res->peak_bytes,
           (unsigned long long)res->recv_bytes);
    uint64_t src = redist_spec_src_bytes(spec),
             dst = redist_spec_dst_bytes(spec);
    printf("  memory-efficient: %s (max(src, dst) = %llu bytes)\n",
           res->memory_efficient ? "yes" : "no",
           (unsigned long long)(src > dst ? src : dst));
    redist_plan_t *best = NULL;
    redist_error_t e2;
    redist_error_clear(&e2);
    if (redist_plan_create(spec, NULL, &best, &e2) != REDIST_OK)
        return;
    redist_plan_stats_t o;
    redist_plan_stats(best, &o);
    /* no worse than the optimum of the default objective (a plan with
     * exchange steps may even beat it) */
    int opt = res->peak_bytes < o.peak_bytes ||
              (res->peak_bytes == o.peak_bytes &&
               (res->recv_bytes < o.recv_bytes ||
                (res->recv_bytes == o.recv_bytes &&
                 res->collectives <= o.collectives)));
    printf("  optimal: %s (optimum: peak %llu, received %llu, %d "
           "collective%s)\n",
           opt ? "yes" : "no", (unsigned long long)o.peak_bytes,
           (unsigned long long)o.recv_bytes, o.collectives,
           o.collectives == 1 ? "" : "s");
    redist_plan_free(best);
}

int cli_cmd_verify(const cli_command *self, int argc, char **argv)
{
    cli_spec_args sa;
    const char *pos[2] = {NULL, NULL};
    cli_cmdline c = {.cmd = self->name, .spec = &sa, .pos = pos, .maxpos = 2,
                     .pos_words = "SPEC PLAN.json"};
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
    redist_verify_result_t res;
    redist_status_t st = redist_plan_verify_file(spec, pos[1], &res, &err);
    int rc = CLI_OK;
    if (st == REDIST_OK) {
        report(spec, &res);
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
