/*
 * The solver: the exact optimum of the default objective (doc/spec-format.md
 * section 2) -- minimal peak local bytes, then minimal total received
 * bytes, then fewest collectives -- over the step table (and of the time
 * objective, with exchange: its costs are the modelled time, then the
 * bytes, in one integer, tcost).  doc/design.md has the argument.
 *
 * Search space.  A state is a sharding type (dims lists + partial set) of
 * the problem WITHOUT its size-1 axes: they never change a local shape or
 * a block, so types differing only in them are equivalent and the path is
 * renamed back at the end (the last `after` is the exact target).  Edges
 * are the steps of the table; their cost is (received bytes, collectives),
 * compared lexicographically.  Received bytes are exact rationals
 * (all_reduce's 2(s-1)/s L need not be whole); we scale every cost by D =
 * lcm of the sizes of the axes that may be all-reduced, so all costs are
 * integers (128-bit, overflow-checked).
 *
 * Peak.  Every path has peak >= B = max(src bytes, dst bytes).  We first
 * search under the cap B; if the target is unreachable there, a
 * bottleneck Dijkstra (key = largest local size so far) finds the least
 * reachable peak P, and we search again under P.  Within a cap, A* finds
 * the least (bytes, collectives) path.
 *
 * Heuristic (consistent).  Bytes: the most any of four sample devices
 * still lacks of its target block (while a reduction is pending, its whole
 * target block), and the cost of the pending reductions, G(Q-1)/(UQ) in
 * any order.  Time: one message of what that device lacks (doc/design.md,
 * "The time objective").  Collectives: one per pending reduction, plus one when a
 * dim's list is not a prefix of the target's.
 *
 * Permute.  Its targets are all types with the same local shape and
 * partial set (a "group"), each at cost L.  Groups are enumerated once and
 * cached; a node fans out to its group only when it reaches the group
 * with a better (bytes, collectives) than any earlier fan-out, since all
 * members share L (under the time objective only when every axis is on
 * one link level: else a permute's link depends on the pair of types, and
 * every node fans out).  Groups of more than 2^20 members only offer the
 * target (the plan is then not proven optimal).
 *
 * Budget.  A constructive plan (construct.c), built first without
 * search, bounds the search from above (relaxations beyond its cost are
 * not made) and is the answer, with lower bounds and stats.optimal 0,
 * when max_states runs out.
 *
 * Uneven specs (doc/spec-format.md section 7; doc/uneven.md).  A state is a type
 * with anchor bits (rd_ctype.anchor: which dims take their layout from the
 * source; src/core/layout.c), only where they change the layout.  The
 * step kinds enumerate without divisibility; each edge is evaluated per
 * device on the two layouts (rd_ustep_eval): locality decides whether it
 * exists, its cost is the largest per-device recv (or the slowest
 * device's modelled time), and pass 1 keeps every device within
 * max(src_d, dst_d).  The search is A* with the sample devices' lack of
 * their target blocks on the anchored layouts as h (uneven_heuristic; 0
 * while a reduction is pending), no permute group dominance and no
 * constructive plan (the budget running out is REDIST_ERR_LIMIT).  Even
 * specs never take this path.
 *
 * Refused relaxations are not computed.  Most edges lead to types already
 * reached at least as cheaply, and their exact cost is the expensive part
 * (per device): an edge into a closed type is not evaluated, and an
 * exact evaluation -- the time objective's exchange (rd_exchange_need_until)
 * and every uneven edge (rd_ustep_eval_until) -- stops as soon as the
 * maxima over the devices seen so far, which only grow, make relax refuse
 * it; relax looks the target type up before computing its heuristic.
 * Only relaxations that change nothing are skipped, so the nodes,
 * the queue and the plan are those of the full evaluation.  Uneven
 * searches build each type's anchor bits and anchored layout once.
 *
 * Cost: O(V log V + E) per search, V the types visited under the cap;
 * an exchange costs up to the product of the sizes of the axes either
 * type shards (per component, exchange_need.c), an uneven edge up to
 * that many devices.  Memory: O(V) nodes of ~80 bytes, plus a layout per anchored
 * type met (uneven).  Ties are broken by generation order,
 * which depends on the spec alone, so every rank computes the same plan.
 *
 * Size.  This file (about 1,750 lines) stays long on purpose: the node
 * table, the heap, the heuristic, the edge generation, the permute groups
 * and the driver all work on one search state (search_t) and its
 * invariants (the cap, the upper bound, the scale D, the anchored uneven
 * states), which would otherwise become an internal header of a dozen
 * fields every part writes.  The driver keeps what both passes share in
 * one solve_t (the problem without its size-1 axes, the constructive
 * plan, the bounds) and runs in named parts: set-up, pass 1 under B, pass
 * 2 under P, the verdict between the path and the constructive plan, the
 * emitted steps.  What stands alone is apart: the constructive plan
 * (construct.c), the uneven per-device evaluation (uneven.c).
 */
#include <stdlib.h>
#include <string.h>

#include "solver.h"

typedef unsigned __int128 u128;

#define RD_SAMPLES 4
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
    /* 1: the exchange from `node` into the target, keyed by a lower bound
     * on its cost; its exact cost is computed only when it is popped */
    int32_t lazy;
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

/* Uneven specs: a type's anchor bits (entry with anchor 0) and the layout
 * of a type with its anchor, built once per search. */
typedef struct {
    rd_ctype t;
    unsigned bits;
    uint8_t has_bits, has_lay;
    rd_layout lay;
} lent_t;

/* Entries found by key: an array of esize-byte entries whose first klen
 * bytes are their key, and an open-addressed table over it of entry
 * index + 1 (0 empty), kept at most half full. */
typedef struct {
    void *e;
    long n, cap;
    size_t esize, klen;
    int32_t *tab;
    size_t mask;
} keyed_t;

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
    uint64_t G; /* global bytes of the array */
    /* An upper bound from a known plan within the cap (the constructive
     * plan): relaxations whose (f, fs) exceeds it cannot lead to a better
     * plan and are not made. */
    int has_ub;
    u128 ub_g;
    int32_t ub_steps;
    u128 last_f; /* key of the last node taken from the queue */

    node_t *nodes;
    long nnodes, capnodes;
    /* open addressing: (hash fingerprint << 32) | (node index + 1), 0
     * empty; the fingerprint spares most key comparisons */
    uint64_t *table;
    size_t tmask;

    hent_t *heap;
    long nheap, capheap;
    uint32_t seq;

    keyed_t groups; /* group_t, keyed by (prod, partial) */

    int32_t cur; /* node being expanded */
    rd_ctype here; /* its type (a copy: the node array may move) */
    const redist_cost_model_t *cm; /* time objective when non-NULL */
    double beta_min; /* cheapest byte over the mesh axes' links */
    u128 alpha_min;  /* cheapest message over them, femtoseconds, down */
    double alpha_min_s; /* the same in seconds, exact */
    /* permutes into a group's members cost the same from every member
     * (bytes objective; time with every axis on one link level) */
    int group_dominance;
    int tk;  /* time units of 2^tk femtoseconds (tcost) */
    u128 ps; /* a picosecond in those units, at least 1 */
    int restricted; /* a permute group was too large to enumerate */
    int32_t dst_node; /* the target's node once created, else -1 */
    redist_status_t status;
    /* Uneven specs (cx->uneven): states are (type, anchor bits), edges are
     * evaluated per device on layouts (uneven_edge), h: uneven_heuristic. */
    const rd_uctx *u;
    int per_device_cap; /* every device within max(src_d, dst_d) */
    rd_layout here_lay; /* layout of the node being expanded (cached) */
    keyed_t lc;         /* the layout cache: lent_t, keyed by t */
    uint64_t u_L;       /* most bytes a device holds in the state relaxed */
    uint64_t src_L;     /* the same for the source */
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

/* arr (*cap entries of esize bytes) twice as large: the new array, *cap
 * doubled; NULL out of memory (arr and *cap unchanged). */
static void *grow_double(void *arr, long *cap, size_t esize)
{
    void *na = realloc(arr, (size_t)*cap * 2 * esize);
    if (na)
        *cap *= 2;
    return na;
}

/* An empty K of room for cap entries in a table of tabsize (a power of
 * two) slots: 0, -1 out of memory (K then holds nothing). */
static int keyed_init(keyed_t *K, size_t esize, size_t klen, long cap,
                      size_t tabsize)
{
    memset(K, 0, sizeof *K);
    K->esize = esize;
    K->klen = klen;
    K->cap = cap;
    K->mask = tabsize - 1;
    K->e = malloc((size_t)cap * esize);
    K->tab = calloc(tabsize, sizeof *K->tab);
    if (K->e && K->tab)
        return 0;
    free(K->e);
    free(K->tab);
    memset(K, 0, sizeof *K);
    return -1;
}

