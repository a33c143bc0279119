/*
 * search.c - the exhaustive reference search of the tests (see search.h).
 *
 * Written from the documentation alone, sharing nothing with src/:
 *
 *  1. Enumerate every sharding type a plan can pass through: for every
 *     partial set P with  to.partial <= P <= from.partial  (partial axes
 *     can only be resolved, never created, and a type that lost a target
 *     partial axis can never reach the target), every assignment of each
 *     axis outside P to "replicated" or to a dim, and every order of the
 *     axes within a dim; keep the types whose dims all divide.
 *
 *  2. Candidate peaks are the distinct local byte sizes of those types
 *     that are >= max(src bytes, dst bytes).  For each in increasing
 *     order, run a plain Dijkstra over the step graph restricted to types
 *     of at most that many local bytes; the edge cost is the pair (cost,
 *     collectives), compared lexicographically.  The first cap under which
 *     the target is reachable is the least peak; the Dijkstra distance
 *     there is the least (cost, collectives).
 *
 * THE BYTES OBJECTIVE (doc/spec-format.md section 2).  The cost is the
 * exact received bytes (s = axis size, L = local bytes before the step):
 *   slice(dim, a)          a replicated, l_dim % s == 0      0         no coll.
 *   all_gather(dim, a)     a minor of dim                    (s-1) L
 *   all_to_all(d, e, a)    a minor of d, l_e % s == 0        (s-1)/s L
 *   reduce_scatter(dim, a) a partial, l_dim % s == 0         (s-1)/s L
 *   all_reduce(a)          a partial                         2(s-1)/s L
 *   permute                same local shape and partial set  L
 * Received bytes are kept exactly in units of 1/D, D = lcm of all axis
 * sizes, in 128-bit integers.
 *
 * Permute fans out from a node to its whole group (same local shape and
 * partial set) at the same cost L; since Dijkstra pops nodes in
 * nondecreasing (recv, collectives) order, the first popped member of a
 * group offers every other member the least permute cost, so later members
 * need not fan out again.
 *
 * THE TIME OBJECTIVE (doc/spec-format.md sections 6 and 9, the README's
 * "The time objective", doc/design.md "The time objective").  The same
 * steps, plus one edge from every type whose partial set is the target's:
 * an `exchange` straight into the target.  A message of n bytes over link
 * level l costs alpha[l] + n beta[l]; a collective step runs over its
 * axis's link, a permute or an exchange over the slowest link among the
 * axes along which data moves: those the source type shards whose
 * coordinate shifts a device's block differently in the two types
 * (another dim, or another product of its own and the earlier axes'
 * sizes in the dim's list); each piece comes from a holder agreeing with
 * the receiver on the other axes (the search runs without the size-1
 * axes, which never count).
 * Per step, with R the bytes a device receives (the most any device does,
 * rounded up: the recv of section 2):
 *   slice                  nothing (local copies are free)
 *   all_gather             s-1 messages (ring), R = (s-1) L
 *   all_to_all             s-1 messages (pairwise), R = (s-1)/s L
 *   reduce_scatter         s-1 messages, R = (s-1)/s L, and gamma per
 *                          reduced byte: (s-1)/s L
 *   all_reduce             2(s-1) messages (twice the reduce-scatter),
 *                          R = 2(s-1)/s L, gamma (s-1)/s L
 *   permute                one message, R = L
 *   exchange               one message per peer and R = the bytes the
 *                          device lacks, each the most over the devices
 *                          (brute force: a device's peers are the distinct
 *                          source blocks that overlap its target block,
 *                          its own not counted); nothing when no device
 *                          lacks anything
 * The cost of a path is kept exactly, as the messages and received bytes
 * on each link level and the reduced bytes (in units of 1/D); its value in
 * seconds is computed from those counts in long double, so two paths with
 * the same counts tie exactly.  Permute costs depend on the pair of types
 * (their link), so every node fans out to its whole group.
 *
 * The fewest collectives are those of the plans of exactly the least time;
 * rx_search_time then reruns Dijkstra at the least peak over (type,
 * collectives so far) to give the least time of each collective count
 * (search.h, alt_time_s), from which a caller tells whether a rounding of
 * the times could change the count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef rx_u128 u128;

enum { X_SLICE, X_ALL_GATHER, X_ALL_TO_ALL, X_REDUCE_SCATTER, X_ALL_REDUCE,
       X_PERMUTE, X_EXCHANGE };

static const char *const xop_name[] = {"slice",          "all_gather",
                                       "all_to_all",     "reduce_scatter",
                                       "all_reduce",     "permute",
                                       "exchange"};

/* A sharding type: dims lists (major first) and a partial bitmask. */
typedef struct {
    uint8_t n[RX_MAX_DIMS];
    uint8_t ax[RX_MAX_DIMS][RX_MAX_AXES];
    uint32_t partial;
} xt_t;

typedef struct {
    const rx_problem_t *p;
    long nt, capacity;
    xt_t *t;
    uint64_t *key;
    int64_t *loc; /* nt * RX_MAX_DIMS */
    uint64_t *bytes;
    long *group;  /* group id of each type */
    long ngroups;
    long *gstart; /* members of group g: gmem[gstart[g] .. gstart[g+1]) */
    long *gmem;
    long hmask;
    long *hslot;
    int failed;
} tab_t;

