/*
 * The solver: the exact optimum of the default objective (FORMATS.md
 * section 2) -- minimal peak local bytes, then minimal total received
 * bytes, then fewest collectives -- over the step table.
 *
 * Search space.  A state is a sharding type (dims lists + partial set).
 * Edges are the steps of the table; their cost is (received bytes,
 * collectives), compared lexicographically.  Received bytes are exact
 * rationals (all_reduce's 2(s-1)/s L need not be whole); we scale every
 * cost by D = lcm of the sizes of the axes that may be all-reduced, so all
 * costs are integers (128-bit, overflow-checked).
 *
 * Peak.  The peak of a path is the largest local size on it.  Every path
 * has peak >= B = max(src bytes, dst bytes).  We first search under the
 * cap B; if the target is unreachable there (divisibility can force a
 * larger intermediate), a bottleneck Dijkstra (key = largest local size
 * so far) finds the least reachable peak P, and we search again under P.
 * Within a cap, A* finds the least (bytes, collectives) path.
 *
 * Heuristic.  h(t) lower-bounds the bytes still to be received by device
 * 0 (all coordinates 0), which holds the first block of every dim in every
 * type: while a non-trivial partial axis that the target does not keep is
 * pending, device 0 must still receive at least one value for each element
 * of its target block (dst bytes); otherwise it must receive the part of
 * its target block it does not hold, dst - prod_i min(l_dst_i, l_t_i)
 * elements.  Each step's recv is at least the new data it brings to a
 * device (all_gather (s-1)L, all_to_all (s-1)/s L, permute <= L, slice 0;
 * a reduce_scatter's (s-1)/s L >= L/s and an all_reduce's 2(s-1)/s L >= L
 * cover the whole result), so h is consistent and A* is exact.
 *
 * Permute.  Its targets are all types with the same local shape and
 * partial set (a "group"), each at cost L.  Groups are enumerated once and
 * cached; a node fans out to its group only when it reaches the group
 * with a better (bytes, collectives) than any earlier fan-out, since all
 * members share L.
 *
 * Cost: O(V log V + E) per search, V the types visited under the cap.
 * Memory: O(V) nodes of ~80 bytes.  Ties are broken by generation order,
 * which depends on the spec alone, so every rank computes the same plan.
 */
#include <stdlib.h>
#include <string.h>

#include "solver.h"

typedef unsigned __int128 u128;

#define RD_SAMPLES 4
/* device coordinate combinations analysed per exchange edge */
#define RD_SOLVER_EXCHANGE_LIMIT 4096
#define RD_MAX_GROUP (1L << 20) /* permute targets enumerated per group */

typedef struct {
    rd_ctype t;
    u128 g;
    uint64_t L;
    int32_t steps;
    int32_t parent;
    int8_t op, dim, from_dim, to_dim, axis;
    uint8_t closed;
} node_t;

typedef struct {
    u128 f;        /* g + h (bytes) */
    u128 g;
    int32_t fs;    /* collectives so far + lower bound on those to come */
    int32_t steps; /* collectives so far (staleness check) */
    uint32_t seq;
    int32_t node;
} hent_t;

typedef struct {
    int64_t prod[REDIST_MAX_DIMS];
    uint32_t partial;
    int has_best;
    u128 best_g;
    int32_t best_steps;
    long nmembers;
    rd_ctype *members;
} group_t;

