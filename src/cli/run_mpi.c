/*
 * `redistplan run SPEC --backend mpi`, under `mpirun -np D` (D = the
 * mesh's device count): every rank fills its source block with the exact
 * pattern of src/testing/pattern.h, executes the plan through the MPI
 * backend (redist/mpi.h) on MPI_COMM_WORLD, checks every element of its
 * destination block, and sends its figures to rank 0, which prints one
 * line per rank and a summary (max time, max scratch).  The checks and the
 * report are those of the sim backend (ext.c).
 *
 * Before this, every rank agreed (launch.c) that every rank parsed,
 * loaded and planned alike, the options of this backend included
 * (cli_mpi_fingerprint).  A failure here is reported by
 * cli_launch_report: once by rank 0 when every rank failed alike (a wrong
 * rank count), else by every rank.  Without a launcher
 * (OMPI_COMM_WORLD_SIZE / PMI_SIZE unset) a mesh of more than one device
 * is refused before MPI starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "cli.h"
#include "launch.h"
#include "run_mpi.h"
#include "run_report.h"

/* ------------------------------------------------------------ options */

int cli_mpi_option(cli_mpi_args *m, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--max-scratch") == 0) {
        if (*i + 1 >= argc || cli_parse_size(argv[*i + 1], &m->max_scratch) ||
            m->max_scratch == 0) {
            fprintf(stderr, "redistplan: --max-scratch: not a byte count "
                            "(> 0): %s\n",
                    *i + 1 < argc ? argv[*i + 1] : "(missing)");
            return -1;
        }
        ++*i;
    } else if (strcmp(a, "--mpi-packed") == 0)
        m->flags |= REDIST_MPI_PACKED;
    else if (strcmp(a, "--mpi-native-reduce") == 0)
        m->flags |= REDIST_MPI_NATIVE_REDUCE;
    else
        return 0;
    m->given = 1;
    return 1;
}

void cli_mpi_fingerprint(const cli_mpi_args *m, cli_fp *fp)
{
    cli_fp_add(fp, "--max-scratch", "%llu",
               (unsigned long long)m->max_scratch);
    cli_fp_add(fp, "--mpi-packed", "%s",
               m->flags & REDIST_MPI_PACKED ? "on" : "off");
    cli_fp_add(fp, "--mpi-native-reduce", "%s",
               m->flags & REDIST_MPI_NATIVE_REDUCE ? "on" : "off");
}

/* ------------------------------------------------------------- run */

