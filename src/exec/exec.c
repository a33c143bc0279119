/*
 * The SPMD executor: runs a plan on one device through a backend.
 *
 * PROGRAM.  A plan becomes a list of passes, each reading one local
 * buffer and writing another:
 *   slices (consecutive ones merged)  BOX    in L -> out L'   (in place ok)
 *   all_gather(i)      XCHG [s][L]; MERGE if pre_i > 1 (blocks along i)
 *   all_to_all(i->j)   SPLIT if pre_j > 1; XCHG; MERGE if pre_i > 1
 *   reduce_scatter(i)  SPLIT if pre_i > 1; XCHG (reduction by the backend)
 *   all_reduce         XCHG
 *   permute            XCHG (one send, one receive)
 *   exchange           XPACK unless every send piece is contiguous; XCHG
 *                      (point to point); XUNPACK unless every received
 *                      piece lands contiguous (exchange.c)
 * pre_d is the product of the local dims before d: with pre_d == 1 the
 * chunks along d are already contiguous and the pack / unpack is skipped.
 * A backend that runs whole steps (fused_ops) gets one FUSED pass instead.
 *
 * BUFFERS AND THE MEMORY PROMISE.  Four buffers exist: SRC and DST (the
 * caller's: S and T bytes) and scratch SA and SB (a and b bytes,
 * allocated by the executor through one counting allocator).  Each pass
 * writes a buffer other than the one it reads (a BOX may write its own
 * input), big enough for its output; SRC may be written only without
 * REDIST_EXEC_PRESERVE_SRC (its data is dead by then: only the buffer
 * read by the next pass holds live data); the data must end in DST,
 * possibly after one final COPY.  rd_program_build picks the assignment
 * with the least a + b (then: not writing SRC, then no final copy) by
 * trying candidate sizes (a, b) from the passes' output sizes in
 * increasing order, each checked by a forward reachability pass over
 * (pass, buffer).
 *
 * Why a + b <= M = max(S, T) for a memory-efficient plan (every local
 * size <= M) with the default flags: take a = M, b = 0.  If S >= T the two
 * buffers SRC and SA hold M bytes; the first pass reads SRC and writes
 * SA, then the passes alternate SA <-> SRC, and the last one writes DST
 * instead (its output, T bytes, fits).  If T > S, DST and SA hold M
 * bytes; SRC is only read by the first pass, which writes DST or SA,
 * chosen so that the alternation DST <-> SA ends in DST.  Either way no
 * pass reads and writes the same buffer, so the candidate (M, 0) is
 * always feasible and the search returns at most M.  With
 * REDIST_EXEC_PRESERVE_SRC, (M, M) is always feasible (SA <-> SB, then a
 * copy), hence at most 2M; for any plan (a, b) = (peak, peak) is, hence
 * at most 2 * peak.  A plan of slices only is one BOX from SRC to DST: no
 * scratch.  The sim backend needs no memory of its own (it reads its
 * peers' buffers directly); a backend that does must count it with the
 * same allocator.
 *
 * SPARE REGIONS.  During a backend pass, the largest region of the four
 * buffers that holds no live data (a buffer the pass neither reads nor
 * writes, SRC only when it may be written, or the unused tail of one it
 * does) is handed to the backend (be->spare) as work space, e.g. for
 * reductions; a second one within SA / SB (be->spare_scratch) for
 * backends whose scratch is special (symmetric).  Spares depend only on
 * the buffer sizes, so they are the same on every rank.
 *
 * IN-PLACE PASSES.  A backend may run some exchanges with send == recv
 * (rd_backend_ops.inplace_ops), given a spare region of some size
 * (inplace_need).  With be->build & RD_BUILD_INPLACE the search above
 * also lets such passes write their own input buffer, for each candidate
 * size after the assignments without them: in-place passes appear only
 * where they lower a + b.  The MPI backend asks for them when max_scratch
 * is below the executor's default; the OpenSHMEM backend always on
 * private buffers (one symmetric scratch buffer instead of two).
 *
 * FAILURE.  Everything that can fail locally (arguments, the program,
 * the scratch) happens before any data moves and is combined across
 * ranks by the backend's `agree`; a backend error in the middle of a plan
 * aborts the other ranks through `abort`.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_internal.h"
#include "kernels.h"
#include "../core/internal.h"

/* ------------------------------------------------------------ helpers */

static uint64_t prod_before(const int64_t *shape, int d)
{
    uint64_t p = 1;
    for (int i = 0; i < d; i++)
        p *= (uint64_t)shape[i];
    return p;
}

