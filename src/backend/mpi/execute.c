/*
 * redist_mpi_exec_info and redist_mpi_execute: the work space a plan
 * needs, sized from the executor's program before the call.  Each backend
 * pass needs `good` bytes for its fast algorithm, `least` for its slowest
 * (streamed reductions, swaps in rounds), `want` the most it can use; its
 * spare region (the executor's dead memory) covers part of it, and one
 * work buffer of the context the rest, within the bound (work.c).  The
 * MPI calls of each pass follow from the work it gets, so the info
 * predicts them exactly (redist_mpi_info_t.exchanges).
 *
 * IN PLACE.  When max_scratch is below what the executor's buffers need,
 * the program is re-planned with RD_BUILD_INPLACE: the passes of
 * mpi_inplace_need (ops.c) may get send == recv (swap.c,
 * allgather_ring.c, reduce_*.c).  Cost: O(passes) per call, twice.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../exec/kernels.h"
#include "../../core/internal.h"

/* What one backend pass of the program needs as work space: `good` for
 * its fast algorithm, `least` for its slowest (streamed reductions, swaps
 * in rounds), `want` the most it can use; all 0 when it needs none. */
typedef struct pass_need {
    uint64_t good, least, want;
} pass_need;

static pass_need need_of(const redist_mpi_t *x, const rd_pass *ps)
{
    pass_need n = {0, 0, 0};
    const rd_xstep *xs = &ps->x;
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    int inplace = ps->in_buf == ps->out_buf;
    if (ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED)
        return n;
    switch (xs->op) {
    case REDIST_OP_REDUCE_SCATTER:
        if (s > 1 && xs->boxed) { /* uneven, whole: reduce_boxed.c */
            uint64_t big = ps->out_bytes / elem;
            n.good = (s - 1) * elem *
                     (big < RD_REDUCE_BLOCK ? big : RD_REDUCE_BLOCK);
            n.least = elem;
            n.want = (s - 1) * ps->out_bytes;
            break;
        }
        if (s > 1 && (ps->kind == RD_PASS_FUSED ||
                      !rd_mpi_native_ok(x, ps->in_bytes / s / elem))) {
            n.good = s * elem;
            n.least = elem;
            n.want = ps->in_bytes;
        }
        break;
    case REDIST_OP_ALL_REDUCE:
        if (s > 1 && !(x->opts.flags & REDIST_MPI_NATIVE_REDUCE)) {
            uint64_t count = ps->in_bytes / elem, q = count / s,
                     r = count % s;
            if (ps->umode != RD_U_NONE) {
                /* uneven: each group reduces its own count, at most
                 * in_bytes (the most any device holds), and the need is
                 * not monotone in the count: size for every count up to
                 * it, so that the work space is the same on every rank */
                rd_mpi_ar_need_upto(s, count, elem, &n.good, &n.want);
                n.least = n.good ? elem : 0;
                break;
            }
            n.good = inplace ? rd_mpi_ar_inplace_work(s, count, elem)
                             : rd_mpi_ar_min_work(s, count, elem);
            n.least = n.good ? elem : 0;
            n.want = n.good ? s * (q > r ? q : r) * elem : 0;
        }
        break;
    case REDIST_OP_ALL_TO_ALL:
    case REDIST_OP_PERMUTE:
        if (inplace && (s > 1 || xs->op == REDIST_OP_PERMUTE)) {
            uint64_t piece = xs->op == REDIST_OP_PERMUTE ? ps->in_bytes
                                                          : ps->in_bytes / s;
            n.want = piece;
            n.good = piece < RD_MPI_SWAP_GOOD ? piece : RD_MPI_SWAP_GOOD;
            n.least = piece ? 1 : 0;
        }
        break;
    default:
        break;
    }
    return n;
}

