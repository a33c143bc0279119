/*
 * The transfer of a two-mesh plan (meshes.c has the plan's algorithm;
 * doc/meshes.md the story): which piece of its R block each device of B
 * receives, from which replica of A, and what that costs.
 *
 * THE TRANSFER.  Every device d of B needs its R block; each piece of it
 * lies in one S block (a box of the layout of S), held by every device of
 * A whose coordinates on the axes S shards name that block (replicas
 * differ on the other axes of A).  A device that holds the piece itself
 * copies it; otherwise the replicas nearest d take turns (rd_transfer_walk:
 * per S block a counter over the receivers in B's rank order), so
 * replicas share the sending.  Nearest: with a cost model and d on A, the
 * replicas that differ from d on the replicated axes only where the link
 * is no slower than the level the sharded axes already force (on the
 * others they take d's coordinates); without a model, or for d off A,
 * every replica.  Each byte crosses once.  The choice is a pure function
 * of the spec and the axis links, and a plan's executors walk with the
 * plan's own model, so every rank names the same senders.
 *
 * PENDING SUMS THAT CROSS.  When S keeps partial axes P of A (size > 1)
 * pending, the transfer is a reduce-scatter across the meshes: each piece
 * is named once per coordinate on P (prod |P| contributions), the holders
 * fixed on P and on the axes S shards, the sender chosen among the
 * replicas on A's other axes as above (the level of the P axes where the
 * coordinates differ from the receiver's counts as forced).  The receiver
 * reduces the contributions of a piece with the spec's op in ascending
 * order of the senders' global device ids (src/exec/meshes.c), so floats
 * come out the same on every run and backend.  It holds its own
 * contribution where it is on A with that P coordinate (a local copy).
 *
 * COST.  recv_d = prod|P| x |R(d)| - |R(d) & S(d)| bytes (every
 * contribution to its new block but the one a device already holds).  Each piece is one message, at the
 * level between its sender and receiver: on A, the slowest axis link of
 * the axes their coordinates differ on (a path along one axis at a time
 * stays in that axis's groups, and "first differing level" is an
 * ultrametric); off A, the model's mesh_link (redistplan --mesh-link;
 * under mpirun, the discovered hosts), or when it is not given the
 * slowest level of A's axes and at least node.  Modelled time:
 *     max(sum alpha received, sum alpha sent)
 *     + max(sum beta x bytes received, sum beta x bytes sent)
 * over each device's messages, maximised over devices; with every
 * message on one level L this is alpha_L x max(peers) + beta_L x max(bytes)
 * exactly.  A receiver of pending sums adds gamma x the bytes it reduces,
 * (prod|P| - 1) x |R(d)| (cost.c: gamma per reduced byte).  The target
 * phase is costed with each axis of B at the
 * slowest level between the first device of each of its groups and the
 * others when all of B's devices lie on A, else on node (rd_meshes_
 * phase_cost).  A walk costs O(|B| x pieces per device); the planner
 * walks only the pairs its bounds cannot rule out (meshes.c, PRUNING):
 * rd_meshes_transfer_bound walks a few receivers, whose received figures
 * do not depend on the senders' turns (the nearest replicas differ from
 * the receiver at exactly the level the sharded and pending axes force).
 * Phases are solved once per S and per R.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* The level the source mesh's axis links give the message between global
 * devices d1 and d2 of the source mesh: the slowest link of the axes on
 * which their coordinates differ (each step along one axis stays within
 * one of its groups, and the first differing level is an ultrametric);
 * `far` when either device is outside the source mesh. */
static int pair_link(const redist_spec_t *s, const redist_cost_model_t *cm,
                     int far, int64_t d1, int64_t d2)
{
    const redist_mesh_t *ma = rd_spec_side_mesh(s, 0);
    int64_t q1 = s->two->pos[0][d1], q2 = s->two->pos[0][d2];
    if (q1 < 0 || q2 < 0)
        return far;
    int link = 0;
    for (int a = 0; a < ma->naxes; a++)
        if (q1 / ma->stride[a] % ma->size[a] !=
                q2 / ma->stride[a] % ma->size[a] &&
            cm->axis_link[a] > link)
            link = cm->axis_link[a];
    return link;
}

int rd_transfer_far_link(const redist_spec_t *s, const redist_cost_model_t *cm)
{
    if (cm->mesh_link != REDIST_LINK_DERIVED)
        return cm->mesh_link;
    int link = REDIST_LINK_NODE;
    for (int a = 0; a < s->mesh.naxes; a++)
        if (cm->axis_link[a] > link)
            link = cm->axis_link[a];
    return link;
}

