/*
 * `redistplan run SPEC --backend mpi`, under `mpirun -np D` (D = the
 * mesh's device count): the hooks of the launched driver
 * (run_launched.c) over the MPI backend (redist/mpi.h) on MPI_COMM_WORLD,
 * and the options of the backend; at its end the hooks of the set
 * driver (run_set_launched.c) for a spec with "arrays".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "run.h"

/* ------------------------------------------------------------ options */

int cli_mpi_options(cli_mpi_args *m, cli_opt *t)
{
    memset(m, 0, sizeof *m);
    t[0] = (cli_opt){.name = "--max-scratch", .kind = CLI_BYTES,
                     .out = &m->max_scratch, .lo = 1};
    t[1] = (cli_opt){.name = "--mpi-packed", .kind = CLI_BIT,
                     .out = &m->flags, .lo = REDIST_MPI_PACKED};
    t[2] = (cli_opt){.name = "--mpi-native-reduce", .kind = CLI_BIT,
                     .out = &m->flags, .lo = REDIST_MPI_NATIVE_REDUCE};
    return 3;
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

/* -------------------------------------------------------------- hooks */

typedef struct mpi_run {
    const cli_mpi_args *args;
    redist_mpi_t *mx;
    redist_mpi_info_t info;
    void *src, *dst;
    cli_rank_result *all;
    int rank, size;
} mpi_run;

static int start(void *self, const cli_run *r, int *rank, int *size)
{
    mpi_run *m = self;
    int init = 0;
    (void)r;
    MPI_Initialized(&init);
    if (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "redistplan: run: MPI_Init failed\n");
        return -1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    *rank = m->rank;
    *size = m->size;
    return 0;
}

static int setup(void *self, const cli_run *r, void **src, void **dst,
                 cli_rank_result **all)
{
    mpi_run *m = self;
    const redist_spec_t *s = redist_plan_spec(r->plan);
    redist_mpi_options_t mo = {m->args->flags, m->args->max_scratch};
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    if (redist_spec_num_meshes(s) == 2) {
        /* two meshes: each call makes its phases' contexts */
        memset(&m->info, 0, sizeof m->info);
        st = redist_plan_exec_info(r->plan, NULL, &r->opts, &m->info.exec,
                                   &err);
        m->info.scratch_bytes = m->info.exec.scratch_bytes;
        m->info.bound_bytes = m->info.exec.bound_bytes;
        if (cli_launch_failed(st != REDIST_OK, &err, NULL))
            return -1;
    } else {
        st = redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), &mo,
                               &m->mx, &err);
        if (cli_launch_failed(st != REDIST_OK, &err, NULL))
            return -1;
        st = redist_mpi_exec_info(m->mx, r->plan, &r->opts, &m->info, &err);
        if (cli_launch_failed(st != REDIST_OK, &err, NULL))
            return -1;
    }
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    m->src = malloc(S ? (size_t)S : 1);
    m->dst = malloc(T ? (size_t)T : 1);
    if (m->rank == 0)
        m->all = calloc((size_t)m->size, sizeof *m->all);
    char what[96];
    snprintf(what, sizeof what, "rank %d: out of memory for the buffers",
             m->rank);
    if (cli_launch_failed(!m->src || !m->dst || (m->rank == 0 && !m->all),
                          NULL, what))
        return -1;
    *src = m->src;
    *dst = m->dst;
    *all = m->all;
    return 0;
}

static void describe(void *self, const cli_run *r)
{
    mpi_run *m = self;
    (void)r;
    printf("  mpi       %s; reductions %s; %lld exchange%s per rank\n",
           m->args->flags & REDIST_MPI_PACKED
               ? "packed (kernels + contiguous exchanges)"
               : "whole steps with derived datatypes",
           m->args->flags & REDIST_MPI_NATIVE_REDUCE
               ? "by MPI_Reduce_scatter_block / MPI_Allreduce"
               : "in member order (bit-identical to sim)",
           (long long)m->info.exchanges, m->info.exchanges == 1 ? "" : "s");
}

static redist_status_t execute(void *self, const cli_run *r, void *src,
                               void *dst, redist_exec_report_t *rep,
                               redist_error_t *err)
{
    mpi_run *m = self;
    if (!m->mx)
        return redist_mpi_execute_meshes(MPI_COMM_WORLD, r->plan, src, dst,
                                         &r->opts, rep, err);
    return redist_mpi_execute(m->mx, r->plan, src, dst, &r->opts, rep, err);
}

