/*
 * Two-mesh plans (doc/spec-format.md section 8, doc/meshes.md): an array
 * moves from a type on one placed mesh A to a type on another, B.
 *
 * ALGORITHM.  A plan is three phases:
 *     [one-mesh plan on A: source -> S]  transfer S -> R  [plan on B: R -> target]
 * S ("sent") is the source with each pending reduction resolved: every
 * partial axis p of A either reduce-scattered onto some dim (appended as
 * that dim's minor axis, which shrinks what must cross) or all-reduced;
 * and each replicated axis of A either left or sliced onto some dim
 * (then the blocks may already sit where the target wants them).  Unless
 * opts->no_cross_sums, S may also keep a set K of A's partial axes (size >
 * 1) pending (every subset of up to three such axes, else all of them;
 * the other axes as above): the transfer then sums the prod|K|
 * contributions of each piece as it lands, a reduce-scatter across the
 * meshes (transfer.c), which saves the source-side reduction when the
 * target is sharded finer (specs/meshes/grad-partial-dp8-to-tp16-
 * crossing.json).
 * R ("received") is the target with some of B's replicated axes appended
 * as minor axes of some dims: the transfer then moves each byte across
 * once and all-gathers on B replicate it.  Both phases are planned by the
 * one-mesh solver (solver.c) on specs derived from this one, so they are
 * optimal for their endpoints under the plan's objective.  Every choice
 * of S (each unused axis of A onto a dim or none, in every order: at most
 * (ndims+1)^k k! for k such axes) is paired with every choice of R (the
 * same over B's unused axes); beyond 96 choices a side keeps two (none,
 * and all onto the longest dim; 8 choices beyond 256 devices and 2 beyond
 * 65536, where a pair's bound costs O(devices)), and the pair wins
 * that is memory-
 * efficient, then has the least peak, then the least modelled time (time
 * objective) or received bytes (bytes objective), then the fewest
 * collectives, then comes first in (S, R) order.  The plan is the best of
 * this family; it is not proven optimal over every plan (stats.optimal
 * 0, "unproven": "two_mesh").
 *
 * PRUNING (choose()).  Memory and the phases do not depend on the
 * transfer; its figures do, and walking it costs O(receivers x pieces).
 * So every pair is first bounded: its exact memory verdict and peak, and
 * lower bounds on its time and received bytes from the phases and the
 * transfer's pieces at 8 receivers spread over B (what they receive is
 * exact; sending is left out of their time: rd_meshes_transfer_bound).
 * Pairs are walked in the order of these bounds, and one whose memory or
 * bound already loses to the best walked so far is not walked: the
 * choice is the one walking every pair makes (the first pair in order
 * among the best), while a large mesh walks the transfer of the winner
 * and of the few pairs whose bounds tie with it, not of every pair
 * (doc/scale.md).
 *
 * SAME DEVICES.  When both meshes hold the same devices and one mesh's
 * axes are digits of the other's (each axis of size > 1 of the coarser
 * mesh is a run of the finer mesh's axes, in any order, and the device
 * lists are in the order this regrouping gives: regroup(), O(devices x
 * axes) once), one more candidate joins each side: S = the target
 * written on the source mesh (the whole move is a one-mesh plan on A,
 * the transfer local), and R = the source written on the target mesh
 * (when the source has no pending sums: the transfer local, the move a
 * one-mesh plan on B).  So a reshape on the same devices (even layouts)
 * is never worse than the one-mesh plan on A, nor on B without pending
 * sums, and it wins where the one-mesh
 * solver's collectives on fast axes, or an S beyond the side's 96
 * choices, beat the transfer (specs/meshes/grad-partial-same-devices-
 * reshaped.json).  Meshes whose axes only a common refinement explains
 * ((2,4) and (4,2) in order) keep the family alone.
 *
 * THE TRANSFER and its COST: transfer.c (the walk that names each piece
 * of R and its sender, the senders by link level, the figures).
 *
 * MEMORY.  Per device, the most it holds of any type on the path (a
 * device outside a type's mesh holds 0 of it); memory-efficient when that
 * is at most max(src_d, dst_d) for every device d.  S holds at most what
 * the source holds and R at most what the target holds, so the family
 * always contains a memory-efficient plan when the source's reductions
 * can be resolved without growing (all-reduce never grows).  A transfer
 * that sums holds the same types (S, then R): its figures count held
 * types as every step's do.  Its executors need no more than that on
 * sim (each contribution is reduced straight from the sender's block);
 * an executor that receives contributions into a work area promises it
 * in its own scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

#define MAX_CHOICES 96
/* Source-side endpoints: the family that resolves every reduction and
 * one per set of pending axes kept (at most 2^3 - 1 sets: every subset of
 * up to three partial axes of size > 1, else all of them). */