/* MPI calls of a pass run with `w` bytes of work space. */
static int64_t pass_exchanges(const redist_mpi_t *x, const rd_pass *ps,
                              uint64_t w)
{
    const rd_xstep *xs = &ps->x;
    uint64_t s = (uint64_t)xs->group.size, elem = xs->elem;
    int nd = xs->ndims;
    pass_need n = need_of(x, ps);
    /* uneven: this rank's own count (the program is bound to it) */
    uint64_t mine = ps->umode != RD_U_NONE ? ps->dev_in : ps->in_bytes;
    if (ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED)
        return 0;
    if (!n.good && !n.least) {
        if (xs->op == REDIST_OP_ALL_REDUCE && s > 1 &&
            (x->opts.flags & REDIST_MPI_NATIVE_REDUCE))
            return (int64_t)rd_div_up(mine / elem, x->limit);
        if (xs->op == REDIST_OP_ALL_REDUCE && s > 1)
            return rd_mpi_ar_exchanges(s, mine / elem, elem, w,
                                       ps->in_buf == ps->out_buf);
        return 1;
    }
    switch (xs->op) {
    case REDIST_OP_REDUCE_SCATTER: {
        if (xs->boxed) /* rounds (the least work over the group: less) */
            return xs->mbox ? (int64_t)rd_mpi_boxed_rounds(xs, w) : 1;
        uint64_t pre = 1, chunk = ps->in_bytes / s / elem;
        if (ps->kind == RD_PASS_FUSED) {
            pre = rd_mpi_prod(xs->in_shape, 0, xs->dim);
            chunk = (uint64_t)xs->in_shape[xs->dim] / s *
                    rd_mpi_prod(xs->in_shape, xs->dim + 1, nd);
        }
        if (w >= n.good)
            return rd_mpi_rs_rounds(pre, chunk, w / (s * elem));
        uint64_t per = w / elem < RD_REDUCE_BLOCK ? w / elem : RD_REDUCE_BLOCK;
        return (int64_t)(s * pre * rd_div_up(chunk, per ? per : 1));
    }
    case REDIST_OP_ALL_REDUCE: {
        int inplace = ps->in_buf == ps->out_buf;
        uint64_t count = mine / elem;
        uint64_t good = inplace ? rd_mpi_ar_inplace_work(s, count, elem)
                                : rd_mpi_ar_min_work(s, count, elem);
        if (w >= good)
            return rd_mpi_ar_exchanges(s, count, elem, w, inplace);
        uint64_t per = w / elem < RD_REDUCE_BLOCK ? w / elem : RD_REDUCE_BLOCK;
        return (int64_t)(s * rd_div_up(count, per ? per : 1));
    }
    default: { /* in-place swaps (a device keeping its block: a no-op) */
        uint64_t piece = n.want, rounds = w ? rd_div_up(piece, w) : 0;
        if (xs->op == REDIST_OP_PERMUTE && xs->send_to == x->rank &&
            xs->recv_from == x->rank)
            return 1;
        return (int64_t)(xs->op == REDIST_OP_PERMUTE ? rounds
                                                     : (s - 1) * rounds);
    }
    }
}

/* The work buffer for a program: the least (each pass's spare region
 * covers the rest), the most useful, and the exchanges with `work`. */
typedef struct work_plan {
    uint64_t min, want;
    int64_t exchanges;
} work_plan;

static void plan_work(const redist_mpi_t *x, const rd_program *p,
                      uint64_t work, work_plan *wp)
{
    memset(wp, 0, sizeof *wp);
    for (int k = 0; k < p->npasses; k++) {
        const rd_pass *ps = &p->pass[k];
        pass_need n = need_of(x, ps);
        uint64_t sp = ps->spare_bytes;
        if (sp < n.least && n.least > wp->min)
            wp->min = n.least;
        if (sp < n.good && n.want > wp->want)
            wp->want = n.want;
        wp->exchanges += pass_exchanges(x, ps, sp > work ? sp : work);
    }
}

static redist_status_t check_mesh(const redist_mpi_t *x,
                                  const redist_plan_t *plan,
                                  redist_error_t *err)
{
    const redist_mesh_t *m = redist_spec_mesh(redist_plan_spec(plan));
    int same = redist_mesh_num_axes(m) == x->naxes;
    for (int a = 0; same && a < x->naxes; a++)
        same = redist_mesh_axis_size(m, a) == x->axis_size[a];
    if (same)
        return REDIST_OK;
    char mm[256];
    rd_mesh_format(m, mm, sizeof mm);
    return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                    "the plan's mesh (%s) does not have the axis sizes of "
                    "the MPI context's mesh",
                    mm);
}

