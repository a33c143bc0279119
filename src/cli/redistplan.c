/*
 * redistplan - plan, check, verify, run and measure array redistributions.
 *
 * The command table below is the one place that names the commands: each
 * row gives the handler (one file per command), the one-line summary of
 * `redistplan --help` and README's command table, the synopsis, the help
 * of `redistplan COMMAND --help` and the exit codes (doc/spec-format.md section
 * 5).  tests/cli/test_docs.sh checks README's table against these texts.
 *
 * Under a launcher (OMPI_COMM_WORLD_SIZE / PMI_SIZE) with more than one
 * rank, every command goes through the agreement of launch.c, so that a
 * command line mixing commands ends with an error on every rank, never a
 * hang: `run` and `calibrate` agree on their arguments; --help agrees and
 * rank 0 prints it; the others refuse (they run in one process).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "launch.h"

#define SPEC_HELP                                                            \
    "\nspec options (SPEC is a JSON file, or '-' with these options):\n"    \
    "  --mesh data=2,model=4      axes in order (ranks are row-major)\n"     \
    "  --shape 4096x16384         the global shape\n"                        \
    "  --dtype bf16               f16 bf16 f32 f64 i8..i64 u8..u64 c64 "     \
    "c128 (f32)\n"                                                          \
    "  --from 'data|model'        dims separated by '|', the axes of a "     \
    "dim\n"                                                                 \
    "  --to 'data,model|'           major first, separated by ','\n"         \
    "  --from-partial x,y         the partial axes of the source\n"          \
    "  --to-partial x             the partial axes of the target\n"          \
    "  --reduce sum               sum max min prod (sum)\n"                  \
    "  --from-split chunk         how a dim that does not divide is split:\n"\
    "                               ceil (default, JAX), balanced, chunk\n"  \
    "                               (PyTorch DTensor); and --to-split\n"     \
    "  --from-blocks '|3,3,2'     explicit block lengths, dims separated\n"  \
    "                               by '|', empty: the rule; and --to-blocks\n"\
    "  --name NAME                the spec's name\n"                       \
    "  --from-mesh train:dp=2,tp=2@0-3  in place of --mesh: two meshes,\n"  \
    "  --to-mesh infer:tp=4@4-7     each [NAME:]AXES[@DEVICES] (devices:\n"\
    "                               ids and ranges; default 0..n-1)\n"

#ifdef REDIST_HAVE_HWLOC
#define TOPO_SYNOPSIS " [--xml FILE | --synthetic DESC] [--rank-map FILE]"
#define TOPO_HELP                                                            \
    "  --xml FILE                 axis links from an hwloc XML topology\n"   \
    "  --synthetic DESC           axis links from a synthetic one (\"pack:2 " \
    "core:4\")\n"                                                           \
    "  --rank-map FILE            where the ranks run (a JSON list or rule; " \
    "alone:\n"                                                              \
    "                             on this machine)\n"
#else
#define TOPO_SYNOPSIS ""
#define TOPO_HELP ""
#endif

#define COST_SYNOPSIS                                                        \
    " [--objective time|bytes] [--cost FILE] [--axis-links AXIS=LEVEL,...]"  \
    " [--no-cross-sums] [--mesh-link LEVEL]" TOPO_SYNOPSIS
#define COST_HELP                                                            \
    "\ncost options:\n"                                                      \
    "  --objective time|bytes     time (default): least peak, then the "     \
    "modelled\n"                                                            \
    "                             time under the built-in cost model (or "   \
    "the\n"                                                                 \
    "                             options below), then bytes received, "    \
    "then\n"                                                                \
    "                             collectives; every step, exchange "       \
    "included.\n"                                                           \
    "                             bytes (version 1): least peak, then "     \
    "bytes,\n"                                                              \
    "                             then collectives, no exchange\n"          \
    "  --cost FILE                a cost model file (redistplan calibrate "  \
    "writes one)\n"                                                         \
    "  --axis-links AXIS=LEVEL,...  link levels of mesh axes: cache numa "   \
    "package\n"                                                             \
    "                             node network (default node)\n"           \
    "  --mesh-link LEVEL          two meshes: the level between the source "  \
    "mesh and\n"                                                            \
    "                             devices outside it (default: its slowest " \
    "axis,\n"                                                               \
    "                             at least node)\n"                         \
    "  --no-cross-sums            two meshes: resolve pending sums on the "  \
    "source\n"                                                              \
    "                             mesh (by default, or with --cross-sums, "  \
    "the\n"                                                                 \
    "                             transfer may sum them as it lands)\n"     \
    TOPO_HELP

#ifdef REDIST_HAVE_MPI
#define MPI_HELP                                                             \
    "\nmpi backend (under mpirun -np DEVICES, one rank per device; "         \
    "doc/mpi.md):\n"                                                        \
    "  --max-scratch BYTES        bound the scratch per rank (reductions "   \
    "run in\n"                                                              \
    "                             rounds, exchanges in place)\n"             \
    "  --mpi-packed               pack with the kernels, contiguous "        \
    "exchanges\n"                                                           \
    "  --mpi-native-reduce        reductions by MPI_Reduce_scatter_block /\n" \
    "                             MPI_Allreduce\n"
#else
#define MPI_HELP ""
#endif
#ifdef REDIST_HAVE_SHMEM
#define SHMEM_HELP                                                           \
    "\nshmem backend (under oshrun -np DEVICES, one PE per device; "         \
    "doc/shmem.md):\n"                                                      \
    "  --shmem-packed             pack with the kernels, contiguous puts\n"  \
    "  --shmem-no-ptr             no direct loads from peers (shmem_ptr)\n"  \
    "  --shmem-private            source and destination from malloc, not "  \
    "the\n"                                                                 \
    "                             symmetric heap\n"                          \
    "  --shmem-work BYTES         the work area of pushed reductions\n"
#else
#define SHMEM_HELP ""
#endif
#ifdef REDIST_HAVE_CALIBRATE
#define CALIBRATE_BUILT ""
#else
#define CALIBRATE_BUILT                                                      \
    "\n(not in this build: needs a redistplan built with MPI and hwloc)\n"
#endif

static const cli_command commands[] = {
    {"plan", cli_cmd_plan, "the optimal plan of a spec, as a table or JSON",
     "SPEC [--json] [--no-grid] [--plans] [--preserve-src] [--max-peak BYTES]"
     " [--max-states N]" COST_SYNOPSIS,
     "options:\n"
     "  --json                     the plan as JSON (doc/spec-format.md section 4)\n"
     "  --no-grid                  no block grid (shown for meshes of up to "
     "64\n"
     "                             devices)\n"
     "  --plans                    a spec with \"arrays\" (doc/arrays.md): "
     "each\n"
     "                             array's plan table after the rounds\n"
     "  --preserve-src             a spec with \"arrays\": rounds under the "
     "budget\n"
     "                             for runs that never write the source (more\n"
     "                             scratch: redist_exec_options_t's flag)\n"
     "  --max-peak BYTES           refuse plans that peak above BYTES per "
     "device\n"
     "  --max-states N             the search budget in visited types (4 "
     "million);\n"
     "                             past it, a valid plan not proven optimal, "
     "with\n"
     "                             lower bounds\n" COST_HELP SPEC_HELP
     "\nexamples:\n"
     "  redistplan plan specs/fsdp-rows-to-2d-columns.json --no-grid\n"
     "  redistplan plan specs/arrays/mlp-block-resharded.json\n"
     "  redistplan plan - --mesh x=2,y=4 --shape 1024x512 --from 'x,y|' "
     "--to '|x,y'\n",
     "0 ok, 2 bad input, 3 no plan", 0},
    {"check", cli_cmd_check,
     "check specs and their expect blocks: PASS, FAIL or ERROR each",
     "SPEC... [--junit FILE] [--preserve-src]" COST_SYNOPSIS,
     "Each spec is planned (by the objective of the cost options) and its "
     "plan\n"
     "checked against the spec's expect block; a spec without one passes "
     "when a\n"
     "plan exists (\"no expect: a plan exists\").  The summary counts "
     "passes,\n"
     "failures and errors (specs that are bad input) apart.\n"
     "\noptions:\n"
     "  --junit FILE               also write a JUnit XML report (a "
     "testcase per\n"
     "                             spec, named by its name, with its time)\n"
     "  --preserve-src             a spec with \"arrays\": its rounds for "
     "runs that\n"
     "                             keep the sources (as plan --preserve-src)\n"
     COST_HELP
     "\nexample:\n"
     "  redistplan check specs/*.json --junit check.xml\n",
     "0 all pass, 1 a failure, 2 bad input", 0},
    {"verify", cli_cmd_verify,
     "replay a plan step by step: valid or not, peak, bytes, optimality",
     "SPEC PLAN.json" COST_SYNOPSIS,
     "PLAN.json is a plan object (doc/spec-format.md section 4): redistplan plan "
     "--json\n"
     "writes one; a plan written elsewhere needs only its steps.  The plan "
     "is\n"
     "optimal or not for the objective of the cost options (time by "
     "default),\n"
     "whose optimum is quoted; \"not applicable\" for an exchange plan "
     "under bytes,\n"
     "\"not claimed\" for a plan that says it is not proven optimal.\n"
     COST_HELP SPEC_HELP
     "\nexample:\n"
     "  redistplan plan specs/hsdp-grad-sync.json --json > plan.json\n"
     "  redistplan verify specs/hsdp-grad-sync.json plan.json\n",
     "0 valid, 1 invalid plan, 2 bad input", 0},
#ifdef REDIST_HAVE_HWLOC
    {"topo", cli_cmd_topo,
     "the machine, how mesh axes map onto it, each step's modelled cost",
     "[SPEC] [--xml FILE | --synthetic DESC] [--rank-map FILE] [--cost FILE]"
     " [--axis-links AXIS=LEVEL,...] [--objective time|bytes]",
     "Without a spec: the machine and where the ranks run.  With one: how "
     "each\n"
     "mesh axis maps onto the machine, and the modelled cost of each step "
     "of the\n"
     "plans of both objectives (time, the default, and bytes).\n"
     "\noptions:\n"
     "  --xml FILE                 an hwloc XML topology (default: this "
     "machine)\n"
     "  --synthetic DESC           a synthetic one (\"pack:2 numa:2 "
     "core:8\")\n"
     "  --rank-map FILE            where the ranks run (default: one per "
     "core)\n"
     "  --cost FILE                a cost model file\n"
     "  --axis-links AXIS=LEVEL,...  override the link levels of mesh axes\n"
     "  --objective time|bytes     print only the plan of that objective\n"
     SPEC_HELP
     "\nexample:\n"
     "  redistplan topo specs/megatron-col-to-row-parallel.json --synthetic "
     "\"pack:2 core:4\"\n",
     "0 ok, 2 bad input", 0},
#else
    {"topo", cli_cmd_topo,
     "the machine, how mesh axes map onto it, each step's modelled cost",
     "[SPEC] [OPTIONS]",
     "(not in this build: needs a redistplan built with hwloc)\n",
     "0 ok, 2 bad input", 0},
#endif
    {"run", cli_cmd_run,
     "execute the plan on exact data, check every element, time it",
     "SPEC [--backend sim|mpi|shmem] [--shrink] [--max-bytes BYTES] "
     "[OPTIONS]",
     "Each value of the source identifies its global index; every element "
     "of every\n"
     "device is checked.  The report: time, scratch high-water mark, "
     "traffic.\n"
     "A spec with \"arrays\" (doc/arrays.md) runs on sim or under mpirun "
     "or oshrun,\n"
     "every array checked and the scratch held to its budget; the cost "
     "options, the\n"
     "backend's options, --max-bytes (sim), --repeat and --preserve-src "
     "apply to it.\n"
     "\noptions:\n"
     "  --backend sim|mpi|shmem    sim: every device in this process (the "
     "default);\n"
     "                             mpi (the default under a launcher): under "
     "mpirun\n"
     "                             -np DEVICES; shmem: under oshrun -np "
     "DEVICES\n"
     "  --shrink                   divide the dims (same steps, every type "
     "divisible)\n"
     "                             until the memory fits --max-bytes (a "
     "set:\n"
     "                             its arrays, largest first, and its "
     "budget)\n"
     "  --max-bytes BYTES          the memory of all devices together,\n"
     "                             devices x (src + dst + scratch): 1G\n"
     "  --preserve-src             never write the source (more scratch)\n"
     "  --fused                    sim: whole steps into their final places\n"
     "  --repeat N                 run N times, report the best\n"
     "  --corrupt-device R         flip bits of device R's last element "
     "before the\n"
     "                             check (tests the checker: exit 1)\n"
     "With a spec file, --shape, --dtype and --reduce override the spec's;\n"
     "The cost options choose the plan (the time objective by default; the "
     "shmem\n"
     "backend, which runs no exchange step, runs the bytes objective's "
     "plan\n"
     "instead when no --objective is given and the time plan has one).\n"
     MPI_HELP SHMEM_HELP COST_HELP SPEC_HELP
     "\nexamples:\n"
     "  redistplan run specs/megatron-col-to-row-parallel.json --repeat 5\n"
     "  mpirun -np 8 redistplan run specs/megatron-col-to-row-parallel.json "
     "--shrink\n",
     "0 exact, 1 mismatch, 2 bad input", 1},
    {"calibrate", cli_cmd_calibrate,
     "measure this machine's cost model under mpirun, write a --cost file",
     "[-o FILE|-] [--sizes SMALL,LARGE] [--reps R] [--rank-map-out FILE] "
     "[--quiet]",
     "Run it under mpirun -np N with the ranks placed as in the real job: "
     "one pair\n"
     "of ranks per link level they span measures latency and bandwidth "
     "(ping-pong),\n"
     "rank 0 the reduction speed.\n"
     "\noptions:\n"
     "  -o FILE, --output FILE     the cost model file (redist-cost.json; "
     "'-': stdout)\n"
     "  --sizes SMALL,LARGE        the two message sizes (8,4M)\n"
     "  --reps R                   timed round trips, the best counts (20)\n"
     "  --rank-map-out FILE        where the ranks ran, as a rank map "
     "(--rank-map)\n"
     "  --quiet, -q                no table on stdout\n" CALIBRATE_BUILT
     "\nexample:\n"
     "  mpirun --bind-to core -np 8 redistplan calibrate -o cost.json\n",
     "0 ok, 2 bad input or cannot write", 1},
};

#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void list_commands(FILE *f)
{
    fprintf(f, "usage: redistplan COMMAND [ARGS]      (redistplan COMMAND "
               "--help: its options)\n\ncommands:\n");
    for (int k = 0; k < NCOMMANDS; k++)
        fprintf(f, "  %-10s %s\n", commands[k].name, commands[k].summary);
    fprintf(f, "\nexit codes: 0 ok; 1 check or verify failure, data "
               "mismatch; 2 bad input;\n"
               "            3 no plan exists (plan)\n");
}

/* "usage: redistplan NAME SYNOPSIS", wrapped before a " [" at 79
 * columns, continued under the synopsis. */