#define MAX_PEND_SETS 7
#define MAX_SIDE ((MAX_CHOICES + 2) * (MAX_PEND_SETS + 1))

void rd_mside_free(rd_mside *m)
{
    rd_layout_free(&m->lay);
    memset(m, 0, sizeof *m);
}

/* Layout of side `side`'s type `t` when it keeps side's rule and, on the
 * dims whose axis lists equal the spec's type there, side's explicit
 * lengths. */
static void side_layout(const redist_spec_t *s, int side,
                        const redist_type_t *t, redist_layout_t *out)
{
    const redist_type_t *st = side ? &s->to : &s->from;
    memset(out, 0, sizeof *out);
    out->split = s->split[side];
    for (int i = 0; i < s->ndims; i++) {
        const int64_t *b = s->blocks[side][i];
        if (!b || t->dim_naxes[i] != st->dim_naxes[i] ||
            memcmp(t->dims[i], st->dims[i], t->dim_naxes[i]))
            continue;
        out->blocks[i] = b;
        out->nblocks[i] = b[-1];
    }
}

redist_status_t rd_mside_init(rd_mside *m, const redist_spec_t *s,
                                  int side, const redist_type_t *t,
                                  redist_error_t *err)
{
    redist_layout_t l;
    memset(m, 0, sizeof *m);
    m->t = *t;
    m->side = side;
    side_layout(s, side, t, &l);
    int r = rd_layout_rule(&m->lay, t, rd_spec_side_mesh(s, side), s->ndims,
                           s->shape, l.split,
                           (const int64_t *const *)l.blocks);
    if (r == -2)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, side ? "to" : "from",
                        "a dim is split into more than %lld blocks",
                        (long long)RD_LAYOUT_MAX_BLOCKS);
    if (r)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    return REDIST_OK;
}

/* The one-mesh spec of a phase: on side's mesh, from `a` to `b`, with the
 * side's rule (and its lengths where a dim is unchanged). */
redist_status_t rd_meshes_phase_spec(const redist_spec_t *s, int side,
                                  const redist_type_t *a,
                                  const redist_type_t *b,
                                  redist_spec_t **out, redist_error_t *err)
{
    redist_spec_t *tmp = NULL;
    redist_layout_t la, lb;
    redist_status_t st = redist_spec_create(rd_spec_side_mesh(s, side),
                                            s->ndims, s->shape, s->dtype, a,
                                            b, s->reduce, s->name, &tmp, err);
    if (st)
        return st;
    side_layout(s, side, a, &la);
    side_layout(s, side, b, &lb);
    st = redist_spec_with_layouts(tmp, &la, &lb, out, err);
    redist_spec_free(tmp);
    return st;
}

/* A one-mesh phase plan's per-device figures into the whole plan's. */
static void phase_figures(const redist_spec_t *s, int side,
                          const redist_plan_t *p, uint64_t *peak,
                          uint64_t *recv)
{
    rd_meshes_add_phase(s, side, p->u.dev_peak, p->u.dev_recv,
                        p->stats.peak_bytes, p->stats.recv_bytes, peak, recv);
}

/* ------------------------------------------------------ candidates */

/* The endpoints of one side: `base` with each axis of ax[0..nax) left
 * out (0) or appended as the minor of dim i (i + 1), in every order of
 * the appended ones, duplicates dropped, at most `max` (then: none, and
 * all onto the longest dim in the order given).  Returns the count. */