/* ------------------------------------------------------------ helpers */

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static uint64_t key_of(const rx_problem_t *p, const xt_t *t)
{
    uint64_t code[RX_MAX_AXES], key = 0;
    for (int a = 0; a < p->naxes; a++)
        code[a] = (t->partial >> a & 1u) ? 0xFE : 0xFF;
    for (int d = 0; d < p->ndims; d++)
        for (int k = 0; k < t->n[d]; k++)
            code[t->ax[d][k]] = (uint64_t)(d * RX_MAX_AXES + k);
    for (int a = 0; a < p->naxes; a++)
        key |= code[a] << (8 * a);
    return key;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static long lookup(const tab_t *T, uint64_t key)
{
    long h = (long)(mix64(key) & (uint64_t)T->hmask);
    for (;;) {
        long i = T->hslot[h];
        if (i < 0)
            return -1;
        if (T->key[i] == key)
            return i;
        h = (h + 1) & T->hmask;
    }
}

static void add_type(tab_t *T, const xt_t *t)
{
    const rx_problem_t *p = T->p;
    if (T->nt == T->capacity) {
        long nc = T->capacity ? 2 * T->capacity : 256;
        xt_t *nt = realloc(T->t, (size_t)nc * sizeof *nt);
        if (nt)
            T->t = nt;
        uint64_t *nk = realloc(T->key, (size_t)nc * sizeof *nk);
        if (nk)
            T->key = nk;
        int64_t *nl = realloc(T->loc, (size_t)nc * RX_MAX_DIMS * sizeof *nl);
        if (nl)
            T->loc = nl;
        uint64_t *nb = realloc(T->bytes, (size_t)nc * sizeof *nb);
        if (nb)
            T->bytes = nb;
        if (!nt || !nk || !nl || !nb) {
            T->failed = 1;
            return;
        }
        T->capacity = nc;
    }
    long i = T->nt++;
    T->t[i] = *t;
    T->key[i] = key_of(p, t);
    uint64_t elems = 1;
    for (int d = 0; d < p->ndims; d++) {
        int64_t prod = 1;
        for (int k = 0; k < t->n[d]; k++)
            prod *= p->size[t->ax[d][k]];
        T->loc[i * RX_MAX_DIMS + d] = p->shape[d] / prod;
        elems *= (uint64_t)(p->shape[d] / prod);
    }
    T->bytes[i] = elems * p->elem_size;
}

/* Place mesh axes a.. (those outside cur->partial) in every possible way. */
static void enum_rec(tab_t *T, xt_t *cur, int a)
{
    const rx_problem_t *p = T->p;
    if (T->failed)
        return;
    if (a == p->naxes) {
        add_type(T, cur);
        return;
    }
    if (cur->partial >> a & 1u) {
        enum_rec(T, cur, a + 1);
        return;
    }
    enum_rec(T, cur, a + 1); /* replicated */
    for (int d = 0; d < p->ndims; d++) {
        int64_t prod = p->size[a];
        for (int k = 0; k < cur->n[d]; k++)
            prod *= p->size[cur->ax[d][k]];
        if (p->shape[d] % prod != 0)
            continue; /* more axes only make the product larger */
        int n = cur->n[d];
        for (int pos = 0; pos <= n; pos++) {
            uint8_t save[RX_MAX_AXES];
            memcpy(save, cur->ax[d], sizeof save);
            for (int k = n; k > pos; k--)
                cur->ax[d][k] = cur->ax[d][k - 1];
            cur->ax[d][pos] = (uint8_t)a;
            cur->n[d]++;
            enum_rec(T, cur, a + 1);
            cur->n[d]--;
            memcpy(cur->ax[d], save, sizeof save);
        }
    }
}

static const tab_t *sort_ctx;

static int cmp_group(const void *x, const void *y)
{
    long i = *(const long *)x, j = *(const long *)y;
    const tab_t *T = sort_ctx;
    if (T->t[i].partial != T->t[j].partial)
        return T->t[i].partial < T->t[j].partial ? -1 : 1;
    for (int d = 0; d < T->p->ndims; d++) {
        int64_t a = T->loc[i * RX_MAX_DIMS + d], b = T->loc[j * RX_MAX_DIMS + d];
        if (a != b)
            return a < b ? -1 : 1;
    }
    return i < j ? -1 : i > j;
}

static int same_group(const tab_t *T, long i, long j)
{
    if (T->t[i].partial != T->t[j].partial)
        return 0;
    for (int d = 0; d < T->p->ndims; d++)
        if (T->loc[i * RX_MAX_DIMS + d] != T->loc[j * RX_MAX_DIMS + d])
            return 0;
    return 1;
}

static int build_table(tab_t *T, const rx_problem_t *p)
{
    memset(T, 0, sizeof *T);
    T->p = p;
    uint32_t sp = p->from.partial, dp = p->to.partial;
    for (uint32_t m = sp;; m = (m - 1) & sp) {
        if ((m & dp) == dp) {
            xt_t cur;
            memset(&cur, 0, sizeof cur);
            cur.partial = m;
            enum_rec(T, &cur, 0);
        }
        if (m == 0)
            break;
    }
    if (T->failed)
        return -1;
    /* hash of keys */
    long hs = 16;
    while (hs < 2 * T->nt + 2)
        hs *= 2;
    T->hmask = hs - 1;
    T->hslot = malloc((size_t)hs * sizeof *T->hslot);
    T->group = malloc((size_t)(T->nt ? T->nt : 1) * sizeof *T->group);
    T->gmem = malloc((size_t)(T->nt ? T->nt : 1) * sizeof *T->gmem);
    T->gstart = malloc((size_t)(T->nt + 1) * sizeof *T->gstart);
    if (!T->hslot || !T->group || !T->gmem || !T->gstart)
        return -1;
    for (long h = 0; h < hs; h++)
        T->hslot[h] = -1;
    for (long i = 0; i < T->nt; i++) {
        if (lookup(T, T->key[i]) >= 0) {
            fprintf(stderr, "search: internal: type enumerated twice\n");
            return -1;
        }
        long h = (long)(mix64(T->key[i]) & (uint64_t)T->hmask);
        while (T->hslot[h] >= 0)
            h = (h + 1) & T->hmask;
        T->hslot[h] = i;
    }
    /* permute groups: same partial set and local shape */
    for (long i = 0; i < T->nt; i++)
        T->gmem[i] = i;
    sort_ctx = T;
    qsort(T->gmem, (size_t)T->nt, sizeof *T->gmem, cmp_group);
    sort_ctx = NULL;
    T->ngroups = 0;
    for (long k = 0; k < T->nt; k++) {
        if (k == 0 || !same_group(T, T->gmem[k - 1], T->gmem[k]))
            T->gstart[T->ngroups++] = k;
        T->group[T->gmem[k]] = T->ngroups - 1;
    }
    T->gstart[T->ngroups] = T->nt;
    return 0;
}

static void free_table(tab_t *T)
{
    free(T->t);
    free(T->key);
    free(T->loc);
    free(T->bytes);
    free(T->group);
    free(T->gstart);
    free(T->gmem);
    free(T->hslot);
}


/* ------------------------------------------------ time accounting */

/* The exact cost of a path under the time objective: messages and bytes
 * received on each link level, and reduced bytes in units of 1/D. */
typedef struct {
    uint32_t m[REDIST_LINK_COUNT];
    uint64_t b[REDIST_LINK_COUNT];
    u128 r;
} tvec_t;

static void tvec_add(tvec_t *x, const tvec_t *y)
{
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        x->m[l] += y->m[l];
        x->b[l] += y->b[l];
    }
    x->r += y->r;
}