static void print_usage(const cli_command *c)
{
    int indent = printf("usage: redistplan %s ", c->name), col = indent;
    const char *s = c->synopsis;
    while (*s) {
        const char *end = s + 1; /* up to the next " [" */
        while (*end && !(end[0] == ' ' && end[1] == '['))
            end++;
        if (col > indent && col + (end - s) > 79) {
            printf("\n%*s", indent, "");
            col = indent;
            s += *s == ' ';
        }
        col += printf("%.*s", (int)(end - s), s);
        s = end;
    }
    printf("\n");
}

static void print_help(const cli_command *c)
{
    print_usage(c);
    printf("\n%s\n\n%s\nexit codes: %s\n", c->summary, c->help, c->exits);
}

static const cli_command *find(const char *name)
{
    for (int k = 0; k < NCOMMANDS; k++)
        if (strcmp(commands[k].name, name) == 0)
            return &commands[k];
    return NULL;
}

/* `COMMAND --help`: under a launcher of several ranks, every rank agrees
 * (one given --help and the others not is an error) and rank 0 prints. */
static int help(const cli_command *c)
{
    if (cli_launch_size() <= 1) {
        print_help(c);
        return CLI_OK;
    }
    cli_fp fp;
    cli_launch_begin(c->name);
    cli_fp_init(&fp, c->name, 1);
    int rc = cli_launch_agree(&fp, 0);
    if (rc == CLI_OK && cli_launch_rank() <= 0)
        print_help(c);
    return cli_launch_end(rc);
}

