/*
 * The SPMD executor's runtime: redist_plan_execute runs a plan on one
 * device through a backend (redist/exec.h), and redist_plan_exec_info
 * says what that will take.  The program (program.c, assign.c) is built
 * and bound to the device (bind.c), then every pass runs in order: the
 * local kernels (kernels.c, exchange.c) here, the exchanges through the
 * backend's ops (backend.h).  All scratch goes through one counting
 * allocator (the measured high-water mark of the report).
 *
 * FAILURE.  Everything that can fail locally (arguments, the program,
 * the scratch) happens before any data moves and is combined across
 * ranks by the backend's `agree`, together with the plan hash (hash.c);
 * a backend error in the middle of a plan aborts the other ranks through
 * `abort`.
 *
 * Cost: the program's, plus one pass over each buffer per local pass;
 * memory: the program's scratch (assign.c) and O(steps) bookkeeping.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_internal.h"
#include "meshes.h"
#include "kernels.h"
#include "../core/internal.h"

double rd_exec_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Does the backend run every pass of the program?  (Exchange steps are
 * optional in the ops table.) */
redist_status_t rd_exec_check_backend(const rd_program *p,
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
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2)
        return rd_meshes_exec_info(plan, be, opts, out, err);
    redist_status_t st = rd_program_build_for(plan, be, flags, &p, err);
    if (!st && be && be->ops)
        st = rd_exec_check_backend(&p, be->ops, err);
    if (st) {
        rd_program_free(&p);
        return st;
    }
    memset(out, 0, sizeof *out);
    out->scratch_bytes = rd_program_scratch(&p);
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

/* The counting allocator: all executor scratch goes through it (the
 * counter lives in the prepared run, exec_internal.h). */
static void *scratch_alloc(rd_exec_prep *c, uint64_t bytes)
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

static void scratch_free(rd_exec_prep *c, void *p, uint64_t bytes)
{
    if (!p)
        return;
    if (c->be->ops->free)
        c->be->ops->free(c->be, p, (size_t)bytes);
    else
        free(p);
    c->cur -= bytes;
}

static redist_status_t run_collective(redist_backend_t *be,
                                      const rd_pass *ps, void *in, void *out,
                                      redist_error_t *err);

/* RSUM's inputs: slab m of the pass's input, at the block's offset. */
typedef struct slabs_in {
    const char *base;
    uint64_t slab;
} slabs_in;

static const void *slab_input(void *user, int64_t m)
{
    const slabs_in *si = user;
    return si->base + (uint64_t)m * si->slab;
}

