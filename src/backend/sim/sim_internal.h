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

#endif