static int candidates(const redist_type_t *base, const int ax[], int nax,
                      const int64_t shape[], int max, redist_type_t out[])
{
    int nd = base->ndims, n = 0;
    uint64_t total = 1;
    for (int k = 0; k < nax && total <= (uint64_t)max; k++)
        total *= (uint64_t)(nd + 1) * (uint64_t)(k + 1); /* choices x orders */
    if (total > (uint64_t)max || nd == 0) {
        out[n++] = *base;
        if (nd > 0 && nax > 0) {
            int best = 0;
            for (int i = 1; i < nd; i++)
                if (shape[i] > shape[best])
                    best = i;
            redist_type_t t = *base;
            for (int k = 0; k < nax; k++)
                redist_type_push_axis(&t, best, ax[k]);
            out[n++] = t;
        }
        return n;
    }
    /* code: a dim choice per axis, then a permutation (Lehmer code) */
    uint64_t nchoice = 1, nperm = 1;
    for (int k = 0; k < nax; k++) {
        nchoice *= (uint64_t)(nd + 1);
        nperm *= (uint64_t)(k + 1);
    }
    for (uint64_t code = 0; code < nchoice * nperm && n < max; code++) {
        uint64_t c = code % nchoice, p = code / nchoice;
        int order[REDIST_MAX_AXES], left[REDIST_MAX_AXES];
        for (int k = 0; k < nax; k++)
            left[k] = k;
        for (int k = 0; k < nax; k++) {
            int j = (int)(p % (uint64_t)(nax - k));
            p /= (uint64_t)(nax - k);
            order[k] = left[j];
            for (int m = j; m < nax - k - 1; m++)
                left[m] = left[m + 1];
        }
        int ch[REDIST_MAX_AXES];
        for (int k = 0; k < nax; k++) {
            ch[k] = (int)(c % (uint64_t)(nd + 1));
            c /= (uint64_t)(nd + 1);
        }
        redist_type_t t = *base;
        for (int k = 0; k < nax; k++) {
            int a = order[k];
            if (ch[a] && redist_type_push_axis(&t, ch[a] - 1, ax[a]))
                break;
        }
        int dup = 0;
        for (int m = 0; m < n && !dup; m++)
            dup = redist_type_equal(&out[m], &t);
        if (!dup)
            out[n++] = t;
    }
    return n;
}

/* ------------------------------------------- same devices, other shape */

/* When the meshes hold the same devices and the axes of side `of`'s mesh
 * are digits of side `on`'s (each axis of `of` of size > 1 is some axes
 * of `on`, major first; every axis of `on` of size > 1 in exactly one;
 * the devices in the order this regrouping and reordering of digits
 * gives), run[c][0..nrun[c]) are the axes of `on` that axis c of `of` is
 * made of.  Returns 1 then, else 0.  O(devices x axes) once per plan. */
static int regroup(const redist_spec_t *s, int on, int of,
                   int run[][REDIST_MAX_AXES], int nrun[])
{
    const redist_mesh_t *mf = rd_spec_side_mesh(s, on);
    const redist_mesh_t *mt = rd_spec_side_mesh(s, of);
    const int64_t *dt = s->two->dev[of], *pf = s->two->pos[on];
    if (mf->ndevices != mt->ndevices || pf[dt[0]] != 0)
        return 0;
    uint32_t taken = 0;
    for (int c = 0; c < mt->naxes; c++) {
        nrun[c] = 0;
        /* the axes of `on` that c steps through, minor first */
        int64_t covered = 1;
        int minor_first[REDIST_MAX_AXES];
        while (covered < mt->size[c]) {
            int64_t q = pf[dt[covered * mt->stride[c]]];
            int a = 0;
            while (a < mf->naxes && (mf->size[a] == 1 || mf->stride[a] != q))
                a++;
            if (a == mf->naxes || (taken >> a & 1u) ||
                covered * mf->size[a] > mt->size[c] ||
                mt->size[c] % (covered * mf->size[a]))
                return 0;
            taken |= 1u << a;
            minor_first[nrun[c]++] = a;
            covered *= mf->size[a];
        }
        for (int k = 0; k < nrun[c]; k++)
            run[c][k] = minor_first[nrun[c] - 1 - k];
    }
    /* every device where the regrouped digits put it */
    for (int64_t r = 0; r < mt->ndevices; r++) {
        int64_t x = r, q = 0;
        for (int c = mt->naxes - 1; c >= 0; c--) {
            int64_t y = x % mt->size[c];
            x /= mt->size[c];
            for (int k = nrun[c] - 1; k >= 0; k--) {
                int a = run[c][k];
                q += y % mf->size[a] * mf->stride[a];
                y /= mf->size[a];
            }
        }
        if (pf[dt[r]] != q)
            return 0;
    }
    return 1;
}

/* Type t of side `of`'s mesh as a type of side `on`'s mesh with the same
 * block on every device (even layouts), when regroup() explains the
 * meshes (a partial axis of size > 1 makes it 0: R carries none).  1:
 * *out set. */