static redist_status_t run_pass(redist_backend_t *be, const rd_pass *ps,
                                void *const buf[RD_NBUF],
                                redist_exec_report_t *r, redist_error_t *err)
{
    const rd_backend_ops *ops = be->ops;
    void *in = buf[ps->in_buf], *out = buf[ps->out_buf];
    const rd_xstep *x = &ps->x;
    switch (ps->kind) {
    case RD_PASS_COPY:
        if (ps->dev_out) /* an empty block may be NULL */
            memcpy(out, in, (size_t)ps->dev_out);
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
    case RD_PASS_VPACK: {
        int64_t zero[REDIST_MAX_DIMS] = {0};
        uint64_t pos = 0;
        for (int64_t m = 0; m < ps->nvbox; m++) {
            const int64_t *off = ps->vbox + 2 * m * x->ndims,
                          *shape = off + x->ndims;
            uint64_t e = x->elem;
            for (int i = 0; i < x->ndims; i++)
                e *= (uint64_t)shape[i];
            if (e)
                rd_kernel_box((char *)out + pos, shape, zero, in,
                              x->in_shape, off, shape, x->ndims, x->elem);
            pos += e;
        }
        return REDIST_OK;
    }
    case RD_PASS_RSUM: {
        /* in blocks that rd_reduce_n reads whole before writing (out may
         * be the first slab).  Fused reduce_scatters (nlev > 1): level j
         * reduces, for each r < n / lev[j], the lev[j] slabs r + i n /
         * lev[j] (i ascending: the member order of that step's group,
         * the leading index of the slabs left) into slab r, in place; the
         * last level into out.  So each sum is the steps' own, in their
         * order, to the bit. */
        uint64_t count = ps->chunk / x->elem, n = ps->s;
        int nlev = ps->nlev > 1 ? ps->nlev : 1;
        for (int j = 0; j < nlev; j++) {
            uint64_t g = nlev > 1 ? ps->lev[j] : n, rest = n / g;
            for (uint64_t r = 0; r < rest; r++) {
                char *base = (char *)in + r * ps->chunk;
                char *to = j == nlev - 1 ? (char *)out : base;
                for (uint64_t e = 0; e < count; e += RD_REDUCE_BLOCK) {
                    slabs_in si = {base + e * x->elem, rest * ps->chunk};
                    uint64_t c = count - e < RD_REDUCE_BLOCK
                                     ? count - e
                                     : RD_REDUCE_BLOCK;
                    rd_reduce_n(x->dtype, x->reduce, to + e * x->elem, c,
                                (int64_t)g, slab_input, &si);
                }
            }
            n = rest;
        }
        return REDIST_OK;
    }
    default:
        break;
    }
    rd_pass_account(be, ps, r);
    if (ps->kind == RD_PASS_FUSED)
        return ops->step(be, x, in, out, err);
    return run_collective(be, ps, in, out, err);
}