static uint64_t prod_after(const int64_t *shape, int nd, int d)
{
    uint64_t p = 1;
    for (int i = d + 1; i < nd; i++)
        p *= (uint64_t)shape[i];
    return p;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void type_before(const redist_plan_t *plan, int k, redist_type_t *t)
{
    if (k == 0) {
        *t = *redist_spec_from(redist_plan_spec(plan));
    } else {
        redist_step_view_t v;
        redist_plan_step(plan, k - 1, &v);
        *t = v.after;
    }
}

/* ------------------------------------------------------- permutation */

static uint64_t block_key(const redist_mesh_t *mesh, const redist_type_t *t,
                          const int64_t *coords)
{
    uint64_t key = 0;
    for (int i = 0; i < t->ndims; i++) {
        uint64_t nb = 1, idx = 0;
        for (int k = 0; k < t->dim_naxes[i]; k++) {
            int a = t->dims[i][k];
            uint64_t s = (uint64_t)redist_mesh_axis_size(mesh, a);
            idx = idx * s + (uint64_t)coords[a];
            nb *= s;
        }
        key = key * nb + idx;
    }
    for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
        if (t->partial >> a & 1u)
            key = key * (uint64_t)redist_mesh_axis_size(mesh, a) +
                  (uint64_t)coords[a];
    return key;
}

typedef struct {
    uint64_t before, after;
} key_pair;

static key_pair keys_of(const redist_mesh_t *mesh, const redist_type_t *b,
                        const redist_type_t *a, int64_t rank)
{
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, rank, c);
    key_pair k = {block_key(mesh, b, c), block_key(mesh, a, c)};
    return k;
}

redist_status_t rd_permute_peers(const redist_mesh_t *mesh,
                                 const redist_type_t *before,
                                 const redist_type_t *after, int64_t rank,
                                 int64_t *send_to, int64_t *recv_from)
{
    int64_t D = redist_mesh_num_devices(mesh);
    key_pair me = keys_of(mesh, before, after, rank);
    if (me.before == me.after) {
        *send_to = *recv_from = rank;
        return REDIST_OK;
    }
    /* my position among the non-keeping holders of my old block, and
     * among the non-keeping receivers of my new block (rank order) */
    int64_t qs = 0, qr = 0;
    for (int64_t e = 0; e < rank; e++) {
        key_pair k = keys_of(mesh, before, after, e);
        if (k.before == k.after)
            continue;
        qs += k.before == me.before;
        qr += k.after == me.after;
    }
    int64_t to = -1, from = -1;
    for (int64_t e = 0; e < D && (to < 0 || from < 0); e++) {
        key_pair k = keys_of(mesh, before, after, e);
        if (k.before == k.after)
            continue;
        if (k.after == me.before && to < 0 && qs-- == 0)
            to = e;
        if (k.before == me.after && from < 0 && qr-- == 0)
            from = e;
    }
    if (to < 0 || from < 0)
        return REDIST_ERR_PLAN;
    *send_to = to;
    *recv_from = from;
    return REDIST_OK;
}

/* ---------------------------------------------------------- program */

static rd_pass *add_pass(rd_program *p, int kind, int step, uint64_t in,
                         uint64_t out)
{
    rd_pass *ps = &p->pass[p->npasses++];
    memset(ps, 0, sizeof *ps);
    ps->kind = kind;
    ps->first = ps->last = step;
    ps->in_bytes = in;
    ps->out_bytes = out;
    ps->in_buf = ps->out_buf = -1;
    ps->xi = -1;
    ps->inplace_need = UINT64_MAX;
    ps->spare_buf = ps->sspare_buf = -1;
    return ps;
}

