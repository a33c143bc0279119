/*
 * `redistplan run SPEC --backend shmem`, under `oshrun -np D` (D = the
 * mesh's device count): the hooks of the launched driver
 * (run_launched.c) over the OpenSHMEM backend (redist/shmem.h), and the
 * options of the backend; at its end the hooks of the set driver
 * (run_set_launched.c) for a spec with "arrays".
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
 * The agreement (launch.c) covers the options of this backend and the
 * size of the symmetric heap (cli_shmem_fingerprint): a heap smaller on
 * one PE is an error on every PE before OpenSHMEM starts.  The buffers
 * come from redist_shmem_malloc_all (all PEs get them or none), and the CLI's
 * own reductions use static (hence symmetric) arrays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/shmem.h"
#include "run.h"

/* ------------------------------------------------------------ options */

int cli_shmem_options(cli_shmem_args *m, cli_opt *t)
{
    memset(m, 0, sizeof *m);
    t[0] = (cli_opt){.name = "--shmem-work", .kind = CLI_BYTES,
                     .out = &m->work_bytes, .lo = 1};
    t[1] = (cli_opt){.name = "--shmem-packed", .kind = CLI_BIT,
                     .out = &m->flags, .lo = REDIST_SHMEM_PACKED};
    t[2] = (cli_opt){.name = "--shmem-no-ptr", .kind = CLI_BIT,
                     .out = &m->flags, .lo = REDIST_SHMEM_NO_PTR};
    t[3] = (cli_opt){.name = "--shmem-private", .kind = CLI_FLAG,
                     .out = &m->private_buffers};
    return 4;
}

/* Size the symmetric heap (unless the user did) for `data` bytes of
 * buffers and scratch, beside the work area. */
static void size_heap(uint64_t data, const cli_shmem_args *m)
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
    uint64_t need =
        data + (m->work_bytes ? m->work_bytes : REDIST_SHMEM_WORK_BYTES);
    need += need / 8 + (64ULL << 20); /* allocator overhead, bookkeeping */
    if (need < (256ULL << 20))
        return; /* Open MPI's default is 256 MiB */
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)need);
    setenv("SMA_SYMMETRIC_SIZE", v, 0);
}

/* One plan: its buffers and at most two scratch buffers of its peak. */
static uint64_t plan_heap_bytes(const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T, peak = redist_plan_peak_bytes(plan);
    if (peak > M)
        M = peak;
    return S + T + 2 * M;
}

/* The options and the heap into the fingerprint. */
static void fingerprint(const cli_shmem_args *m, cli_fp *fp)
{
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

void cli_shmem_fingerprint(const cli_shmem_args *m, const redist_plan_t *plan,
                           cli_fp *fp)
{
    size_heap(plan_heap_bytes(plan), m);
    fingerprint(m, fp);
}

/* A set's blocks are private: the heap holds its scratch arena (the
 * largest round, within the budget), estimated before the set can be
 * planned for the endpoint as every array's two scratch buffers of its
 * peak in one round. */
void cli_shmem_set_fingerprint(const cli_shmem_args *m,
                               const redist_plan_set_t *set, cli_fp *fp)
{
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    uint64_t arena = 0;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_plan_t *p = redist_plan_set_plan(set, i);
        const redist_spec_t *s = redist_plan_spec(p);
        uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
        arena += plan_heap_bytes(p) - S - T;
    }
    if (t.budget_bytes != REDIST_NO_BUDGET && t.budget_bytes < arena)
        arena = t.budget_bytes;
    size_heap(arena, m);
    fingerprint(m, fp);
}

/* -------------------------------------------------------------- hooks */

/* Symmetric work arrays of the CLI's own reductions: static data of the
 * executable is symmetric, so nothing here can fail on one PE only. */
static struct {
    long src, dst, wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long sync[SHMEM_REDUCE_SYNC_SIZE];
    double dsrc, ddst, dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
} red;

typedef struct shmem_run {
    const cli_shmem_args *args;
    redist_shmem_t *ctx;
    redist_shmem_info_t info;
    void *src, *dst;
    cli_rank_result *all;
    int symmetric, me;
    redist_shmem_stats_t mode0; /* before the first run */
} shmem_run;

