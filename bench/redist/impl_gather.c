/*
 * gather: gather-then-slice, what partitioners fall back to.  One
 * MPI_Allgather of the source blocks over the sharding axes (the whole
 * array on every rank; plus an in-place MPI_Allreduce over the partial
 * axes), then one pass cuts the target block out.  Uneven dims: an
 * MPI_Allgatherv of each member's exact block into slots of the largest
 * block's size.  The memory baseline:
 * its workspace is the group's size times the source block.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct gather {
    MPI_Comm gcomm, rcomm; /* the gather group; the reduction group */
    int gsize;
    int64_t *gmember;      /* world ranks of the gather group, in order */
    int *gcount, *gdispl;  /* uneven: members' elements, slot offsets */
    char *gbuf;            /* persistent workspace, or NULL */
} gather_t;

static int applies(const bcase_t *c, char *why, size_t n)
{
    return reduction_unwritten(c, why, n);
}

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    (void)im;
    /* group size is the product of the sharding axes (+ partial) */
    int64_t gs = 1;
    for (int a = 0; a < c->naxes; a++)
        if (c->src_axes >> a & 1u)
            gs *= redist_mesh_axis_size(c->mesh, a);
    return (uint64_t)gs * c->src_bytes;
}

static void setup(bcase_t *c, impl_t *im)
{
    gather_t *g = xcalloc(1, sizeof *g);
    im->state = g;
    /* group: the ranks that differ only on the source's sharding axes */
    uint32_t keep = c->red_axes | c->rep_axes;
    int mycolor = color_of(c->mesh, g_rank, keep);
    MPI_Comm_split(MPI_COMM_WORLD, mycolor, g_rank, &g->gcomm);
    MPI_Comm_size(g->gcomm, &g->gsize);
    g->gmember = xmalloc(sizeof(int64_t) * (size_t)g->gsize);
    int k = 0;
    for (int64_t p = 0; p < g_size; p++)
        if (color_of(c->mesh, p, keep) == mycolor)
            g->gmember[k++] = p;
    if (redist_spec_is_uneven(c->spec)) {
        g->gcount = xmalloc(sizeof(int) * (size_t)g->gsize);
        g->gdispl = xmalloc(sizeof(int) * (size_t)g->gsize);
        for (int j = 0; j < g->gsize; j++) {
            uint64_t b = redist_spec_device_bytes(c->spec, REDIST_SIDE_FROM,
                                                  g->gmember[j]);
            g->gcount[j] = (int)(b / c->elem);
            g->gdispl[j] = (int)((uint64_t)j * c->src_bytes / c->elem);
        }
    }
    g->rcomm = MPI_COMM_NULL;
    if (c->partial)
        MPI_Comm_split(MPI_COMM_WORLD,
                       color_of(c->mesh, g_rank, c->src_axes | c->rep_axes),
                       g_rank, &g->rcomm);
}

static uint64_t gather_bytes(const bcase_t *c, const gather_t *g)
{
    return (uint64_t)g->gsize * c->src_bytes;
}

static void workspace(bcase_t *c, impl_t *im, int keep)
{
    gather_t *g = im->state;
    free(g->gbuf);
    g->gbuf = NULL;
    if (keep) {
        g->gbuf = xmalloc(gather_bytes(c, g));
        memset(g->gbuf, 0, gather_bytes(c, g));
    }
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    gather_t *g = im->state;
    uint64_t bytes = gather_bytes(c, g);
    char *all = c->fresh ? xmalloc(bytes) : g->gbuf;
    int cnt = (int)(c->src_bytes / c->elem);
    if (g->gcount)
        MPI_Allgatherv(c->src, (int)(c->my_src_bytes / c->elem), c->et, all,
                       g->gcount, g->gdispl, c->et, g->gcomm);
    else
        MPI_Allgather(c->src, cnt, c->et, all, cnt, c->et, g->gcomm);
    if (c->partial)
        MPI_Allreduce(MPI_IN_PLACE, all, (int)(bytes / c->elem),
                      c->dt == REDIST_F32 ? MPI_FLOAT : MPI_DOUBLE,
                      mpi_op(c->red), g->rcomm);
    for (int k = 0; k < g->gsize; k++) {
        rect_t sr, piece;
        type_rect(c->spec, redist_spec_from(c->spec), g->gmember[k], &sr);
        if (rect_meet(&sr, &c->drect, c->nd, &piece))
            rect_move(c->dst, &c->drect, all + (size_t)k * c->src_bytes, &sr,
                      &piece, c->nd, c->elem, c->dt, OP_COPY);
    }
    if (c->fresh)
        free(all);
    return bytes;
}

static void teardown(bcase_t *c, impl_t *im)
{
    (void)c;
    gather_t *g = im->state;
    if (g->gcomm != MPI_COMM_NULL)
        MPI_Comm_free(&g->gcomm);
    if (g->rcomm != MPI_COMM_NULL)
        MPI_Comm_free(&g->rcomm);
    free(g->gmember);
    free(g->gcount);
    free(g->gdispl);
    free(g->gbuf);
    free(g);
    im->state = NULL;
}

const bench_impl_t bench_gather = {
    .name = "gather", .needs = BENCH_MPI, .flags = BENCH_WHOLE_TARGET,
    .applies = applies, .prepare = prepare, .setup = setup,
    .workspace = workspace, .run = run, .teardown = teardown};