static void *keyed_at(const keyed_t *K, long i)
{
    return (char *)K->e + (size_t)i * K->esize;
}

/* The index of the entry of key `key`, or -1 with *slot the free slot
 * where keyed_add puts it. */
static long keyed_find(const keyed_t *K, const void *key, size_t *slot)
{
    size_t h = hash_bytes(key, K->klen) & K->mask;
    while (K->tab[h]) {
        long i = K->tab[h] - 1;
        if (memcmp(keyed_at(K, i), key, K->klen) == 0)
            return i;
        h = (h + 1) & K->mask;
    }
    *slot = h;
    return -1;
}

/* The next entry, zeroed but for its key, not yet counted (keyed_add
 * counts it): NULL out of memory. */
static void *keyed_next(keyed_t *K, const void *key)
{
    if (K->n == K->cap) {
        void *ne = grow_double(K->e, &K->cap, K->esize);
        if (!ne)
            return NULL;
        K->e = ne;
    }
    void *e = keyed_at(K, K->n);
    memset(e, 0, K->esize);
    memcpy(e, key, K->klen);
    return e;
}

/* Count the entry keyed_next gave, at the slot keyed_find named: 0, -1
 * out of memory (growing the table). */
static int keyed_add(keyed_t *K, size_t slot)
{
    K->tab[slot] = (int32_t)++K->n;
    if ((size_t)K->n * 2 <= K->mask + 1)
        return 0;
    size_t ncap = (K->mask + 1) * 2;
    int32_t *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (long i = 0; i < K->n; i++) {
        size_t h = hash_bytes(keyed_at(K, i), K->klen) & (ncap - 1);
        while (nt[h])
            h = (h + 1) & (ncap - 1);
        nt[h] = (int32_t)i + 1;
    }
    free(K->tab);
    K->tab = nt;
    K->mask = ncap - 1;
    return 0;
}