/* 1 on every rank if `bad` on any. */
static int any(int bad)
{
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

static int finish(int rc, redist_mpi_t *mx, void *src, void *dst)
{
    free(src);
    free(dst);
    redist_mpi_free(mx);
    fflush(stdout);
    fflush(stderr);
    MPI_Finalize();
    return rc;
}

int cli_mpi_run(const cli_mpi_args *m, const redist_plan_t *plan,
                const int64_t *orig, int shrink,
                const redist_exec_options_t *opts, uint64_t repeat,
                int64_t corrupt)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(s);
    int64_t D = redist_mesh_num_devices(mesh);
    char b1[64], b2[64], b3[64];
    long launched = cli_env_long("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
    if (launched < 0 && D != 1) {
        fprintf(stderr,
                "redistplan: run: the mesh has %lld devices; run the mpi "
                "backend under an MPI launcher with one rank per device: "
                "mpirun -np %lld redistplan run ...\n",
                (long long)D, (long long)D);
        return 2;
    }
    int init = 0, rank = 0, size = 0;
    MPI_Initialized(&init);
    if (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "redistplan: run: MPI_Init failed\n");
        return 2;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != D) {
        if (rank == 0) {
            char mm[256];
            size_t pos = 0;
            for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
                pos += (size_t)snprintf(
                    mm + pos, sizeof mm - pos, "%s%s=%lld", a ? "," : "",
                    redist_mesh_axis_name(mesh, a),
                    (long long)redist_mesh_axis_size(mesh, a));
            fprintf(stderr,
                    "redistplan: run: the mesh (%s) has %lld devices but %d "
                    "MPI rank%s started: run it with mpirun -np %lld\n",
                    mm, (long long)D, size, size == 1 ? " was" : "s were",
                    (long long)D);
        }
        return finish(2, NULL, NULL, NULL);
    }

    redist_error_t err;
    redist_error_clear(&err);
    redist_mpi_t *mx = NULL;
    redist_mpi_options_t mo = {m->flags, m->max_scratch};
    redist_status_t st = redist_mpi_create(MPI_COMM_WORLD, mesh, &mo, &mx,
                                           &err);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL))
        return finish(2, NULL, NULL, NULL);
    redist_mpi_info_t info;
    st = redist_mpi_exec_info(mx, plan, opts, &info, &err);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL))
        return finish(2, mx, NULL, NULL);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    void *src = malloc(S ? (size_t)S : 1), *dst = malloc(T ? (size_t)T : 1);
    char what[96];
    snprintf(what, sizeof what, "rank %d: out of memory for the buffers",
             rank);
    if (cli_launch_failed(!src || !dst, NULL, what))
        return finish(2, mx, src, dst);

    if (rank == 0) {
        cli_run_head(plan, "mpi", (long long)D, "ranks", orig, shrink);
        printf("  mpi       %s; reductions %s; %lld exchange%s per rank\n",
               m->flags & REDIST_MPI_PACKED
                   ? "packed (kernels + contiguous exchanges)"
                   : "whole steps with derived datatypes",
               m->flags & REDIST_MPI_NATIVE_REDUCE
                   ? "by MPI_Reduce_scatter_block / MPI_Allreduce"
                   : "in member order (bit-identical to sim)",
               (long long)info.exchanges, info.exchanges == 1 ? "" : "s");
    }

    /* run, best of `repeat` by the slowest rank's time */
    redist_exec_report_t rep, best;
    memset(&best, 0, sizeof best);
    double best_max = 0, best_wall = 0;
    int64_t best_ex = 0;
    st = REDIST_OK;
    for (uint64_t it = 0; it < repeat; it++) {
        rd_pattern_fill(s, rank, src);
        memset(dst, 0xA5, (size_t)T);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        st = redist_mpi_execute(mx, plan, src, dst, opts, &rep, &err);
        double wall = MPI_Wtime() - t0, mx_t = 0, mx_wall = 0;
        if (st)
            break;
        MPI_Allreduce(&rep.seconds, &mx_t, 1, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);
        MPI_Allreduce(&wall, &mx_wall, 1, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);
        if (it == 0 || mx_t < best_max) {
            best = rep;
            best_max = mx_t;
            best_wall = mx_wall;
            best_ex = redist_mpi_last_stats(mx).exchanges;
        }
    }
    /* collective: every rank failed, the others' messages name the
     * device that failed first */
    if (cli_launch_failed(st != REDIST_OK, &err, "execution failed"))
        return finish(2, mx, src, dst);

    if (corrupt == rank) /* testing aid: break one element */
        ((unsigned char *)dst)[T - 1] ^= 0x5a;
    cli_rank_result me, *all = NULL;
    cli_rank_result_fill(&me, &best, s, rank, src, dst,
                         (opts->flags & REDIST_EXEC_PRESERVE_SRC) != 0);
    me.exchanges = best_ex;
    if (rank == 0 && !(all = calloc((size_t)size, sizeof *all)))
        fprintf(stderr, "redistplan: run: out of memory for the report\n");
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
               0, MPI_COMM_WORLD);
    int bad = any(me.bad);
    if (rank == 0 && all) {
        cli_run_max mxr;
        cli_run_maxima(all, size, &mxr);
        cli_run_buffers(s, "rank");
        cli_run_rank_table(mesh, all, size, "rank");
        cli_fmt_bytes(mxr.high, b1, sizeof b1);
        cli_fmt_bytes(info.scratch_bytes, b2, sizeof b2);
        cli_fmt_bytes(info.bound_bytes, b3, sizeof b3);
        printf("  scratch   high-water %s per rank, max over ranks "
               "(promised %s = executor %llu + work %llu; bound %s)\n",
               b1, b2, (unsigned long long)info.exec.scratch_bytes,
               (unsigned long long)info.work_bytes, b3);
        if (info.exec.inplace_passes)
            printf("  in place  %d exchange%s run in place (send buffer = "
                   "receive buffer) to stay within --max-scratch\n",
                   info.exec.inplace_passes,
                   info.exec.inplace_passes == 1 ? "" : "s");
        cli_run_source((opts->flags & REDIST_EXEC_PRESERVE_SRC) != 0,
                       mxr.writes);
        cli_run_traffic_time(&mxr, "rank", best_max, best_wall, repeat > 1);
        cli_run_result(s, all, size, "ranks");
    }
    free(all);
    return finish(bad ? 1 : 0, mx, src, dst);
}
