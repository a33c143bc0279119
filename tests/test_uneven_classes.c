/*
 * The uneven evaluation by classes of devices (src/plan/uneven.c) against
 * the evaluation device by device: on random uneven specs (random meshes,
 * shapes that the blocks do not divide, the three split rules, partial
 * sources), under both objectives,
 *  - every step the search weighs is evaluated both ways and the results
 *    compared (rd_uneven_eval_mode 2: locality, peak, within, bytes,
 *    modelled time);
 *  - the plan JSON of the default planner, and of the planner with the
 *    classes' limits cut so that they fall back often (mode 3), is byte
 *    for byte that of the planner that evaluates device by device only
 *    (mode 1).
 *
 *   test_uneven_classes [CASES [SEED]]
 *
 * Fails when a figure or a plan differs, or when too few steps were
 * evaluated by classes for the comparison to mean anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/steps.h"
#include "redist.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int rndi(int n) { return (int)(rnd() % (uint64_t)n); }

/* A random type as JSON: each axis not partial goes to a random dim or
 * stays replicated, in random order. */
static void type_json(char *out, size_t len, int naxes, int ndims,
                      uint32_t partial, const char *split)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    int order[6], dim[6];
    for (int a = 0; a < naxes; a++)
        order[a] = a;
    for (int a = naxes - 1; a > 0; a--) {
        int j = rndi(a + 1), t = order[a];
        order[a] = order[j];
        order[j] = t;
    }
    for (int a = 0; a < naxes; a++)
        dim[a] = partial >> a & 1u || rndi(4) == 0 ? -1 : rndi(ndims);
    size_t p = 0;
    p += (size_t)snprintf(out + p, len - p, "{\"dims\": [");
    for (int i = 0; i < ndims; i++) {
        p += (size_t)snprintf(out + p, len - p, "%s[", i ? ", " : "");
        int first = 1;
        for (int k = 0; k < naxes; k++)
            if (dim[order[k]] == i) {
                p += (size_t)snprintf(out + p, len - p, "%s\"%s\"",
                                      first ? "" : ", ", names[order[k]]);
                first = 0;
            }
        p += (size_t)snprintf(out + p, len - p, "]");
    }
    p += (size_t)snprintf(out + p, len - p, "], \"partial\": [");
    for (int a = 0, first = 1; a < naxes; a++)
        if (partial >> a & 1u) {
            p += (size_t)snprintf(out + p, len - p, "%s\"%s\"",
                                  first ? "" : ", ", names[a]);
            first = 0;
        }
    snprintf(out + p, len - p, "], \"split\": \"%s\"}", split);
}

/* A random uneven spec: a power-of-two mesh with power-of-two dims
 * smaller than the blocks (as bench_planner's tails) or any small sizes
 * and lengths. */
static redist_spec_t *random_spec(int *devices, char *text, size_t tlen)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    static const char *const splits[] = {"ceil", "balanced", "chunk"};
    char from[512], to[512];
    for (int tries = 0; tries < 1000; tries++) {
        int pow2 = rndi(2), naxes = 1 + rndi(pow2 ? 5 : 4);
        int ndims = 1 + rndi(4);
        int64_t size[6], n = 1;
        for (int a = 0; a < naxes; a++) {
            size[a] = pow2 ? (int64_t)1 << (1 + rndi(3)) : 2 + rndi(4);
            n *= size[a];
        }
        if (n > 512)
            continue;
        size_t p = 0;
        p += (size_t)snprintf(text + p, tlen - p, "{\"mesh\": [");
        for (int a = 0; a < naxes; a++)
            p += (size_t)snprintf(text + p, tlen - p, "%s[\"%s\", %lld]",
                                  a ? ", " : "", names[a],
                                  (long long)size[a]);
        p += (size_t)snprintf(text + p, tlen - p, "], \"shape\": [");
        for (int i = 0; i < ndims; i++)
            p += (size_t)snprintf(text + p, tlen - p, "%s%d",
                                  i ? ", " : "",
                                  pow2 ? 1 << rndi(7) : 1 + rndi(40));
        uint32_t partial = rndi(3) == 0 ? 1u << rndi(naxes) : 0;
        const char *split = splits[rndi(3)];
        type_json(from, sizeof from, naxes, ndims, partial, split);
        type_json(to, sizeof to, naxes, ndims, rndi(2) ? 0 : partial,
                  rndi(4) ? split : splits[rndi(3)]);
        snprintf(text + p, tlen - p,
                 "], \"dtype\": \"%s\", \"from\": %s, \"to\": %s}",
                 rndi(2) ? "bf16" : "f32", from, to);
        redist_spec_t *spec = NULL;
        if (redist_spec_load_buffer(text, strlen(text), "random", 0, &spec,
                                    NULL) == REDIST_OK) {
            if (redist_spec_is_uneven(spec)) {
                *devices = (int)n;
                return spec;
            }
            redist_spec_free(spec);
        }
    }
    return NULL;
}

