/*
 * bench_sets' hand-written per-tensor alternatives (what they stand for
 * and how they are measured: the top of bench_sets.c), on one mesh or
 * from a source mesh to a target mesh of the same MPI_COMM_WORLD.
 *
 * GATHER (+ BROADCAST).  Per tensor, one MPI_Allgatherv of every source
 * rank's block over the source ranks that shard it (the ranks that
 * differ only on the axes the source splits: each such group ends up
 * with the whole tensor, as FSDP's full-parameter gather does), then one
 * MPI_Bcast of the whole tensor from source-mesh rank 0 to the target
 * ranks off the source mesh (OpenRLHF's weight broadcast from training
 * rank 0 to the inference workers over one group of those ranks), then
 * each target rank copies its block out of the gathered blocks (no
 * reassembly into a row-major tensor: slices straight from them).  A
 * target rank on the source mesh gathered the tensor itself and takes
 * its block from there (one mesh: no broadcast at all).  Cost per
 * tensor: every source rank receives the tensor less its block; each
 * receiver of the broadcast the whole tensor; workspace: one tensor on
 * every rank that gathers or receives it.
 *
 * ALLTOALLV.  Per tensor, exact boxes over MPI_COMM_WORLD: source rank p
 * sends target rank q the meet of their blocks when p is the holder q
 * takes that source block from, one MPI_Alltoallv (ranks outside a mesh
 * send or receive 0 bytes), unpack.  Among the replicas of a source
 * block (the source ranks that differ only on the source's replicated
 * axes), q takes it from the one that agrees with it on those axes when
 * q is on the source mesh (itself, when q holds it), else from replica
 * (q's target-mesh rank mod the replica count): the sending is spread
 * evenly.  Cost per tensor: each byte crosses once; workspace: the send
 * and receive buffers.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sets.h"

sides_t S;

static char *gbuf, *sbuf; /* gathered tensor; alltoallv send + receive */
static uint64_t gbuf_bytes, xbuf_bytes;
static MPI_Comm bcomm = MPI_COMM_NULL; /* root + receivers off the source */
static int bsize, brank;

/* ------------------------------------------------------------- meshes */

void sides_init(const redist_spec_t *s0)
{
    S.two = redist_spec_num_meshes(s0) == 2;
    for (int side = 0; side < 2; side++) {
        S.m[side] = redist_spec_side_mesh(s0, side);
        S.rank[side] = xmalloc(sizeof(int64_t) * (size_t)g_size);
        for (int d = 0; d < g_size; d++)
            S.rank[side][d] = -1;
        for (int64_t r = 0; r < redist_mesh_num_devices(S.m[side]); r++) {
            int64_t d = redist_spec_mesh_device(s0, side, r);
            if (d < 0 || d >= g_size)
                die("device %lld of a mesh is out of the %d ranks",
                    (long long)d, g_size);
            S.rank[side][d] = r;
        }
    }
}

void sides_free(void)
{
    free(S.rank[0]);
    free(S.rank[1]);
}

int side_rect(const redist_spec_t *spec, int side, int64_t dev, rect_t *r)
{
    int64_t k = S.rank[side][dev];
    if (k < 0) {
        memset(r, 0, sizeof *r);
        return 0;
    }
    mesh_type_rect(spec, S.m[side], side,
                   side == REDIST_SIDE_FROM ? redist_spec_from(spec)
                                            : redist_spec_to(spec),
                   k, r);
    return 1;
}

/* The linear index of source rank r over the axes of `rep` alone
 * (0 .. the replica count - 1). */
static int64_t rep_index(int64_t r, uint32_t rep)
{
    const redist_mesh_t *m = S.m[REDIST_SIDE_FROM];
    int64_t c[REDIST_MAX_AXES], k = 0;
    redist_mesh_coords(m, r, c);
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (rep >> a & 1u)
            k = k * redist_mesh_axis_size(m, a) + c[a];
    return k;
}

/* The replica device dev takes a source block from (module comment);
 * -1 off both meshes. */