const redist_cost_model_t *rd_meshes_phase_cost(
    const redist_spec_t *s, const redist_cost_model_t *cm, int side,
    redist_cost_model_t *tmp)
{
    if (!side || !cm)
        return cm;
    /* axis links name the source mesh's axes.  An axis of the target
     * mesh whose devices all lie in the source mesh gets the slowest
     * level between the first member of each of its groups and the
     * others (pair_link); any other axis is on node. */
    const redist_mesh_t *mb = rd_spec_side_mesh(s, 1);
    int inside = 1, far = rd_transfer_far_link(s, cm);
    for (int64_t r = 0; r < mb->ndevices && inside; r++)
        inside = s->two->pos[0][s->two->dev[1][r]] >= 0;
    *tmp = *cm;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        tmp->axis_link[a] = REDIST_LINK_NODE;
    for (int c = 0; inside && c < mb->naxes; c++) {
        int link = 0;
        for (int64_t r = 0; r < mb->ndevices; r++) {
            if (r / mb->stride[c] % mb->size[c])
                continue; /* not the first of its group */
            for (int64_t k = 1; k < mb->size[c]; k++) {
                int l = pair_link(s, cm, far, s->two->dev[1][r],
                                  s->two->dev[1][r + k * mb->stride[c]]);
                if (l > link)
                    link = l;
            }
        }
        tmp->axis_link[c] = (uint8_t)link;
    }
    return tmp;
}

/* ------------------------------------------------------------ the walk */

/* Volume of the box [lo, hi) (0 if empty). */
static uint64_t box_elems(int n, const int64_t lo[], const int64_t hi[])
{
    uint64_t v = 1;
    for (int i = 0; i < n; i++) {
        if (hi[i] <= lo[i])
            return 0;
        v *= (uint64_t)(hi[i] - lo[i]);
    }
    return v;
}

