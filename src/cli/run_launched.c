/*
 * The driver of `redistplan run` with one process per device (the mpi and
 * shmem backends, through the hooks of cli_backend, run.h): every rank
 * fills its source block with the exact pattern of src/testing/pattern.h,
 * executes the plan `repeat` times (the best by the slowest rank's time
 * counts), checks every element of its destination block, and sends its
 * figures to rank 0, which prints one line per rank and a summary (max
 * time, max scratch).  The checks and the report are those of the sim
 * backend (run_sim.c).
 *
 * Before this, every rank agreed (launch.c) that every rank parsed,
 * loaded and planned alike, the options of the backend included.  A
 * failure here is reported by cli_launch_failed: once by rank 0 when every
 * rank failed alike (a wrong rank count), else by every rank.  Without a
 * launcher (OMPI_COMM_WORLD_SIZE / PMI_SIZE unset) a mesh of more than one
 * device is refused before the transport starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* The best of the runs: this rank's report, the slowest rank's time and
 * the longest wall time of that run. */
typedef struct best_run {
    redist_exec_report_t rep;
    double max, wall;
    int64_t exchanges;
} best_run;

static redist_status_t runs(const cli_run *r, const cli_backend *b, int rank,
                            void *src, void *dst, best_run *best,
                            redist_error_t *err)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    redist_exec_report_t rep;
    memset(best, 0, sizeof *best);
    for (uint64_t it = 0; it < r->repeat; it++) {
        rd_pattern_fill(s, rank, src);
        memset(dst, 0xA5, (size_t)redist_spec_dst_bytes(s));
        b->barrier(b->self);
        double t0 = cli_now();
        redist_status_t st = b->execute(b->self, r, src, dst, &rep, err);
        double wall = cli_now() - t0;
        if (st)
            return st;
        double mx = b->max(b->self, rep.seconds);
        double mx_wall = b->max(b->self, wall);
        if (it == 0 || mx < best->max) {
            best->rep = rep;
            best->max = mx;
            best->wall = mx_wall;
            best->exchanges = b->exchanges ? b->exchanges(b->self) : 0;
        }
    }
    return REDIST_OK;
}

/* Rank 0: the report's lines after the head. */
static void report(const cli_run *r, const cli_backend *b,
                   const cli_rank_result *all, int n, const best_run *best)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    cli_run_max m;
    cli_run_maxima(all, n, &m);
    cli_run_buffers(s, b->unit);
    cli_run_rank_table(s, all, n, b->unit);
    b->scratch(b->self, &m);
    cli_run_source((r->opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0,
                   m.writes);
    cli_run_traffic_time(&m, b->unit, best->max, best->wall, r->repeat > 1);
    cli_run_result(s, all, n, b->units);
}

/* Rank 0: the message of a wrong number of ranks. */
static void wrong_size(const cli_backend *b, const redist_spec_t *s,
                       int size)
{
    char mm[256];
    int64_t D = redist_spec_num_devices(s);
    if (redist_spec_num_meshes(s) == 2)
        snprintf(mm, sizeof mm, "%s and %s, devices 0 to %lld",
                 redist_spec_mesh_name(s, 0), redist_spec_mesh_name(s, 1),
                 (long long)D - 1);
    else
        redist_mesh_format(redist_spec_mesh(s), mm, sizeof mm);
    fprintf(stderr,
            "redistplan: run: the mesh%s (%s) has %lld devices but %d %s%s "
            "started: run it with %s %lld\n",
            redist_spec_num_meshes(s) == 2 ? "es" : "", mm, (long long)D, size, b->proc, size == 1 ? " was" : "s were",
            b->launcher, (long long)D);
}

int cli_launched_run(const cli_run *r, const cli_backend *b)
{
    const redist_spec_t *s = redist_plan_spec(r->plan);
    int64_t D = redist_spec_num_devices(s);
    if (cli_launch_size() < 0 && D != 1) {
        fprintf(stderr, b->no_launcher, (long long)D, (long long)D);
        return CLI_BAD_INPUT;
    }
    int rank = 0, size = 0;
    if (b->start(b->self, r, &rank, &size))
        return CLI_BAD_INPUT;
    if (size != D) {
        if (rank == 0)
            wrong_size(b, s, size);
        return b->finish(b->self, CLI_BAD_INPUT);
    }
    void *src = NULL, *dst = NULL;
    cli_rank_result *all = NULL;
    if (b->setup(b->self, r, &src, &dst, &all))
        return b->finish(b->self, CLI_BAD_INPUT);
    if (rank == 0) {
        cli_run_head(r, b->name, (long long)D, b->units);
        b->describe(b->self, r);
    }
    if (b->runs_begin)
        b->runs_begin(b->self);
    best_run best;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = runs(r, b, rank, src, dst, &best, &err);
    /* collective: every rank failed, the others' messages name the rank
     * that failed first */
    if (cli_launch_failed(st != REDIST_OK, &err, "execution failed"))
        return b->finish(b->self, CLI_BAD_INPUT);
    if (b->runs_end)
        b->runs_end(b->self, r->repeat, rank);

    if (r->corrupt == rank) /* testing aid: break one element */
        ((unsigned char *)dst)[redist_spec_dst_bytes(s) - 1] ^= 0x5a;
    cli_rank_result me;
    cli_rank_result_fill(&me, &best.rep, s, rank, src, dst,
                         (r->opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0);
    me.exchanges = best.exchanges;
    int bad = b->gather(b->self, &me, all);
    if (rank == 0 && all)
        report(r, b, all, size, &best);
    return b->finish(b->self, bad ? CLI_MISMATCH : CLI_OK);
}
