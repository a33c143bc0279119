/*
 * alltoallw: the direct exchange of alltoallv with subarray datatypes
 * (MPI_Type_create_subarray of each piece in the source and target
 * blocks, made at setup): no pack, no buffers.  Not for partial sources,
 * which need a reduction.
 */
#include <stdlib.h>

#include "bench.h"

typedef struct alltoallw {
    MPI_Datatype *wst, *wrt; /* per peer; c->et where nothing moves */
    int *wcount0, *wcount1, *wdispl0;
} alltoallw_t;

static int applies(const bcase_t *c, char *why, size_t n)
{
    if (!c->partial)
        return 0;
    snprintf(why, n, "partial source: needs a reduction");
    return 1;
}

/* The subarray of `piece` within the block `frame`. */
static void subarray(const bcase_t *c, const rect_t *frame,
                     const rect_t *piece, MPI_Datatype *t)
{
    int sizes[REDIST_MAX_DIMS], sub[REDIST_MAX_DIMS], st[REDIST_MAX_DIMS];
    for (int i = 0; i < c->nd; i++) {
        sizes[i] = (int)frame->ext[i];
        sub[i] = (int)piece->ext[i];
        st[i] = (int)(piece->lo[i] - frame->lo[i]);
    }
    MPI_Type_create_subarray(c->nd, sizes, sub, st, MPI_ORDER_C, c->et, t);
    MPI_Type_commit(t);
}

static void setup(bcase_t *c, impl_t *im)
{
    size_t P = (size_t)g_size;
    alltoallw_t *w = xcalloc(1, sizeof *w);
    im->state = w;
    w->wst = xcalloc(P, sizeof(MPI_Datatype));
    w->wrt = xcalloc(P, sizeof(MPI_Datatype));
    w->wcount0 = xcalloc(P, sizeof(int));
    w->wcount1 = xcalloc(P, sizeof(int));
    w->wdispl0 = xcalloc(P, sizeof(int));
    for (int p = 0; p < g_size; p++) {
        w->wst[p] = w->wrt[p] = c->et;
        if (p != g_rank && c->x.has_send[p]) {
            subarray(c, &c->srect, &c->x.send_piece[p], &w->wst[p]);
            w->wcount0[p] = 1;
        }
        if (p != g_rank && c->x.has_recv[p]) {
            subarray(c, &c->drect, &c->x.recv_piece[p], &w->wrt[p]);
            w->wcount1[p] = 1;
        }
    }
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    alltoallw_t *w = im->state;
    if (c->x.has_recv[g_rank])
        rect_move(c->dst, &c->drect, c->src, &c->srect,
                  &c->x.recv_piece[g_rank], c->nd, c->elem, c->dt, OP_COPY);
    MPI_Alltoallw(c->src, w->wcount0, w->wdispl0, w->wst, c->dst, w->wcount1,
                  w->wdispl0, w->wrt, MPI_COMM_WORLD);
    return 0;
}

static void teardown(bcase_t *c, impl_t *im)
{
    alltoallw_t *w = im->state;
    for (int p = 0; p < g_size; p++) {
        if (w->wst[p] != c->et)
            MPI_Type_free(&w->wst[p]);
        if (w->wrt[p] != c->et)
            MPI_Type_free(&w->wrt[p]);
    }
    free(w->wst);
    free(w->wrt);
    free(w->wcount0);
    free(w->wcount1);
    free(w->wdispl0);
    free(w);
    im->state = NULL;
}

const bench_impl_t bench_alltoallw = {
    .name = "alltoallw", .needs = BENCH_MPI, .flags = BENCH_WHOLE_TARGET,
    .applies = applies, .setup = setup, .run = run, .teardown = teardown};
