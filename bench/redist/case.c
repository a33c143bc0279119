/*
 * One case, outside the timing: its figures and plans, which
 * implementations run it (and why the others do not), its buffers and
 * every implementation's setup; then the rounds (measure.c), the report
 * (report.c) and the teardown.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../../src/testing/pattern.h"

#ifdef BENCH_HAVE_SHMEM
#include "redist/shmem.h"
#endif

/* Same steps (op, dims, axis, type after) in the same order. */
static int plans_equal(const redist_plan_t *a, const redist_plan_t *b)
{
    int n = redist_plan_num_steps(a);
    if (n != redist_plan_num_steps(b))
        return 0;
    for (int k = 0; k < n; k++) {
        redist_step_view_t x, y;
        redist_plan_step(a, k, &x);
        redist_plan_step(b, k, &y);
        if (x.op != y.op || x.dim != y.dim || x.from_dim != y.from_dim ||
            x.to_dim != y.to_dim || x.axis != y.axis ||
            !redist_type_equal(&x.after, &y.after))
            return 0;
    }
    return 1;
}

static void case_init(bcase_t *c, redist_spec_t *spec, const char *label)
{
    memset(c, 0, sizeof *c);
    c->et = MPI_DATATYPE_NULL;
    c->spec = spec;
    c->mesh = redist_spec_mesh(spec);
    char shp[128];
    shape_str(spec, shp, sizeof shp);
    snprintf(c->name, sizeof c->name, "%s@%s", label, shp);
    c->nd = redist_spec_ndims(spec);
    c->naxes = redist_mesh_num_axes(c->mesh);
    c->dt = redist_spec_dtype(spec);
    c->elem = redist_dtype_size(c->dt);
    c->red = redist_spec_reduce(spec);
    const redist_type_t *from = redist_spec_from(spec),
                        *to = redist_spec_to(spec);
    c->src_axes = axes_of(from);
    c->red_axes = from->partial & ~to->partial;
    c->partial = c->red_axes != 0;
    c->rep_axes = ((1u << c->naxes) - 1) & ~c->src_axes & ~from->partial;
    c->src_bytes = redist_spec_src_bytes(spec);
    c->dst_bytes = redist_spec_dst_bytes(spec);
    c->my_src_bytes = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, g_rank);
    c->my_dst_bytes = redist_spec_device_bytes(spec, REDIST_SIDE_TO, g_rank);
    type_rect(spec, from, g_rank, &c->srect);
    type_rect(spec, to, g_rank, &c->drect);
}

/* The default (time) objective's plan (timed: median of 5; the first is
 * kept; the redist-* implementations run it) and the bytes objective's
 * plan, kept only where it differs (the redist-*-bytes rows).
 * 0, or -1 (said) when there is no plan. */
static int case_plans(bcase_t *c)
{
    redist_error_t err;
    redist_error_clear(&err);
    redist_plan_options_t po;
    memset(&po, 0, sizeof po);
    po.objective = REDIST_OBJECTIVE_TIME;
    double pt[5];
    for (int i = 0; i < 5; i++) {
        redist_plan_t *p = NULL;
        double t0 = MPI_Wtime();
        redist_status_t st = redist_plan_create(c->spec, &po, &p, &err);
        pt[i] = MPI_Wtime() - t0;
        if (st) {
            char msg[600];
            say("%-44s skipped: no plan: %s\n", c->name,
                redist_error_format(&err, msg, sizeof msg));
            return -1;
        }
        if (i == 0)
            c->plan = p;
        else
            redist_plan_free(p);
    }
    qsort(pt, 5, sizeof pt[0], cmp_double);
    c->plan_us = pt[2] * 1e6;
    redist_plan_options_t pb;
    memset(&pb, 0, sizeof pb);
    pb.objective = REDIST_OBJECTIVE_BYTES;
    if (redist_plan_create(c->spec, &pb, &c->plan_bytes, &err)) {
        char msg[600];
        snprintf(c->bytes_why, sizeof c->bytes_why, "bytes objective: %s",
                 redist_error_format(&err, msg, sizeof msg));
        c->plan_bytes = NULL;
    } else if (plans_equal(c->plan, c->plan_bytes)) {
        snprintf(c->bytes_why, sizeof c->bytes_why,
                 "bytes objective gives the same plan");
        redist_plan_free(c->plan_bytes);
        c->plan_bytes = NULL;
    }
    return 0;
}

/* Whether implementation k can run case c: 0, or 1 with im->why set. */
static int cannot_run(const bcase_t *c, impl_t *im, int selected)
{
    const bench_impl_t *b = im->impl;
    if (!selected)
        snprintf(im->why, sizeof im->why, "not selected");
    else if (b->flags & BENCH_WHOLE_TARGET && redist_spec_to(c->spec)->partial)
        snprintf(im->why, sizeof im->why, "target keeps partial axes");
    else if (b->needs & BENCH_SHMEM && !g_shmem)
        snprintf(im->why, sizeof im->why, "%s",
                 bench_built(BENCH_SHMEM) ? "run without --shmem"
                                          : "not built (no OpenSHMEM backend)");
    else if (b->needs & BENCH_SCALAPACK && !bench_built(BENCH_SCALAPACK))
        snprintf(im->why, sizeof im->why, "not built (no ScaLAPACK)");
    else if (!im->plan)
        snprintf(im->why, sizeof im->why, "%s", c->bytes_why);
    else if (b->applies && b->applies(c, im->why, sizeof im->why))
        ;
    else
        return 0;
    return 1;
}

