/*
 * Layouts: which elements each block of a sharding type holds, for dims
 * that need not divide (doc/spec-format.md section 7).
 *
 * A type says which devices hold which block index (dim i is cut into k_i
 * = prod(sizes of dims[i]) blocks, the block index the mixed-radix number
 * of a device's coordinates on those axes, major first).  A layout adds,
 * per dim, the boundaries 0 = b_0 <= ... <= b_k = n of those blocks; a
 * device's box is the product over dims of [b_j, b_{j+1}) for its block
 * index j.  It is kept next to the type (redist_type_t stays a plain
 * value): the spec holds the source and target layouts, a plan one per
 * step.
 *
 * Rules.  ceil: c = ceil(n/k), b_j = min(j c, n).  balanced: b_j = j q +
 * min(j, r) with q = n / k, r = n mod k.  chunk: torch.chunk axis by axis,
 * major first: each block of the level above is cut into s pieces of
 * ceil(len/s) (the last ones short or empty).  Explicit blocks: prefix
 * sums of the given lengths.  When k divides n all four give b_j = j n/k.
 *
 * Anchored layouts (the planner's intermediate types, doc/uneven.md).  For
 * dim i of a type t with axis list L, let p_s and p_d be the lengths of
 * the longest common prefixes of L with the source's and the target's
 * lists.  The base partition is the source's blocks merged to its prefix
 * of length p_s (consecutive groups of prod(sizes of the source's axes
 * after the prefix) blocks), or the target's merged to p_d: the source's
 * when the dim's anchor bit says so and p_s > 0 (or p_d = 0), the
 * target's when p_d > 0 otherwise, the whole dim when both are 0.  The
 * axes of L after the chosen prefix then cut each base block with chunk
 * semantics.  So the source type anchored at the source is exactly the
 * source layout, the target anchored at the target is the target layout,
 * gathering minor axes off a source-anchored type and slicing toward the
 * target from a target-anchored one are exact (group-local), and for a dim
 * that divides evenly everywhere every anchor gives the even blocks.
 *
 * Cost: building a layout is O(sum_i k_i * axes of dim i); a box is
 * O(axes + dims).
 */
#include <stdlib.h>
#include <string.h>

#include "layout.h"

void rd_layout_free(rd_layout *l)
{
    if (!l || (!l->mem && !l->ndims)) /* empty already (even specs') */
        return;
    free(l->mem);
    memset(l, 0, sizeof *l);
}

/* Allocate boundaries for k[0..ndims-1] blocks. */
static int layout_alloc(rd_layout *l, int ndims, const int64_t k[])
{
    size_t total = 0;
    memset(l, 0, sizeof *l);
    l->ndims = ndims;
    for (int i = 0; i < ndims; i++) {
        if (k[i] > RD_LAYOUT_MAX_BLOCKS)
            return -2;
        total += (size_t)k[i] + 1;
    }
    l->mem = malloc((total ? total : 1) * sizeof *l->mem);
    if (!l->mem)
        return -1;
    size_t off = 0;
    for (int i = 0; i < ndims; i++) {
        l->k[i] = k[i];
        l->b[i] = l->mem + off;
        off += (size_t)k[i] + 1;
    }
    return 0;
}

int rd_layout_copy(rd_layout *dst, const rd_layout *src)
{
    rd_layout c;
    int r = layout_alloc(&c, src->ndims, src->k);
    if (r)
        return r;
    for (int i = 0; i < src->ndims; i++)
        memcpy(c.b[i], src->b[i], (size_t)(src->k[i] + 1) * sizeof(int64_t));
    *dst = c;
    return 0;
}

int rd_layout_equal(const rd_layout *a, const rd_layout *b)
{
    if (a->ndims != b->ndims)
        return 0;
    for (int i = 0; i < a->ndims; i++)
        if (a->k[i] != b->k[i] ||
            memcmp(a->b[i], b->b[i], (size_t)(a->k[i] + 1) * sizeof(int64_t)))
            return 0;
    return 1;
}

