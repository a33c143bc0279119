/*
 * `redistplan calibrate`, under `mpirun -np N`: measure the alpha-beta
 * cost model of this machine (doc/topology.md, "The cost model and
 * calibration files") and write the JSON file that `--cost` and
 * redist_cost_model_load_file read.
 *
 *   mpirun -np N redistplan calibrate [-o FILE|-] [--sizes SMALL,LARGE]
 *                                     [--reps R] [--rank-map-out FILE]
 *                                     [--quiet]
 *
 * 1. Every rank finds its host (MPI_Get_processor_name) and where it runs
 *    (hwloc: the first PU of its binding when it is bound within one
 *    core, else the PU it last ran on).  Rank 0 gathers them, builds a
 *    placement (redist_placement_create on this machine's topology, hosts
 *    numbered by distinct names) and classifies every pair of ranks by
 *    redist_placement_link.
 * 2. For each link level some pair spans, one pair measures it: the
 *    lowest-numbered pair (lexicographic) at that level, preferring two
 *    ranks on distinct PUs.  Rank a sends to rank b and b sends back
 *    (MPI_Send / MPI_Recv), CAL_WARMUP round trips, then R timed ones, for
 *    a SMALL (8 B) and then a LARGE (4 MiB) message; the other ranks wait
 *    in MPI_Barrier.  The one-way time is half the round trip; the
 *    statistic is the minimum over the R repetitions (the least disturbed
 *    by the rest of the machine).
 *        alpha = one-way time of the small message
 *        beta  = (one-way time of the large message - alpha) / LARGE
 *    When the large message is not slower than the small one, or gives a
 *    bandwidth above 1 TB/s (noise), beta falls back to the large
 *    message's whole one-way time / LARGE, which only overestimates the
 *    cost, and stderr says so.
 * 3. gamma (seconds per reduced byte): rank 0 sums two f64 buffers of
 *    LARGE bytes (at least 64 KiB) into a third with the executor's own
 *    reduction kernel (redist_reduce_local), minimum of R.
 * 4. Rank 0 writes {"machine", "method", "links", "gamma"}, naming only the
 *    measured levels (the others keep their defaults when loaded), loads
 *    the file back with redist_cost_model_load_file as a self-check, and
 *    prints a table unless --quiet or `-o -`.
 *
 * Without a launcher (or with -np 1) there is no pair: only gamma is
 * measured, the file has no links, and stderr says so (exit 0).
 * Failures are collective: rank 0 decides and broadcasts the status, so
 * every rank exits 2 after one message (rank 0's).  Before any of this
 * every rank agrees (launch.c) that every rank parsed its options and was
 * given the same ones: a bad option on one rank, or an option given
 * differently, is an error on every rank, printed by every rank (by rank
 * 0 alone when every rank failed alike).  Exit codes: 0 ok, 2 bad input
 * or failure.
 */
#include <errno.h>
#include <float.h>
#include <hwloc.h>
#include <jansson.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "launch.h"
#include "redist/topo.h"
#include "run_mpi.h"
#include "../core/internal.h"

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
    uint64_t small, large;
    int reps, quiet, help;
} cal_opts;

/* What each rank tells rank 0. */
typedef struct cal_rank {
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    int32_t pu;    /* logical PU index; -1 when hwloc failed */
    int32_t bound; /* 1: bound within one core; 0: last location */
    char error[200];
} cal_rank;

static int cal_mpi; /* MPI started (under a launcher) */

/* ------------------------------------------------------------ options */

/* 0: go on (o->help: --help was given); 2: a bad option (message
 * printed). */
