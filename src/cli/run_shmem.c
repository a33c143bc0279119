/*
 * `redistplan run SPEC --backend shmem`, under `oshrun -np D` (D = the
 * mesh's device count): every PE fills its source block with the exact
 * pattern of src/testing/pattern.h, executes the plan through the OpenSHMEM
 * backend (redist/shmem.h), checks every element of its destination
 * block, and puts its figures to PE 0, which prints one line per PE and a
 * summary (max time, max scratch).  The checks and the report are those
 * of the sim and mpi backends (ext.c, run_mpi.c).
 *
 * The source and destination blocks come from the symmetric heap, so the
 * backend puts straight into them (--shmem-private: from malloc, so every
 * exchange lands in symmetric scratch and is copied out).  Before
 * shmem_init the symmetric heap is sized from the plan (SMA_SYMMETRIC_SIZE,
 * which Open MPI 4.1.4 reads, unless the user set it or the standard
 * SHMEM_SYMMETRIC_SIZE) and Open MPI's osc/rdma component, which makes
 * shmem_finalize crash in Open MPI 4.1.4, is excluded (OMPI_MCA_osc, unless
 * set).
 *
 * Before this, every PE agreed (launch.c) that every PE parsed, loaded
 * and planned alike, the options of this backend and the size of the
 * symmetric heap included (cli_shmem_fingerprint): a heap smaller on one
 * PE is an error on every PE before OpenSHMEM starts.  The buffers come
 * from rd_shmem_malloc_all (all PEs get them or none), the CLI's own
 * reductions use static (hence symmetric) arrays, and a failure is
 * reported by cli_launch_report: once by PE 0 when every PE failed alike,
 * else by every PE.  Without a launcher (OMPI_COMM_WORLD_SIZE / PMI_SIZE
 * unset) a mesh of more than one device is refused before OpenSHMEM
 * starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/shmem.h"
#include "../backend/shmem/shmem_internal.h"
#include "cli.h"
#include "launch.h"
#include "run_shmem.h"
#include "run_report.h"

/* ------------------------------------------------------------ options */

int cli_shmem_option(cli_shmem_args *m, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--shmem-work") == 0) {
        if (*i + 1 >= argc || cli_parse_size(argv[*i + 1], &m->work_bytes) ||
            m->work_bytes == 0) {
            fprintf(stderr, "redistplan: --shmem-work: not a byte count "
                            "(> 0): %s\n",
                    *i + 1 < argc ? argv[*i + 1] : "(missing)");
            return -1;
        }
        ++*i;
    } else if (strcmp(a, "--shmem-packed") == 0)
        m->flags |= REDIST_SHMEM_PACKED;
    else if (strcmp(a, "--shmem-no-ptr") == 0)
        m->flags |= REDIST_SHMEM_NO_PTR;
    else if (strcmp(a, "--shmem-private") == 0)
        m->private_buffers = 1;
    else
        return 0;
    m->given = 1;
    return 1;
}

/* ------------------------------------------------------------- run */

/* Symmetric work arrays of the CLI's own reductions: static data of the
 * executable is symmetric, so nothing here can fail on one PE only. */
static struct {
    long src, dst, wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long sync[SHMEM_REDUCE_SYNC_SIZE];
    double dsrc, ddst, dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
} red;

static void red_init(void)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        red.sync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
}

/* 1 on every PE if `bad` on any. */
static int any(int bad)
{
    red.src = bad;
    shmem_long_max_to_all(&red.dst, &red.src, 1, 0, 0, shmem_n_pes(),
                          red.wrk, red.sync);
    shmem_barrier_all(); /* pSync reusable */
    return red.dst != 0;
}

static double max_all(double v)
{
    red.dsrc = v;
    shmem_double_max_to_all(&red.ddst, &red.dsrc, 1, 0, 0, shmem_n_pes(),
                            red.dwrk, red.sync);
    shmem_barrier_all();
    return red.ddst;
}

typedef struct run_state {
    redist_shmem_t *ctx;
    void *src, *dst;
    cli_rank_result *all;
    int symmetric;
} run_state;

static int finish(int rc, run_state *r)
{
    if (r->symmetric) {
        shmem_free(r->dst);
        shmem_free(r->src);
    } else {
        free(r->dst);
        free(r->src);
    }
    shmem_free(r->all);
    redist_shmem_free(r->ctx);
    fflush(stdout);
    fflush(stderr);
    if (!cli_launch_shmem_started()) /* else cli_launch_end */
        shmem_finalize();            /* Open MPI: MPI too */
    return rc;
}

