/*
 * Program building, part 2: the buffer of every pass, chosen ahead of
 * time.
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
 * (pass, buffer).  Cost: O(passes^3) in the worst case (O(passes^2)
 * candidates, O(passes) each); memory O(passes^2).
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
 * LENT REGIONS.  A caller may lend the program a region that holds no
 * live data during the whole run (be->lend, lend_bytes: on the sim, a
 * two-mesh phase A gets the device's destination buffer, meshes.c).
 * The search then orders the candidates by what they allocate: a + b
 * less the larger of the two that fits the lent region (else the
 * smaller), then a + b, then a; that buffer is the lent region
 * (rd_program.lent), which the executor neither allocates nor counts as
 * scratch.  Without one the order is the one above.
 *
 * OWN SIZES.  With be->build & RD_BUILD_OWN_CAPS an uneven program
 * counts this device's (be->rank) SRC and DST sizes instead of the least
 * any device has, so devices may differ in buffers and scratch (a
 * two-mesh phase on the sim, whose ops take each device's pointers as
 * they come).  The pass sizes stay the most any device needs.  There
 * be->src_room also says that SRC is that large (a buffer of the
 * caller's run holding the block at its start, which the program may
 * then use whole, even or uneven).
 *
 * ENDING IN SRC.  With be->build & RD_BUILD_END_IN_SRC the caller passes
 * its source buffer as DST too: the data must end in SRC (no final
 * copy), DST counts 0 bytes and is never written or lent as a spare, and
 * in-place passes are allowed, and tried first: an in-place pass has the
 * other buffers as its spare region, where SRC -> SA -> SRC would leave
 * each pass none, so the backend's work space would come on top.
 * Without REDIST_EXEC_PRESERVE_SRC and with even blocks, a program of
 * all_reduces has one: each in place in SRC with SA (the block's size) as
 * its spare region.  An uneven program ends in SRC only as one whole
 * reduce_scatter whose every box after it is empty or the first elements
 * of its device's block (rd_xstep.boxed_inplace): in place on every
 * device, with no spare region (its work space is the backend's).
 */
#include <stdlib.h>
#include <string.h>

#include <stdint.h>

#include "exec_internal.h"
#include "../core/internal.h"
#include "../core/layout.h"

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

/* The least bytes any device holds in layout l: its dims are independent
 * (a type's dims use disjoint axes), so the product of the shortest
 * blocks. */
