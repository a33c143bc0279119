/* `redistplan run --backend mpi` (built only with MPI; see run_mpi.c). */
#ifndef REDIST_CLI_RUN_MPI_H
#define REDIST_CLI_RUN_MPI_H

#include <stdint.h>

#include "redist.h"

typedef struct cli_mpi_args {
    unsigned flags;       /* REDIST_MPI_* */
    uint64_t max_scratch; /* --max-scratch, 0: default */
    int given;            /* an option of the mpi backend was given */
} cli_mpi_args;

/* 1 if argv[*i] was an option of the mpi backend (consumed, *i advanced
 * past its value), 0 if not, -1 on a bad or missing value (message
 * printed). */
int cli_mpi_option(cli_mpi_args *m, int argc, char **argv, int *i);

/* Add the options of the mpi backend to the fingerprint every rank must
 * share (launch.h). */
struct cli_fp;
void cli_mpi_fingerprint(const cli_mpi_args *m, struct cli_fp *fp);

/* Run `plan` on this rank (MPI_Init ... MPI_Finalize inside), check the
 * data, print the per-rank report and summary on rank 0.  `orig` is the
 * spec's shape before --shape/--shrink.  Returns the exit code: 0 exact,
 * 1 mismatch, 2 bad input (a wrong number of ranks, ...). */
int cli_mpi_run(const cli_mpi_args *m, const redist_plan_t *plan,
                const int64_t *orig, int shrink,
                const redist_exec_options_t *opts, uint64_t repeat,
                int64_t corrupt);

#endif