static int start(void *self, const cli_run *r, int *rank, int *size)
{
    shmem_run *m = self;
    /* done already under a launcher */
    size_heap(plan_heap_bytes(r->plan), m->args);
    if (!cli_launch_shmem_started())
        shmem_init();
    m->me = *rank = shmem_my_pe();
    *size = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        red.sync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    return 0;
}

/* The buffers: src, dst and the results, all or none (every PE). */
static int alloc(shmem_run *m, uint64_t S, uint64_t T)
{
    int m0 = 0, m1 = 0, m2 = 0; /* this PE's allocation failed */
    m->symmetric = !m->args->private_buffers;
    m->all = redist_shmem_malloc_all(
        m->ctx, sizeof *m->all * (size_t)shmem_n_pes(), &m0);
    if (m->all && m->symmetric &&
        (m->src = redist_shmem_malloc_all(m->ctx, S ? (size_t)S : 1, &m1)))
        m->dst = redist_shmem_malloc_all(m->ctx, T ? (size_t)T : 1, &m2);
    else if (m->all && !m->symmetric) {
        m->src = malloc(S ? (size_t)S : 1);
        m->dst = malloc(T ? (size_t)T : 1);
        m1 = !m->src || !m->dst;
    }
    char what[200];
    const char *heap = getenv("SMA_SYMMETRIC_SIZE");
    snprintf(what, sizeof what,
             "out of %smemory for the buffers (%llu + %llu bytes; the "
             "symmetric heap: SMA_SYMMETRIC_SIZE=%s)",
             m->symmetric ? "symmetric " : "", (unsigned long long)S,
             (unsigned long long)T, heap ? heap : "default");
    return cli_launch_failed(m0 || m1 || m2, NULL, what);
}

static int setup(void *self, const cli_run *r, void **src, void **dst,
                 cli_rank_result **all)
{
    shmem_run *m = self;
    const redist_spec_t *s = redist_plan_spec(r->plan);
    redist_shmem_options_t mo = {m->args->flags, m->args->work_bytes};
    redist_error_t err;
    redist_error_clear(&err);
    /* two meshes: PE d is device d; the context's mesh is any mesh of
     * that many devices */
    redist_mesh_t *line = NULL;
    const char *axis = "pe";
    int64_t nd = redist_spec_num_devices(s);
    int two = redist_spec_num_meshes(s) == 2;
    if (two) /* no mesh on a PE: the creation fails on every PE */
        redist_mesh_create(1, &axis, &nd, &line, NULL);
    redist_status_t st = redist_shmem_create(two ? line : redist_spec_mesh(s),
                                             &mo, &m->ctx, &err);
    redist_mesh_free(line);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL) ||
        alloc(m, redist_spec_src_bytes(s), redist_spec_dst_bytes(s)))
        return -1;
    st = redist_shmem_exec_info(m->ctx, r->plan, m->src, m->dst, &r->opts,
                                &m->info, &err);
    if (cli_launch_failed(st != REDIST_OK, &err, NULL))
        return -1;
    *src = m->src;
    *dst = m->dst;
    *all = m->all;
    return 0;
}

static void describe(void *self, const cli_run *r)
{
    shmem_run *m = self;
    (void)r;
    printf("  shmem     %s, %s; reductions in member order\n",
           m->args->flags & REDIST_SHMEM_PACKED
               ? "packed (kernels + contiguous puts)"
               : "whole steps: puts to final offsets",
           m->info.symmetric
               ? "symmetric src/dst (puts straight into them)"
               : "private src/dst (puts into symmetric scratch, then a "
                 "copy)");
}

static redist_status_t execute(void *self, const cli_run *r, void *src,
                               void *dst, redist_exec_report_t *rep,
                               redist_error_t *err)
{
    shmem_run *m = self;
    return redist_shmem_execute(m->ctx, r->plan, src, dst, &r->opts, rep,
                                err);
}

static void barrier(void *self)
{
    (void)self;
    shmem_barrier_all();
}

static double max_all(void *self, double v)
{
    (void)self;
    red.dsrc = v;
    shmem_double_max_to_all(&red.ddst, &red.dsrc, 1, 0, 0, shmem_n_pes(),
                            red.dwrk, red.sync);
    shmem_barrier_all(); /* pSync reusable */
    return red.ddst;
}

