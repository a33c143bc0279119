/*
 * `redistplan run SET` for a spec with "arrays" (doc/arrays.md): the plan
 * set run on the sim backend --repeat times (the sources filled again
 * before each run unless --preserve-src keeps them), every element of
 * every array checked against the exact pattern (src/testing/pattern.h),
 * the sources too with --preserve-src, the measured scratch against the
 * budget.  Exit 0 exact and within the budget, 1 a mismatch
 * or over the budget, 2 bad input, too large, or no plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Every device's blocks of every array: bytes needed, and the buffers. */
uint64_t cli_set_bytes(const redist_plan_set_t *set, int64_t nd)
{
    uint64_t total = 0;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        for (int64_t d = 0; d < nd; d++)
            total += redist_spec_device_bytes(s, 0, d) +
                     redist_spec_device_bytes(s, 1, d);
    }
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    return total + (uint64_t)nd * t.scratch_bytes;
}

static void free_lists(void ***l, int n, int64_t nd)
{
    for (int i = 0; l && i < n; i++) {
        for (int64_t d = 0; l[i] && d < nd; d++)
            free(l[i][d]);
        free(l[i]);
    }
    free(l);
}

static void ***alloc_lists(const redist_plan_set_t *set, int side, int64_t nd)
{
    int n = redist_plan_set_num_arrays(set);
    void ***l = calloc((size_t)n, sizeof *l);
    for (int i = 0; l && i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        if (!(l[i] = calloc((size_t)nd, sizeof *l[i])))
            goto fail;
        for (int64_t d = 0; d < nd; d++) {
            uint64_t b = redist_spec_device_bytes(s, side, d);
            if (b && !(l[i][d] = malloc((size_t)b)))
                goto fail;
            if (b && side == 0)
                rd_pattern_fill(s, d, l[i][d]);
            else if (b)
                memset(l[i][d], 0xEE, (size_t)b);
        }
    }
    return l;
fail:
    free_lists(l, n, nd);
    return NULL;
}

/* Every device's source blocks filled again with the pattern. */
static void refill(const redist_plan_set_t *set, void ***src, int64_t nd)
{
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        for (int64_t d = 0; d < nd; d++)
            if (src[i][d])
                rd_pattern_fill(s, d, src[i][d]);
    }
}

/* The first mismatch of any array on any device (a destination, or with
 * `preserve` a source the run wrote): 1, and it is printed. */
static int check(const redist_plan_set_t *set, void ***src, void ***dst,
                 int64_t nd, int preserve)
{
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        for (int64_t d = 0; d < nd; d++) {
            rd_mismatch mm;
            int bad_dst = dst[i][d] && rd_pattern_check(s, d, dst[i][d], &mm);
            int bad_src = !bad_dst && preserve && src[i][d] &&
                          rd_pattern_check_src(s, d, src[i][d], &mm);
            if (bad_dst || bad_src) {
                printf("  array %s:\n", redist_spec_name(s));
                cli_run_mismatch(s, d, &mm, bad_src);
                return 1;
            }
        }
    }
    return 0;
}

int cli_run_set(const char *path, const redist_arrays_t *arrays,
                const redist_plan_options_t *opts, uint64_t max_bytes,
                int preserve, int shrink, uint64_t repeat)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_plan_set_t *set = NULL;
    redist_exec_options_t eo = {0};
    if (preserve)
        eo.flags |= REDIST_EXEC_PRESERVE_SRC;
    redist_status_t st = redist_plan_set_create(arrays, opts, NULL, &eo, &set, &err);
    if (st) {
        if (!err.source[0])
            snprintf(err.source, sizeof err.source, "%s", path);
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    redist_arrays_t *shrunk = NULL;
    if (shrink && cli_set_shrink(path, arrays, max_bytes, &set, &shrunk)) {
        redist_plan_set_free(set);
        redist_arrays_free(shrunk);
        return CLI_BAD_INPUT;
    }
    const redist_spec_t *s0 = redist_plan_spec(redist_plan_set_plan(set, 0));
    int64_t nd = redist_spec_num_devices(s0);
    int n = redist_plan_set_num_arrays(set);
    uint64_t need = cli_set_bytes(set, nd);
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    int rc = CLI_OK;
    if (need > max_bytes) {
        fprintf(stderr,
                "redistplan: run: %s: the set needs %llu bytes on the sim "
                "backend (every device's blocks and scratch), more than "
                "--max-bytes %llu; use --shrink or a larger --max-bytes\n",
                path, (unsigned long long)need,
                (unsigned long long)max_bytes);
        redist_plan_set_free(set);
        return CLI_BAD_INPUT;
    }
    void ***src = alloc_lists(set, 0, nd), ***dst = alloc_lists(set, 1, nd);
    redist_exec_report_t rep;
    if (!src || !dst) {
        fprintf(stderr, "redistplan: run: out of memory\n");
        rc = CLI_BAD_INPUT;
        goto out;
    }
    printf("run %s: backend sim, %lld devices, %d arrays in %d round%s\n",
           redist_arrays_name(arrays)[0] ? redist_arrays_name(arrays) : path,
           (long long)nd, n, t.nrounds, t.nrounds == 1 ? "" : "s");
    if (shrunk)
        cli_set_shrunk_line(set, arrays);
    uint64_t high = 0;
    int writes = 0;
    for (uint64_t k = 0; k < repeat; k++) {
        if (k && !preserve)
            refill(set, src, nd); /* the last run may have used them */
        st = redist_exec_sim_run_set(set, (void *const *const *)src,
                                     (void *const *const *)dst, 0, &rep,
                                     NULL, &err);
        if (st) {
            cli_print_error(&err);
            rc = CLI_MISMATCH;
            goto out;
        }
        if (rep.scratch_high_water > high)
            high = rep.scratch_high_water;
        writes |= rep.writes_src != 0;
    }
    rep.scratch_high_water = high;
    if (t.budget_bytes == REDIST_NO_BUDGET)
        printf("  scratch   %llu bytes per device (most; no budget)\n",
               (unsigned long long)rep.scratch_high_water);
    else
        printf("  scratch   %llu bytes per device (most), budget %llu: %s\n",
               (unsigned long long)rep.scratch_high_water,
               (unsigned long long)t.budget_bytes,
               rep.scratch_high_water <= t.budget_bytes ? "within"
                                                         : "OVER");
    printf("  traffic   received %llu bytes per device (most)\n",
           (unsigned long long)rep.recv_bytes);
    if (repeat > 1)
        printf("  runs      %llu\n", (unsigned long long)repeat);
    cli_run_source(preserve, writes);
    if (check(set, src, dst, nd, preserve))
        rc = CLI_MISMATCH;
    else if (t.budget_bytes != REDIST_NO_BUDGET &&
             rep.scratch_high_water > t.budget_bytes)
        rc = CLI_MISMATCH;
    else
        printf("  result    exact: %d arrays on %lld devices\n", n,
               (long long)nd);
out:
    free_lists(src, n, nd);
    free_lists(dst, n, nd);
    redist_plan_set_free(set);
    redist_arrays_free(shrunk);
    return rc;
}
