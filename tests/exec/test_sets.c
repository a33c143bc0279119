/*
 * Many arrays (doc/arrays.md): random sets of random specs (even and
 * uneven, both objectives; one array in three between two meshes) planned under budgets from the
 * smallest that works upward, every round within the budget, run on the
 * sim backend with every element of every array checked and the scratch
 * high-water mark measured against the budget; a budget below the
 * smallest is refused naming the array and that budget; bad sets.
 * Arguments: [CASES [SEED]].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/random_plan.h"
#include "../../src/testing/pattern.h"

static int failures, twos;
#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c)) {                                                           \
            failures++;                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

#define MAXA 6

/* Run the set on sim with every element checked; 0 if exact. */
static int run_exact(const redist_plan_set_t *set, uint64_t budget,
                     int preserve, int c)
{
    int n = redist_plan_set_num_arrays(set);
    const redist_spec_t *s0 = redist_plan_spec(redist_plan_set_plan(set, 0));
    int64_t nd = redist_spec_num_devices(s0);
    void **src[MAXA], **dst[MAXA];
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        src[i] = calloc((size_t)nd, sizeof *src[i]);
        dst[i] = calloc((size_t)nd, sizeof *dst[i]);
        for (int64_t d = 0; d < nd; d++) {
            uint64_t sb = redist_spec_device_bytes(s, 0, d),
                     db = redist_spec_device_bytes(s, 1, d);
            src[i][d] = sb ? malloc(sb) : NULL;
            dst[i][d] = db ? malloc(db) : NULL;
            if (sb)
                rd_pattern_fill(s, d, src[i][d]);
            if (db)
                memset(dst[i][d], 0xA5, db);
        }
    }
    redist_exec_report_t rep;
    redist_error_t e = REDIST_ERROR_INIT;
    redist_status_t st = redist_exec_sim_run_set(
        set, (void *const *const *)src, (void *const *const *)dst, 0, &rep,
        NULL, &e);
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    CHECK(st == REDIST_OK, "case %d: run failed: %s", c, e.text);
    if (!st) {
        CHECK(rep.scratch_high_water <= t.scratch_bytes,
              "case %d: scratch high water %llu > the set's %llu", c,
              (unsigned long long)rep.scratch_high_water,
              (unsigned long long)t.scratch_bytes);
        CHECK(budget == REDIST_NO_BUDGET || rep.scratch_high_water <= budget,
              "case %d: scratch high water %llu > budget %llu", c,
              (unsigned long long)rep.scratch_high_water,
              (unsigned long long)budget);
        for (int i = 0; i < n; i++) {
            const redist_spec_t *s =
                redist_plan_spec(redist_plan_set_plan(set, i));
            for (int64_t d = 0; d < nd; d++) {
                rd_mismatch mm;
                if (preserve && redist_spec_device_bytes(s, 0, d) &&
                    rd_pattern_check_src(s, d, src[i][d], &mm)) {
                    CHECK(0, "case %d: array %s device %lld: the source "
                             "was written (REDIST_EXEC_PRESERVE_SRC)",
                          c, redist_spec_name(s), (long long)d);
                    bad = 1;
                    break;
                }
                if (redist_spec_device_bytes(s, 1, d) &&
                    rd_pattern_check(s, d, dst[i][d], &mm)) {
                    CHECK(0, "case %d: array %s device %lld element %llu: "
                             "expected %s, got %s",
                          c, redist_spec_name(s), (long long)d,
                          (unsigned long long)mm.local_index, mm.expected,
                          mm.got);
                    bad = 1;
                    break;
                }
            }
        }
    }
    for (int i = 0; i < n; i++) {
        for (int64_t d = 0; d < nd; d++) {
            free(src[i][d]);
            free(dst[i][d]);
        }
        free(src[i]);
        free(dst[i]);
    }
    return st || bad;
}