static uint64_t least_bytes(const rd_layout *l, uint64_t elem)
{
    uint64_t e = elem;
    for (int i = 0; i < l->ndims; i++) {
        int64_t m = INT64_MAX;
        for (int64_t j = 0; j < l->k[i]; j++)
            if (l->b[i][j + 1] - l->b[i][j] < m)
                m = l->b[i][j + 1] - l->b[i][j];
        e *= (uint64_t)m;
    }
    return e;
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
    int n = p->npasses, fin = p->end_src ? RD_BUF_SRC : RD_BUF_DST;
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
                if ((b == RD_BUF_SRC && !allow_src) ||
                    (b == RD_BUF_DST && p->end_src))
                    continue;
                if (cap[b] < ps->out_bytes &&
                    !(b == RD_BUF_DST && ps->final))
                    continue;
                if (xchg && recv_scratch && b != RD_BUF_SA && b != RD_BUF_SB)
                    continue;
                reach[(k + 1) * RD_NBUF + b] = (signed char)(in + 1);
            }
        }
    }
    int end;
    if (reach[n * RD_NBUF + fin]) {
        end = fin;
        *copy = 0;
    } else {
        if (!allow_copy || p->end_src)
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

/* The scratch a pair (a, b) leaves to allocate when a region of `lend`
 * bytes is lent (be->lend): the larger buffer in it if it fits, else the
 * smaller one. */
static uint64_t lent_cover(uint64_t a, uint64_t b, uint64_t lend)
{
    return a && a <= lend ? a : b && b <= lend ? b : 0;
}

/* (counted, a, b) triples: by the bytes to allocate, then a + b, then a. */
static int cmp_u64_pair(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    uint64_t sa = a[1] + a[2], sb = b[1] + b[2];
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (a[1] != b[1])
        return a[1] < b[1] ? -1 : 1;
    return 0;
}

/* The candidate sizes (a, b) of the scratch buffers SA and SB, a >= b,
 * from the passes' output sizes, in increasing order of the bytes to
 * allocate (a + b less what a lent region of `lend` bytes covers), then
 * a + b, then a: 3 * (n + 1)^2 values in *pairs (malloc'd: counted, a,
 * b), *np triples. */
static redist_status_t candidate_sizes(const rd_program *p, uint64_t lend,
                                       uint64_t **pairs, int *np,
                                       redist_error_t *err)
{
    int n = p->npasses;
    uint64_t *vals = malloc(sizeof *vals * (size_t)(n + 1));
    *pairs = malloc(sizeof **pairs * 3 * (size_t)(n + 1) * (size_t)(n + 1));
    if (!vals || !*pairs) {
        free(vals);
        free(*pairs);
        *pairs = NULL;
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
    *np = 0;
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++)
            if (vals[j] <= vals[i]) {
                uint64_t *t = *pairs + 3 * *np;
                t[0] = vals[i] + vals[j] - lent_cover(vals[i], vals[j], lend);
                t[1] = vals[i];
                t[2] = vals[j];
                (*np)++;
            }
    qsort(*pairs, (size_t)*np, 3 * sizeof **pairs, cmp_u64_pair);
    free(vals);
    return REDIST_OK;
}

/* The least candidate (a, b) with a feasible assignment: in-place passes
 * only where they lower the scratch (for each size, the assignments
 * without them first).  On success cap[] holds the buffer sizes and
 * *copy whether a final copy is needed. */
static redist_status_t search(rd_program *p, unsigned caps, int inplace,
                              int preserve, uint64_t lend,
                              uint64_t cap[RD_NBUF], int *copy,
                              redist_error_t *err)
{
    uint64_t *pairs;
    int np, found = 0;
    redist_status_t st = candidate_sizes(p, lend, &pairs, &np, err);
    if (st)
        return st;
    signed char *reach = malloc((size_t)(p->npasses + 1) * RD_NBUF);
    if (!reach) {
        free(pairs);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    int recv_scratch = (caps & RD_CAP_RECV_IN_SCRATCH) != 0;
    for (int q = 0; q < np && !found; q++) {
        cap[RD_BUF_SRC] = p->src_min;
        cap[RD_BUF_DST] = p->end_src ? 0 : p->dst_min;
        cap[RD_BUF_SA] = pairs[3 * q + 1];
        cap[RD_BUF_SB] = pairs[3 * q + 2];
        for (int ip = p->end_src && inplace; ip <= (inplace != 0) && !found;
             ip++)
            for (int mode = 0; mode < 4 && !found; mode++) {
                int allow_src = mode >= 2, allow_copy = mode & 1;
                if (allow_src && preserve)
                    continue;
                if (assign(p, cap, allow_src, allow_copy, recv_scratch,
                           !preserve, ip, reach, copy)) {
                    found = 1;
                    p->scratch[0] = pairs[3 * q + 1];
                    p->scratch[1] = pairs[3 * q + 2];
                }
            }
    }
    free(pairs);
    free(reach);
    if (!found) /* cannot happen: (peak, peak) with a copy always works */
        return rd_error(err, REDIST_ERR_PLAN, NULL, NULL,
                        "internal error: no buffer assignment");
    return REDIST_OK;
}

/* Drop scratch the passes do not use, then give every backend pass the
 * largest region it leaves free (in-place passes keep the one they were
 * planned with). */
static void assign_spares(rd_program *p, uint64_t cap[RD_NBUF], int preserve)
{
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
}

static redist_status_t program_build(const redist_plan_t *plan,
                                     const redist_backend_t *be,
                                     unsigned build, unsigned caps,
                                     unsigned fused_ops, int inplace,
                                     unsigned flags, rd_program *p,
                                     redist_error_t *err)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    memset(p, 0, sizeof *p);
    p->lower = (flags & RD_PROG_LOWER) != 0;
    p->lower_red = p->lower && (flags & RD_PROG_LOWER_RED);
    p->fuse_rs = !p->lower && be && (be->build & RD_BUILD_LOWER_RS);
    p->lower_moves = be && (be->build & RD_BUILD_LOWER_MOVES);
    p->end_src = be && (be->build & RD_BUILD_END_IN_SRC);
    if (redist_spec_num_meshes(spec) == 2)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "a two-mesh plan runs its phases on the devices of "
                        "each mesh: use redist_exec_sim_run or "
                        "redist_mpi_execute_meshes (doc/meshes.md)");
    /* Uneven dims: one program for every device, its pass sizes the most
     * any device needs (program.c); the caller's buffers count with the
     * least any device has, except that the last pass's output is the
     * target block, which fits DST everywhere.  No fused steps but the
     * exchange (and the reduce_scatter where the backend runs it:
     * uneven_rs, or RD_BUILD_UNEVEN_RS where it chose to: be->build, or
     * a set's ops->set_build), and no
     * in-place passes (their needs differ by device), but the one whole
     * reduce_scatter of a program ending in SRC (below). */
    p->uneven = redist_spec_is_uneven(spec);
    int inplace_any = inplace;
    if (p->end_src && (flags & REDIST_EXEC_PRESERVE_SRC))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "a program ending in its source buffer needs a "
                        "source it may write");
    if (p->uneven) {
        fused_ops &= 1u << REDIST_OP_EXCHANGE |
                     ((be && be->ops->uneven_rs) ||
                              (build & RD_BUILD_UNEVEN_RS)
                          ? 1u << REDIST_OP_REDUCE_SCATTER
                          : 0);
        inplace = 0;
    }
    p->src_bytes = redist_spec_src_bytes(spec);
    p->dst_bytes = redist_spec_dst_bytes(spec);
    redist_status_t st = rd_program_passes(plan, fused_ops, p, err);
    if (st)
        return st;
    p->src_min = p->src_bytes;
    p->dst_min = p->dst_bytes;
    if (p->uneven) {
        uint64_t elem = redist_dtype_size(redist_spec_dtype(spec));
        int n = redist_plan_num_steps(plan);
        p->src_min = least_bytes(rd_plan_layout_before(plan, 0), elem);
        p->dst_min = n ? least_bytes(rd_plan_layout_after(plan, n - 1), elem)
                       : p->src_min;
        if (be && (be->build & RD_BUILD_OWN_CAPS)) {
            p->src_min = redist_spec_device_bytes(spec, 0, be->rank);
            p->dst_min = redist_spec_device_bytes(spec, 1, be->rank);
        }
        if (p->npasses)
            p->pass[p->npasses - 1].final = 1;
        /* ending in SRC (rd_meshes_s_in_src): one whole reduce_scatter
         * whose every box after it is empty or the first elements of the
         * device's block, so each device's output fits in place over
         * its own input, and the pass needs no spare region (the
         * backend's work space serves); SRC counts as large as the most
         * any device writes
         * (its input is at least that: no spare tail is made up) */
        if (p->end_src) {
            const rd_pass *ps = p->pass;
            if (p->npasses != 1 || ps->kind != RD_PASS_FUSED ||
                !ps->x.boxed_inplace)
                return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                                "a program ending in its source buffer "
                                "needs even blocks or one reduce_scatter "
                                "whose boxes start their blocks");
            inplace = inplace_any;
            if (p->src_min < ps->out_bytes)
                p->src_min = ps->out_bytes;
        }
    }
    if (be && (be->build & RD_BUILD_OWN_CAPS) && be->src_room > p->src_min)
        p->src_min = be->src_room;
    if (inplace)
        for (int k = 0; k < p->npasses; k++) {
            rd_pass *ps = &p->pass[k];
            if (backend_pass(ps) && (be->ops->inplace_ops >> ps->x.op & 1u))
                ps->inplace_need = be->ops->inplace_need(
                    be, &ps->x, ps->kind == RD_PASS_FUSED, ps->in_bytes);
        }
    int n = p->npasses, copy = 0;
    int preserve = (flags & REDIST_EXEC_PRESERVE_SRC) != 0;
    uint64_t cap[RD_NBUF];
    uint64_t lend = be ? be->lend_bytes : 0;
    st = search(p, caps, inplace, preserve, lend, cap, &copy, err);
    if (st)
        return st;
    if (copy) {
        int last = n ? p->pass[n - 1].out_buf : RD_BUF_SRC;
        rd_pass *ps = rd_program_add_pass(p, RD_PASS_COPY, -1, p->dst_bytes,
                                          p->dst_bytes);
        ps->umode = p->uneven ? RD_U_DST : RD_U_NONE;
        ps->in_buf = last;
        ps->out_buf = RD_BUF_DST;
    }
    assign_spares(p, cap, preserve);
    uint64_t c = lent_cover(p->scratch[0], p->scratch[1], lend);
    p->lent = !c ? 0 : c == p->scratch[0] ? RD_BUF_SA : RD_BUF_SB;
    return REDIST_OK;
}

