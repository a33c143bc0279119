/* The report of `redistplan run`, shared by the sim, mpi and shmem
 * backends (run_report.c): the same lines, in the same order. */
#ifndef REDIST_CLI_RUN_REPORT_H
#define REDIST_CLI_RUN_REPORT_H

#include <stdint.h>

#include "redist.h"
#include "../testing/pattern.h"

/* What each rank (PE) of a launched run tells rank 0: plain data, the
 * same layout everywhere (sent as bytes). */
typedef struct cli_rank_result {
    double seconds;
    uint64_t high, allocs, recv, sent;
    int64_t exchanges;
    int32_t bad, src_bad, writes_src, pad;
    rd_mismatch mm;
} cli_rank_result;

/* "run NAME: backend BACKEND, N WHAT, DTYPE[SHAPE], reduce OP", the
 * shape line when --shape or --shrink changed it, and the plan line. */
void cli_run_head(const redist_plan_t *plan, const char *backend, long long n,
                  const char *what, const int64_t *orig, int shrink);
/* "  buffers   src S, dst T per UNIT" */
void cli_run_buffers(const redist_spec_t *s, const char *unit);
/* This rank's figures from its best run, and the check of its blocks
 * (the source too with `preserve`). */
void cli_rank_result_fill(cli_rank_result *r, const redist_exec_report_t *best,
                          const redist_spec_t *s, int64_t rank,
                          const void *src, const void *dst, int preserve);
/* The maxima over the ranks: time (and the slowest rank), scratch
 * high-water, received bytes; whether any wrote its source. */
typedef struct cli_run_max {
    double seconds;
    uint64_t high, recv;
    int worst, writes;
} cli_run_max;
void cli_run_maxima(const cli_rank_result *all, int n, cli_run_max *m);
/* One line per rank (up to 64 ranks), headed "UNIT  coords ...". */
void cli_run_rank_table(const redist_mesh_t *mesh, const cli_rank_result *all,
                        int n, const char *unit);
/* "  source    preserved / used as work space / not written" */
void cli_run_source(int preserve, int writes);
/* "  traffic   received R per UNIT (most)" and "  time  ..." of a
 * launched run: the slowest rank's best time and the wall time. */
void cli_run_traffic_time(const cli_run_max *m, const char *unit,
                          double best, double wall, int repeated);
/* The mismatch lines for device `device` (src_bad: the source was
 * modified despite --preserve-src). */
void cli_run_mismatch(const redist_spec_t *s, int64_t device,
                      const rd_mismatch *mm, int src_bad);
/* "  result    exact: N UNITS, E elements checked" */
void cli_run_exact(const redist_spec_t *s, long long n, const char *units);
/* The result lines of a launched run: the first bad rank's mismatch, or
 * exact. */
void cli_run_result(const redist_spec_t *s, const cli_rank_result *all, int n,
                    const char *units);

#endif