static redist_status_t build_passes(const redist_plan_t *plan,
                                    unsigned fused_ops, rd_program *p,
                                    redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec), n = redist_plan_num_steps(plan);
    uint64_t elem = redist_dtype_size(redist_spec_dtype(spec));
    int64_t cur[REDIST_MAX_DIMS];
    redist_step_view_t v;

    p->pass = calloc((size_t)(3 * n + 2), sizeof *p->pass);
    if (!p->pass)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    redist_type_local_shape(redist_spec_from(spec), mesh,
                            redist_spec_shape(spec), cur);
    uint64_t L = redist_spec_src_bytes(spec);
    int nx = 0;
    for (int k = 0; k < n; k++) {
        redist_plan_step(plan, k, &v);
        nx += v.op == REDIST_OP_EXCHANGE;
    }
    if (nx && !(p->xchg = calloc((size_t)nx, sizeof *p->xchg)))
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    for (int k = 0; k < n;) {
        redist_plan_step(plan, k, &v);
        if (v.op == REDIST_OP_SLICE) {
            int first = k;
            while (k + 1 < n) {
                redist_step_view_t w;
                redist_plan_step(plan, k + 1, &w);
                if (w.op != REDIST_OP_SLICE)
                    break;
                k++;
                v = w;
            }
            rd_pass *ps = add_pass(p, RD_PASS_BOX, first, L, v.local_bytes);
            ps->last = k;
            ps->inplace_ok = 1;
            ps->x.op = REDIST_OP_SLICE;
            ps->x.index = first;
            ps->x.ndims = nd;
            ps->x.elem = (size_t)elem;
            ps->x.dtype = redist_spec_dtype(spec);
            ps->x.reduce = redist_spec_reduce(spec);
            ps->x.group.axis = -1;
            memcpy(ps->x.in_shape, cur, sizeof cur);
            memcpy(ps->x.out_shape, v.local_shape, sizeof cur);
            memcpy(cur, v.local_shape, sizeof cur);
            L = v.local_bytes;
            k++;
            continue;
        }
        uint64_t s = v.op == REDIST_OP_PERMUTE || v.op == REDIST_OP_EXCHANGE
                         ? 1
                         : (uint64_t)redist_mesh_axis_size(mesh, v.axis);
        rd_xstep x;
        memset(&x, 0, sizeof x);
        x.op = v.op;
        x.index = k;
        x.dim = v.dim;
        x.from_dim = v.from_dim;
        x.to_dim = v.to_dim;
        x.ndims = nd;
        memcpy(x.in_shape, cur, sizeof cur);
        memcpy(x.out_shape, v.local_shape, sizeof cur);
        x.elem = (size_t)elem;
        x.dtype = redist_spec_dtype(spec);
        x.reduce = redist_spec_reduce(spec);
        x.group.axis = v.axis;
        x.group.size = (int64_t)s;
        uint64_t out = v.local_bytes;
        rd_pass *ps;
        p->collectives++;
        int xi = -1;
        if (v.op == REDIST_OP_EXCHANGE) {
            redist_type_t before;
            type_before(plan, k, &before);
            xi = p->nxchg++;
            rd_xchg_init(&p->xchg[xi], mesh, &before, &v.after, cur,
                         v.local_shape, nd, (size_t)elem);
        }
        if (fused_ops >> v.op & 1u) {
            ps = add_pass(p, RD_PASS_FUSED, k, L, out);
            ps->x = x;
            ps->xi = xi;
        } else {
            switch (v.op) {
            case REDIST_OP_EXCHANGE:
                /* the packed pieces take at most L bytes (exchange.c) */
                if (p->xchg[xi].pack) {
                    ps = add_pass(p, RD_PASS_XPACK, k, L, L);
                    ps->xi = xi;
                }
                ps = add_pass(p, RD_PASS_XCHG, k, L, out);
                ps->x = x;
                ps->xi = xi;
                if (p->xchg[xi].unpack) {
                    ps = add_pass(p, RD_PASS_XUNPACK, k, out, out);
                    ps->xi = xi;
                }
                break;
            case REDIST_OP_ALL_GATHER: {
                int i = v.dim;
                ps = add_pass(p, RD_PASS_XCHG, k, L, L * s);
                ps->x = x;
                uint64_t pre = prod_before(cur, i);
                if (pre > 1 && s > 1) {
                    ps = add_pass(p, RD_PASS_MERGE, k, L * s, L * s);
                    ps->pre = pre;
                    ps->s = s;
                    ps->chunk = (uint64_t)cur[i] * prod_after(cur, nd, i) * elem;
                }
                break;
            }
            case REDIST_OP_ALL_TO_ALL: {
                int i = v.from_dim, j = v.to_dim;
                int64_t piece[REDIST_MAX_DIMS];
                uint64_t pre = prod_before(cur, j);
                if (pre > 1 && s > 1) {
                    ps = add_pass(p, RD_PASS_SPLIT, k, L, L);
                    ps->pre = pre;
                    ps->s = s;
                    ps->chunk = (uint64_t)cur[j] / s *
                                prod_after(cur, nd, j) * elem;
                }
                ps = add_pass(p, RD_PASS_XCHG, k, L, L);
                ps->x = x;
                memcpy(piece, cur, sizeof piece);
                piece[j] /= (int64_t)s;
                pre = prod_before(piece, i);
                if (pre > 1 && s > 1) {
                    ps = add_pass(p, RD_PASS_MERGE, k, L, L);
                    ps->pre = pre;
                    ps->s = s;
                    ps->chunk = (uint64_t)piece[i] *
                                prod_after(piece, nd, i) * elem;
                }
                break;
            }
            case REDIST_OP_REDUCE_SCATTER: {
                int i = v.dim;
                uint64_t pre = prod_before(cur, i);
                if (pre > 1 && s > 1) {
                    ps = add_pass(p, RD_PASS_SPLIT, k, L, L);
                    ps->pre = pre;
                    ps->s = s;
                    ps->chunk = (uint64_t)cur[i] / s *
                                prod_after(cur, nd, i) * elem;
                }
                ps = add_pass(p, RD_PASS_XCHG, k, L, L / s);
                ps->x = x;
                break;
            }
            default: /* all_reduce, permute */
                ps = add_pass(p, RD_PASS_XCHG, k, L, L);
                ps->x = x;
                break;
            }
        }
        if (p->pass[p->npasses - 1].out_bytes != out)
            return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                            "internal error: step %d changes %llu bytes "
                            "into %llu, the plan says %llu",
                            k, (unsigned long long)L,
                            (unsigned long long)p->pass[p->npasses - 1]
                                .out_bytes,
                            (unsigned long long)out);
        memcpy(cur, v.local_shape, sizeof cur);
        L = out;
        k++;
    }
    return REDIST_OK;
}

/* The largest region that holds no live data while a pass reads buffer
 * `in` and writes `out`: a buffer it does not touch (SRC only when it may
 * be written, src_ok > 0: its data is dead once read), else the unused
 * tail of `out` or of `in`.  Only one buffer holds live data between
 * passes.  src_ok < 0: only regions of the scratch buffers SA and SB
 * (memory the backend allocated, e.g. symmetric). */