static void one_case(rp_rng *r, int c, int *rounds_seen)
{
    redist_mesh_t *m = rp_mesh_upto(r, 8, 8);
    int n = (int)rp_in(r, 1, MAXA);
    redist_spec_t *specs[MAXA] = {0};
    int made = 0;
    int64_t nd = redist_mesh_num_devices(m);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "a%d", i);
        /* one array in three moves between two meshes of the devices */
        if ((specs[made] = nd > 1 && rp_in(r, 0, 2) == 0
                               ? rp_set_two_spec(r, nd, name)
                               : rp_set_spec(r, m, name)))
            made++;
    }
    redist_plan_options_t po = {0};
    redist_exec_options_t xo = {0};
    xo.flags = rp_in(r, 0, 3) == 0 ? REDIST_EXEC_PRESERVE_SRC : 0;
    po.objective = rp_in(r, 0, 1) ? REDIST_OBJECTIVE_BYTES
                                  : REDIST_OBJECTIVE_TIME;
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    if (!made ||
        redist_arrays_create("set", made, (const redist_spec_t *const *)specs,
                             REDIST_NO_BUDGET, &a, &e) ||
        redist_plan_set_create(a, &po, NULL, &xo, &set, &e)) {
        /* no plan for some array (an infeasible spec) is not this test's */
        goto out;
    }
    uint64_t most = 0, sum = 0;
    rp_set_budgets(set, &most, &sum);
    CHECK(redist_plan_set_num_rounds(set) == 1,
          "case %d: no budget, %d rounds", c, redist_plan_set_num_rounds(set));
    redist_plan_set_free(set);
    set = NULL;
    redist_arrays_free(a);
    a = NULL;
    /* budgets: the smallest that works, something between, the sum */
    uint64_t budgets[3] = {most, most + (sum - most) / 2, sum};
    int which = (int)rp_in(r, 0, 2);
    uint64_t budget = budgets[which];
    if (redist_arrays_create("set", made, (const redist_spec_t *const *)specs,
                             budget, &a, &e) ||
        redist_plan_set_create(a, &po, NULL, &xo, &set, &e)) {
        CHECK(0, "case %d: budget %llu (>= %llu) refused: %s", c,
              (unsigned long long)budget, (unsigned long long)most, e.text);
        goto out;
    }
    int nr = redist_plan_set_num_rounds(set);
    rounds_seen[nr < 3 ? nr : 3]++;
    for (int k = 0; k < nr; k++) {
        redist_round_stats_t rs;
        CHECK(!redist_plan_set_round(set, k, &rs) && rs.narrays >= 1 &&
                  rs.scratch_bytes <= budget,
              "case %d: round %d: %d arrays, scratch %llu > budget %llu", c, k,
              rs.narrays, (unsigned long long)rs.scratch_bytes,
              (unsigned long long)budget);
    }
    CHECK(which != 2 || nr == 1, "case %d: budget = the sum, %d rounds", c,
          nr);
    for (int i = 0; i < made; i++)
        twos += redist_spec_num_meshes(specs[i]) == 2;
    run_exact(set, budget, xo.flags != 0, c);
    /* one byte less than the smallest: refused, naming that budget */
    if (most > 0) {
        redist_plan_set_t *none = NULL;
        redist_arrays_t *b = NULL;
        char want[64];
        snprintf(want, sizeof want, "smallest budget that works is %llu",
                 (unsigned long long)most);
        redist_error_clear(&e);
        redist_status_t st = redist_arrays_create(
            "set", made, (const redist_spec_t *const *)specs, most - 1, &b, &e);
        if (!st)
            st = redist_plan_set_create(b, &po, NULL, &xo, &none, &e);
        CHECK(st == REDIST_ERR_INFEASIBLE && strstr(e.text, want) &&
                  strstr(e.text, "array \""),
              "case %d: budget %llu: status %d, \"%s\"", c,
              (unsigned long long)(most - 1), (int)st, e.text);
        redist_plan_set_free(none);
        redist_arrays_free(b);
    }
out:
    redist_plan_set_free(set);
    redist_arrays_free(a);
    for (int i = 0; i < made; i++)
        redist_spec_free(specs[i]);
    redist_mesh_free(m);
}