uint64_t rd_program_scratch(const rd_program *p)
{
    uint64_t b = p->scratch[0] + p->scratch[1];
    return p->lent ? b - p->scratch[p->lent - RD_BUF_SA] : b;
}

redist_status_t rd_program_build(const redist_plan_t *plan, unsigned caps,
                                 unsigned fused_ops, unsigned flags,
                                 rd_program *p, redist_error_t *err)
{
    return program_build(plan, NULL, 0, caps, fused_ops, 0, flags, p, err);
}

redist_status_t rd_program_build_b(const redist_plan_t *plan, unsigned caps,
                                   unsigned fused_ops, unsigned build,
                                   unsigned flags, rd_program *p,
                                   redist_error_t *err)
{
    return program_build(plan, NULL, build, caps, fused_ops, 0, flags, p,
                         err);
}

redist_status_t rd_program_build_for(const redist_plan_t *plan,
                                     const redist_backend_t *be,
                                     unsigned flags, rd_program *p,
                                     redist_error_t *err)
{
    if (!be || !be->ops)
        return program_build(plan, NULL, 0, 0, 0, 0, flags, p, err);
    const rd_backend_ops *o = be->ops;
    int inplace = (be->build & (RD_BUILD_INPLACE | RD_BUILD_END_IN_SRC)) &&
                  o->inplace_ops && o->inplace_need;
    return program_build(plan, be, be->build, o->caps,
                         o->step ? o->fused_ops : 0,
                         inplace, flags, p, err);
}