/* First block of dim i of l whose range meets x (blocks sorted). */
static int64_t first_block(const rd_layout *l, int i, int64_t x)
{
    int64_t lo = 0, hi = l->k[i] - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (l->b[i][mid + 1] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The sender of a piece the receiver (mesh rank q of A, coordinates qc;
 * q < 0: off A) does not hold: c names the holders' coordinates on the
 * axes S shards (`used`) and on the pending ones (`pend`); the replicas
 * nearest the receiver take turns (*turn counts them): with links and a
 * receiver on A, those that differ from it on the replicated axes only
 * where the link is no slower than the level the sharded and pending
 * axes already force (the rest: its own coordinates); else all.  c's
 * replicated coordinates are overwritten. */
static int64_t pick_sender(const redist_mesh_t *ma,
                           const redist_cost_model_t *cm, int64_t q,
                           const int64_t qc[], uint32_t used, uint32_t pend,
                           int64_t nrep, int64_t c[], uint64_t *turn)
{
    uint32_t fixed = used | pend, vary = ~fixed;
    int64_t nfree = nrep;
    if (cm && q >= 0) {
        int lmin = 0;
        for (int a = 0; a < ma->naxes; a++)
            if (fixed >> a & 1u && qc[a] != c[a] && cm->axis_link[a] > lmin)
                lmin = cm->axis_link[a];
        nfree = 1;
        for (int a = 0; a < ma->naxes; a++)
            if (!(fixed >> a & 1u) && cm->axis_link[a] > lmin)
                vary &= ~(1u << a);
            else if (!(fixed >> a & 1u))
                nfree *= ma->size[a];
    }
    int64_t rho = (int64_t)((*turn)++ % (uint64_t)nfree);
    for (int a = ma->naxes - 1; a >= 0; a--)
        if (!(fixed >> a & 1u) && (vary >> a & 1u)) {
            c[a] = rho % ma->size[a];
            rho /= ma->size[a];
        } else if (!(fixed >> a & 1u))
            c[a] = qc[a];
    return redist_mesh_rank(ma, c);
}

/* The walk over the receivers rs[0..nr) (ranks of B, ascending; NULL:
 * every rank).  A sender is chosen by its S block's counter, which counts
 * the listed receivers only: over a subset the senders may differ from
 * the whole walk's, the receivers' pieces and their levels do not (the
 * nearest replicas differ from the receiver at the level its sharded
 * axes force and no slower: pick_sender). */
static redist_status_t walk(const redist_spec_t *s, const rd_mside *S,
                            const rd_mside *R, const redist_cost_model_t *cm,
                            const int64_t *rs, int64_t nr, rd_piece_fn fn,
                            void *user)
{
    const redist_mesh_t *ma = rd_spec_side_mesh(s, 0);
    const redist_mesh_t *mb = rd_spec_side_mesh(s, 1);
    int n = s->ndims;
    int64_t nblocks = 1;
    for (int i = 0; i < n; i++)
        nblocks *= S->lay.k[i];
    /* P: the pending partial axes of A in S (size > 1; those of size 1
     * are replicas too); a piece then has one contribution per coordinate
     * on P.  The replicas: the other axes S does not shard. */
    uint32_t used = 0, pend = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < S->t.dim_naxes[i]; k++)
            used |= 1u << S->t.dims[i][k];
    int64_t nrep = 1, npc = 1;
    for (int a = 0; a < ma->naxes; a++)
        if (S->t.partial >> a & 1u && ma->size[a] > 1) {
            pend |= 1u << a;
            npc *= ma->size[a];
        } else if (!(used >> a & 1u))
            nrep *= ma->size[a];
    uint64_t *turn = calloc((size_t)(nblocks * npc), sizeof *turn);
    if (!turn)
        return REDIST_ERR_NOMEM;
    for (int64_t ri = 0; ri < nr; ri++) {
        int64_t r = rs ? rs[ri] : ri;
        int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
        rd_layout_box(&R->lay, &R->t, mb, r, lo, hi);
        if (!box_elems(n, lo, hi))
            continue;
        int64_t dev = s->two->dev[1][r];
        int64_t q = rd_spec_mesh_rank(s, 0, dev);
        int64_t qc[REDIST_MAX_AXES] = {0};
        if (q >= 0)
            redist_mesh_coords(ma, q, qc);
        /* the S blocks meeting the box: a range per dim */
        int64_t j0[REDIST_MAX_DIMS], j1[REDIST_MAX_DIMS], j[REDIST_MAX_DIMS];
        for (int i = 0; i < n; i++) {
            j0[i] = first_block(&S->lay, i, lo[i]);
            j1[i] = first_block(&S->lay, i, hi[i] - 1);
            j[i] = j0[i];
        }
        for (;;) {
            int64_t plo[REDIST_MAX_DIMS], phi[REDIST_MAX_DIMS];
            for (int i = 0; i < n; i++) {
                int64_t a = S->lay.b[i][j[i]], b = S->lay.b[i][j[i] + 1];
                plo[i] = lo[i] > a ? lo[i] : a;
                phi[i] = hi[i] < b ? hi[i] : b;
            }
            if (box_elems(n, plo, phi)) {
                /* the holders' coordinates on the axes S shards */
                int64_t c[REDIST_MAX_AXES] = {0};
                int64_t lin = 0;
                int shard_mine = q >= 0;
                for (int i = 0; i < n; i++) {
                    int64_t x = j[i];
                    lin = lin * S->lay.k[i] + j[i];
                    for (int k = S->t.dim_naxes[i] - 1; k >= 0; k--) {
                        int a = S->t.dims[i][k];
                        c[a] = x % ma->size[a];
                        x /= ma->size[a];
                        if (shard_mine && qc[a] != c[a])
                            shard_mine = 0;
                    }
                }
                /* one contribution per coordinate pc on the pending axes
                 * (mixed radix over them, the last axis fastest) */
                for (int64_t pc = 0; pc < npc; pc++) {
                    int64_t y = pc;
                    int mine = shard_mine;
                    for (int a = ma->naxes - 1; a >= 0; a--)
                        if (pend >> a & 1u) {
                            c[a] = y % ma->size[a];
                            y /= ma->size[a];
                            if (mine && qc[a] != c[a])
                                mine = 0;
                        }
                    fn(user, r,
                       mine ? q
                            : pick_sender(ma, cm, q, qc, used, pend, nrep, c,
                                          &turn[lin * npc + pc]),
                       plo, phi);
                }
            }
            int i = n - 1;
            while (i >= 0 && j[i] == j1[i]) {
                j[i] = j0[i];
                i--;
            }
            if (i < 0)
                break;
            j[i]++;
        }
    }
    free(turn);
    return REDIST_OK;
}

redist_status_t rd_transfer_walk(const redist_spec_t *s, const rd_mside *S,
                                 const rd_mside *R,
                                 const redist_cost_model_t *cm,
                                 rd_piece_fn fn, void *user)
{
    return walk(s, S, R, cm, NULL, rd_spec_side_mesh(s, 1)->ndevices, fn,
                user);
}

/* ------------------------------------------------------ figures */

typedef struct tfig {
    const redist_spec_t *s;
    const redist_cost_model_t *cm; /* NULL: bytes only */
    int far, uniform; /* uniform: every message on level far */
    uint64_t *recv, *send; /* bytes, by global device */
    uint64_t *in; /* every contribution's bytes, local ones too */
    uint32_t *nrecv, *nsend; /* peers */
    double *t; /* not uniform: seconds per device, [4N]: alpha received,
                * sent, beta received, sent */
} tfig;

static void count_piece(void *user, int64_t r, int64_t q, const int64_t lo[],
                        const int64_t hi[])
{
    tfig *f = user;
    const redist_spec_t *s = f->s;
    int64_t to = s->two->dev[1][r], from = s->two->dev[0][q];
    uint64_t b = box_elems(s->ndims, lo, hi) * s->elem_size;
    f->in[to] += b;
    if (to == from)
        return;
    f->recv[to] += b;
    f->send[from] += b;
    /* one piece per (receiver, sender): each sender holds one S block */
    f->nrecv[to]++;
    f->nsend[from]++;
    if (f->t) {
        int64_t N = s->two->ndevices;
        int l = pair_link(s, f->cm, f->far, from, to);
        f->t[to] += f->cm->alpha[l];
        f->t[N + from] += f->cm->alpha[l];
        f->t[2 * N + to] += f->cm->beta[l] * (double)b;
        f->t[3 * N + from] += f->cm->beta[l] * (double)b;
    }
}

/* Allocate f's arrays (recv: the caller's, or NULL to allocate it too)
 * and set its levels; *npc: the contributions per piece.  Nonzero when
 * out of memory (tfig_free frees what was taken). */
static int tfig_init(tfig *f, const redist_spec_t *s, const rd_mside *S,
                     const redist_cost_model_t *cm, uint64_t *recv,
                     uint64_t *npc)
{
    int64_t N = s->two->ndevices;
    *f = (tfig){s, cm, 0, 1, recv ? recv : calloc((size_t)N, sizeof(uint64_t)),
                calloc((size_t)N, sizeof(uint64_t)),
                calloc((size_t)N, sizeof(uint64_t)),
                calloc((size_t)N, sizeof(uint32_t)),
                calloc((size_t)N, sizeof(uint32_t)), NULL};
    /* contributions per piece: a receiver reduces all but one */
    *npc = 1;
    for (int a = 0; a < s->two->mesh[0].naxes; a++)
        if (S->t.partial >> a & 1u)
            *npc *= (uint64_t)s->two->mesh[0].size[a];
    if (cm) {
        f->far = rd_transfer_far_link(s, cm);
        for (int a = 0; a < s->mesh.naxes; a++)
            if (s->mesh.size[a] > 1 && cm->axis_link[a] != f->far)
                f->uniform = 0;
        if (!f->uniform)
            f->t = calloc((size_t)N * 4, sizeof *f->t);
    }
    if (recv)
        memset(recv, 0, (size_t)N * sizeof *recv);
    return !(f->recv && f->send && f->in && f->nrecv && f->nsend &&
             (f->uniform || f->t));
}

static void tfig_free(tfig *f, int own_recv)
{
    if (own_recv)
        free(f->recv);
    free(f->send);
    free(f->in);
    free(f->nrecv);
    free(f->nsend);
    free(f->t);
}

redist_status_t rd_meshes_transfer_figures(const redist_spec_t *s,
                                        const rd_mside *S, const rd_mside *R,
                                        const redist_cost_model_t *cm,
                                        uint64_t *recv, double *time_s)
{
    int64_t N = s->two->ndevices;
    tfig f;
    uint64_t npc;
    redist_status_t st = REDIST_ERR_NOMEM;
    if (!tfig_init(&f, s, S, cm, recv, &npc))
        st = rd_transfer_walk(s, S, R, cm, count_piece, &f);
    *time_s = 0;
    for (int64_t d = 0; !st && cm && d < N; d++) {
        double t;
        if (f.t) /* each message at its pair's level */
            t = (f.t[d] > f.t[N + d] ? f.t[d] : f.t[N + d]) +
                (f.t[2 * N + d] > f.t[3 * N + d] ? f.t[2 * N + d]
                                                 : f.t[3 * N + d]);
        else {
            uint32_t m = f.nrecv[d] > f.nsend[d] ? f.nrecv[d] : f.nsend[d];
            uint64_t b = recv[d] > f.send[d] ? recv[d] : f.send[d];
            t = cm->alpha[f.far] * m + cm->beta[f.far] * (double)b;
        }
        t += cm->gamma * (double)(f.in[d] - f.in[d] / npc); /* reducing */
        if (t > *time_s)
            *time_s = t;
    }
    tfig_free(&f, 0);
    return st;
}

redist_status_t rd_meshes_transfer_bound(const redist_spec_t *s,
                                         const rd_mside *S, const rd_mside *R,
                                         const redist_cost_model_t *cm,
                                         const int64_t *rs, int nr,
                                         uint64_t *recv, double *time_lb)
{
    int64_t N = s->two->ndevices;
    tfig f;
    uint64_t npc;
    redist_status_t st = REDIST_ERR_NOMEM;
    if (!tfig_init(&f, s, S, cm, NULL, &npc))
        st = walk(s, S, R, cm, rs, nr, count_piece, &f);
    *time_lb = 0;
    for (int k = 0; !st && k < nr; k++) {
        int64_t d = s->two->dev[1][rs[k]];
        recv[k] = f.recv[d];
        if (!cm)
            continue;
        /* the figures' expression with the sent terms left out: no
         * larger, also after rounding */
        double t;
        if (f.t)
            t = f.t[d] + f.t[2 * N + d];
        else
            t = cm->alpha[f.far] * f.nrecv[d] +
                cm->beta[f.far] * (double)f.recv[d];
        t += cm->gamma * (double)(f.in[d] - f.in[d] / npc);
        if (t > *time_lb)
            *time_lb = t;
    }
    tfig_free(&f, 1);
    return st;
}

/* Elements each receiver gets, by global device. */
typedef struct tcount {
    const redist_spec_t *s;
    uint64_t *elems;
} tcount;

static void count_elems(void *user, int64_t r, int64_t q, const int64_t lo[],
                        const int64_t hi[])
{
    tcount *c = user;
    (void)q;
    c->elems[c->s->two->dev[1][r]] += box_elems(c->s->ndims, lo, hi);
}

redist_status_t rd_meshes_transfer_check(const redist_spec_t *s,
                                         const rd_mside *S,
                                         const rd_mside *R, int64_t *dev,
                                         uint64_t *got, uint64_t *want)
{
    const redist_mesh_t *ma = rd_spec_side_mesh(s, 0);
    const redist_mesh_t *mb = rd_spec_side_mesh(s, 1);
    uint64_t npc = 1;
    for (int a = 0; a < ma->naxes; a++)
        if (S->t.partial >> a & 1u)
            npc *= (uint64_t)ma->size[a];
    tcount c = {s, calloc((size_t)s->two->ndevices, sizeof(uint64_t))};
    if (!c.elems || rd_transfer_walk(s, S, R, NULL, count_elems, &c)) {
        free(c.elems);
        return REDIST_ERR_NOMEM;
    }
    redist_status_t st = REDIST_OK;
    for (int64_t r = 0; r < mb->ndevices && !st; r++) {
        int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
        rd_layout_box(&R->lay, &R->t, mb, r, lo, hi);
        uint64_t w = npc * box_elems(s->ndims, lo, hi);
        if (c.elems[s->two->dev[1][r]] != w) {
            *dev = s->two->dev[1][r];
            *got = c.elems[*dev];
            *want = w;
            st = REDIST_ERR_PLAN;
        }
    }
    free(c.elems);
    return st;
}

void rd_meshes_add_phase(const redist_spec_t *s, int side,
                         const uint64_t *dev_peak, const uint64_t *dev_recv,
                         uint64_t peak_all, uint64_t recv_all, uint64_t *peak,
                         uint64_t *recv)
{
    const redist_mesh_t *m = rd_spec_side_mesh(s, side);
    for (int64_t r = 0; r < m->ndevices; r++) {
        int64_t d = s->two->dev[side][r];
        uint64_t pk = dev_peak ? dev_peak[r] : peak_all;
        if (pk > peak[d])
            peak[d] = pk;
        recv[d] += dev_recv ? dev_recv[r] : recv_all;
    }
}

void rd_meshes_judge(const redist_spec_t *s, const uint64_t *trecv,
                     const uint64_t *peak, uint64_t *recv, int *efficient,
                     uint64_t *max_peak, uint64_t *max_recv)
{
    *efficient = 1;
    *max_peak = *max_recv = 0;
    for (int64_t d = 0; d < s->two->ndevices; d++) {
        uint64_t a = redist_spec_device_bytes(s, 0, d);
        uint64_t b = redist_spec_device_bytes(s, 1, d);
        recv[d] += trecv[d];
        if (peak[d] > (a > b ? a : b))
            *efficient = 0;
        if (peak[d] > *max_peak)
            *max_peak = peak[d];
        if (recv[d] > *max_recv)
            *max_recv = recv[d];
    }
}