typedef struct {
    const rd_ctx *cx;
    int bottleneck; /* 1: minimise the largest local size on the path */
    uint64_t cap;
    u128 D;
    rd_ctype dst;
    int64_t dst_local[REDIST_MAX_DIMS];
    uint64_t dst_elems;
    uint32_t pend_nontrivial; /* partial axes of size > 1 to be removed */
    int nsamples;             /* devices whose needs bound h */
    int64_t coord[RD_SAMPLES][REDIST_MAX_AXES];
    int64_t dst_start[RD_SAMPLES][REDIST_MAX_DIMS];
    uint64_t max_states;

    node_t *nodes;
    long nnodes, capnodes;
    /* open addressing: (hash fingerprint << 32) | (node index + 1), 0
     * empty; the fingerprint spares most key comparisons */
    uint64_t *table;
    size_t tmask;

    hent_t *heap;
    long nheap, capheap;
    uint32_t seq;

    group_t *groups;
    long ngroups, capgroups;
    int32_t *gtable;
    size_t gmask;

    int32_t cur; /* node being expanded */
    rd_ctype here; /* its type (a copy: the node array may move) */
    const redist_cost_model_t *cm; /* time objective when non-NULL */
    double beta_min;               /* cheapest byte over any link */
    int restricted; /* a permute group was too large to enumerate */
    redist_status_t status;
} search_t;

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* MurmurHash3-style mixing of 8-byte words, then its 64-bit finaliser. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t k;
        memcpy(&k, b + i, 8);
        k *= 0x87c37b91114253d5ull;
        k = rotl64(k, 31);
        k *= 0x4cf5ad432745937full;
        h ^= k;
        h = rotl64(h, 27) * 5 + 0x52dce729;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static int table_grow(int32_t **tab, size_t *mask, long n,
                      const void *(*keyof)(search_t *, int32_t), size_t klen,
                      search_t *S)
{
    size_t ncap = (*mask + 1) * 2;
    int32_t *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (long i = 0; i < n; i++) {
        size_t h = hash_bytes(keyof(S, (int32_t)i), klen) & (ncap - 1);
        while (nt[h])
            h = (h + 1) & (ncap - 1);
        nt[h] = (int32_t)i + 1;
    }
    free(*tab);
    *tab = nt;
    *mask = ncap - 1;
    return 0;
}

static int node_table_grow(search_t *S)
{
    size_t ncap = (S->tmask + 1) * 2;
    uint64_t *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (long i = 0; i < S->nnodes; i++) {
        uint64_t h = hash_bytes(&S->nodes[i].t, sizeof(rd_ctype));
        size_t slot = h & (ncap - 1);
        while (nt[slot])
            slot = (slot + 1) & (ncap - 1);
        nt[slot] = (h >> 32 << 32) | (uint64_t)(i + 1);
    }
    free(S->table);
    S->table = nt;
    S->tmask = ncap - 1;
    return 0;
}

/* Find the node of type t, creating it when absent.  *created set. */
static int32_t node_get(search_t *S, const rd_ctype *t, int *created)
{
    uint64_t hv = hash_bytes(t, sizeof *t), fp = hv >> 32 << 32;
    size_t h = hv & S->tmask;
    while (S->table[h]) {
        uint64_t e = S->table[h];
        if ((e >> 32 << 32) == fp) {
            int32_t i = (int32_t)(e & 0xffffffffu) - 1;
            if (memcmp(&S->nodes[i].t, t, sizeof *t) == 0) {
                *created = 0;
                return i;
            }
        }
        h = (h + 1) & S->tmask;
    }
    if ((uint64_t)S->nnodes >= S->max_states) {
        S->status = REDIST_ERR_LIMIT;
        return -1;
    }
    if (S->nnodes == S->capnodes) {
        long nc = S->capnodes * 2;
        node_t *nn = realloc(S->nodes, (size_t)nc * sizeof *nn);
        if (!nn) {
            S->status = REDIST_ERR_NOMEM;
            return -1;
        }
        S->nodes = nn;
        S->capnodes = nc;
    }
    int32_t i = (int32_t)S->nnodes++;
    memset(&S->nodes[i], 0, sizeof S->nodes[i]);
    S->nodes[i].t = *t;
    S->nodes[i].parent = -1;
    S->table[h] = fp | (uint64_t)(i + 1);
    if ((size_t)S->nnodes * 2 > S->tmask + 1 && node_table_grow(S)) {
        S->status = REDIST_ERR_NOMEM;
        return -1;
    }
    *created = 1;
    return i;
}

static int hless(const hent_t *a, const hent_t *b)
{
    if (a->f != b->f)
        return a->f < b->f;
    if (a->fs != b->fs)
        return a->fs < b->fs;
    if (a->g != b->g)
        return a->g > b->g; /* deeper first among equals */
    return a->seq < b->seq;
}

static int heap_push(search_t *S, hent_t e)
{
    if (S->nheap == S->capheap) {
        long nc = S->capheap * 2;
        hent_t *nh = realloc(S->heap, (size_t)nc * sizeof *nh);
        if (!nh)
            return -1;
        S->heap = nh;
        S->capheap = nc;
    }
    long i = S->nheap++;
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!hless(&e, &S->heap[p]))
            break;
        S->heap[i] = S->heap[p];
        i = p;
    }
    S->heap[i] = e;
    return 0;
}

