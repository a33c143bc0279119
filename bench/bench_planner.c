/*
 * Planner benchmark: latency of redist_plan_create over random
 * redistributions, per (mesh axes, array dims) class; no devices needed.
 *
 *   bench_planner [--reps N] [--seed S] [--csv FILE] [--max-axes A]
 *                 [--objective time|bytes] [--even] [--only A,D]
 *
 * Each class draws N random specs (axis sizes 2, 4 or 8 -- realistic
 * meshes -- highly divisible power-of-two shapes, random source and
 * target types, a partial source axis one time in three) and plans each
 * one once after a warm-up plan.  Where the axes sharding a dim multiply
 * to more than its length the spec is uneven (doc/uneven.md); --even
 * draws again until it is not: the workload of version 1's bench, whose
 * specs had to divide, so its medians compare with the same seed.
 * --only A,D plans the class of A axes and D dims alone; the other
 * classes' specs are still drawn, so its specs are those of a full run
 * (for profiling one class).  Every plan is verified before its time
 * counts.  Reports median / p90 / p99 / max latency, plans per second,
 * the median number of types the search visited, and the process's
 * max RSS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "redist.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int rndi(int n) { return (int)(rnd() % (uint64_t)n); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A random type: each axis not in `partial` goes to a random dim or stays
 * replicated (probability 1/4), in random order within its dim. */
static void random_type(int naxes, int ndims, uint32_t partial,
                        redist_type_t *t)
{
    int order[REDIST_MAX_AXES];
    redist_type_init(t, ndims);
    t->partial = partial;
    for (int a = 0; a < naxes; a++)
        order[a] = a;
    for (int a = naxes - 1; a > 0; a--) {
        int j = rndi(a + 1), tmp = order[a];
        order[a] = order[j];
        order[j] = tmp;
    }
    for (int k = 0; k < naxes; k++) {
        int a = order[k];
        if (partial >> a & 1u || rndi(4) == 0)
            continue;
        redist_type_push_axis(t, rndi(ndims), a);
    }
}

static int even_only; /* --even */

static redist_spec_t *random_spec(int naxes, int ndims)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f",
                                        "g", "h", "i", "j", "k", "l",
                                        "m", "n", "o", "p"};
    int64_t sizes[REDIST_MAX_AXES], shape[REDIST_MAX_DIMS];
    redist_mesh_t *mesh = NULL;
    redist_spec_t *spec = NULL;
    for (int tries = 0; tries < 1000; tries++) {
        for (int a = 0; a < naxes; a++)
            sizes[a] = (int64_t)1 << (1 + rndi(3));
        for (int i = 0; i < ndims; i++)
            shape[i] = (int64_t)1 << (6 + rndi(8));
        redist_mesh_free(mesh);
        mesh = NULL;
        if (redist_mesh_create(naxes, names, sizes, &mesh, NULL))
            continue;
        uint32_t partial = rndi(3) == 0 ? 1u << rndi(naxes) : 0;
        redist_type_t from, to;
        random_type(naxes, ndims, partial, &from);
        random_type(naxes, ndims, rndi(2) ? 0 : partial, &to);
        if (redist_spec_create(mesh, ndims, shape, REDIST_BF16, &from, &to,
                               REDIST_REDUCE_SUM, "bench", &spec,
                               NULL) == REDIST_OK) {
            if (!even_only || !redist_spec_is_uneven(spec))
                break;
            redist_spec_free(spec);
            spec = NULL;
        }
    }
    redist_mesh_free(mesh);
    return spec;
}