/* The executor's program on this context (build: RD_BUILD_INPLACE,
 * RD_BUILD_LOWER_RS; with the context's build_keep). */
static redist_status_t build_on(const redist_mpi_t *x, unsigned build,
                                const redist_plan_t *plan,
                                const redist_exec_options_t *opts,
                                redist_exec_info_t *info, rd_program *p,
                                redist_error_t *err)
{
    redist_backend_t be = x->be;
    memset(p, 0, sizeof *p);
    be.build = build | x->build_keep;
    redist_status_t st = redist_plan_exec_info(plan, &be, opts, info, err);
    if (!st)
        st = rd_program_build_for(plan, &be, opts ? opts->flags : 0, p, err);
    if (!st) /* this rank's permute peers (exchange counts) */
        st = rd_program_bind(p, plan, x->rank, err);
    return st;
}

/* Memory of a program: executor buffers + the least work buffer. */
static uint64_t least_total(const redist_mpi_t *x, const rd_program *p,
                            uint64_t E)
{
    work_plan wp;
    plan_work(x, p, 0, &wp);
    return E + wp.min;
}

/* The work buffer of program p with executor scratch E under the bound
 * B: what its passes can use, at most REDIST_MPI_ROUND_BYTES unless
 * max_scratch is set, within B - E, at least their least need. */
static uint64_t work_for(const redist_mpi_t *x, const rd_program *p,
                         uint64_t E, uint64_t B)
{
    work_plan wp;
    plan_work(x, p, 0, &wp);
    if (!wp.min && !wp.want)
        return 0;
    uint64_t room = B > E ? B - E : 0, W = wp.want;
    if (!x->opts.max_scratch && W > REDIST_MPI_ROUND_BYTES)
        W = REDIST_MPI_ROUND_BYTES;
    if (W > room)
        W = room;
    return W < wp.min ? wp.min : W;
}

/* Does the plan have a reduce_scatter the program can lower (ordered
 * reductions only: native ones stay MPI's)? */
static int lowers_rs(const redist_mpi_t *x, const redist_plan_t *plan)
{
    redist_step_view_t v;
    if ((x->opts.flags & REDIST_MPI_NATIVE_REDUCE) || x->keep_rs)
        return 0;
    for (int k = 0; k < redist_plan_num_steps(plan); k++)
        if (!redist_plan_step(plan, k, &v) &&
            v.op == REDIST_OP_REDUCE_SCATTER &&
            rd_reduction_lowered_dim(plan, k) >= 0)
            return 1;
    return 0;
}

/* *build: the build flags the program is made with (RD_BUILD_INPLACE
 * under a tight max_scratch; RD_BUILD_LOWER_RS where it fits, see
 * redist/mpi.h, REDUCTIONS). */
