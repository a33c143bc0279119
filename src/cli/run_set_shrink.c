/*
 * `redistplan run SET --shrink` (doc/arrays.md): a smaller copy of a set
 * that fits --max-bytes, as --shrink makes of one array.
 *
 * ALGORITHM.  Each array's bytes on every device (its blocks and its
 * scratch) are estimated; while their sum exceeds --max-bytes, the
 * largest array is shrunk one step by redist_plan_shrink_shape (the dim
 * with the largest ratio to what its plan's types split it by, divided
 * by that ratio's smallest prime factor: the same steps stay valid, every
 * type divisible), its estimate divided by that factor.  An array that
 * cannot shrink further, or an uneven one (its layout rules are not
 * kept at another shape), keeps its shape.  The shrunk arrays replay the
 * set's plans (redist_plan_set_replay: the same steps, not a new search);
 * the budget shrinks by the ratio the estimates shrank by, but never
 * below the smallest that works (the largest array's scratch and the
 * round's work-space reserve, from the replay without a budget), so the
 * rounds stay close to the full set's.  The result is measured again:
 * still over --max-bytes is refused.
 * COST.  O(steps) per shrinking step (at most log2 of the shapes' sizes
 * per array), two replays of the set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Array i's bytes on every device: its blocks and its scratch. */
static double array_bytes(const redist_plan_set_t *set, int i, int64_t nd)
{
    const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
    double b = 0;
    for (int64_t d = 0; d < nd; d++)
        b += (double)redist_spec_device_bytes(s, 0, d) +
             (double)redist_spec_device_bytes(s, 1, d);
    return b + (double)nd * (double)redist_plan_set_array_scratch(set, i);
}

/* The shrunk shapes (shape[i]: array i's, changed[i] when smaller); the
 * estimates' ratio after / before. */
static double shrink_shapes(const redist_plan_set_t *set, int64_t nd,
                            uint64_t max_bytes, double *est,
                            int64_t (*shape)[REDIST_MAX_DIMS], int *changed)
{
    int n = redist_plan_set_num_arrays(set);
    double total = 0, before;
    for (int i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        est[i] = array_bytes(set, i, nd);
        total += est[i];
        memcpy(shape[i], redist_spec_shape(s),
               sizeof(int64_t) * (size_t)redist_spec_ndims(s));
        changed[i] = redist_spec_is_uneven(s) ? -1 : 0; /* -1: kept */
    }
    before = total;
    while (total > (double)max_bytes) {
        int j = -1;
        for (int i = 0; i < n; i++)
            if (changed[i] >= 0 && (j < 0 || est[i] > est[j]))
                j = i;
        if (j < 0)
            break;
        int64_t f = redist_plan_shrink_shape(redist_plan_set_plan(set, j),
                                             shape[j]);
        if (f <= 1) {
            changed[j] = changed[j] ? -2 : -1; /* -2: shrunk, no further */
            continue;
        }
        total -= est[j];
        est[j] /= (double)f;
        total += est[j];
        changed[j] = 1;
    }
    for (int i = 0; i < n; i++)
        changed[i] = changed[i] == 1 || changed[i] == -2;
    return before > 0 ? total / before : 1;
}

/* The shrunk arrays under `budget`, replaying *set's plans. */
static redist_status_t replayed(const redist_plan_set_t *set,
                                const redist_arrays_t *arrays,
                                int64_t (*shape)[REDIST_MAX_DIMS],
                                const int *changed, uint64_t budget,
                                redist_arrays_t **out_a,
                                redist_plan_set_t **out, redist_error_t *err)
{
    int n = redist_plan_set_num_arrays(set);
    redist_spec_t **own = calloc((size_t)n, sizeof *own);
    const redist_spec_t **sp = calloc((size_t)n, sizeof *sp);
    redist_status_t st = own && sp ? REDIST_OK
                                   : redist_error_set(err, REDIST_ERR_NOMEM,
                                                      NULL, NULL,
                                                      "out of memory");
    for (int i = 0; i < n && !st; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        sp[i] = s;
        if (changed[i] &&
            !(st = cli_spec_reshaped(s, shape[i], redist_spec_dtype(s),
                                     redist_spec_reduce(s), &own[i], err)))
            sp[i] = own[i];
    }
    *out_a = NULL;
    *out = NULL;
    if (!st)
        st = redist_arrays_create(redist_arrays_name(arrays), n, sp, budget,
                                  out_a, err);
    if (!st)
        st = redist_plan_set_replay(set, *out_a, NULL, out, err);
    for (int i = 0; own && i < n; i++)
        redist_spec_free(own[i]);
    free(own);
    free(sp);
    return st;
}