static hent_t heap_pop(search_t *S)
{
    hent_t top = S->heap[0];
    hent_t last = S->heap[--S->nheap];
    long i = 0, n = S->nheap;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hless(&S->heap[c + 1], &S->heap[c]))
            c++;
        if (!hless(&S->heap[c], &last))
            break;
        S->heap[i] = S->heap[c];
        i = c;
    }
    if (n > 0)
        S->heap[i] = last;
    return top;
}

static uint64_t local_bytes(const rd_ctx *cx, const rd_ctype *t,
                            int64_t local[])
{
    uint64_t e = 1;
    rd_ctype_local(cx, t, local);
    for (int i = 0; i < cx->ndims; i++)
        e *= (uint64_t)local[i];
    return e * cx->elem_size;
}

/* Start of the block a device with coordinates `coord` holds along each
 * dim in type t (block length local[i]). */
static void block_start(const rd_ctx *cx, const rd_ctype *t,
                        const int64_t local[], const int64_t coord[],
                        int64_t start[])
{
    int p = 0;
    for (int i = 0; i < cx->ndims; i++) {
        int64_t b = 0;
        for (int k = 0; k < t->cnt[i]; k++) {
            int a = t->seq[p++];
            b = b * cx->size[a] + coord[a];
        }
        start[i] = b * local[i];
    }
}

/* What `elems` elements still to be received cost at least: scaled bytes,
 * or (time objective) femtoseconds at the cheapest link, rounded down. */
static u128 bound_cost(const search_t *S, uint64_t elems)
{
    if (S->cm)
        return (u128)((double)elems * (double)S->cx->elem_size *
                      S->beta_min * 1e15);
    return (u128)elems * S->cx->elem_size * S->D;
}

static u128 time_fs(double seconds)
{
    return seconds <= 0 ? 0 : (u128)(seconds * 1e15 + 0.5);
}

static u128 heuristic(const search_t *S, const rd_ctype *t,
                      const int64_t local[])
{
    if (S->bottleneck)
        return 0;
    if (t->partial & S->pend_nontrivial)
        return bound_cost(S, S->dst_elems);
    /* The most any sample device still lacks of its target block. */
    uint64_t worst = 0;
    for (int d = 0; d < S->nsamples; d++) {
        int64_t start[REDIST_MAX_DIMS];
        uint64_t common = 1;
        block_start(S->cx, t, local, S->coord[d], start);
        for (int i = 0; i < S->cx->ndims && common; i++) {
            int64_t lo = start[i] > S->dst_start[d][i] ? start[i]
                                                       : S->dst_start[d][i];
            int64_t e1 = start[i] + local[i];
            int64_t e2 = S->dst_start[d][i] + S->dst_local[i];
            int64_t hi = e1 < e2 ? e1 : e2;
            common *= hi > lo ? (uint64_t)(hi - lo) : 0;
        }
        if (S->dst_elems - common > worst)
            worst = S->dst_elems - common;
    }
    return bound_cost(S, worst);
}

/* Lower bound on the collectives still needed: 0 when slices alone could
 * finish (every dim's list is a prefix of the target's, same partial set,
 * the missing axes replicated), else 1.  With the byte bound it forms a
 * consistent lexicographic heuristic: a slice never turns a type that
 * slices cannot finish into one they can. */
static int32_t steps_bound(const search_t *S, const rd_ctype *t)
{
    if (S->bottleneck)
        return 0;
    if (t->partial != S->dst.partial)
        return 1;
    int p = 0, q = 0;
    for (int i = 0; i < S->cx->ndims; i++) {
        if (t->cnt[i] > S->dst.cnt[i])
            return 1;
        if (memcmp(&t->seq[p], &S->dst.seq[q], t->cnt[i]) != 0)
            return 1;
        p += t->cnt[i];
        q += S->dst.cnt[i];
    }
    return 0;
}