/* Seconds, from the counts alone (the same counts give the same value). */
static long double tvec_value(const redist_cost_model_t *cm, uint64_t D,
                              const tvec_t *x)
{
    long double t = 0;
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        t += (long double)x->m[l] * cm->alpha[l] +
             (long double)x->b[l] * cm->beta[l];
    return t + (long double)x->r / (long double)D * cm->gamma;
}

/* Block of `x` on dim d for the device at `coord`: [*start, *start + *len). */
static void block_of(const rx_problem_t *p, const xt_t *x, int d,
                     const int64_t *coord, int64_t *start, int64_t *len)
{
    int64_t idx = 0, n = 1;
    for (int k = 0; k < x->n[d]; k++) {
        int a = x->ax[d][k];
        idx = idx * p->size[a] + coord[a];
        n *= p->size[a];
    }
    *len = p->shape[d] / n;
    *start = idx * *len;
}

/* What an exchange from x to y needs, device by device (search.h). */
static void need_xt(const rx_problem_t *p, const xt_t *x, const xt_t *y,
                    uint64_t *lack_bytes, uint64_t *peers)
{
    int64_t coord[RX_MAX_AXES] = {0};
    uint64_t lack_max = 0, peers_max = 0;
    for (;;) {
        uint64_t want = 1, have = 1, pieces = 1;
        for (int d = 0; d < p->ndims; d++) {
            int64_t s0, sl, t0, tl;
            block_of(p, x, d, coord, &s0, &sl);
            block_of(p, y, d, coord, &t0, &tl);
            int64_t lo = s0 > t0 ? s0 : t0;
            int64_t hi = s0 + sl < t0 + tl ? s0 + sl : t0 + tl;
            want *= (uint64_t)tl;
            have *= (uint64_t)(hi > lo ? hi - lo : 0);
            pieces *= (uint64_t)((t0 + tl - 1) / sl - t0 / sl + 1);
        }
        uint64_t lack = want - have, peer = pieces - (have > 0);
        if (lack > lack_max)
            lack_max = lack;
        if (peer > peers_max)
            peers_max = peer;
        int a = p->naxes - 1; /* next device, row-major */
        while (a >= 0 && ++coord[a] == p->size[a])
            coord[a--] = 0;
        if (a < 0)
            break;
    }
    *lack_bytes = lack_max * p->elem_size;
    *peers = peers_max;
}

/* Where axis a sits in t: its dim (-1: none) and the product of the sizes
 * of a and the axes before it in that dim's list (a step of a's
 * coordinate shifts the device's block by shape / that product). */
static int axis_place(const rx_problem_t *p, const xt_t *t, int a,
                      int64_t *prefix)
{
    for (int d = 0; d < p->ndims; d++) {
        int64_t q = 1;
        for (int k = 0; k < t->n[d]; k++) {
            q *= p->size[t->ax[d][k]];
            if (t->ax[d][k] == a) {
                *prefix = q;
                return d;
            }
        }
    }
    return -1;
}

/* The slowest link among the axes along which data moves from x to y
 * (the problem has no size-1 axis): those x shards whose coordinate
 * shifts the two blocks differently (another dim, or another shift); -1
 * when none does. */
static int move_link(const rx_problem_t *p, const int *link, const xt_t *x,
                     const xt_t *y)
{
    int best = -1;
    for (int a = 0; a < p->naxes; a++) {
        int64_t qx = 0, qy = 0;
        int dx = axis_place(p, x, a, &qx), dy = axis_place(p, y, a, &qy);
        if (dx >= 0 && (dx != dy || qx != qy) && link[a] > best)
            best = link[a];
    }
    return best;
}

/* The counts of one step (top of the file) on a problem without size-1
 * axes; `before` and `after` are read for permute and exchange only. */
static void step_tvec(const rx_problem_t *p, const int *link, uint64_t D,
                      int op, int axis, uint64_t L, const xt_t *before,
                      const xt_t *after, tvec_t *out)
{
    memset(out, 0, sizeof *out);
    if (op == X_SLICE)
        return;
    if (op == X_PERMUTE || op == X_EXCHANGE) {
        int l = move_link(p, link, before, after);
        uint64_t lack = L, peers = 1;
        if (op == X_EXCHANGE)
            need_xt(p, before, after, &lack, &peers);
        if (l < 0 || lack == 0)
            return; /* nothing moves */
        out->m[l] = (uint32_t)peers;
        out->b[l] = lack;
        return;
    }
    int l = link[axis];
    u128 s = (u128)p->size[axis], LD = (u128)L * D;
    switch (op) {
    case X_ALL_GATHER:
        out->m[l] = (uint32_t)(s - 1);
        out->b[l] = (uint64_t)((s - 1) * L);
        break;
    case X_ALL_TO_ALL:
        out->m[l] = (uint32_t)(s - 1);
        out->b[l] = (uint64_t)(((s - 1) * L + s - 1) / s);
        break;
    case X_REDUCE_SCATTER:
        out->m[l] = (uint32_t)(s - 1);
        out->b[l] = (uint64_t)(((s - 1) * L + s - 1) / s);
        out->r = (s - 1) * LD / s;
        break;
    case X_ALL_REDUCE:
        out->m[l] = (uint32_t)(2 * (s - 1));
        out->b[l] = (uint64_t)((2 * (s - 1) * L + s - 1) / s);
        out->r = (s - 1) * LD / s;
        break;
    default:
        break;
    }
}

/* ----------------------------------------------------------- Dijkstra */

/* A queue entry: the key (g for the bytes objective, t for the time
 * objective, the other one 0), collectives, and the node. */
typedef struct {
    u128 g;
    long double t;
    int c;
    long v;
} hent_t;

/* A node is (type, layer): layer = collectives so far, the last layer
 * holding every count from it on; one layer but for rx_search_time's
 * second run. */
typedef struct {
    const tab_t *T;
    uint64_t cap;
    uint64_t D;
    int layers;
    int stop_at_dst;           /* stop when the target (layer 0) is done */
    long dst;
    const redist_cost_model_t *cm; /* NULL: the bytes objective */
    int link[RX_MAX_AXES];     /* link level of each axis (time) */
    u128 *g;                   /* bytes: exact recv, units of 1/D */
    tvec_t *tv;                /* time: the counts */
    long double *tval;         /* time: their value */
    int *c;
    uint8_t *seen, *done, *gfan;
    long *parent;
    uint8_t (*how)[4]; /* op, dim/from_dim, to_dim, axis of the last step */
    uint8_t *exknown;          /* time: exchange into dst priced, per type */
    tvec_t *ex;
    hent_t *heap;
    long nheap, heapcap;
    int failed;
} dj_t;

