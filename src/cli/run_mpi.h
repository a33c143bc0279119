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

/* The mpi backend was chosen: until cli_mpi_run, the output of launched
 * ranks other than 0 is discarded (what they print before MPI starts is
 * the same on every rank: one message, not one per rank). */
void cli_mpi_quiet(void);
/* Undo cli_mpi_quiet (no-op when it silenced nothing). */
void cli_mpi_unquiet(void);

/* The value of environment variable a, else b, as a number; -1 when
 * neither is set (the launcher's rank or size: OMPI_COMM_WORLD_RANK /
 * PMI_RANK, OMPI_COMM_WORLD_SIZE / PMI_SIZE). */
long cli_env_long(const char *a, const char *b);

/* Run `plan` on this rank (MPI_Init ... MPI_Finalize inside), check the
 * data, print the per-rank report and summary on rank 0.  `orig` is the
 * spec's shape before --shape/--shrink.  Returns the exit code: 0 exact,
 * 1 mismatch, 2 bad input (a wrong number of ranks, ...). */
int cli_mpi_run(const cli_mpi_args *m, const redist_plan_t *plan,
                const int64_t *orig, int shrink,
                const redist_exec_options_t *opts, uint64_t repeat,
                int64_t corrupt);

#endif
