/*
 * Two-mesh plans over OpenSHMEM (redist/shmem.h, TWO MESHES;
 * doc/meshes.md): redist_shmem_prepare_meshes, _run_meshes,
 * _meshes_free, and redist_shmem_execute / _exec_info on a two-mesh
 * plan.
 *
 * ALGORITHM.  PE d is global device d.  A two-mesh plan runs as a plan
 * set of that one array (rd_plan_set_of_plan, src/exec/set.c) on the
 * context's endpoint for any buffers, with the set's runner
 * (src/exec/set_run.c, set_two.c): prepare makes a sub context per mesh
 * (sub.c: the mesh's PEs, signal counters of its own), builds and binds
 * the phases' programs and the transfer's pieces, and allocates the
 * phases' scratch and the S and R blocks (MEMORY below);
 * a run runs the source phase on the source mesh's PEs (source block ->
 * S block), the transfer as one-sided puts of each piece straight into
 * its place in the receiver's R block (each byte crosses once, as the
 * plan's transfer says; one signalled series of puts per peer), or
 * streamed through a symmetric window, fill by fill, each copied (or
 * reduced) out into R before the next (stream.c, src/exec/set_stream.c),
 * then
 * the target phase on the target mesh's PEs (R block -> destination; an
 * empty target phase: a local copy, since the caller's destination may
 * not be symmetric).  PEs outside a mesh pass NULL for its buffer.
 *
 * FAILURE.  Every check a PE can fail on its own is agreed over every PE
 * before anything is allocated (the set's agreements); a PE that fails
 * in a run aborts every PE of the job, as for one-mesh plans.  A plan
 * whose transfer sums pending contributions puts each into its slab of
 * the receiver's arena, reduced there in sender order (set_two.c), or
 * streamed, reduces each fill in as it lands, in the same order.
 *
 * COST.  Prepare: the set's (its agreements, one collective allocation
 * per mesh and one of the arena, one private allocation of the S (and,
 * streamed, R) block where it needs one; streamed, one more collective
 * allocation of npes + 1 counters) and one more reduction (r_usr_agreed:
 * whether every PE passes the same symmetric src and dst); a run: the
 * phases' steps and one combined transfer, no allocation.  MEMORY: the set's
 * layout of one array (src/exec/set_two.c, SOLO): a symmetric part, the
 * same on every PE, of the blocks and scratch that other PEs write,
 * overlapped by lifetime; the R block in the caller's destination or
 * source instead when every PE passes the same symmetric objects and
 * the plan allows it (rd_set_two_r_usr); this PE's S block in its
 * destination, in the symmetric part's spare end, or in private memory
 * of its own size.  Streamed (with any buffers, where that keeps more
 * PEs within max(src_d, dst_d): rd_set_two_r_usr), the symmetric part
 * is the window over the phases' scratch, no R block or slabs in it,
 * and R lies in the destination, the consumed source or private memory
 * of this PE's own size.  That sum is this PE's promise
 * (report.scratch_bytes, redist_shmem_info_t.scratch_bytes, judged on
 * this PE's buffers there)
 * and what its high-water mark measures; it exceeds max(src_d, dst_d)
 * where the symmetric part (the most any PE needs) does, or a phase's
 * scratch does beside a private S or R.  The context's work area, which
 * the phases' pushed reductions may use, is not counted (it is the
 * context's, allocated at creation).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/set.h"
#include "../../exec/set_two.h"
#include "../../core/internal.h"

struct redist_shmem_meshes {
    redist_shmem_t *c;
    redist_plan_set_t *set;
    redist_set_prepared_t *prep;
    int started; /* a non-blocking run started, not yet waited for */
};

/* Non-blocking runs are the set's (set_run.c), under these names. */
static const rd_prepared_api meshes_api = {
    "redist_shmem_run_meshes", "redist_shmem_start_meshes",
    "redist_shmem_test_meshes", "redist_shmem_wait_meshes",
    "a prepared object of this context",
    "SHMEM_THREAD_MULTIPLE on every PE (shmem_init_thread)"};

/* The checks a PE makes alone (then agreed by the set's preparation). */
static redist_status_t meshes_checks(const redist_shmem_t *c,
                                     const redist_plan_t *plan,
                                     const redist_exec_options_t *opts,
                                     redist_error_t *err)
{
    if (!plan)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "plan", "NULL plan");
    const redist_spec_t *s = redist_plan_spec(plan);
    if (redist_spec_num_meshes(s) != 2)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                        "a plan of a one-mesh spec: use "
                        "redist_shmem_prepare");
    if (redist_spec_num_devices(s) != c->npes)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "plan",
                        "the plan's meshes use devices 0 to %lld, the job "
                        "has %d PEs (PE d is device d)",
                        (long long)redist_spec_num_devices(s) - 1, c->npes);
    if (opts && (opts->flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC))
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "two-mesh runs take REDIST_EXEC_PRESERVE_SRC only");
    return REDIST_OK;
}