static int hless(const hent_t *a, const hent_t *b)
{
    if (a->g != b->g)
        return a->g < b->g;
    if (a->t != b->t)
        return a->t < b->t;
    return a->c < b->c;
}

static void hpush(dj_t *S, hent_t e)
{
    if (S->nheap == S->heapcap) {
        long nc = S->heapcap ? 2 * S->heapcap : 1024;
        hent_t *nh = realloc(S->heap, (size_t)nc * sizeof *nh);
        if (!nh) {
            S->failed = 1;
            return;
        }
        S->heap = nh;
        S->heapcap = nc;
    }
    long i = S->nheap++;
    while (i > 0) {
        long up = (i - 1) / 2;
        if (!hless(&e, &S->heap[up]))
            break;
        S->heap[i] = S->heap[up];
        i = up;
    }
    S->heap[i] = e;
}

static hent_t hpop(dj_t *S)
{
    hent_t top = S->heap[0], last = S->heap[--S->nheap];
    long i = 0, n = S->nheap;
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        const hent_t *best = &last;
        if (l < n && hless(&S->heap[l], best)) {
            m = l;
            best = &S->heap[l];
        }
        if (r < n && hless(&S->heap[r], best))
            m = r;
        if (m == i)
            break;
        S->heap[i] = S->heap[m];
        i = m;
    }
    if (n > 0)
        S->heap[i] = last;
    return top;
}

/* Offer the edge from node `u` to type `w` with cost `cost` (bytes) or
 * `tcost` (time). */
static void relax(dj_t *S, long u, long w, u128 cost, const tvec_t *tcost,
                  int coll, int op, int d, int e, int a)
{
    if (w < 0 || S->T->bytes[w] > S->cap)
        return;
    int layer = (int)(u % S->layers) + coll;
    if (layer >= S->layers)
        layer = S->layers - 1;
    long x = w * S->layers + layer;
    if (S->done[x])
        return;
    int nc = S->c[u] + coll;
    hent_t h = {0, 0, nc, x};
    if (S->cm) {
        tvec_t nv = S->tv[u];
        tvec_add(&nv, tcost);
        h.t = tvec_value(S->cm, S->D, &nv);
        if (S->seen[x] && !(h.t < S->tval[x] ||
                            (h.t == S->tval[x] && nc < S->c[x])))
            return;
        S->tv[x] = nv;
        S->tval[x] = h.t;
    } else {
        h.g = S->g[u] + cost;
        if (S->seen[x] && !(h.g < S->g[x] || (h.g == S->g[x] && nc < S->c[x])))
            return;
        S->g[x] = h.g;
    }
    S->seen[x] = 1;
    S->c[x] = nc;
    S->parent[x] = u;
    S->how[x][0] = (uint8_t)op;
    S->how[x][1] = (uint8_t)(d < 0 ? 0xFF : d);
    S->how[x][2] = (uint8_t)(e < 0 ? 0xFF : e);
    S->how[x][3] = (uint8_t)(a < 0 ? 0xFF : a);
    hpush(S, h);
}

/* Index of the type `t` reached by a legal step, -1 when it lies outside
 * the table because it dropped a target partial axis. */
static long find_next(dj_t *S, const xt_t *t)
{
    const tab_t *T = S->T;
    long w = lookup(T, key_of(T->p, t));
    if (w < 0 && (t->partial & T->p->to.partial) == T->p->to.partial) {
        fprintf(stderr, "search: internal: a legal step leads outside the "
                        "enumerated types\n");
        S->failed = 1;
    }
    return w;
}

/* One step from node u (type v) to type w: its cost under the objective. */
static void step(dj_t *S, long u, long w, int op, int d, int e, int a)
{
    const tab_t *T = S->T;
    long v = u / S->layers;
    if (w < 0)
        return;
    if (S->cm) {
        tvec_t tc;
        step_tvec(T->p, S->link, S->D, op, a, T->bytes[v], &T->t[v],
                  &T->t[w], &tc);
        relax(S, u, w, 0, &tc, op != X_SLICE, op, d, e, a);
        return;
    }
    u128 s = a >= 0 ? (u128)T->p->size[a] : 1;
    u128 LD = (u128)T->bytes[v] * S->D, r = 0;
    switch (op) {
    case X_ALL_GATHER: r = (s - 1) * LD; break;
    case X_ALL_TO_ALL:
    case X_REDUCE_SCATTER: r = (s - 1) * LD / s; break;
    case X_ALL_REDUCE: r = 2 * (s - 1) * LD / s; break;
    case X_PERMUTE: r = LD; break;
    default: break;
    }
    relax(S, u, w, r, NULL, op != X_SLICE, op, d, e, a);
}