/* Size the symmetric heap for this plan (unless the user did). */
static void size_heap(const redist_plan_t *plan, const cli_shmem_args *m)
{
    /* Open MPI 4.1.4 crashes in shmem_finalize with osc/rdma */
    setenv("OMPI_MCA_osc", "^rdma", 0);
    /* Open MPI 4.1.4 reads SMA_SYMMETRIC_SIZE, not the standard name */
    const char *std = getenv("SHMEM_SYMMETRIC_SIZE");
    if (getenv("SMA_SYMMETRIC_SIZE"))
        return;
    if (std) {
        setenv("SMA_SYMMETRIC_SIZE", std, 0);
        return;
    }
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T, peak = redist_plan_peak_bytes(plan);
    if (peak > M)
        M = peak;
    /* buffers, at most two scratch buffers of the peak, the work area */
    uint64_t need = S + T + 2 * M +
                    (m->work_bytes ? m->work_bytes : REDIST_SHMEM_WORK_BYTES);
    need += need / 8 + (64ULL << 20); /* allocator overhead, bookkeeping */
    if (need < (256ULL << 20))
        return; /* Open MPI's default is 256 MiB */
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)need);
    setenv("SMA_SYMMETRIC_SIZE", v, 0);
}

void cli_shmem_fingerprint(const cli_shmem_args *m,
                           const redist_plan_t *plan, cli_fp *fp)
{
    size_heap(plan, m);
    cli_fp_add(fp, "--shmem-packed", "%s",
               m->flags & REDIST_SHMEM_PACKED ? "on" : "off");
    cli_fp_add(fp, "--shmem-no-ptr", "%s",
               m->flags & REDIST_SHMEM_NO_PTR ? "on" : "off");
    cli_fp_add(fp, "--shmem-private", "%s", m->private_buffers ? "on" : "off");
    cli_fp_add(fp, "--shmem-work", "%llu", (unsigned long long)m->work_bytes);
    const char *heap = getenv("SMA_SYMMETRIC_SIZE");
    cli_fp_add(fp, "the symmetric heap size (SMA_SYMMETRIC_SIZE)", "%s",
               heap ? heap : "Open MPI's default");
}