static int64_t dim_blocks(const redist_type_t *t, const redist_mesh_t *mesh,
                          int i, int from)
{
    int64_t k = 1;
    for (int a = from; a < t->dim_naxes[i]; a++)
        k *= mesh->size[t->dims[i][a]];
    return k;
}

static int64_t ceil_div64(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* Boundaries of dim i of t: base partition `base` (kb blocks) cut by the
 * axes of dims[i] from position `from` on, nested with ceil.  out gets
 * kb * prod(sizes) + 1 entries. */
static void nest(int64_t *out, const int64_t *base, int64_t kb,
                 const redist_type_t *t, const redist_mesh_t *mesh, int i,
                 int from, int64_t n)
{
    int64_t r = dim_blocks(t, mesh, i, from);
    int64_t k = kb * r;
    for (int64_t j = 0; j < k; j++) {
        int64_t lo = base[j / r], hi = base[j / r + 1], rest = j % r;
        int64_t div = r;
        for (int a = from; a < t->dim_naxes[i]; a++) {
            int64_t s = mesh->size[t->dims[i][a]];
            div /= s;
            int64_t c = rest / div % s, len = hi - lo;
            int64_t cc = ceil_div64(len, s);
            int64_t nlo = lo + (c * cc < len ? c * cc : len);
            int64_t nhi = lo + ((c + 1) * cc < len ? (c + 1) * cc : len);
            lo = nlo;
            hi = nhi;
        }
        out[j] = lo;
    }
    out[k] = n;
}

static void rule_dim(int64_t *out, int64_t k, int64_t n, redist_split_t rule,
                     const redist_type_t *t, const redist_mesh_t *mesh, int i)
{
    if (rule == REDIST_SPLIT_CHUNK) {
        int64_t base[2] = {0, n};
        nest(out, base, 1, t, mesh, i, 0, n);
        return;
    }
    int64_t c = ceil_div64(n, k), q = n / k, r = n % k;
    for (int64_t j = 0; j <= k; j++)
        out[j] = rule == REDIST_SPLIT_BALANCED ? j * q + (j < r ? j : r)
                                               : (j * c < n ? j * c : n);
}

int rd_layout_rule(rd_layout *out, const redist_type_t *t,
                   const redist_mesh_t *mesh, int ndims, const int64_t shape[],
                   redist_split_t rule, const int64_t *const blocks[])
{
    int64_t k[REDIST_MAX_DIMS] = {0};
    rd_layout l;
    for (int i = 0; i < ndims; i++)
        k[i] = dim_blocks(t, mesh, i, 0);
    int r = layout_alloc(&l, ndims, k);
    if (r)
        return r;
    for (int i = 0; i < ndims; i++) {
        if (blocks && blocks[i]) {
            l.b[i][0] = 0;
            for (int64_t j = 0; j < k[i]; j++)
                l.b[i][j + 1] = l.b[i][j] + blocks[i][j];
        } else {
            rule_dim(l.b[i], k[i], shape[i], rule, t, mesh, i);
        }
    }
    *out = l;
    return 0;
}

int rd_layout_dim_is_rule(const rd_layout *l, int i, const redist_type_t *t,
                          const redist_mesh_t *mesh, const int64_t shape[],
                          redist_split_t rule)
{
    int64_t k = l->k[i], n = shape[i];
    if (k != dim_blocks(t, mesh, i, 0))
        return 0;
    if (rule == REDIST_SPLIT_CHUNK) {
        int64_t *tmp = malloc((size_t)(k + 1) * sizeof *tmp);
        if (!tmp)
            return 0;
        rule_dim(tmp, k, n, rule, t, mesh, i);
        int eq = memcmp(tmp, l->b[i], (size_t)(k + 1) * sizeof *tmp) == 0;
        free(tmp);
        return eq;
    }
    int64_t c = ceil_div64(n, k), q = n / k, r = n % k;
    for (int64_t j = 0; j <= k; j++) {
        int64_t want = rule == REDIST_SPLIT_BALANCED
                           ? j * q + (j < r ? j : r)
                           : (j * c < n ? j * c : n);
        if (l->b[i][j] != want)
            return 0;
    }
    return 1;
}

int rd_layout_named(const rd_layout *l, const redist_type_t *t,
                    const redist_mesh_t *mesh, const int64_t shape[])
{
    for (int r = 0; r < REDIST_SPLIT_COUNT; r++) {
        int all = 1;
        for (int i = 0; i < l->ndims && all; i++)
            all = rd_layout_dim_is_rule(l, i, t, mesh, shape,
                                        (redist_split_t)r);
        if (all)
            return r;
    }
    return -1;
}

int rd_layout_is_even(const rd_layout *l, const int64_t shape[])
{
    for (int i = 0; i < l->ndims; i++) {
        int64_t k = l->k[i];
        if (shape[i] % k)
            return 0;
        for (int64_t j = 0; j <= k; j++)
            if (l->b[i][j] != j * (shape[i] / k))
                return 0;
    }
    return 1;
}

static int lcp(const redist_type_t *a, const redist_type_t *b, int i)
{
    int p = 0;
    while (p < a->dim_naxes[i] && p < b->dim_naxes[i] &&
           a->dims[i][p] == b->dims[i][p])
        p++;
    return p;
}

/* Dim i of the anchored layout into out (k_i + 1 entries). */
static int anchor_dim(int64_t *out, const redist_type_t *t,
                      const redist_mesh_t *mesh, int64_t n, int i,
                      const redist_type_t *src, const rd_layout *src_l,
                      const redist_type_t *dst, const rd_layout *dst_l,
                      int prefer_src)
{
    int ps = lcp(t, src, i), pd = lcp(t, dst, i);
    const redist_type_t *at = NULL;
    const rd_layout *al = NULL;
    int p = 0;
    if (ps > 0 && (prefer_src || pd == 0)) {
        at = src;
        al = src_l;
        p = ps;
    } else if (pd > 0) {
        at = dst;
        al = dst_l;
        p = pd;
    }
    if (!at) {
        int64_t base[2] = {0, n};
        nest(out, base, 1, t, mesh, i, 0, n);
        return 0;
    }
    int64_t g = dim_blocks(at, mesh, i, p), kb = al->k[i] / g;
    int64_t *base = malloc((size_t)(kb + 1) * sizeof *base);
    if (!base)
        return -1;
    for (int64_t j = 0; j <= kb; j++)
        base[j] = al->b[i][j * g];
    nest(out, base, kb, t, mesh, i, p, n);
    free(base);
    return 0;
}

int rd_layout_anchor(rd_layout *out, const redist_type_t *t,
                     const redist_mesh_t *mesh, const int64_t shape[],
                     const redist_type_t *src, const rd_layout *src_l,
                     const redist_type_t *dst, const rd_layout *dst_l,
                     unsigned src_first)
{
    int64_t k[REDIST_MAX_DIMS] = {0};
    rd_layout l;
    for (int i = 0; i < t->ndims; i++)
        k[i] = dim_blocks(t, mesh, i, 0);
    int r = layout_alloc(&l, t->ndims, k);
    if (r)
        return r;
    for (int i = 0; i < t->ndims; i++)
        if (anchor_dim(l.b[i], t, mesh, shape[i], i, src, src_l, dst, dst_l,
                       (int)(src_first >> i & 1u))) {
            rd_layout_free(&l);
            return -1;
        }
    *out = l;
    return 0;
}

unsigned rd_layout_anchor_bits(const redist_type_t *t,
                               const redist_mesh_t *mesh,
                               const int64_t shape[], const redist_type_t *src,
                               const rd_layout *src_l,
                               const redist_type_t *dst,
                               const rd_layout *dst_l)
{
    unsigned bits = 0;
    for (int i = 0; i < t->ndims; i++) {
        if (lcp(t, src, i) == 0 || lcp(t, dst, i) == 0)
            continue;
        int64_t k = dim_blocks(t, mesh, i, 0);
        int64_t *a = malloc((size_t)(k + 1) * 2 * sizeof *a);
        if (!a)
            return bits | 1u << i; /* keep both: never wrong */
        if (anchor_dim(a, t, mesh, shape[i], i, src, src_l, dst, dst_l, 1) ||
            anchor_dim(a + k + 1, t, mesh, shape[i], i, src, src_l, dst,
                       dst_l, 0) ||
            memcmp(a, a + k + 1, (size_t)(k + 1) * sizeof *a))
            bits |= 1u << i;
        free(a);
    }
    return bits;
}

int64_t rd_layout_block_index(const redist_type_t *t,
                              const redist_mesh_t *mesh, int i,
                              const int64_t coord[])
{
    int64_t b = 0;
    for (int a = 0; a < t->dim_naxes[i]; a++)
        b = b * mesh->size[t->dims[i][a]] + coord[t->dims[i][a]];
    return b;
}

void rd_layout_box_coord(const rd_layout *l, const redist_type_t *t,
                         const redist_mesh_t *mesh, const int64_t coord[],
                         int64_t lo[], int64_t hi[])
{
    for (int i = 0; i < l->ndims; i++) {
        int64_t j = rd_layout_block_index(t, mesh, i, coord);
        lo[i] = l->b[i][j];
        hi[i] = l->b[i][j + 1];
    }
}

int rd_layout_box(const rd_layout *l, const redist_type_t *t,
                  const redist_mesh_t *mesh, int64_t rank, int64_t lo[],
                  int64_t hi[])
{
    int64_t coord[REDIST_MAX_AXES];
    if (rank < 0 || rank >= mesh->ndevices)
        return -1;
    for (int a = 0; a < mesh->naxes; a++)
        coord[a] = rank / mesh->stride[a] % mesh->size[a];
    rd_layout_box_coord(l, t, mesh, coord, lo, hi);
    return 0;
}

uint64_t rd_layout_max_elems(const rd_layout *l, int64_t longest[])
{
    uint64_t e = 1;
    for (int i = 0; i < l->ndims; i++) {
        int64_t m = 0;
        for (int64_t j = 0; j < l->k[i]; j++)
            if (l->b[i][j + 1] - l->b[i][j] > m)
                m = l->b[i][j + 1] - l->b[i][j];
        if (longest)
            longest[i] = m;
        e *= (uint64_t)m;
    }
    return e;
}

redist_status_t rd_layout_check_blocks(const int64_t *len, int64_t count,
                                       int64_t k, int64_t n, int dim,
                                       const char *source, const char *path,
                                       redist_error_t *err)
{
    int64_t sum = 0;
    if (count != k)
        return rd_error(err, REDIST_ERR_INVALID, source, path,
                        "dim %d is split into %lld blocks; %lld lengths "
                        "given",
                        dim, (long long)k, (long long)count);
    for (int64_t j = 0; j < count; j++) {
        if (len[j] < 0)
            return rd_error(err, REDIST_ERR_INVALID, source, path,
                            "block %lld has length %lld; lengths must be "
                            ">= 0",
                            (long long)j, (long long)len[j]);
        if (__builtin_add_overflow(sum, len[j], &sum) || sum > n)
            return rd_error(err, REDIST_ERR_INVALID, source, path,
                            "the block lengths sum to more than the dim's "
                            "size %lld",
                            (long long)n);
    }
    if (sum != n)
        return rd_error(err, REDIST_ERR_INVALID, source, path,
                        "the block lengths sum to %lld, not to the dim's "
                        "size %lld",
                        (long long)sum, (long long)n);
    return REDIST_OK;
}
