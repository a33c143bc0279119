/*
 * redist's MPI backend (libredist_mpi), three rows:
 *   redist-mpi        redist_mpi_execute, default options (whole steps
 *                     with derived datatypes, the memory-bounded executor)
 *   redist-mpi-packed the same with REDIST_MPI_PACKED (executor pack /
 *                     unpack kernels, contiguous exchanges)
 *   redist-mpi-time   redist-mpi on the plan of the time objective
 *                     (default cost model; it may use the direct
 *                     `exchange` step), only where that plan differs
 * The context is made before the buffers (its scratch is the estimate);
 * redist allocates its scratch inside each call: that is the library.
 */
#include "bench.h"
#include "redist/mpi.h"

static uint64_t prepare_with(bcase_t *c, impl_t *im, unsigned flags)
{
    redist_mpi_options_t mo = {0, 0};
    mo.flags = flags;
    redist_mpi_t *mx = NULL;
    redist_mpi_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, c->mesh, &mo, &mx, &err) ||
        redist_mpi_exec_info(mx, im->plan, NULL, &info, &err))
        die_err(&err, "redist_mpi");
    im->state = mx;
    im->passes = info.exec.passes;
    im->exchanges = (long long)info.exchanges;
    return info.scratch_bytes;
}

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    return prepare_with(c, im, 0);
}

static uint64_t prepare_packed(bcase_t *c, impl_t *im)
{
    return prepare_with(c, im, REDIST_MPI_PACKED);
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_execute(im->state, im->plan, c->src, c->dst, NULL, &rep,
                           &err))
        die_run(c, im, &err);
    return rep.scratch_high_water;
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    redist_mpi_free(im->state);
    im->state = NULL;
}

const bench_impl_t bench_redist_mpi = {
    .name = "redist-mpi", .needs = BENCH_MPI,
    .prepare = prepare, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_mpi_packed = {
    .name = "redist-mpi-packed", .needs = BENCH_MPI,
    .prepare = prepare_packed, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_mpi_time = {
    .name = "redist-mpi-time", .needs = BENCH_MPI, .flags = BENCH_TIME_PLAN,
    .prepare = prepare, .run = run, .teardown = teardown};
