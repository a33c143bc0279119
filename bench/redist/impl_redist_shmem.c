/*
 * redist's OpenSHMEM backend (libredist_shmem), on symmetric src / dst
 * (needs --shmem: the binary calls shmem_init after MPI_Init), on the
 * default (time) objective's plan unless said otherwise:
 *   redist-shmem       redist_shmem_execute (the one-shot call)
 *   redist-shmem-bytes redist-shmem on the bytes objective's plan, only
 *                      where it differs
 *   redist-shmem-prep  a prepared object (redist_shmem_prepare once, at
 *                      setup, on the case's src and dst; its symmetric
 *                      scratch held for the case): redist_shmem_run per
 *                      call
 * The driver allocates src and dst with shmem_malloc for these, so that
 * the puts land straight in them; the estimate is the symmetric work
 * area, max(src, dst).  Built only with the OpenSHMEM backend.
 */
#include <stdlib.h>

#include "bench.h"
#include "redist/shmem.h"

typedef struct rshm {
    redist_shmem_t *sx;
    redist_shmem_prepared_t *pr; /* the prepared row */
} rshm_t;

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    (void)im;
    return umax(c->src_bytes, c->dst_bytes);
}

static void setup(bcase_t *c, impl_t *im)
{
    rshm_t *s = xcalloc(1, sizeof *s);
    redist_shmem_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_create(c->mesh, NULL, &s->sx, &err) ||
        redist_shmem_exec_info(s->sx, im->plan, c->src, c->dst, NULL, &info,
                               &err))
        die_err(&err, "redist_shmem");
    im->state = s;
    im->passes = info.exec.passes;
    im->exchanges = info.exec.collectives;
}

static void setup_prepared(bcase_t *c, impl_t *im)
{
    setup(c, im);
    rshm_t *s = im->state;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_prepare(s->sx, im->plan, c->src, c->dst, NULL, &s->pr,
                             &err))
        die_err(&err, "redist_shmem_prepare");
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    rshm_t *s = im->state;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_execute(s->sx, im->plan, c->src, c->dst, NULL, &rep,
                             &err))
        die_run(c, im, &err);
    return rep.scratch_high_water;
}

static uint64_t run_prepared(bcase_t *c, impl_t *im)
{
    rshm_t *s = im->state;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_shmem_run(s->pr, &rep, &err))
        die_run(c, im, &err);
    return rep.scratch_high_water;
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    rshm_t *s = im->state;
    redist_shmem_prepared_free(s->pr);
    redist_shmem_free(s->sx);
    free(s);
    im->state = NULL;
}

const bench_impl_t bench_redist_shmem = {
    .name = "redist-shmem", .needs = BENCH_MPI | BENCH_SHMEM,
    .prepare = prepare, .setup = setup, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_shmem_bytes = {
    .name = "redist-shmem-bytes", .needs = BENCH_MPI | BENCH_SHMEM,
    .flags = BENCH_BYTES_PLAN,
    .prepare = prepare, .setup = setup, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_shmem_prep = {
    .name = "redist-shmem-prep", .needs = BENCH_MPI | BENCH_SHMEM,
    .prepare = prepare, .setup = setup_prepared, .run = run_prepared,
    .teardown = teardown};