static int same_devices_type(const redist_spec_t *s, int on, int of,
                             const redist_type_t *t, redist_type_t *out)
{
    int run[REDIST_MAX_AXES][REDIST_MAX_AXES], nrun[REDIST_MAX_AXES];
    const redist_mesh_t *mt = rd_spec_side_mesh(s, of);
    for (int c = 0; c < mt->naxes; c++)
        if (t->partial >> c & 1u && mt->size[c] > 1)
            return 0;
    if (!regroup(s, on, of, run, nrun))
        return 0;
    redist_type_init(out, t->ndims);
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++) {
            int c = t->dims[i][k];
            for (int m = 0; m < nrun[c]; m++)
                if (redist_type_push_axis(out, i, run[c][m]))
                    return 0;
        }
    return 1;
}

/* A candidate phase: its endpoint, its plan (NULL: not plannable). */
typedef struct cand {
    rd_mside m;
    redist_plan_t *plan;
} cand;

static void cands_free(cand *c, int n)
{
    for (int k = 0; k < n; k++) {
        rd_mside_free(&c[k].m);
        redist_plan_free(c[k].plan);
    }
}

/* Plan the phases for every choice of side's endpoint. */
static redist_status_t side_cands(const redist_spec_t *s, int side,
                                  const redist_plan_options_t *opts,
                                  cand *c, int *nc, redist_error_t *err)
{
    const redist_mesh_t *m = rd_spec_side_mesh(s, side);
    redist_type_t base = side ? s->to : s->from;
    redist_type_t *types = malloc(MAX_SIDE * sizeof *types);
    int ax[REDIST_MAX_AXES] = {0}, nax = 0;
    uint32_t used = 0;
    if (!types)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < s->ndims; i++)
        for (int k = 0; k < base.dim_naxes[i]; k++)
            used |= 1u << base.dims[i][k];
    /* the axes that may be appended: every unused axis of size > 1 (on
     * the source side a partial one is reduce-scattered there, a
     * replicated one sliced) */
    for (int a = 0; a < m->naxes; a++)
        if (m->size[a] > 1 && !(used >> a & 1u))
            ax[nax++] = a;
    base.partial = 0; /* S resolves every reduction; R has none */
    /* fewer choices where every transfer evaluation walks many devices */
    int max = s->two->ndevices > 65536 ? 2
              : s->two->ndevices > 256 ? 8
                                       : MAX_CHOICES;
    int n = candidates(&base, ax, nax, s->shape, max, types);
    /* Pending sums that cross (transfer.c), when opts->cross_sums asks
     * for them: S keeps a set K of the source's partial axes of size > 1
     * pending (each other axis as above), the transfer sums their
     * contributions.  Every op allows it: the receivers reduce in a fixed
     * order. */
    int pax[REDIST_MAX_AXES], npax = 0;
    for (int k = 0; side == 0 && !(opts && opts->no_cross_sums) && k < nax; k++)
        if (s->from.partial >> ax[k] & 1u)
            pax[npax++] = ax[k];
    uint32_t nsets = npax == 0 ? 0 : npax <= 3 ? (1u << npax) - 1 : 1;
    for (uint32_t set = 1; set <= nsets; set++) {
        uint32_t keep = npax <= 3 ? 0 : ~0u;
        for (int k = 0; k < npax; k++)
            if (set >> k & 1u)
                keep |= 1u << pax[k];
        keep &= s->from.partial;
        int rest[REDIST_MAX_AXES], nrest = 0;
        for (int k = 0; k < nax; k++)
            if (!(keep >> ax[k] & 1u))
                rest[nrest++] = ax[k];
        redist_type_t kb = base;
        kb.partial = 0;
        for (int k = 0; k < nax; k++)
            if (keep >> ax[k] & 1u)
                kb.partial |= 1u << ax[k];
        n += candidates(&kb, rest, nrest, s->shape, max, types + n);
    }
    /* The same devices in another shape or order: the whole move as a
     * one-mesh plan on this side, the transfer then local.  On the
     * source side S is the target written on the source mesh; on the
     * target side R is the source written on the target mesh. */
    redist_type_t same;
    if (same_devices_type(s, side, !side, side ? &s->from : &s->to, &same)) {
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = redist_type_equal(&types[k], &same);
        if (!dup)
            types[n++] = same;
    }
    *nc = 0;
    redist_plan_options_t o = opts ? *opts : (redist_plan_options_t){0};
    redist_cost_model_t cm;
    o.max_peak_bytes = 0; /* judged on the whole plan */
    o.cost = rd_meshes_phase_cost(s, o.cost, side, &cm);
    for (int k = 0; k < n; k++) {
        redist_spec_t *ps = NULL;
        redist_error_t e;
        redist_error_clear(&e);
        cand *x = &c[*nc];
        redist_status_t st = rd_mside_init(&x->m, s, side, &types[k], err);
        if (st) {
            rd_mside_free(&x->m);
            free(types);
            return st;
        }
        x->plan = NULL;
        st = side ? rd_meshes_phase_spec(s, 1, &types[k], &s->to, &ps, &e)
                  : rd_meshes_phase_spec(s, 0, &s->from, &types[k], &ps, &e);
        if (!st)
            st = redist_plan_create(ps, &o, &x->plan, &e);
        redist_spec_free(ps);
        if (st == REDIST_ERR_NOMEM || st == REDIST_ERR_OVERFLOW) {
            rd_mside_free(&x->m);
            *err = e;
            free(types);
            return st;
        }
        if (st) { /* this endpoint has no plan: not a candidate */
            rd_mside_free(&x->m);
            continue;
        }
        (*nc)++;
    }
    free(types);
    return REDIST_OK;
}

