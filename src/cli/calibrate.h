/* `redistplan calibrate` (calibrate.c measures, calibrate_out.c fits,
 * writes and prints): what the two files share.  Built only with MPI and
 * hwloc. */
#ifndef REDIST_CLI_CALIBRATE_H
#define REDIST_CLI_CALIBRATE_H

#include <mpi.h>
#include <stdint.h>

#include "cli.h"
#include "redist/topo.h"

#define CAL_SMALL 8                 /* default small message, bytes */
#define CAL_LARGE (4u << 20)        /* default large message, bytes */
#define CAL_REPS 20                 /* default timed repetitions */
#define CAL_WARMUP 3                /* untimed round trips per size */
#define CAL_MAX_LARGE (1u << 30)    /* largest --sizes LARGE */
#define CAL_MAX_REPS 1000000
#define CAL_GAMMA_MIN (64u << 10)   /* smallest reduction buffer */
#define CAL_MAX_BW 1e12             /* a pair above 1 TB/s is noise */
#define CAL_TAG 7301
#define CAL_DEFAULT_FILE "redist-cost.json"
#define NL REDIST_LINK_COUNT

typedef struct cal_opts {
    const char *out;      /* -o: a file, "-" for standard output */
    const char *rank_map; /* --rank-map-out */
    uint64_t small, large, reps;
    int quiet;
} cal_opts;

/* What each rank tells rank 0. */
typedef struct cal_rank {
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    int32_t pu;    /* logical PU index; -1 when hwloc failed */
    int32_t bound; /* 1: bound within one core; 0: last location */
    char error[200];
} cal_rank;

/* Rank 0's view of where the ranks ran. */
typedef struct cal_setup {
    redist_topo_t *topo;
    redist_placement_t *pl;
    char **names; /* distinct host names, in rank order of appearance */
    int nhosts;
    int64_t *hosts;
    int *pus;
    int all_bound;
    char model[128];
    int npkg;
} cal_setup;

/* The measurements rank 0 reports: the pair of each level ({-1, -1}:
 * none), whether its ranks shared a PU, the one-way times of the small and
 * the large message, and the reduction's seconds per byte. */
typedef struct cal_result {
    int pairs[NL][2], same_pu[NL];
    double t[NL][2];
    double gamma_s;
    uint64_t gbytes;
} cal_result;

/* JSON strings must be UTF-8: printable ASCII only ('?' for the rest). */
void cal_ascii(char *s);

/* Rank 0 after the measurements: fit, write, check, print.  0 or 2. */
int cal_report(const cal_opts *o, const cal_setup *s, const cal_rank *all,
               int n, const cal_result *res);

#endif
