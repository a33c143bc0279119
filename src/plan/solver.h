#ifndef REDIST_SOLVER_H
#define REDIST_SOLVER_H

#include "steps.h"

#define RD_DEFAULT_MAX_STATES 4000000ull

typedef struct rd_solve_info {
    uint64_t states; /* types visited, all passes */
    uint64_t D;      /* cost scale */
} rd_solve_info;

/* The optimal path from spec->from to spec->to (see solver.c).  *path is
 * malloc'ed (free it); its steps carry `after`. */
redist_status_t rd_solve(const redist_spec_t *spec,
                         const redist_plan_options_t *opts, rd_step **path,
                         int *nsteps, rd_solve_info *info,
                         redist_error_t *err);

#endif