static redist_status_t mpi_info(const redist_mpi_t *x,
                                const redist_plan_t *plan,
                                const redist_exec_options_t *opts,
                                redist_mpi_info_t *out, unsigned *build,
                                uint64_t scratch[2], redist_error_t *err)
{
    rd_program p;
    memset(out, 0, sizeof *out);
    /* a prepared object's all_gathers and all_to_alls as point-to-point
     * exchanges into the final places (no scratch; an Allgather of
     * datatypes measured 1.10-1.15x a hand-written Alltoallw, the
     * exchange 0.94-0.99x; an Alltoall 1.06-1.12x, the exchange
     * 0.98-1.01x: doc/bench.md, doc/mpi.md), unless its sources lie in
     * windows (the direct path's whole step) */
    unsigned base = x->prepared && !x->keep_rs ? RD_BUILD_LOWER_MOVES : 0;
    /* uneven reduce_scatters whole (reduce_boxed.c: no buffer sized by the
     * largest device), on every program of the context */
    base |= RD_BUILD_UNEVEN_RS;
    *build = base;
    if (scratch)
        scratch[0] = scratch[1] = 0;
    redist_status_t st = check_mesh(x, plan, err);
    if (st)
        return st;
    st = build_on(x, base, plan, opts, &out->exec, &p, err);
    if (st) {
        rd_program_free(&p);
        return st;
    }
    uint64_t E = out->exec.scratch_bytes;
    uint64_t M = out->exec.bound_bytes;
    uint64_t least = least_total(x, &p, E), least2 = least;
    uint64_t B = x->opts.max_scratch;
    /* some passes in place may need less (the least bound reported);
     * they run so only when the bound is below what the passes need as
     * planned */
    redist_exec_info_t e2;
    rd_program p2;
    if (!build_on(x, RD_BUILD_INPLACE | RD_BUILD_UNEVEN_RS, plan, opts, &e2,
                  &p2, NULL))
        least2 = least_total(x, &p2, e2.scratch_bytes);
    if (B && least > B && least2 < least) {
        rd_program_free(&p);
        p = p2;
        out->exec = e2;
        E = e2.scratch_bytes;
        least = least2;
        *build = RD_BUILD_INPLACE | RD_BUILD_UNEVEN_RS;
    } else
        rd_program_free(&p2);
    out->min_scratch_bytes = least < least2 ? least : least2;
    if (!B)
        B = M > least ? M : least;
    out->bound_bytes = B;
    uint64_t W = work_for(x, &p, E, B);
    /* reduce_scatters lowered (one exchange of the contributions and an
     * ordered sum per run of them along one dim, program.c) where the
     * whole scratch stays within the bound and within what the
     * collectives take or one round's worth, whichever is more */
    if (*build == base && lowers_rs(x, plan) &&
        !build_on(x, base | RD_BUILD_LOWER_RS, plan, opts, &e2, &p2, NULL)) {
        uint64_t E2 = e2.scratch_bytes, W2 = work_for(x, &p2, E2, B);
        uint64_t cap = E + W > REDIST_MPI_ROUND_BYTES ? E + W
                                                       : REDIST_MPI_ROUND_BYTES;
        if (E2 + W2 <= B && E2 + W2 <= cap) {
            rd_program_free(&p);
            p = p2;
            out->exec = e2;
            E = E2;
            W = W2;
            *build = base | RD_BUILD_LOWER_RS;
        } else
            rd_program_free(&p2);
    }
    work_plan wp;
    plan_work(x, &p, W, &wp);
    if (scratch) { /* the executor's two buffers (runtime.c) */
        scratch[0] = p.scratch[0];
        scratch[1] = p.scratch[1];
    }
    rd_program_free(&p);
    out->work_bytes = W;
    out->scratch_bytes = E + W;
    out->exchanges = wp.exchanges;
    if (B < least)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, "max_scratch",
                        "max_scratch %llu bytes is below the least this plan "
                        "needs: %llu bytes (%llu of executor buffers, fixed "
                        "by the plan even with in-place steps, + %llu of "
                        "work space)",
                        (unsigned long long)B, (unsigned long long)least,
                        (unsigned long long)E,
                        (unsigned long long)(least - E));
    return REDIST_OK;
}