void rd_pass_account(const redist_backend_t *be, const rd_pass *ps,
                     redist_exec_report_t *r)
{
    const rd_xstep *x = &ps->x;
    uint64_t L = ps->dev_in, s = (uint64_t)x->group.size;
    /* logical traffic of the step (doc/spec-format.md section 2) */
    switch (x->op) {
    case REDIST_OP_ALL_GATHER:
        r->recv_bytes += (s - 1) * L;
        r->sent_bytes += (s - 1) * L;
        break;
    case REDIST_OP_REDUCE_SCATTER:
        if (x->boxed) { /* its box from each other member; theirs to them */
            r->recv_bytes += (s - 1) * ps->dev_out;
            r->sent_bytes += L - ps->dev_out;
            break;
        }
        /* fall through */
    case REDIST_OP_ALL_TO_ALL:
        r->recv_bytes += (s - 1) * (L / s);
        r->sent_bytes += (s - 1) * (L / s);
        break;
    case REDIST_OP_ALL_REDUCE:
        r->recv_bytes += rd_div_up(2 * (s - 1) * L, s);
        r->sent_bytes += rd_div_up(2 * (s - 1) * L, s);
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
}

/* A backend pass of one collective or exchange. */
static redist_status_t run_collective(redist_backend_t *be,
                                      const rd_pass *ps, void *in, void *out,
                                      redist_error_t *err)
{
    const rd_backend_ops *ops = be->ops;
    const rd_xstep *x = &ps->x;
    uint64_t L = ps->dev_in, s = (uint64_t)x->group.size;
    size_t elem = x->elem;
    switch (x->op) {
    case REDIST_OP_ALL_GATHER:
        return ops->blocks(be, &x->group, 0, in, out, L, err);
    case REDIST_OP_ALL_TO_ALL:
        return ops->blocks(be, &x->group, 1, in, out, L / s, err);
    case REDIST_OP_REDUCE_SCATTER:
        return ops->reduce(be, &x->group, 0, in, out, L / s / elem, x->dtype,
                           x->reduce, err);
    case REDIST_OP_ALL_REDUCE:
        return ops->reduce(be, &x->group, 1, in, out, L / elem, x->dtype,
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

/*
 * PREPARED RUNS.  rd_exec_prepare does everything of a call that is not
 * data movement, once: the checks, the program (built and bound to this
 * device), the two agreements (arguments and plan hash; scratch) and the
 * scratch (touched once with `touch`, so that no run page-faults);
 * rd_exec_run then only runs the passes, with no agreement and no
 * allocation; rd_exec_release frees.  redist_plan_execute is the three
 * in a row.
 */
redist_status_t rd_exec_prepare(const redist_plan_t *plan,
                                redist_backend_t *be, void *src, void *dst,
                                unsigned flags, int touch, rd_exec_prep *xp,
                                redist_exec_report_t *r, redist_error_t *err)
{
    redist_status_t st = REDIST_OK;
    uint64_t hash = 0;
    memset(xp, 0, sizeof *xp);
    memset(r, 0, sizeof *r);
    r->failed_step = -1;
    xp->be = be;
    if (!be || !be->ops)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                        "NULL backend"); /* nobody to agree with */
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
    else if ((!src && redist_spec_device_bytes(redist_plan_spec(plan), 0, be->rank)) ||
             (!dst && redist_spec_device_bytes(redist_plan_spec(plan), 1, be->rank)))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, src ? "dst" : "src",
                      "NULL buffer");
    else if (src == dst && src && !(be->build & RD_BUILD_END_IN_SRC))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "dst",
                      "src and dst must be distinct buffers");
    if (!st) {
        st = rd_program_build_for(plan, be, flags, &xp->p, err);
        if (!st)
            st = rd_exec_check_backend(&xp->p, be->ops, err);
        if (!st)
            st = rd_program_bind(&xp->p, plan, be->rank, err);
        hash = rd_plan_hash(plan, flags);
        xp->nsteps = redist_plan_num_steps(plan);
    }
    r->scratch_bytes = rd_program_scratch(&xp->p);
    r->writes_src = xp->p.writes_src;
    st = be->ops->agree(be, st, hash, err);
    if (!st) {
        /* scratch: identical sizes on every rank (less a lent region, not
         * allocated), then agree on it */
        void *sa = xp->p.lent == RD_BUF_SA ? be->lend : NULL;
        void *sb = xp->p.lent == RD_BUF_SB ? be->lend : NULL;
        if (xp->p.scratch[0] && !sa &&
            !(sa = scratch_alloc(xp, xp->p.scratch[0])))
            st = REDIST_ERR_NOMEM;
        if (!st && xp->p.scratch[1] && !sb &&
            !(sb = scratch_alloc(xp, xp->p.scratch[1])))
            st = REDIST_ERR_NOMEM;
        if (st)
            rd_error(err, st, NULL, NULL,
                     "cannot allocate %llu bytes of scratch on device %lld",
                     (unsigned long long)r->scratch_bytes,
                     (long long)be->rank);
        xp->buf[RD_BUF_SRC] = src;
        xp->buf[RD_BUF_DST] = dst;
        xp->buf[RD_BUF_SA] = sa;
        xp->buf[RD_BUF_SB] = sb;
        st = be->ops->agree(be, st, hash, err);
    }
    if (!st && touch) {
        if (xp->buf[RD_BUF_SA] && xp->buf[RD_BUF_SA] != be->lend)
            memset(xp->buf[RD_BUF_SA], 0, (size_t)xp->p.scratch[0]);
        if (xp->buf[RD_BUF_SB] && xp->buf[RD_BUF_SB] != be->lend)
            memset(xp->buf[RD_BUF_SB], 0, (size_t)xp->p.scratch[1]);
    }
    r->scratch_high_water = xp->high;
    r->scratch_allocations = xp->count;
    if (st)
        rd_exec_release(xp);
    return st;
}

/* Pass k of a prepared run, with its spare regions; a failure aborts
 * the other ranks. */
static redist_status_t run_one(rd_exec_prep *xp, int k,
                               redist_exec_report_t *r, redist_error_t *err)
{
    redist_backend_t *be = xp->be;
    const rd_program *p = &xp->p;
    const rd_pass *ps = &p->pass[k];
    if (ps->spare_buf >= 0 && ps->spare_bytes) {
        be->spare = (char *)xp->buf[ps->spare_buf] + ps->spare_off;
        be->spare_bytes = ps->spare_bytes;
    }
    if (ps->sspare_buf >= 0 && ps->sspare_bytes) {
        be->spare_scratch = (char *)xp->buf[ps->sspare_buf] + ps->sspare_off;
        be->spare_scratch_bytes = ps->sspare_bytes;
    }
    be->pass = k;
    redist_status_t st = run_pass(be, ps, xp->buf, r, err);
    be->pass = -1;
    be->spare = be->spare_scratch = NULL;
    be->spare_bytes = be->spare_scratch_bytes = 0;
    if (st) {
        r->failed_step = ps->first;
        if (be->ops->abort)
            be->ops->abort(be, st, err);
        return st;
    }
    if (ps->last >= 0 &&
        (k + 1 == p->npasses || p->pass[k + 1].first != ps->first))
        r->steps_done = ps->last + 1;
    return REDIST_OK;
}

int rd_pass_is_exchange(const rd_pass *ps)
{
    return (ps->kind == RD_PASS_XCHG || ps->kind == RD_PASS_FUSED) &&
           ps->x.op == REDIST_OP_EXCHANGE;
}

redist_status_t rd_exec_until_exchange(rd_exec_prep *xp, int *k,
                                       redist_exec_report_t *r,
                                       redist_error_t *err)
{
    const rd_program *p = &xp->p;
    for (; *k < p->npasses; (*k)++) {
        if (rd_pass_is_exchange(&p->pass[*k]))
            return REDIST_OK;
        redist_status_t st = run_one(xp, *k, r, err);
        if (st)
            return st;
    }
    return REDIST_OK;
}

redist_status_t rd_exec_run(rd_exec_prep *xp, redist_exec_report_t *r,
                            redist_error_t *err)
{
    redist_status_t st = REDIST_OK;
    const rd_program *p = &xp->p;
    r->failed_step = -1;
    r->steps_done = 0;
    r->recv_bytes = r->sent_bytes = 0;
    for (int k = 0; k < p->npasses && !st; k++)
        st = run_one(xp, k, r, err);
    if (!st)
        r->steps_done = xp->nsteps;
    r->scratch_bytes = rd_program_scratch(p);
    r->writes_src = p->writes_src;
    r->scratch_high_water = xp->high;
    r->scratch_allocations = xp->count;
    return st;
}

void rd_exec_release(rd_exec_prep *xp)
{
    if (xp->be && xp->be->ops) {
        if (xp->buf[RD_BUF_SB] != xp->be->lend)
            scratch_free(xp, xp->buf[RD_BUF_SB], xp->p.scratch[1]);
        if (xp->buf[RD_BUF_SA] != xp->be->lend)
            scratch_free(xp, xp->buf[RD_BUF_SA], xp->p.scratch[0]);
    }
    xp->buf[RD_BUF_SA] = xp->buf[RD_BUF_SB] = NULL;
    rd_program_free(&xp->p);
}

redist_status_t redist_plan_execute(const redist_plan_t *plan,
                                    redist_backend_t *be, void *src,
                                    void *dst,
                                    const redist_exec_options_t *opts,
                                    redist_exec_report_t *report,
                                    redist_error_t *err)
{
    double t0 = rd_exec_seconds();
    redist_exec_report_t r;
    rd_exec_prep xp;
    redist_status_t st = rd_exec_prepare(plan, be, src, dst,
                                         opts ? opts->flags : 0, 0, &xp, &r,
                                         err);
    if (!st) {
        st = rd_exec_run(&xp, &r, err);
        rd_exec_release(&xp);
        r.scratch_high_water = xp.high;
        r.scratch_allocations = xp.count;
    }
    r.seconds = rd_exec_seconds() - t0;
    if (report)
        *report = r;
    return st;
}
