/*
 * redist_shmem_exec_info and redist_shmem_execute.  Each call decides
 * whether the caller's buffers are symmetric on every PE (one
 * reduction), then sizes the part of the context's work area it may use
 * from the executor's program (work_promise: the same decisions
 * reduce_mode.c makes during the call), so the promise covers what
 * runs.  Cost: O(passes) plus one reduction per call.
 */
#include <string.h>

#include "shmem_impl.h"
#include "../../core/internal.h"

/* Whether [p, p + n) lies in the symmetric heap (locally). */
int rd_shm_sym_range(const redist_shmem_t *c, const void *p, uint64_t n)
{
    int pe = (c->me + 1) % c->npes;
    if (!p)
        return 0;
    if (!shmem_addr_accessible(p, pe))
        return 0;
    return n == 0 ||
           shmem_addr_accessible((const char *)p + (n - 1), pe);
}

/* The context's work area, if executing the plan may use it: a
 * reduction over more than one PE that cannot read its inputs in place
 * (pull) and has no free scratch to push into (reduce_push), or an
 * uneven reduce_scatter run whole with none (reduce_boxed.c).  The same
 * program the executor builds and binds, so the same decisions. */
static uint64_t work_promise(const redist_shmem_t *c, const redist_plan_t *plan,
                             const redist_exec_options_t *opts, int symmetric,
                             uint64_t *cap, uint64_t *bound_free)
{
    rd_program p;
    uint64_t need = 0, least = 0;
    *cap = 0;
    *bound_free = UINT64_MAX;
    if (rd_program_build_for(plan, &c->ep[symmetric], opts ? opts->flags : 0,
                             &p, NULL)) {
        rd_program_free(&p);
        return c->work_bytes; /* the executor fails the plan anyway */
    }
    /* uneven dims: the reductions run on this PE's blocks (step.c sizes
     * them from the bound shapes), which may choose another protocol
     * than the largest device's */
    if (!p.uneven) {
        for (int k = 0; k < p.npasses; k++)
            p.pass[k].dev_in = p.pass[k].in_bytes;
    } else if (rd_program_bind(&p, plan, c->me, NULL)) {
        rd_program_free(&p);
        return c->work_bytes;
    }
    uint64_t E = p.scratch[0] + p.scratch[1];
    uint64_t M = p.src_bytes > p.dst_bytes ? p.src_bytes : p.dst_bytes;
    *bound_free = M > E ? M - E : 0;
    for (int k = 0; k < p.npasses; k++) {
        const rd_pass *ps = &p.pass[k];
        const rd_xstep *x = &ps->x;
        if ((ps->kind != RD_PASS_XCHG && ps->kind != RD_PASS_FUSED) ||
            (x->op != REDIST_OP_REDUCE_SCATTER &&
             x->op != REDIST_OP_ALL_REDUCE) ||
            x->group.size <= 1)
            continue;
        int scratch_in = ps->in_buf == RD_BUF_SA || ps->in_buf == RD_BUF_SB;
        if (x->boxed) { /* an uneven reduce_scatter whole: its rule */
            if (!rd_shm_boxed_uses_work(x, symmetric || scratch_in,
                                        ps->sspare_bytes))
                continue;
            need = c->work_bytes;
            if ((uint64_t)(x->group.size - 1) * x->elem > least)
                least = (uint64_t)(x->group.size - 1) * x->elem;
            continue;
        }
        /* as the run sizes it: this PE's bound block (runtime.c for a
         * collective pass, its shape in step.c for a fused one) */
        uint64_t in_bytes = ps->dev_in;
        if (ps->kind == RD_PASS_FUSED) {
            in_bytes = x->elem;
            for (int d = 0; d < x->ndims; d++)
                in_bytes *= (uint64_t)x->in_shape[d];
        }
        int scratch_out = ps->out_buf == RD_BUF_SA || ps->out_buf == RD_BUF_SB;
        red_facts f = {x->group.size, x->elem,
                       x->op == REDIST_OP_ALL_REDUCE, in_bytes,
                       symmetric || scratch_in, ps->in_buf == ps->out_buf,
                       symmetric || scratch_out,
                       scratch_out ? p.scratch[ps->out_buf - RD_BUF_SA] : 0,
                       ps->spare_bytes, ps->sspare_bytes, *bound_free};
        if (rd_shm_red_mode(c, &f) != RED_PUSH_WORK)
            continue;
        need = c->work_bytes;
        if ((uint64_t)(x->group.size - 1) * x->elem > least)
            least = (uint64_t)(x->group.size - 1) * x->elem;
    }
    /* the pushes use at most what max(src, dst) leaves beside the
     * executor's scratch, and at least one element per other member
     * (red_mode avoids that where it can) */
    if (need) {
        *cap = *bound_free;
        if (*cap < least)
            *cap = least;
        if (*cap < need)
            need = *cap;
        else
            *cap = need;
    }
    rd_program_free(&p);
    return need;
}