static void spare_region(const rd_pass *ps, const uint64_t cap[RD_NBUF],
                         int src_ok, int in, int out, int *buf, uint64_t *off,
                         uint64_t *bytes)
{
    *buf = -1;
    *off = *bytes = 0;
    for (int b = 0; b < RD_NBUF; b++) {
        if (b == in || b == out || (b == RD_BUF_SRC && !src_ok))
            continue;
        if (src_ok < 0 && b != RD_BUF_SA && b != RD_BUF_SB)
            continue;
        if (cap[b] > *bytes) {
            *buf = b;
            *bytes = cap[b];
        }
    }
    uint64_t used = ps->out_bytes;
    if (in == out && ps->in_bytes > used)
        used = ps->in_bytes;
    int scr_out = out == RD_BUF_SA || out == RD_BUF_SB;
    int scr_in = in == RD_BUF_SA || in == RD_BUF_SB;
    if (src_ok < 0 && !scr_out)
        ; /* scratch only: not the tail of a caller's buffer */
    else if (cap[out] > used && cap[out] - used > *bytes) {
        *buf = out;
        *off = used;
        *bytes = cap[out] - used;
    }
    if (in != out && (in != RD_BUF_SRC || src_ok > 0) &&
        (src_ok >= 0 || scr_in) && cap[in] > ps->in_bytes &&
        cap[in] - ps->in_bytes > *bytes) {
        *buf = in;
        *off = ps->in_bytes;
        *bytes = cap[in] - ps->in_bytes;
    }
}

static int backend_pass(const rd_pass *ps)
{
    return ps->kind == RD_PASS_XCHG || ps->kind == RD_PASS_FUSED;
}

/* Can the passes run with these buffer capacities?  On success the
 * passes' in_buf/out_buf are set and *copy says whether a final copy to
 * DST is needed.  With `inplace`, backend passes the backend can run in
 * place may write their own input buffer when the spare region then is
 * large enough. */
static int assign(rd_program *p, const uint64_t cap[RD_NBUF], int allow_src,
                  int allow_copy, int recv_scratch, int src_ok, int inplace,
                  signed char *reach, int *copy)
{
    int n = p->npasses;
    /* reach[k*RD_NBUF + b]: after k passes the data can be in b; the
     * value is the buffer it came from + 1 (0: unreachable) */
    memset(reach, 0, (size_t)(n + 1) * RD_NBUF);
    reach[RD_BUF_SRC] = RD_BUF_SRC + 1;
    for (int k = 0; k < n; k++) {
        const rd_pass *ps = &p->pass[k];
        int xchg = ps->kind == RD_PASS_XCHG || ps->kind == RD_PASS_FUSED;
        for (int in = 0; in < RD_NBUF; in++) {
            if (!reach[k * RD_NBUF + in])
                continue;
            for (int b = 0; b < RD_NBUF; b++) {
                if (reach[(k + 1) * RD_NBUF + b])
                    continue;
                if (b == in && !ps->inplace_ok) {
                    if (!inplace || ps->inplace_need == UINT64_MAX)
                        continue;
                    int sb;
                    uint64_t so, sn;
                    spare_region(ps, cap, src_ok, in, in, &sb, &so, &sn);
                    if (sn < ps->inplace_need)
                        continue;
                }
                if (b == RD_BUF_SRC && !allow_src)
                    continue;
                if (cap[b] < ps->out_bytes)
                    continue;
                if (xchg && recv_scratch && b != RD_BUF_SA && b != RD_BUF_SB)
                    continue;
                reach[(k + 1) * RD_NBUF + b] = (signed char)(in + 1);
            }
        }
    }
    int end;
    if (reach[n * RD_NBUF + RD_BUF_DST]) {
        end = RD_BUF_DST;
        *copy = 0;
    } else {
        if (!allow_copy)
            return 0;
        end = -1;
        for (int b = 0; b < RD_NBUF && end < 0; b++)
            if (reach[n * RD_NBUF + b])
                end = b;
        if (end < 0)
            return 0;
        *copy = 1;
    }
    for (int k = n; k > 0; k--) {
        int from = reach[k * RD_NBUF + end] - 1;
        p->pass[k - 1].out_buf = end;
        p->pass[k - 1].in_buf = from;
        end = from;
    }
    return 1;
}

static int cmp_u64_pair(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    uint64_t sa = a[0] + a[1], sb = b[0] + b[1];
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return 0;
}

