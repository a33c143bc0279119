/*
 * Many arrays under one budget (doc/spec-format.md section 10,
 * doc/arrays.md): every array planned, the set grouped into rounds.
 *
 * ALGORITHM.  Each array is planned on its own (redist_plan_create, one
 * or two meshes), so each plan is the one a one-array spec would get.
 * Arrays of one round run together (set_run.c): their programs'
 * exchanges are combined into one message per peer, and every array of
 * the round holds its scratch at once.  So a round needs the sum of its
 * arrays' scratch, each array's figure being its executor program's
 * (rd_set_program: the program set_run.c runs on the backend kind the
 * set is planned for, or the generic one; the most any device needs; each of its two
 * scratch buffers rounded up to RD_SET_ALIGN bytes, as the arena lays
 * them out).  Rounds are
 * filled first-fit in order of decreasing scratch (ties: spec order), so
 * no round's sum exceeds budget_bytes; without a budget there is one
 * round.  An array whose scratch alone exceeds the budget makes the set
 * infeasible; the error names it and the smallest budget that works
 * (the largest single array's scratch).  A set with reductions keeps
 * RD_SET_WORK_LEAST bytes of every round for the backend's work space
 * (backend.h, begin_programs: the slowest reduction needs one element
 * beside a pass's spare region); a run gives the backend whatever the
 * budget leaves beside the largest round on top.
 *
 * COST.  The plans' own cost (n plans), one exec_info per array, and
 * O(n log n + n R) for the rounds (R rounds).  MEMORY: the plans.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "set.h"
#include "set_two.h"
#include "../plan/plan_internal.h"
#include "../core/internal.h"

void redist_plan_set_free(redist_plan_set_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n && !s->borrowed; i++)
        redist_plan_free(s->plan[i]);
    free(s->plan);
    free(s->scratch);
    free(s->round);
    free(s->rounds);
    free(s->name);
    free(s);
}

redist_status_t rd_set_program(const redist_plan_t *plan,
                               const rd_backend_ops *ops, unsigned flags,
                               rd_program *p, redist_error_t *err)
{
    /* the backend's whole steps, but exchange steps as passes of their
     * own wherever it has an exchange op (MPI), so that they combine */
    unsigned caps = ops ? ops->caps : 0;
    unsigned fused = ops && ops->step ? ops->fused_ops : 0;
    if (ops && ops->exchange)
        fused &= ~(1u << REDIST_OP_EXCHANGE);
    return rd_program_build(plan, caps, fused, flags, p, err);
}

redist_status_t rd_set_two_layout_of(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, rd_set_two_layout *l,
                                     redist_error_t *err)
{
    memset(l, 0, sizeof *l);
    for (int side = 0; side < 2; side++) {
        const redist_plan_t *ph = plan->m->phase[side];
        /* an empty phase: the caller's block is S (R), except the R
         * block of a backend that receives in its own scratch only
         * (one-sided puts: the arena is symmetric, the caller's
         * destination may not be), copied to the destination after the
         * transfer (set_two.c) */
        if (!redist_plan_num_steps(ph) && side && ops &&
            (ops->caps & RD_CAP_RECV_IN_SCRATCH))
            l->part[RD_TWO_R] =
                rd_set_align(redist_spec_src_bytes(redist_plan_spec(ph)));
        if (!redist_plan_num_steps(ph))
            continue;
        redist_status_t st = rd_set_program(ph, ops, flags, &l->prog[side],
                                            err);
        if (st)
            return st;
        const redist_spec_t *ps = redist_plan_spec(ph);
        int a = side ? RD_TWO_BSA : RD_TWO_ASA;
        l->part[a] = rd_set_align(l->prog[side].scratch[0]);
        l->part[a + 1] = rd_set_align(l->prog[side].scratch[1]);
        l->part[side ? RD_TWO_R : RD_TWO_S] = rd_set_align(
            side ? redist_spec_src_bytes(ps) : redist_spec_dst_bytes(ps));
    }
    return REDIST_OK;
}

redist_status_t rd_set_array_scratch(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, uint64_t *out,
                                     redist_error_t *err)
{
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2) {
        rd_set_two_layout l;
        redist_status_t st = rd_set_two_layout_of(plan, ops, flags, &l, err);
        *out = 0;
        for (int k = 0; k < RD_TWO_NPARTS; k++)
            *out += l.part[k];
        rd_program_free(&l.prog[0]);
        rd_program_free(&l.prog[1]);
        return st;
    }
    rd_program p;
    redist_status_t st = rd_set_program(plan, ops, flags, &p, err);
    if (!st)
        *out = rd_set_align(p.scratch[0]) + rd_set_align(p.scratch[1]);
    rd_program_free(&p);
    return st;
}

