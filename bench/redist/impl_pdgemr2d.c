/*
 * pdgemr2d: ScaLAPACK p?gemr2d (Debian libscalapack-openmpi-dev, through
 * its Fortran symbols and the C BLACS) for 2-D arrays of f32/f64/c64/
 * c128 whose target shards over every mesh axis (the source taken from
 * its replica 0).  Row-major blocks are the column-major blocks of the
 * transpose, so each BLACS grid is the transpose of the type's.  One
 * BLACS system context spans all ranks for the whole program; each case
 * makes a source and a target grid.  ScaLAPACK allocates inside each
 * call.  Built only with ScaLAPACK.
 */
#include <stdlib.h>

#include "bench.h"

void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *ctxt, int *usermap, int ldumap, int nprow,
                    int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow,
                     int *mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_exit(int notdone);
typedef void gemr2d_fn(const int *m, const int *n, const void *a,
                       const int *ia, const int *ja, const int *desca,
                       void *b, const int *ib, const int *jb,
                       const int *descb, const int *ictxt);
void psgemr2d_(const int *m, const int *n, const float *a, const int *ia,
               const int *ja, const int *desca, float *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia,
               const int *ja, const int *desca, double *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pcgemr2d_(const int *m, const int *n, const float *a, const int *ia,
               const int *ja, const int *desca, float *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);
void pzgemr2d_(const int *m, const int *n, const double *a, const int *ia,
               const int *ja, const int *desca, double *b, const int *ib,
               const int *jb, const int *descb, const int *ictxt);

static int g_blacs_sys = -1; /* the system context of every call */

typedef struct gemr {
    int src_ctxt, dst_ctxt;
    int desca[9], descb[9], gm, gn;
} gemr_t;

static void start(void)
{
    int me, np;
    Cblacs_pinfo(&me, &np);
    Cblacs_get(-1, 0, &g_blacs_sys);
    Cblacs_gridinit(&g_blacs_sys, "R", 1, np);
}

static void finish(void)
{
    Cblacs_gridexit(g_blacs_sys);
    Cblacs_exit(1);
}

static gemr2d_fn *gemr2d_for(redist_dtype_t dt)
{
    switch (dt) {
    case REDIST_F32: return (gemr2d_fn *)psgemr2d_;
    case REDIST_F64: return (gemr2d_fn *)pdgemr2d_;
    case REDIST_C64: return (gemr2d_fn *)pcgemr2d_;
    case REDIST_C128: return (gemr2d_fn *)pzgemr2d_;
    default: return NULL;
    }
}

static int applies(const bcase_t *c, char *why, size_t n)
{
    uint32_t all = (1u << c->naxes) - 1;
    if (c->nd != 2)
        snprintf(why, n, "not a 2-D array");
    else if (c->partial)
        snprintf(why, n, "partial source");
    else if (!gemr2d_for(c->dt))
        snprintf(why, n, "dtype %s (p?gemr2d: s d c z)",
                 redist_dtype_name(c->dt));
    else if (redist_spec_is_uneven(c->spec))
        snprintf(why, n, "uneven dims (block-cyclic blocks are even)");
    else if (axes_of(redist_spec_to(c->spec)) != all)
        snprintf(why, n, "replicated target (one call cannot express it)");
    else
        return 0;
    return 1;
}

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    (void)im;
    return c->src_bytes + c->dst_bytes;
}

/* A BLACS grid for type t: the transpose of the row-major array, rows
 * = dim 1 over nprow = c1 processes, columns = dim 0 over npcol = c0; the
 * process with block (b0, b1) sits at (b1, b0).  Only the ranks whose
 * coordinates on the axes outside `t` are 0 take part. */
static void gemr_grid(bcase_t *c, const redist_type_t *t, int *ctxt,
                      int desc[9])
{
    int c0 = (int)split_count(c->mesh, t, 0),
        c1 = (int)split_count(c->mesh, t, 1);
    uint32_t used = axes_of(t);
    int *map = xmalloc(sizeof(int) * (size_t)(c0 * c1));
    for (int64_t p = 0; p < g_size; p++) {
        int64_t pc[REDIST_MAX_AXES];
        redist_mesh_coords(c->mesh, p, pc);
        int out = 0;
        for (int a = 0; a < c->naxes; a++)
            if (!(used >> a & 1u) && pc[a] != 0)
                out = 1;
        if (out)
            continue;
        rect_t r;
        type_rect(c->spec, t, p, &r);
        int b0 = (int)(r.lo[0] / r.ext[0]), b1 = (int)(r.lo[1] / r.ext[1]);
        map[b1 + b0 * c1] = (int)p;
    }
    int ctx;
    Cblacs_get(-1, 0, &ctx);
    Cblacs_gridmap(&ctx, map, c1, c1, c0);
    free(map);
    int npr, npc, myr = -1, myc = -1;
    if (ctx >= 0)
        Cblacs_gridinfo(ctx, &npr, &npc, &myr, &myc);
    const int64_t *shape = redist_spec_shape(c->spec);
    desc[0] = 1;
    desc[1] = (ctx >= 0 && myr >= 0) ? ctx : -1;
    desc[2] = (int)shape[1];
    desc[3] = (int)shape[0];
    desc[4] = (int)(shape[1] / c1);
    desc[5] = (int)(shape[0] / c0);
    desc[6] = 0;
    desc[7] = 0;
    desc[8] = desc[4] > 1 ? desc[4] : 1;
    *ctxt = desc[1];
}

static void setup(bcase_t *c, impl_t *im)
{
    gemr_t *g = xcalloc(1, sizeof *g);
    im->state = g;
    gemr_grid(c, redist_spec_from(c->spec), &g->src_ctxt, g->desca);
    gemr_grid(c, redist_spec_to(c->spec), &g->dst_ctxt, g->descb);
    g->gm = (int)redist_spec_shape(c->spec)[1];
    g->gn = (int)redist_spec_shape(c->spec)[0];
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    gemr_t *g = im->state;
    int one = 1;
    gemr2d_fn *fn = gemr2d_for(c->dt);
    fn(&g->gm, &g->gn, c->src, &one, &one, g->desca, c->dst, &one, &one,
       g->descb, &g_blacs_sys);
    return 0;
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    gemr_t *g = im->state;
    if (g->src_ctxt >= 0)
        Cblacs_gridexit(g->src_ctxt);
    if (g->dst_ctxt >= 0)
        Cblacs_gridexit(g->dst_ctxt);
    free(g);
    im->state = NULL;
}

const bench_impl_t bench_pdgemr2d = {
    .name = "pdgemr2d", .needs = BENCH_MPI | BENCH_SCALAPACK,
    .flags = BENCH_WHOLE_TARGET, .start = start, .finish = finish,
    .applies = applies, .prepare = prepare, .setup = setup, .run = run,
    .teardown = teardown};