static int64_t wanted_replica(int64_t dev, uint32_t rep, int64_t nrep)
{
    if (S.rank[REDIST_SIDE_FROM][dev] >= 0)
        return rep_index(S.rank[REDIST_SIDE_FROM][dev], rep);
    if (S.rank[REDIST_SIDE_TO][dev] >= 0)
        return S.rank[REDIST_SIDE_TO][dev] % nrep;
    return -1;
}

/* ------------------------------------------------------------- gather */

typedef struct comm_cache {
    uint32_t mask;
    MPI_Comm comm;
} comm_cache_t;
static comm_cache_t cc[64];
static int ncc;

/* The source ranks that differ only on the axes of `shard` (collective
 * over MPI_COMM_WORLD; MPI_COMM_NULL off the source mesh), ordered by
 * source-mesh rank. */
static MPI_Comm group_comm(uint32_t shard)
{
    for (int i = 0; i < ncc; i++)
        if (cc[i].mask == shard)
            return cc[i].comm;
    if (ncc == 64)
        die("too many gather groups");
    const redist_mesh_t *m = S.m[REDIST_SIDE_FROM];
    uint32_t all = (uint32_t)((1ull << redist_mesh_num_axes(m)) - 1);
    int64_t r = S.rank[REDIST_SIDE_FROM][g_rank];
    cc[ncc].mask = shard;
    MPI_Comm_split(MPI_COMM_WORLD,
                   r >= 0 ? color_of(m, r, all & ~shard) : MPI_UNDEFINED,
                   (int)(r >= 0 ? r : 0), &cc[ncc].comm);
    return cc[ncc++].comm;
}

static int fits_int(uint64_t v) { return v <= INT_MAX; }

/* The broadcast's group: source-mesh rank 0 (its root, rank 0 here) and
 * the target ranks off the source mesh. */
static void bcast_setup(void)
{
    int64_t root = redist_spec_mesh_device(A[0].spec, REDIST_SIDE_FROM, 0);
    int in = g_rank == root || (S.rank[REDIST_SIDE_TO][g_rank] >= 0 &&
                                S.rank[REDIST_SIDE_FROM][g_rank] < 0);
    MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED,
                   g_rank == root ? -1 : g_rank, &bcomm);
    bsize = brank = 0;
    if (bcomm != MPI_COMM_NULL) {
        MPI_Comm_size(bcomm, &bsize);
        MPI_Comm_rank(bcomm, &brank);
    }
}

static void gather_setup(arr_t *x)
{
    const redist_spec_t *s = x->spec;
    const redist_mesh_t *m = S.m[REDIST_SIDE_FROM];
    const redist_type_t *from = redist_spec_from(s);
    uint32_t shard = axes_of(from);
    uint32_t all = (uint32_t)((1ull << redist_mesh_num_axes(m)) - 1);
    uint32_t rep = all & ~shard & ~from->partial;
    x->gcomm = group_comm(shard);
    /* the group whose blocks this rank holds after the run: its own on
     * the source mesh, the root's when it receives the broadcast */
    int64_t me = S.rank[REDIST_SIDE_FROM][g_rank];
    if (me < 0 && bcomm != MPI_COMM_NULL && bsize > 1)
        me = 0;
    if (me < 0)
        return;
    int64_t n = redist_mesh_num_devices(m);
    x->grect = xcalloc((size_t)n, sizeof(rect_t));
    x->gcount = xcalloc((size_t)n, sizeof(int));
    x->gdispl = xcalloc((size_t)n, sizeof(int));
    int k = 0, mycol = color_of(m, me, rep);
    x->gbytes = 0;
    for (int64_t p = 0; p < n; p++) {
        if (color_of(m, p, rep) != mycol)
            continue;
        mesh_type_rect(s, m, REDIST_SIDE_FROM, from, p, &x->grect[k]);
        uint64_t b = (uint64_t)rect_elems(&x->grect[k], x->nd) * x->elem;
        if (!fits_int(b) || !fits_int(x->gbytes + b))
            die("array \"%s\": gather over INT_MAX bytes", redist_spec_name(s));
        x->gcount[k] = (int)b;
        x->gdispl[k] = (int)x->gbytes;
        x->gbytes += b;
        k++;
    }
    x->gsize = k;
    gbuf_bytes = umax(gbuf_bytes, x->gbytes);
}