typedef struct score {
    int efficient;
    uint64_t peak, recv;
    double time;
    int colls;
} score;

static int better(const score *a, const score *b, int time_obj)
{
    if (a->efficient != b->efficient)
        return a->efficient > b->efficient;
    if (a->peak != b->peak)
        return a->peak < b->peak;
    if (time_obj && a->time != b->time)
        return a->time < b->time;
    if (a->recv != b->recv)
        return a->recv < b->recv;
    return a->colls < b->colls;
}

/* Evaluate the pair (a, b): per-device arrays into peak / recv. */
static redist_status_t evaluate(const redist_spec_t *s, const cand *a,
                                const cand *b, const redist_cost_model_t *cm,
                                uint64_t *peak, uint64_t *recv,
                                uint64_t *trecv, double *ttime, score *sc)
{
    int64_t N = s->two->ndevices;
    memset(peak, 0, (size_t)N * sizeof *peak);
    memset(recv, 0, (size_t)N * sizeof *recv);
    redist_status_t st = rd_meshes_transfer_figures(s, &a->m, &b->m, cm, trecv,
                                                    ttime);
    if (st)
        return st;
    phase_figures(s, 0, a->plan, peak, recv);
    phase_figures(s, 1, b->plan, peak, recv);
    rd_meshes_judge(s, trecv, peak, recv, &sc->efficient, &sc->peak,
                    &sc->recv);
    sc->time = a->plan->stats.time_s + *ttime + b->plan->stats.time_s;
    sc->colls = a->plan->stats.collectives + 1 + b->plan->stats.collectives;
    return REDIST_OK;
}

/* A pair before its transfer is walked: its exact memory figures, lower
 * bounds on its time and received bytes (the phases, and the transfer at
 * a few receivers: rd_meshes_transfer_bound), its index i * nb + j. */
typedef struct pbound {
    int efficient, time_obj;
    uint64_t peak, recv;
    double time;
    int64_t idx;
} pbound;