static void keyed_free(keyed_t *K)
{
    free(K->e);
    free(K->tab);
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

/* The node of type t, or -1 with *slot the free slot of the table
 * where it goes and *fp its fingerprint there. */
static int32_t node_probe(const search_t *S, const rd_ctype *t, size_t *slot,
                          uint64_t *fp)
{
    uint64_t hv = hash_bytes(t, sizeof *t);
    size_t h = hv & S->tmask;
    *fp = hv >> 32 << 32;
    while (S->table[h]) {
        uint64_t e = S->table[h];
        if ((e >> 32 << 32) == *fp) {
            int32_t i = (int32_t)(e & 0xffffffffu) - 1;
            if (memcmp(&S->nodes[i].t, t, sizeof *t) == 0)
                return i;
        }
        h = (h + 1) & S->tmask;
    }
    *slot = h;
    return -1;
}

/* A new node of type t at the free slot and fingerprint node_probe gave
 * (the table unchanged since): its index, or -1 (S->status set). */
static int32_t node_insert(search_t *S, const rd_ctype *t, size_t h,
                           uint64_t fp)
{
    if ((uint64_t)S->nnodes >= S->max_states) {
        S->status = REDIST_ERR_LIMIT;
        return -1;
    }
    if (S->nnodes == S->capnodes) {
        node_t *nn = grow_double(S->nodes, &S->capnodes, sizeof *nn);
        if (!nn) {
            S->status = REDIST_ERR_NOMEM;
            return -1;
        }
        S->nodes = nn;
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
    return i;
}

/* Find the node of type t, creating it when absent.  *created set. */
static int32_t node_get(search_t *S, const rd_ctype *t, int *created)
{
    size_t h;
    uint64_t fp;
    int32_t found = node_probe(S, t, &h, &fp);
    *created = found < 0;
    return found >= 0 ? found : node_insert(S, t, h, fp);
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
        hent_t *nh = grow_double(S->heap, &S->capheap, sizeof *nh);
        if (!nh)
            return -1;
        S->heap = nh;
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

/* (u128)x for x >= 0, through 64 bits when it fits: the same value
 * (truncation), without the slow 128-bit conversion. */
static inline u128 d2u(double x)
{
    return x < 18446744073709551616.0 ? (u128)(uint64_t)x : (u128)x;
}

/* A cost of the time objective: the modelled time above bit RD_TSHIFT,
 * the received bytes scaled by D (as the bytes objective counts them)
 * below, so that one comparison orders time, then bytes
 * (doc/spec-format.md section 9).  The bytes of one cost are capped at
 * RD_RECV_CAP (2^50 scaled bytes: a petabyte at D = 1), so that the sums
 * of a path's costs never carry into the time; beyond it bytes no longer
 * break ties.  The time is in units of 2^tk femtoseconds, tk (search_init)
 * the least that keeps the costliest step conceivable for the spec (every
 * byte of the array received twice and reduced once, a message from
 * every device, over the slowest level) under 2^54 units, so that sums of
 * thousands of steps fit the 70 bits above the bytes: 0 (femtoseconds)
 * below terabyte arrays, coarser only beyond. */
#define RD_TSHIFT 58
#define RD_RECV_CAP ((u128)1 << 50)

static u128 tpack(u128 units, u128 recv)
{
    return units << RD_TSHIFT | (recv < RD_RECV_CAP ? recv : RD_RECV_CAP);
}

static u128 tcost_units(u128 c)
{
    return c >> RD_TSHIFT;
}

static u128 tcost_recv(u128 c)
{
    return c & (((u128)1 << RD_TSHIFT) - 1);
}

/* The cost of fs femtoseconds and recv scaled bytes. */
static u128 tcost(const search_t *S, u128 fs, u128 recv)
{
    return tpack(fs >> S->tk, recv);
}

/* Scaled bytes of a recv of num / den bytes (den divides D, or rounded
 * up). */
static u128 recv_scaled(const search_t *S, u128 num, uint64_t den)
{
    return S->D % den ? (num + den - 1) / den * S->D : num * (S->D / den);
}

/* What `elems` elements still to be received cost at least: scaled bytes,
 * or (time objective) femtoseconds at the cheapest link, rounded down,
 * then those bytes. */
static u128 bound_cost(const search_t *S, uint64_t elems)
{
    u128 bytes = (u128)elems * S->cx->elem_size * S->D;
    if (S->cm)
        return tcost(S, d2u((double)elems * (double)S->cx->elem_size *
                         S->beta_min * 1e15),
                     bytes);
    return bytes;
}

static u128 time_fs(double seconds)
{
    return seconds <= 0 ? 0 : d2u(seconds * 1e15 + 0.5);
}

/* The time objective's cost of step st from `before` (L bytes) to
 * `after`, which receives num / den bytes (rounded up for its time) from
 * `peers` devices (an exchange's): its modelled time, then those bytes. */
static u128 step_tcost(const search_t *S, const rd_step *st,
                       const rd_ctype *before, uint64_t L,
                       const rd_ctype *after, u128 num, uint64_t den,
                       uint64_t peers)
{
    uint64_t recv = (uint64_t)((num + den - 1) / den);
    return tcost(S, time_fs(rd_step_time(S->cx, S->cm, st, before, L, after,
                                         recv, peers)),
                 recv_scaled(S, num, den));
}

/* What the pending reductions still cost at least.  A type whose partial
 * set is P (the target keeping K of it) shards only axes outside P, so its
 * local size is at least G / U, U the product of the sizes outside P.
 * Reducing a pending axis of size s from there receives at least
 * (s-1)/s * G / U, and leaves U larger by s; over all pending axes
 * (product Q) the sum telescopes to G (Q-1) / (U Q) whatever the order.
 * An edge that reduces axis a lowers this by exactly (s-1)/s * G / U <=
 * its own cost, and no other edge changes it, so the bound is consistent. */
static u128 reduction_bound(const search_t *S, const rd_ctype *t)
{
    uint32_t pend = t->partial & S->pend_nontrivial;
    if (!pend)
        return 0;
    uint64_t Q = 1, U = 1;
    for (int a = 0; a < S->cx->naxes; a++) {
        if (pend >> a & 1u)
            Q *= (uint64_t)S->cx->size[a];
        else if (!(t->partial >> a & 1u))
            U *= (uint64_t)S->cx->size[a];
    }
    u128 rbytes = (u128)S->G * (Q - 1) * S->D / ((u128)U * Q);
    if (!S->cm)
        return rbytes;
    /* Time: each pending axis a also takes at least the messages of one
     * reduce_scatter over its link, alpha * (s-1), and the bytes cost
     * gamma each plus beta of the cheapest pending link; every term drops
     * by at most the matching part of the reducing edge's cost. */
    double alpha = 0, beta = -1;
    for (int a = 0; a < S->cx->naxes; a++)
        if (pend >> a & 1u) {
            int l = S->cm->axis_link[a];
            alpha += S->cm->alpha[l] * (double)(S->cx->size[a] - 1);
            if (beta < 0 || S->cm->beta[l] < beta)
                beta = S->cm->beta[l];
        }
    double bytes = (double)S->G * (double)(Q - 1) / ((double)U * (double)Q);
    return tcost(S, d2u((alpha + (S->cm->gamma + beta) * bytes) * 1e15),
                 rbytes);
}

static int lc_layout(search_t *S, const rd_ctype *t, rd_layout *out);

/* Uneven specs: the most any sample device still lacks of its target
 * block on the anchored layouts, costed as bound_cost (time: less a part
 * in 10^9 and a picosecond, for the rounding of per-step times).  An edge
 * brings a device at most what it receives, and its cost is the largest
 * device's (scaled) recv or modelled time, so h(u) <= cost + h(v):
 * consistent.  0 while a reduction is pending (a device's block is not
 * yet its own) and when a layout cannot be built (the edge's evaluation
 * reports that). */
static u128 uneven_heuristic(search_t *S, const rd_ctype *t)
{
    rd_layout tl, dl;
    redist_type_t tt, dt;
    if ((t->partial & S->pend_nontrivial) || lc_layout(S, t, &tl) ||
        lc_layout(S, &S->dst, &dl))
        return 0;
    rd_ctype_to_type(t, &tt);
    rd_ctype_to_type(&S->dst, &dt);
    uint64_t worst = 0;
    for (int d = 0; d < S->nsamples; d++) {
        int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
        int64_t dlo[REDIST_MAX_DIMS], dhi[REDIST_MAX_DIMS];
        uint64_t want = 1, common = 1;
        rd_layout_box_coord(&tl, &tt, &S->u->mesh, S->coord[d], lo, hi);
        rd_layout_box_coord(&dl, &dt, &S->u->mesh, S->coord[d], dlo, dhi);
        for (int i = 0; i < S->cx->ndims; i++) {
            int64_t a = lo[i] > dlo[i] ? lo[i] : dlo[i];
            int64_t b = hi[i] < dhi[i] ? hi[i] : dhi[i];
            want *= dhi[i] > dlo[i] ? (uint64_t)(dhi[i] - dlo[i]) : 0;
            common *= b > a ? (uint64_t)(b - a) : 0;
        }
        if (want - common > worst)
            worst = want - common;
    }
    u128 h = bound_cost(S, worst);
    if (S->cm) {
        u128 t = tcost_units(h), ps = S->ps;
        h = tpack(t > t / 1000000000u + ps ? t - t / 1000000000u - ps
                                              : 0,
                  tcost_recv(h));
    }
    return h;
}

static u128 heuristic(search_t *S, const rd_ctype *t, const int64_t local[])
{
    if (S->bottleneck)
        return 0;
    if (S->u)
        return uneven_heuristic(S, t);
    if (t->partial & S->pend_nontrivial) {
        u128 a = bound_cost(S, S->dst_elems), b = reduction_bound(S, t);
        if (S->cm) { /* each part the larger of its own two bounds */
            u128 at = tcost_units(a), bt = tcost_units(b);
            u128 ar = tcost_recv(a), br = tcost_recv(b);
            return tpack(at > bt ? at : bt, ar > br ? ar : br);
        }
        return a > b ? a : b;
    }
    /* The most any sample device still lacks of its target block. */
    uint64_t worst = 0;
    for (int d = 0; d < S->nsamples; d++) {
        int64_t start[REDIST_MAX_DIMS];
        uint64_t common = 1;
        rd_ctype_block_start(S->cx, t, local, S->coord[d], start);
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
    /* Time: a device that lacks data receives it in at least one message
     * over one of the axes' links, so the bound is a message of `worst`
     * elements.  It is rounded as a step's time is (rd_step_time, then
     * time_fs: the same operations on smaller operands, all monotone), so
     * it equals the time of a one-message step that brings exactly that:
     * the target reached so is then not behind the free slices' nodes of
     * the same modelled time by a femtosecond of rounding. */
    if (S->cm && worst)
        return tcost(S, time_fs(S->alpha_min_s + (double)(worst *
                                                       S->cx->elem_size) *
                                                  S->beta_min),
                     (u128)worst * S->cx->elem_size * S->D);
    return bound_cost(S, worst);
}

/* Lower bound on the collectives still needed: one per pending reduction
 * (each removes one partial axis), plus one when some dim's list is not a
 * prefix of the target's (slices and reduce-scatters only append, so only
 * a gather, all_to_all, permute or exchange can mend it).  Consistent: a
 * collective lowers it by at most one, and a slice never lowers it.  With
 * the byte bound it forms a consistent lexicographic heuristic. */
static int32_t steps_bound(const search_t *S, const rd_ctype *t)
{
    if (S->bottleneck)
        return 0;
    int32_t n = __builtin_popcount(t->partial & S->pend_nontrivial);
    int p = 0, q = 0;
    for (int i = 0; i < S->cx->ndims; i++) {
        if (t->cnt[i] > S->dst.cnt[i] ||
            memcmp(&t->seq[p], &S->dst.seq[q], t->cnt[i]) != 0)
            return n + 1;
        p += t->cnt[i];
        q += S->dst.cnt[i];
    }
    return n;
}

/* (f, fs) beyond the known plan's cost: nothing better lies that way.
 * Modelled times are rounded (femtoseconds per step, doubles in the
 * bound), so the time objective keeps a margin of a part in 10^9 and a
 * picosecond: pruning never removes a plan the rounding could make the
 * best. */
static int over_ub(const search_t *S, u128 f, int32_t fs)
{
    if (!S->has_ub || S->bottleneck)
        return 0;
    if (S->cm)
        return f > S->ub_g +
                       tpack(tcost_units(S->ub_g) / 1000000000u + S->ps, 0);
    return f > S->ub_g || (f == S->ub_g && fs > S->ub_steps);
}

static void relax(search_t *S, const rd_ctype *t, int op, int dim, int from,
                  int to, int axis, u128 cost, int collective)
{
    int64_t local[REDIST_MAX_DIMS];
    if (S->status)
        return;
    const node_t *u = &S->nodes[S->cur];
    uint64_t L = S->u ? S->u_L : local_bytes(S->cx, t, local);
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
    /* The node first: most edges lead to a closed node or one reached at
     * least as cheaply, and then the heuristic is not worth computing. */
    size_t slot;
    uint64_t fp;
    int32_t cur = S->cur;
    int32_t v = node_probe(S, t, &slot, &fp);
    if (v >= 0) {
        const node_t *n = &S->nodes[v];
        if (n->closed)
            return;
        if (S->bottleneck ? g >= n->g
                          : (g > n->g || (g == n->g && steps >= n->steps)))
            return;
    }
    u128 h = 0;
    int32_t sb = 0;
    int have_h = S->has_ub && !S->bottleneck;
    if (have_h) {
        h = heuristic(S, t, local);
        sb = steps_bound(S, t);
        if (over_ub(S, g + h, steps + sb))
            return;
    }
    if (v < 0) {
        if ((v = node_insert(S, t, slot, fp)) < 0)
            return;
        if (S->dst_node < 0 && memcmp(t, &S->dst, sizeof *t) == 0)
            S->dst_node = v;
    }
    node_t *n = &S->nodes[v];
    n->g = g;
    n->steps = steps;
    n->L = L;
    n->parent = cur;
    n->op = (int8_t)op;
    n->dim = (int8_t)dim;
    n->from_dim = (int8_t)from;
    n->to_dim = (int8_t)to;
    n->axis = (int8_t)axis;
    if (!have_h) {
        h = heuristic(S, t, local);
        sb = steps_bound(S, t);
    }
    hent_t e = {g + h, g, S->bottleneck ? 0 : steps + sb,
                S->bottleneck ? 0 : steps, S->seq++, v, 0};
    if (heap_push(S, e))
        S->status = REDIST_ERR_NOMEM;
}

/* The cache entry of type t (anchor included), created empty when absent;
 * NULL when out of memory.  Valid until the next call. */
static lent_t *lc_get(search_t *S, const rd_ctype *t)
{
    keyed_t *K = &S->lc;
    if (!K->tab &&
        keyed_init(K, sizeof(lent_t), sizeof(rd_ctype), 64, 128))
        return NULL;
    size_t slot;
    long i = keyed_find(K, t, &slot);
    if (i >= 0)
        return keyed_at(K, i);
    lent_t *e = keyed_next(K, t);
    if (!e || keyed_add(K, slot))
        return NULL;
    return e;
}

/* The layout of type t anchored by its anchor bits (rd_layout_anchor),
 * owned by the cache: 0, -1 out of memory, -2 too many blocks. */
static int lc_layout(search_t *S, const rd_ctype *t, rd_layout *out)
{
    const rd_uctx *u = S->u;
    lent_t *e = lc_get(S, t);
    if (!e)
        return -1;
    if (!e->has_lay) {
        redist_type_t tt;
        rd_ctype_to_type(t, &tt);
        int r = rd_layout_anchor(&e->lay, &tt, &u->mesh, S->cx->shape,
                                 &u->src, u->src_l, &u->dst, u->dst_l,
                                 t->anchor[0] | (unsigned)t->anchor[1] << 8);
        if (r)
            return r;
        e->has_lay = 1;
    }
    *out = e->lay;
    return 0;
}

/* rd_layout_anchor_bits of type t (anchor 0). */
static unsigned lc_bits(search_t *S, const rd_ctype *t)
{
    const rd_uctx *u = S->u;
    lent_t *e = lc_get(S, t);
    if (e && e->has_bits)
        return e->bits;
    redist_type_t tt;
    rd_ctype_to_type(t, &tt);
    unsigned bits = rd_layout_anchor_bits(&tt, &u->mesh, S->cx->shape,
                                          &u->src, u->src_l, &u->dst,
                                          u->dst_l);
    if (e) {
        e->bits = bits;
        e->has_bits = 1;
    }
    return bits;
}

/* The node of type t, or -1. */
static int32_t node_find(const search_t *S, const rd_ctype *t)
{
    size_t slot;
    uint64_t fp;
    return node_probe(S, t, &slot, &fp);
}

typedef struct {
    const search_t *S;
    int32_t v; /* the edge's target node, or -1 */
    int collective;
} ustop_t;

/* rd_ustep_eval_until's stop: the maxima so far already make relax
 * refuse the edge (they only grow): a device over the cap, or over its
 * own bound in pass 1, or a cost that does not improve the target node.
 * Stopping then skips exactly evaluations whose relaxation would change
 * nothing.  (relax's overflow check needs a path of more than 2^128
 * scaled bytes or femtoseconds, beyond any bound here.) */
static int uneven_refused(void *user, const rd_ueval *ev)
{
    const ustop_t *x = user;
    const search_t *S = x->S;
    if (ev->max_held > S->cap || (S->per_device_cap && !ev->within))
        return 1;
    if (x->v < 0)
        return 0;
    const node_t *u = &S->nodes[S->cur], *n = &S->nodes[x->v];
    if (S->bottleneck)
        return (u->g > ev->max_held ? u->g : ev->max_held) >= n->g;
    u128 g, cost = S->cm ? tcost(S, time_fs(ev->max_time), ev->max_recv)
                         : ev->max_recv;
    if (__builtin_add_overflow(u->g, cost, &g))
        return 0;
    int32_t steps = u->steps + x->collective;
    return g > n->g || (g == n->g && steps >= n->steps);
}

/* Uneven specs: the edge `st` to type `out`, for each anchoring of its
 * layout that changes it (all of them up to 4 such dims; else none or
 * all at the source), or only `only` (the anchor bits to use) when >= 0.
 * Locality, the per-device cap and the costs come from rd_ustep_eval. */
static void uneven_edge(search_t *S, const rd_step *st, const rd_ctype *out,
                        int only)
{
    const rd_uctx *u = S->u;
    rd_ctype t = *out;
    memset(t.anchor, 0, sizeof t.anchor);
    unsigned bits = only >= 0 ? (unsigned)only : lc_bits(S, &t);
    int few = __builtin_popcount(bits) <= 4;
    /* the devices that differ on the axes the two types shard (exact
     * bounds per class: rd_ubounds), else those the source or target
     * shard too */
    uint32_t mask = rd_ctype_sharded(&S->here) | rd_ctype_sharded(&t);
    if (st->axis >= 0)
        mask |= 1u << st->axis;
    if (rd_ubounds(u, mask)) {
        mask |= rd_ctype_sharded(&S->dst);
        rd_ctype_from_type(&t, &u->src);
        mask |= rd_ctype_sharded(&t);
    }
    t = *out;
    /* every subset of bits, or {0, bits} when there are many */
    for (unsigned m = 0;; m = few ? ((m | ~bits) + 1) & bits : bits) {
        rd_layout al;
        unsigned a = only >= 0 ? (unsigned)only : m;
        t.anchor[0] = (uint8_t)(a & 0xffu);
        t.anchor[1] = (uint8_t)(a >> 8);
        ustop_t x = {S, node_find(S, &t), rd_step_kinds[st->op].collective};
        if (x.v >= 0 && S->nodes[x.v].closed) {
            /* relax refuses a closed node; its layout was built when it
             * was expanded, from these same arguments */
            if (only >= 0 || m == bits)
                return;
            continue;
        }
        int r = lc_layout(S, &t, &al);
        if (r) {
            S->status = r == -2 ? REDIST_ERR_LIMIT : REDIST_ERR_NOMEM;
            return;
        }
        rd_ueval ev;
        if (rd_ustep_eval_until(u, st, &S->here, &S->here_lay, &t, &al, mask,
                                &ev, uneven_refused, &x, NULL, 0) == 0 &&
            (!S->per_device_cap || ev.within)) {
            u128 cost = 0;
            if (!S->bottleneck)
                cost = S->cm ? tcost(S, time_fs(ev.max_time), ev.max_recv)
                             : ev.max_recv;
            S->u_L = ev.max_held;
            relax(S, &t, st->op, st->dim, st->from_dim, st->to_dim, st->axis,
                  cost, rd_step_kinds[st->op].collective);
        }
        if (S->status || only >= 0 || m == bits)
            return;
    }
}

static void on_step(void *user, const rd_step *st, const rd_ctype *out)
{
    search_t *S = user;
    if (S->u) {
        uneven_edge(S, st, out, -1);
        return;
    }
    const node_t *u = &S->nodes[S->cur];
    unsigned __int128 num;
    uint64_t den;
    u128 cost = 0;
    if (!S->bottleneck) {
        rd_step_recv(S->cx, st, &S->here, u->L, &num, &den);
        if (S->cm) {
            cost = step_tcost(S, st, &S->here, u->L, out, num, den, 0);
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

/* Time objective: one exchange straight into the target.  Its exact cost
 * (rd_exchange_need enumerates the devices) is what the time objective
 * spends most on, so the edge is relaxed lazily: the node's consistent
 * bound h says the exchange costs at least h plus one message, so it is
 * queued with that key and costed only when it comes first
 * (exchange_exact).  Keys
 * below the true one keep A* exact; an edge whose bound already loses to
 * the target's path or to the known plan is never queued, and most queued
 * ones are never costed: the target comes first. */
static void expand_exchange(search_t *S, u128 h)
{
    if (!S->cm || S->bottleneck || S->here.partial != S->dst.partial ||
        memcmp(&S->here, &S->dst, sizeof S->dst) == 0)
        return;
    if (S->u) { /* uneven: costed at once (small searches) */
        rd_step ust;
        memset(&ust, 0, sizeof ust);
        ust.op = REDIST_OP_EXCHANGE;
        ust.dim = ust.from_dim = ust.to_dim = ust.axis = -1;
        ust.after = S->dst;
        uneven_edge(S, &ust, &S->dst,
                    S->dst.anchor[0] | S->dst.anchor[1] << 8);
        return;
    }
    const node_t *cur = &S->nodes[S->cur];
    /* two distinct types (size-1 axes are out of the search) give some
     * device another block: at least one message, which h already counts
     * when a sample device lacks data */
    u128 one = tcost(S, S->alpha_min, 0);
    u128 lb = cur->g + (h > one ? h : one);
    if (S->dst_node >= 0) {
        const node_t *d = &S->nodes[S->dst_node];
        if (d->closed || lb > d->g ||
            (lb == d->g && cur->steps + 1 >= d->steps))
            return;
    }
    if (over_ub(S, lb, cur->steps + 1))
        return;
    hent_t e = {lb, lb, cur->steps + 1, cur->steps, S->seq++, S->cur, 1};
    if (heap_push(S, e))
        S->status = REDIST_ERR_NOMEM;
}

/* The modelled cost of the exchange from S->here (node `from`) into the
 * target, for a device need of `elems` elements from `peers` devices. */
static u128 exchange_cost(const search_t *S, int32_t from, uint64_t elems,
                          uint64_t peers)
{
    rd_step st;
    memset(&st, 0, sizeof st);
    st.op = REDIST_OP_EXCHANGE;
    st.axis = -1;
    st.after = S->dst;
    return step_tcost(S, &st, &S->here, S->nodes[from].L, &S->dst,
                      (u128)elems * S->cx->elem_size, 1, peers);
}

typedef struct {
    search_t *S;
    int32_t from;
} xstop_t;

/* rd_exchange_need_until's stop: the exchange costs at least what the
 * bounds (elems, peers) give (rd_step_time grows with both, and so does
 * its rounding), and relax would already refuse that: the target is
 * reached at least as cheaply, or the known plan is better. */
static int exchange_refused(void *user, uint64_t elems, uint64_t peers)
{
    const xstop_t *x = user;
    const search_t *S = x->S;
    const node_t *u = &S->nodes[x->from];
    u128 g;
    if (__builtin_add_overflow(u->g, exchange_cost(S, x->from, elems, peers),
                               &g))
        return 0; /* relax reports the overflow */
    int32_t steps = u->steps + 1;
    if (S->has_ub && over_ub(S, g, steps))
        return 1;
    if (S->dst_node < 0)
        return 0;
    const node_t *d = &S->nodes[S->dst_node];
    return g > d->g || (g == d->g && steps >= d->steps);
}

/* The queued exchange from node `from` comes first: cost it and relax.
 * Most of these lose to a path into the target found meanwhile; the
 * enumeration of devices stops as soon as its partial maxima show that,
 * which skips exactly the relaxations that would change nothing. */
static void exchange_exact(search_t *S, int32_t from)
{
    uint64_t elems, peers;
    if (S->dst_node >= 0 && S->nodes[S->dst_node].closed)
        return;
    S->cur = from;
    S->here = S->nodes[from].t;
    xstop_t x = {S, from};
    if (rd_exchange_need_until(S->cx, &S->here, &S->dst,
                               RD_SOLVER_EXCHANGE_LIMIT, exchange_refused, &x,
                               &elems, &peers))
        return; /* too many devices to analyse: not offered; or refused */
    relax(S, &S->dst, REDIST_OP_EXCHANGE, -1, -1, -1, -1,
          exchange_cost(S, from, elems, peers), 1);
}

/* A group's key: the leading fields of group_t. */
typedef struct {
    int64_t prod[REDIST_MAX_DIMS];
    uint32_t partial;
} gkey_t;

#define RD_GROUP_KEY (offsetof(group_t, partial) + sizeof(uint32_t))
_Static_assert(offsetof(gkey_t, partial) == offsetof(group_t, partial),
               "gkey_t is the head of group_t");

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
    size_t slot;
    long at = keyed_find(&S->groups, &k, &slot);
    if (at >= 0)
        return keyed_at(&S->groups, at);
    group_t *g = keyed_next(&S->groups, &k);
    if (!g)
        return NULL;
    /* The orders of each dim's own axes alone give prod cnt_i! members:
     * past the limit, skip the enumeration that would fail anyway. */
    long orders = 1;
    for (int i = 0; i < S->cx->ndims && orders <= RD_MAX_GROUP; i++)
        for (int f = 2; f <= t->cnt[i] && orders <= RD_MAX_GROUP; f++)
            orders *= f;
    g->nmembers = orders > RD_MAX_GROUP
                      ? -2
                      : rd_permute_targets(S->cx, t, RD_MAX_GROUP,
                                           &g->members);
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
    return keyed_add(&S->groups, slot) ? NULL : g;
}

static void expand_permute(search_t *S)
{
    const node_t *u = &S->nodes[S->cur];
    if (S->has_ub && !S->bottleneck) {
        /* every member shares L, the partial set, and so the reduction
         * bound; a permute receives L (the members differ from here) */
        u128 step = S->cm ? tcost(S,
                                  d2u((double)u->L * S->beta_min * 1e15) +
                                      S->alpha_min,
                                  (u128)u->L * S->D)
                          : (u128)u->L * S->D;
        if (over_ub(S, u->g + step + reduction_bound(S, &S->here),
                    u->steps + 1 +
                        __builtin_popcount(S->here.partial &
                                           S->pend_nontrivial)))
            return;
    }
    group_t *g = group_get(S, &S->here);
    if (!g) {
        if (!S->status)
            S->status = REDIST_ERR_NOMEM;
        return;
    }
    if (g->nmembers == 0)
        return;
    if (S->u) {
        /* permute costs and legality depend on this node's layout: no
         * dominance between the nodes of a group */
        rd_step ust;
        memset(&ust, 0, sizeof ust);
        ust.op = REDIST_OP_PERMUTE;
        ust.dim = ust.from_dim = ust.to_dim = ust.axis = -1;
        for (long i = 0; i < g->nmembers && !S->status; i++) {
            ust.after = g->members[i];
            uneven_edge(S, &ust, &g->members[i], -1);
        }
        return;
    }
    if (g->has_best && S->group_dominance) {
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
            cost = step_tcost(S, &pst, &S->here, L, &members[i], num, den,
                              0);
        relax(S, &members[i], REDIST_OP_PERMUTE, -1, -1, -1, -1, cost, 1);
    }
}

static void search_free(search_t *S)
{
    for (long i = 0; i < S->lc.n; i++) {
        lent_t *e = keyed_at(&S->lc, i);
        if (e->has_lay)
            rd_layout_free(&e->lay);
    }
    keyed_free(&S->lc);
    free(S->nodes);
    free(S->table);
    free(S->heap);
    for (long i = 0; i < S->groups.n; i++)
        free(((group_t *)keyed_at(&S->groups, i))->members);
    keyed_free(&S->groups);
    /* freeable again, holding nothing */
    memset(&S->lc, 0, sizeof S->lc);
    memset(&S->groups, 0, sizeof S->groups);
    S->nodes = NULL;
    S->table = NULL;
    S->heap = NULL;
    S->nnodes = S->nheap = 0;
}

/* Make S a search of an uneven spec (u non-NULL): pass 1 keeps every
 * device within max(src_d, dst_d) (per_device). */
static void search_uneven(search_t *S, const rd_uctx *u, int per_device,
                          uint64_t src_L)
{
    S->u = u;
    S->per_device_cap = u && per_device;
    S->src_L = src_L;
}

/* The layouts of an uneven path (p: the search's steps, anchors in their
 * `after`), into info->lays, pointed to by out[i].lay. */
static redist_status_t path_layouts(const rd_uctx *u, const rd_step *p, int n,
                                    rd_step *out, rd_solve_info *info)
{
    info->lays = calloc((size_t)(n ? n : 1), sizeof *info->lays);
    if (!info->lays)
        return REDIST_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        redist_type_t t;
        rd_ctype_to_type(&p[i].after, &t);
        if (rd_layout_anchor(&info->lays[i], &t, &u->mesh, u->cx->shape,
                             &u->src, u->src_l, &u->dst, u->dst_l,
                             p[i].after.anchor[0] |
                                 (unsigned)p[i].after.anchor[1] << 8)) {
            rd_solve_info_free(info);
            return REDIST_ERR_NOMEM;
        }
        info->nlays = i + 1;
        out[i].lay = &info->lays[i];
    }
    return REDIST_OK;
}

/* Run one search.  Returns REDIST_OK and sets *goal (-1: unreachable). */
static redist_status_t search_run(search_t *S, const rd_ctype *src,
                                  int32_t *goal)
{
    *goal = -1;
    /* small first: most searches visit a few dozen types, and the
     * arrays double as they fill */
    S->capnodes = 32;
    S->nodes = malloc((size_t)S->capnodes * sizeof *S->nodes);
    S->tmask = 63;
    S->table = calloc(S->tmask + 1, sizeof *S->table);
    S->capheap = 64;
    S->heap = malloc((size_t)S->capheap * sizeof *S->heap);
    if (!S->nodes || !S->table || !S->heap ||
        keyed_init(&S->groups, sizeof(group_t), RD_GROUP_KEY, 16, 64))
        return REDIST_ERR_NOMEM;
    int created;
    int64_t local[REDIST_MAX_DIMS];
    int32_t s = node_get(S, src, &created);
    if (s < 0)
        return S->status;
    S->nodes[s].L = S->u ? S->src_L : local_bytes(S->cx, src, local);
    S->nodes[s].g = S->bottleneck ? S->nodes[s].L : 0;
    S->nodes[s].op = -1;
    hent_t e = {S->nodes[s].g + heuristic(S, src, local), S->nodes[s].g,
                steps_bound(S, src), 0, S->seq++, s, 0};
    if (heap_push(S, e))
        return REDIST_ERR_NOMEM;
    while (S->nheap > 0) {
        hent_t top = heap_pop(S);
        if (top.lazy) {
            exchange_exact(S, top.node);
            if (S->status)
                return S->status;
            continue;
        }
        node_t *u = &S->nodes[top.node];
        if (u->closed || u->g != top.g ||
            (!S->bottleneck && u->steps != top.steps))
            continue;
        u->closed = 1;
        S->last_f = top.f;
        if (memcmp(&u->t, &S->dst, sizeof S->dst) == 0) {
            *goal = top.node;
            return REDIST_OK;
        }
        S->cur = top.node;
        /* A copy: relaxing may grow (move) the node array. */
        S->here = u->t;
        if (S->u) {
            int r = lc_layout(S, &S->here, &S->here_lay);
            if (r)
                return r == -2 ? REDIST_ERR_LIMIT : REDIST_ERR_NOMEM;
        }
        for (int k = 0; k < REDIST_OP_COUNT && !S->status; k++)
            if (rd_step_kinds[k].enumerate)
                rd_step_kinds[k].enumerate(S->cx, &S->here, on_step, S);
        if (!S->status)
            expand_permute(S);
        if (!S->status)
            expand_exchange(S, top.f - top.g);
        if (S->status)
            return S->status;
    }
    return REDIST_OK;
}

static void search_init(search_t *S, const rd_ctx *cx, const rd_ctype *dst,
                        uint32_t src_partial, uint64_t max_states,
                        const redist_cost_model_t *cm)
{
    memset(S, 0, sizeof *S);
    S->dst_node = -1;
    S->cm = cm;
    if (cm) {
        /* Every step that moves bytes runs over the link of one of the
         * mesh's axes (its own, or for permute and exchange the slowest
         * along which data moves): the cheapest byte among those links
         * bounds them all, and is tighter than the cheapest of all levels
         * (with the built-in model every axis is on `node`). */
        S->beta_min = cm->beta[0];
        for (int l = 1; l < REDIST_LINK_COUNT; l++)
            if (cm->beta[l] < S->beta_min)
                S->beta_min = cm->beta[l];
        double am = 0;
        for (int a = 0; a < cx->naxes; a++) {
            double b = cm->beta[cm->axis_link[a]];
            double al = cm->alpha[cm->axis_link[a]];
            if (a == 0 || b < S->beta_min)
                S->beta_min = b;
            if (a == 0 || al < am)
                am = al;
        }
        S->alpha_min = (u128)(am * 1e15 * (1 - 1e-9));
        S->alpha_min_s = am;
    }
    S->group_dominance = 1;
    for (int a = 1; cm && a < cx->naxes; a++)
        if (cm->axis_link[a] != cm->axis_link[0])
            S->group_dominance = 0; /* a permute's link depends on the pair */
    S->cx = cx;
    S->dst = *dst;
    S->max_states = max_states;
    rd_ctype_local(cx, dst, S->dst_local);
    S->dst_elems = rd_ctype_elems(cx, dst);
    S->G = cx->elem_size; /* checked at spec creation: < 2^63 */
    for (int i = 0; i < cx->ndims; i++)
        S->G *= (uint64_t)cx->shape[i];
    if (cm) { /* tcost's unit: the costliest conceivable step < 2^54 */
        double amax = 0, bmax = 0, devs = 1;
        for (int l = 0; l < REDIST_LINK_COUNT; l++) {
            amax = cm->alpha[l] > amax ? cm->alpha[l] : amax;
            bmax = cm->beta[l] > bmax ? cm->beta[l] : bmax;
        }
        for (int a = 0; a < cx->naxes; a++)
            devs *= (double)cx->size[a];
        double step = ((double)S->G * (2 * bmax + cm->gamma) +
                       2 * devs * amax) * 1e15;
        while (step >= 18014398509481984.0 && S->tk < 120) { /* 2^54 */
            step /= 2;
            S->tk++;
        }
        S->ps = (u128)1000 >> S->tk ? (u128)1000 >> S->tk : 1;
    }
    uint64_t D = 1;
    for (int a = 0; a < cx->naxes; a++) {
        if (!((src_partial & ~dst->partial) >> a & 1u))
            continue;
        uint64_t s = (uint64_t)cx->size[a];
        D = D / rd_gcd_u64(D, s) * s; /* <= device count <= 2^31 */
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
        rd_ctype_block_start(cx, dst, S->dst_local, S->coord[d], S->dst_start[d]);
}

/* ----------------------------------------------------- size-1 axes */

/* The problem without its size-1 axes: map[a] is a's index there (-1 for
 * a size-1 axis), inv[r] the full index of reduced axis r. */
static void ctx_reduce(const rd_ctx *full, rd_ctx *r, int map[], int inv[])
{
    *r = *full;
    r->naxes = 0;
    r->dst_partial = 0;
    r->nontrivial = 0;
    for (int a = 0; a < full->naxes; a++) {
        map[a] = -1;
        if (full->size[a] == 1)
            continue;
        map[a] = r->naxes;
        inv[r->naxes] = a;
        r->size[r->naxes] = full->size[a];
        if (full->dst_partial >> a & 1u)
            r->dst_partial |= 1u << r->naxes;
        r->nontrivial |= 1u << r->naxes;
        r->naxes++;
    }
    for (int a = r->naxes; a < REDIST_MAX_AXES; a++)
        r->size[a] = 0;
}

/* Rename the axes of `in` by map (entries < 0 are dropped). */
static void ctype_map(const rd_ctype *in, const int map[], rd_ctype *out)
{
    rd_ctype c;
    memset(&c, 0, sizeof c);
    c.ndims = in->ndims;
    int p = 0;
    for (int i = 0; i < in->ndims; i++)
        for (int k = 0; k < in->cnt[i]; k++, p++)
            if (map[in->seq[p]] >= 0) {
                c.seq[c.nax++] = (uint8_t)map[in->seq[p]];
                c.cnt[i]++;
            }
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        if ((in->partial >> a & 1u) && map[a] >= 0)
            c.partial |= 1u << map[a];
    *out = c;
}

/* Peak, cost (in the search's units) and collectives of a path. */
static void path_cost(const search_t *S, const rd_ctype *src,
                      const rd_step *p, int n, uint64_t *peak, u128 *g,
                      int32_t *colls)
{
    int64_t local[REDIST_MAX_DIMS];
    rd_ctype cur = *src;
    uint64_t L = local_bytes(S->cx, src, local);
    *peak = L;
    *g = 0;
    *colls = 0;
    for (int i = 0; i < n; i++) {
        unsigned __int128 num;
        uint64_t den, elems = 0, peers = 0;
        if (p[i].op == REDIST_OP_EXCHANGE) { /* rd_step_recv's own need */
            rd_exchange_need(S->cx, &cur, &p[i].after, RD_EXCHANGE_LIMIT,
                             &elems, &peers);
            num = (unsigned __int128)elems * S->cx->elem_size;
            den = 1;
        } else {
            rd_step_recv(S->cx, &p[i], &cur, L, &num, &den);
        }
        if (S->cm)
            *g += step_tcost(S, &p[i], &cur, L, &p[i].after, num, den,
                             peers);
        else
            *g += num * (S->D / den);
        *colls += rd_step_kinds[p[i].op].collective;
        cur = p[i].after;
        L = local_bytes(S->cx, &cur, local);
        if (L > *peak)
            *peak = L;
    }
}

/* A known plan bounds the search when it fits under the cap. */
static void bound_by(search_t *S, uint64_t peak, u128 g, int32_t colls)
{
    if (peak > S->cap)
        return;
    S->has_ub = 1;
    S->ub_g = g;
    S->ub_steps = colls;
}

/* Lexicographic (peak, g, collectives) a < b. */
static int cost_less(uint64_t pa, u128 ga, int32_t ca, uint64_t pb, u128 gb,
                     int32_t cb)
{
    if (pa != pb)
        return pa < pb;
    if (ga != gb)
        return ga < gb;
    return ca < cb;
}

/* The path of a finished search, or the constructive plan, as steps of
 * the full problem: axes renamed back; every `after` stated, the last one
 * exactly the target (the size-1 axes placed as the target has them). */
static redist_status_t emit_path(const rd_step *p, int n, const int inv[],
                                 const rd_ctype *full_dst, rd_step **out)
{
    rd_step *q = calloc((size_t)(n ? n : 1), sizeof *q);
    if (!q)
        return REDIST_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        q[i] = p[i];
        q[i].axis = p[i].axis >= 0 ? inv[p[i].axis] : -1;
        q[i].after_mode = RD_AFTER_STATED;
        if (i == n - 1)
            q[i].after = *full_dst;
        else
            ctype_map(&p[i].after, inv, &q[i].after);
    }
    *out = q;
    return REDIST_OK;
}

/* What rd_solve refuses before any search: an unknown objective, an
 * invalid cost model, a pending reduction the source lacks, a max peak
 * below max(src, dst) = bound. */
static redist_status_t solve_check(const redist_spec_t *spec,
                                   const redist_plan_options_t *opts,
                                   uint64_t bound, redist_error_t *err)
{
    redist_status_t st;
    uint64_t max_peak = opts ? opts->max_peak_bytes : 0;
    if (rd_objective(opts) != REDIST_OBJECTIVE_BYTES &&
        rd_objective(opts) != REDIST_OBJECTIVE_TIME)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "objective",
                        "unknown objective %d", (int)opts->objective);
    if (opts && opts->no_cross_sums != 0 && opts->no_cross_sums != 1)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "no_cross_sums",
                        "no_cross_sums is %d; it is 0 or 1",
                        opts->no_cross_sums);
    if (opts && opts->cost &&
        (st = redist_cost_model_validate(opts->cost, &spec->mesh, err)))
        return st;
    if ((st = rd_spec_partial_check(spec, err)))
        return st;
    if (max_peak && max_peak < bound)
        return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                        "no plan within max peak %llu bytes: the %s alone "
                        "holds %llu bytes per device",
                        (unsigned long long)max_peak,
                        spec->src_bytes >= spec->dst_bytes ? "source"
                                                           : "target",
                        (unsigned long long)bound);
    return REDIST_OK;
}

redist_status_t rd_solve_check_options(const redist_spec_t *spec,
                                       const redist_plan_options_t *opts,
                                       redist_error_t *err)
{
    return solve_check(spec, opts,
                       spec->src_bytes > spec->dst_bytes ? spec->src_bytes
                                                         : spec->dst_bytes,
                       err);
}

/* Uneven specs: per-device evaluation on layouts (U), states anchored
 * (src/core/layout.c); the source anchored at the source. */
static redist_status_t uneven_init(const redist_spec_t *spec, rd_ctx *cx,
                                   rd_ctype *src, const rd_ctype *dst,
                                   const redist_cost_model_t *cm, rd_uctx *U,
                                   redist_error_t *err)
{
    int64_t ndev = 1;
    uint64_t Du = 1;
    cx->uneven = 1;
    for (int r = 0; r < cx->naxes; r++) {
        ndev *= cx->size[r];
        if (ndev > RD_UNEVEN_MAX_DEVICES)
            return rd_error(err, REDIST_ERR_LIMIT, NULL, "mesh",
                            "uneven dims over more than %d devices "
                            "(axes of size 1 left out): per-device "
                            "figures are computed for at most that many",
                            RD_UNEVEN_MAX_DEVICES);
        if ((src->partial & ~dst->partial) >> r & 1u)
            Du = Du / rd_gcd_u64(Du, (uint64_t)cx->size[r]) *
                 (uint64_t)cx->size[r];
    }
    rd_uctx_init(U, cx, src, &spec->lay[0], dst, &spec->lay[1], Du, cm);
    unsigned b = rd_layout_anchor_bits(&U->src, &U->mesh, cx->shape, &U->src,
                                       U->src_l, &U->dst, U->dst_l);
    src->anchor[0] = (uint8_t)(b & 0xffu);
    src->anchor[1] = (uint8_t)(b >> 8);
    return REDIST_OK;
}

/* The steps from the search's start to node goal (*n of them; malloc'ed,
 * NULL when out of memory). */
static rd_step *walk_back(const search_t *S, int32_t goal, int *n)
{
    *n = 0;
    for (int32_t v = goal; S->nodes[v].parent >= 0; v = S->nodes[v].parent)
        (*n)++;
    rd_step *p = calloc((size_t)(*n ? *n : 1), sizeof *p);
    if (!p)
        return NULL;
    int k = *n;
    for (int32_t v = goal; S->nodes[v].parent >= 0; v = S->nodes[v].parent) {
        rd_step *s = &p[--k];
        const node_t *nd = &S->nodes[v];
        s->op = nd->op;
        s->dim = nd->dim;
        s->from_dim = nd->from_dim;
        s->to_dim = nd->to_dim;
        s->axis = nd->axis;
        s->after = nd->t;
    }
    return p;
}

/* One rd_solve: the problem without its size-1 axes, the constructive
 * plan and its cost, the bounds the passes find, and the search whose
 * path is the answer (goal; -1 with fb_best: the constructive plan). */
typedef struct {
    const redist_spec_t *spec;
    rd_uctx *U;
    int uneven;
    rd_ctx cx;
    rd_ctype fdst, src, dst;
    int inv[REDIST_MAX_AXES];
    redist_cost_model_t model;
    const redist_cost_model_t *cm; /* &model with the time objective */
    uint64_t max_states, max_peak;
    uint64_t bound;      /* max(src, dst bytes): every path's least peak */
    uint64_t cap;        /* the cap of the last search */
    uint64_t bound_peak; /* the least peak proven */
    int nfb;
    uint64_t fb_peak;
    u128 fb_g, h_src, D;
    int32_t fb_colls, colls_src;
    int32_t goal;
    int fb_best;
    /* Not cleared by solve (they are large, and a plan of a few types
     * costs little more than clearing them): S is set up by first_pass
     * (search_init), fb by the constructive plan (its nfb steps). */
    search_t S;
    rd_step fb[RD_FALLBACK_MAX];
} solve_t;

/* The problem (v) from the spec and options: checked, without its
 * size-1 axes, the cost model, the uneven context, the constructive
 * plan. */
static redist_status_t solve_setup(solve_t *v, const redist_spec_t *spec,
                                   const redist_plan_options_t *opts,
                                   rd_uctx *U, redist_error_t *err)
{
    rd_ctx full;
    rd_ctype fsrc;
    int map[REDIST_MAX_AXES];
    redist_status_t st;
    v->spec = spec;
    v->U = U;
    v->goal = -1;
    v->max_states = opts && opts->max_states ? opts->max_states
                                             : RD_DEFAULT_MAX_STATES;
    v->max_peak = opts ? opts->max_peak_bytes : 0;
    v->bound = spec->src_bytes > spec->dst_bytes ? spec->src_bytes
                                                 : spec->dst_bytes;
    if ((st = solve_check(spec, opts, v->bound, err)))
        return st;

    /* Size-1 axes never change a local shape or a block, so the search
     * runs on the problem without them (axes renamed); the cost model's
     * axis links follow the renaming. */
    rd_ctx_init(&full, spec);
    ctx_reduce(&full, &v->cx, map, v->inv);
    rd_ctype_from_type(&fsrc, &spec->from);
    rd_ctype_from_type(&v->fdst, &spec->to);
    ctype_map(&fsrc, map, &v->src);
    ctype_map(&v->fdst, map, &v->dst);
    if (rd_objective(opts) == REDIST_OBJECTIVE_TIME) {
        if (opts && opts->cost)
            v->model = *opts->cost;
        else
            redist_cost_model_default(&v->model);
        for (int r = 0; r < v->cx.naxes; r++)
            v->model.axis_link[r] = v->model.axis_link[v->inv[r]];
        v->cm = &v->model;
    }
    v->uneven = spec->uneven;
    if (v->uneven && (st = uneven_init(spec, &v->cx, &v->src, &v->dst, v->cm,
                                       U, err)))
        return st;

    /* The constructive plan: the fallback when the budget runs out, and
     * an upper bound that prunes the search (when within its cap).  Not
     * for uneven specs (its steps need not be local). */
    v->nfb = v->uneven ? 0
                       : rd_construct(&v->cx, &v->src, &v->dst, v->cm != NULL,
                                      v->fb);
    if (v->nfb < 0)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "internal: no constructive plan");
    v->fb_peak = UINT64_MAX;
    v->fb_g = ~(u128)0;
    v->fb_colls = INT32_MAX;
    return REDIST_OK;
}

/* Pass 1: under the memory bound. */
static redist_status_t first_pass(solve_t *v, rd_solve_info *info)
{
    search_t *S = &v->S;
    int64_t local[REDIST_MAX_DIMS];
    search_init(S, &v->cx, &v->dst, v->src.partial, v->max_states, v->cm);
    search_uneven(S, v->uneven ? v->U : NULL, 1, v->spec->src_bytes);
    if (!v->uneven)
        path_cost(S, &v->src, v->fb, v->nfb, &v->fb_peak, &v->fb_g,
                  &v->fb_colls);
    local_bytes(&v->cx, &v->src, local);
    v->h_src = heuristic(S, &v->src, local);
    v->colls_src = steps_bound(S, &v->src);
    v->D = S->D; /* the same in every pass (the partial sets decide it) */
    S->cap = v->bound;
    v->cap = v->bound_peak = v->bound;
    if (!v->uneven)
        bound_by(S, v->fb_peak, v->fb_g, v->fb_colls);
    redist_status_t st = search_run(S, &v->src, &v->goal);
    info->states += (uint64_t)S->nnodes;
    /* With the constructive plan as a bound, an empty queue means that no
     * plan beats it (only rounding of modelled times can get here). */
    v->fb_best = st == REDIST_OK && v->goal < 0 && S->has_ub;
    return st;
}

/* Pass 2, when pass 1 found no path: the least reachable peak P (a
 * bottleneck search), then the search again under P. */
static redist_status_t least_peak_pass(solve_t *v, rd_solve_info *info,
                                       redist_error_t *err)
{
    search_t B;
    int32_t bgoal;
    search_free(&v->S);
    memset(&v->S, 0, sizeof v->S);
    search_init(&B, &v->cx, &v->dst, v->src.partial, v->max_states, NULL);
    search_uneven(&B, v->uneven ? v->U : NULL, 0, v->spec->src_bytes);
    B.bottleneck = 1;
    B.cap = UINT64_MAX;
    redist_status_t st = search_run(&B, &v->src, &bgoal);
    info->states += (uint64_t)B.nnodes;
    uint64_t peak = bgoal >= 0 ? (uint64_t)B.nodes[bgoal].g : 0;
    if (st == REDIST_ERR_LIMIT && (uint64_t)B.last_f > v->bound_peak)
        v->bound_peak = (uint64_t)B.last_f;
    if (B.restricted)
        v->S.restricted = 1;
    search_free(&B);
    if (st == REDIST_OK && bgoal < 0)
        st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                      "internal: the target is unreachable");
    if (st == REDIST_OK && v->max_peak && peak > v->max_peak)
        st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                      "no plan within max peak %llu bytes: divisibility "
                      "forces a peak of %llu bytes per device",
                      (unsigned long long)v->max_peak,
                      (unsigned long long)peak);
    if (st != REDIST_OK)
        return st;
    search_t *S = &v->S;
    int restricted = S->restricted;
    search_init(S, &v->cx, &v->dst, v->src.partial, v->max_states, v->cm);
    search_uneven(S, v->uneven ? v->U : NULL, 0, v->spec->src_bytes);
    S->restricted = restricted;
    S->cap = v->cap = v->bound_peak = peak;
    if (!v->uneven)
        bound_by(S, v->fb_peak, v->fb_g, v->fb_colls);
    st = search_run(S, &v->src, &v->goal);
    info->states += (uint64_t)S->nnodes;
    v->fb_best = st == REDIST_OK && v->goal < 0 && S->has_ub;
    if (st == REDIST_OK && v->goal < 0 && !v->fb_best)
        st = rd_error(err, REDIST_ERR_INFEASIBLE, NULL, NULL,
                      "internal: no path under the least peak");
    return st;
}