static void runs_begin(void *self)
{
    shmem_run *m = self;
    m->mode0 = redist_shmem_stats(m->ctx);
}

/* PE 0: the protocol of each reduction of one call (every PE decides the
 * same: PE 0's counts). */
static void runs_end(void *self, uint64_t repeat, int rank)
{
    static const char *const how[REDIST_SHMEM_RED_COUNT] = {
        "pulled by load (shmem_ptr)",
        "pulled with shmem_getmem",
        "copied into the output, pulled by load",
        "copied into the output, pulled with shmem_getmem",
        "pushed into free symmetric memory",
        "pushed through the work area",
        "pushed into the output, one member at a time"};
    shmem_run *m = self;
    redist_shmem_stats_t mode1 = redist_shmem_stats(m->ctx);
    if (rank != 0)
        return;
    const char *sep = "  reductions ";
    for (int k = 0; k < REDIST_SHMEM_RED_COUNT; k++) {
        uint64_t n = (mode1.reductions[k] - m->mode0.reductions[k]) / repeat;
        if (n) {
            printf("%s%s: %llu", sep, how[k], (unsigned long long)n);
            sep = "; ";
        }
    }
    if (sep[0] == ';')
        printf(" (per call)\n");
}

static int gather(void *self, const cli_rank_result *me, cli_rank_result *all)
{
    shmem_run *m = self;
    shmem_putmem(&all[m->me], me, sizeof *me, 0);
    shmem_barrier_all(); /* completes the puts */
    red.src = me->bad;
    shmem_long_max_to_all(&red.dst, &red.src, 1, 0, 0, shmem_n_pes(),
                          red.wrk, red.sync);
    shmem_barrier_all(); /* pSync reusable */
    return red.dst != 0;
}

static void scratch(void *self, const cli_run_max *mx)
{
    shmem_run *m = self;
    char b1[64], b2[64], b3[64];
    cli_fmt_bytes(mx->high, b1, sizeof b1);
    cli_fmt_bytes(mx->promise, b2, sizeof b2);
    cli_fmt_bytes(m->info.exec.bound_bytes, b3, sizeof b3);
    if (mx->promise == m->info.scratch_bytes)
        printf("  scratch   high-water %s per PE, max over PEs, in symmetric "
               "memory (promised %s = executor %llu + work area %llu; "
               "max(src, dst) %s)\n",
               b1, b2, (unsigned long long)m->info.exec.scratch_bytes,
               (unsigned long long)m->info.work_bytes, b3);
    else /* uneven blocks: each PE promises for its own */
        printf("  scratch   high-water %s per PE, max over PEs, in symmetric "
               "memory (promised %s, the most of any PE; max(src, dst) "
               "%s)\n", b1, b2, b3);
    if (m->info.exec.inplace_passes)
        printf("  in place  %d exchange%s run in place in the symmetric "
               "scratch (input staged in a free buffer)\n",
               m->info.exec.inplace_passes,
               m->info.exec.inplace_passes == 1 ? "" : "s");
}

static int finish(void *self, int rc)
{
    shmem_run *m = self;
    if (m->symmetric) {
        shmem_free(m->dst);
        shmem_free(m->src);
    } else {
        free(m->dst);
        free(m->src);
    }
    shmem_free(m->all);
    redist_shmem_free(m->ctx);
    fflush(stdout);
    fflush(stderr);
    if (!cli_launch_shmem_started()) /* else cli_launch_end */
        shmem_finalize();            /* Open MPI: MPI too */
    return rc;
}

int cli_shmem_run(const cli_shmem_args *args, const cli_run *r)
{
    shmem_run m;
    memset(&m, 0, sizeof m);
    m.args = args;
    cli_backend b = {
        .name = "shmem", .unit = "PE", .units = "PEs", .proc = "PE",
        .launcher = "oshrun -np",
        .no_launcher = "redistplan: run: the mesh has %lld devices; run the "
                       "shmem backend under oshrun with one PE per device: "
                       "oshrun --mca osc ^rdma -np %lld redistplan run ... "
                       "--backend shmem\n",
        .self = &m, .start = start, .setup = setup, .describe = describe,
        .execute = execute, .barrier = barrier, .max = max_all,
        .runs_begin = runs_begin, .runs_end = runs_end, .gather = gather,
        .scratch = scratch, .finish = finish};
    return cli_launched_run(r, &b);
}