static void relax(search_t *S, const rd_ctype *t, int op, int dim, int from,
                  int to, int axis, u128 cost, int collective)
{
    int64_t local[REDIST_MAX_DIMS];
    if (S->status)
        return;
    const node_t *u = &S->nodes[S->cur];
    uint64_t L = local_bytes(S->cx, t, local);
    if (L > S->cap)
        return;
    u128 g;
    int32_t steps = u->steps + collective;
    if (S->bottleneck)
        g = u->g > L ? u->g : L;
    else if (__builtin_add_overflow(u->g, cost, &g)) {
        S->status = REDIST_ERR_OVERFLOW;
        return;
    }
    int created;
    int32_t cur = S->cur;
    int32_t v = node_get(S, t, &created);
    if (v < 0)
        return;
    node_t *n = &S->nodes[v];
    if (!created) {
        if (n->closed)
            return;
        if (S->bottleneck ? g >= n->g
                          : (g > n->g || (g == n->g && steps >= n->steps)))
            return;
    }
    n->g = g;
    n->steps = steps;
    n->L = L;
    n->parent = cur;
    n->op = (int8_t)op;
    n->dim = (int8_t)dim;
    n->from_dim = (int8_t)from;
    n->to_dim = (int8_t)to;
    n->axis = (int8_t)axis;
    hent_t e = {g + heuristic(S, t, local), g,
                S->bottleneck ? 0 : steps + steps_bound(S, t),
                S->bottleneck ? 0 : steps, S->seq++, v};
    if (heap_push(S, e))
        S->status = REDIST_ERR_NOMEM;
}

static void on_step(void *user, const rd_step *st, const rd_ctype *out)
{
    search_t *S = user;
    const node_t *u = &S->nodes[S->cur];
    unsigned __int128 num;
    uint64_t den;
    u128 cost = 0;
    if (!S->bottleneck) {
        rd_step_recv(S->cx, st, &S->here, u->L, &num, &den);
        if (S->cm) {
            uint64_t recv = (uint64_t)((num + den - 1) / den);
            cost = time_fs(rd_step_time(S->cx, S->cm, st, &S->here, u->L, out,
                                        recv, 0));
        } else {
            if (S->D % den) {
                S->status = REDIST_ERR_OVERFLOW;
                return;
            }
            cost = num * (S->D / den);
        }
    }
    relax(S, out, st->op, st->dim, st->from_dim, st->to_dim, st->axis, cost,
          rd_step_kinds[st->op].collective);
}

/* Time objective: one exchange straight into the target. */
static void expand_exchange(search_t *S)
{
    uint64_t elems, peers;
    if (!S->cm || S->bottleneck || S->here.partial != S->dst.partial ||
        memcmp(&S->here, &S->dst, sizeof S->dst) == 0)
        return;
    if (rd_exchange_need(S->cx, &S->here, &S->dst, RD_SOLVER_EXCHANGE_LIMIT,
                         &elems, &peers))
        return; /* too many devices to analyse: not offered */
    rd_step st;
    memset(&st, 0, sizeof st);
    st.op = REDIST_OP_EXCHANGE;
    st.axis = -1;
    st.after = S->dst;
    const node_t *u = &S->nodes[S->cur];
    u128 cost = time_fs(rd_step_time(S->cx, S->cm, &st, &S->here, u->L,
                                     &S->dst, elems * S->cx->elem_size,
                                     peers));
    relax(S, &S->dst, REDIST_OP_EXCHANGE, -1, -1, -1, -1, cost, 1);
}

static const void *group_key(search_t *S, int32_t i)
{
    return &S->groups[i].prod;
}

typedef struct {
    int64_t prod[REDIST_MAX_DIMS];
    uint32_t partial;
} gkey_t;