redist_status_t redist_mpi_exec_info(const redist_mpi_t *x,
                                     const redist_plan_t *plan,
                                     const redist_exec_options_t *opts,
                                     redist_mpi_info_t *out,
                                     redist_error_t *err)
{
    if (!x || !plan || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL context, plan or output");
    unsigned build;
    return mpi_info(x, plan, opts, out, &build, NULL, err);
}

uint64_t rd_mpi_arena_need(const redist_mpi_t *x, const redist_plan_t *plan,
                           const redist_exec_options_t *opts, uint64_t align)
{
    redist_mpi_info_t info;
    uint64_t sc[2], a = align ? align : 1, need = 0;
    unsigned build;
    if (!x || !plan || mpi_info(x, plan, opts, &info, &build, sc, NULL))
        return 0;
    /* rd_exec_prepare's parts: the work buffer (at its first agree),
     * then the executor's two buffers */
    uint64_t part[3] = {info.work_bytes, sc[0], sc[1]};
    for (int k = 0; k < 3; k++)
        need += (part[k] + a - 1) / a * a;
    return need;
}

/* The start of a call on context x (redist_mpi_execute, and
 * redist_mpi_prepare on its clone): the per-call state reset, and what
 * the executor's first agree must fold in (pre_status: a plan on another
 * mesh, max_scratch too small) and allocate (the work buffer).  Returns
 * the promise (0: the executor's own). */
uint64_t rd_mpi_begin(redist_mpi_t *x, const redist_plan_t *plan,
                      const redist_exec_options_t *opts)
{
    uint64_t promise = 0;
    unsigned build = 0;
    x->in_call = 1;
    x->pre_status = REDIST_OK;
    redist_error_clear(&x->pre_err);
    x->work_want = 0;
    x->cur = x->high = x->allocs = x->exec_cur = 0;
    x->exchanges = x->streamed = x->swaps = x->rings = 0;
    if (plan) {
        redist_mpi_info_t info;
        /* a plan on another mesh, or max_scratch too small: fail every
         * rank at the executor's first agree; other errors are the
         * executor's to report */
        redist_status_t st = check_mesh(x, plan, &x->pre_err);
        if (st)
            x->pre_status = st;
        else if ((st = mpi_info(x, plan, opts, &info, &build,
                                NULL, &x->pre_err)) == REDIST_ERR_LIMIT)
            x->pre_status = st;
        else if (!st) {
            x->work_want = info.work_bytes;
            x->planned = 1;
            promise = info.scratch_bytes;
            x->be.build = build | x->build_keep;
        }
    }
    return promise;
}

/* Many arrays (src/exec/set_run.c): the state of a call whose work
 * space is a region of the set's arena: the most any program's passes
 * can use (capped as redist_mpi_execute caps it), within `room`, at
 * least the largest least need; planned, so that no step sizes work
 * space on its own (uneven counts would make the ranks differ there). */
uint64_t rd_mpi_begin_programs(redist_backend_t *be, int n,
                               const struct rd_program *const progs[],
                               uint64_t room)
{
    redist_mpi_t *x = be->ctx;
    rd_mpi_begin(x, NULL, NULL);
    uint64_t least = 0, want = 0;
    for (int i = 0; i < n; i++) {
        work_plan wp;
        plan_work(x, progs[i], 0, &wp);
        least = wp.min > least ? wp.min : least;
        want = wp.want > want ? wp.want : want;
    }
    if (want > REDIST_MPI_ROUND_BYTES)
        want = REDIST_MPI_ROUND_BYTES;
    if (want > room)
        want = room;
    x->planned = 1;
    return want > least ? want : least;
}

void rd_mpi_use_work(redist_backend_t *be, void *work, uint64_t bytes)
{
    redist_mpi_t *x = be->ctx;
    x->work = work;
    x->work_bytes = bytes;
    x->work_borrowed = 1;
}

void rd_mpi_end_programs(redist_backend_t *be)
{
    redist_mpi_t *x = be->ctx;
    if (x->work_borrowed) { /* the arena's, not ours */
        x->work = NULL;
        x->work_bytes = 0;
        x->work_borrowed = 0;
    }
    rd_mpi_end(x);
}

/* The end of a call: the work buffer freed, the per-call state reset. */
void rd_mpi_end(redist_mpi_t *x)
{
    if (x->work) {
        if (!x->work_borrowed) /* else an arena's (meshes.c) */
            free(x->work);
        x->work_borrowed = 0;
        x->cur -= x->work_bytes;
        x->work = NULL;
        x->work_bytes = 0;
    }
    x->in_call = 0;
    x->planned = 0;
    x->be.build = x->build_keep;
    x->pre_status = REDIST_OK;
}

redist_status_t redist_mpi_execute(redist_mpi_t *x, const redist_plan_t *plan,
                                   void *src, void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_exec_report_t *report,
                                   redist_error_t *err)
{
    redist_exec_report_t r;
    if (!x) {
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL MPI context");
    }
    uint64_t promise = rd_mpi_begin(x, plan, opts);
    redist_status_t st = redist_plan_execute(plan, &x->be, src, dst, opts, &r,
                                             err);
    rd_mpi_end(x);
    r.scratch_bytes = promise ? promise : r.scratch_bytes;
    r.scratch_high_water = x->high;
    r.scratch_allocations = x->allocs;
    if (report)
        *report = r;
    return st;
}