void run_gather(void)
{
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        if (x->gcomm != MPI_COMM_NULL)
            MPI_Allgatherv(x->src, (int)x->sbytes, MPI_BYTE, gbuf, x->gcount,
                           x->gdispl, MPI_BYTE, x->gcomm);
        if (bsize > 1)
            MPI_Bcast(gbuf, (int)x->gbytes, MPI_BYTE, 0, bcomm);
        if (!x->dbytes)
            continue;
        for (int k = 0; k < x->gsize; k++) {
            rect_t piece;
            if (rect_meet(&x->grect[k], &x->drect, x->nd, &piece))
                rect_move(x->dst, &x->drect, gbuf + x->gdispl[k],
                          &x->grect[k], &piece, x->nd, x->elem,
                          redist_spec_dtype(x->spec), OP_COPY);
        }
    }
}

int hand_broadcasts(void) { return bsize > 1; }

/* ---------------------------------------------------------- alltoallv */

static void alltoallv_setup(arr_t *x)
{
    const redist_spec_t *s = x->spec;
    const redist_mesh_t *m = S.m[REDIST_SIDE_FROM];
    const redist_type_t *from = redist_spec_from(s);
    uint32_t all = (uint32_t)((1ull << redist_mesh_num_axes(m)) - 1);
    uint32_t rep = all & ~axes_of(from) & ~from->partial;
    int64_t nrep = 1;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (rep >> a & 1u)
            nrep *= redist_mesh_axis_size(m, a);
    size_t P = (size_t)g_size;
    x->spiece = xcalloc(P, sizeof(rect_t));
    x->rpiece = xcalloc(P, sizeof(rect_t));
    x->has_s = xcalloc(P, 1);
    x->has_r = xcalloc(P, 1);
    x->scount = xcalloc(P, sizeof(int));
    x->sdispl = xcalloc(P, sizeof(int));
    x->rcount = xcalloc(P, sizeof(int));
    x->rdispl = xcalloc(P, sizeof(int));
    int64_t me = g_rank, my_want = wanted_replica(me, rep, nrep);
    int64_t my_rep = S.rank[REDIST_SIDE_FROM][me] >= 0
                         ? rep_index(S.rank[REDIST_SIDE_FROM][me], rep)
                         : -1;
    for (int64_t q = 0; q < g_size; q++) {
        rect_t qs, qd;
        int q_src = side_rect(s, REDIST_SIDE_FROM, q, &qs);
        int q_dst = side_rect(s, REDIST_SIDE_TO, q, &qd);
        /* q -> me */
        if (q_src && x->dbytes &&
            rep_index(S.rank[REDIST_SIDE_FROM][q], rep) == my_want &&
            rect_meet(&qs, &x->drect, x->nd, &x->rpiece[q])) {
            uint64_t b =
                (uint64_t)rect_elems(&x->rpiece[q], x->nd) * x->elem;
            x->has_r[q] = 1;
            if (q != me) {
                if (!fits_int(b) || !fits_int(x->rtot + b))
                    die("alltoallv count over INT_MAX");
                x->rcount[q] = (int)b;
                x->rdispl[q] = (int)x->rtot;
                x->rtot += b;
            }
        }
        /* me -> q */
        if (q != me && q_dst && my_rep >= 0 &&
            wanted_replica(q, rep, nrep) == my_rep &&
            rect_meet(&x->srect, &qd, x->nd, &x->spiece[q])) {
            uint64_t b =
                (uint64_t)rect_elems(&x->spiece[q], x->nd) * x->elem;
            x->has_s[q] = 1;
            if (!fits_int(b) || !fits_int(x->stot + b))
                die("alltoallv count over INT_MAX");
            x->scount[q] = (int)b;
            x->sdispl[q] = (int)x->stot;
            x->stot += b;
            x->nsend += b > 0;
        }
    }
    xbuf_bytes = umax(xbuf_bytes, x->stot + x->rtot);
}