static int parse_options(int argc, char **argv, cal_opts *o)
{
    o->out = CAL_DEFAULT_FILE;
    o->rank_map = NULL;
    o->small = CAL_SMALL;
    o->large = CAL_LARGE;
    o->reps = CAL_REPS;
    o->quiet = 0;
    o->help = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!has || argv[i + 1][0] == '\0') {
                fprintf(stderr, "redistplan: calibrate: %s needs a file name "
                                "('-' for standard output)\n",
                        a);
                return 2;
            }
            o->out = argv[++i];
        } else if (strcmp(a, "--rank-map-out") == 0) {
            if (!has || argv[i + 1][0] == '\0') {
                fprintf(stderr, "redistplan: calibrate: --rank-map-out needs "
                                "a file name\n");
                return 2;
            }
            o->rank_map = argv[++i];
        } else if (strcmp(a, "--sizes") == 0) {
            const char *v = has ? argv[i + 1] : "", *c = strchr(v, ',');
            if (!c || cli_parse_size_n(v, (size_t)(c - v), &o->small) ||
                cli_parse_size_n(c + 1, strlen(c + 1), &o->large) ||
                o->small < 1 || o->small >= o->large ||
                o->large > CAL_MAX_LARGE) {
                fprintf(stderr,
                        "redistplan: calibrate: --sizes: expected "
                        "SMALL,LARGE in bytes, 1 <= SMALL < LARGE <= 1G "
                        "(e.g. 8,4M), got %s\n",
                        has ? v : "(missing)");
                return 2;
            }
            i++;
        } else if (strcmp(a, "--reps") == 0) {
            uint64_t r = 0;
            if (!has || cli_parse_u64(argv[i + 1], &r) || r < 1 ||
                r > CAL_MAX_REPS) {
                fprintf(stderr,
                        "redistplan: calibrate: --reps: expected a count "
                        "from 1 to %d, got %s\n",
                        CAL_MAX_REPS, has ? argv[i + 1] : "(missing)");
                return 2;
            }
            o->reps = (int)r;
            i++;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = 1;
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr,
                    "redistplan: calibrate: unknown option %s (options: -o "
                    "FILE, --sizes SMALL,LARGE, --reps R, --rank-map-out "
                    "FILE, --quiet)\n",
                    a);
            return 2;
        } else {
            fprintf(stderr,
                    "redistplan: calibrate: unexpected argument \"%s\" "
                    "(calibrate takes no spec; run it under mpirun -np N)\n",
                    a);
            return 2;
        }
    }
    return 0;
}

/* 0 when `path` can probably be written (checked before measuring, so a
 * bad path fails at once; the write itself is checked again). */
static int check_writable(const char *path, char *why, size_t n)
{
    struct stat st;
    if (strcmp(path, "-") == 0)
        return 0;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, n, "%s", strerror(EISDIR));
            return -1;
        }
        if (access(path, W_OK)) {
            snprintf(why, n, "%s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    char dir[4096];
    rd_strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (access(dir, W_OK | X_OK)) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ location */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        s[--n] = '\0';
}

/* Where this rank runs; on rank 0 also the CPU model and package count. */
static void locate(cal_rank *me, char *model, size_t msize, int *npkg)
{
    hwloc_topology_t t;
    me->pu = -1;
    me->bound = 0;
    if (hwloc_topology_init(&t)) {
        snprintf(me->error, sizeof me->error, "hwloc_topology_init failed");
        return;
    }
    if (hwloc_topology_load(t)) {
        snprintf(me->error, sizeof me->error,
                 "hwloc cannot discover this machine: %s", strerror(errno));
        hwloc_topology_destroy(t);
        return;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_obj_t pu = NULL;
    if (set && hwloc_get_cpubind(t, set, HWLOC_CPUBIND_THREAD) == 0) {
        hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(t));
        pu = hwloc_get_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_PU, 0);
        hwloc_obj_t core =
            pu ? hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu) : NULL;
        if (pu && (core ? hwloc_bitmap_isincluded(set, core->cpuset)
                        : hwloc_bitmap_weight(set) == 1))
            me->bound = 1;
        else
            pu = NULL;
    }
    if (!pu && set &&
        hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD) == 0)
        pu = hwloc_get_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_PU, 0);
    if (pu)
        me->pu = (int32_t)pu->logical_index;
    else
        snprintf(me->error, sizeof me->error,
                 "hwloc cannot tell on which processing unit it runs");
    if (model) {
        int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
        hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
        const char *m =
            hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "CPUModel");
        if (!m && pkg)
            m = hwloc_obj_get_info_by_name(pkg, "CPUModel");
        rd_strlcpy(model, m ? m : "", msize);
        trim(model);
        *npkg = n > 0 ? n : 1;
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(t);
}

/* ---------------------------------------------------------- measuring */

/* `reps` timed round trips of `bytes` after CAL_WARMUP untimed ones; the
 * initiator returns the least one-way time (half a round trip). */
