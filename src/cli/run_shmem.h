/* `redistplan run --backend shmem` (built only with OpenSHMEM; see
 * run_shmem.c). */
#ifndef REDIST_CLI_RUN_SHMEM_H
#define REDIST_CLI_RUN_SHMEM_H

#include <stdint.h>

#include "redist.h"

typedef struct cli_shmem_args {
    unsigned flags;      /* REDIST_SHMEM_* */
    uint64_t work_bytes; /* --shmem-work, 0: default */
    int private_buffers; /* --shmem-private: src / dst from malloc */
    int given;           /* an option of the shmem backend was given */
} cli_shmem_args;

/* 1 if argv[*i] was an option of the shmem backend (consumed, *i advanced
 * past its value), 0 if not, -1 on a bad or missing value (message
 * printed). */
int cli_shmem_option(cli_shmem_args *m, int argc, char **argv, int *i);

/* Size the symmetric heap for `plan` (SMA_SYMMETRIC_SIZE, unless set) and
 * add it and the options of the shmem backend to the fingerprint every PE
 * must share (launch.h). */
struct cli_fp;
void cli_shmem_fingerprint(const cli_shmem_args *m,
                           const redist_plan_t *plan, struct cli_fp *fp);

/* Run `plan` on this PE (shmem_init ... shmem_finalize inside), check the
 * data, print the per-PE report and summary on PE 0.  `orig` is the
 * spec's shape before --shape/--shrink.  Returns the exit code: 0 exact,
 * 1 mismatch, 2 bad input (a wrong number of PEs, ...). */
int cli_shmem_run(const cli_shmem_args *m, const redist_plan_t *plan,
                  const int64_t *orig, int shrink,
                  const redist_exec_options_t *opts, uint64_t repeat,
                  int64_t corrupt);

#endif