static void expand(dj_t *S, long u)
{
    const tab_t *T = S->T;
    const rx_problem_t *p = T->p;
    long v = u / S->layers;
    const xt_t *t = &T->t[v];
    const int64_t *loc = &T->loc[v * RX_MAX_DIMS];
    uint32_t used = t->partial;
    for (int d = 0; d < p->ndims; d++)
        for (int k = 0; k < t->n[d]; k++)
            used |= 1u << t->ax[d][k];

    /* slice */
    for (int a = 0; a < p->naxes; a++) {
        if (used >> a & 1u)
            continue;
        for (int d = 0; d < p->ndims; d++) {
            if (loc[d] % p->size[a] != 0)
                continue;
            xt_t nt = *t;
            nt.ax[d][nt.n[d]++] = (uint8_t)a;
            step(S, u, find_next(S, &nt), X_SLICE, d, -1, a);
        }
    }
    /* all_gather, all_to_all */
    for (int d = 0; d < p->ndims; d++) {
        if (t->n[d] == 0)
            continue;
        int a = t->ax[d][t->n[d] - 1];
        xt_t ng = *t;
        ng.n[d]--;
        step(S, u, find_next(S, &ng), X_ALL_GATHER, d, -1, a);
        for (int e = 0; e < p->ndims; e++) {
            if (e == d || loc[e] % p->size[a] != 0)
                continue;
            xt_t na = ng;
            na.ax[e][na.n[e]++] = (uint8_t)a;
            step(S, u, find_next(S, &na), X_ALL_TO_ALL, d, e, a);
        }
    }
    /* all_reduce, reduce_scatter */
    for (int a = 0; a < p->naxes; a++) {
        if (!(t->partial >> a & 1u))
            continue;
        xt_t nr = *t;
        nr.partial &= ~(1u << a);
        step(S, u, find_next(S, &nr), X_ALL_REDUCE, -1, -1, a);
        for (int d = 0; d < p->ndims; d++) {
            if (loc[d] % p->size[a] != 0)
                continue;
            xt_t nsc = nr;
            nsc.ax[d][nsc.n[d]++] = (uint8_t)a;
            step(S, u, find_next(S, &nsc), X_REDUCE_SCATTER, d, -1, a);
        }
    }
    /* permute: bytes, once per group from its first popped member; time,
     * from every member (the cost depends on the pair's link) */
    long gid = T->group[v];
    if (S->cm || !S->gfan[gid]) {
        S->gfan[gid] = 1;
        for (long k = T->gstart[gid]; k < T->gstart[gid + 1]; k++) {
            long w = T->gmem[k];
            if (w != v)
                step(S, u, w, X_PERMUTE, -1, -1, -1);
        }
    }
    /* exchange straight into the target (time) */
    if (S->cm && v != S->dst && t->partial == p->to.partial) {
        if (!S->exknown[v]) {
            step_tvec(p, S->link, S->D, X_EXCHANGE, -1, T->bytes[v], t,
                      &T->t[S->dst], &S->ex[v]);
            S->exknown[v] = 1;
        }
        relax(S, u, S->dst, 0, &S->ex[v], 1, X_EXCHANGE, -1, -1, -1);
    }
}

/* 1: dst reached (S->g/tv/c of node dst final), 0: unreachable, -1:
 * failure.  With stop_at_dst 0 the search runs until the queue empties
 * and returns 1 when some layer of dst was reached. */
static int dijkstra(dj_t *S, long src)
{
    const tab_t *T = S->T;
    size_t nodes = (size_t)T->nt * (size_t)S->layers;
    int reached = 0;
    memset(S->seen, 0, nodes);
    memset(S->done, 0, nodes);
    memset(S->gfan, 0, (size_t)(T->ngroups ? T->ngroups : 1));
    S->nheap = 0;
    if (T->bytes[src] > S->cap)
        return 0;
    long u0 = src * S->layers;
    S->seen[u0] = 1;
    if (S->cm) {
        memset(&S->tv[u0], 0, sizeof S->tv[u0]);
        S->tval[u0] = 0;
    } else {
        S->g[u0] = 0;
    }
    S->c[u0] = 0;
    S->parent[u0] = -1;
    hent_t h0 = {0, 0, 0, u0};
    hpush(S, h0);
    while (S->nheap > 0 && !S->failed) {
        hent_t h = hpop(S);
        if (S->done[h.v])
            continue;
        S->done[h.v] = 1;
        if (h.v / S->layers == S->dst) {
            reached = 1;
            if (S->stop_at_dst)
                return 1;
        }
        expand(S, h.v);
    }
    return S->failed ? -1 : reached;
}
/* ------------------------------------------------------------- output */

char *rx_format_type(const rx_problem_t *p, const redist_type_t *t, char *buf,
                     size_t size)
{
    size_t pos = 0;
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
#define APPEND(...)                                                          \
    do {                                                                     \
        if (pos < size) {                                                    \
            int n_ = snprintf(buf + pos, size - pos, __VA_ARGS__);           \
            if (n_ > 0)                                                      \
                pos += (size_t)n_;                                           \
        }                                                                    \
    } while (0)
    APPEND("[");
    for (int d = 0; d < t->ndims; d++) {
        APPEND("%s{", d ? ", " : "");
        for (int k = 0; k < t->dim_naxes[d]; k++) {
            int a = t->dims[d][k];
            if (a < p->naxes)
                APPEND("%s%s", k ? "," : "", p->name[a]);
            else
                APPEND("%s#%d", k ? "," : "", a);
        }
        APPEND("}");
    }
    APPEND("]");
    if (t->partial) {
        APPEND(" partial{");
        int first = 1;
        for (int a = 0; a < 32; a++)
            if (t->partial >> a & 1u) {
                if (a < p->naxes)
                    APPEND("%s%s", first ? "" : ",", p->name[a]);
                else
                    APPEND("%s#%d", first ? "" : ",", a);
                first = 0;
            }
        APPEND("}");
    }
#undef APPEND
    return buf;
}

static void xt_to_type(const rx_problem_t *p, const xt_t *x, redist_type_t *t)
{
    memset(t, 0, sizeof *t);
    t->ndims = p->ndims;
    for (int d = 0; d < p->ndims; d++) {
        t->dim_naxes[d] = x->n[d];
        for (int k = 0; k < x->n[d]; k++)
            t->dims[d][k] = x->ax[d][k];
    }
    t->partial = x->partial;
}

static const redist_op_t xop_public[] = {
    REDIST_OP_SLICE,          REDIST_OP_ALL_GATHER, REDIST_OP_ALL_TO_ALL,
    REDIST_OP_REDUCE_SCATTER, REDIST_OP_ALL_REDUCE, REDIST_OP_PERMUTE,
    REDIST_OP_EXCHANGE};

/* One optimal path, from node u0 to node u1: its steps, readable, which
 * ops it uses (bit X_... of *ops) and, with `steps` (else NULL), the
 * steps themselves (*nsteps of them; 0 when more than max). */
