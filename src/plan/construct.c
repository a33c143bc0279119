/*
 * The constructive plan (rd_construct, solver.h): a plan that always
 * exists, built without search, step by step through the step table's
 * apply (so valid by construction); the solver's fallback when its budget
 * runs out and an upper bound that prunes its search.  The rounds are
 * described at rd_construct.  Cost: O(axes x dims) rounds of O(dims)
 * work, at most RD_FALLBACK_MAX steps; no allocation.
 */
#include <string.h>

#include "solver.h"

typedef struct {
    const rd_ctx *cx;
    rd_ctype cur;
    rd_step *out;
    int n;
} builder_t;

/* Append st if it is legal from the current type (its `after` becomes
 * the type it leads to). */
static int append(builder_t *b, rd_step st)
{
    rd_ctype next;
    char why[160];
    if (b->n >= RD_FALLBACK_MAX ||
        rd_step_kinds[st.op].apply(b->cx, &b->cur, &st, &next, why,
                                   sizeof why))
        return 0;
    st.after = next;
    b->out[b->n++] = st;
    b->cur = next;
    return 1;
}

/* A step of op on dim and axis (after: its stated type, or NULL). */
static int try_step(builder_t *b, int op, int dim, int axis,
                    const rd_ctype *after)
{
    rd_step st;
    memset(&st, 0, sizeof st);
    st.op = op;
    st.dim = dim;
    st.from_dim = st.to_dim = -1;
    st.axis = axis;
    if (after)
        st.after = *after;
    return append(b, st);
}

/* The dim whose target list has `a` as the next axis after a prefix that
 * `t` already holds, or -1. */
static int next_home(const rd_ctype *t, const rd_ctype *dst, int a)
{
    int q = 0, r = 0;
    for (int j = 0; j < dst->ndims; j++) {
        int have = t->cnt[j];
        if (have < dst->cnt[j] && dst->seq[r + have] == a &&
            memcmp(&t->seq[q], &dst->seq[r], (size_t)have) == 0)
            return j;
        q += t->cnt[j];
        r += dst->cnt[j];
    }
    return -1;
}

/* An all_to_all of axis a from dim `from` to dim `to`. */
static int try_move(builder_t *b, int from, int to, int a)
{
    rd_step st;
    memset(&st, 0, sizeof st);
    st.op = REDIST_OP_ALL_TO_ALL;
    st.dim = -1;
    st.from_dim = from;
    st.to_dim = to;
    st.axis = a;
    return append(b, st);
}

/* A plan that always exists, built without search: reduce the pending
 * axes (reduce_scatter into the target's place, in the target's order,
 * where it divides; else all_reduce); then a single exchange (time
 * objective) or permute when the local shapes already agree; else slice
 * onto every dim list that is a prefix of the target's, and take the
 * minor axis off one that is not (all_to_all to the dim that needs it
 * next, else all_gather), until the target is reached.  Each round makes
 * progress: when every list is a prefix of the target's, the next axis of
 * an unfinished dim is replicated (it is in no other dim's prefix and not
 * partial), and the target's divisibility makes the slice divide.  Valid
 * by construction (each step goes through the kind's apply), with no
 * claim of optimality.  Returns the number of steps, or -1 (internal
 * error). */
int rd_construct(const rd_ctx *cx, const rd_ctype *src, const rd_ctype *dst,
                 int exchange, rd_step out[])
{
    builder_t b = {cx, *src, out, 0};
    uint32_t pend = src->partial & ~dst->partial;
    int p = 0;
    for (int i = 0; i < cx->ndims; i++)
        for (int k = 0; k < dst->cnt[i]; k++, p++) {
            int a = dst->seq[p];
            if ((pend >> a & 1u) &&
                try_step(&b, REDIST_OP_REDUCE_SCATTER, i, a, NULL))
                pend &= ~(1u << a);
        }
    for (int a = 0; a < cx->naxes; a++)
        if ((pend >> a & 1u) &&
            !try_step(&b, REDIST_OP_ALL_REDUCE, -1, a, NULL))
            return -1;
    if (memcmp(&b.cur, dst, sizeof *dst) == 0)
        return b.n;
    if (exchange &&
        rd_exchange_analysable(cx, &b.cur, dst, RD_SOLVER_EXCHANGE_LIMIT) &&
        try_step(&b, REDIST_OP_EXCHANGE, -1, -1, dst))
        return b.n;
    if (try_step(&b, REDIST_OP_PERMUTE, -1, -1, dst))
        return b.n;
    for (;;) {
        int progress = 1;
        while (progress) {
            progress = 0;
            int q = 0, r = 0;
            for (int i = 0; i < cx->ndims; i++) {
                int have = b.cur.cnt[i];
                if (have < dst->cnt[i] &&
                    memcmp(&b.cur.seq[q], &dst->seq[r], (size_t)have) == 0 &&
                    try_step(&b, REDIST_OP_SLICE, i, dst->seq[r + have],
                             NULL))
                    progress = 1;
                q += b.cur.cnt[i];
                r += dst->cnt[i];
            }
        }
        if (memcmp(&b.cur, dst, sizeof *dst) == 0)
            return b.n;
        /* A dim whose list is not a prefix of the target's gives up its
         * minor axis: by all_to_all to the dim that needs it next, when
         * that divides, else by all_gather. */
        int q = 0, r = 0, moved = 0;
        for (int i = 0; i < cx->ndims && !moved; i++) {
            if (b.cur.cnt[i] > dst->cnt[i] ||
                memcmp(&b.cur.seq[q], &dst->seq[r], b.cur.cnt[i]) != 0) {
                int a = b.cur.seq[q + b.cur.cnt[i] - 1];
                int j = next_home(&b.cur, dst, a);
                moved = (j >= 0 && j != i &&
                         try_move(&b, i, j, a)) ||
                        try_step(&b, REDIST_OP_ALL_GATHER, i, a, NULL);
                if (!moved)
                    return -1;
            }
            q += b.cur.cnt[i];
            r += dst->cnt[i];
        }
        if (!moved)
            return -1; /* cannot happen: see above */
    }
}