/* ------------------------------------------------------- many arrays */

/* The hooks of the set driver (run_set_launched.c): a context over every
 * PE, its endpoint with private blocks (the set's arena is symmetric),
 * the set planned again for it (whole exchange steps). */
typedef struct shmem_set {
    const cli_shmem_args *args;
    redist_shmem_t *ctx;
} shmem_set;

/* Symmetric (static) arrays of the driver's reductions. */
#define SET_RED 16
static struct {
    long v[SET_RED], out[SET_RED];
    long wrk[SET_RED / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long sync[SHMEM_REDUCE_SYNC_SIZE];
} sred;

static void set_start(void *self, int *rank, int *size)
{
    (void)self;
    if (!cli_launch_shmem_started())
        shmem_init();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        sred.sync[i] = SHMEM_SYNC_VALUE;
    *rank = shmem_my_pe();
    *size = shmem_n_pes();
    shmem_barrier_all();
}

static redist_status_t set_create(void *self, const redist_mesh_t *flat,
                                  redist_backend_t **be, redist_error_t *err)
{
    shmem_set *m = self;
    redist_shmem_options_t mo = {m->args->flags, m->args->work_bytes};
    redist_status_t st = redist_shmem_create(flat, &mo, &m->ctx, err);
    *be = st ? NULL : redist_shmem_backend(m->ctx, 0);
    return st;
}

static void set_max(void *self, uint64_t *v, int n)
{
    (void)self;
    for (int i = 0; i < n && i < SET_RED; i++)
        sred.v[i] = (long)(v[i] > (uint64_t)INT64_MAX ? INT64_MAX : v[i]);
    shmem_long_max_to_all(sred.out, sred.v, n < SET_RED ? n : SET_RED, 0, 0,
                          shmem_n_pes(), sred.wrk, sred.sync);
    shmem_barrier_all(); /* pSync reusable */
    for (int i = 0; i < n && i < SET_RED; i++)
        v[i] = (uint64_t)sred.out[i];
}

static void set_explain(void *self, const redist_plan_set_t *set,
                        const redist_error_t *err)
{
    shmem_set *m = self;
    if (err->status != REDIST_ERR_NOMEM)
        return;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    const char *heap = getenv("SMA_SYMMETRIC_SIZE");
    uint64_t work = m->args->work_bytes ? m->args->work_bytes
                                        : REDIST_SHMEM_WORK_BYTES;
    uint64_t need = t.scratch_bytes + work;
    need += need / 8 + (64ULL << 20);
    fprintf(stderr, "redistplan: run: the set's scratch arena takes %llu "
                    "bytes of symmetric memory per PE (its largest round) "
                    "beside the work area of %llu; the symmetric heap is "
                    "SMA_SYMMETRIC_SIZE=%s: set SHMEM_SYMMETRIC_SIZE=%llu "
                    "(or more) for every PE, or give the set a smaller "
                    "budget_bytes\n",
            (unsigned long long)t.scratch_bytes, (unsigned long long)work,
            heap ? heap : "default", (unsigned long long)need);
}

static void set_finish(void *self)
{
    shmem_set *m = self;
    redist_shmem_free(m->ctx);
    m->ctx = NULL;
    fflush(stdout);
    fflush(stderr);
    if (!cli_launch_shmem_started()) /* else cli_launch_end */
        shmem_finalize();            /* Open MPI: MPI too */
}

int cli_shmem_run_set(const cli_shmem_args *args, const cli_set_run *r)
{
    shmem_set m = {args, NULL};
    cli_set_backend b = {
        .name = "shmem", .unit = "PE", .units = "PEs",
        .launcher = "oshrun --mca osc ^rdma -np", .self = &m,
        .start = set_start, .create = set_create, .endpoint_plans = 1,
        .max = set_max, .explain = set_explain, .finish = set_finish};
    return cli_launched_run_set(r, &b);
}