static int describe_path(const dj_t *S, long u0, long u1, char *path,
                         size_t size, unsigned *ops, rx_step_t *steps,
                         int max, int *nsteps)
{
    const tab_t *T = S->T;
    const rx_problem_t *p = T->p;
    long chain[4096];
    int n = 0;
    for (long u = u1; u != u0 && n < 4096; u = S->parent[u])
        chain[n++] = u;
    size_t pos = 0;
    path[0] = '\0';
    *ops = 0;
    for (int k = n - 1; k >= 0; k--) {
        long u = chain[k];
        const uint8_t *hw = S->how[u];
        char args[96], tf[512];
        redist_type_t t;
        *ops |= 1u << hw[0];
        switch (hw[0]) {
        case X_SLICE:
        case X_ALL_GATHER:
        case X_REDUCE_SCATTER:
            snprintf(args, sizeof args, "dim=%d, %s", hw[1], p->name[hw[3]]);
            break;
        case X_ALL_TO_ALL:
            snprintf(args, sizeof args, "%d->%d, %s", hw[1], hw[2],
                     p->name[hw[3]]);
            break;
        case X_ALL_REDUCE:
            snprintf(args, sizeof args, "%s", p->name[hw[3]]);
            break;
        default:
            args[0] = '\0';
        }
        xt_to_type(p, &T->t[u / S->layers], &t);
        rx_format_type(p, &t, tf, sizeof tf);
        if (steps && n <= max) {
            rx_step_t *st = &steps[n - 1 - k];
            int op = hw[0], two = op == X_ALL_TO_ALL;
            int has_dim = op == X_SLICE || op == X_ALL_GATHER ||
                          op == X_REDUCE_SCATTER;
            st->op = xop_public[op];
            st->dim = has_dim ? hw[1] : -1;
            st->from_dim = two ? hw[1] : -1;
            st->to_dim = two ? hw[2] : -1;
            st->axis = hw[3] == 0xFF ? -1 : hw[3];
            st->after = t;
        }
        if (pos < size) {
            int m = snprintf(path + pos, size - pos, "%s%s(%s) -> %s",
                             k == n - 1 ? "" : "; ", xop_name[hw[0]], args, tf);
            if (m > 0)
                pos += (size_t)m;
        }
    }
    if (nsteps)
        *nsteps = n <= max ? n : 0;
    return n;
}

/* ---------------------------------------------------------- the search */

int rx_problem_from_spec(const redist_spec_t *spec, rx_problem_t *out)
{
    const redist_mesh_t *m = redist_spec_mesh(spec);
    memset(out, 0, sizeof *out);
    out->naxes = redist_mesh_num_axes(m);
    out->ndims = redist_spec_ndims(spec);
    if (out->naxes < 1 || out->naxes > RX_MAX_AXES || out->ndims < 0 ||
        out->ndims > RX_MAX_DIMS)
        return -1;
    for (int a = 0; a < out->naxes; a++) {
        snprintf(out->name[a], sizeof out->name[a], "%s",
                 redist_mesh_axis_name(m, a));
        out->size[a] = redist_mesh_axis_size(m, a);
    }
    for (int d = 0; d < out->ndims; d++)
        out->shape[d] = redist_spec_shape(spec)[d];
    out->elem_size = redist_dtype_size(redist_spec_dtype(spec));
    out->from = *redist_spec_from(spec);
    out->to = *redist_spec_to(spec);
    return 0;
}

