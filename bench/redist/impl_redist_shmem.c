/*
 * redist's OpenSHMEM backend (libredist_shmem), two rows:
 *   redist-shmem      redist_shmem_execute on symmetric src / dst (needs
 *                     --shmem: the binary calls shmem_init after MPI_Init)
 *   redist-shmem-time redist-shmem on the time objective's plan, only
 *                     where it differs from the default one
 * The driver allocates src and dst with shmem_malloc for these, so that
 * the puts land straight in them; the estimate is the symmetric work
 * area, max(src, dst).  Built only with the OpenSHMEM backend.
 */
#include "bench.h"
#include "redist/shmem.h"

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    (void)im;
    return umax(c->src_bytes, c->dst_bytes);
}

static void setup(bcase_t *c, impl_t *im)
{
    redist_shmem_t *sx = NULL;
    redist_shmem_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_create(c->mesh, NULL, &sx, &err) ||
        redist_shmem_exec_info(sx, im->plan, c->src, c->dst, NULL, &info,
                               &err))
        die_err(&err, "redist_shmem");
    im->state = sx;
    im->passes = info.exec.passes;
    im->exchanges = info.exec.collectives;
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_execute(im->state, im->plan, c->src, c->dst, NULL, &rep,
                             &err))
        die_run(c, im, &err);
    return rep.scratch_high_water;
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    redist_shmem_free(im->state);
    im->state = NULL;
}

const bench_impl_t bench_redist_shmem = {
    .name = "redist-shmem", .needs = BENCH_MPI | BENCH_SHMEM,
    .prepare = prepare, .setup = setup, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_shmem_time = {
    .name = "redist-shmem-time", .needs = BENCH_MPI | BENCH_SHMEM,
    .flags = BENCH_TIME_PLAN,
    .prepare = prepare, .setup = setup, .run = run, .teardown = teardown};
