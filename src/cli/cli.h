/* Shared pieces of the redistplan commands. */
#ifndef REDIST_CLI_H
#define REDIST_CLI_H

#include <stdio.h>

#include "redist.h"

typedef struct cli_spec_args {
    const char *path; /* spec file, or "-" / NULL for the inline options */
    const char *mesh, *shape, *dtype, *from, *from_partial, *to, *to_partial,
        *reduce, *name;
} cli_spec_args;

/* 1 if argv[*i] was a spec option (consumed, *i advanced past its value),
 * 0 if not, -1 on a missing value. */
int cli_spec_option(cli_spec_args *a, int argc, char **argv, int *i);
redist_status_t cli_load_spec(const cli_spec_args *a, unsigned flags,
                              redist_spec_t **out, redist_error_t *err);
void cli_print_error(const redist_error_t *err);
void rd_cli_source(redist_error_t *err, const char *path);
int cli_parse_u64(const char *s, uint64_t *out);
void cli_usage(FILE *f);
void cli_set_extra_usage(const char *text);

int cli_cmd_check(int argc, char **argv);

/* Commands of the layers above the planner (run, topo, ...): register
 * their usage text; dispatch returns the exit code, or -1 when argv[1] is
 * none of them. */
void cli_register_extensions(void);
int cli_dispatch_extension(int argc, char **argv);

#endif
