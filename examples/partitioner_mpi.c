/*
 * partitioner_mpi - redist inside an SPMD program, through the C API only.
 *
 * A partitioner keeps its own description of how an array is sharded.
 * Here it is `layout`: for each array dim, the mesh axes that split it
 * (major first, as in JAX's PartitionSpec) and the axes holding partial
 * sums.  The program
 *   1. builds the mesh and the two layouts from those C structs (no JSON),
 *   2. plans each redistribution once (planning is a pure function, so
 *      every rank computes the same plan without talking to the others),
 *   3. duplicates its communicator and creates one redist MPI context on
 *      the duplicate,
 *   4. executes the plans repeatedly on its own buffers, checking every
 *      element each time.
 * The redistributions are those around a Megatron-style MLP on a mesh
 * data x model: activations [tokens, hidden] go from column-parallel
 * ([{data}, {model}]) to sequence-parallel ([{data, model}, {}]) and back,
 * and gradients that hold partial sums over `model` are reduce-scattered
 * into the sequence-parallel layout.
 *
 *   mpirun -np 8 build/tests/mpi/partitioner_mpi [ITERATIONS]
 *
 * Any rank count works: the mesh is data=2 x model=N/2 for even N, else
 * data=1 x model=N.  Exit 0 when every element of every iteration is
 * exact on every rank, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redist.h>
#include <redist/mpi.h>

/* The partitioner's own description of a sharding. */
typedef struct layout {
    const char *dims[2][2]; /* per array dim: mesh axis names, major first */
    const char *partial[2]; /* axes holding partial sums */
} layout;

static const layout column_parallel = {{{"data"}, {"model"}}, {NULL}};
static const layout sequence_parallel = {{{"data", "model"}, {NULL}}, {NULL}};
static const layout partial_grads = {{{"data"}, {NULL}}, {"model"}};

/* layout -> redist_type_t (a plain value; nothing to free). */
static int to_type(const layout *l, const redist_mesh_t *mesh,
                   redist_type_t *t)
{
    redist_type_init(t, 2);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2 && l->dims[d][k]; k++)
            if (redist_type_push_axis(t, d, redist_mesh_find_axis(
                                                mesh, l->dims[d][k])))
                return -1;
    for (int k = 0; k < 2 && l->partial[k]; k++)
        if (redist_type_add_partial(t, redist_mesh_find_axis(mesh,
                                                             l->partial[k])))
            return -1;
    return 0;
}

static redist_plan_t *plan_for(const redist_mesh_t *mesh,
                               const int64_t shape[2], const layout *from,
                               const layout *to, const char *name)
{
    redist_type_t a, b;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    char msg[512];
    if (to_type(from, mesh, &a) || to_type(to, mesh, &b)) {
        fprintf(stderr, "%s: bad layout\n", name);
        return NULL;
    }
    if (redist_spec_create(mesh, 2, shape, REDIST_F32, &a, &b,
                           REDIST_REDUCE_SUM, name, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err))
        fprintf(stderr, "%s\n", redist_error_format(&err, msg, sizeof msg));
    redist_spec_free(spec); /* the plan keeps its own copy */
    return plan;
}

/* This rank's block of a layout: global row/col ranges. */
static void block_of(const redist_plan_t *plan, int from, int rank,
                     int64_t lo[2], int64_t n[2])
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(s);
    const redist_type_t *t = from ? redist_spec_from(s) : redist_spec_to(s);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(m, rank, c);
    for (int d = 0; d < 2; d++) {
        int64_t blocks = 1, idx = 0;
        for (int k = 0; k < t->dim_naxes[d]; k++) {
            int ax = t->dims[d][k];
            idx = idx * redist_mesh_axis_size(m, ax) + c[ax];
            blocks *= redist_mesh_axis_size(m, ax);
        }
        n[d] = redist_spec_shape(s)[d] / blocks;
        lo[d] = idx * n[d];
    }
}

/* value(i, j) of iteration `it`: exact in f32.  A rank holding a partial
 * sum over `model` holds value / model_size, rounded so that the sum of
 * the contributions is exact: the contribution of model coordinate q is
 * floor(v / Q) + (q < v % Q). */
static float value(int64_t i, int64_t j, int64_t cols, int it)
{
    return (float)((i * cols + j + 977 * it) % (1 << 22));
}

static void fill(const redist_plan_t *plan, int rank, int it, float *src,
                 int partial)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(s);
    int64_t lo[2], n[2], c[REDIST_MAX_AXES], cols = redist_spec_shape(s)[1];
    int model = redist_mesh_find_axis(m, "model");
    int64_t Q = redist_mesh_axis_size(m, model);
    redist_mesh_coords(m, rank, c);
    block_of(plan, 1, rank, lo, n);
    for (int64_t i = 0; i < n[0]; i++)
        for (int64_t j = 0; j < n[1]; j++) {
            float v = value(lo[0] + i, lo[1] + j, cols, it);
            if (partial) {
                int64_t w = (int64_t)v;
                v = (float)(w / Q + (c[model] < w % Q ? 1 : 0));
            }
            src[i * n[1] + j] = v;
        }
}