/* A command of one process under a launcher of several ranks: refused on
 * every rank (through the agreement, so a rank running `run` meanwhile
 * learns why instead of waiting). */
static int refuse(const cli_command *c)
{
    long n = cli_launch_size();
    cli_launch_begin(c->name);
    fprintf(stderr,
            "redistplan: %s: runs in one process, not under a launcher of "
            "%ld ranks (each would do the same work); run it without "
            "mpirun or oshrun (only run and calibrate run under one)\n",
            c->name, n);
    return cli_launch_end(CLI_BAD_INPUT);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        list_commands(stderr);
        return CLI_BAD_INPUT;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 ||
        strcmp(a, "help") == 0) {
        const cli_command *c = argc > 2 ? find(argv[2]) : NULL;
        if (c)
            print_help(c);
        else
            list_commands(stdout);
        return CLI_OK;
    }
    if (strcmp(a, "--version") == 0) {
        printf("redistplan %s\n", REDIST_VERSION_STRING);
        return CLI_OK;
    }
    const cli_command *c = find(a);
    if (!c) {
        char safe[128];
        cli_sanitize(a, safe, sizeof safe);
        fprintf(stderr, "redistplan: unknown command \"%s\"\n", safe);
        list_commands(stderr);
        return CLI_BAD_INPUT;
    }
    if (cli_wants_help(argc, argv))
        return help(c);
    if (!c->launched && cli_launch_size() > 1 && cli_launched())
        return refuse(c);
    return c->run(c, argc, argv);
}
