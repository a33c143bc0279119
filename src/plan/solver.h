#ifndef REDIST_SOLVER_H
#define REDIST_SOLVER_H

#include "steps.h"

#define RD_DEFAULT_MAX_STATES 4000000ull
/* device coordinate combinations analysed per exchange edge */
#define RD_SOLVER_EXCHANGE_LIMIT 4096
/* Steps of the constructive plan: at most one reduction per axis, one
 * gather and one slice per axis, and a permute or exchange. */
#define RD_FALLBACK_MAX (3 * REDIST_MAX_AXES + 1)

/* Why a plan of the solver is not proven optimal. */
enum {
    RD_UNPROVEN_NONE,
    RD_UNPROVEN_BUDGET, /* max_states ran out: the constructive plan */
    RD_UNPROVEN_GROUP,  /* a permute group too large to enumerate */
    RD_UNPROVEN_MESHES  /* a two-mesh plan: the best of its family */
};

typedef struct rd_solve_info {
    uint64_t states; /* types visited, all passes */
    uint64_t D;      /* cost scale */
    int optimal;     /* 0: not proven, for `unproven` (RD_UNPROVEN_*) */
    int unproven;
    uint64_t max_states; /* the budget in force */
    /* when not optimal: lower bounds (redist_plan_stats_t) */
    uint64_t bound_peak;
    unsigned __int128 bound_g; /* in the search's cost units */
    uint64_t bound_recv;       /* bytes objective */
    double bound_time;         /* time objective */
    /* uneven specs: the layout after each step (the path's steps point
     * here); free with rd_solve_info_free */
    rd_layout *lays;
    int nlays;
} rd_solve_info;

void rd_solve_info_free(rd_solve_info *info);

/* The constructive plan from src to dst (construct.c; exchange: an
 * exchange step may be used): its number of steps in out[], at most
 * RD_FALLBACK_MAX, or -1 (internal error). */
int rd_construct(const rd_ctx *cx, const rd_ctype *src, const rd_ctype *dst,
                 int exchange, rd_step out[]);

/* The objective of `opts` (NULL: the default, time). */
/* What planning refuses before any search (an unknown objective, an
 * invalid cost model, a pending reduction the target cannot get, a max
 * peak below max(src, dst)). */
redist_status_t rd_solve_check_options(const redist_spec_t *spec,
                                       const redist_plan_options_t *opts,
                                       redist_error_t *err);
static inline redist_objective_t rd_objective(const redist_plan_options_t *opts)
{
    return opts ? opts->objective : REDIST_OBJECTIVE_TIME;
}

/* The optimal path from spec->from to spec->to (see solver.c).  *path is
 * malloc'ed (free it); its steps carry `after`. */
redist_status_t rd_solve(const redist_spec_t *spec,
                         const redist_plan_options_t *opts, rd_step **path,
                         int *nsteps, rd_solve_info *info,
                         redist_error_t *err);

#endif
