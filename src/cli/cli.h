/* Shared pieces of the redistplan commands. */
#ifndef REDIST_CLI_H
#define REDIST_CLI_H

#include <stdio.h>

#include "redist.h"

typedef struct cli_spec_args {
    const char *path; /* spec file, or "-" / NULL for the inline options */
    const char *mesh, *shape, *dtype, *from, *from_partial, *to, *to_partial,
        *reduce, *name;
} cli_spec_args;

/* 1 if argv[*i] was a spec option (consumed, *i advanced past its value),
 * 0 if not, -1 on a missing value. */
int cli_spec_option(cli_spec_args *a, int argc, char **argv, int *i);
redist_status_t cli_load_spec(const cli_spec_args *a, unsigned flags,
                              redist_spec_t **out, redist_error_t *err);
void cli_print_error(const redist_error_t *err);
void rd_cli_source(redist_error_t *err, const char *path);
int cli_parse_u64(const char *s, uint64_t *out);
void cli_usage(FILE *f);
void cli_set_extra_usage(const char *text);

int cli_cmd_check(int argc, char **argv);

/* The value of --objective: "time" (the default) or "bytes".  0, or -1
 * after printing the error. */
int cli_objective_option(const char *arg, redist_objective_t *out);
/* "time" or "bytes" */
const char *cli_objective_name(redist_objective_t o);

/* common.c: helpers of several commands. */
double cli_now(void); /* monotonic seconds */
/* "512 B", or "65536 B (64 KiB)" from 1 KiB on */
void cli_fmt_bytes(uint64_t b, char *buf, size_t n);
/* "[8,4]" */
void cli_fmt_shape(const int64_t *s, int n, char *buf, size_t size);
/* "x=0,y=1": the coordinates of device `rank` */
void cli_fmt_coords(const redist_mesh_t *m, int64_t rank, char *buf,
                    size_t size);
/* `s` made safe for a terminal and for XML: control characters (C0, DEL,
 * C1, U+FFFE/U+FFFF) written \u001b, bytes that are not UTF-8 \xff; the
 * rest as is.  Truncated to whole characters. */
void cli_sanitize(const char *s, char *out, size_t size);
/* A byte count such as 64K or 4MiB (rd_parse_bytes, core/internal.h);
 * the _n form reads the first n characters. */
int cli_parse_size(const char *s, uint64_t *out);
int cli_parse_size_n(const char *s, size_t n, uint64_t *out);
/* The value of environment variable a, else b, as a number; -1 when
 * neither is set (the launcher's rank or size: OMPI_COMM_WORLD_RANK /
 * PMI_RANK, OMPI_COMM_WORLD_SIZE / PMI_SIZE). */
long cli_env_long(const char *a, const char *b);

/* Topology options of `plan` and `topo` (--xml FILE, --synthetic DESC,
 * --rank-map FILE; src/cli/topo.c, built with hwloc). */
typedef struct cli_topo_args {
    const char *xml, *synthetic, *rank_map;
} cli_topo_args;

#ifdef REDIST_HAVE_HWLOC
/* Set model->axis_link from the topology and placement the options name
 * (the local machine when only --rank-map is given); no-op without them. */
redist_status_t cli_topo_axis_links(const cli_topo_args *a,
                                    const redist_mesh_t *mesh,
                                    redist_cost_model_t *model,
                                    redist_error_t *err);
int cli_cmd_topo(int argc, char **argv);
#define CLI_TOPO_PLAN_OPTIONS                                                \
    "            [--xml FILE | --synthetic DESC] [--rank-map FILE]\n"
#define CLI_TOPO_PLAN_USAGE                                                  \
    "      --xml/--synthetic/--rank-map: axis links from a topology (an "     \
    "hwloc\n"                                                               \
    "      XML file, \"pack:2 core:4\", or this machine with only "          \
    "--rank-map)\n"
#define CLI_TOPO_USAGE                                                       \
    "  topo [SPEC] [--xml FILE | --synthetic DESC] [--rank-map FILE]\n"      \
    "       [--cost FILE] [--axis-links AXIS=LEVEL,...] [--objective "       \
    "bytes|time]\n"                                                         \
    "      the machine (this one, an hwloc XML file or a synthetic one) and "  \
    "where\n"                                                               \
    "      the ranks run; with a spec, how each mesh axis maps onto it and "   \
    "the\n"                                                                 \
    "      modelled cost of each step of the plans of both objectives\n"     \
    "      (--objective: only that one)\n"
#else
#define CLI_TOPO_PLAN_OPTIONS ""
#define CLI_TOPO_PLAN_USAGE ""
#define CLI_TOPO_USAGE ""
#endif

/* `redistplan calibrate` (src/cli/calibrate.c): measure the cost model of
 * this machine under mpirun.  Built only with MPI and hwloc
 * (REDIST_HAVE_CALIBRATE, src/meson.build); without them the command
 * says so and exits 2. */
#ifdef REDIST_HAVE_CALIBRATE
int cli_cmd_calibrate(int argc, char **argv);
#define CLI_CALIBRATE_BUILT ""
#else
#define CLI_CALIBRATE_BUILT                                                  \
    "      (not in this build: needs a redistplan built with MPI and "       \
    "hwloc)\n"
#endif
#define CLI_CALIBRATE_USAGE                                                  \
    "  calibrate [-o FILE|-] [--sizes SMALL,LARGE] [--reps R] [--quiet]\n"   \
    "            [--rank-map-out FILE]\n"                                    \
    "      under mpirun -np N: measure latency and bandwidth of every link "  \
    "level\n"                                                               \
    "      the ranks span (ping-pong of one pair of ranks per level, 8 B and " \
    "4 MiB\n"                                                               \
    "      by default, best of R=20) and the reduction speed; write the "     \
    "cost\n"                                                                \
    "      model file for --cost (default redist-cost.json; '-': standard\n" \
    "      output); --rank-map-out: where the ranks ran, as a rank map\n"    \
    CLI_CALIBRATE_BUILT

/* Commands of the layers above the planner (run, topo, ...): register
 * their usage text; dispatch returns the exit code, or -1 when argv[1] is
 * none of them. */
void cli_register_extensions(void);
int cli_dispatch_extension(int argc, char **argv);

#endif