static redist_status_t program_build(const redist_plan_t *plan,
                                     const redist_backend_t *be,
                                     unsigned caps, unsigned fused_ops,
                                     int inplace, unsigned flags,
                                     rd_program *p, redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    memset(p, 0, sizeof *p);
    p->src_bytes = redist_spec_src_bytes(spec);
    p->dst_bytes = redist_spec_dst_bytes(spec);
    redist_status_t st = build_passes(plan, fused_ops, p, err);
    if (st)
        return st;
    if (inplace)
        for (int k = 0; k < p->npasses; k++) {
            rd_pass *ps = &p->pass[k];
            if (backend_pass(ps) && (be->ops->inplace_ops >> ps->x.op & 1u))
                ps->inplace_need = be->ops->inplace_need(
                    be, &ps->x, ps->kind == RD_PASS_FUSED, ps->in_bytes);
        }

    int n = p->npasses;
    uint64_t *vals = malloc(sizeof *vals * (size_t)(n + 1));
    uint64_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(n + 1) *
                             (size_t)(n + 1));
    signed char *reach = malloc((size_t)(n + 1) * RD_NBUF);
    if (!vals || !pairs || !reach) {
        free(vals);
        free(pairs);
        free(reach);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    int nv = 0;
    vals[nv++] = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int j = 0; j < nv; j++)
            seen |= vals[j] == p->pass[k].out_bytes;
        if (!seen)
            vals[nv++] = p->pass[k].out_bytes;
    }
    int np = 0;
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++)
            if (vals[j] <= vals[i]) {
                pairs[2 * np] = vals[i];
                pairs[2 * np + 1] = vals[j];
                np++;
            }
    qsort(pairs, (size_t)np, 2 * sizeof *pairs, cmp_u64_pair);

    int preserve = (flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    int recv_scratch = (caps & RD_CAP_RECV_IN_SCRATCH) != 0;
    int found = 0, copy = 0;
    uint64_t cap[RD_NBUF];
    /* in-place passes only where they lower the scratch: for each size,
     * the assignments without them first */
    for (int q = 0; q < np && !found; q++) {
        cap[RD_BUF_SRC] = p->src_bytes;
        cap[RD_BUF_DST] = p->dst_bytes;
        cap[RD_BUF_SA] = pairs[2 * q];
        cap[RD_BUF_SB] = pairs[2 * q + 1];
        for (int ip = 0; ip <= (inplace != 0) && !found; ip++)
            for (int mode = 0; mode < 4 && !found; mode++) {
                int allow_src = mode >= 2, allow_copy = mode & 1;
                if (allow_src && preserve)
                    continue;
                if (assign(p, cap, allow_src, allow_copy, recv_scratch,
                           !preserve, ip, reach, &copy)) {
                    found = 1;
                    p->scratch[0] = pairs[2 * q];
                    p->scratch[1] = pairs[2 * q + 1];
                }
            }
    }
    free(vals);
    free(pairs);
    free(reach);
    if (!found) /* cannot happen: (peak, peak) with a copy always works */
        return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                        "internal error: no buffer assignment");
    if (copy) {
        int last = n ? p->pass[n - 1].out_buf : RD_BUF_SRC;
        rd_pass *ps = add_pass(p, RD_PASS_COPY, -1, p->dst_bytes,
                               p->dst_bytes);
        ps->in_buf = last;
        ps->out_buf = RD_BUF_DST;
    }
    /* drop scratch the passes do not use, then give every backend pass
     * the largest region it leaves free (in-place passes keep the one
     * they were planned with) */
    int used[RD_NBUF] = {0};
    for (int k = 0; k < p->npasses; k++) {
        rd_pass *ps = &p->pass[k];
        used[ps->in_buf] = 1;
        used[ps->out_buf] = 1;
        if (backend_pass(ps) && ps->in_buf == ps->out_buf) {
            p->inplace_passes++;
            spare_region(ps, cap, !preserve, ps->in_buf, ps->out_buf,
                         &ps->spare_buf, &ps->spare_off, &ps->spare_bytes);
            if (ps->spare_buf >= 0)
                used[ps->spare_buf] = 1;
        }
    }
    if (!used[RD_BUF_SA])
        cap[RD_BUF_SA] = p->scratch[0] = 0;
    if (!used[RD_BUF_SB])
        cap[RD_BUF_SB] = p->scratch[1] = 0;
    for (int k = 0; k < p->npasses; k++) {
        rd_pass *ps = &p->pass[k];
        if (backend_pass(ps) && ps->in_buf != ps->out_buf)
            spare_region(ps, cap, !preserve, ps->in_buf, ps->out_buf,
                         &ps->spare_buf, &ps->spare_off, &ps->spare_bytes);
        /* within the scratch, besides the spare region (not for in-place
         * passes, whose spare region may hold their staged input) */
        if (backend_pass(ps) && ps->in_buf != ps->out_buf) {
            spare_region(ps, cap, -1, ps->in_buf, ps->out_buf,
                         &ps->sspare_buf, &ps->sspare_off,
                         &ps->sspare_bytes);
            if (ps->sspare_buf == ps->spare_buf &&
                ps->sspare_off == ps->spare_off)
                ps->sspare_buf = -1, ps->sspare_bytes = 0;
        }
        if (ps->out_buf == RD_BUF_SRC ||
            (ps->spare_buf == RD_BUF_SRC && ps->spare_bytes))
            p->writes_src = 1;
    }
    return REDIST_OK;
}

redist_status_t rd_program_build(const redist_plan_t *plan, unsigned caps,
                                 unsigned fused_ops, unsigned flags,
                                 rd_program *p, redist_error_t *err)
{
    return program_build(plan, NULL, caps, fused_ops, 0, flags, p, err);
}

redist_status_t rd_program_build_for(const redist_plan_t *plan,
                                     const redist_backend_t *be,
                                     unsigned flags, rd_program *p,
                                     redist_error_t *err)
{
    if (!be || !be->ops)
        return program_build(plan, NULL, 0, 0, 0, flags, p, err);
    const rd_backend_ops *o = be->ops;
    int inplace = (be->build & RD_BUILD_INPLACE) && o->inplace_ops &&
                  o->inplace_need;
    return program_build(plan, be, o->caps, o->step ? o->fused_ops : 0,
                         inplace, flags, p, err);
}