static double pingpong(int peer, int initiator, char *buf, int bytes,
                       int reps)
{
    double best = DBL_MAX;
    for (int i = 0; i < CAL_WARMUP + reps; i++) {
        if (initiator) {
            double t0 = cli_now();
            MPI_Send(buf, bytes, MPI_BYTE, peer, CAL_TAG, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, peer, CAL_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            double t = (cli_now() - t0) / 2;
            if (i >= CAL_WARMUP && t < best)
                best = t;
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, peer, CAL_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, peer, CAL_TAG, MPI_COMM_WORLD);
        }
    }
    return best;
}

/* Seconds per reduced byte of the executor's f64 sum kernel: two inputs
 * of `bytes` into a third buffer (each output byte reduces one input
 * byte); the minimum of `reps` after one warm-up.  -1 without memory. */
static double measure_gamma(uint64_t bytes, int reps)
{
    uint64_t count = bytes / sizeof(double);
    double *in[2], *out;
    in[0] = malloc((size_t)count * sizeof(double));
    in[1] = malloc((size_t)count * sizeof(double));
    out = malloc((size_t)count * sizeof(double));
    double best = -1;
    if (in[0] && in[1] && out) {
        for (uint64_t e = 0; e < count; e++) {
            in[0][e] = (double)(e % 1000) * 0.5;
            in[1][e] = 1.0 + (double)(e % 7);
        }
        best = DBL_MAX;
        redist_status_t rst = REDIST_OK;
        for (int i = 0; i < 1 + reps; i++) {
            double t0 = cli_now();
            rst = redist_reduce_local(
                REDIST_F64, REDIST_REDUCE_SUM, 2, (const void *const *)in,
                out, (int64_t)count, NULL);
            double t = cli_now() - t0;
            if (rst)
                break;
            if (i >= 1 && t < best)
                best = t;
        }
        /* the result is used: the loop cannot be dropped */
        if (rst ||
            out[count - 1] != in[0][count - 1] + in[1][count - 1])
            best = -1;
        else
            best /= (double)(count * sizeof(double));
    }
    free(in[0]);
    free(in[1]);
    free(out);
    return best;
}

/* ------------------------------------------------------- collectives */

static void bcast_ints(int *v, int n)
{
    if (cal_mpi)
        MPI_Bcast(v, n, MPI_INT, 0, MPI_COMM_WORLD);
}

static int finish(int rc)
{
    fflush(stdout);
    fflush(stderr);
    return cli_launch_end(rc); /* MPI_Finalize under a launcher */
}

/* ------------------------------------------------------------- output */

/* JSON strings must be UTF-8: keep printable ASCII only. */
static void ascii(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

/* One JSON value on one line (steals v); NULL on failure. */
static char *dump_any(json_t *v)
{
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(6))
                : NULL;
    json_decref(v);
    return t;
}

static void fmt_size(uint64_t b, char *buf, size_t n)
{
    if (b >= 1024 && b % 1024 == 0)
        rd_format_bytes(b, buf, n);
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
}

