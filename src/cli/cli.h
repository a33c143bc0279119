/*
 * Shared pieces of the redistplan commands.
 *
 * Layout of src/cli (nothing here calls back into redistplan.c):
 *   redistplan.c   main: the command table (name, handler, summary, usage
 *                  and help text), `--help`, the launcher rule
 *   options.c      the option parser and the option groups every command
 *                  shares (spec, cost and topology), the cost model they
 *                  give, loading a spec
 *   common.c       formatting, sanitizing, the clock, the environment
 *   plan.c check.c verify.c topo.c calibrate*.c    one file per command
 *   run.c          `run`: options, spec, plan, --shrink, the agreement;
 *                  then one backend: run_sim.c, or run_launched.c (the
 *                  driver of one process per device) with run_mpi.c or
 *                  run_shmem.c; run_report.c prints the report; a spec
 *                  with "arrays": run_set.c (sim), or run_set_launched.c
 *                  (the set driver of one process per device) with the
 *                  set hooks of run_mpi.c or run_shmem.c
 *   launch.c       the agreement of the ranks under a launcher
 *
 * The command line is a user of the library: these files include only
 * the public headers (include/), each other, system headers and the
 * test-data pattern (src/testing/pattern.h), and call only redist_*
 * functions (test cli-includes; README, "Layers").
 */
#ifndef REDIST_CLI_H
#define REDIST_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "redist.h"

/* Exit codes of every command (doc/spec-format.md section 5). */
enum cli_exit {
    CLI_OK = 0,
    CLI_FAIL = 1,     /* check: an expectation failed; verify: invalid plan */
    CLI_MISMATCH = 1, /* run: the data is not exact */
    CLI_BAD_INPUT = 2,
    CLI_NO_PLAN = 3   /* plan: no plan exists (or none within --max-peak) */
};

/* ------------------------------------------------------------ commands */

/* One row of the command table (redistplan.c). */
typedef struct cli_command {
    const char *name;
    /* argv[1] is the command's name; returns the exit code */
    int (*run)(const struct cli_command *self, int argc, char **argv);
    const char *summary;  /* one line: `redistplan --help`, README's table */
    const char *synopsis; /* the arguments: "SPEC [--json] ..." */
    const char *help;     /* the options, one per line, and an example */
    const char *exits;    /* "0 ok, 2 bad input, 3 no plan" */
    int launched;         /* runs under a launcher, one rank per device */
} cli_command;

int cli_cmd_plan(const cli_command *self, int argc, char **argv);
int cli_cmd_check(const cli_command *self, int argc, char **argv);
int cli_cmd_verify(const cli_command *self, int argc, char **argv);
int cli_cmd_topo(const cli_command *self, int argc, char **argv);
int cli_cmd_run(const cli_command *self, int argc, char **argv);
int cli_cmd_calibrate(const cli_command *self, int argc, char **argv);

/* ------------------------------------------------------------- options */

typedef enum cli_kind {
    CLI_FLAG,   /* int *out = 1 */
    CLI_BIT,    /* unsigned *out |= bits */
    CLI_STR,    /* const char **out = the value */
    CLI_U64,    /* uint64_t *out: digits only ("is not WHAT") */
    CLI_COUNT,  /* uint64_t *out: digits only, from lo to hi */
    CLI_BYTES,  /* uint64_t *out: a byte count (64K, 1G), at least lo */
    CLI_CHOICE  /* int *out = the index of the value in choices */
} cli_kind;

/* One option of a command.  Values: "--name VALUE" or "--name=VALUE". */
typedef struct cli_opt {
    const char *name, *alias; /* "--output", "-o" (alias may be NULL) */
    cli_kind kind;
    void *out;
    uint64_t lo, hi;          /* BIT: the bits; COUNT: range; BYTES: least */
    const char *what;         /* U64, COUNT: "a count", "a byte count" */
    const char *const *choices; /* CHOICE: NULL-ended */
} cli_opt;

/* The spec of a command: a file, or '-' with the inline options. */
typedef struct cli_spec_args {
    const char *path; /* spec file, or "-" / NULL for the inline options */
    const char *mesh, *shape, *dtype, *from, *from_partial, *to, *to_partial,
        *reduce, *name;
    const char *from_split, *from_blocks, *to_split, *to_blocks;
    const char *from_mesh, *to_mesh; /* two meshes (doc/meshes.md) */
} cli_spec_args;

/* Topology options (--xml FILE, --synthetic DESC, --rank-map FILE). */
typedef struct cli_topo_args {
    const char *xml, *synthetic, *rank_map;
} cli_topo_args;

/* The cost and topology options: --objective time|bytes, --cost FILE,
 * --axis-links AXIS=LEVEL,..., and the topology ones. */
typedef struct cli_cost_args {
    int objective; /* -1: not given (time); else REDIST_OBJECTIVE_* */
    const char *file, *axis_links;
    cli_topo_args topo;
    int cross_sums;    /* --cross-sums (the default): sums may cross */
    int no_cross_sums; /* --no-cross-sums: resolved on the source mesh */
    const char *mesh_link; /* --mesh-link LEVEL: between the meshes */
} cli_cost_args;

