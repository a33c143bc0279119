/*
 * alltoallv: the direct exchange written by hand.  Each rank receives
 * exactly what it lacks from one holder (the one that agrees with it on
 * the source's replicated axes; the pieces are c->x): pack, one
 * MPI_Alltoallv, unpack (reduce, for partial sources).  Its workspaces,
 * a send and a receive buffer, are kept across calls.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct alltoallv {
    char *sbuf, *rbuf; /* persistent workspaces, or NULL */
} alltoallv_t;

static int applies(const bcase_t *c, char *why, size_t n)
{
    return reduction_unwritten(c, why, n);
}

static uint64_t prepare(bcase_t *c, impl_t *im)
{
    (void)im;
    return 2 * c->dst_bytes * (c->partial ? 4 : 1);
}

static void setup(bcase_t *c, impl_t *im)
{
    (void)c;
    im->state = xcalloc(1, sizeof(alltoallv_t));
}

static void workspace(bcase_t *c, impl_t *im, int keep)
{
    alltoallv_t *v = im->state;
    free(v->sbuf);
    free(v->rbuf);
    v->sbuf = v->rbuf = NULL;
    if (keep) {
        v->sbuf = xmalloc(c->x.send_elems * c->elem);
        v->rbuf = xmalloc(c->x.recv_elems * c->elem);
        memset(v->sbuf, 0, c->x.send_elems * c->elem);
        memset(v->rbuf, 0, c->x.recv_elems * c->elem);
    }
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    alltoallv_t *v = im->state;
    const xchg_t *x = &c->x;
    int op = c->partial ? (int)c->red : OP_COPY;
    char *sb = c->fresh ? xmalloc(x->send_elems * c->elem) : v->sbuf;
    char *rb = c->fresh ? xmalloc(x->recv_elems * c->elem) : v->rbuf;
    for (int p = 0; p < g_size; p++)
        if (p != g_rank && x->has_send[p])
            rect_move(sb + (size_t)x->sdispl[p] * c->elem, &x->send_piece[p],
                      c->src, &c->srect, &x->send_piece[p], c->nd, c->elem,
                      c->dt, OP_COPY);
    if (c->partial)
        fill_neutral(c->dst, rect_elems(&c->drect, c->nd), c->dt, c->red);
    if (x->has_recv[g_rank])
        rect_move(c->dst, &c->drect, c->src, &c->srect,
                  &x->recv_piece[g_rank], c->nd, c->elem, c->dt, op);
    MPI_Alltoallv(sb, x->scount, x->sdispl, c->et, rb, x->rcount, x->rdispl,
                  c->et, MPI_COMM_WORLD);
    for (int p = 0; p < g_size; p++)
        if (p != g_rank && x->has_recv[p])
            rect_move(c->dst, &c->drect, rb + (size_t)x->rdispl[p] * c->elem,
                      &x->recv_piece[p], &x->recv_piece[p], c->nd, c->elem,
                      c->dt, op);
    if (c->fresh) {
        free(sb);
        free(rb);
    }
    return (x->send_elems + x->recv_elems) * c->elem;
}

static void teardown(bcase_t *c, impl_t *im)
{
    workspace(c, im, 0);
    free(im->state);
    im->state = NULL;
}

const bench_impl_t bench_alltoallv = {
    .name = "alltoallv", .needs = BENCH_MPI, .flags = BENCH_WHOLE_TARGET,
    .applies = applies, .prepare = prepare, .setup = setup,
    .workspace = workspace, .run = run, .teardown = teardown};