/* Write `text` to `path` ("-": standard output). */
static int write_text(const char *path, const char *text, char *why,
                      size_t n)
{
    if (strcmp(path, "-") == 0) {
        fputs(text, stdout);
        fflush(stdout);
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    int bad = fputs(text, f) < 0;
    if (fclose(f) || bad) {
        snprintf(why, n, "%s", strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}

/* The rank map of where the ranks ran (doc/topology.md, one entry per
 * rank), for `redistplan topo/plan --rank-map`. */
static char *rank_map_json(char **names, int nhosts, const int64_t *hosts,
                           const int *pus, int n)
{
    size_t cap = 256 + (size_t)n * 48, pos = 0;
    for (int k = 0; k < nhosts; k++)
        cap += 2 * strlen(names[k]) + 8;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    rd_appendf(t, cap, &pos,
               "{\n  \"comment\": \"written by redistplan calibrate: where "
               "each rank of the job ran (logical PU indexes)\",\n"
               "  \"hosts\": [");
    for (int k = 0; k < nhosts; k++) {
        char *nm = dump_any(json_string(names[k]));
        if (!nm) {
            free(t);
            return NULL;
        }
        rd_appendf(t, cap, &pos, "%s%s", k ? ", " : "", nm);
        free(nm);
    }
    rd_appendf(t, cap, &pos, "],\n  \"ranks\": [");
    for (int k = 0; k < n; k++)
        rd_appendf(t, cap, &pos, "%s\n    {\"host\": %lld, \"pu\": %d}",
                   k ? "," : "", (long long)hosts[k], pus[k]);
    rd_appendf(t, cap, &pos, "\n  ]\n}\n");
    return t;
}

/* ----------------------------------------------------- rank 0's part */

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

static void setup_free(cal_setup *s)
{
    if (s->names)
        for (int k = 0; k < s->nhosts; k++)
            free(s->names[k]);
    free(s->names);
    free(s->hosts);
    free(s->pus);
    redist_placement_free(s->pl);
    redist_topo_free(s->topo);
}

/* Placement from the gathered locations; pairs[l] = {a, b} (a < b) or
 * {-1, -1}.  Returns 0, or 2 after printing the error. */
static int plan_pairs(cal_rank *all, int n, cal_setup *s,
                      int pairs[NL][2], int same_pu[NL])
{
    redist_error_t err;
    redist_error_clear(&err);
    for (int r = 0; r < n; r++)
        if (all[r].pu < 0) {
            fprintf(stderr, "redistplan: calibrate: rank %d (%s): %s\n", r,
                    all[r].host, all[r].error);
            return 2;
        }
    s->names = calloc((size_t)n, sizeof *s->names);
    s->hosts = calloc((size_t)n, sizeof *s->hosts);
    s->pus = calloc((size_t)n, sizeof *s->pus);
    if (!s->names || !s->hosts || !s->pus)
        goto oom;
    s->all_bound = 1;
    for (int r = 0; r < n; r++) {
        int h = 0;
        ascii(all[r].host);
        while (h < s->nhosts && strcmp(s->names[h], all[r].host))
            h++;
        if (h == s->nhosts) {
            if (!(s->names[h] = strdup(all[r].host)))
                goto oom;
            s->nhosts++;
        }
        s->hosts[r] = h;
        s->pus[r] = all[r].pu;
        s->all_bound &= all[r].bound;
    }
    if (redist_topo_load_local(&s->topo, &err) ||
        redist_placement_create(s->topo, n, s->hosts, s->pus, &s->pl,
                                &err)) {
        cli_print_error(&err);
        fprintf(stderr, "redistplan: calibrate: cannot place the ranks on "
                        "this machine's topology (every host must look "
                        "like rank 0's)\n");
        return 2;
    }
    /* the lowest pair at each level, preferring two distinct PUs (two
     * ranks time-sharing one PU measure the scheduler, not a link) */
    int found = 0;
    for (int l = 0; l < NL; l++) {
        pairs[l][0] = pairs[l][1] = -1;
        same_pu[l] = 0;
    }
    for (int a = 0; a < n && found < NL; a++)
        for (int b = a + 1; b < n && found < NL; b++) {
            int l = (int)redist_placement_link(s->pl, a, b);
            int shared = s->hosts[a] == s->hosts[b] && s->pus[a] == s->pus[b];
            if (pairs[l][0] < 0) {
                pairs[l][0] = a;
                pairs[l][1] = b;
                same_pu[l] = shared;
                found += !shared;
            } else if (same_pu[l] && !shared) {
                pairs[l][0] = a;
                pairs[l][1] = b;
                same_pu[l] = 0;
                found++;
            }
        }
    return 0;
oom:
    fprintf(stderr, "redistplan: calibrate: out of memory\n");
    return 2;
}

static void print_ranks(const cal_setup *s, const cal_rank *all, int n)
{
    printf("  %4s  %-16s %7s %5s %6s %5s %5s  %s\n", "rank", "host",
           "package", "numa", "cache", "core", "pu", "location");
    for (int r = 0; r < n; r++) {
        redist_topo_location_t l;
        if (redist_placement_location(s->pl, r, &l))
            break;
        printf("  %4d  %-16.64s %7d %5d %6d %5d %5d  %s\n", r,
               s->names[l.host], l.package, l.numa, l.cache, l.core, l.pu,
               all[r].bound ? "bound" : "not bound: last PU");
    }
}

/* Measured values -> model; warnings on stderr. */
static void fit(const double t[NL][2], const int pairs[NL][2],
                uint64_t large, redist_cost_model_t *m, int measured[NL])
{
    redist_cost_model_t def;
    redist_cost_model_default(&def);
    for (int l = 0; l < NL; l++) {
        measured[l] = pairs[l][0] >= 0;
        if (!measured[l])
            continue;
        const char *name = redist_link_name((redist_link_t)l);
        double ts = t[l][0], tl = t[l][1], L = (double)large;
        double alpha = ts, beta;
        if (!(alpha > 0) || !(alpha <= 1e3)) {
            fprintf(stderr,
                    "redistplan: calibrate: %s: the small message took %g "
                    "s, not a usable latency; alpha keeps its default "
                    "(%g s)\n",
                    name, ts, def.alpha[l]);
            alpha = def.alpha[l];
        }
        beta = (tl - alpha) / L;
        if (!(tl > alpha) || !(L / (tl - alpha) <= CAL_MAX_BW)) {
            if (tl > 0 && tl / L <= 1e3 && L / tl <= CAL_MAX_BW) {
                beta = tl / L;
                fprintf(stderr,
                        "redistplan: calibrate: %s: the %.0f B message "
                        "(%.3f us one way) is not measurably slower than "
                        "the small one (%.3f us): beta is its whole one-way "
                        "time per byte, %.4g s/B (%.2f GB/s); use a larger "
                        "--sizes LARGE\n",
                        name, L, tl * 1e6, ts * 1e6, beta, 1e-9 / beta);
            } else {
                beta = def.beta[l];
                fprintf(stderr,
                        "redistplan: calibrate: %s: the %.0f B message "
                        "took %g s, not a usable bandwidth; beta keeps its "
                        "default (%g s/B)\n",
                        name, L, tl, beta);
            }
        }
        if (!(beta <= 1e3))
            beta = def.beta[l];
        m->alpha[l] = alpha;
        m->beta[l] = beta;
    }
}

static int close_enough(double a, double b)
{
    return fabs(a - b) <= 1e-5 * fabs(b);
}

/* Rank 0 after the measurements: fit, write, check, print.  0 or 2. */
static int report(const cal_opts *o, const cal_setup *s, const cal_rank *all,
                  int n, const int pairs[NL][2], const int same_pu[NL],
                  const double t[NL][2], double gamma_s, uint64_t gbytes)
{
    redist_cost_model_t def, m;
    int measured[NL], nmeasured = 0;
    redist_cost_model_default(&def);
    m = def;
    fit(t, pairs, o->large, &m, measured);
    for (int l = 0; l < NL; l++)
        nmeasured += measured[l];
    if (gamma_s > 0 && gamma_s <= 1e3)
        m.gamma = gamma_s;
    else
        fprintf(stderr,
                "redistplan: calibrate: the reduction could not be timed "
                "(%s); gamma keeps its default (%g s/B)\n",
                gamma_s < 0 ? "out of memory" : "no measurable time",
                def.gamma);

    /* machine: host names and CPU model */
    char machine[512], method[2048], sb[32], lb[32], gb[32];
    size_t pos = 0;
    for (int h = 0; h < s->nhosts && h < 4; h++)
        rd_appendf(machine, sizeof machine, &pos, "%s%.64s", h ? ", " : "",
                   s->names[h]);
    if (s->nhosts > 4)
        rd_appendf(machine, sizeof machine, &pos, ", ... (%d hosts)",
                   s->nhosts);
    if (s->model[0])
        rd_appendf(machine, sizeof machine, &pos, " (%s%dx %s)",
                   s->nhosts > 1 ? "each " : "", s->npkg, s->model);
    ascii(machine);

    fmt_size(o->small, sb, sizeof sb);
    fmt_size(o->large, lb, sizeof lb);
    fmt_size(gbytes, gb, sizeof gb);
    pos = 0;
    rd_appendf(method, sizeof method, &pos,
               "MPI ping-pong (MPI_Send/MPI_Recv) between one pair of ranks "
               "per link level (");
    if (!nmeasured)
        rd_appendf(method, sizeof method, &pos, "none: %d rank%s", n,
                   n == 1 ? "" : "s");
    for (int l = 0, k = 0; l < NL; l++)
        if (measured[l])
            rd_appendf(method, sizeof method, &pos, "%s%s: ranks %d-%d",
                       k++ ? "; " : "", redist_link_name((redist_link_t)l),
                       pairs[l][0], pairs[l][1]);
    rd_appendf(method, sizeof method, &pos,
               "), %s and %s messages, minimum of %d round trips after %d "
               "warm-up ones; alpha = one-way time of the small message, "
               "beta = (one-way time of the large message - alpha) / its "
               "bytes; gamma: f64 sum of two %s buffers with the executor's "
               "reduction kernel on rank 0, minimum of %d; %d rank%s on %d "
               "host%s, %s",
               sb, lb, o->reps, CAL_WARMUP, gb, o->reps, n, n == 1 ? "" : "s",
               s->nhosts, s->nhosts == 1 ? "" : "s",
               s->all_bound ? (n == 1 ? "bound within one core"
                                      : "each bound within one core")
                            : (n == 1 ? "not bound to one core"
                                      : "not all bound to one core (their "
                                        "PU is where they last ran)"));

    /* one level per line, as in doc/topology.md */
    char *full = NULL, *mj = dump_any(json_string(machine)),
         *tj = dump_any(json_string(method)),
         *gj = dump_any(json_real(m.gamma)), *lj[NL];
    int ok = mj && tj && gj;
    for (int l = 0; l < NL; l++) {
        lj[l] = measured[l] ? dump_any(json_pack("{s:f,s:f}", "alpha",
                                                 m.alpha[l], "beta",
                                                 m.beta[l]))
                            : NULL;
        ok &= !measured[l] || lj[l] != NULL;
    }
    size_t cap = 4096 + strlen(method) + strlen(machine) * 2;
    if (ok && (full = malloc(cap))) {
        pos = 0;
        rd_appendf(full, cap, &pos, "{\n  \"machine\": %s,\n  \"method\": %s,\n"
                                    "  \"links\": {",
                   mj, tj);
        for (int l = 0, k = 0; l < NL; l++)
            if (measured[l])
                rd_appendf(full, cap, &pos, "%s\n    \"%s\": %s",
                           k++ ? "," : "",
                           redist_link_name((redist_link_t)l), lj[l]);
        rd_appendf(full, cap, &pos, "%s},\n  \"gamma\": %s\n}\n",
                   nmeasured ? "\n  " : "", gj);
    }
    free(mj);
    free(tj);
    free(gj);
    for (int l = 0; l < NL; l++)
        free(lj[l]);
    if (!full) {
        fprintf(stderr, "redistplan: calibrate: out of memory\n");
        return 2;
    }

    char why[256];
    int rc = 0;
    if (write_text(o->out, full, why, sizeof why)) {
        fprintf(stderr, "redistplan: calibrate: cannot write %s: %s\n",
                o->out, why);
        rc = 2;
        goto out;
    }
    /* self-check: the file loads and holds what was measured */
    redist_cost_model_t back = def;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st =
        strcmp(o->out, "-") == 0
            ? redist_cost_model_load_buffer(full, strlen(full), "<stdout>",
                                            &back, &err)
            : redist_cost_model_load_file(o->out, &back, &err);
    int same = !st && close_enough(back.gamma, m.gamma);
    for (int l = 0; l < NL && same; l++)
        same = close_enough(back.alpha[l], m.alpha[l]) &&
               close_enough(back.beta[l], m.beta[l]);
    if (!same) {
        if (st)
            cli_print_error(&err);
        fprintf(stderr, "redistplan: calibrate: %s does not load back as "
                        "written (a bug)\n",
                o->out);
        rc = 2;
        goto out;
    }
    if (o->rank_map) {
        char *rm = rank_map_json(s->names, s->nhosts, s->hosts, s->pus, n);
        if (!rm || write_text(o->rank_map, rm, why, sizeof why)) {
            fprintf(stderr, "redistplan: calibrate: cannot write %s: %s\n",
                    o->rank_map, rm ? why : "out of memory");
            rc = 2;
        }
        free(rm);
        if (rc)
            goto out;
    }

    for (int l = 0; l < NL; l++)
        if (measured[l] && same_pu[l])
            fprintf(stderr,
                    "redistplan: calibrate: %s: ranks %d and %d ran on the "
                    "same PU (no two ranks at this level on distinct ones): "
                    "the figures measure time-sharing, not a link; bind "
                    "one rank per core (mpirun --bind-to core)\n",
                    redist_link_name((redist_link_t)l), pairs[l][0],
                    pairs[l][1]);
    if (n > 1 && !s->all_bound)
        fprintf(stderr,
                "redistplan: calibrate: not every rank is bound to one core "
                "(mpirun binds none when oversubscribed, and to a socket "
                "above 2 ranks): a rank's PU is where it last ran, so the "
                "levels may not be the ones the pairs used while measuring; "
                "run with mpirun --bind-to core\n");
    if (n == 1)
        fprintf(stderr,
                "redistplan: calibrate: no link level could be measured "
                "with one rank (run it under mpirun -np 2 or more, e.g. "
                "mpirun -np 4 --bind-to core redistplan calibrate); %s "
                "holds gamma only, every level keeps its default\n",
                strcmp(o->out, "-") ? o->out : "the output");

    if (o->quiet || strcmp(o->out, "-") == 0)
        goto out;
    printf("calibrate: %d rank%s on %d host%s: %s\n", n, n == 1 ? "" : "s",
           s->nhosts, s->nhosts == 1 ? "" : "s", machine);
    if (n <= 16)
        print_ranks(s, all, n);
    printf("  %s and %s messages, minimum of %d round trips (one-way time "
           "= half)\n",
           sb, lb, o->reps);
    printf("  %-8s %-9s %11s %17s\n", "level", "pair", "alpha (us)",
           "bandwidth (GB/s)");
    for (int l = 0; l < NL; l++) {
        const char *name = redist_link_name((redist_link_t)l);
        if (measured[l]) {
            char pair[32];
            snprintf(pair, sizeof pair, "%d-%d", pairs[l][0], pairs[l][1]);
            printf("  %-8s %-9s %11.2f %17.2f\n", name, pair,
                   m.alpha[l] * 1e6, 1e-9 / m.beta[l]);
        } else {
            printf("  %-8s %-9s %11.2f %17.2f  (no pair: default)\n", name,
                   "-", def.alpha[l] * 1e6, 1e-9 / def.beta[l]);
        }
    }
    printf("  reductions %.2f GB/s (f64 sum of two %s buffers)\n",
           1e-9 / m.gamma, gb);
    printf("wrote %s; plan with it: redistplan plan SPEC --objective time "
           "--cost %s\n",
           o->out, o->out);
    if (o->rank_map)
        printf("wrote %s (where the ranks ran): redistplan topo SPEC "
               "--rank-map %s --cost %s\n",
               o->rank_map, o->rank_map, o->out);
out:
    free(full);
    return rc;
}

/* ------------------------------------------------------------ command */

int cli_cmd_calibrate(int argc, char **argv)
{
    cal_opts o;
    cli_launch_begin("calibrate");
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return cli_launch_end(rc); /* joins the agreement with the error */
    cli_fp fp = {0};
    cli_fp_add(&fp, "--help", "%s", o.help ? "on" : "off");
    cli_fp_add(&fp, "-o", "%s", o.out);
    cli_fp_add(&fp, "--rank-map-out", "%s", o.rank_map ? o.rank_map : "-");
    cli_fp_add(&fp, "--sizes", "%llu,%llu", (unsigned long long)o.small,
               (unsigned long long)o.large);
    cli_fp_add(&fp, "--reps", "%d", o.reps);
    cli_fp_add(&fp, "--quiet", "%s", o.quiet ? "on" : "off");
    if ((rc = cli_launch_agree(&fp, 0)) != 0)
        return cli_launch_end(rc);

    int rank = 0, size = 1;
    cal_mpi = cli_launched();
    if (o.help) {
        if (!cal_mpi || (MPI_Comm_rank(MPI_COMM_WORLD, &rank), rank == 0))
            printf("usage: mpirun -np N redistplan calibrate [OPTIONS]\n%s",
                   CLI_CALIBRATE_USAGE);
        return finish(0);
    }
    if (cal_mpi) {
        int init = 0;
        MPI_Initialized(&init);
        if (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            fprintf(stderr, "redistplan: calibrate: MPI_Init failed\n");
            return 2;
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }

    /* where every rank runs */
    cal_rank me, *all = NULL;
    memset(&me, 0, sizeof me);
    if (cal_mpi) {
        int len = 0;
        MPI_Get_processor_name(me.host, &len);
    } else if (gethostname(me.host, sizeof me.host - 1)) {
        snprintf(me.host, sizeof me.host, "localhost");
    }
    me.host[sizeof me.host - 1] = '\0';
    cal_setup s;
    memset(&s, 0, sizeof s);
    locate(&me, rank == 0 ? s.model : NULL, sizeof s.model, &s.npkg);
    if (rank == 0 && !(all = calloc((size_t)size, sizeof *all))) {
        fprintf(stderr, "redistplan: calibrate: out of memory\n");
        if (cal_mpi)
            MPI_Abort(MPI_COMM_WORLD, 2); /* the others wait in the gather */
        return 2;
    }
    if (cal_mpi)
        MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me,
                   MPI_BYTE, 0, MPI_COMM_WORLD);
    else
        all[0] = me;

    /* rank 0: the placement, the pairs, the output paths; then everyone
     * learns the status and the pairs */
    int msg[1 + 2 * NL], pairs[NL][2], same_pu[NL];
    memset(msg, 0, sizeof msg);
    if (rank == 0) {
        char why[256];
        msg[0] = plan_pairs(all, size, &s, pairs, same_pu);
        const char *paths[2] = {o.out, o.rank_map};
        for (int k = 0; k < 2 && !msg[0]; k++)
            if (paths[k] && check_writable(paths[k], why, sizeof why)) {
                fprintf(stderr, "redistplan: calibrate: cannot write %s: "
                                "%s\n",
                        paths[k], why);
                msg[0] = 2;
            }
        if (!msg[0])
            memcpy(msg + 1, pairs, sizeof pairs);
    }
    bcast_ints(msg, 1 + 2 * NL);
    if (msg[0]) {
        free(all);
        setup_free(&s);
        return finish(msg[0]);
    }
    memcpy(pairs, msg + 1, sizeof pairs);

    /* buffers on the ranks of some pair; everyone agrees they exist */
    char *buf = NULL;
    int in_pair = 0, nomem = 0, any_nomem = 0;
    for (int l = 0; l < NL; l++)
        in_pair |= pairs[l][0] == rank || pairs[l][1] == rank;
    if (in_pair) {
        if ((buf = malloc((size_t)o.large)))
            memset(buf, 0x5a, (size_t)o.large);
        nomem = !buf;
    }
    if (cal_mpi)
        MPI_Allreduce(&nomem, &any_nomem, 1, MPI_INT, MPI_MAX,
                      MPI_COMM_WORLD);
    if (any_nomem) {
        if (rank == 0)
            fprintf(stderr, "redistplan: calibrate: out of memory for the "
                            "%llu-byte messages (a smaller --sizes LARGE)\n",
                    (unsigned long long)o.large);
        free(buf);
        free(all);
        setup_free(&s);
        return finish(2);
    }

    /* one pair per level; the other ranks wait in the barrier */
    double t[NL][2], tsum[NL][2];
    memset(t, 0, sizeof t);
    memset(tsum, 0, sizeof tsum);
    for (int l = 0; l < NL; l++) {
        int a = pairs[l][0], b = pairs[l][1];
        if (a < 0)
            continue;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == a || rank == b) {
            int peer = rank == a ? b : a;
            double ts = pingpong(peer, rank == a, buf, (int)o.small, o.reps);
            double tl = pingpong(peer, rank == a, buf, (int)o.large, o.reps);
            if (rank == a) {
                t[l][0] = ts;
                t[l][1] = tl;
            }
        }
    }
    free(buf);
    if (cal_mpi)
        MPI_Reduce(t, tsum, 2 * NL, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        memcpy(tsum, t, sizeof t);

    /* rank 0: the reduction speed, the file, the table */
    int status = 0;
    if (rank == 0) {
        uint64_t gbytes = o.large < CAL_GAMMA_MIN ? CAL_GAMMA_MIN : o.large;
        gbytes -= gbytes % sizeof(double);
        double gamma_s = measure_gamma(gbytes, o.reps);
        status = report(&o, &s, all, size, pairs, same_pu, tsum, gamma_s,
                        gbytes);
    }
    bcast_ints(&status, 1);
    free(all);
    setup_free(&s);
    return finish(status);
}
