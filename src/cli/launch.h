/* The agreement of the ranks of a launched command (`run`, `calibrate`;
 * see launch.c). */
#ifndef REDIST_CLI_LAUNCH_H
#define REDIST_CLI_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "redist.h"

#define CLI_FP_MAX 40          /* fields of a fingerprint */
#define CLI_FP_NAME 48
#define CLI_FP_VALUE 200
#define CLI_LAUNCH_MSG 1024    /* bytes of a rank's error message sent */

/* What every rank must have been given alike: (name, value) pairs, in an
 * order that depends only on those values. */
typedef struct cli_fp {
    int n;
    char name[CLI_FP_MAX][CLI_FP_NAME];
    char value[CLI_FP_MAX][CLI_FP_VALUE];
} cli_fp;

void cli_fp_add(cli_fp *fp, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An empty fingerprint, then its first fields: the command and whether
 * --help was given (so that ranks running different commands, or one
 * asking for help, disagree on them first). */
void cli_fp_init(cli_fp *fp, const char *cmd, int help);

/* The spec and plan a rank runs: name, mesh, shapes (`orig`: the spec's,
 * before --shape / --shrink), dtype, reduce, types, the steps (and the
 * executor's hash of them). */
void cli_fp_plan(cli_fp *fp, const redist_plan_t *plan, const int64_t *orig);
/* A hash of n bytes, for values too long to show (a cost model). */
uint64_t cli_fp_hash(uint64_t h, const void *p, size_t n);

/* 1 under a launcher (OMPI_COMM_WORLD_SIZE / PMI_SIZE set) in a build
 * that can agree (MPI or OpenSHMEM built in). */
int cli_launched(void);

/* This rank under a launcher (the environment's), or -1. */
long cli_launch_rank(void);

/* Start `cmd` (its name in messages): under a launcher, this rank's
 * standard error is held back until the agreement, which prints it. */
void cli_launch_begin(const char *cmd);

/* Under a launcher: start MPI (OpenSHMEM in a build without MPI) and
 * agree with every rank on success and on `fp`.  0: every rank succeeded
 * with the same fingerprint (go on); 2: some rank failed or differs,
 * every rank printed why.  Not launched: 0.  `shmem` non-zero: this rank
 * goes on to start OpenSHMEM (Open MPI's osc/rdma is excluded first). */
int cli_launch_agree(const cli_fp *fp, int shmem);

/* The end of `cmd` with exit code rc: a rank that failed before
 * cli_launch_agree joins the agreement with its held-back message (so the
 * others learn why and nobody waits); MPI is finalised.  Returns the exit
 * code of every rank. */
int cli_launch_end(int rc);

/* 1 when the agreement started OpenSHMEM (a build without MPI): the
 * backend must not start it again, and cli_launch_end finalises it. */
int cli_launch_shmem_started(void);

/* After the agreement: every rank passes whether it failed and its
 * message (NULL: none); 1 if any rank failed.  When every rank failed
 * with the same message rank 0 prints it once; otherwise a rank that
 * failed prints its own and the others "rank N: <N's message>". */
int cli_launch_report(int failed, const char *text);

/* cli_launch_report of "redistplan: <err>" and / or "redistplan: CMD:
 * <what>" (each may be NULL) when `bad`. */
int cli_launch_failed(int bad, const redist_error_t *err, const char *what);

#endif