redist_status_t rd_program_bind(rd_program *p, const redist_plan_t *plan,
                                int64_t rank, redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, rank, c);
    for (int k = 0; k < p->npasses; k++) {
        rd_pass *ps = &p->pass[k];
        if (ps->kind == RD_PASS_BOX) {
            int64_t part[REDIST_MAX_DIMS];
            memcpy(part, ps->x.in_shape, sizeof part);
            memset(ps->off, 0, sizeof ps->off);
            for (int q = ps->first; q <= ps->last; q++) {
                redist_step_view_t v;
                redist_plan_step(plan, q, &v);
                int64_t s = redist_mesh_axis_size(mesh, v.axis);
                part[v.dim] /= s;
                ps->off[v.dim] += c[v.axis] * part[v.dim];
            }
        } else if (ps->xi >= 0) {
            rd_xchg *xc = &p->xchg[ps->xi];
            if (xc->rank != rank) {
                redist_status_t st = rd_xchg_bind(xc, rank, err);
                if (st)
                    return st;
            }
            ps->x.xchg = xc;
        } else if (ps->kind == RD_PASS_XCHG || ps->kind == RD_PASS_FUSED) {
            if (ps->x.op == REDIST_OP_PERMUTE) {
                redist_type_t before;
                redist_step_view_t v;
                type_before(plan, ps->first, &before);
                redist_plan_step(plan, ps->first, &v);
                if (rd_permute_peers(mesh, &before, &v.after, rank,
                                     &ps->x.send_to, &ps->x.recv_from))
                    return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                                    "internal error: no permute partner "
                                    "for device %lld at step %d",
                                    (long long)rank, ps->first);
                ps->x.group.index = 0;
                ps->x.group.base = rank;
                ps->x.group.stride = 1;
            } else {
                int a = ps->x.group.axis;
                int64_t stride = 1;
                for (int b = a + 1; b < redist_mesh_num_axes(mesh); b++)
                    stride *= redist_mesh_axis_size(mesh, b);
                ps->x.group.index = c[a];
                ps->x.group.stride = stride;
                ps->x.group.base = rank - c[a] * stride;
            }
        }
    }
    return REDIST_OK;
}

void rd_program_free(rd_program *p)
{
    if (p) {
        free(p->pass);
        p->pass = NULL;
        for (int i = 0; i < p->nxchg; i++)
            rd_xchg_unbind(&p->xchg[i]);
        free(p->xchg);
        p->xchg = NULL;
        p->nxchg = 0;
    }
}

/* Does the backend run every pass of the program?  (Exchange steps are
 * optional in the ops table.) */
static redist_status_t check_backend(const rd_program *p,
                                     const rd_backend_ops *ops,
                                     redist_error_t *err)
{
    for (int k = 0; k < p->npasses; k++)
        if (p->pass[k].kind == RD_PASS_XCHG &&
            p->pass[k].x.op == REDIST_OP_EXCHANGE && !ops->exchange)
            return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                            "backend %s does not run exchange steps (step "
                            "%d); plan with --objective bytes, or run "
                            "on a backend that has them (sim)",
                            ops->name, p->pass[k].first + 1);
    return REDIST_OK;
}

/* ------------------------------------------------------------- hash */

static void fnv(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 0x100000001b3ULL;
    }
}

static void fnv_i64(uint64_t *h, int64_t v) { fnv(h, &v, sizeof v); }

static void fnv_type(uint64_t *h, const redist_type_t *t)
{
    fnv_i64(h, t->ndims);
    for (int i = 0; i < t->ndims; i++) {
        fnv_i64(h, t->dim_naxes[i]);
        for (int k = 0; k < t->dim_naxes[i]; k++)
            fnv_i64(h, t->dims[i][k]);
    }
    fnv_i64(h, (int64_t)t->partial);
}

uint64_t rd_plan_hash(const redist_plan_t *plan, unsigned flags)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(spec);
    fnv_i64(&h, flags);
    fnv_i64(&h, redist_mesh_num_axes(mesh));
    for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
        fnv_i64(&h, redist_mesh_axis_size(mesh, a));
    fnv_i64(&h, redist_spec_ndims(spec));
    for (int i = 0; i < redist_spec_ndims(spec); i++)
        fnv_i64(&h, redist_spec_shape(spec)[i]);
    fnv_i64(&h, redist_spec_dtype(spec));
    fnv_i64(&h, redist_spec_reduce(spec));
    fnv_type(&h, redist_spec_from(spec));
    fnv_type(&h, redist_spec_to(spec));
    fnv_i64(&h, redist_plan_num_steps(plan));
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        fnv_i64(&h, v.op);
        fnv_i64(&h, v.dim);
        fnv_i64(&h, v.from_dim);
        fnv_i64(&h, v.to_dim);
        fnv_i64(&h, v.axis);
        fnv_type(&h, &v.after);
    }
    return h;
}

/* ------------------------------------------------------- public API */

const char *redist_backend_name(const redist_backend_t *be)
{
    return be && be->ops ? be->ops->name : NULL;
}

int64_t redist_backend_rank(const redist_backend_t *be)
{
    return be ? be->rank : -1;
}

int64_t redist_backend_size(const redist_backend_t *be)
{
    return be ? be->size : 0;
}

static const unsigned known_flags = REDIST_EXEC_PRESERVE_SRC;

