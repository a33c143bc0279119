/*
 * Many arrays (doc/arrays.md): random sets of random specs (even and
 * uneven, both objectives; one array in three between two meshes) planned under budgets from the
 * smallest that works upward, every round within the budget, run on the
 * sim backend with every element of every array checked and the scratch
 * high-water mark measured against the budget; a budget below the
 * smallest is refused naming the array and that budget; bad sets; a set
 * of 12 distinct meshes.
 * Arguments: [CASES [SEED]].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/random_plan.h"
#include "../../src/testing/pattern.h"
#include "../../src/backend/sim/sim_internal.h"

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

/* Equal up to rounding (times in seconds). */
static int close_to(double a, double b)
{
    double d = a > b ? a - b : b - a, m = a > b ? a : b;
    return d <= 1e-9 * m + 1e-15;
}


/* One device's run of a set (rd_sim_run_each): prepared, run, and the
 * combined exchanges and messages its runner made. */
#define MAXD 64
typedef struct set_job {
    const redist_plan_set_t *set;
    void ***src, ***dst;
    uint64_t xs[MAXD], msgs[MAXD];
} set_job;

static redist_status_t run_device(void *arg, redist_backend_t *be,
                                  redist_exec_report_t *r,
                                  redist_error_t *err)
{
    set_job *j = arg;
    int64_t d = redist_backend_rank(be);
    int n = redist_plan_set_num_arrays(j->set);
    void *s[64], *t[64];
    for (int i = 0; i < n && i < 64; i++) {
        s[i] = j->src[i][d];
        t[i] = j->dst[i][d];
    }
    redist_set_prepared_t *p = NULL;
    /* every device prepares (an agreement), none skips it */
    redist_status_t st = redist_plan_set_prepare(j->set, be, s, t, &p, err);
    if (!st)
        st = redist_set_run(p, r, err);
    if (!st && d < MAXD) {
        j->xs[d] = redist_set_prepared_exchanges(p);
        j->msgs[d] = redist_set_prepared_messages(p);
    }
    redist_set_prepared_free(p);
    return st;
}

/* Run the set on sim with every element checked, and every device's
 * combined exchanges equal to the set's figure (*xs, when not NULL: the
 * most any device made, *msgs its messages); 0 if exact. */
static int run_exact_x(const redist_plan_set_t *set, uint64_t budget,
                       int preserve, int c, uint64_t *xs, uint64_t *msgs);

static int run_exact(const redist_plan_set_t *set, uint64_t budget,
                     int preserve, int c)
{
    return run_exact_x(set, budget, preserve, c, NULL, NULL);
}