/* What the passes proved (st, their status): info's optimality and
 * bounds, and the answer (v->goal; -1: the constructive plan).  The
 * budget running out on an even spec is no error: the constructive plan
 * answers, with lower bounds. */
static redist_status_t solve_verdict(solve_t *v, redist_status_t st,
                                     rd_solve_info *info, redist_error_t *err)
{
    search_t *S = &v->S;
    info->D = (uint64_t)v->D;
    info->optimal = 1;
    info->max_states = v->max_states;
    if (v->fb_best) {
        v->goal = -1;
    } else if (st == REDIST_OK && S->restricted) {
        /* A permute group was too large to enumerate: the path is the
         * best over the edges searched, not proven optimal overall. */
        const node_t *gn = &S->nodes[v->goal];
        info->optimal = 0;
        info->unproven = RD_UNPROVEN_GROUP;
        info->bound_g = v->h_src;
        v->bound_peak = v->bound;
        if (!v->uneven && cost_less(v->fb_peak, v->fb_g, v->fb_colls, v->cap,
                                    gn->g, gn->steps))
            v->goal = -1; /* the constructive plan is better */
    } else if (st == REDIST_ERR_LIMIT && v->uneven) {
        return rd_error(err, st, NULL, NULL,
                        "the uneven search visited more than %llu states "
                        "(types with their layouts) without finishing; "
                        "raise max_states",
                        (unsigned long long)v->max_states);
    } else if (st == REDIST_ERR_LIMIT) {
        if (v->max_peak && v->fb_peak > v->max_peak)
            return rd_error(err, st, NULL, NULL,
                            "the search visited more than %llu types "
                            "without finishing, and the constructive plan "
                            "peaks at %llu bytes, over max peak %llu; raise "
                            "max_states",
                            (unsigned long long)v->max_states,
                            (unsigned long long)v->fb_peak,
                            (unsigned long long)v->max_peak);
        info->optimal = 0;
        info->unproven = RD_UNPROVEN_BUDGET;
        info->bound_g = S->nodes && v->fb_peak == v->cap ? S->last_f
                                                         : v->h_src;
        if (info->bound_g < v->h_src)
            info->bound_g = v->h_src;
        /* the constructive plan may meet every lower bound: then it is
         * optimal, proven without the search */
        if (v->fb_peak == v->bound_peak && v->fb_g == info->bound_g &&
            v->fb_colls == v->colls_src) {
            info->optimal = 1;
            info->unproven = RD_UNPROVEN_NONE;
        }
        v->goal = -1;
        st = REDIST_OK;
    }
    if (st == REDIST_ERR_NOMEM)
        return rd_error(err, st, NULL, NULL, "out of memory while planning");
    if (st == REDIST_ERR_OVERFLOW)
        return rd_error(err, st, NULL, NULL,
                        "byte counts overflow 128 bits while planning");
    if (st)
        return st;
    if (!info->optimal) {
        info->bound_peak = v->bound_peak;
        if (v->cm)
            info->bound_time =
                (double)(tcost_units(info->bound_g) << v->S.tk) * 1e-15;
        else
            info->bound_recv = (uint64_t)((info->bound_g + v->D - 1) / v->D);
    }
    return REDIST_OK;
}