int cli_set_shrink(const char *path, const redist_arrays_t *arrays,
                   uint64_t max_bytes, redist_plan_set_t **set,
                   redist_arrays_t **shrunk)
{
    *shrunk = NULL;
    redist_plan_set_t *s0 = *set;
    int n = redist_plan_set_num_arrays(s0);
    int64_t nd = redist_spec_num_devices(
        redist_plan_spec(redist_plan_set_plan(s0, 0)));
    if (cli_set_bytes(s0, nd) <= max_bytes)
        return CLI_OK;
    double *est = calloc((size_t)n, sizeof *est);
    int64_t(*shape)[REDIST_MAX_DIMS] = calloc((size_t)n, sizeof *shape);
    int *changed = calloc((size_t)n, sizeof *changed);
    redist_error_t err = REDIST_ERROR_INIT;
    redist_status_t st = est && shape && changed
                             ? REDIST_OK
                             : redist_error_set(&err, REDIST_ERR_NOMEM, NULL,
                                                NULL, "out of memory");
    double ratio = st ? 1 : shrink_shapes(s0, nd, max_bytes, est, shape,
                                          changed);
    /* without a budget first: the smallest budget that works */
    redist_arrays_t *a = NULL;
    redist_plan_set_t *s = NULL;
    if (!st)
        st = replayed(s0, arrays, shape, changed, REDIST_NO_BUDGET, &a, &s,
                      &err);
    uint64_t budget = redist_arrays_budget(arrays);
    if (!st && budget != REDIST_NO_BUDGET) {
        redist_round_stats_t r0;
        uint64_t sum = 0, most = 0;
        for (int i = 0; i < n; i++) {
            uint64_t x = redist_plan_set_array_scratch(s, i);
            sum += x;
            most = x > most ? x : most;
        }
        redist_plan_set_round(s, 0, &r0);
        uint64_t least = most + (r0.scratch_bytes - sum); /* + reserve */
        double scaled = (double)budget * ratio;
        budget = scaled > (double)least ? (uint64_t)scaled : least;
        redist_arrays_free(a);
        redist_plan_set_free(s);
        st = replayed(s0, arrays, shape, changed, budget, &a, &s, &err);
    }
    free(est);
    free(shape);
    free(changed);
    if (st) {
        cli_error_source(&err, path);
        cli_print_error(&err);
        redist_arrays_free(a);
        redist_plan_set_free(s);
        return CLI_BAD_INPUT;
    }
    uint64_t need = cli_set_bytes(s, nd);
    redist_plan_set_free(s0);
    *set = s;
    *shrunk = a;
    if (need <= max_bytes)
        return CLI_OK;
    fprintf(stderr, "redistplan: run: %s: shrunk as far as the plans allow "
                    "(the same steps, every type divisible), the set still "
                    "needs %llu bytes (every device's blocks and scratch), "
                    "more than --max-bytes %llu\n",
            path, (unsigned long long)need, (unsigned long long)max_bytes);
    return CLI_BAD_INPUT;
}

void cli_set_shrunk_line(const redist_plan_set_t *set,
                         const redist_arrays_t *orig)
{
    int n = redist_plan_set_num_arrays(set), k = 0;
    uint64_t before = 0, after = 0;
    for (int i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        const redist_spec_t *o = redist_arrays_get(orig, i);
        k += memcmp(redist_spec_shape(s), redist_spec_shape(o),
                    sizeof(int64_t) * (size_t)redist_spec_ndims(s)) != 0;
        before += redist_spec_src_bytes(o);
        after += redist_spec_src_bytes(s);
    }
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    printf("  shrunk    %d of %d arrays (--shrink: the same steps, every "
           "type divisible), %llu source bytes per device of %llu",
           k, n, (unsigned long long)after, (unsigned long long)before);
    if (t.budget_bytes != REDIST_NO_BUDGET)
        printf(", budget %llu of %llu", (unsigned long long)t.budget_bytes,
               (unsigned long long)redist_arrays_budget(orig));
    printf("\n");
}
