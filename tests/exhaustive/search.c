/*
 * search.c - the exhaustive reference search of the tests (see search.h).
 *
 * Written from doc/spec-format.md alone, sharing nothing with src/:
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
 *     of at most that many local bytes; the edge cost is the pair (exact
 *     received bytes, collectives), compared lexicographically.  The first
 *     cap under which the target is reachable is the least peak; the
 *     Dijkstra distance there is the least (recv, collectives).
 *
 * Step table (s = axis size, L = local bytes before the step):
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef rx_u128 u128;

enum { X_SLICE, X_ALL_GATHER, X_ALL_TO_ALL, X_REDUCE_SCATTER, X_ALL_REDUCE,
       X_PERMUTE };

static const char *const xop_name[] = {"slice",          "all_gather",
                                       "all_to_all",     "reduce_scatter",
                                       "all_reduce",     "permute"};

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

/* ----------------------------------------------------------- Dijkstra */

typedef struct {
    u128 g;
    int c;
    long v;
} hent_t;

typedef struct {
    const tab_t *T;
    uint64_t cap;
    u128 D;
    u128 *g;
    int *c;
    uint8_t *seen, *done, *gfan;
    long *parent;
    uint8_t (*how)[4]; /* op, dim/from_dim, to_dim, axis of the last step */
    hent_t *heap;
    long nheap, heapcap;
    int failed;
} dj_t;

static int hless(const hent_t *a, const hent_t *b)
{
    return a->g < b->g || (a->g == b->g && a->c < b->c);
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

static void relax(dj_t *S, long v, long w, u128 cost, int coll, int op,
                  int d, int e, int a)
{
    if (w < 0 || S->done[w] || S->T->bytes[w] > S->cap)
        return;
    u128 ng = S->g[v] + cost;
    int nc = S->c[v] + coll;
    if (S->seen[w] && !(ng < S->g[w] || (ng == S->g[w] && nc < S->c[w])))
        return;
    S->seen[w] = 1;
    S->g[w] = ng;
    S->c[w] = nc;
    S->parent[w] = v;
    S->how[w][0] = (uint8_t)op;
    S->how[w][1] = (uint8_t)(d < 0 ? 0xFF : d);
    S->how[w][2] = (uint8_t)(e < 0 ? 0xFF : e);
    S->how[w][3] = (uint8_t)(a < 0 ? 0xFF : a);
    hent_t h = {ng, nc, w};
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

static void expand(dj_t *S, long v)
{
    const tab_t *T = S->T;
    const rx_problem_t *p = T->p;
    const xt_t *t = &T->t[v];
    const int64_t *loc = &T->loc[v * RX_MAX_DIMS];
    u128 LD = (u128)T->bytes[v] * S->D;
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
            relax(S, v, find_next(S, &nt), 0, 0, X_SLICE, d, -1, a);
        }
    }
    /* all_gather, all_to_all */
    for (int d = 0; d < p->ndims; d++) {
        if (t->n[d] == 0)
            continue;
        int a = t->ax[d][t->n[d] - 1];
        u128 s = (u128)p->size[a];
        xt_t ng = *t;
        ng.n[d]--;
        relax(S, v, find_next(S, &ng), (s - 1) * LD, 1, X_ALL_GATHER, d, -1,
              a);
        for (int e = 0; e < p->ndims; e++) {
            if (e == d || loc[e] % p->size[a] != 0)
                continue;
            xt_t na = ng;
            na.ax[e][na.n[e]++] = (uint8_t)a;
            relax(S, v, find_next(S, &na), (s - 1) * LD / s, 1, X_ALL_TO_ALL,
                  d, e, a);
        }
    }
    /* all_reduce, reduce_scatter */
    for (int a = 0; a < p->naxes; a++) {
        if (!(t->partial >> a & 1u))
            continue;
        u128 s = (u128)p->size[a];
        xt_t nr = *t;
        nr.partial &= ~(1u << a);
        relax(S, v, find_next(S, &nr), 2 * (s - 1) * LD / s, 1, X_ALL_REDUCE,
              -1, -1, a);
        for (int d = 0; d < p->ndims; d++) {
            if (loc[d] % p->size[a] != 0)
                continue;
            xt_t nsc = nr;
            nsc.ax[d][nsc.n[d]++] = (uint8_t)a;
            relax(S, v, find_next(S, &nsc), (s - 1) * LD / s, 1,
                  X_REDUCE_SCATTER, d, -1, a);
        }
    }
    /* permute: once per group, from its first popped member */
    long gid = T->group[v];
    if (!S->gfan[gid]) {
        S->gfan[gid] = 1;
        for (long k = T->gstart[gid]; k < T->gstart[gid + 1]; k++) {
            long w = T->gmem[k];
            if (w != v)
                relax(S, v, w, LD, 1, X_PERMUTE, -1, -1, -1);
        }
    }
}