/* The answer as the spec's steps: the search's path to v->goal, or the
 * constructive plan; an uneven path with its layouts (info). */
static redist_status_t solve_emit(solve_t *v, rd_step **path, int *nsteps,
                                  rd_solve_info *info, redist_error_t *err)
{
    redist_status_t st;
    if (v->goal < 0) {
        st = emit_path(v->fb, v->nfb, v->inv, &v->fdst, path);
        if (st)
            return rd_error(err, st, NULL, NULL,
                            "out of memory while planning");
        *nsteps = v->nfb;
        return REDIST_OK;
    }
    int n;
    rd_step *p = walk_back(&v->S, v->goal, &n);
    search_free(&v->S);
    if (!p)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "out of memory while planning");
    st = emit_path(p, n, v->inv, &v->fdst, path);
    if (!st && v->uneven)
        st = path_layouts(v->U, p, n, *path, info);
    free(p);
    if (st) {
        if (v->uneven)
            free(*path);
        return rd_error(err, st, NULL, NULL, "out of memory while planning");
    }
    *nsteps = n;
    return REDIST_OK;
}

/* rd_solve, with the uneven context `U` (zeroed; freed by the caller):
 * pass 1 under the bound B, pass 2 under the least peak P when pass 1
 * finds no path, then what they proved and the path. */