static int run_exact_x(const redist_plan_set_t *set, uint64_t budget,
                       int preserve, int c, uint64_t *xs, uint64_t *msgs)
{
    int n = redist_plan_set_num_arrays(set);
    const redist_spec_t *s0 = redist_plan_spec(redist_plan_set_plan(set, 0));
    int64_t nd = redist_spec_num_devices(s0);
    void ***src = calloc((size_t)n, sizeof *src),
         ***dst = calloc((size_t)n, sizeof *dst);
    int bad = 0;
    if (!src || !dst) {
        free(src);
        free(dst);
        CHECK(0, "case %d: out of memory", c);
        return 1;
    }
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
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    static set_job job; /* large; one run at a time */
    memset(&job, 0, sizeof job);
    job.set = set;
    job.src = src;
    job.dst = dst;
    redist_sim_t *w = NULL;
    redist_status_t st = redist_sim_create(nd, 0, &w, &e);
    if (!st)
        st = rd_sim_run_each(w, run_device, &job, &rep, NULL, &e);
    redist_sim_free(w);
    CHECK(st == REDIST_OK, "case %d: run failed: %s", c, e.text);
    if (!st) {
        uint64_t most = 0, most_m = 0;
        for (int64_t d = 0; d < nd && d < MAXD; d++) {
            CHECK(job.xs[d] == (uint64_t)t.exchanges,
                  "case %d: device %lld made %llu combined exchanges, the "
                  "set's figure is %d",
                  c, (long long)d, (unsigned long long)job.xs[d],
                  t.exchanges);
            most = job.xs[d] > most ? job.xs[d] : most;
            most_m = job.msgs[d] > most_m ? job.msgs[d] : most_m;
        }
        if (xs)
            *xs = most;
        if (msgs)
            *msgs = most_m;
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
    free(src);
    free(dst);
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
    /* every other case lets pending sums cross between meshes */
    po.no_cross_sums = c % 2;
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
    /* the smallest budget the set names at budget 0, planned as here
     * (rp_set_budgets replays the plans, which fails for some uneven
     * two-mesh plans: then its figure is the largest array's, above the
     * smallest where a budget keeps reductions as collectives) */
    redist_arrays_t *z = NULL;
    redist_plan_set_t *zs = NULL;
    if (!redist_arrays_create("set", made, (const redist_spec_t *const *)specs,
                              0, &z, &e)) {
        const char *key = "smallest budget that works is ", *at;
        redist_status_t zst = redist_plan_set_create(z, &po, NULL, &xo, &zs,
                                                     &e);
        if (!zst)
            most = 0;
        else if (zst == REDIST_ERR_INFEASIBLE && (at = strstr(e.text, key)))
            most = strtoull(at + strlen(key), NULL, 10);
    }
    redist_plan_set_free(zs);
    redist_arrays_free(z);
    redist_error_clear(&e);
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
    /* modelled times: a round's never above its arrays' added up, equal
     * to them for one array; the set's adds up its rounds' */
    double rounds_t = 0, plans_t = 0;
    for (int k = 0; k < nr; k++) {
        redist_round_stats_t rs;
        double arrays = 0;
        redist_plan_set_round(set, k, &rs);
        for (int i = 0; i < made; i++)
            if (redist_plan_set_round_of(set, i) == k) {
                redist_plan_stats_t ps;
                redist_plan_stats(redist_plan_set_plan(set, i), &ps);
                arrays += ps.time_s;
            }
        CHECK(close_to(rs.arrays_time_s, arrays) && rs.time_s >= 0 &&
                  rs.time_s <= arrays * (1 + 1e-12) &&
                  (rs.narrays > 1 || close_to(rs.time_s, arrays)),
              "case %d: round %d of %d arrays: %.6g us, the arrays' %.6g", c,
              k, rs.narrays, rs.time_s * 1e6, arrays * 1e6);
        rounds_t += rs.time_s;
        plans_t += arrays;
    }
    redist_plan_set_stats_t st;
    redist_plan_set_stats(set, &st);
    CHECK(close_to(st.time_s, rounds_t) && close_to(st.arrays_time_s, plans_t),
          "case %d: set time %.6g us, rounds %.6g", c, st.time_s * 1e6,
          rounds_t * 1e6);
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

/* ---- a round's modelled time (the model: the top of src/exec/set.c),
 * computed here from the plans' steps and the blocks' geometry: the
 * arrays' one-mesh exchanges of fully sharded types (each block on one
 * device, so the sender of every element is known), all on the built-in
 * model's `node` level. */

/* Start and length along `dim` of device d's block of type t (the first
 * axis of a dim's list the major one). */
static void block_of(const redist_mesh_t *m, const redist_type_t *t,
                     const int64_t shape[], int dim, int64_t d, int64_t *lo,
                     int64_t *len)
{
    int64_t c[REDIST_MAX_AXES], idx = 0, n = 1;
    redist_mesh_coords(m, d, c);
    for (int k = 0; k < t->dim_naxes[dim]; k++) {
        int a = t->dims[dim][k];
        idx = idx * redist_mesh_axis_size(m, a) + c[a];
        n *= redist_mesh_axis_size(m, a);
    }
    *len = shape[dim] / n;
    *lo = idx * *len;
}

/* Bytes device q's block of `a` shares with device d's block of `b`. */
static uint64_t overlap(const redist_spec_t *s, const redist_type_t *a,
                        int64_t q, const redist_type_t *b, int64_t d)
{
    const redist_mesh_t *m = redist_spec_mesh(s);
    const int64_t *shape = redist_spec_shape(s);
    uint64_t n = redist_dtype_size(redist_spec_dtype(s));
    for (int i = 0; i < redist_spec_ndims(s); i++) {
        int64_t l1, n1, l2, n2;
        block_of(m, a, shape, i, q, &l1, &n1);
        block_of(m, b, shape, i, d, &l2, &n2);
        int64_t lo = l1 > l2 ? l1 : l2, hi = l1 + n1 < l2 + n2 ? l1 + n1
                                                               : l2 + n2;
        n *= hi > lo ? (uint64_t)(hi - lo) : 0;
    }
    return n;
}

/* Every axis of size > 1 in some dim's list, nothing partial. */
static int fully_sharded(const redist_mesh_t *m, const redist_type_t *t)
{
    int used = 0, need = 0;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        need += redist_mesh_axis_size(m, a) > 1;
    for (int i = 0; i < t->ndims; i++)
        for (int k = 0; k < t->dim_naxes[i]; k++)
            used += redist_mesh_axis_size(m, t->dims[i][k]) > 1;
    return used == need && !t->partial;
}

#define MAXX 4 /* exchange steps per array, here */

/* The modelled time of round r of `set` from the model: the arrays' plan
 * times, each combined exchange (the j-th exchange step of each array)
 * replaced by the most any device spends with one alpha per peer, when
 * that is less than its parts' times added up. */
/* A step a set program runs as an exchange (of two or more arrays: its
 * data-moving collectives are lowered to one, doc/arrays.md). */
static int moves(int op)
{
    return op == REDIST_OP_EXCHANGE || op == REDIST_OP_ALL_GATHER ||
           op == REDIST_OP_ALL_TO_ALL || op == REDIST_OP_PERMUTE;
}

static double model_round(const redist_plan_set_t *set, int r, int c)
{
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    double al = cm.alpha[REDIST_LINK_NODE], be = cm.beta[REDIST_LINK_NODE];
    int n = redist_plan_set_num_arrays(set);
    double total = 0;
    for (int j = 0; j < MAXX; j++) {
        int parts = 0;
        double sum = 0, most = 0;
        int64_t N = redist_spec_num_devices(
            redist_plan_spec(redist_plan_set_plan(set, 0)));
        for (int64_t d = 0; d < N; d++) {
            int from[64] = {0}, to[64] = {0}, nf = 0, nt = 0;
            uint64_t rb = 0, sb = 0;
            for (int i = 0; i < n; i++) {
                const redist_plan_t *p = redist_plan_set_plan(set, i);
                const redist_spec_t *s = redist_plan_spec(p);
                const redist_mesh_t *m = redist_spec_mesh(s);
                redist_step_view_t v;
                redist_type_t before = *redist_spec_from(s);
                int x = 0;
                if (redist_plan_set_round_of(set, i) != r)
                    continue;
                for (int k = 0; k < redist_plan_num_steps(p); k++) {
                    redist_plan_step(p, k, &v);
                    if (moves(v.op) && x++ == j) {
                        CHECK(fully_sharded(m, &before) &&
                                  fully_sharded(m, &v.after),
                              "case %d: array %d step %d: the test's types "
                              "are fully sharded", c, i, k);
                        if (d == 0) {
                            parts++;
                            sum += v.time_s;
                        }
                        for (int64_t q = 0; q < N; q++) {
                            uint64_t in = q == d ? 0 : overlap(s, &before, q, &v.after, d);
                            uint64_t out = q == d ? 0 : overlap(s, &before, d, &v.after, q);
                            nf += in && !from[q]++;
                            nt += out && !to[q]++;
                            rb += in;
                            sb += out;
                        }
                    }
                    before = v.after;
                }
            }
            double t = (nf > nt ? nf : nt) * al +
                       (double)(rb > sb ? rb : sb) * be;
            if (t > most)
                most = t;
        }
        if (parts > 1 && most < sum)
            total -= sum - most;
    }
    for (int i = 0; i < n; i++)
        if (redist_plan_set_round_of(set, i) == r) {
            redist_plan_stats_t ps;
            redist_plan_stats(redist_plan_set_plan(set, i), &ps);
            total += ps.time_s;
        }
    return total;
}

/* A set from JSON text, planned (time objective, built-in model) for
 * runs with execution flags `flags`; with `tight`, under the smallest
 * budget that works. */
static redist_plan_set_t *set_of(const char *json, unsigned flags,
                                 int tight, redist_arrays_t **a)
{
    redist_error_t e = REDIST_ERROR_INIT;
    redist_plan_set_t *set = NULL;
    redist_exec_options_t xo = {0};
    xo.flags = flags;
    *a = NULL;
    if (redist_arrays_load_buffer(json, strlen(json), "t.json", 0, a, &e) ||
        redist_plan_set_create(*a, NULL, NULL, &xo, &set, &e))
        CHECK(0, "round time: %s", e.text);
    if (set && tight) {
        uint64_t most = 0;
        const redist_spec_t *sp[MAXA];
        int n = redist_plan_set_num_arrays(set);
        for (int i = 0; i < n && i < MAXA; i++) {
            uint64_t b = redist_plan_set_array_scratch(set, i);
            most = b > most ? b : most;
            sp[i] = redist_arrays_get(*a, i);
        }
        redist_plan_set_free(set);
        set = NULL;
        redist_arrays_t *t = NULL;
        if (n > MAXA ||
            redist_arrays_create("t", n, sp, most, &t, &e) ||
            redist_plan_set_create(t, NULL, NULL, &xo, &set, &e))
            CHECK(0, "round time: budget %llu: %s", (unsigned long long)most,
                  e.text);
        redist_arrays_free(*a);
        *a = t;
    }
    return set;
}

#define ARR(name, shape, f0, f1, t0, t1)                                      \
    "{\"name\": \"" name "\", \"shape\": " shape ", \"dtype\": \"f32\", "     \
    "\"from\": {\"dims\": [" f0 ", " f1 "]}, \"to\": {\"dims\": [" t0 ", " t1 \
    "]}}"
#define A_XY ARR("a%d", "[64, 256]", "[\"x\", \"y\"]", "[]", "[]", "[\"x\", \"y\"]")

static void round_times(void)
{
    const char *head = "{\"mesh\": [[\"x\", 2], [\"y\", 4]], \"arrays\": [";
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    double alpha = cm.alpha[REDIST_LINK_NODE];
    double t1 = 0;
    /* k copies of one exchange to every other device (7 peers): a round
     * of k costs k plans less (k - 1) alphas per peer */
    for (int k = 1; k <= 4; k++) {
        char json[2048];
        size_t pos = (size_t)snprintf(json, sizeof json, "%s", head);
        for (int i = 0; i < k; i++)
            pos += (size_t)snprintf(json + pos, sizeof json - pos,
                                    "%s" A_XY, i ? ", " : "", i);
        snprintf(json + pos, sizeof json - pos, "]}");
        redist_arrays_t *a;
        redist_plan_set_t *set = set_of(json, 0, 0, &a);
        redist_round_stats_t rs;
        redist_plan_set_stats_t t;
        redist_plan_stats_t ps;
        if (!set || redist_plan_set_round(set, 0, &rs)) {
            CHECK(0, "round time: %d copies", k);
            redist_arrays_free(a);
            continue;
        }
        redist_plan_stats(redist_plan_set_plan(set, 0), &ps);
        redist_plan_set_stats(set, &t);
        if (k == 1)
            t1 = ps.time_s;
        CHECK(t1 > 0 && close_to(rs.time_s, k * t1 - (k - 1) * 7 * alpha) &&
                  close_to(rs.arrays_time_s, k * t1) &&
                  close_to(t.time_s, rs.time_s) &&
                  close_to(t.arrays_time_s, rs.arrays_time_s) &&
                  close_to(rs.time_s, model_round(set, 0, -k)),
              "round time: %d copies: %.6g us (model %.6g), the arrays' "
              "%.6g us, want %.6g",
              k, rs.time_s * 1e6, model_round(set, 0, -k) * 1e6,
              rs.arrays_time_s * 1e6, (k * t1 - (k - 1) * 7 * alpha) * 1e6);
        redist_plan_set_free(set);
        redist_arrays_free(a);
    }
    /* different exchanges (other peers, other bytes; one after an
     * all_to_all), and a budget that puts them in two rounds */
    const char *mixed =
        "{\"mesh\": [[\"x\", 2], [\"y\", 4]], \"arrays\": ["
        ARR("a", "[64, 256]", "[\"x\", \"y\"]", "[]", "[]", "[\"x\", \"y\"]") ", "
        ARR("b", "[64, 256]", "[\"x\"]", "[\"y\"]", "[\"y\"]", "[\"x\"]") ", "
        ARR("c", "[32, 64]", "[\"x\", \"y\"]", "[]", "[]", "[\"x\", \"y\"]") ", "
        ARR("d", "[64, 256]", "[\"x\"]", "[\"y\"]", "[]", "[\"x\", \"y\"]") ", "
        ARR("e", "[16, 16]", "[\"y\"]", "[\"x\"]", "[\"x\"]", "[\"y\"]") "]}";
    for (int b = 0; b < 2; b++) {
        redist_arrays_t *a;
        redist_plan_set_t *set =
            set_of(mixed, b ? REDIST_EXEC_PRESERVE_SRC : 0, b, &a);
        double sum = 0, plans = 0;
        int nr = redist_plan_set_num_rounds(set), credited = 0;
        CHECK(set && (b ? nr > 1 : nr == 1), "round time: mixed: %d rounds",
              nr);
        for (int r = 0; set && r < nr; r++) {
            redist_round_stats_t rs;
            redist_plan_set_round(set, r, &rs);
            double want = model_round(set, r, -10 - b);
            CHECK(close_to(rs.time_s, want),
                  "round time: mixed, budget %d, round %d: %.6g us, the "
                  "model %.6g us", b, r, rs.time_s * 1e6, want * 1e6);
            credited += rs.time_s < rs.arrays_time_s;
            sum += rs.time_s;
        }
        for (int i = 0; set && i < redist_plan_set_num_arrays(set); i++) {
            redist_plan_stats_t ps;
            redist_plan_stats(redist_plan_set_plan(set, i), &ps);
            plans += ps.time_s;
        }
        redist_plan_set_stats_t t;
        redist_plan_set_stats(set, &t);
        CHECK(close_to(t.time_s, sum) && close_to(t.arrays_time_s, plans) &&
                  (b || credited == 1),
              "round time: mixed, budget %d: set %.6g us, rounds %.6g, "
              "arrays %.6g / %.6g, %d rounds credited", b, t.time_s * 1e6,
              sum * 1e6, t.arrays_time_s * 1e6, plans * 1e6, credited);
        redist_plan_set_free(set);
        redist_arrays_free(a);
    }
    /* two-mesh arrays: k copies of a transfer where each receiver has
     * one sender (devices 0, 1 to 2, 3) */
    const char *two = "{\"meshes\": {\"a\": {\"axes\": [[\"x\", 2]], \"devices\": [0, 1]},"
                      " \"b\": {\"axes\": [[\"y\", 2]], \"devices\": [2, 3]}}, \"arrays\": ["
                      "{\"name\": \"w\", \"shape\": [64], \"from\": {\"mesh\": \"a\", \"dims\": [[\"x\"]]},"
                      " \"to\": {\"mesh\": \"b\", \"dims\": [[\"y\"]]}}, "
                      "{\"name\": \"v\", \"shape\": [64], \"from\": {\"mesh\": \"a\", \"dims\": [[\"x\"]]},"
                      " \"to\": {\"mesh\": \"b\", \"dims\": [[\"y\"]]}}]}";
    redist_arrays_t *a;
    redist_plan_set_t *set = set_of(two, 0, 0, &a);
    redist_round_stats_t rs;
    redist_plan_stats_t ps;
    if (set && !redist_plan_set_round(set, 0, &rs)) {
        redist_plan_stats(redist_plan_set_plan(set, 0), &ps);
        CHECK(ps.time_s > 0 && close_to(rs.time_s, 2 * ps.time_s - alpha),
              "round time: two transfers: %.6g us, want 2 x %.6g - %.6g",
              rs.time_s * 1e6, ps.time_s * 1e6, alpha * 1e6);
    }
    redist_plan_set_free(set);
    redist_arrays_free(a);
}

/* k arrays, each one all_gather of dim 1 over x (4 devices), in one
 * round or, under a budget of the three largest arrays' scratch (the
 * gathered blocks are unpacked from scratch), in several: one combined
 * exchange per round however many arrays (a set of two or more lowers
 * its data-moving collectives to exchanges), its modelled time credited,
 * every element exact, the scratch within the budget; with and without
 * REDIST_EXEC_PRESERVE_SRC. */
/* A set's JSON: head (its mesh or meshes), then k arrays, array i
 * written by `item` (a format taking the separator, i and a width) with
 * width w[i % nw]. */
static void set_json(char *json, size_t size, const char *head,
                     const char *item, int k, const int *w, int nw)
{
    size_t pos = (size_t)snprintf(json, size, "%s\"arrays\": [", head);
    for (int i = 0; i < k && pos < size; i++)
        pos += (size_t)snprintf(json + pos, size - pos, item, i ? ", " : "",
                                i, w[i % nw]);
    if (pos < size)
        snprintf(json + pos, size - pos, "]}");
}

/* The k arrays of `a` planned again under `budget` (execution flags
 * fl): the set within it, at least `least` rounds, each within it and
 * making `per` combined exchanges; then run exact on sim (every
 * device's runner making the figure).  what: the test's name; c: the
 * run's case number. */
static void under_budget(const char *what, redist_arrays_t *a, int k,
                         uint64_t budget, unsigned fl, int per, int least,
                         int c)
{
    const redist_spec_t *sp[32];
    redist_arrays_t *tb = NULL;
    redist_plan_set_t *set = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    redist_exec_options_t xo = {fl};
    for (int i = 0; i < k && i < 32; i++)
        sp[i] = redist_arrays_get(a, i);
    if (k > 32 || redist_arrays_create("t", k, sp, budget, &tb, &e) ||
        redist_plan_set_create(tb, NULL, NULL, &xo, &set, &e))
        CHECK(0, "%s: budget %llu: %s", what, (unsigned long long)budget,
              e.text);
    if (set) {
        redist_plan_set_stats_t t;
        redist_plan_set_stats(set, &t);
        int ok = t.scratch_bytes <= budget && t.nrounds >= least &&
                 t.exchanges == per * t.nrounds;
        for (int r = 0; r < t.nrounds; r++) {
            redist_round_stats_t rs;
            redist_plan_set_round(set, r, &rs);
            ok = ok && rs.exchanges == per && rs.scratch_bytes <= budget;
        }
        CHECK(ok, "%s: %d arrays, budget %llu: %d rounds, scratch %llu, %d "
                  "exchanges",
              what, k, (unsigned long long)budget, t.nrounds,
              (unsigned long long)t.scratch_bytes, t.exchanges);
        run_exact(set, budget, fl != 0, c);
    }
    redist_plan_set_free(set);
    redist_arrays_free(tb);
}

static void gathers(void)
{
    const int ks[] = {1, 2, 24};
    for (int q = 0; q < 3; q++)
        for (int b = 0; b < 2; b++) {
            int k = ks[q];
            char json[8192];
            static const int w[3] = {16, 20, 24};
            set_json(json, sizeof json, "{\"mesh\": [[\"x\", 4]], ",
                     "%s{\"name\": \"g%d\", \"shape\": [8, %d], "
                     "\"dtype\": \"f32\", \"from\": {\"dims\": "
                     "[[], [\"x\"]]}, \"to\": {\"dims\": [[], []]}}",
                     k, w, 3);
            redist_arrays_t *a;
            redist_plan_set_t *set =
                set_of(json, b ? REDIST_EXEC_PRESERVE_SRC : 0, 0, &a);
            redist_plan_set_stats_t t;
            redist_plan_set_stats(set, &t);
            CHECK(set && t.nrounds == 1 && t.collectives == k &&
                      t.exchanges == (k > 1) &&
                      (k > 1 ? t.time_s < t.arrays_time_s
                             : close_to(t.time_s, t.arrays_time_s)),
                  "gathers: %d arrays: %d rounds, %d collectives, %d "
                  "exchanges, %.6g us (the arrays' %.6g us)",
                  k, t.nrounds, t.collectives, t.exchanges, t.time_s * 1e6,
                  t.arrays_time_s * 1e6);
            if (set)
                run_exact(set, REDIST_NO_BUDGET, b, 1000 + k);
            /* a budget of the three largest arrays' scratch */
            uint64_t budget = set ? rp_set_largest(set, 3) : 0;
            redist_plan_set_free(set);
            CHECK(k == 1 || budget > 0, "gathers: %d arrays need no scratch",
                  k);
            if (k > 1 && budget)
                under_budget("gathers", a, k, budget,
                             b ? REDIST_EXEC_PRESERVE_SRC : 0, 1,
                             k < 24 ? 1 : 2, 2000 + k);
            redist_arrays_free(a);
        }
}

/* Two-mesh arrays with phases: k arrays from a 2-device mesh to a
 * 4-device one, each a transfer then an all_gather on the target mesh
 * (op 0: the source replicated, the target replicated) or a
 * reduce_scatter on the source mesh then a transfer (op 1: sums pending
 * over the source mesh, the target sharded).  A set of two or more
 * arrays lowers the phases' steps to exchanges that join the round's
 * combined exchanges: one for the transfers and one for the k phase
 * steps (not k collectives), each device's runner making exactly the
 * set's figure; the steps marked combined, the round's time credited,
 * every element exact on sim, the scratch within the set's figure; under
 * a budget of three arrays' scratch, every round the same two exchanges
 * within the budget.  One array keeps its phase's collective. */
static void phases(void)
{
    const int ks[] = {1, 2, 8};
    static const char *const from[2] = {"\"dims\": [[], []]",
                                        "\"dims\": [[], []], \"partial\": [\"x\"]"},
                             *const to[2] = {"[[], []]", "[[\"y\"], []]"};
    static const int phase_step[2] = {1, 0}; /* the lowered step's index */
    for (int op = 0; op < 2; op++)
        for (int q = 0; q < 3; q++)
            for (int b = 0; b < 2; b++) {
                int k = ks[q];
                char json[8192], item[512];
                static const int w[2][2] = {{48, 64}, {32, 32}};
                snprintf(item, sizeof item,
                         "%%s{\"name\": \"p%%d\", \"shape\": [64, %%d], "
                         "\"dtype\": \"f32\", \"from\": {\"mesh\": \"a\", %s}, "
                         "\"to\": {\"mesh\": \"b\", \"dims\": %s}}",
                         from[op], to[op]);
                set_json(json, sizeof json,
                         "{\"meshes\": {\"a\": {\"axes\": [[\"x\", 2]], "
                         "\"devices\": [0, 1]}, \"b\": {\"axes\": "
                         "[[\"y\", 4]], \"devices\": [2, 3, 4, 5]}}, ",
                         item, k, w[op], 2);
                redist_arrays_t *a;
                unsigned fl = b ? REDIST_EXEC_PRESERVE_SRC : 0;
                redist_plan_set_t *set = set_of(json, fl, 0, &a);
                if (!set) {
                    redist_arrays_free(a);
                    continue;
                }
                redist_plan_set_stats_t t;
                redist_plan_set_stats(set, &t);
                int shaped = 1, marked = 1;
                for (int i = 0; i < k; i++) {
                    const redist_plan_t *pl = redist_plan_set_plan(set, i);
                    redist_step_view_t v[2];
                    shaped = shaped && redist_plan_num_steps(pl) == 2 &&
                             !redist_plan_step(pl, 0, &v[0]) &&
                             !redist_plan_step(pl, 1, &v[1]) &&
                             v[phase_step[op]].op ==
                                 (op ? REDIST_OP_REDUCE_SCATTER
                                     : REDIST_OP_ALL_GATHER);
                    marked = marked && redist_plan_set_step_combined(
                                           set, i, phase_step[op]) == (k > 1);
                }
                CHECK(shaped && marked && t.nrounds == 1 &&
                          t.collectives == 2 * k &&
                          t.exchanges == (k > 1 ? 2 : 1) &&
                          (k > 1 ? t.time_s < t.arrays_time_s
                                 : close_to(t.time_s, t.arrays_time_s)),
                      "phases: op %d, %d arrays: plans %s, steps %s "
                      "combined, %d rounds, %d collectives, %d exchanges, "
                      "%.6g us (the arrays' %.6g us)",
                      op, k, shaped ? "as meant" : "other",
                      marked ? "rightly" : "wrongly", t.nrounds,
                      t.collectives, t.exchanges, t.time_s * 1e6,
                      t.arrays_time_s * 1e6);
                uint64_t xs = 0, msgs = 0;
                CHECK(!run_exact_x(set, REDIST_NO_BUDGET, b, 4000 + k, &xs,
                                   &msgs) &&
                          xs == (uint64_t)t.exchanges &&
                          (k == 1 || (xs < 1 + (uint64_t)k && msgs == 3)),
                      "phases: op %d, %d arrays: %llu combined exchanges "
                      "(%llu messages from a device), the figure %d",
                      op, k, (unsigned long long)xs,
                      (unsigned long long)msgs, t.exchanges);
                /* a budget of the three largest arrays' scratch */
                uint64_t budget = rp_set_largest(set, 3);
                redist_plan_set_free(set);
                if (k == 8)
                    under_budget("phases", a, k, budget, fl, 2, 2,
                                 5000 + op);
                redist_arrays_free(a);
            }
}

/* Device d's block of array i (db bytes) equals the one-array run's (when
 * both ran: ok); the three blocks freed. */
static void same_and_free(const char *what, int ok, int i, int64_t d,
                          uint64_t db, void *src, void *dst, void *ref)
{
    CHECK(!ok || !db || !memcmp(dst, ref, db),
          "%s: array %d device %lld differs from the one-array sim run",
          what, i, (long long)d);
    free(src);
    free(dst);
    free(ref);
}

/* The set's arrays (at most 8, on at most 8 devices) run on sim with
 * floats whose sum depends on the order, member m = d % members of
 * device d holding +big, small, -big, small (m = 0, odd, 2): the smalls
 * survive only in member order (big + small rounds to big); the set's
 * run must equal each array's own sim run to the bit (f32 or bf16: the
 * float's upper half).  what: the test's name. */
static void floats_same(const char *what, const redist_plan_set_t *set,
                        int members)
{
    enum { K = 8, N = 8 };
    int n = redist_plan_set_num_arrays(set);
    int64_t nd = redist_spec_num_devices(
        redist_plan_spec(redist_plan_set_plan(set, 0)));
    void *src[K][N] = {{0}}, *dst[K][N] = {{0}}, *ref[K][N] = {{0}};
    redist_error_t e = REDIST_ERROR_INIT;
    int ok = n <= K && nd <= N;
    for (int i = 0; ok && i < n; i++) {
        const redist_plan_t *p = redist_plan_set_plan(set, i);
        const redist_spec_t *sp = redist_plan_spec(p);
        size_t el = redist_dtype_size(redist_spec_dtype(sp));
        for (int64_t d = 0; d < nd; d++) {
            uint64_t sb = redist_spec_device_bytes(sp, 0, d),
                     db = redist_spec_device_bytes(sp, 1, d);
            int64_t m = d % members;
            src[i][d] = malloc(sb ? sb : 1);
            dst[i][d] = calloc(1, db ? db : 1);
            ref[i][d] = calloc(1, db ? db : 1);
            for (uint64_t q = 0; src[i][d] && q < sb / el; q++) {
                float big = (float)(q * 2654435761u % 10007 + 1) * 1e6f;
                float v = m % 2 ? (float)((q * 40503u + (uint64_t)d * 7919u) %
                                          101 + 1) * 0.37f
                                : m ? -big : big;
                if (el == 4)
                    ((float *)src[i][d])[q] = v;
                else /* bf16: the float's upper half */
                    memcpy((char *)src[i][d] + 2 * q,
                           (const char *)&v + 2, 2);
            }
        }
        /* the sources kept for the set's run */
        redist_exec_options_t keep = {REDIST_EXEC_PRESERVE_SRC};
        ok = ok && !redist_exec_sim_run(p, src[i], ref[i], 0, &keep, NULL,
                                        NULL, &e);
    }
    void *const *s2[K], *const *d2[K];
    for (int i = 0; i < n && i < K; i++) {
        s2[i] = src[i];
        d2[i] = dst[i];
    }
    redist_exec_report_t rep;
    ok = ok && !redist_exec_sim_run_set(set, s2, d2, 0, &rep, NULL, &e);
    CHECK(ok, "%s: %s", what, e.text);
    for (int i = 0; i < n && i < K; i++)
        for (int64_t d = 0; d < nd && d < N; d++)
            same_and_free(what, ok, i, d,
                          redist_spec_device_bytes(
                              redist_plan_spec(redist_plan_set_plan(set, i)),
                              1, d),
                          src[i][d], dst[i][d], ref[i][d]);
}

/* A float sum that crosses between meshes, in a set of two arrays (one
 * on meshes that overlap): the set runner's result equals the one-array
 * sim run's to the bit (the same reduction order), for values whose sum
 * depends on that order, and the scratch stays within the set's figure. */
static void crossing_floats(void)
{
    static const char *const arr[2] = {
        "{\"name\": \"g\", \"meshes\": {"
        "\"a\": {\"axes\": [[\"dp\", 4]], \"devices\": [0, 1, 2, 3]},"
        "\"b\": {\"axes\": [[\"tp\", 8]], \"devices\": [4, 5, 6, 7, 8, 9, "
        "10, 11]}}, \"shape\": [64, 8], \"dtype\": \"f32\","
        "\"from\": {\"mesh\": \"a\", \"dims\": [[], []], \"partial\": "
        "[\"dp\"]}, \"to\": {\"mesh\": \"b\", \"dims\": [[\"tp\"], []]}}",
        "{\"name\": \"h\", \"meshes\": {"
        "\"a\": {\"axes\": [[\"dp\", 4]], \"devices\": [11, 2, 7, 0]},"
        "\"b\": {\"axes\": [[\"tp\", 12]], \"devices\": [0, 1, 2, 3, 4, 5, "
        "6, 7, 8, 9, 10, 11]}}, \"shape\": [48, 3], \"dtype\": \"f32\","
        "\"from\": {\"mesh\": \"a\", \"dims\": [[], []], \"partial\": "
        "[\"dp\"]}, \"to\": {\"mesh\": \"b\", \"dims\": [[\"tp\"], []]}}"};
    enum { N = 12 };
    redist_spec_t *sp[2] = {0};
    redist_plan_t *one[2] = {0};
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    redist_plan_options_t po = {0};
    po.objective = REDIST_OBJECTIVE_BYTES; /* sums may cross: the default */
    void *src[2][N] = {{0}}, *dst[2][N] = {{0}}, *ref[2][N] = {{0}};
    int ok = 1;
    for (int i = 0; i < 2 && ok; i++) {
        ok = !redist_spec_load_buffer(arr[i], strlen(arr[i]), "x.json", 0,
                                      &sp[i], &e) &&
             !redist_plan_create(sp[i], &po, &one[i], &e);
        /* crossing: the transfer alone, no reduce-scatter first */
        CHECK(ok && redist_plan_num_steps(one[i]) == 1,
              "crossing floats %d: %s", i, ok ? "the sum does not cross"
                                              : e.text);
        for (int64_t d = 0; ok && d < N; d++) {
            uint64_t sb = redist_spec_device_bytes(sp[i], 0, d),
                     db = redist_spec_device_bytes(sp[i], 1, d);
            src[i][d] = sb ? malloc(sb) : NULL;
            dst[i][d] = db ? calloc(1, db) : NULL;
            ref[i][d] = db ? calloc(1, db) : NULL;
            for (uint64_t k = 0; src[i][d] && k < sb / 4; k++) /* order matters */
                ((float *)src[i][d])[k] =
                    (float)((k * 2654435761u + (uint64_t)d * 40503u) % 10007) *
                    (d % 2 ? 1e-3f : 1e5f);
        }
    }
    redist_exec_report_t rep;
    ok = ok && !redist_arrays_create("x", 2, (const redist_spec_t *const *)sp,
                                     REDIST_NO_BUDGET, &a, &e) &&
         !redist_plan_set_create(a, &po, NULL, NULL, &set, &e) &&
         !redist_exec_sim_run(one[0], src[0], ref[0], 0, NULL, NULL, NULL, &e) &&
         !redist_exec_sim_run(one[1], src[1], ref[1], 0, NULL, NULL, NULL, &e);
    void *const *s2[2] = {src[0], src[1]}, *const *d2[2] = {dst[0], dst[1]};
    ok = ok && !redist_exec_sim_run_set(set, s2, d2, 0, &rep, NULL, &e);
    CHECK(ok, "crossing floats: %s", e.text);
    redist_plan_set_stats_t t;
    if (ok) {
        redist_plan_set_stats(set, &t);
        CHECK(rep.scratch_high_water <= t.scratch_bytes,
              "crossing floats: scratch %llu > the set's %llu",
              (unsigned long long)rep.scratch_high_water,
              (unsigned long long)t.scratch_bytes);
    }
    for (int i = 0; i < 2; i++)
        for (int64_t d = 0; d < N; d++)
            same_and_free("crossing floats", ok, i, d,
                          sp[i] ? redist_spec_device_bytes(sp[i], 1, d) : 0,
                          src[i][d], dst[i][d], ref[i][d]);
    redist_plan_set_free(set);
    redist_arrays_free(a);
    for (int i = 0; i < 2; i++) {
        redist_plan_free(one[i]);
        redist_spec_free(sp[i]);
    }
}

/* Gradients: k arrays with sums pending over x=4, each reduce-scattered
 * (one all-reduced in three, one in bf16, one of 10 rows: uneven), in
 * one set.  The set lowers
 * the reductions to exchanges of the contributions and an ordered sum
 * (program.c), so a round makes one combined exchange for all the
 * reduce_scatters (two with an all_reduce: the contributions, then the
 * gather), not k collectives; exact, and, for values whose sum depends on
 * the order, equal to the bit to each array's own sim run.  Under the
 * smallest budget that works (named by budget 0), the arrays that do not
 * fit lowered keep their collectives (less scratch), within it. */
static void reductions(void)
{
    enum { K = 7, N = 4 };
    char json[8192];
    size_t pos = (size_t)snprintf(json, sizeof json,
                                  "{\"mesh\": [[\"x\", %d]], \"arrays\": [",
                                  N);
    for (int i = 0; i < K; i++)
        pos += (size_t)snprintf(
            json + pos, sizeof json - pos,
            "%s{\"name\": \"g%d\", \"shape\": [%d, %d], \"dtype\": "
            "\"%s\", \"from\": {\"dims\": [[], []], \"partial\": [\"x\"]}, "
            "\"to\": {\"dims\": [%s, []]}}",
            i ? ", " : "", i, i == 6 ? 10 : 8 * (i + 1), 12 + 4 * (i % 3),
            i == 5 ? "bf16" : "f32", i % 3 == 2 ? "[]" : "[\"x\"]");
    snprintf(json + pos, sizeof json - pos, "]}");
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = set_of(json, 0, 0, &a);
    if (!set)
        return;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    uint64_t lowered = 0;
    for (int i = 0; i < K; i++) {
        uint64_t b = redist_plan_set_array_scratch(set, i);
        lowered = b > lowered ? b : lowered;
    }
    CHECK(t.nrounds == 1 && t.collectives == K && t.exchanges == 2 &&
              t.time_s < t.arrays_time_s,
          "reductions: %d rounds, %d collectives, %d exchanges, %.6g us "
          "(the arrays' %.6g us)",
          t.nrounds, t.collectives, t.exchanges, t.time_s * 1e6,
          t.arrays_time_s * 1e6);
    run_exact(set, REDIST_NO_BUDGET, 0, 3000);
    int combined = 0;
    for (int i = 0; i < K; i++) {
        const redist_plan_t *p = redist_plan_set_plan(set, i);
        for (int k = 0; k < redist_plan_num_steps(p); k++) {
            redist_step_view_t v;
            redist_plan_step(p, k, &v);
            combined += (v.op == REDIST_OP_REDUCE_SCATTER ||
                         v.op == REDIST_OP_ALL_REDUCE) &&
                        redist_plan_set_step_combined(set, i, k) == 1;
        }
    }
    CHECK(combined == K && redist_plan_set_step_combined(NULL, 0, 0) == -1 &&
              redist_plan_set_step_combined(set, K, 0) == -1 &&
              redist_plan_set_step_combined(set, 0, 99) == -1,
          "reductions: %d of %d combined", combined, K);

    /* floats whose sum depends on the order: the set's run is the
     * one-array runs' to the bit */
    floats_same("reductions, floats", set, N);
    redist_plan_set_free(set);
    set = NULL;

    /* the smallest budget, named by budget 0, is below the lowered
     * programs' largest scratch: some arrays keep their collectives */
    const redist_spec_t *sp[K];
    for (int i = 0; i < K; i++)
        sp[i] = redist_arrays_get(a, i);
    redist_arrays_t *z = NULL;
    redist_error_t ez = REDIST_ERROR_INIT;
    const char *key = "smallest budget that works is ", *at = NULL;
    redist_status_t st = redist_arrays_create("z", K, sp, 0, &z, &ez);
    if (!st)
        st = redist_plan_set_create(z, NULL, NULL, NULL, &set, &ez);
    uint64_t least = st == REDIST_ERR_INFEASIBLE && (at = strstr(ez.text, key))
                         ? strtoull(at + strlen(key), NULL, 10)
                         : UINT64_MAX;
    CHECK(least < lowered, "reductions: budget 0: status %d, \"%s\" (the "
                           "lowered programs need %llu)",
          (int)st, ez.text, (unsigned long long)lowered);
    redist_plan_set_free(set);
    set = NULL;
    redist_arrays_free(z);
    z = NULL;
    if (least < lowered &&
        (redist_arrays_create("z", K, sp, least, &z, &ez) ||
         redist_plan_set_create(z, NULL, NULL, NULL, &set, &ez)))
        CHECK(0, "reductions: budget %llu: %s", (unsigned long long)least,
              ez.text);
    if (set) {
        redist_plan_set_stats(set, &t);
        int kept = 0;
        for (int i = 0; i < K; i++)
            for (int k = 0; k < redist_plan_num_steps(
                                    redist_plan_set_plan(set, i));
                 k++)
                kept += redist_plan_set_step_combined(set, i, k) == 0;
        CHECK(t.scratch_bytes <= least && kept > 0,
              "reductions: budget %llu: scratch %llu, %d rounds, %d "
              "reductions kept as collectives",
              (unsigned long long)least, (unsigned long long)t.scratch_bytes,
              t.nrounds, kept);
        run_exact(set, least, 0, 3001);
    }
    redist_plan_set_free(set);
    redist_arrays_free(z);
    redist_arrays_free(a);
}

/* A set whose two-mesh arrays use 12 distinct meshes (a=2,b=2 over 12
 * orders of 4 devices): array i moves from mesh i to mesh i + 1, sums
 * pending over a on every other one, some sharded, some replicated at
 * the target.  The runner makes one endpoint per distinct mesh (it
 * refused more than 8 once); every element exact, the scratch within
 * the set's figure. */
static void many_meshes(void)
{
    static const int order[12][4] = {{0, 1, 2, 3},
                                    {0, 2, 1, 3},
                                    {0, 3, 1, 2},
                                    {1, 0, 2, 3},
                                    {1, 2, 0, 3},
                                    {1, 3, 0, 2},
                                    {2, 0, 1, 3},
                                    {2, 1, 0, 3},
                                    {2, 3, 0, 1},
                                    {3, 0, 1, 2},
                                    {3, 1, 0, 2},
                                    {3, 2, 0, 1}};
    redist_spec_t *sp[12] = {NULL};
    redist_error_t e = REDIST_ERROR_INIT;
    int ok = 1;
    for (int i = 0; i < 12 && ok; i++) {
        const int *f = order[i], *t = order[(i + 1) % 12];
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"name\": \"w%d\", \"meshes\": {"
                 "\"s\": {\"axes\": [[\"a\", 2], [\"b\", 2]], "
                 "\"devices\": [%d, %d, %d, %d]}, "
                 "\"t\": {\"axes\": [[\"a\", 2], [\"b\", 2]], "
                 "\"devices\": [%d, %d, %d, %d]}}, "
                 "\"shape\": [%d, 4], \"dtype\": \"f32\", \"reduce\": \"sum\", "
                 "\"from\": {\"mesh\": \"s\", \"dims\": [%s, []]%s}, "
                 "\"to\": {\"mesh\": \"t\", \"dims\": [%s, []]}}",
                 i, f[0], f[1], f[2], f[3], t[0], t[1], t[2], t[3], 5 + i,
                 i % 2 ? "[\"b\"]" : "[\"a\"]",
                 i % 2 ? ", \"partial\": [\"a\"]" : "",
                 i % 3 ? "[\"a\"]" : "[]");
        ok = !redist_spec_load_buffer(json, strlen(json), "w.json", 0, &sp[i],
                                      &e);
    }
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = NULL;
    if (ok && !redist_arrays_create("stages", 12,
                                    (const redist_spec_t *const *)sp,
                                    REDIST_NO_BUDGET, &a, &e))
        redist_plan_set_create(a, NULL, NULL, NULL, &set, &e);
    CHECK(set != NULL, "many meshes: %s", e.text);
    if (set)
        CHECK(!run_exact(set, REDIST_NO_BUDGET, 0, -12),
              "many meshes: 12 distinct meshes did not run exactly");
    redist_plan_set_free(set);
    redist_arrays_free(a);
    for (int i = 0; i < 12; i++)
        redist_spec_free(sp[i]);
}

/* Uneven all_reduces (a dim split unevenly over y, sums pending over x):
 * in a set of three, each lowered (a middle layout splits another dim's
 * blocks over x: its contributions exchanged, summed in member order,
 * the sums gathered), 2 combined exchanges, the time credited, every
 * device's runner making the figure, exact on sim, and with floats
 * whose sum depends on the order equal to the bit to each array's own
 * sim run; a set of one keeps the collective. */
static void uneven_all_reduces(void)
{
    enum { K = 3, S = 4 };
    char json[8192];
    static const int w[K] = {8, 12, 16};
    set_json(json, sizeof json, "{\"mesh\": [[\"y\", 2], [\"x\", 4]], ",
             "%s{\"name\": \"u%d\", \"shape\": [5, %d], \"dtype\": "
             "\"f32\", \"from\": {\"dims\": [[\"y\"], []], \"partial\": "
             "[\"x\"]}, \"to\": {\"dims\": [[\"y\"], []]}}",
             K, w, K);
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = set_of(json, 0, 0, &a);
    if (!set)
        return;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    int lowered = rp_set_uneven_all_reduces_combined(set, 1);
    CHECK(lowered == K && t.nrounds == 1 && t.exchanges == 2 &&
              t.time_s < t.arrays_time_s,
          "uneven all_reduces: %d of %d lowered, %d rounds, %d exchanges, "
          "%.6g us (the arrays' %.6g us)",
          lowered, K, t.nrounds, t.exchanges, t.time_s * 1e6,
          t.arrays_time_s * 1e6);
    run_exact(set, REDIST_NO_BUDGET, 0, 6000);
    /* +big, small, -big, small over the members (x, the minor axis) */
    floats_same("uneven all_reduces, floats", set, S);
    redist_plan_set_free(set);
    /* one array: the plan's own collective */
    const redist_spec_t *one = redist_arrays_get(a, 0);
    redist_arrays_t *o = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    set = NULL;
    if (!redist_arrays_create("o", 1, &one, REDIST_NO_BUDGET, &o, &e))
        redist_plan_set_create(o, NULL, NULL, NULL, &set, &e);
    redist_plan_set_stats(set, &t);
    CHECK(set && t.exchanges == 0 &&
              redist_plan_set_step_combined(set, 0, 0) == 0,
          "uneven all_reduces: one array: %d exchanges", t.exchanges);
    redist_plan_set_free(set);
    redist_arrays_free(o);
    redist_arrays_free(a);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 200;
    static rp_rng rng = {0x9e3779b97f4a7c15ULL};
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, 0);
    int rounds[4] = {0};
    bad_sets();
    round_times();
    gathers();
    phases();
    reductions();
    uneven_all_reduces();
    crossing_floats();
    many_meshes();
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