/* 1: dst reached (S->g/c[dst] final), 0: unreachable, -1: failure. */
static int dijkstra(dj_t *S, long src, long dst)
{
    const tab_t *T = S->T;
    memset(S->seen, 0, (size_t)T->nt);
    memset(S->done, 0, (size_t)T->nt);
    memset(S->gfan, 0, (size_t)(T->ngroups ? T->ngroups : 1));
    S->nheap = 0;
    if (T->bytes[src] > S->cap)
        return 0;
    S->seen[src] = 1;
    S->g[src] = 0;
    S->c[src] = 0;
    S->parent[src] = -1;
    hent_t h0 = {0, 0, src};
    hpush(S, h0);
    while (S->nheap > 0 && !S->failed) {
        hent_t h = hpop(S);
        if (S->done[h.v])
            continue;
        S->done[h.v] = 1;
        if (h.v == dst)
            return 1;
        expand(S, h.v);
    }
    return S->failed ? -1 : 0;
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

static void describe_path(const dj_t *S, long src, long dst, rx_result_t *out)
{
    const tab_t *T = S->T;
    const rx_problem_t *p = T->p;
    long chain[4096];
    int n = 0;
    for (long v = dst; v != src && n < 4096; v = S->parent[v])
        chain[n++] = v;
    out->steps = n;
    size_t pos = 0, size = sizeof out->path;
    out->path[0] = '\0';
    for (int k = n - 1; k >= 0; k--) {
        long v = chain[k];
        const uint8_t *hw = S->how[v];
        char args[96], tf[512];
        redist_type_t t;
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
        xt_to_type(p, &T->t[v], &t);
        rx_format_type(p, &t, tf, sizeof tf);
        if (pos < size) {
            int m = snprintf(out->path + pos, size - pos, "%s%s(%s) -> %s",
                             k == n - 1 ? "" : "; ", xop_name[hw[0]], args, tf);
            if (m > 0)
                pos += (size_t)m;
        }
    }
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
 * problem without them (the rest renumbered). */
static void drop_size1_axes(const rx_problem_t *p, rx_problem_t *q)
{
    int map[RX_MAX_AXES];
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

static int search_reduced(const rx_problem_t *p, rx_result_t *out);

int rx_search(const rx_problem_t *p, rx_result_t *out)
{
    rx_problem_t q;
    memset(out, 0, sizeof *out);
    if (p->naxes < 1 || p->naxes > RX_MAX_AXES) {
        fprintf(stderr, "search: problem outside the search's limits\n");
        return -1;
    }
    drop_size1_axes(p, &q);
    return search_reduced(&q, out);
}

static int search_reduced(const rx_problem_t *p, rx_result_t *out)
{
    tab_t T;
    dj_t S;
    xt_t xs, xd;
    int rc = -1;
    memset(out, 0, sizeof *out);
    memset(&S, 0, sizeof S);
    if (p->naxes < 0 || p->naxes > RX_MAX_AXES || p->ndims < 0 ||
        p->ndims > RX_MAX_DIMS || p->elem_size == 0 ||
        type_to_xt(p, &p->from, &xs) || type_to_xt(p, &p->to, &xd)) {
        fprintf(stderr, "search: problem outside the search's limits\n");
        return -1;
    }
    if ((p->to.partial & ~p->from.partial) != 0)
        return 0; /* no step creates pending reductions: infeasible */
    if (build_table(&T, p)) {
        fprintf(stderr, "search: out of memory\n");
        goto done;
    }
    long src = lookup(&T, key_of(p, &xs)), dst = lookup(&T, key_of(p, &xd));
    if (src < 0 || dst < 0) {
        fprintf(stderr, "search: the source or target type is invalid\n");
        goto done;
    }
    out->ntypes = T.nt;
    out->src_bytes = T.bytes[src];
    out->dst_bytes = T.bytes[dst];
    uint64_t base = T.bytes[src] > T.bytes[dst] ? T.bytes[src] : T.bytes[dst];
    uint64_t D = 1;
    for (int a = 0; a < p->naxes; a++)
        D = D / gcd_u64(D, (uint64_t)p->size[a]) * (uint64_t)p->size[a];

    size_t n = (size_t)T.nt;
    uint64_t *caps = malloc(n * sizeof *caps);
    S.T = &T;
    S.D = D;
    S.g = malloc(n * sizeof *S.g);
    S.c = malloc(n * sizeof *S.c);
    S.seen = malloc(n);
    S.done = malloc(n);
    S.gfan = malloc((size_t)(T.ngroups ? T.ngroups : 1));
    S.parent = malloc(n * sizeof *S.parent);
    S.how = malloc(n * sizeof *S.how);
    if (!caps || !S.g || !S.c || !S.seen || !S.done || !S.gfan || !S.parent ||
        !S.how) {
        fprintf(stderr, "search: out of memory\n");
        free(caps);
        goto done;
    }
    size_t ncaps = 0;
    for (size_t i = 0; i < n; i++)
        if (T.bytes[i] >= base)
            caps[ncaps++] = T.bytes[i];
    qsort(caps, ncaps, sizeof *caps, cmp_u64);
    rc = 0;
    for (size_t k = 0; k < ncaps; k++) {
        if (k > 0 && caps[k] == caps[k - 1])
            continue;
        S.cap = caps[k];
        out->caps_tried++;
        int r = dijkstra(&S, src, dst);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r == 1) {
            out->feasible = 1;
            out->peak_bytes = caps[k];
            out->recv_num = S.g[dst];
            out->recv_den = D;
            out->recv_ceil = (uint64_t)((S.g[dst] + D - 1) / D);
            out->collectives = S.c[dst];
            describe_path(&S, src, dst, out);
            break;
        }
    }
    free(caps);
done:
    free(S.g);
    free(S.c);
    free(S.seen);
    free(S.done);
    free(S.gfan);
    free(S.parent);
    free(S.how);
    free(S.heap);
    free_table(&T);
    return rc;
}