static int type_to_xt(const rx_problem_t *p, const redist_type_t *t, xt_t *x)
{
    memset(x, 0, sizeof *x);
    if (t->ndims != p->ndims || (t->partial >> p->naxes) != 0)
        return -1;
    for (int d = 0; d < p->ndims; d++) {
        if (t->dim_naxes[d] > p->naxes)
            return -1;
        x->n[d] = t->dim_naxes[d];
        for (int k = 0; k < t->dim_naxes[d]; k++) {
            if (t->dims[d][k] >= p->naxes)
                return -1;
            x->ax[d][k] = t->dims[d][k];
        }
    }
    x->partial = t->partial;
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The contract's rule for size-1 axes (doc/design.md, "Size-1 axes"): a
 * mesh axis of size 1 never changes a local shape or a block, and a
 * reduction over it is none, so types that differ only in where their
 * size-1 axes sit are the same type.  The search therefore runs on the
 * problem without them (the rest renumbered: map[a] is axis a's new
 * index, -1 for a size-1 axis). */
static void drop_size1_axes(const rx_problem_t *p, rx_problem_t *q, int *map)
{
    *q = *p;
    q->naxes = 0;
    for (int a = 0; a < p->naxes; a++) {
        map[a] = -1;
        if (p->size[a] == 1)
            continue;
        map[a] = q->naxes;
        memcpy(q->name[q->naxes], p->name[a], sizeof q->name[0]);
        q->size[q->naxes++] = p->size[a];
    }
    const redist_type_t *in[2] = {&p->from, &p->to};
    redist_type_t *outt[2] = {&q->from, &q->to};
    for (int w = 0; w < 2; w++) {
        redist_type_t t;
        memset(&t, 0, sizeof t);
        t.ndims = in[w]->ndims;
        for (int d = 0; d < in[w]->ndims; d++)
            for (int k = 0; k < in[w]->dim_naxes[d]; k++) {
                int a = in[w]->dims[d][k];
                if (a < p->naxes && map[a] >= 0)
                    t.dims[d][t.dim_naxes[d]++] = (uint8_t)map[a];
            }
        for (int a = 0; a < p->naxes; a++)
            if ((in[w]->partial >> a & 1u) && map[a] >= 0)
                t.partial |= 1u << map[a];
        *outt[w] = t;
    }
}

/* The lcm of the axis sizes: every exact figure is a multiple of 1/D. */
static uint64_t lcm_sizes(const rx_problem_t *p)
{
    uint64_t D = 1;
    for (int a = 0; a < p->naxes; a++)
        D = D / gcd_u64(D, (uint64_t)p->size[a]) * (uint64_t)p->size[a];
    return D;
}

/* The link level of each axis of q (a problem without size-1 axes) from
 * the model's levels of p's axes; -1 when one is out of range. */
static int map_links(const rx_problem_t *p, const int *map,
                     const redist_cost_model_t *cm, int *link)
{
    for (int a = 0; a < p->naxes; a++) {
        if (cm->axis_link[a] >= REDIST_LINK_COUNT)
            return -1;
        if (map[a] >= 0)
            link[map[a]] = cm->axis_link[a];
    }
    return 0;
}

/* What both objectives' searches start from. */
typedef struct {
    tab_t T;
    long src, dst;
    uint64_t D;
    uint64_t *caps; /* candidate peaks, increasing, distinct */
    size_t ncaps;
} prep_t;

/* 0: ready, 1: infeasible (a target partial axis the source lacks), -1:
 * failure.  *P is to be freed with unprepare in every case. */
static int prepare(const rx_problem_t *p, prep_t *P)
{
    xt_t xs, xd;
    memset(P, 0, sizeof *P);
    if (p->naxes < 0 || p->naxes > RX_MAX_AXES || p->ndims < 0 ||
        p->ndims > RX_MAX_DIMS || p->elem_size == 0 ||
        type_to_xt(p, &p->from, &xs) || type_to_xt(p, &p->to, &xd)) {
        fprintf(stderr, "search: problem outside the search's limits\n");
        return -1;
    }
    if ((p->to.partial & ~p->from.partial) != 0)
        return 1; /* no step creates pending reductions: infeasible */
    if (build_table(&P->T, p)) {
        fprintf(stderr, "search: out of memory\n");
        return -1;
    }
    P->src = lookup(&P->T, key_of(p, &xs));
    P->dst = lookup(&P->T, key_of(p, &xd));
    if (P->src < 0 || P->dst < 0) {
        fprintf(stderr, "search: the source or target type is invalid\n");
        return -1;
    }
    P->D = lcm_sizes(p);
    uint64_t sb = P->T.bytes[P->src], db = P->T.bytes[P->dst];
    uint64_t base = sb > db ? sb : db;
    size_t n = (size_t)P->T.nt, m = 0;
    P->caps = malloc(n * sizeof *P->caps);
    if (!P->caps) {
        fprintf(stderr, "search: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (P->T.bytes[i] >= base)
            P->caps[m++] = P->T.bytes[i];
    qsort(P->caps, m, sizeof *P->caps, cmp_u64);
    for (size_t i = 0; i < m; i++)
        if (P->ncaps == 0 || P->caps[i] != P->caps[P->ncaps - 1])
            P->caps[P->ncaps++] = P->caps[i];
    return 0;
}

static void unprepare(prep_t *P)
{
    free(P->caps);
    free_table(&P->T);
}

static void dj_free(dj_t *S)
{
    free(S->g);
    free(S->tv);
    free(S->tval);
    free(S->c);
    free(S->seen);
    free(S->done);
    free(S->gfan);
    free(S->parent);
    free(S->how);
    free(S->exknown);
    free(S->ex);
    free(S->heap);
    memset(S, 0, sizeof *S);
}

/* cm NULL: the bytes objective; else the time objective with `link`. */
static int dj_init(dj_t *S, const prep_t *P, int layers,
                   const redist_cost_model_t *cm, const int *link)
{
    const tab_t *T = &P->T;
    size_t n = (size_t)T->nt * (size_t)layers, nt = (size_t)T->nt;
    memset(S, 0, sizeof *S);
    S->T = T;
    S->D = P->D;
    S->layers = layers;
    S->stop_at_dst = layers == 1;
    S->dst = P->dst;
    S->cm = cm;
    if (cm)
        memcpy(S->link, link, sizeof S->link);
    S->c = malloc(n * sizeof *S->c);
    S->seen = malloc(n);
    S->done = malloc(n);
    S->gfan = malloc((size_t)(T->ngroups ? T->ngroups : 1));
    S->parent = malloc(n * sizeof *S->parent);
    S->how = malloc(n * sizeof *S->how);
    int ok = S->c && S->seen && S->done && S->gfan && S->parent && S->how;
    if (cm) {
        S->tv = malloc(n * sizeof *S->tv);
        S->tval = malloc(n * sizeof *S->tval);
        S->exknown = calloc(nt, 1);
        S->ex = malloc(nt * sizeof *S->ex);
        ok = ok && S->tv && S->tval && S->exknown && S->ex;
    } else {
        S->g = malloc(n * sizeof *S->g);
        ok = ok && S->g;
    }
    if (!ok) {
        fprintf(stderr, "search: out of memory\n");
        dj_free(S);
        return -1;
    }
    return 0;
}

/* Dijkstra under each candidate peak in turn: 1 when the target is
 * reachable under one (S->cap is then the least peak and S holds the
 * search there), 0 when under none, -1 on failure. */
static int least_peak(dj_t *S, const prep_t *P, int *tried)
{
    for (size_t k = 0; k < P->ncaps; k++) {
        S->cap = P->caps[k];
        ++*tried;
        int r = dijkstra(S, P->src);
        if (r != 0)
            return r;
    }
    return 0;
}

/* Prepare the search of p under the objective (cm NULL: bytes), fill the
 * result's counts and find the least peak: as least_peak (1: S holds the
 * search at the least peak), and 0 also when no plan exists. */
static int first_search(const rx_problem_t *p, prep_t *P, dj_t *S,
                        const redist_cost_model_t *cm, const int *link,
                        long *ntypes, uint64_t *src_bytes,
                        uint64_t *dst_bytes, int *tried)
{
    int rc = prepare(p, P);
    if (rc == 0)
        rc = dj_init(S, P, 1, cm, link);
    if (rc != 0)
        return rc == 1 ? 0 : -1;
    *ntypes = P->T.nt;
    *src_bytes = P->T.bytes[P->src];
    *dst_bytes = P->T.bytes[P->dst];
    return least_peak(S, P, tried);
}

static int search_reduced(const rx_problem_t *p, rx_result_t *out);
static int search_time_reduced(const rx_problem_t *p,
                               const redist_cost_model_t *cm, const int *link,
                               rx_time_result_t *out);

int rx_search(const rx_problem_t *p, rx_result_t *out)
{
    rx_problem_t q;
    int map[RX_MAX_AXES];
    memset(out, 0, sizeof *out);
    if (p->naxes < 1 || p->naxes > RX_MAX_AXES) {
        fprintf(stderr, "search: problem outside the search's limits\n");
        return -1;
    }
    drop_size1_axes(p, &q, map);
    return search_reduced(&q, out);
}

int rx_search_time(const rx_problem_t *p, const redist_cost_model_t *model,
                   rx_time_result_t *out)
{
    rx_problem_t q;
    int map[RX_MAX_AXES], link[RX_MAX_AXES] = {0};
    memset(out, 0, sizeof *out);
    if (p->naxes < 1 || p->naxes > RX_MAX_AXES || !model) {
        fprintf(stderr, "search: problem outside the search's limits\n");
        return -1;
    }
    drop_size1_axes(p, &q, map);
    if (map_links(p, map, model, link)) {
        fprintf(stderr, "search: an axis link out of range\n");
        return -1;
    }
    int rc = search_time_reduced(&q, model, link, out);
    /* the path's axes in p's numbering */
    int inv[RX_MAX_AXES];
    for (int a = 0; a < p->naxes; a++)
        if (map[a] >= 0)
            inv[map[a]] = a;
    for (int i = 0; i < out->npath; i++) {
        rx_step_t *st = &out->step[i];
        redist_type_t t = st->after;
        if (st->axis >= 0)
            st->axis = inv[st->axis];
        st->after.partial = 0;
        for (int a = 0; a < q.naxes; a++)
            if (t.partial >> a & 1u)
                st->after.partial |= 1u << inv[a];
        for (int d = 0; d < t.ndims; d++)
            for (int k = 0; k < t.dim_naxes[d]; k++)
                st->after.dims[d][k] = (uint8_t)inv[t.dims[d][k]];
    }
    return rc;
}

static int search_reduced(const rx_problem_t *p, rx_result_t *out)
{
    prep_t P;
    dj_t S;
    memset(out, 0, sizeof *out);
    memset(&S, 0, sizeof S);
    int r = first_search(p, &P, &S, NULL, NULL, &out->ntypes,
                         &out->src_bytes, &out->dst_bytes, &out->caps_tried);
    if (r == 1) {
        unsigned ops;
        out->feasible = 1;
        out->peak_bytes = S.cap;
        out->recv_num = S.g[P.dst];
        out->recv_den = P.D;
        out->recv_ceil = (uint64_t)((S.g[P.dst] + P.D - 1) / P.D);
        out->collectives = S.c[P.dst];
        out->steps = describe_path(&S, P.src, P.dst, out->path,
                                   sizeof out->path, &ops, NULL, 0, NULL);
    }
    dj_free(&S);
    unprepare(&P);
    return r < 0 ? -1 : 0;
}

static int search_time_reduced(const rx_problem_t *p,
                               const redist_cost_model_t *cm, const int *link,
                               rx_time_result_t *out)
{
    prep_t P;
    dj_t S, S2;
    memset(out, 0, sizeof *out);
    memset(&S, 0, sizeof S);
    memset(&S2, 0, sizeof S2);
    int r = first_search(p, &P, &S, cm, link, &out->ntypes, &out->src_bytes,
                         &out->dst_bytes, &out->caps_tried);
    int rc = r < 0 ? -1 : 0;
    if (r != 1)
        goto done;
    unsigned ops;
    long double best = S.tval[P.dst];
    int cbest = S.c[P.dst];
    out->feasible = 1;
    out->peak_bytes = S.cap;
    out->time_s = (double)best;
    out->collectives = cbest;
    out->steps = describe_path(&S, P.src, P.dst, out->path, sizeof out->path,
                               &ops, out->step, RX_MAX_PATH, &out->npath);
    out->uses_exchange = (ops >> X_EXCHANGE) & 1u;
    out->uses_permute = (ops >> X_PERMUTE) & 1u;
    if (cbest + 2 > RX_MAX_ALT)
        goto done;
    /* the least time of each collective count at that peak */
    int layers = cbest + 2;
    rc = dj_init(&S2, &P, layers, cm, link);
    if (rc != 0)
        goto done;
    S2.cap = S.cap;
    if (dijkstra(&S2, P.src) != 1) {
        fprintf(stderr, "search: internal: the second run lost the target\n");
        rc = -1;
        goto done;
    }
    out->nalt = layers;
    for (int k = 0; k < layers; k++) {
        long x = P.dst * layers + k;
        long double tk = S2.done[x] ? S2.tval[x] : (long double)INFINITY;
        out->alt_time_s[k] = (double)tk;
        if (tk < best || (k < cbest && tk == best) ||
            (k == cbest && tk != best)) {
            fprintf(stderr, "search: internal: %d collectives give %.17Lg s,"
                            " the optimum %.17Lg s with %d\n",
                    k, tk, best, cbest);
            rc = -1;
        }
    }
done:
    dj_free(&S);
    dj_free(&S2);
    unprepare(&P);
    return rc;
}

/* ------------------------------------------------------ step replay */

static int xop_of(redist_op_t op)
{
    switch (op) {
    case REDIST_OP_SLICE: return X_SLICE;
    case REDIST_OP_ALL_GATHER: return X_ALL_GATHER;
    case REDIST_OP_ALL_TO_ALL: return X_ALL_TO_ALL;
    case REDIST_OP_REDUCE_SCATTER: return X_REDUCE_SCATTER;
    case REDIST_OP_ALL_REDUCE: return X_ALL_REDUCE;
    case REDIST_OP_PERMUTE: return X_PERMUTE;
    case REDIST_OP_EXCHANGE: return X_EXCHANGE;
    default: return -1;
    }
}

int rx_step_time(const rx_problem_t *p, const redist_cost_model_t *model,
                 redist_op_t op, int axis, const redist_type_t *before,
                 const redist_type_t *after, double *time_s)
{
    rx_problem_t pp = *p, q;
    int map[RX_MAX_AXES], link[RX_MAX_AXES] = {0};
    xt_t xb, xa;
    int xop = xop_of(op);
    *time_s = 0;
    if (xop < 0 || p->naxes < 1 || p->naxes > RX_MAX_AXES ||
        type_to_xt(p, before, &xb) || type_to_xt(p, after, &xa))
        return -1;
    pp.from = *before;
    pp.to = *after;
    drop_size1_axes(&pp, &q, map);
    if (map_links(p, map, model, link) || type_to_xt(&q, &q.from, &xb) ||
        type_to_xt(&q, &q.to, &xa))
        return -1;
    int qa = -1;
    if (xop != X_PERMUTE && xop != X_EXCHANGE) {
        if (axis < 0 || axis >= p->naxes)
            return -1;
        qa = map[axis];
        if (qa < 0)
            return 0; /* a size-1 axis only relabels */
    }
    uint64_t elems = 1;
    for (int d = 0; d < q.ndims; d++) {
        int64_t prod = 1;
        for (int k = 0; k < xb.n[d]; k++)
            prod *= q.size[xb.ax[d][k]];
        if (q.shape[d] % prod != 0)
            return -1;
        elems *= (uint64_t)(q.shape[d] / prod);
    }
    uint64_t D = lcm_sizes(&q);
    tvec_t tv;
    step_tvec(&q, link, D, xop, qa, elems * q.elem_size, &xb, &xa, &tv);
    *time_s = (double)tvec_value(model, D, &tv);
    return 0;
}

void rx_exchange_need(const rx_problem_t *p, const redist_type_t *from,
                      const redist_type_t *to, uint64_t *lack_bytes,
                      uint64_t *peers)
{
    xt_t x, y;
    *lack_bytes = 0;
    *peers = 0;
    if (type_to_xt(p, from, &x) == 0 && type_to_xt(p, to, &y) == 0)
        need_xt(p, &x, &y, lack_bytes, peers);
}