redist_status_t redist_plan_exec_info(const redist_plan_t *plan,
                                      const redist_backend_t *be,
                                      const redist_exec_options_t *opts,
                                      redist_exec_info_t *out,
                                      redist_error_t *err)
{
    rd_program p;
    unsigned flags = opts ? opts->flags : 0;
    if (!plan || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL plan or output");
    if (flags & ~known_flags)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown execution flags 0x%x", flags & ~known_flags);
    redist_status_t st = rd_program_build_for(plan, be, flags, &p, err);
    if (!st && be && be->ops)
        st = check_backend(&p, be->ops, err);
    if (st) {
        rd_program_free(&p);
        return st;
    }
    memset(out, 0, sizeof *out);
    out->scratch_bytes = p.scratch[0] + p.scratch[1];
    out->src_bytes = p.src_bytes;
    out->dst_bytes = p.dst_bytes;
    out->bound_bytes = p.src_bytes > p.dst_bytes ? p.src_bytes : p.dst_bytes;
    out->writes_src = p.writes_src;
    out->passes = p.npasses;
    out->collectives = p.collectives;
    out->inplace_passes = p.inplace_passes;
    rd_program_free(&p);
    return REDIST_OK;
}

uint64_t redist_plan_scratch_bytes(const redist_plan_t *plan,
                                   const redist_backend_t *be,
                                   const redist_exec_options_t *opts)
{
    redist_exec_info_t info;
    if (redist_plan_exec_info(plan, be, opts, &info, NULL))
        return 0;
    return info.scratch_bytes;
}

/* The counting allocator: all executor scratch goes through it. */
typedef struct rd_counter {
    redist_backend_t *be;
    uint64_t cur, high, count;
} rd_counter;

static void *scratch_alloc(rd_counter *c, uint64_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX)
        return NULL;
    void *p = c->be->ops->alloc ? c->be->ops->alloc(c->be, (size_t)bytes)
                                : malloc((size_t)bytes);
    if (p) {
        c->cur += bytes;
        c->count++;
        if (c->cur > c->high)
            c->high = c->cur;
    }
    return p;
}

static void scratch_free(rd_counter *c, void *p, uint64_t bytes)
{
    if (!p)
        return;
    if (c->be->ops->free)
        c->be->ops->free(c->be, p, (size_t)bytes);
    else
        free(p);
    c->cur -= bytes;
}

static uint64_t div_up(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

static redist_status_t run_pass(redist_backend_t *be, const rd_pass *ps,
                                void *const buf[RD_NBUF],
                                redist_exec_report_t *r, redist_error_t *err)
{
    const rd_backend_ops *ops = be->ops;
    void *in = buf[ps->in_buf], *out = buf[ps->out_buf];
    const rd_xstep *x = &ps->x;
    uint64_t L = ps->in_bytes, s = (uint64_t)x->group.size;
    switch (ps->kind) {
    case RD_PASS_COPY:
        memcpy(out, in, (size_t)ps->out_bytes);
        return REDIST_OK;
    case RD_PASS_BOX: {
        int64_t zero[REDIST_MAX_DIMS] = {0};
        rd_kernel_box(out, x->out_shape, zero, in, x->in_shape, ps->off,
                      x->out_shape, x->ndims, x->elem);
        return REDIST_OK;
    }
    case RD_PASS_SPLIT:
        rd_kernel_split(out, in, ps->pre, ps->s, ps->chunk);
        return REDIST_OK;
    case RD_PASS_MERGE:
        rd_kernel_merge(out, in, ps->pre, ps->s, ps->chunk);
        return REDIST_OK;
    case RD_PASS_XPACK:
        rd_xchg_pack(x->xchg, in, out);
        return REDIST_OK;
    case RD_PASS_XUNPACK:
        rd_xchg_unpack(x->xchg, in, out);
        return REDIST_OK;
    default:
        break;
    }
    /* logical traffic of the step (FORMATS.md section 2) */
    switch (x->op) {
    case REDIST_OP_ALL_GATHER:
        r->recv_bytes += (s - 1) * L;
        r->sent_bytes += (s - 1) * L;
        break;
    case REDIST_OP_ALL_TO_ALL:
    case REDIST_OP_REDUCE_SCATTER:
        r->recv_bytes += (s - 1) * (L / s);
        r->sent_bytes += (s - 1) * (L / s);
        break;
    case REDIST_OP_ALL_REDUCE:
        r->recv_bytes += div_up(2 * (s - 1) * L, s);
        r->sent_bytes += div_up(2 * (s - 1) * L, s);
        break;
    case REDIST_OP_PERMUTE:
        if (x->recv_from != be->rank)
            r->recv_bytes += L;
        if (x->send_to != be->rank)
            r->sent_bytes += L;
        break;
    case REDIST_OP_EXCHANGE:
        for (int64_t k = 0; k < x->xchg->nrecv; k++)
            if (x->xchg->recv[k].peer != be->rank)
                r->recv_bytes += x->xchg->recv[k].bytes;
        for (int64_t k = 0; k < x->xchg->nsend; k++)
            if (x->xchg->send[k].peer != be->rank)
                r->sent_bytes += x->xchg->send[k].bytes;
        break;
    default:
        break;
    }
    if (ps->kind == RD_PASS_FUSED)
        return ops->step(be, x, in, out, err);
    size_t elem = x->elem;
    switch (x->op) {
    case REDIST_OP_ALL_GATHER:
        return ops->all_gather(be, &x->group, in, out, L, err);
    case REDIST_OP_ALL_TO_ALL:
        return ops->all_to_all(be, &x->group, in, out, L / s, err);
    case REDIST_OP_REDUCE_SCATTER:
        return ops->reduce_scatter(be, &x->group, in, out, L / s / elem,
                                   x->dtype, x->reduce, err);
    case REDIST_OP_ALL_REDUCE:
        return ops->all_reduce(be, &x->group, in, out, L / elem, x->dtype,
                               x->reduce, err);
    case REDIST_OP_PERMUTE:
        return ops->permute(be, in, x->send_to, out, x->recv_from, L, err);
    case REDIST_OP_EXCHANGE:
        return ops->exchange(be, in, x->xchg->nsend, x->xchg->send, out,
                             x->xchg->nrecv, x->xchg->recv, err);
    default:
        return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                        "internal error: pass of op %d", (int)x->op);
    }
}