static redist_status_t check_plan(const redist_shmem_t *c,
                                  const redist_plan_t *plan,
                                  redist_error_t *err)
{
    /* groups come from the plan's mesh: any mesh of npes devices */
    const redist_mesh_t *m = redist_spec_mesh(redist_plan_spec(plan));
    if (redist_mesh_num_devices(m) != c->npes)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                        "the plan's mesh has %lld devices, the job %d PEs",
                        (long long)redist_mesh_num_devices(m), c->npes);
    return REDIST_OK;
}

redist_status_t redist_shmem_exec_info(const redist_shmem_t *c,
                                       const redist_plan_t *plan,
                                       const void *src, const void *dst,
                                       const redist_exec_options_t *opts,
                                       redist_shmem_info_t *out,
                                       redist_error_t *err)
{
    if (!c || !plan || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL context, plan or output");
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2)
        return rd_shm_meshes_info(c, plan, src, dst, opts, out, err);
    redist_status_t st = check_plan(c, plan, err);
    if (st)
        return st;
    const redist_spec_t *s = redist_plan_spec(plan);
    int sym = rd_shm_sym_range(c, src, redist_spec_src_bytes(s)) &&
              rd_shm_sym_range(c, dst, redist_spec_dst_bytes(s));
    redist_exec_info_t e;
    st = redist_plan_exec_info(plan, &c->ep[sym], opts, &e, err);
    if (st)
        return st;
    memset(out, 0, sizeof *out);
    out->exec = e;
    out->symmetric = sym;
    uint64_t cap, bound_free;
    out->work_bytes = work_promise(c, plan, opts, sym, &cap, &bound_free);
    out->scratch_bytes = e.scratch_bytes + out->work_bytes;
    return REDIST_OK;
}

/* Whether src and dst are symmetric on every PE and the same objects
 * everywhere: one reduction over all PEs (collective). */
int rd_shm_symmetric(redist_shmem_t *c, const redist_plan_t *plan,
                     const void *src, const void *dst)
{
    shm_sym *y = c->sym;
    int sym = 0;
    if (plan && src && dst) {
        const redist_spec_t *s = redist_plan_spec(plan);
        sym = rd_shm_sym_range(c, src, redist_spec_src_bytes(s)) &&
              rd_shm_sym_range(c, dst, redist_spec_dst_bytes(s));
    }
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = !sym;
    y->red_src[1] = (long)(uintptr_t)src;
    y->red_src[2] = ~(long)(uintptr_t)src;
    y->red_src[3] = (long)(uintptr_t)dst;
    y->red_src[4] = ~(long)(uintptr_t)dst;
    rd_shm_reduce_max(c);
    return y->red_dst[0] == 0 && y->red_dst[1] == ~y->red_dst[2] &&
           y->red_dst[3] == ~y->red_dst[4];
}

/* The part of the work area a call may use (work_promise), with its cap
 * and bound in the context; 0 for a plan the executor refuses. */
uint64_t rd_shm_work_plan(redist_shmem_t *c, const redist_plan_t *plan,
                          const redist_exec_options_t *opts, int sym)
{
    c->work_used = 0;
    c->work_cap = 0;
    if (plan && !check_plan(c, plan, NULL))
        return work_promise(c, plan, opts, sym, &c->work_cap,
                            &c->bound_free);
    return 0;
}

redist_status_t redist_shmem_execute(redist_shmem_t *c,
                                     const redist_plan_t *plan, void *src,
                                     void *dst,
                                     const redist_exec_options_t *opts,
                                     redist_exec_report_t *report,
                                     redist_error_t *err)
{
    if (!c) {
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL shmem context");
    }
    if (c->busy) { /* the same on every PE of an SPMD program */
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "shmem: a non-blocking run of a prepared object of "
                        "this context is in flight (wait for it first)");
    }
    if (plan && redist_spec_num_meshes(redist_plan_spec(plan)) == 2)
        return rd_shm_meshes_execute(c, plan, src, dst, opts, report, err);
    int sym = rd_shm_symmetric(c, plan, src, dst);
    uint64_t promise = rd_shm_work_plan(c, plan, opts, sym);
    redist_status_t st = redist_plan_execute(plan, &c->ep[sym], src, dst,
                                             opts, report, err);
    c->work_cap = 0;
    c->bound_free = UINT64_MAX;
    if (report && plan && (!st || report->scratch_bytes)) {
        report->scratch_bytes += promise;
        report->scratch_high_water += c->work_used;
    }
    return st;
}