/* BENCH_SLOW_US: one line on stderr for a plan slower than that. */
static void report_slow(const redist_spec_t *spec, const redist_plan_t *plan,
                        double us, double states)
{
    char a[256], b[256];
    const redist_mesh_t *m = redist_spec_mesh(spec);
    fprintf(stderr, "slow %.0f us, %.0f states: mesh", us, states);
    for (int x = 0; x < redist_mesh_num_axes(m); x++)
        fprintf(stderr, "%s%s=%lld", x ? "," : " ", redist_mesh_axis_name(m, x),
                (long long)redist_mesh_axis_size(m, x));
    fprintf(stderr, " shape");
    for (int x = 0; x < redist_spec_ndims(spec); x++)
        fprintf(stderr, "%s%lld", x ? "x" : " ",
                (long long)redist_spec_shape(spec)[x]);
    fprintf(stderr, ": %s -> %s:",
            redist_type_format(redist_spec_from(spec), m, a, sizeof a),
            redist_type_format(redist_spec_to(spec), m, b, sizeof b));
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        fprintf(stderr, " %s", redist_op_name(v.op));
    }
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    int reps = 200, max_axes = 8, only_axes = 0, only_dims = 0;
    const char *csv = NULL;
    redist_plan_options_t opts;
    memset(&opts, 0, sizeof opts); /* the default objective: time */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 0) | 1;
        else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv = argv[++i];
        else if (strcmp(argv[i], "--max-axes") == 0 && i + 1 < argc)
            max_axes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--objective") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "time") == 0 ||
                  strcmp(argv[i + 1], "bytes") == 0))
            opts.objective = strcmp(argv[++i], "time") == 0
                                 ? REDIST_OBJECTIVE_TIME
                                 : REDIST_OBJECTIVE_BYTES;
        else if (strcmp(argv[i], "--even") == 0)
            even_only = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
                 sscanf(argv[i + 1], "%d,%d", &only_axes, &only_dims) == 2)
            i++;
        else {
            fprintf(stderr,
                    "usage: bench_planner [--reps N] [--seed S] [--csv FILE] "
                    "[--max-axes A] [--objective time|bytes] [--even] "
                    "[--only A,D]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    FILE *out = NULL;
    if (csv && !(out = fopen(csv, "w"))) {
        perror(csv);
        return 2;
    }
    if (out)
        fprintf(out, "axes,dims,plans,median_us,p90_us,p99_us,max_us,"
                     "plans_per_s,median_states\n");
    static const int classes[][2] = {{2, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3},
                                     {4, 2}, {4, 3}, {4, 4}, {5, 4}, {6, 4},
                                     {6, 5}, {6, 6}, {7, 5}, {8, 4}, {8, 5},
                                     {8, 6}};
    double *lat = malloc(sizeof(double) * (size_t)reps);
    double *states = malloc(sizeof(double) * (size_t)reps);
    if (!lat || !states)
        return 2;
    printf("%5s %5s %6s %11s %11s %11s %11s %11s %9s\n", "axes", "dims",
           "plans", "median_us", "p90_us", "p99_us", "max_us", "plans/s",
           "states");
    int failures = 0;
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        int naxes = classes[c][0], ndims = classes[c][1];
        if (naxes > max_axes)
            continue;
        int n = 0;
        double total = 0;
        int skip = only_axes && (naxes != only_axes || ndims != only_dims);
        for (int r = 0; r < reps; r++) {
            redist_spec_t *spec = random_spec(naxes, ndims);
            if (!spec)
                continue;
            if (skip) { /* drawn all the same: --only keeps the specs */
                redist_spec_free(spec);
                continue;
            }
            redist_plan_t *plan = NULL;
            redist_error_t err;
            redist_error_clear(&err);
            /* warm-up: page in code and allocator arenas */
            if (redist_plan_create(spec, &opts, &plan, &err) == REDIST_OK)
                redist_plan_free(plan);
            plan = NULL;
            double t0 = now();
            redist_status_t st = redist_plan_create(spec, &opts, &plan, &err);
            double t1 = now();
            redist_verify_result_t vr;
            if (st != REDIST_OK ||
                redist_plan_verify(plan, &vr, &err) != REDIST_OK) {
                char buf[512];
                fprintf(stderr, "plan failed (%d axes, %d dims): %s\n", naxes,
                        ndims, redist_error_format(&err, buf, sizeof buf));
                failures++;
            } else {
                lat[n] = (t1 - t0) * 1e6;
                states[n] = (double)redist_plan_states_visited(plan);
                if (getenv("BENCH_SLOW_US") &&
                    lat[n] > atof(getenv("BENCH_SLOW_US")))
                    report_slow(spec, plan, lat[n], states[n]);
                total += t1 - t0;
                n++;
            }
            redist_plan_free(plan);
            redist_spec_free(spec);
        }
        if (n == 0)
            continue;
        qsort(lat, (size_t)n, sizeof *lat, cmp_double);
        qsort(states, (size_t)n, sizeof *states, cmp_double);
        double med = lat[n / 2], p90 = lat[(n * 9) / 10],
               p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
               mx = lat[n - 1];
        printf("%5d %5d %6d %11.1f %11.1f %11.1f %11.1f %11.0f %9.0f\n",
               naxes, ndims, n, med, p90, p99, mx, n / total, states[n / 2]);
        if (out) { /* flushed: a run stopped by a timeout keeps its rows */
            fprintf(out, "%d,%d,%d,%.2f,%.2f,%.2f,%.2f,%.0f,%.0f\n", naxes,
                    ndims, n, med, p90, p99, mx, n / total, states[n / 2]);
            fflush(out);
        }
        fflush(stdout);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("max RSS of the whole run: %ld KiB\n", ru.ru_maxrss);
    free(lat);
    free(states);
    if (out)
        fclose(out);
    return failures ? 1 : 0;
}