redist_status_t redist_plan_execute(const redist_plan_t *plan,
                                    redist_backend_t *be, void *src,
                                    void *dst,
                                    const redist_exec_options_t *opts,
                                    redist_exec_report_t *report,
                                    redist_error_t *err)
{
    double t0 = now_seconds();
    redist_exec_report_t r;
    rd_program p;
    rd_counter cnt = {be, 0, 0, 0};
    void *sa = NULL, *sb = NULL;
    unsigned flags = opts ? opts->flags : 0;
    uint64_t hash = 0;
    redist_status_t st = REDIST_OK;

    memset(&r, 0, sizeof r);
    memset(&p, 0, sizeof p);
    r.failed_step = -1;
    if (!be || !be->ops) {
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                      "NULL backend");
        goto done; /* nobody to agree with */
    }
    if (!plan)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "plan", "NULL plan");
    else if (flags & ~known_flags)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "unknown execution flags 0x%x", flags & ~known_flags);
    else if (be->size != redist_mesh_num_devices(
                             redist_spec_mesh(redist_plan_spec(plan))))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                      "the backend connects %lld ranks, the mesh has %lld "
                      "devices",
                      (long long)be->size,
                      (long long)redist_mesh_num_devices(
                          redist_spec_mesh(redist_plan_spec(plan))));
    else if (be->rank < 0 || be->rank >= be->size)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                      "rank %lld out of range", (long long)be->rank);
    else if (!src || !dst)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, src ? "dst" : "src",
                      "NULL buffer");
    else if (src == dst)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "dst",
                      "src and dst must be distinct buffers");
    if (!st) {
        st = rd_program_build_for(plan, be, flags, &p, err);
        if (!st)
            st = check_backend(&p, be->ops, err);
        if (!st)
            st = rd_program_bind(&p, plan, be->rank, err);
        hash = rd_plan_hash(plan, flags);
    }
    r.scratch_bytes = p.scratch[0] + p.scratch[1];
    r.writes_src = p.writes_src;
    st = be->ops->agree(be, st, hash, err);
    if (st)
        goto done;
    /* scratch: identical sizes on every rank, then agree on the outcome */
    if (p.scratch[0] && !(sa = scratch_alloc(&cnt, p.scratch[0])))
        st = REDIST_ERR_NOMEM;
    if (!st && p.scratch[1] && !(sb = scratch_alloc(&cnt, p.scratch[1])))
        st = REDIST_ERR_NOMEM;
    if (st)
        rd_error(err, st, NULL, NULL,
                 "cannot allocate %llu bytes of scratch on device %lld",
                 (unsigned long long)r.scratch_bytes, (long long)be->rank);
    st = be->ops->agree(be, st, hash, err);
    if (st)
        goto done;

    void *buf[RD_NBUF] = {src, dst, sa, sb};
    for (int k = 0; k < p.npasses; k++) {
        const rd_pass *ps = &p.pass[k];
        if (ps->spare_buf >= 0 && ps->spare_bytes) {
            be->spare = (char *)buf[ps->spare_buf] + ps->spare_off;
            be->spare_bytes = ps->spare_bytes;
        }
        if (ps->sspare_buf >= 0 && ps->sspare_bytes) {
            be->spare_scratch = (char *)buf[ps->sspare_buf] + ps->sspare_off;
            be->spare_scratch_bytes = ps->sspare_bytes;
        }
        st = run_pass(be, ps, buf, &r, err);
        be->spare = be->spare_scratch = NULL;
        be->spare_bytes = be->spare_scratch_bytes = 0;
        if (st) {
            r.failed_step = ps->first;
            if (be->ops->abort)
                be->ops->abort(be, st, err);
            break;
        }
        if (ps->last >= 0 &&
            (k + 1 == p.npasses || p.pass[k + 1].first != ps->first))
            r.steps_done = ps->last + 1;
    }
    if (!st)
        r.steps_done = redist_plan_num_steps(plan);

done:
    if (be && be->ops) {
        scratch_free(&cnt, sb, p.scratch[1]);
        scratch_free(&cnt, sa, p.scratch[0]);
    }
    rd_program_free(&p);
    r.scratch_high_water = cnt.high;
    r.scratch_allocations = cnt.count;
    r.seconds = now_seconds() - t0;
    if (report)
        *report = r;
    return st;
}