/* What a command accepts, and what its command line held. */
typedef struct cli_cmdline {
    const char *cmd;        /* the command's name, for messages */
    const cli_opt *own;     /* its own options, ended by {NULL}; or NULL */
    cli_spec_args *spec;    /* the spec options, or NULL */
    cli_cost_args *cost;    /* the cost and topology options, or NULL */
    const char **pos;       /* the arguments that are not options */
    int maxpos;             /* at most this many (pos holds as many) */
    const char *pos_words;  /* "one SPEC": in "plan takes one SPEC" */
    int npos;               /* out */
} cli_cmdline;

/* Parse argv[2..argc-1].  0, or CLI_BAD_INPUT after a message naming the
 * command and the option.  Clears *c->spec and *c->cost first. */
int cli_parse(cli_cmdline *c, int argc, char **argv);

/* 1 when argv[2..] holds --help or -h. */
int cli_wants_help(int argc, char **argv);

/* The spec the options name (flags: REDIST_SPEC_*). */
redist_status_t cli_load_spec(const cli_spec_args *a, unsigned flags,
                              redist_spec_t **out, redist_error_t *err);
/* 1 when the spec options name a spec (a path or --mesh). */
int cli_spec_given(const cli_spec_args *a);

/* 1 when the options ask for a cost model: a cost option, or the time
 * objective (the default: every case but --objective bytes alone). */
int cli_cost_given(const cli_cost_args *c);
/* 1 when the options give links by hand (--axis-links, --mesh-link or a
 * topology): a run under mpirun then keeps them (no host discovery). */
int cli_links_given(const cli_cost_args *c);
/* Planner options of the cost options: the objective, and when
 * cli_cost_given *model for `mesh` (the defaults, then the --cost file, the
 * links of the topology options, --axis-links).  CLI_OK or CLI_BAD_INPUT
 * after the message; the _err form gives the error in err instead. */
redist_status_t cli_plan_options_err(const char *cmd, const cli_cost_args *c,
                                     const redist_mesh_t *mesh,
                                     redist_cost_model_t *model,
                                     redist_plan_options_t *opts,
                                     redist_error_t *err);
int cli_plan_options(const char *cmd, const cli_cost_args *c,
                     const redist_mesh_t *mesh, redist_cost_model_t *model,
                     redist_plan_options_t *opts);

/* "redistplan: <the error>", control characters escaped. */
void cli_print_error(const redist_error_t *err);
/* The source of an error without one: the path, or "<command line>". */
void cli_error_source(redist_error_t *err, const char *path);
/* Digits only (strtoull takes " -1" for 2^64-1): 0, or -1. */
int cli_parse_u64(const char *s, uint64_t *out);

/* ------------------------------------------- common.c: shared helpers */

double cli_now(void); /* monotonic seconds */
/* "512 B", or "65536 B (64 KiB)" from 1 KiB on */
void cli_fmt_bytes(uint64_t b, char *buf, size_t n);
/* Where global device `dev` of a spec sits: its coordinates, or on a
 * two-mesh spec "name:coords" for each mesh it is in. */
void cli_fmt_device(const redist_spec_t *s, int64_t dev, char *buf,
                    size_t size);
/* "x=0,y=1": the coordinates of device `rank` */
void cli_fmt_coords(const redist_mesh_t *m, int64_t rank, char *buf,
                    size_t size);
/* snprintf appending at *pos into buf of `size` bytes: never overflows;
 * *pos stops at size - 1 once the text no longer fits. */
void cli_appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* `s` made safe for a terminal and for XML: control characters (C0, DEL,
 * C1, U+FFFE/U+FFFF) written \u001b, bytes that are not UTF-8 \xff; the
 * rest as is.  Truncated to whole characters. */
void cli_sanitize(const char *s, char *out, size_t size);
/* A byte count such as 64K or 4MiB (redist_bytes_parse): 0, or -1 when
 * malformed; the _n form reads the first n characters. */
int cli_parse_size(const char *s, uint64_t *out);
int cli_parse_size_n(const char *s, size_t n, uint64_t *out);
/* The value of environment variable a, else b, as a number; -1 when
 * neither is set (the launcher's rank or size: OMPI_COMM_WORLD_RANK /
 * PMI_RANK, OMPI_COMM_WORLD_SIZE / PMI_SIZE). */
long cli_env_long(const char *a, const char *b);
/* The number of ranks the launcher started (-1: no launcher). */
long cli_launch_size(void);
/* 0 when `path` can probably be written ("-": standard output), else -1
 * with the reason in why (checked before the work, so a bad path fails at
 * once; the write itself is checked again). */
int cli_check_writable(const char *path, char *why, size_t n);

/* ------------------------------------------ topo.c (built with hwloc) */

#ifdef REDIST_HAVE_HWLOC
/* Set model->axis_link from the topology and placement the options name
 * (the local machine when only --rank-map is given); no-op without them. */
redist_status_t cli_topo_axis_links(const cli_topo_args *a,
                                    const redist_mesh_t *mesh,
                                    redist_cost_model_t *model,
                                    redist_error_t *err);
#endif

#endif