static group_t *group_get(search_t *S, const rd_ctype *t)
{
    gkey_t k;
    memset(&k, 0, sizeof k);
    int p = 0;
    for (int i = 0; i < S->cx->ndims; i++) {
        k.prod[i] = 1;
        for (int j = 0; j < t->cnt[i]; j++)
            k.prod[i] *= S->cx->size[t->seq[p++]];
    }
    k.partial = t->partial;
    size_t klen = offsetof(group_t, partial) + sizeof(uint32_t);
    size_t h = hash_bytes(&k, klen) & S->gmask;
    while (S->gtable[h]) {
        group_t *g = &S->groups[S->gtable[h] - 1];
        if (memcmp(g->prod, k.prod, sizeof k.prod) == 0 &&
            g->partial == k.partial)
            return g;
        h = (h + 1) & S->gmask;
    }
    if (S->ngroups == S->capgroups) {
        long nc = S->capgroups * 2;
        group_t *ng = realloc(S->groups, (size_t)nc * sizeof *ng);
        if (!ng)
            return NULL;
        S->groups = ng;
        S->capgroups = nc;
    }
    group_t *g = &S->groups[S->ngroups];
    memset(g, 0, sizeof *g);
    memcpy(g->prod, k.prod, sizeof k.prod);
    g->partial = k.partial;
    g->nmembers = rd_permute_targets(S->cx, t, RD_MAX_GROUP, &g->members);
    if (g->nmembers == -2) {
        /* Too many types share this local shape to enumerate (e.g. 16
         * axes in one dim: 16! orders).  Permute only into the target
         * when it is in the group; the plan is then optimal among plans
         * whose permutes go to the target (documented limitation). */
        g->members = malloc(sizeof *g->members);
        if (!g->members)
            return NULL;
        g->nmembers = 0;
        int64_t lt[REDIST_MAX_DIMS], ld[REDIST_MAX_DIMS];
        rd_ctype_local(S->cx, t, lt);
        rd_ctype_local(S->cx, &S->dst, ld);
        if (t->partial == S->dst.partial &&
            memcmp(lt, ld, sizeof(int64_t) * (size_t)S->cx->ndims) == 0)
            g->members[g->nmembers++] = S->dst;
        S->restricted = 1;
    } else if (g->nmembers < 0) {
        g->members = NULL;
        return NULL;
    }
    S->ngroups++;
    S->gtable[h] = (int32_t)S->ngroups;
    if ((size_t)S->ngroups * 2 > S->gmask + 1 &&
        table_grow(&S->gtable, &S->gmask, S->ngroups, group_key, klen, S))
        return NULL;
    return &S->groups[S->ngroups - 1];
}

static void expand_permute(search_t *S)
{
    const node_t *u = &S->nodes[S->cur];
    group_t *g = group_get(S, &S->here);
    if (!g) {
        if (!S->status)
            S->status = REDIST_ERR_NOMEM;
        return;
    }
    if (g->nmembers == 0)
        return;
    if (g->has_best) {
        if (S->bottleneck ? u->g >= g->best_g
                          : (u->g > g->best_g ||
                             (u->g == g->best_g && u->steps >= g->best_steps)))
            return;
    }
    g->has_best = 1;
    g->best_g = u->g;
    g->best_steps = u->steps;
    unsigned __int128 num;
    uint64_t den;
    rd_step pst;
    memset(&pst, 0, sizeof pst);
    pst.op = REDIST_OP_PERMUTE;
    pst.axis = -1;
    uint64_t L = u->L;
    rd_step_recv(S->cx, &pst, &S->here, L, &num, &den);
    u128 cost = S->bottleneck ? 0 : num * S->D;
    long n = g->nmembers;
    rd_ctype *members = g->members; /* stable: groups only realloc in get */
    for (long i = 0; i < n && !S->status; i++) {
        if (memcmp(&members[i], &S->here, sizeof(rd_ctype)) == 0)
            continue;
        if (S->cm && !S->bottleneck)
            cost = time_fs(rd_step_time(S->cx, S->cm, &pst, &S->here, L,
                                        &members[i], L, 0));
        relax(S, &members[i], REDIST_OP_PERMUTE, -1, -1, -1, -1, cost, 1);
    }
}

static void search_free(search_t *S)
{
    free(S->nodes);
    free(S->table);
    free(S->heap);
    for (long i = 0; i < S->ngroups; i++)
        free(S->groups[i].members);
    free(S->groups);
    free(S->gtable);
}