static redist_status_t solve(const redist_spec_t *spec,
                             const redist_plan_options_t *opts, rd_step **path,
                             int *nsteps, rd_solve_info *info, rd_uctx *U,
                             redist_error_t *err)
{
    solve_t v;
    memset(&v, 0, offsetof(solve_t, S));
    memset(info, 0, sizeof *info);
    redist_status_t st = solve_setup(&v, spec, opts, U, err);
    if (st)
        return st;
    st = first_pass(&v, info); /* sets v.S up first */
    if (st == REDIST_OK && v.goal < 0 && !v.fb_best)
        st = least_peak_pass(&v, info, err);
    st = solve_verdict(&v, st, info, err);
    if (!st)
        st = solve_emit(&v, path, nsteps, info, err);
    search_free(&v.S);
    return st;
}

redist_status_t rd_solve(const redist_spec_t *spec,
                         const redist_plan_options_t *opts, rd_step **path,
                         int *nsteps, rd_solve_info *info,
                         redist_error_t *err)
{
    if (spec && !spec->uneven) /* the uneven context stays unused */
        return solve(spec, opts, path, nsteps, info, NULL, err);
    rd_uctx U;
    memset(&U, 0, sizeof U);
    redist_status_t st = solve(spec, opts, path, nsteps, info, &U, err);
    rd_uctx_free(&U);
    return st;
}

void rd_solve_info_free(rd_solve_info *info)
{
    for (int i = 0; info->lays && i < info->nlays; i++)
        rd_layout_free(&info->lays[i]);
    free(info->lays);
    info->lays = NULL;
    info->nlays = 0;
}
