/*
 * Blocks of a sharded array as global rectangles, the copies and
 * reductions between them that the hand-written alternatives make, and
 * the pieces of the direct exchange (xchg_t, bench.h).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void type_rect(const redist_spec_t *spec, const redist_type_t *t,
               int64_t rank, rect_t *r)
{
    /* the side whose layout applies (uneven dims: block lengths by the
     * spec's split rule or explicit blocks); another type splits evenly */
    int side = t == redist_spec_from(spec) ? REDIST_SIDE_FROM
               : t == redist_spec_to(spec) ? REDIST_SIDE_TO
                                           : -1;
    mesh_type_rect(spec, redist_spec_mesh(spec), side, t, rank, r);
}

void mesh_type_rect(const redist_spec_t *spec, const redist_mesh_t *m,
                    int side, const redist_type_t *t, int64_t rank,
                    rect_t *r)
{
    const int64_t *shape = redist_spec_shape(spec);
    int uneven = side >= 0 && redist_spec_is_uneven(spec);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(m, rank, c);
    for (int i = 0; i < redist_spec_ndims(spec); i++) {
        int64_t b = 0, n = 1;
        for (int j = 0; j < t->dim_naxes[i]; j++) {
            int a = t->dims[i][j];
            int64_t s = redist_mesh_axis_size(m, a);
            b = b * s + c[a];
            n *= s;
        }
        if (!uneven || n == 1) {
            r->ext[i] = shape[i] / n;
            r->lo[i] = b * r->ext[i];
            continue;
        }
        int64_t *len = xmalloc(sizeof(int64_t) * (size_t)n);
        if (redist_spec_block_lengths(spec, side, i, len, n) != n)
            die("block lengths of dim %d: not %lld blocks", i, (long long)n);
        r->lo[i] = 0;
        for (int64_t k = 0; k < b; k++)
            r->lo[i] += len[k];
        r->ext[i] = len[b];
        free(len);
    }
}

int64_t rect_elems(const rect_t *r, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= r->ext[i];
    return n;
}

int rect_meet(const rect_t *a, const rect_t *b, int nd, rect_t *o)
{
    for (int i = 0; i < nd; i++) {
        int64_t lo = a->lo[i] > b->lo[i] ? a->lo[i] : b->lo[i];
        int64_t ha = a->lo[i] + a->ext[i], hb = b->lo[i] + b->ext[i];
        int64_t hi = ha < hb ? ha : hb;
        if (hi <= lo)
            return 0;
        o->lo[i] = lo;
        o->ext[i] = hi - lo;
    }
    return 1;
}

static void reduce_run(char *d, const char *s, int64_t n, redist_dtype_t dt,
                       int op)
{
    if (dt == REDIST_F32) {
        float *x = (float *)d;
        const float *y = (const float *)s;
        for (int64_t i = 0; i < n; i++)
            x[i] = op == REDIST_REDUCE_SUM    ? x[i] + y[i]
                   : op == REDIST_REDUCE_PROD ? x[i] * y[i]
                   : op == REDIST_REDUCE_MAX  ? (y[i] > x[i] ? y[i] : x[i])
                                              : (y[i] < x[i] ? y[i] : x[i]);
    } else {
        double *x = (double *)d;
        const double *y = (const double *)s;
        for (int64_t i = 0; i < n; i++)
            x[i] = op == REDIST_REDUCE_SUM    ? x[i] + y[i]
                   : op == REDIST_REDUCE_PROD ? x[i] * y[i]
                   : op == REDIST_REDUCE_MAX  ? (y[i] > x[i] ? y[i] : x[i])
                                              : (y[i] < x[i] ? y[i] : x[i]);
    }
}

/* Trailing dims that the region spans whole in both frames are folded
 * into one contiguous run. */
