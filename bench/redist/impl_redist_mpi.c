/*
 * redist's MPI backend (libredist_mpi), on the plan of the default (time)
 * objective unless said otherwise:
 *   redist-mpi        redist_mpi_execute, default options (whole steps
 *                     with derived datatypes): the one-shot call, which
 *                     does its set-up (agreement, scratch, datatypes)
 *                     inside every call
 *   redist-mpi-packed the same with REDIST_MPI_PACKED (executor pack /
 *                     unpack kernels, contiguous exchanges)
 *   redist-mpi-bytes  redist-mpi on the plan of the bytes objective, only
 *                     where that plan differs
 *   redist-mpi-prep   a prepared object (redist_mpi_prepare once, at
 *                     setup, on the case's src and dst): redist_mpi_run
 *                     per call, the data movement alone
 *   redist-mpi-start  the same object kind run non-blocking:
 *                     redist_mpi_start then redist_mpi_wait at once (the
 *                     cost of handing the run to the progress thread;
 *                     needs MPI_THREAD_MULTIPLE, which main.c asks for)
 *   redist-mpi-win    redist-mpi-prep on src and dst of its own from
 *                     redist_mpi_alloc (shared windows): the passes whose
 *                     input lies in them run direct (copies from the
 *                     peers' memory, doc/mpi.md); the driver restores and
 *                     checks these buffers for this row (im->src, im->dst)
 * The context is made before the buffers (its scratch is the estimate);
 * the one-shot rows allocate their scratch inside each call (that is the
 * library); the prepared rows hold theirs in the object, from setup on.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "redist/mpi.h"

typedef struct rmpi {
    redist_mpi_t *mx;
    redist_mpi_prepared_t *pr; /* the prepared rows */
    int nonblocking;           /* redist-mpi-start */
    void *wsrc, *wdst;         /* redist-mpi-win: its shared buffers */
} rmpi_t;

static uint64_t prepare_with(bcase_t *c, impl_t *im, unsigned flags)
{
    redist_mpi_options_t mo = {0, 0};
    mo.flags = flags;
    rmpi_t *s = xcalloc(1, sizeof *s);
    redist_mpi_info_t info;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, c->mesh, &mo, &s->mx, &err) ||
        redist_mpi_exec_info(s->mx, im->plan, NULL, &info, &err))
        die_err(&err, "redist_mpi");
    im->state = s;
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

static int applies_start(const bcase_t *c, char *why, size_t n)
{
    (void)c;
    if (all_ok(g_thread_level >= MPI_THREAD_MULTIPLE)) /* collective */
        return 0;
    snprintf(why, n, "MPI without MPI_THREAD_MULTIPLE");
    return 1;
}

/* The prepared object, on the case's buffers (collective). */
static void setup_prepared(bcase_t *c, impl_t *im)
{
    rmpi_t *s = im->state;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_prepare(s->mx, im->plan, c->src, c->dst, NULL, &s->pr,
                           &err))
        die_err(&err, "redist_mpi_prepare");
    s->nonblocking = im->impl->applies == applies_start;
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    rmpi_t *s = im->state;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_execute(s->mx, im->plan, c->src, c->dst, NULL, &rep,
                           &err))
        die_run(c, im, &err);
    return rep.scratch_high_water;
}

/* redist_mpi_run, or (redist-mpi-start) redist_mpi_start then wait */
static uint64_t run_prepared(bcase_t *c, impl_t *im)
{
    rmpi_t *s = im->state;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    int bad = s->nonblocking ? redist_mpi_start(s->pr, &err) ||
                                   redist_mpi_wait(s->pr, &rep, &err)
                             : redist_mpi_run(s->pr, &rep, &err) != 0;
    if (bad)
        die_run(c, im, &err);
    /* the run's own count: the object's program depends on its buffers
     * (in windows: direct passes, reduce_scatters kept whole) */
    im->exchanges = (long long)redist_mpi_prepared_stats(s->pr).exchanges;
    return rep.scratch_high_water;
}

/* redist-mpi-win: the object on buffers from redist_mpi_alloc; the
 * estimate counts them (the case's src and dst stay allocated). */
static uint64_t prepare_win(bcase_t *c, impl_t *im)
{
    return prepare_with(c, im, 0) + c->src_bytes + c->dst_bytes;
}

static void setup_win(bcase_t *c, impl_t *im)
{
    rmpi_t *s = im->state;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_alloc(s->mx, c->src_bytes, &s->wsrc, &err) ||
        redist_mpi_alloc(s->mx, c->dst_bytes, &s->wdst, &err))
        die_err(&err, "redist_mpi_alloc");
    memset(s->wsrc, 0, c->src_bytes); /* touch */
    memset(s->wdst, 0, c->dst_bytes);
    im->src = s->wsrc;
    im->dst = s->wdst;
    if (redist_mpi_prepare(s->mx, im->plan, s->wsrc, s->wdst, NULL, &s->pr,
                           &err))
        die_err(&err, "redist_mpi_prepare");
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    rmpi_t *s = im->state;
    redist_mpi_prepared_free(s->pr);
    if (s->wsrc)
        redist_mpi_free_mem(s->mx, s->wsrc, NULL);
    if (s->wdst)
        redist_mpi_free_mem(s->mx, s->wdst, NULL);
    im->src = im->dst = NULL;
    redist_mpi_free(s->mx);
    free(s);
    im->state = NULL;
}

const bench_impl_t bench_redist_mpi = {
    .name = "redist-mpi", .needs = BENCH_MPI,
    .prepare = prepare, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_mpi_packed = {
    .name = "redist-mpi-packed", .needs = BENCH_MPI,
    .prepare = prepare_packed, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_mpi_bytes = {
    .name = "redist-mpi-bytes", .needs = BENCH_MPI,
    .flags = BENCH_BYTES_PLAN,
    .prepare = prepare, .run = run, .teardown = teardown};

const bench_impl_t bench_redist_mpi_prep = {
    .name = "redist-mpi-prep", .needs = BENCH_MPI,
    .prepare = prepare, .setup = setup_prepared, .run = run_prepared,
    .teardown = teardown};

const bench_impl_t bench_redist_mpi_win = {
    .name = "redist-mpi-win", .needs = BENCH_MPI,
    .prepare = prepare_win, .setup = setup_win, .run = run_prepared,
    .teardown = teardown};

const bench_impl_t bench_redist_mpi_start = {
    .name = "redist-mpi-start", .needs = BENCH_MPI,
    .applies = applies_start, .prepare = prepare, .setup = setup_prepared,
    .run = run_prepared, .teardown = teardown};