static void barrier(void *self)
{
    (void)self;
    MPI_Barrier(MPI_COMM_WORLD);
}

static double max_all(void *self, double v)
{
    double mx = 0;
    (void)self;
    MPI_Allreduce(&v, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

static int64_t exchanges(void *self)
{
    mpi_run *m = self;
    return m->mx ? redist_mpi_last_stats(m->mx).exchanges : 0;
}

static int gather(void *self, const cli_rank_result *me, cli_rank_result *all)
{
    int bad = me->bad, any = 0;
    (void)self;
    MPI_Gather(me, (int)sizeof *me, MPI_BYTE, all, (int)sizeof *me, MPI_BYTE,
               0, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static void scratch(void *self, const cli_run_max *mx)
{
    mpi_run *m = self;
    char b1[64], b2[64], b3[64];
    cli_fmt_bytes(mx->high, b1, sizeof b1);
    cli_fmt_bytes(mx->promise, b2, sizeof b2);
    cli_fmt_bytes(m->info.bound_bytes, b3, sizeof b3);
    if (mx->promise == m->info.scratch_bytes)
        printf("  scratch   high-water %s per rank, max over ranks (promised "
               "%s = executor %llu + work %llu; bound %s)\n",
               b1, b2, (unsigned long long)m->info.exec.scratch_bytes,
               (unsigned long long)m->info.work_bytes, b3);
    else /* uneven blocks: each rank promises for its own */
        printf("  scratch   high-water %s per rank, max over ranks (promised "
               "%s, the most of any rank; bound %s)\n", b1, b2, b3);
    if (m->info.exec.inplace_passes)
        printf("  in place  %d exchange%s run in place (send buffer = "
               "receive buffer) to stay within --max-scratch\n",
               m->info.exec.inplace_passes,
               m->info.exec.inplace_passes == 1 ? "" : "s");
}

static int finish(void *self, int rc)
{
    mpi_run *m = self;
    free(m->all);
    free(m->src);
    free(m->dst);
    redist_mpi_free(m->mx);
    fflush(stdout);
    fflush(stderr);
    MPI_Finalize();
    return rc;
}

int cli_mpi_run(const cli_mpi_args *args, const cli_run *r)
{
    mpi_run m;
    memset(&m, 0, sizeof m);
    m.args = args;
    cli_backend b = {
        .name = "mpi", .unit = "rank", .units = "ranks", .proc = "MPI rank",
        .launcher = "mpirun -np",
        .no_launcher = "redistplan: run: the mesh has %lld devices; run the "
                       "mpi backend under an MPI launcher with one rank per "
                       "device: mpirun -np %lld redistplan run ...\n",
        .self = &m, .start = start, .setup = setup, .describe = describe,
        .execute = execute, .barrier = barrier, .max = max_all,
        .exchanges = exchanges, .gather = gather, .scratch = scratch,
        .finish = finish};
    return cli_launched_run(r, &b);
}

/* -------------------------------------------------------------- hosts */

/* Global device of rank k of the source mesh: k on one mesh. */
static int64_t src_device(const redist_spec_t *s, int64_t k)
{
    return s ? redist_spec_mesh_device(s, REDIST_SIDE_FROM, k) : k;
}

int cli_mpi_spec_host_links(const redist_spec_t *s, const redist_mesh_t *mesh,
                            redist_cost_model_t *model, int64_t *nhosts,
                            char *axes, size_t size, char *map, size_t msize)
{
    if (s)
        mesh = redist_spec_mesh(s);
    int n = 0, nr = 0, rank = 0, init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) /* no launcher: the driver says so */
        return 0;
    MPI_Comm_size(MPI_COMM_WORLD, &nr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int64_t *hosts = malloc((size_t)nr * sizeof *hosts);
    redist_error_t err = REDIST_ERROR_INIT;
    int bad = !hosts, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any || redist_mpi_discover_hosts(MPI_COMM_WORLD, nr, hosts, &err)) {
        if (rank == 0) {
            if (!any)
                cli_print_error(&err);
            fprintf(stderr, "redistplan: run: cannot tell which host each "
                            "rank runs on%s\n",
                    any ? ": out of memory" : "");
        }
        free(hosts);
        return -1;
    }
    *nhosts = 0;
    map[0] = '\0';
    for (int r = 0; r < nr; r++) {
        size_t l = strlen(map);
        if (hosts[r] + 1 > *nhosts)
            *nhosts = hosts[r] + 1;
        if (r < 64)
            snprintf(map + l, msize - l, "%s%lld", r ? " " : "",
                     (long long)hosts[r]);
        else if (r == 64)
            snprintf(map + l, msize - l, " ...");
    }
    /* an axis spans hosts when a device and its predecessor on the axis
     * (same coordinates elsewhere) run on different hosts; mesh ranks are
     * row-major, the last axis has stride 1 */
    int na = redist_mesh_num_axes(mesh), spans[REDIST_MAX_AXES];
    int64_t stride = 1, nd = redist_mesh_num_devices(mesh);
    for (int a = na - 1; a >= 0; a--) {
        int64_t sz = redist_mesh_axis_size(mesh, a);
        spans[a] = 0;
        for (int64_t k = 0; k < nd && !spans[a]; k++) {
            int64_t d = src_device(s, k), e = src_device(s, k - stride);
            spans[a] = (k / stride) % sz > 0 && d < nr && e >= 0 && e < nr &&
                       hosts[d] != hosts[e];
        }
        stride *= sz;
    }
    /* two meshes: a device off the source mesh on another host than some
     * source device puts the meshes' link on the network level */
    int far = 0;
    if (s && redist_spec_num_meshes(s) == 2) {
        const redist_mesh_t *mb = redist_spec_side_mesh(s, REDIST_SIDE_TO);
        unsigned char *on_a = calloc((size_t)nr, 1);
        for (int64_t k = 0; on_a && k < nd; k++)
            if (src_device(s, k) < nr)
                on_a[src_device(s, k)] = 1;
        for (int64_t k = 0; on_a && k < redist_mesh_num_devices(mb) && !far;
             k++) {
            int64_t d = redist_spec_mesh_device(s, REDIST_SIDE_TO, k);
            for (int64_t j = 0; d < nr && !on_a[d] && j < nd && !far; j++) {
                int64_t e = src_device(s, j);
                far = e < nr && hosts[e] != hosts[d];
            }
        }
        free(on_a);
    }
    axes[0] = '\0';
    for (int a = 0; a < na; a++)
        if (spans[a]) {
            model->axis_link[a] = REDIST_LINK_NETWORK;
            size_t l = strlen(axes);
            snprintf(axes + l, size - l, "%s%s", l ? ", " : "",
                     redist_mesh_axis_name(mesh, a));
            n++;
        }
    if (far) {
        model->mesh_link = REDIST_LINK_NETWORK;
        size_t l = strlen(axes);
        snprintf(axes + l, size - l, "%sthe link between the meshes",
                 l ? ", " : "");
        n++;
    }
    free(hosts);
    return n;
}

/* ------------------------------------------------------- many arrays */

/* The hooks of the set driver (run_set_launched.c) on MPI_COMM_WORLD,
 * which the agreement started (cli_launch_end finalises it). */
typedef struct mpi_set {
    const cli_mpi_args *args;
    redist_mpi_t *mx;
} mpi_set;

static void set_start(void *self, int *rank, int *size)
{
    (void)self;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

static redist_status_t set_create(void *self, const redist_mesh_t *flat,
                                  redist_backend_t **be, redist_error_t *err)
{
    mpi_set *m = self;
    redist_mpi_options_t mo = {m->args->flags, m->args->max_scratch};
    redist_status_t st = redist_mpi_create(MPI_COMM_WORLD, flat, &mo, &m->mx,
                                           err);
    *be = st ? NULL : redist_mpi_backend(m->mx);
    return st;
}

static void set_max(void *self, uint64_t *v, int n)
{
    (void)self;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
}

static void set_finish(void *self)
{
    mpi_set *m = self;
    redist_mpi_free(m->mx);
    m->mx = NULL;
}

int cli_mpi_run_set(const cli_mpi_args *args, const cli_set_run *r)
{
    mpi_set m = {args, NULL};
    cli_set_backend b = {
        .name = "mpi", .unit = "rank", .units = "ranks",
        .launcher = "mpirun -np", .self = &m, .start = set_start,
        .create = set_create, .max = set_max, .finish = set_finish,
        .host_links = cli_mpi_spec_host_links};
    return cli_launched_run_set(r, &b);
}