/* The plan's JSON (or its status as text), malloc'ed. */
static char *plan_text(const redist_spec_t *spec, redist_objective_t obj,
                       int mode)
{
    redist_plan_options_t opts;
    redist_plan_t *plan = NULL;
    memset(&opts, 0, sizeof opts);
    opts.objective = obj;
    opts.max_states = 20000;
    rd_uneven_eval_mode = mode;
    redist_status_t st = redist_plan_create(spec, &opts, &plan, NULL);
    rd_uneven_eval_mode = 0;
    if (st != REDIST_OK) {
        char *s = malloc(32);
        if (s)
            snprintf(s, 32, "status %d", (int)st);
        return s;
    }
    char *s = redist_plan_to_json(plan);
    redist_plan_free(plan);
    return s;
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    if (argc > 2)
        rng = strtoull(argv[2], NULL, 0) | 1u;
    int failures = 0, planned = 0;
    for (int c = 0; c < cases && failures < 5; c++) {
        int devices = 0;
        char text[2048];
        redist_spec_t *spec = random_spec(&devices, text, sizeof text);
        if (!spec) {
            fprintf(stderr, "case %d: no uneven spec drawn\n", c);
            return 1;
        }
        for (int o = 0; o < 2; o++) {
            redist_objective_t obj =
                o ? REDIST_OBJECTIVE_BYTES : REDIST_OBJECTIVE_TIME;
            unsigned long mism = rd_uneven_eval_mismatches;
            char *ref = plan_text(spec, obj, 1);
            char *both = plan_text(spec, obj, 2);
            char *fast = plan_text(spec, obj, 0);
            char *tight = plan_text(spec, obj, 3);
            if (!ref || !both || !fast || !tight) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            const char *what =
                rd_uneven_eval_mismatches != mism ? "a step's figures"
                : strcmp(ref, fast) || strcmp(ref, both) ||
                        strcmp(ref, tight)
                    ? "the plan"
                                                         : NULL;
            if (what) {
                fprintf(stderr,
                        "case %d (%s objective, %d devices): %s differs "
                        "between the classes and device by device\n"
                        "spec: %s\nreference: %s\nclasses: %s\n",
                        c, o ? "bytes" : "time", devices, what,
                        text, ref, fast);
                failures++;
            }
            planned += strncmp(ref, "status", 6) != 0;
            free(ref);
            free(both);
            free(fast);
            free(tight);
        }
        redist_spec_free(spec);
    }
    printf("%d cases, %d plans; %lu steps evaluated both ways, %lu "
           "differing; %d plans differing\n",
           cases, planned, rd_uneven_eval_compared, rd_uneven_eval_mismatches,
           failures);
    if (failures)
        return 1;
    /* the comparison must have reached the classes */
    if (cases >= 50 && rd_uneven_eval_compared < (unsigned long)cases) {
        fprintf(stderr, "too few steps evaluated by classes (%lu)\n",
                rd_uneven_eval_compared);
        return 1;
    }
    return 0;
}