void rect_move(char *d, const rect_t *df, const char *s, const rect_t *sf,
               const rect_t *reg, int nd, size_t elem, redist_dtype_t dt,
               int op)
{
    int64_t dstr[REDIST_MAX_DIMS], sstr[REDIST_MAX_DIMS];
    int64_t ds = 1, ss = 1;
    for (int i = nd - 1; i >= 0; i--) {
        dstr[i] = ds;
        sstr[i] = ss;
        ds *= df->ext[i];
        ss *= sf->ext[i];
    }
    int k = nd - 1;
    int64_t run = reg->ext[k];
    while (k > 0 && reg->ext[k] == df->ext[k] && reg->ext[k] == sf->ext[k]) {
        k--;
        run *= reg->ext[k];
    }
    /* dims 0..k-1 are iterated; dim k..nd-1 form the run */
    int64_t idx[REDIST_MAX_DIMS] = {0};
    int64_t doff0 = 0, soff0 = 0;
    for (int i = 0; i < nd; i++) {
        doff0 += (reg->lo[i] - df->lo[i]) * dstr[i];
        soff0 += (reg->lo[i] - sf->lo[i]) * sstr[i];
    }
    for (;;) {
        int64_t doff = doff0, soff = soff0;
        for (int i = 0; i < k; i++) {
            doff += idx[i] * dstr[i];
            soff += idx[i] * sstr[i];
        }
        if (op == OP_COPY)
            memcpy(d + (size_t)doff * elem, s + (size_t)soff * elem,
                   (size_t)run * elem);
        else
            reduce_run(d + (size_t)doff * elem, s + (size_t)soff * elem, run,
                       dt, op);
        int i = k - 1;
        while (i >= 0 && ++idx[i] == reg->ext[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
}

void fill_neutral(char *buf, int64_t n, redist_dtype_t dt, int op)
{
    double v = op == REDIST_REDUCE_SUM    ? 0.0
               : op == REDIST_REDUCE_PROD ? 1.0
               : op == REDIST_REDUCE_MAX  ? -INFINITY
                                          : INFINITY;
    if (dt == REDIST_F32) {
        float *x = (float *)buf, fv = (float)v;
        for (int64_t i = 0; i < n; i++)
            x[i] = fv;
    } else {
        double *x = (double *)buf;
        for (int64_t i = 0; i < n; i++)
            x[i] = v;
    }
}

MPI_Op mpi_op(redist_reduce_t r)
{
    return r == REDIST_REDUCE_SUM    ? MPI_SUM
           : r == REDIST_REDUCE_PROD ? MPI_PROD
           : r == REDIST_REDUCE_MAX  ? MPI_MAX
                                     : MPI_MIN;
}

uint32_t axes_of(const redist_type_t *t)
{
    uint32_t m = 0;
    for (int i = 0; i < t->ndims; i++)
        for (int j = 0; j < t->dim_naxes[i]; j++)
            m |= 1u << t->dims[i][j];
    return m;
}

int color_of(const redist_mesh_t *m, int64_t rank, uint32_t mask)
{
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(m, rank, c);
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (!(mask >> a & 1u))
            c[a] = 0;
    return (int)redist_mesh_rank(m, c);
}

int64_t split_count(const redist_mesh_t *m, const redist_type_t *t, int dim)
{
    int64_t p = 1;
    for (int j = 0; j < t->dim_naxes[dim]; j++)
        p *= redist_mesh_axis_size(m, t->dims[dim][j]);
    return p;
}

/* ------------------------------------------------ direct exchange */

/* Record piece p -> r (of n elements) where this rank is p or r. */
static void xchg_note(xchg_t *x, int64_t p, int64_t r, const rect_t *piece,
                      int64_t n)
{
    if (r == g_rank) {
        x->has_recv[p] = 1;
        x->recv_piece[p] = *piece;
        if (p != g_rank) {
            if ((uint64_t)n > INT_MAX || x->recv_elems > INT_MAX)
                die("alltoallv count over INT_MAX");
            x->rcount[p] = (int)n;
            x->rdispl[p] = (int)x->recv_elems;
            x->recv_elems += (uint64_t)n;
        }
    }
    if (p == g_rank) {
        x->has_send[r] = 1;
        x->send_piece[r] = *piece;
        if (r != g_rank) {
            if ((uint64_t)n > INT_MAX || x->send_elems > INT_MAX)
                die("alltoallv count over INT_MAX");
            x->scount[r] = (int)n;
            x->sdispl[r] = (int)x->send_elems;
            x->send_elems += (uint64_t)n;
        }
    }
}

void xchg_setup(bcase_t *c)
{
    size_t P = (size_t)g_size;
    xchg_t *x = &c->x;
    const redist_type_t *from = redist_spec_from(c->spec),
                        *to = redist_spec_to(c->spec);
    x->has_send = xcalloc(P, sizeof(int));
    x->has_recv = xcalloc(P, sizeof(int));
    x->send_piece = xcalloc(P, sizeof(rect_t));
    x->recv_piece = xcalloc(P, sizeof(rect_t));
    x->scount = xcalloc(P, sizeof(int));
    x->sdispl = xcalloc(P, sizeof(int));
    x->rcount = xcalloc(P, sizeof(int));
    x->rdispl = xcalloc(P, sizeof(int));
    x->send_elems = x->recv_elems = x->lack_max = 0;
    /* pieces p -> r exist iff p and r agree on the source's replicated
     * axes and p's source block meets r's target block */
    for (int64_t r = 0; r < g_size; r++) {
        rect_t dr;
        type_rect(c->spec, to, r, &dr);
        int64_t rc[REDIST_MAX_AXES], pc[REDIST_MAX_AXES];
        redist_mesh_coords(c->mesh, r, rc);
        uint64_t lack = 0;
        for (int64_t p = 0; p < g_size; p++) {
            redist_mesh_coords(c->mesh, p, pc);
            int agree = 1;
            for (int a = 0; a < c->naxes; a++)
                if (c->rep_axes >> a & 1u && pc[a] != rc[a])
                    agree = 0;
            rect_t sr, piece;
            type_rect(c->spec, from, p, &sr);
            if (!agree || !rect_meet(&sr, &dr, c->nd, &piece))
                continue;
            int64_t n = rect_elems(&piece, c->nd);
            if (p != r)
                lack += (uint64_t)n * c->elem;
            xchg_note(x, p, r, &piece, n);
        }
        if (r == g_rank)
            x->lack_bytes = lack;
        x->lack_max = umax(x->lack_max, lack);
    }
}

void xchg_free(xchg_t *x)
{
    free(x->has_send);
    free(x->has_recv);
    free(x->send_piece);
    free(x->recv_piece);
    free(x->scount);
    free(x->sdispl);
    free(x->rcount);
    free(x->rdispl);
}

int reduction_unwritten(const bcase_t *c, char *why, size_t n)
{
    if (!c->partial || c->dt == REDIST_F32 || c->dt == REDIST_F64)
        return 0;
    snprintf(why, n, "reduction of %s not written", redist_dtype_name(c->dt));
    return 1;
}