/* Are this PE's src and dst symmetric over its blocks (non-NULL even
 * for an empty block: every PE passes the same objects)? */
static int sym_buffers(const redist_shmem_t *c, const redist_plan_t *plan,
                       const void *src, const void *dst)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    return rd_shm_sym_range(c, src,
                            redist_spec_device_bytes(s, REDIST_SIDE_FROM,
                                                     c->me)) &&
           rd_shm_sym_range(c, dst,
                            redist_spec_device_bytes(s, REDIST_SIDE_TO,
                                                     c->me));
}

/* Where this PE would place the R block and run phase A (set_two.h,
 * RD_SOLO_*): the plan's choice (rd_set_two_r_usr) for symmetric buffers
 * or for any; judged on this PE only. */
static int r_usr_local(const redist_shmem_t *c, const redist_plan_t *plan,
                       const void *src, const void *dst, unsigned flags)
{
    return rd_set_two_r_usr(plan, c->ep[0].ops, flags,
                            sym_buffers(c, plan, src, dst));
}

/* The same, agreed over every PE (one reduction, collective; plan NULL
 * on a PE whose checks failed): the caller's buffer only when every PE
 * chose it and passes the same object, so that a sender's own address
 * of it is the receivers'; else the choice for any buffers.  *all_ok:
 * every PE passed its checks and makes this same reduction ([0]: a
 * failed PE's 1; [7]: -1 here, 0 in every other reduction of the
 * context, rd_shm_symmetric's and the agreements', so a PE in
 * redist_shmem_execute of a one-array plan, or of none, shows). */
static int r_usr_agreed(redist_shmem_t *c, const redist_plan_t *plan,
                        const void *src, const void *dst, unsigned flags,
                        int failed, int *all_ok)
{
    shm_sym *y = c->sym;
    int k = plan ? r_usr_local(c, plan, src, dst, flags) : RD_SOLO_R_ARENA;
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = failed != 0;
    y->red_src[7] = -1;
    y->red_src[1] = k;
    y->red_src[2] = ~(long)k;
    y->red_src[3] = (long)(uintptr_t)src;
    y->red_src[4] = ~(long)(uintptr_t)src;
    y->red_src[5] = (long)(uintptr_t)dst;
    y->red_src[6] = ~(long)(uintptr_t)dst;
    rd_shm_reduce_max(c);
    *all_ok = y->red_dst[0] == 0 && y->red_dst[7] == -1;
    if (y->red_dst[1] == ~y->red_dst[2] && y->red_dst[3] == ~y->red_dst[4] &&
        y->red_dst[5] == ~y->red_dst[6])
        return (int)y->red_dst[1];
    return plan && *all_ok ? rd_set_two_r_usr(plan, c->ep[0].ops, flags, 0)
                           : RD_SOLO_R_ARENA;
}

void redist_shmem_meshes_free(redist_shmem_meshes_t *m)
{
    if (!m)
        return;
    redist_set_prepared_free(m->prep); /* collective */
    redist_plan_set_free(m->set);
    free(m);
}

redist_status_t redist_shmem_prepare_meshes(redist_shmem_t *c,
                                            const redist_plan_t *plan,
                                            void *src, void *dst,
                                            const redist_exec_options_t *opts,
                                            redist_shmem_meshes_t **out,
                                            redist_error_t *err)
{
    if (!c || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL shmem context or output");
    if (c->busy) /* the same on every PE of an SPMD program */
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "shmem: a non-blocking run of a prepared object of "
                        "this context is in flight (wait for it first)");
    redist_backend_t *be = &c->ep[0];
    redist_shmem_meshes_t *m = calloc(1, sizeof *m);
    redist_status_t st =
        m ? meshes_checks(c, plan, opts, err)
          : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    /* every PE (a failed one too): where the R block lands */
    unsigned fl = opts ? opts->flags : 0;
    int all_ok = 0;
    int usr = r_usr_agreed(c, st ? NULL : plan, src, dst, fl, st != 0,
                           &all_ok);
    if (!all_ok) {
        /* a PE failed its checks, or runs redist_shmem_execute of a
         * one-array plan or of none (its leading reduction, then one
         * agreement): one agreement says which, on every PE, and no PE
         * waits for a collective another never makes */
        st = be->ops->agree(be, st, 0, err);
        if (!st)
            st = rd_error(err, REDIST_ERR_MISMATCH, NULL, "plan",
                          "the PEs do not all prepare a two-mesh plan");
        redist_shmem_meshes_free(m);
        return st;
    }
    if (!st)
        st = rd_plan_set_of_plan(plan, be->ops, fl, usr, &m->set, err);
    if (m)
        m->c = c;
    void *s1[1] = {src}, *d1[1] = {dst};
    /* a failure here is agreed with the others' preparation */
    redist_set_prepared_t *prep = NULL;
    st = rd_set_prepare(m ? m->set : NULL, be, s1, d1, st, &prep, err);
    if (m)
        m->prep = prep;
    if (st) {
        redist_shmem_meshes_free(m);
        return st;
    }
    rd_set_prepared_names(prep, &meshes_api);
    *out = m;
    return REDIST_OK;
}