/* Bad sets: clear errors, the place named. */
static void bad_sets(void)
{
    redist_error_t e = REDIST_ERROR_INIT;
    redist_arrays_t *a = NULL;
    const char *dup = "{\"mesh\": [[\"x\", 2]], \"arrays\": ["
                      "{\"name\": \"w\", \"shape\": [4], \"from\": {\"dims\": [[\"x\"]]}, \"to\": {\"dims\": [[]]}},"
                      "{\"name\": \"w\", \"shape\": [4], \"from\": {\"dims\": [[]]}, \"to\": {\"dims\": [[\"x\"]]}}]}";
    CHECK(redist_arrays_load_buffer(dup, strlen(dup), "m.json", 0, &a, &e) ==
                  REDIST_ERR_INVALID &&
              strcmp(e.path, "arrays[1].name") == 0 && !a,
          "duplicate names: %s: %s", e.path, e.text);
    redist_error_clear(&e);
    const char *axis = "{\"mesh\": [[\"x\", 2]], \"arrays\": ["
                       "{\"name\": \"w\", \"shape\": [4], \"from\": {\"dims\": [[\"x\"]]}, \"to\": {\"dims\": [[\"z\"]]}}]}";
    CHECK(redist_arrays_load_buffer(axis, strlen(axis), "m.json", 0, &a, &e) ==
                  REDIST_ERR_INVALID &&
              strncmp(e.path, "arrays[0].to", 12) == 0 &&
              strcmp(e.source, "m.json") == 0,
          "unknown axis: %s: %s: %s", e.source, e.path, e.text);
    redist_error_clear(&e);
    const char *budget = "{\"mesh\": [[\"x\", 2]], \"budget_bytes\": -1, \"arrays\": ["
                         "{\"name\": \"w\", \"shape\": [4], \"from\": {\"dims\": [[\"x\"]]}, \"to\": {\"dims\": [[]]}}]}";
    CHECK(redist_arrays_load_buffer(budget, strlen(budget), "m.json", 0, &a,
                                    &e) == REDIST_ERR_INVALID &&
              strcmp(e.path, "budget_bytes") == 0,
          "negative budget: %s: %s", e.path, e.text);
    redist_error_clear(&e);
    const char *noname = "{\"mesh\": [[\"x\", 2]], \"arrays\": ["
                         "{\"shape\": [4], \"from\": {\"dims\": [[\"x\"]]}, \"to\": {\"dims\": [[]]}}]}";
    CHECK(redist_arrays_load_buffer(noname, strlen(noname), "m.json", 0, &a,
                                    &e) == REDIST_ERR_INVALID &&
              strcmp(e.path, "arrays[0]") == 0,
          "no name: %s: %s", e.path, e.text);
    redist_error_clear(&e);
    redist_spec_t *one = NULL;
    CHECK(redist_spec_load_buffer(dup, strlen(dup), "m.json", 0, &one, &e) ==
                  REDIST_ERR_INVALID &&
              strcmp(e.path, "arrays") == 0,
          "one-array loader on a set: %s: %s", e.path, e.text);
    redist_spec_free(one);
    /* two meshes in a set: planned, run exact on every device */
    redist_error_clear(&e);
    const char *two = "{\"meshes\": {\"a\": {\"axes\": [[\"x\", 2]], \"devices\": [0, 1]},"
                      " \"b\": {\"axes\": [[\"y\", 2]], \"devices\": [2, 3]}}, \"arrays\": ["
                      "{\"name\": \"w\", \"shape\": [4], \"from\": {\"mesh\": \"a\", \"dims\": [[\"x\"]]},"
                      " \"to\": {\"mesh\": \"b\", \"dims\": [[\"y\"]]}}]}";
    redist_plan_set_t *set = NULL;
    CHECK(!redist_arrays_load_buffer(two, strlen(two), "m.json", 0, &a, &e) &&
              !redist_plan_set_create(a, NULL, NULL, NULL, &set, &e),
          "two meshes: %s", e.text);
    if (set)
        CHECK(!run_exact(set, REDIST_NO_BUDGET, 0, -1), "two meshes: a run");
    redist_plan_set_free(set);
    redist_arrays_free(a);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 200;
    static rp_rng rng = {0x9e3779b97f4a7c15ULL};
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, 0);
    int rounds[4] = {0};
    bad_sets();
    for (int c = 0; c < cases; c++)
        one_case(&rng, c, rounds);
    printf("%d cases: %d with one round, %d with two, %d with more; %d "
           "two-mesh arrays run; %d failures\n",
           cases, rounds[1], rounds[2], rounds[3], twos, failures);
    CHECK(twos > 0 || cases < 50, "no two-mesh array was run");
    CHECK(rounds[2] + rounds[3] > 0 || cases < 50,
          "no case needed more than one round");
    return failures ? 1 : 0;
}