/* Decide which implementations run: selected, able to, and within the
 * memory budget with their estimated extra memory (prepare). */
static void choose_impls(bcase_t *c, const opts_t *o)
{
    for (int k = 0; k < bench_nimpls; k++) {
        impl_t *im = &c->im[k];
        im->on = !cannot_run(c, im, (o->impl_mask >> k & 1u) != 0);
        if (im->on && im->impl->prepare)
            im->est = im->impl->prepare(c, im);
    }
    uint64_t base = c->src_bytes * 2 + c->dst_bytes + (64ULL << 20);
    for (int k = 0; k < bench_nimpls; k++) {
        impl_t *im = &c->im[k];
        if (im->on && o->mem_budget &&
            (base + im->est) * (uint64_t)g_size > o->mem_budget) {
            char b[32], t[32];
            fmt_bytes((base + im->est) * (uint64_t)g_size, b, sizeof b);
            fmt_bytes(o->mem_budget, t, sizeof t);
            snprintf(im->why, sizeof im->why,
                     "memory: needs ~%s on the node, budget %s", b, t);
            im->on = 0;
        }
    }
}

static void *buf_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1))
        die("out of memory (%zu bytes)", n);
    return p;
}

/* src and dst: symmetric (shmem_malloc) when an OpenSHMEM implementation
 * runs, so that its puts land straight in them; else page-aligned. */
static void alloc_buffers(bcase_t *c)
{
#ifdef BENCH_HAVE_SHMEM
    int any = 0;
    for (int k = 0; k < bench_nimpls; k++)
        any |= c->im[k].on && c->im[k].impl->needs & BENCH_SHMEM;
    if (any) {
        c->src = shmem_malloc(c->src_bytes ? c->src_bytes : 1);
        c->dst = shmem_malloc(c->dst_bytes ? c->dst_bytes : 1);
        if (all_ok(c->src && c->dst)) {
            c->symmetric = 1;
            return;
        }
        shmem_free(c->src);
        shmem_free(c->dst);
        c->src = c->dst = NULL;
        for (int k = 0; k < bench_nimpls; k++) {
            impl_t *im = &c->im[k];
            if (!im->on || !(im->impl->needs & BENCH_SHMEM))
                continue;
            im->on = 0;
            snprintf(im->why, sizeof im->why,
                     "symmetric heap too small for src + dst "
                     "(SHMEM_SYMMETRIC_HEAP_SIZE)");
        }
    }
#endif
    c->src = buf_alloc(c->src_bytes);
    c->dst = buf_alloc(c->dst_bytes);
}

static void free_case(bcase_t *c)
{
    for (int k = 0; k < bench_nimpls; k++) {
        impl_t *im = &c->im[k];
        free(im->t);
        free(im->fl);
        if (im->state && im->impl->teardown)
            im->impl->teardown(c, im);
    }
    if (c->et != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->et);
    xchg_free(&c->x);
#ifdef BENCH_HAVE_SHMEM
    if (c->symmetric) {
        shmem_free(c->src);
        shmem_free(c->dst);
    } else
#endif
    {
        free(c->src);
        free(c->dst);
    }
    free(c->pristine);
    redist_plan_free(c->plan);
    redist_plan_free(c->plan_bytes);
    redist_spec_free(c->spec);
}

/* Buffers (with the pristine source) and the setups, for a case where
 * something runs. */
static void case_setup(bcase_t *c)
{
    alloc_buffers(c);
    c->pristine = xmalloc(c->src_bytes);
    rd_pattern_fill(c->spec, g_rank, c->pristine);
    memset(c->dst, 0, c->dst_bytes); /* touch */
    for (int k = 0; k < bench_nimpls; k++)
        if (c->im[k].on && c->im[k].impl->setup)
            c->im[k].impl->setup(c, &c->im[k]);
}

void run_case(redist_spec_t *spec, const char *label, const char *specname,
              const opts_t *o, FILE *csv)
{
    bcase_t cs, *c = &cs;
    case_init(c, spec, label);
    if (case_plans(c)) {
        redist_plan_free(c->plan);
        redist_spec_free(spec);
        return;
    }
    for (int k = 0; k < bench_nimpls; k++) {
        c->im[k].impl = bench_impls[k];
        c->im[k].plan = bench_impls[k]->flags & BENCH_BYTES_PLAN
                            ? c->plan_bytes
                            : c->plan;
    }
    MPI_Type_contiguous((int)c->elem, MPI_BYTE, &c->et);
    MPI_Type_commit(&c->et);
    xchg_setup(c);
    choose_impls(c, o);
    uint64_t base = (c->src_bytes * 2 + c->dst_bytes) * (uint64_t)g_size;
    if (o->mem_budget && base > o->mem_budget) {
        char b[32];
        fmt_bytes(base, b, sizeof b);
        say("%-44s skipped: buffers need %s on the node\n", c->name, b);
        for (int k = 0; k < bench_nimpls; k++)
            c->im[k].on = 0;
    }
    int any = 0;
    for (int k = 0; k < bench_nimpls; k++)
        any |= c->im[k].on;
    if (any)
        case_setup(c);
    double wall = run_rounds(c, o);
    report_case(c, label, specname, o, csv);
    say("   (%d warm-up + %d timed rounds in %.1f s)\n", o->warmup, o->reps,
        wall);
    if (csv && g_rank == 0)
        fflush(csv);
    free_case(c);
}