redist_status_t redist_shmem_run_meshes(redist_shmem_meshes_t *m,
                                        redist_exec_report_t *report,
                                        redist_error_t *err)
{
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    if (!m)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL prepared two-mesh object");
    if (m->c->busy)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "shmem: a non-blocking run of a prepared object of "
                        "this context is in flight (wait for it first)");
    redist_exec_report_t r;
    redist_status_t st = redist_set_run(m->prep, &r, err);
    /* the set counts arrays done; a plan counts its steps */
    r.steps_done = st ? 0 : redist_plan_num_steps(m->set->plan[0]);
    r.failed_step = st ? 0 : -1;
    if (report)
        *report = r;
    return st;
}

redist_status_t redist_shmem_start_meshes(redist_shmem_meshes_t *m,
                                          redist_error_t *err)
{
    redist_status_t st = m ? redist_set_start(m->prep, err)
                           : rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                                      "NULL prepared two-mesh object");
    if (!st)
        m->started = 1;
    return st;
}

redist_status_t redist_shmem_test_meshes(redist_shmem_meshes_t *m,
                                         int *done, redist_error_t *err)
{
    return redist_set_test(m ? m->prep : NULL, done, err);
}

redist_status_t redist_shmem_wait_meshes(redist_shmem_meshes_t *m,
                                         redist_exec_report_t *report,
                                         redist_error_t *err)
{
    redist_exec_report_t r;
    redist_status_t st = redist_set_wait(m ? m->prep : NULL, &r, err);
    if (m && m->started) { /* as run_meshes counts */
        m->started = 0;
        r.steps_done = st ? 0 : redist_plan_num_steps(m->set->plan[0]);
        r.failed_step = st ? 0 : -1;
    }
    if (report)
        *report = r;
    return st;
}

int redist_shmem_meshes_async(const redist_shmem_meshes_t *m)
{
    return m && redist_set_prepared_async(m->prep);
}

/* redist_shmem_execute of a two-mesh plan. */
redist_status_t rd_shm_meshes_execute(redist_shmem_t *c,
                                      const redist_plan_t *plan, void *src,
                                      void *dst,
                                      const redist_exec_options_t *opts,
                                      redist_exec_report_t *report,
                                      redist_error_t *err)
{
    redist_shmem_meshes_t *m = NULL;
    double t0 = rd_exec_seconds();
    redist_status_t st =
        redist_shmem_prepare_meshes(c, plan, src, dst, opts, &m, err);
    if (!st)
        st = redist_shmem_run_meshes(m, report, err);
    else if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    redist_shmem_meshes_free(m);
    if (report)
        report->seconds = rd_exec_seconds() - t0;
    return st;
}

/* redist_shmem_exec_info of a two-mesh plan: the executor's figures of
 * its phases, and this PE's part of the set's arena and its private S
 * block as the promise. */
redist_status_t rd_shm_meshes_info(const redist_shmem_t *c,
                                   const redist_plan_t *plan,
                                   const void *src, const void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_shmem_info_t *out,
                                   redist_error_t *err)
{
    redist_status_t st = meshes_checks(c, plan, opts, err);
    redist_exec_info_t e;
    uint64_t sym = 0, priv = 0;
    unsigned fl = opts ? opts->flags : 0;
    int usr = st ? RD_SOLO_R_ARENA : r_usr_local(c, plan, src, dst, fl);
    if (!st)
        st = redist_plan_exec_info(plan, &c->ep[0], opts, &e, err);
    if (!st)
        st = rd_set_two_solo_sizes(plan, c->ep[0].ops, fl, usr, c->me,
                                   &sym, &priv, err);
    if (st)
        return st;
    memset(out, 0, sizeof *out);
    out->exec = e;
    out->exec.writes_src |= rd_set_two_solo_r_src(plan, fl, usr, c->me);
    out->symmetric = sym_buffers(c, plan, src, dst);
    out->exec.scratch_bytes = sym + priv;
    out->scratch_bytes = sym + priv;
    return REDIST_OK;
}