static int pbound_cmp(const void *x, const void *y)
{
    const pbound *a = x, *b = y;
    if (a->efficient != b->efficient)
        return b->efficient - a->efficient;
    if (a->peak != b->peak)
        return a->peak < b->peak ? -1 : 1;
    if (a->time_obj && a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->recv != b->recv)
        return a->recv < b->recv ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

#define NSAMPLE 8

/* Bound the pair (a, b) (peak, recv: scratch by global device). */
static redist_status_t bound(const redist_spec_t *s, const cand *a,
                             const cand *b, const redist_cost_model_t *cm,
                             uint64_t *peak, uint64_t *recv, uint64_t *zero,
                             pbound *pb)
{
    const redist_mesh_t *mb = rd_spec_side_mesh(s, 1);
    int64_t N = s->two->ndevices, rs[NSAMPLE];
    uint64_t srecv[NSAMPLE];
    int nr = 0;
    double t;
    for (int k = 0; k < NSAMPLE; k++) { /* spread over the receivers */
        int64_t r = k * (mb->ndevices - 1) / (NSAMPLE - 1);
        if (!nr || rs[nr - 1] != r)
            rs[nr++] = r;
    }
    redist_status_t st =
        rd_meshes_transfer_bound(s, &a->m, &b->m, cm, rs, nr, srecv, &t);
    if (st)
        return st;
    memset(peak, 0, (size_t)N * sizeof *peak);
    memset(recv, 0, (size_t)N * sizeof *recv);
    phase_figures(s, 0, a->plan, peak, recv);
    phase_figures(s, 1, b->plan, peak, recv);
    for (int k = 0; k < nr; k++) { /* zero: the transfer left out */
        uint64_t x = recv[s->two->dev[1][rs[k]]] + srecv[k];
        if (x > pb->recv)
            pb->recv = x;
    }
    uint64_t rmax;
    rd_meshes_judge(s, zero, peak, recv, &pb->efficient, &pb->peak, &rmax);
    if (rmax > pb->recv)
        pb->recv = rmax;
    pb->time = a->plan->stats.time_s + t + b->plan->stats.time_s;
    return REDIST_OK;
}

/* The best pair (*ba, *bb; its figures into best, bt and the b arrays):
 * the first in (i, j) order among those with the best score.  Every pair
 * is bounded first (bound(): a few receivers' pieces, O(devices)); then
 * walked in the order of its bounds, unless its bounds already lose to the
 * best walked so far.  The choice is the one walking every pair makes. */
static redist_status_t choose(const redist_spec_t *s, const cand *ca, int na,
                              const cand *cb, int nb,
                              const redist_cost_model_t *cm, int time_obj,
                              uint64_t *arr, int *ba, int *bb, double *bt,
                              score *best)
{
    int64_t N = s->two->ndevices, bidx = -1;
    uint64_t *peak = arr, *recv = arr + N, *trecv = arr + 2 * N;
    pbound *pb = calloc((size_t)na * (size_t)nb + 1, sizeof *pb);
    redist_status_t st = pb ? REDIST_OK : REDIST_ERR_NOMEM;
    memset(trecv, 0, (size_t)N * sizeof *trecv);
    for (int64_t x = 0; !st && x < (int64_t)na * nb; x++) {
        pb[x].idx = x;
        pb[x].time_obj = time_obj;
        st = bound(s, &ca[x / nb], &cb[x % nb], cm, peak, recv, trecv, &pb[x]);
    }
    if (!st)
        qsort(pb, (size_t)na * (size_t)nb, sizeof *pb, pbound_cmp);
    for (int64_t x = 0; !st && x < (int64_t)na * nb; x++) {
        const pbound *p = &pb[x];
        if (bidx >= 0 &&
            (p->efficient != best->efficient || p->peak != best->peak ||
             (time_obj ? p->time > best->time : p->recv > best->recv)))
            continue; /* sorted: loses on memory, or on its bound */
        score sc;
        double t;
        const cand *a = &ca[p->idx / nb], *b = &cb[p->idx % nb];
        if ((st = evaluate(s, a, b, cm, peak, recv, trecv, &t, &sc)))
            break;
        if (bidx < 0 || better(&sc, best, time_obj) ||
            (!better(best, &sc, time_obj) && p->idx < bidx)) {
            *best = sc;
            bidx = p->idx;
            *bt = t;
            memcpy(arr + 3 * N, peak, (size_t)N * sizeof *peak);
            memcpy(arr + 4 * N, recv, (size_t)N * sizeof *recv);
            memcpy(arr + 5 * N, trecv, (size_t)N * sizeof *trecv);
        }
    }
    free(pb);
    *ba = bidx < 0 ? -1 : (int)(bidx / nb);
    *bb = bidx < 0 ? -1 : (int)(bidx % nb);
    return st;
}

/* The transfer's view: after = R, its longest blocks and figures. */
static void transfer_view(const redist_spec_t *s, const rd_mside *R,
                          const uint64_t *trecv, double t,
                          redist_step_view_t *v)
{
    memset(v, 0, sizeof *v);
    v->op = REDIST_OP_TRANSFER;
    v->dim = v->from_dim = v->to_dim = v->axis = -1;
    v->after = R->t;
    v->mesh = 1;
    v->local_bytes = rd_layout_max_elems(&R->lay, v->local_shape) *
                     s->elem_size;
    for (int64_t d = 0; d < s->two->ndevices; d++)
        if (trecv[d] > v->recv_bytes)
            v->recv_bytes = trecv[d];
    v->time_s = t;
}

/* The plan of the pair (a, b) (taken over: a's and b's plan and side are
 * moved into it): phase A's steps, the transfer, phase B's steps, with
 * the pair's score and per-device figures (by global device). */
static redist_status_t compose(const redist_spec_t *s, cand *a, cand *b,
                               const redist_cost_model_t *cm,
                               redist_objective_t objective,
                               const score *best, const uint64_t *bpeak,
                               const uint64_t *brecv, const uint64_t *btrecv,
                               double bt, redist_plan_t **out,
                               redist_error_t *err)
{
    int64_t N = s->two->ndevices;
    redist_plan_t *p = calloc(1, sizeof *p);
    rd_mplan *mp = calloc(1, sizeof *mp);
    const redist_plan_t *pa = a->plan, *pb = b->plan;
    int n = pa->nsteps + 1 + pb->nsteps;
    if (p)
        p->m = mp;
    if (!p || !mp || !(p->spec = rd_spec_clone(s)) ||
        !(p->steps = calloc((size_t)n, sizeof *p->steps)) ||
        !(mp->dev_peak = malloc((size_t)N * sizeof *mp->dev_peak)) ||
        !(mp->dev_recv = malloc((size_t)N * sizeof *mp->dev_recv))) {
        if (!p)
            free(mp);
        redist_plan_free(p);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    memcpy(mp->dev_peak, bpeak, (size_t)N * sizeof *bpeak);
    memcpy(mp->dev_recv, brecv, (size_t)N * sizeof *brecv);
    mp->ndevices = N;
    mp->phase[0] = a->plan;
    mp->phase[1] = b->plan;
    mp->sent = a->m;
    mp->recvd = b->m;
    a->plan = b->plan = NULL;
    memset(&a->m, 0, sizeof a->m);
    memset(&b->m, 0, sizeof b->m);
    for (int i = 0; i < pa->nsteps; i++) {
        p->steps[i] = pa->steps[i];
        p->steps[i].mesh = 0;
    }
    transfer_view(s, &mp->recvd, btrecv, bt, &p->steps[pa->nsteps]);
    for (int i = 0; i < pb->nsteps; i++) {
        p->steps[pa->nsteps + 1 + i] = pb->steps[i];
        p->steps[pa->nsteps + 1 + i].mesh = 1;
    }
    p->nsteps = n;
    p->objective = objective;
    p->states = pa->states + pb->states;
    if (cm) {
        p->has_cost = 1;
        p->cost = *cm;
    }
    redist_plan_stats_t *x = &p->stats;
    x->src_bytes = s->src_bytes;
    x->dst_bytes = s->dst_bytes;
    x->peak_bytes = best->peak;
    x->recv_bytes = best->recv;
    x->collectives = best->colls;
    x->steps = n;
    x->memory_efficient = best->efficient;
    x->time_s = cm ? best->time : 0;
    x->optimal = 0;
    *out = p;
    return REDIST_OK;
}

redist_status_t rd_plan_meshes_from_steps(const redist_spec_t *s, int n,
                                          const redist_step_view_t v[],
                                          const redist_cost_model_t *cm,
                                          redist_objective_t objective,
                                          const redist_plan_t *like,
                                          redist_plan_t **out,
                                          redist_error_t *err)
{
    int t = -1, count = 0;
    for (int i = 0; i < n; i++)
        if (v[i].op == REDIST_OP_TRANSFER) {
            t = i;
            count++;
        }
    if (count != 1)
        return rd_error(err, REDIST_ERR_PLAN, NULL, "steps",
                        "a plan between two meshes has exactly one transfer "
                        "step, not %d",
                        count);
    cand a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    redist_spec_t *ps[2] = {NULL, NULL};
    /* S as the planner makes it: pending only on axes of size > 1 (one
     * of size 1 is a replica: the transfer does not sum over it, and its
     * lists are ordered as for no sums) */
    redist_type_t Sn = t > 0 ? v[t - 1].after : s->from;
    for (int a = 0; a < s->two->mesh[0].naxes; a++)
        if (s->two->mesh[0].size[a] == 1)
            Sn.partial &= ~(1u << a);
    const redist_type_t *S = &Sn;
    const redist_type_t *R = &v[t].after;
    uint64_t *arr = NULL;
    redist_status_t st;
    if ((st = rd_mside_init(&a.m, s, 0, S, err)) ||
        (st = rd_mside_init(&b.m, s, 1, R, err)))
        goto out;
    if ((st = rd_meshes_phase_spec(s, 0, &s->from, S, &ps[0], err)) ||
        (st = rd_meshes_phase_spec(s, 1, R, &s->to, &ps[1], err))) {
        if (st == REDIST_ERR_INVALID || st == REDIST_ERR_INFEASIBLE)
            st = REDIST_ERR_PLAN; /* a type the transfer cannot have */
        goto out;
    }
    redist_cost_model_t tmp[2];
    if (like && like->m) {
        if ((st = redist_plan_replay(like->m->phase[0], ps[0], &a.plan,
                                     err)) ||
            (st = redist_plan_replay(like->m->phase[1], ps[1], &b.plan, err)))
            goto out;
    } else if ((st = rd_plan_from_steps_cost(ps[0], t, v,
                                      rd_meshes_phase_cost(s, cm, 0, &tmp[0]),
                                      objective, &a.plan, err)) ||
        (st = rd_plan_from_steps_cost(ps[1], n - t - 1, v + t + 1,
                                      rd_meshes_phase_cost(s, cm, 1, &tmp[1]),
                                      objective, &b.plan, err)))
        goto out;
    int64_t N = s->two->ndevices;
    if (!(arr = calloc((size_t)N * 3 + 3, sizeof *arr))) {
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    score sc;
    double tt;
    if ((st = evaluate(s, &a, &b, cm, arr, arr + N, arr + 2 * N, &tt,
                       &sc))) {
        rd_error(err, st, NULL, NULL, "out of memory");
        goto out;
    }
    st = compose(s, &a, &b, cm, objective, &sc, arr, arr + N, arr + 2 * N,
                 cm ? tt : 0, out, err);
out:
    cands_free(&a, 1);
    cands_free(&b, 1);
    redist_spec_free(ps[0]);
    redist_spec_free(ps[1]);
    free(arr);
    return st;
}

redist_status_t rd_plan_meshes(const redist_spec_t *s,
                               const redist_plan_options_t *opts,
                               redist_plan_t **out, redist_error_t *err)
{
    int64_t N = s->two->ndevices;
    redist_objective_t objective = rd_objective(opts);
    redist_cost_model_t defaults;
    if (opts && opts->no_cross_sums != 0 && opts->no_cross_sums != 1)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "no_cross_sums",
                        "no_cross_sums is %d; it is 0 or 1",
                        opts->no_cross_sums);
    const redist_cost_model_t *cm = opts ? opts->cost : NULL;
    if (!cm && objective == REDIST_OBJECTIVE_TIME) {
        redist_cost_model_default(&defaults);
        cm = &defaults;
    }
    cand *ca = calloc(MAX_SIDE, sizeof *ca);
    cand *cb = calloc(MAX_SIDE, sizeof *cb);
    uint64_t *arr = calloc((size_t)N * 6 + 6, sizeof *arr);
    int na = 0, nb = 0, ba = -1, bb = -1;
    double bt = 0;
    redist_status_t st = REDIST_OK;
    if (!ca || !cb || !arr) {
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    uint64_t *bpeak = arr + 3 * N, *brecv = arr + 4 * N,
             *btrecv = arr + 5 * N;
    if ((st = side_cands(s, 0, opts, ca, &na, err)) ||
        (st = side_cands(s, 1, opts, cb, &nb, err)))
        goto done;
    score best = {0};
    if ((st = choose(s, ca, na, cb, nb, cm,
                     objective == REDIST_OBJECTIVE_TIME, arr, &ba, &bb, &bt,
                     &best))) {
        rd_error(err, st, NULL, NULL, "out of memory");
        goto done;
    }
    if (ba < 0) {
        st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                      "no plan: the source's reductions cannot be resolved "
                      "on mesh \"%s\"",
                      s->two->name[0]);
        goto done;
    }
    if (opts && opts->max_peak_bytes && best.peak > opts->max_peak_bytes) {
        st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                      "no plan within max_peak_bytes %llu: the least peak "
                      "found is %llu bytes",
                      (unsigned long long)opts->max_peak_bytes,
                      (unsigned long long)best.peak);
        goto done;
    }
    st = compose(s, &ca[ba], &cb[bb], cm, objective, &best, bpeak, brecv,
                 btrecv, bt, out, err);
    if (!st) {
        redist_plan_t *p = *out;
        p->solved = 1;
        p->unproven = RD_UNPROVEN_MESHES;
        /* what every plan must hold: its endpoints */
        p->stats.bound_peak_bytes = s->src_bytes > s->dst_bytes
                                        ? s->src_bytes
                                        : s->dst_bytes;
    }
done:
    if (ca)
        cands_free(ca, na);
    if (cb)
        cands_free(cb, nb);
    free(ca);
    free(cb);
    free(arr);
    return st;
}

void rd_mplan_free(rd_mplan *m)
{
    if (!m)
        return;
    redist_plan_free(m->phase[0]);
    redist_plan_free(m->phase[1]);
    rd_mside_free(&m->sent);
    rd_mside_free(&m->recvd);
    free(m->dev_peak);
    free(m->dev_recv);
    free(m);
}