static int64_t check(const redist_plan_t *plan, int rank, int it,
                     const float *dst)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t lo[2], n[2], bad = 0, cols = redist_spec_shape(s)[1];
    block_of(plan, 0, rank, lo, n);
    for (int64_t i = 0; i < n[0]; i++)
        for (int64_t j = 0; j < n[1]; j++)
            bad += dst[i * n[1] + j] != value(lo[0] + i, lo[1] + j, cols, it);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. the mesh from C values: data x model, row-major ranks */
    const char *names[2] = {"data", "model"};
    int64_t sizes[2] = {size % 2 == 0 ? 2 : 1, size % 2 == 0 ? size / 2 : size};
    int64_t shape[2] = {96 * size, 64 * size}; /* tokens x hidden */
    redist_mesh_t *mesh = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    char msg[512];
    if (redist_mesh_create(2, names, sizes, &mesh, &err)) {
        fprintf(stderr, "%s\n", redist_error_format(&err, msg, sizeof msg));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* 2. plan once (every rank computes the same plans) */
    redist_plan_t *fwd = plan_for(mesh, shape, &column_parallel,
                                  &sequence_parallel, "col-to-seq");
    redist_plan_t *bwd = plan_for(mesh, shape, &sequence_parallel,
                                  &column_parallel, "seq-to-col");
    redist_plan_t *grad = plan_for(mesh, shape, &partial_grads,
                                   &sequence_parallel, "grad-rs");
    if (!fwd || !bwd || !grad)
        MPI_Abort(MPI_COMM_WORLD, 2);

    /* 3. our own communicator, and the redist context on it.  The
     *    context duplicates it again, so redist never mixes its messages
     *    with ours; we may free `comm` whenever we like. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    redist_mpi_t *mx = NULL;
    if (redist_mpi_create(comm, mesh, NULL, &mx, &err)) {
        /* collective failure: every rank gets an error, rank 0 reports */
        if (rank == 0)
            fprintf(stderr, "redist_mpi_create: %s\n",
                    redist_error_format(&err, msg, sizeof msg));
        MPI_Abort(comm, 2);
    }

    /* 4. our buffers, reused by every iteration */
    const redist_spec_t *fs = redist_plan_spec(fwd);
    uint64_t col_bytes = redist_spec_src_bytes(fs);
    uint64_t seq_bytes = redist_spec_dst_bytes(fs);
    uint64_t grad_bytes = redist_spec_src_bytes(redist_plan_spec(grad));
    float *col = malloc(col_bytes), *seq = malloc(seq_bytes),
          *back = malloc(col_bytes), *g = malloc(grad_bytes);
    if (!col || !seq || !back || !g)
        MPI_Abort(comm, 2);
    /* the memory promise: scratch <= max(src, dst) of a plan (the grads
     * block is the largest buffer here) */
    uint64_t largest = grad_bytes > col_bytes ? grad_bytes : col_bytes;

    int64_t bad = 0;
    uint64_t high = 0;
    double seconds = 0;
    redist_exec_report_t rep;
    redist_exec_options_t keep = {REDIST_EXEC_PRESERVE_SRC};
    redist_error_clear(&err);
    for (int it = 0; it < iters && !bad; it++) {
        /* forward: col -> seq, keeping col (PRESERVE_SRC) */
        fill(fwd, rank, it, col, 0);
        if (redist_mpi_execute(mx, fwd, col, seq, &keep, &rep, &err))
            break;
        bad += check(fwd, rank, it, seq);
        high = rep.scratch_high_water > high ? rep.scratch_high_water : high;
        seconds += rep.seconds;
        /* backward: seq -> col (seq may be overwritten: default options) */
        if (redist_mpi_execute(mx, bwd, seq, back, NULL, &rep, &err))
            break;
        bad += memcmp(back, col, col_bytes) != 0;
        high = rep.scratch_high_water > high ? rep.scratch_high_water : high;
        seconds += rep.seconds;
        /* gradients with partial sums over model, reduce-scattered */
        fill(grad, rank, it, g, 1);
        if (redist_mpi_execute(mx, grad, g, seq, NULL, &rep, &err))
            break;
        bad += check(grad, rank, it, seq);
        high = rep.scratch_high_water > high ? rep.scratch_high_water : high;
        seconds += rep.seconds;
    }
    int failed = err.status != REDIST_OK;
    if (failed) /* every rank failed together; its message says why */
        fprintf(stderr, "rank %d: %s\n", rank,
                redist_error_format(&err, msg, sizeof msg));

    long long totals[2] = {(long long)bad, failed}, sums[2];
    double tmax = 0;
    unsigned long long hmax = 0, h = (unsigned long long)high;
    MPI_Reduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, 0, comm);
    MPI_Reduce(&seconds, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&h, &hmax, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, comm);
    if (rank == 0)
        printf("partitioner_mpi: %d ranks (data=%lld x model=%lld), f32[%lld,"
               "%lld], %d iterations of 3 plans: %s (%lld wrong elements, "
               "%lld failed calls); max %.3f ms per rank in redist, scratch "
               "high-water %llu bytes (largest block %llu bytes)\n",
               size, (long long)sizes[0], (long long)sizes[1],
               (long long)shape[0], (long long)shape[1], iters,
               sums[0] || sums[1] ? "FAILED" : "exact", sums[0], sums[1],
               tmax * 1e3, hmax, (unsigned long long)largest);
    int rc = 0;
    if (rank == 0)
        rc = sums[0] || sums[1];
    MPI_Bcast(&rc, 1, MPI_INT, 0, comm);

    free(col);
    free(seq);
    free(back);
    free(g);
    redist_mpi_free(mx); /* collective: frees redist's communicators */
    MPI_Comm_free(&comm);
    redist_plan_free(fwd);
    redist_plan_free(bwd);
    redist_plan_free(grad);
    redist_mesh_free(mesh);
    MPI_Finalize();
    return rc;
}