/* Run one search.  Returns REDIST_OK and sets *goal (-1: unreachable). */
static redist_status_t search_run(search_t *S, const rd_ctype *src,
                                  int32_t *goal)
{
    *goal = -1;
    S->capnodes = 256;
    S->nodes = malloc((size_t)S->capnodes * sizeof *S->nodes);
    S->tmask = 511;
    S->table = calloc(S->tmask + 1, sizeof *S->table);
    S->capheap = 256;
    S->heap = malloc((size_t)S->capheap * sizeof *S->heap);
    S->capgroups = 16;
    S->groups = malloc((size_t)S->capgroups * sizeof *S->groups);
    S->gmask = 63;
    S->gtable = calloc(S->gmask + 1, sizeof *S->gtable);
    if (!S->nodes || !S->table || !S->heap || !S->groups || !S->gtable)
        return REDIST_ERR_NOMEM;
    int created;
    int64_t local[REDIST_MAX_DIMS];
    int32_t s = node_get(S, src, &created);
    if (s < 0)
        return S->status;
    S->nodes[s].L = local_bytes(S->cx, src, local);
    S->nodes[s].g = S->bottleneck ? S->nodes[s].L : 0;
    S->nodes[s].op = -1;
    hent_t e = {S->nodes[s].g + heuristic(S, src, local), S->nodes[s].g,
                steps_bound(S, src), 0, S->seq++, s};
    if (heap_push(S, e))
        return REDIST_ERR_NOMEM;
    while (S->nheap > 0) {
        hent_t top = heap_pop(S);
        node_t *u = &S->nodes[top.node];
        if (u->closed || u->g != top.g ||
            (!S->bottleneck && u->steps != top.steps))
            continue;
        u->closed = 1;
        if (memcmp(&u->t, &S->dst, sizeof S->dst) == 0) {
            *goal = top.node;
            return REDIST_OK;
        }
        S->cur = top.node;
        /* A copy: relaxing may grow (move) the node array. */
        S->here = u->t;
        for (int k = 0; k < REDIST_OP_COUNT && !S->status; k++)
            if (rd_step_kinds[k].enumerate)
                rd_step_kinds[k].enumerate(S->cx, &S->here, on_step, S);
        if (!S->status)
            expand_permute(S);
        if (!S->status)
            expand_exchange(S);
        if (S->status)
            return S->status;
    }
    return REDIST_OK;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void search_init(search_t *S, const rd_ctx *cx, const rd_ctype *dst,
                        uint32_t src_partial, uint64_t max_states,
                        const redist_cost_model_t *cm)
{
    memset(S, 0, sizeof *S);
    S->cm = cm;
    if (cm) {
        S->beta_min = cm->beta[0];
        for (int l = 1; l < REDIST_LINK_COUNT; l++)
            if (cm->beta[l] < S->beta_min)
                S->beta_min = cm->beta[l];
    }
    S->cx = cx;
    S->dst = *dst;
    S->max_states = max_states;
    rd_ctype_local(cx, dst, S->dst_local);
    S->dst_elems = rd_ctype_elems(cx, dst);
    uint64_t D = 1;
    for (int a = 0; a < cx->naxes; a++) {
        if (!((src_partial & ~dst->partial) >> a & 1u))
            continue;
        uint64_t s = (uint64_t)cx->size[a];
        D = D / gcd_u64(D, s) * s; /* <= device count <= 2^31 */
        if (s > 1)
            S->pend_nontrivial |= 1u << a;
    }
    S->D = D;
    /* Sample devices for h: all coordinates 0; the last coordinate on odd
     * axes; coordinate 1 everywhere; the middle coordinate on even axes. */
    S->nsamples = RD_SAMPLES;
    for (int a = 0; a < cx->naxes; a++) {
        int64_t s = cx->size[a];
        S->coord[0][a] = 0;
        S->coord[1][a] = a % 2 ? s - 1 : 0;
        S->coord[2][a] = s > 1 ? 1 : 0;
        S->coord[3][a] = a % 2 ? 0 : s / 2;
    }
    for (int d = 0; d < S->nsamples; d++)
        block_start(cx, dst, S->dst_local, S->coord[d], S->dst_start[d]);
}

redist_status_t rd_solve(const redist_spec_t *spec,
                         const redist_plan_options_t *opts, rd_step **path,
                         int *nsteps, rd_solve_info *info,
                         redist_error_t *err)
{
    rd_ctx cx;
    rd_ctype src, dst;
    search_t S;
    int32_t goal;
    redist_status_t st;
    uint64_t max_states = opts && opts->max_states ? opts->max_states
                                                   : RD_DEFAULT_MAX_STATES;
    uint64_t max_peak = opts ? opts->max_peak_bytes : 0;
    redist_cost_model_t defaults;
    const redist_cost_model_t *cm = NULL;
    if (opts && opts->objective == REDIST_OBJECTIVE_TIME) {
        if (opts->cost)
            cm = opts->cost;
        else {
            redist_cost_model_default(&defaults);
            cm = &defaults;
        }
    } else if (opts && opts->objective != REDIST_OBJECTIVE_BYTES) {
        return rd_error(err, REDIST_ERR_INVALID, NULL, "objective",
                        "unknown objective %d", (int)opts->objective);
    }
    char tf[256];

    rd_ctx_init(&cx, spec);
    rd_ctype_from_type(&src, &spec->from);
    rd_ctype_from_type(&dst, &spec->to);
    memset(info, 0, sizeof *info);
    uint32_t extra = spec->to.partial & ~spec->from.partial;
    if (extra) {
        int a = __builtin_ctz(extra);
        return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, "to.partial",
                        "axis \"%s\" is partial in the target but not in the "
                        "source; no collective creates pending reductions",
                        spec->mesh.name[a]);
    }
    uint64_t bound = spec->src_bytes > spec->dst_bytes ? spec->src_bytes
                                                       : spec->dst_bytes;
    if (max_peak && max_peak < bound)
        return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                        "no plan within max peak %llu bytes: the %s alone "
                        "holds %llu bytes per device",
                        (unsigned long long)max_peak,
                        spec->src_bytes >= spec->dst_bytes ? "source"
                                                           : "target",
                        (unsigned long long)bound);

    /* Pass 1: under the memory bound. */
    search_init(&S, &cx, &dst, spec->from.partial, max_states, cm);
    S.cap = bound;
    st = search_run(&S, &src, &goal);
    info->states += (uint64_t)S.nnodes;
    if (st == REDIST_OK && goal < 0) {
        /* Pass 2: the least reachable peak. */
        search_t B;
        int32_t bgoal;
        search_free(&S);
        search_init(&B, &cx, &dst, spec->from.partial, max_states, NULL);
        B.bottleneck = 1;
        B.cap = UINT64_MAX;
        st = search_run(&B, &src, &bgoal);
        info->states += (uint64_t)B.nnodes;
        uint64_t peak = bgoal >= 0 ? (uint64_t)B.nodes[bgoal].g : 0;
        search_free(&B);
        if (st == REDIST_OK && bgoal < 0)
            st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                          "internal: the target %s is unreachable",
                          redist_type_format(&spec->to, &spec->mesh, tf,
                                             sizeof tf));
        if (st == REDIST_OK && max_peak && peak > max_peak)
            st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                          "no plan within max peak %llu bytes: divisibility "
                          "forces a peak of %llu bytes per device",
                          (unsigned long long)max_peak,
                          (unsigned long long)peak);
        if (st)
            goto out_status;
        search_init(&S, &cx, &dst, spec->from.partial, max_states, cm);
        S.cap = peak;
        st = search_run(&S, &src, &goal);
        info->states += (uint64_t)S.nnodes;
        if (st == REDIST_OK && goal < 0)
            st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                          "internal: no path under the least peak");
    }
    if (st)
        goto fail;
    /* Walk back. */
    int n = 0;
    for (int32_t v = goal; S.nodes[v].parent >= 0; v = S.nodes[v].parent)
        n++;
    rd_step *p = calloc((size_t)(n ? n : 1), sizeof *p);
    if (!p) {
        st = REDIST_ERR_NOMEM;
        goto fail;
    }
    int k = n;
    for (int32_t v = goal; S.nodes[v].parent >= 0; v = S.nodes[v].parent) {
        rd_step *s = &p[--k];
        const node_t *nd = &S.nodes[v];
        s->op = nd->op;
        s->dim = nd->dim;
        s->from_dim = nd->from_dim;
        s->to_dim = nd->to_dim;
        s->axis = nd->axis;
        s->after = nd->t;
    }
    info->D = (uint64_t)S.D;
    search_free(&S);
    *path = p;
    *nsteps = n;
    return REDIST_OK;
fail:
    search_free(&S);
out_status:
    if (st == REDIST_ERR_LIMIT)
        return rd_error(err, st, NULL, NULL,
                        "the search visited more than %llu types without "
                        "finishing; raise max_states",
                        (unsigned long long)max_states);
    if (st == REDIST_ERR_NOMEM)
        return rd_error(err, st, NULL, NULL, "out of memory while planning");
    if (st == REDIST_ERR_OVERFLOW)
        return rd_error(err, st, NULL, NULL,
                        "byte counts overflow 128 bits while planning");
    return st;
}