static int by_scratch(const void *a, const void *b, void *ctx)
{
    const uint64_t *sc = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (sc[i] != sc[j])
        return sc[i] > sc[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Insertion sort with a context (n is the set's size; qsort has no
 * context in C11). */
static void sort_idx(int *idx, int n, const uint64_t *sc)
{
    for (int i = 1; i < n; i++) {
        int v = idx[i], j = i;
        while (j > 0 && by_scratch(&idx[j - 1], &v, (void *)sc) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* First-fit decreasing under the budget. */
static redist_status_t group(redist_plan_set_t *s, redist_error_t *err)
{
    int n = s->n;
    if (n < 1)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "no arrays");
    int *idx = malloc((size_t)n * sizeof *idx);
    uint64_t *fill = calloc((size_t)n, sizeof *fill);
    if (!idx || !fill) {
        free(idx);
        free(fill);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    sort_idx(idx, n, s->scratch);
    int worst = idx[0];
    uint64_t need = s->scratch[worst] + s->reserve;
    if (s->budget != REDIST_NO_BUDGET && need > s->budget) {
        free(idx);
        free(fill);
        return rd_error(
            err, REDIST_ERR_INFEASIBLE, NULL, "budget_bytes",
            "array \"%s\" alone needs %llu bytes of scratch per device "
            "(%llu for its buffers, %llu of reduction work space), more "
            "than budget_bytes %llu: the smallest budget that works is %llu",
            redist_spec_name(redist_plan_spec(s->plan[worst])),
            (unsigned long long)need, (unsigned long long)s->scratch[worst],
            (unsigned long long)s->reserve, (unsigned long long)s->budget,
            (unsigned long long)need);
    }
    int nr = 0;
    for (int k = 0; k < n; k++) {
        int i = idx[k], r = 0;
        if (s->budget != REDIST_NO_BUDGET)
            while (r < nr &&
                   fill[r] + s->scratch[i] + s->reserve > s->budget)
                r++;
        if (r == nr)
            nr++;
        fill[r] += s->scratch[i];
        s->round[i] = r;
    }
    free(idx);
    free(fill);
    s->nrounds = nr;
    return REDIST_OK;
}

/* Per-round figures from the arrays' plans. */
static void round_figures(redist_plan_set_t *s)
{
    for (int i = 0; i < s->n; i++) {
        redist_plan_stats_t ps;
        rd_set_round *r = &s->rounds[s->round[i]];
        redist_plan_stats(s->plan[i], &ps);
        r->narrays++;
        r->scratch_bytes += s->scratch[i] + (r->narrays == 1 ? s->reserve : 0);
        r->recv_bytes += ps.recv_bytes;
        r->peak_bytes += ps.peak_bytes;
        r->time_s += ps.time_s;
        r->collectives += ps.collectives;
        int x = 0;
        for (int k = 0; k < redist_plan_num_steps(s->plan[i]); k++) {
            redist_step_view_t v;
            if (!redist_plan_step(s->plan[i], k, &v) &&
                (v.op == REDIST_OP_EXCHANGE || v.op == REDIST_OP_TRANSFER))
                x++;
        }
        if (x > r->exchanges)
            r->exchanges = x;
        if (!ps.memory_efficient)
            s->memory_efficient = 0;
    }
}

static redist_status_t finish(redist_plan_set_t *s, redist_plan_set_t **out,
                              redist_error_t *err);

redist_status_t redist_plan_set_create(const redist_arrays_t *arrays,
                                       const redist_plan_options_t *popts,
                                       const redist_backend_t *backend,
                                       const redist_exec_options_t *eopts,
                                       redist_plan_set_t **out,
                                       redist_error_t *err)
{
    if (!arrays || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL arrays or output");
    redist_exec_options_t eo = {0};
    if (eopts)
        eo = *eopts;
    if (eo.flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown execution flags 0x%x",
                        eo.flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC);
    int n = redist_arrays_count(arrays);
    redist_plan_set_t *s = calloc(1, sizeof *s);
    if (!s)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    s->plan = calloc((size_t)n, sizeof *s->plan);
    s->scratch = calloc((size_t)n, sizeof *s->scratch);
    s->round = calloc((size_t)n, sizeof *s->round);
    s->name = malloc(strlen(redist_arrays_name(arrays)) + 1);
    s->budget = redist_arrays_budget(arrays);
    s->exec_flags = eo.flags;
    s->is_set = redist_arrays_is_set(arrays);
    s->memory_efficient = 1;
    if (backend && backend->ops) {
        s->has_kind = 1;
        s->kind = *backend->ops;
    }
    if (!s->plan || !s->scratch || !s->round || !s->name) {
        redist_plan_set_free(s);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    strcpy(s->name, redist_arrays_name(arrays));
    redist_status_t st = REDIST_OK;
    for (int i = 0; i < n && !st; i++) {
        const redist_spec_t *sp = redist_arrays_get(arrays, i);
        st = redist_plan_create(sp, popts, &s->plan[i], err);
        if (!st) {
            s->n = i + 1;
            st = rd_set_array_scratch(s->plan[i],
                                      s->has_kind ? &s->kind : NULL,
                                      eo.flags, &s->scratch[i], err);
        }
        if (st && err) {
            /* name the array whose planning failed */
            char text[REDIST_ERROR_TEXT_LENGTH];
            size_t pos = 0;
            text[0] = '\0';
            rd_appendf(text, sizeof text, &pos, "array \"%s\": %s",
                       redist_spec_name(sp), err->text);
            rd_strlcpy(err->text, text, sizeof err->text);
        }
    }
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    return finish(s, out, err);
}

/* The reserve, the rounds and their figures of a set whose plans and
 * scratch figures are made; *out = s, or s is freed. */
static redist_status_t finish(redist_plan_set_t *s, redist_plan_set_t **out,
                              redist_error_t *err)
{
    redist_status_t st = REDIST_OK;
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < redist_plan_num_steps(s->plan[i]); k++) {
            redist_step_view_t v;
            if (!redist_plan_step(s->plan[i], k, &v) &&
                (v.op == REDIST_OP_REDUCE_SCATTER ||
                 v.op == REDIST_OP_ALL_REDUCE))
                s->reserve = RD_SET_WORK_LEAST;
        }
    /* two-mesh arrays: each mesh's endpoint has work space of its own */
    if (s->reserve)
        s->reserve *= (uint64_t)(1 + rd_set_distinct_meshes(s));
    st = group(s, err);
    if (!st && !(s->rounds = calloc((size_t)s->nrounds, sizeof *s->rounds)))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    round_figures(s);
    *out = s;
    return REDIST_OK;
}

redist_status_t rd_plan_set_of_plan(const redist_plan_t *plan,
                                    const rd_backend_ops *kind,
                                    unsigned flags, redist_plan_set_t **out,
                                    redist_error_t *err)
{
    redist_plan_set_t *s = calloc(1, sizeof *s);
    if (s) {
        s->plan = calloc(1, sizeof *s->plan);
        s->scratch = calloc(1, sizeof *s->scratch);
        s->round = calloc(1, sizeof *s->round);
        s->name = calloc(1, 1);
    }
    if (!s || !s->plan || !s->scratch || !s->round || !s->name) {
        redist_plan_set_free(s);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    s->borrowed = 1;
    s->n = 1;
    s->plan[0] = (redist_plan_t *)plan;
    s->budget = REDIST_NO_BUDGET;
    s->exec_flags = flags;
    s->memory_efficient = 1;
    if (kind) {
        s->has_kind = 1;
        s->kind = *kind;
    }
    redist_status_t st =
        rd_set_array_scratch(plan, kind, flags, &s->scratch[0], err);
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    return finish(s, out, err);
}

int redist_plan_set_num_arrays(const redist_plan_set_t *s)
{
    return s ? s->n : 0;
}

const redist_plan_t *redist_plan_set_plan(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->plan[i] : NULL;
}

int redist_plan_set_num_rounds(const redist_plan_set_t *s)
{
    return s ? s->nrounds : 0;
}

int redist_plan_set_round_of(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->round[i] : -1;
}

uint64_t redist_plan_set_array_scratch(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->scratch[i] : 0;
}

redist_status_t redist_plan_set_round(const redist_plan_set_t *s, int r,
                                      redist_round_stats_t *out)
{
    if (!s || !out || r < 0 || r >= s->nrounds)
        return REDIST_ERR_INVALID;
    *out = s->rounds[r];
    return REDIST_OK;
}

void redist_plan_set_stats(const redist_plan_set_t *s,
                           redist_plan_set_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->budget_bytes = REDIST_NO_BUDGET;
    if (!s)
        return;
    out->narrays = s->n;
    out->nrounds = s->nrounds;
    out->budget_bytes = s->budget;
    out->memory_efficient = s->memory_efficient;
    for (int r = 0; r < s->nrounds; r++) {
        const rd_set_round *x = &s->rounds[r];
        if (x->scratch_bytes > out->scratch_bytes)
            out->scratch_bytes = x->scratch_bytes;
        if (x->peak_bytes > out->peak_bytes)
            out->peak_bytes = x->peak_bytes;
        out->recv_bytes += x->recv_bytes;
        out->time_s += x->time_s;
        out->collectives += x->collectives;
        out->exchanges += x->exchanges;
    }
}
