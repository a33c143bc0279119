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
#include <float.h>
#include <hwloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate.h"
#include "launch.h"

static int cal_mpi; /* MPI started (under a launcher) */

/* ------------------------------------------------------------ options */

/* 0, or CLI_BAD_INPUT after the message. */
static int parse_options(const cli_command *self, int argc, char **argv,
                         cal_opts *o)
{
    const char *sizes = NULL;
    memset(o, 0, sizeof *o);
    o->out = CAL_DEFAULT_FILE;
    o->small = CAL_SMALL;
    o->large = CAL_LARGE;
    o->reps = CAL_REPS;
    const cli_opt own[] = {
        {.name = "--output", .alias = "-o", .kind = CLI_STR, .out = &o->out},
        {.name = "--rank-map-out", .kind = CLI_STR, .out = &o->rank_map},
        {.name = "--sizes", .kind = CLI_STR, .out = &sizes},
        {.name = "--reps", .kind = CLI_COUNT, .out = &o->reps, .lo = 1,
         .hi = CAL_MAX_REPS, .what = "a count"},
        {.name = "--quiet", .alias = "-q", .kind = CLI_FLAG, .out = &o->quiet},
        {.name = NULL}};
    cli_cmdline c = {.cmd = self->name, .own = own,
                     .pos_words = "no spec; run it under mpirun -np N"};
    if (cli_parse(&c, argc, argv))
        return CLI_BAD_INPUT;
    if (!o->out[0] || (o->rank_map && !o->rank_map[0])) {
        fprintf(stderr, "redistplan: calibrate: %s needs a file name%s\n",
                o->out[0] ? "--rank-map-out" : "-o",
                o->out[0] ? "" : " ('-' for standard output)");
        return CLI_BAD_INPUT;
    }
    const char *comma = sizes ? strchr(sizes, ',') : NULL;
    if (sizes && (!comma ||
                  cli_parse_size_n(sizes, (size_t)(comma - sizes),
                                   &o->small) ||
                  cli_parse_size_n(comma + 1, strlen(comma + 1), &o->large) ||
                  o->small < 1 || o->small >= o->large ||
                  o->large > CAL_MAX_LARGE)) {
        fprintf(stderr, "redistplan: calibrate: --sizes: expected "
                        "SMALL,LARGE in bytes, 1 <= SMALL < LARGE <= 1G "
                        "(e.g. 8,4M), got %s\n",
                sizes);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
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
        snprintf(model, msize, "%s", m ? m : "");
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

/* ----------------------------------------------------- rank 0's part */

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
            return CLI_BAD_INPUT;
        }
    s->names = calloc((size_t)n, sizeof *s->names);
    s->hosts = calloc((size_t)n, sizeof *s->hosts);
    s->pus = calloc((size_t)n, sizeof *s->pus);
    if (!s->names || !s->hosts || !s->pus)
        goto oom;
    s->all_bound = 1;
    for (int r = 0; r < n; r++) {
        int h = 0;
        cal_ascii(all[r].host);
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
        return CLI_BAD_INPUT;
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
    return CLI_BAD_INPUT;
}

/* ------------------------------------------------------------ command */

/* Where every rank runs, gathered on rank 0 (*all, *s). */
static int gather_locations(int rank, int size, cal_rank **all, cal_setup *s)
{
    cal_rank me;
    memset(&me, 0, sizeof me);
    if (cal_mpi) {
        int len = 0;
        MPI_Get_processor_name(me.host, &len);
    } else if (gethostname(me.host, sizeof me.host - 1)) {
        snprintf(me.host, sizeof me.host, "localhost");
    }
    me.host[sizeof me.host - 1] = '\0';
    locate(&me, rank == 0 ? s->model : NULL, sizeof s->model, &s->npkg);
    if (rank == 0 && !(*all = calloc((size_t)size, sizeof **all))) {
        fprintf(stderr, "redistplan: calibrate: out of memory\n");
        if (cal_mpi)
            MPI_Abort(MPI_COMM_WORLD, 2); /* the others wait in the gather */
        return CLI_BAD_INPUT;
    }
    if (cal_mpi)
        MPI_Gather(&me, (int)sizeof me, MPI_BYTE, *all, (int)sizeof me,
                   MPI_BYTE, 0, MPI_COMM_WORLD);
    else
        (*all)[0] = me;
    return CLI_OK;
}

/* Rank 0: the placement, the pairs, the output paths; then every rank
 * learns the status and the pairs.  0, or the exit code of every rank. */
static int decide(const cal_opts *o, int rank, int size, cal_rank *all,
                  cal_setup *s, cal_result *res)
{
    int msg[1 + 2 * NL];
    memset(msg, 0, sizeof msg);
    if (rank == 0) {
        char why[256];
        msg[0] = plan_pairs(all, size, s, res->pairs, res->same_pu);
        const char *paths[2] = {o->out, o->rank_map};
        for (int k = 0; k < 2 && !msg[0]; k++)
            if (paths[k] && cli_check_writable(paths[k], why, sizeof why)) {
                fprintf(stderr, "redistplan: calibrate: cannot write %s: "
                                "%s\n",
                        paths[k], why);
                msg[0] = CLI_BAD_INPUT;
            }
        if (!msg[0])
            memcpy(msg + 1, res->pairs, sizeof res->pairs);
    }
    bcast_ints(msg, 1 + 2 * NL);
    memcpy(res->pairs, msg + 1, sizeof res->pairs);
    return msg[0];
}

/* One pair per level measures (the other ranks wait in the barrier);
 * rank 0 gets the times.  0, or the exit code of every rank. */
static int measure(const cal_opts *o, int rank, cal_result *res)
{
    char *buf = NULL;
    int in_pair = 0, nomem = 0, any_nomem = 0;
    for (int l = 0; l < NL; l++)
        in_pair |= res->pairs[l][0] == rank || res->pairs[l][1] == rank;
    if (in_pair) {
        if ((buf = malloc((size_t)o->large)))
            memset(buf, 0x5a, (size_t)o->large);
        nomem = !buf;
    }
    if (cal_mpi)
        MPI_Allreduce(&nomem, &any_nomem, 1, MPI_INT, MPI_MAX,
                      MPI_COMM_WORLD);
    if (any_nomem) {
        if (rank == 0)
            fprintf(stderr, "redistplan: calibrate: out of memory for the "
                            "%llu-byte messages (a smaller --sizes LARGE)\n",
                    (unsigned long long)o->large);
        free(buf);
        return CLI_BAD_INPUT;
    }
    double t[NL][2];
    memset(t, 0, sizeof t);
    for (int l = 0; l < NL; l++) {
        int a = res->pairs[l][0], b = res->pairs[l][1];
        if (a < 0)
            continue;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == a || rank == b) {
            int peer = rank == a ? b : a, reps = (int)o->reps;
            double ts = pingpong(peer, rank == a, buf, (int)o->small, reps);
            double tl = pingpong(peer, rank == a, buf, (int)o->large, reps);
            if (rank == a) {
                t[l][0] = ts;
                t[l][1] = tl;
            }
        }
    }
    free(buf);
    if (cal_mpi)
        MPI_Reduce(t, res->t, 2 * NL, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        memcpy(res->t, t, sizeof t);
    return CLI_OK;
}

/* After the agreement: measure, and on rank 0 report. */
static int calibrate(const cal_opts *o)
{
    int rank = 0, size = 1, status = CLI_OK;
    cal_rank *all = NULL;
    cal_setup s;
    cal_result res;
    memset(&s, 0, sizeof s);
    memset(&res, 0, sizeof res);
    cal_mpi = cli_launched();
    if (cal_mpi) {
        int init = 0;
        MPI_Initialized(&init);
        if (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            fprintf(stderr, "redistplan: calibrate: MPI_Init failed\n");
            return CLI_BAD_INPUT;
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    if (gather_locations(rank, size, &all, &s) ||
        (status = decide(o, rank, size, all, &s, &res)) ||
        (status = measure(o, rank, &res)))
        goto out;
    if (rank == 0) { /* the reduction speed, the file, the table */
        res.gbytes = o->large < CAL_GAMMA_MIN ? CAL_GAMMA_MIN : o->large;
        res.gbytes -= res.gbytes % sizeof(double);
        res.gamma_s = measure_gamma(res.gbytes, (int)o->reps);
        status = cal_report(o, &s, all, size, &res);
    }
    bcast_ints(&status, 1);
out:
    free(all);
    setup_free(&s);
    return status;
}

int cli_cmd_calibrate(const cli_command *self, int argc, char **argv)
{
    cal_opts o;
    cli_fp fp;
    cli_launch_begin(self->name);
    int rc = parse_options(self, argc, argv, &o);
    if (rc)
        return cli_launch_end(rc); /* joins the agreement with the error */
    cli_fp_init(&fp, self->name, 0);
    cli_fp_add(&fp, "-o", "%s", o.out);
    cli_fp_add(&fp, "--rank-map-out", "%s", o.rank_map ? o.rank_map : "-");
    cli_fp_add(&fp, "--sizes", "%llu,%llu", (unsigned long long)o.small,
               (unsigned long long)o.large);
    cli_fp_add(&fp, "--reps", "%llu", (unsigned long long)o.reps);
    cli_fp_add(&fp, "--quiet", "%s", o.quiet ? "on" : "off");
    if ((rc = cli_launch_agree(&fp, 0)) != 0)
        return cli_launch_end(rc);
    return finish(calibrate(&o));
}