int cli_shmem_run(const cli_shmem_args *m, const redist_plan_t *plan,
                  const int64_t *orig, int shrink,
                  const redist_exec_options_t *opts, uint64_t repeat,
                  int64_t corrupt)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(s);
    int64_t D = redist_mesh_num_devices(mesh);
    char b1[64], b2[64], b3[64];
    run_state rs;
    memset(&rs, 0, sizeof rs);
    long launched = cli_env_long("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
    if (launched < 0 && D != 1) {
        fprintf(stderr,
                "redistplan: run: the mesh has %lld devices; run the shmem "
                "backend under oshrun with one PE per device: oshrun "
                "--mca osc ^rdma -np %lld redistplan run ... --backend "
                "shmem\n",
                (long long)D, (long long)D);
        return 2;
    }
    size_heap(plan, m); /* done already under a launcher */
    if (!cli_launch_shmem_started())
        shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    red_init();
    if (npes != D) {
        if (me == 0) {
            char mm[256];
            size_t pos = 0;
            mm[0] = '\0';
            for (int a = 0; a < redist_mesh_num_axes(mesh) && pos < sizeof mm;
                 a++)
                pos += (size_t)snprintf(
                    mm + pos, sizeof mm - pos, "%s%s=%lld", a ? "," : "",
                    redist_mesh_axis_name(mesh, a),
                    (long long)redist_mesh_axis_size(mesh, a));
            fprintf(stderr,
                    "redistplan: run: the mesh (%s) has %lld devices but %d "
                    "PE%s started: run it with oshrun -np %lld\n",
                    mm, (long long)D, npes, npes == 1 ? " was" : "s were",
                    (long long)D);
        }
        return finish(2, &rs);
    }

    redist_error_t err;
    redist_error_clear(&err);
    redist_shmem_options_t mo = {m->flags, m->work_bytes};
    redist_status_t st = redist_shmem_create(mesh, &mo, &rs.ctx, &err);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL))
        return finish(2, &rs);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    int m0 = 0, m1 = 0, m2 = 0; /* this PE's allocation failed */
    rs.symmetric = !m->private_buffers;
    rs.all = rd_shmem_malloc_all(rs.ctx, sizeof *rs.all * (size_t)npes, &m0);
    if (rs.all && rs.symmetric &&
        (rs.src = rd_shmem_malloc_all(rs.ctx, S ? (size_t)S : 1, &m1)))
        rs.dst = rd_shmem_malloc_all(rs.ctx, T ? (size_t)T : 1, &m2);
    else if (rs.all && !rs.symmetric) {
        rs.src = malloc(S ? (size_t)S : 1);
        rs.dst = malloc(T ? (size_t)T : 1);
        m1 = !rs.src || !rs.dst;
    }
    char what[200];
    const char *heap = getenv("SMA_SYMMETRIC_SIZE");
    snprintf(what, sizeof what,
             "out of %smemory for the buffers (%llu + %llu bytes; the "
             "symmetric heap: SMA_SYMMETRIC_SIZE=%s)",
             rs.symmetric ? "symmetric " : "", (unsigned long long)S,
             (unsigned long long)T, heap ? heap : "default");
    if (cli_launch_failed(m0 || m1 || m2, NULL, what))
        return finish(2, &rs);
    redist_shmem_info_t info;
    st = redist_shmem_exec_info(rs.ctx, plan, rs.src, rs.dst, opts, &info,
                                &err);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL))
        return finish(2, &rs);

    if (me == 0) {
        cli_run_head(plan, "shmem", (long long)D, "PEs", orig, shrink);
        printf("  shmem     %s, %s; reductions in member order\n",
               m->flags & REDIST_SHMEM_PACKED
                   ? "packed (kernels + contiguous puts)"
                   : "whole steps: puts to final offsets",
               info.symmetric
                   ? "symmetric src/dst (puts straight into them)"
                   : "private src/dst (puts into symmetric scratch, then a "
                     "copy)");
    }
    redist_shmem_stats_t mode0 = redist_shmem_stats(rs.ctx), mode1;

    /* run, best of `repeat` by the slowest PE's time */
    redist_exec_report_t rep, best;
    memset(&best, 0, sizeof best);
    double best_max = 0, best_wall = 0;
    st = REDIST_OK;
    for (uint64_t it = 0; it < repeat; it++) {
        rd_pattern_fill(s, me, rs.src);
        memset(rs.dst, 0xA5, (size_t)T);
        shmem_barrier_all();
        double t0 = cli_now();
        st = redist_shmem_execute(rs.ctx, plan, rs.src, rs.dst, opts, &rep,
                                  &err);
        double wall = cli_now() - t0;
        if (st)
            break;
        double mx_t = max_all(rep.seconds), mx_wall = max_all(wall);
        if (it == 0 || mx_t < best_max) {
            best = rep;
            best_max = mx_t;
            best_wall = mx_wall;
        }
    }
    /* collective: every PE failed, the others' messages name the PE
     * that failed first */
    if (cli_launch_failed(st != REDIST_OK, &err, "execution failed"))
        return finish(2, &rs);

    /* the protocol of each reduction of one call (every PE decides the
     * same: PE 0's counts) */
    mode1 = redist_shmem_stats(rs.ctx);
    if (me == 0) {
        static const char *const how[REDIST_SHMEM_RED_COUNT] = {
            "pulled by load (shmem_ptr)",
            "pulled with shmem_getmem",
            "copied into the output, pulled by load",
            "copied into the output, pulled with shmem_getmem",
            "pushed into free symmetric memory",
            "pushed through the work area",
            "pushed into the output, one member at a time"};
        const char *sep = "  reductions ";
        for (int k = 0; k < REDIST_SHMEM_RED_COUNT; k++) {
            uint64_t n = (mode1.reductions[k] - mode0.reductions[k]) / repeat;
            if (n) {
                printf("%s%s: %llu", sep, how[k], (unsigned long long)n);
                sep = "; ";
            }
        }
        if (sep[0] == ';')
            printf(" (per call)\n");
    }

    if (corrupt == me) /* testing aid: break one element */
        ((unsigned char *)rs.dst)[T - 1] ^= 0x5a;
    cli_rank_result mine;
    cli_rank_result_fill(&mine, &best, s, me, rs.src, rs.dst,
                         (opts->flags & REDIST_EXEC_PRESERVE_SRC) != 0);
    shmem_putmem(&rs.all[me], &mine, sizeof mine, 0);
    shmem_barrier_all(); /* completes the puts */
    int bad = any(mine.bad);
    if (me == 0) {
        cli_run_max mxr;
        cli_run_maxima(rs.all, npes, &mxr);
        cli_run_buffers(s, "PE");
        cli_run_rank_table(mesh, rs.all, npes, "PE");
        cli_fmt_bytes(mxr.high, b1, sizeof b1);
        cli_fmt_bytes(info.scratch_bytes, b2, sizeof b2);
        cli_fmt_bytes(info.exec.bound_bytes, b3, sizeof b3);
        printf("  scratch   high-water %s per PE, max over PEs, in "
               "symmetric memory (promised %s = executor %llu + work area "
               "%llu; max(src, dst) %s)\n",
               b1, b2, (unsigned long long)info.exec.scratch_bytes,
               (unsigned long long)info.work_bytes, b3);
        if (info.exec.inplace_passes)
            printf("  in place  %d exchange%s run in place in the symmetric "
                   "scratch (input staged in a free buffer)\n",
                   info.exec.inplace_passes,
                   info.exec.inplace_passes == 1 ? "" : "s");
        cli_run_source((opts->flags & REDIST_EXEC_PRESERVE_SRC) != 0,
                       mxr.writes);
        cli_run_traffic_time(&mxr, "PE", best_max, best_wall, repeat > 1);
        cli_run_result(s, rs.all, npes, "PEs");
    }
    return finish(bad ? 1 : 0, &rs);
}
