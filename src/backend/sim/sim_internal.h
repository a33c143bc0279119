/* Internal hooks of the sim backend (for tests). */
#ifndef REDIST_EXEC_SIM_INTERNAL_H
#define REDIST_EXEC_SIM_INTERNAL_H

#include "redist/exec.h"

/* Make device `rank` fail its exchange number `op_index` (0-based, counted
 * over the world's lifetime) with REDIST_ERR_BACKEND. */
void rd_sim_inject_failure(redist_sim_t *sim, int64_t rank, int64_t op_index);

/* redist_exec_sim_run on an existing world (one thread per device). */
redist_status_t rd_sim_run_world(redist_sim_t *sim, const redist_plan_t *plan,
                                 void *const src[], void *const dst[],
                                 const redist_exec_options_t *opts,
                                 redist_exec_report_t *report,
                                 redist_exec_report_t *per_device,
                                 redist_error_t *err);

/* What one device's thread runs (rd_sim_run_each): be is its endpoint. */
typedef redist_status_t (*rd_sim_fn)(void *arg, redist_backend_t *be,
                                     redist_exec_report_t *report,
                                     redist_error_t *err);
/* Run fn on every device of the world, one thread each; the report is
 * the most over the devices (per_device[rank] each, may be NULL), the
 * error that of the device that failed first. */
redist_status_t rd_sim_run_each(redist_sim_t *sim, rd_sim_fn fn, void *arg,
                                redist_exec_report_t *report,
                                redist_exec_report_t *per_device,
                                redist_error_t *err);

#endif