void run_alltoallv(void)
{
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        redist_dtype_t dt = redist_spec_dtype(x->spec);
        char *rb = sbuf + x->stot;
        for (int q = 0; q < g_size; q++)
            if (x->has_s[q])
                rect_move(sbuf + x->sdispl[q], &x->spiece[q], x->src,
                          &x->srect, &x->spiece[q], x->nd, x->elem, dt,
                          OP_COPY);
        if (x->has_r[g_rank])
            rect_move(x->dst, &x->drect, x->src, &x->srect,
                      &x->rpiece[g_rank], x->nd, x->elem, dt, OP_COPY);
        MPI_Alltoallv(sbuf, x->scount, x->sdispl, MPI_BYTE, rb, x->rcount,
                      x->rdispl, MPI_BYTE, MPI_COMM_WORLD);
        for (int q = 0; q < g_size; q++)
            if (q != g_rank && x->has_r[q])
                rect_move(x->dst, &x->drect, rb + x->rdispl[q],
                          &x->rpiece[q], &x->rpiece[q], x->nd, x->elem, dt,
                          OP_COPY);
    }
}

/* -------------------------------------------------------------- shared */

void hand_setup(unsigned which)
{
    bcast_setup();
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        const redist_spec_t *s = x->spec;
        if (redist_spec_from(s)->partial || redist_spec_to(s)->partial)
            die("array \"%s\": partial types are not written by hand here",
                redist_spec_name(s));
        gather_setup(x);
        alltoallv_setup(x);
    }
    if (which & HAND_GATHER) {
        gbuf = xmalloc(gbuf_bytes);
        memset(gbuf, 0, gbuf_bytes);
    }
    if (which & HAND_ALLTOALLV) {
        sbuf = xmalloc(xbuf_bytes);
        memset(sbuf, 0, xbuf_bytes);
    }
}

/* Messages relative rank r sends in a binomial-tree broadcast over n
 * ranks: to r + 2^k for every 2^k above r's highest bit, below n. */
static uint64_t binomial_sends(int r, int n)
{
    uint64_t c = 0;
    int64_t k = 1;
    while (k <= r)
        k <<= 1;
    for (; r + k < n; k <<= 1)
        c++;
    return c;
}

void hand_figures(unsigned which, uint64_t *extra, uint64_t *msgs,
                  long *calls)
{
    *msgs = 0;
    *calls = 0;
    if (which == HAND_GATHER) {
        *extra = gbuf ? gbuf_bytes : 0;
        for (int a = 0; a < na; a++) {
            if (A[a].gcomm != MPI_COMM_NULL) {
                int g;
                MPI_Comm_size(A[a].gcomm, &g);
                *msgs += (uint64_t)(g - 1);
                ++*calls;
            }
            if (bsize > 1) {
                *msgs += binomial_sends(brank, bsize);
                ++*calls;
            }
        }
    } else {
        *extra = xbuf_bytes;
        for (int a = 0; a < na; a++)
            *msgs += (uint64_t)A[a].nsend;
        *calls = na;
    }
}

void hand_free(void)
{
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        free(x->grect);
        free(x->gcount);
        free(x->gdispl);
        free(x->spiece);
        free(x->rpiece);
        free(x->has_s);
        free(x->has_r);
        free(x->scount);
        free(x->sdispl);
        free(x->rcount);
        free(x->rdispl);
    }
    for (int i = 0; i < ncc; i++)
        if (cc[i].comm != MPI_COMM_NULL)
            MPI_Comm_free(&cc[i].comm);
    if (bcomm != MPI_COMM_NULL)
        MPI_Comm_free(&bcomm);
    free(gbuf);
    free(sbuf);
}
