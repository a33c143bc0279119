/*
 * Model sync benchmark: a whole set of arrays (a spec with "arrays",
 * doc/arrays.md) moved on the MPI backend by redist's plan set against
 * what is done per tensor today, alternated in one MPI run.
 *
 *   mpirun -np D bench_sets SPEC [--reps N] [--warmup N] [--impl LIST]
 *                               [--check] [--corrupt IMPL] [--csv FILE]
 *
 * SPEC is a set of D devices on one mesh, e.g. the shrunk reshaped
 * weight sync (scripts/model_spec.py --variant reshaped --shrink 8), or
 * from one mesh to another, e.g. training dp=2,tp=2 on ranks 0-3 to
 * inference tp=4 on ranks 4-7 (--variant train-to-infer) or a checkpoint
 * saved on 8 ranks loaded on 6 (--variant checkpoint).  A rank off the
 * source mesh has no source block, off the target mesh no target block.
 *
 * IMPLEMENTATIONS (--impl, comma-separated; default all):
 *   redist-budget   the plan set under the spec's budget_bytes, prepared
 *                   once (redist_plan_set_prepare), run (redist_set_run)
 *   redist-nobudget the same without a budget: one round
 *   redist-minbudget the same under the smallest budget that works (the
 *                   largest single array's scratch): the most rounds
 *     All three run with REDIST_EXEC_PRESERVE_SRC: a weight sync keeps the
 *     training weights, and that flag is what makes the exchanges need
 *     scratch (without it every array here needs none and any budget gives
 *     one round: `redistplan plan SPEC` against `--preserve-src`).  On
 *     two meshes the context is on a flat mesh of the D ranks (the
 *     backend makes the meshes' endpoints).
 *   allgather       per tensor, what RL frameworks do today: one
 *                   MPI_Allgatherv of every source rank's block over the
 *                   source ranks that shard it (the whole tensor on every
 *                   source rank), on two meshes one MPI_Bcast of it from
 *                   source rank 0 to the target ranks off the source mesh
 *                   (the row is then named allgather+bcast), then each
 *                   target rank copies its block out
 *   alltoallv       per tensor, exact boxes: each source rank packs
 *                   exactly the intersection of its block with each target
 *                   rank's block (from one holder among the replicas,
 *                   spread evenly), one MPI_Alltoallv over every rank,
 *                   unpack
 *   (the last two: bench_sets_hand.c, whose top says how they choose)
 * The hand-written ones keep one workspace sized for their largest tensor,
 * allocated and touched at setup (as a careful code does).
 *
 * METHOD.  Setup (plans, preparation, workspaces) is untimed.  Each
 * implementation runs once and its result is checked element by element
 * on every rank (dst poisoned first); then --warmup untimed rounds and
 * --reps timed rounds, a round running every implementation once in an
 * order rotated by one each round: MPI_Barrier, MPI_Wtime, the call,
 * MPI_Wtime, the maximum over the ranks.  Reported: median, first and
 * third quartile (IQR) of those times, the ratio of medians to
 * redist-budget; extra memory per rank beyond the source and destination
 * blocks (redist: the run report's scratch_high_water; the others: their
 * workspaces), max over ranks; messages this rank sends per run, max over
 * ranks: redist: the combined exchanges' messages (measured,
 * redist_set_prepared_messages: a set of two or more arrays runs its
 * all_gather, all_to_all and permute steps as exchanges, combined) plus
 * its per-array reductions' (counted from the plans: s-1 for a
 * reduce_scatter on an axis of s ranks, 2(s-1) for an all_reduce; a
 * one-array set's collectives too: s-1 for an all_gather / all_to_all, 1
 * for a permute that moves this rank's block; a step counts on the ranks
 * of its mesh); allgather: g-1 per MPI_Allgatherv of g ranks (a ring;
 * Open MPI may pick another algorithm), and per MPI_Bcast over b ranks
 * what this rank sends in a binomial tree (the root: ceil(log2 b); Open
 * MPI may segment large ones or pick another tree); alltoallv: the peers it
 * sends a non-empty piece to (what the linear algorithm posts).  And MPI
 * calls per rank per run (collective calls; redist: its collectives and
 * combined exchanges).  After the timed rounds every source block is
 * checked unchanged.
 *
 * VERIFICATION.  Byte b of element g (global row-major index) of array a
 * holds a hash of (a, g, b): any misplaced, missing or duplicated byte
 * is caught.  --check runs that check once per implementation and stops
 * (no timing: the meson tests `bench-sets-check`, one mesh, and
 * `bench-sets-train-to-infer-check` and `bench-sets-checkpoint-8-to-6-check`,
 * two).  --corrupt IMPL flips one byte of the last array on the last rank
 * that holds a target block of it, after IMPL's checked run, to see the
 * checker fail (exit 1).
 *
 * Exit status: 0, 1 on a wrong result, 2 on bad input.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sets.h"
#include "redist/mpi.h"

int g_rank, g_size; /* redist/bench.h's helpers read them */

enum { I_BUDGET, I_NOBUDGET, I_MINBUDGET, I_ALLGATHER, I_ALLTOALLV, NIMPL };
static const char *const impl_name[NIMPL] = {
    "redist-budget", "redist-nobudget", "redist-minbudget", "allgather",
    "alltoallv"};

typedef struct redist_alt {
    redist_plan_set_t *set;
    redist_arrays_t *arrays; /* NULL: the loaded one */
    redist_mpi_t *ctx;
    redist_set_prepared_t *prep;
    uint64_t budget;
    uint64_t coll_msgs; /* this rank's collective messages (from plans) */
    int colls;          /* collective calls per run */
} redist_alt_t;

int na;
arr_t *A;
static redist_alt_t R[3];

/* ------------------------------------------------------------ pattern */

static inline uint8_t pat(uint64_t a, uint64_t gbyte)
{
    uint64_t x = gbyte + (a + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (uint8_t)x;
}

/* Fill (check == 0) or check the block `r` of array `a` in buf; returns
 * the mismatches, reporting the first. */
static uint64_t walk(int a, char *buf, const rect_t *r, int check,
                     const char *what)
{
    const arr_t *x = &A[a];
    const int64_t *shape = redist_spec_shape(x->spec);
    int nd = x->nd;
    if (rect_elems(r, nd) == 0)
        return 0;
    int64_t gstr[REDIST_MAX_DIMS], idx[REDIST_MAX_DIMS] = {0};
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        gstr[i] = s;
        s *= shape[i];
    }
    int64_t run = nd ? r->ext[nd - 1] : 1;
    size_t rowb = (size_t)run * x->elem;
    uint64_t bad = 0, off = 0;
    for (;;) {
        int64_t g = 0;
        for (int i = 0; i < nd; i++)
            g += (r->lo[i] + idx[i]) * gstr[i];
        uint64_t gb = (uint64_t)g * x->elem;
        unsigned char *p = (unsigned char *)buf + off;
        for (size_t b = 0; b < rowb; b++) {
            uint8_t v = pat((uint64_t)a, gb + b);
            if (!check)
                p[b] = v;
            else if (p[b] != v && bad++ == 0)
                fprintf(stderr,
                        "bench_sets: rank %d: %s: array \"%s\": byte %llu "
                        "of the block (global byte %llu) is 0x%02x, want "
                        "0x%02x\n",
                        g_rank, what, redist_spec_name(x->spec),
                        (unsigned long long)(off + b),
                        (unsigned long long)(gb + b), p[b], v);
        }
        off += rowb;
        int i = nd - 2;
        while (i >= 0 && ++idx[i] == r->ext[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
    return bad;
}

static int check_all(const char *what, int dst)
{
    uint64_t bad = 0;
    for (int a = 0; a < na; a++)
        bad += dst ? walk(a, A[a].dst, &A[a].drect, 1, what)
                   : walk(a, A[a].src, &A[a].srect, 1, what);
    return all_ok(bad == 0);
}

static void poison(void)
{
    for (int a = 0; a < na; a++)
        memset(A[a].dst, 0xff, A[a].dbytes);
}

/* ------------------------------------------------------------- redist */

static void die_st(redist_status_t st, const redist_error_t *e,
                   const char *what)
{
    if (st)
        die_err(e, what);
}

/* Messages and calls of array i's own collectives on this rank (its
 * plan): a step counts on the ranks of the mesh it runs on, unless it
 * runs in the round's combined exchanges (redist_plan_set_step_combined:
 * measured). */
static void plan_collectives(const redist_plan_set_t *set, int i,
                             uint64_t *msgs, int *calls)
{
    const redist_plan_t *plan = redist_plan_set_plan(set, i);
    const redist_spec_t *s = redist_plan_spec(plan);
    int nd = redist_spec_ndims(s);
    redist_type_t before = *redist_spec_from(s);
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, k, &v))
            die("step %d of %s", k, redist_spec_name(s));
        const redist_mesh_t *m = S.m[v.mesh];
        int64_t me = S.rank[v.mesh][g_rank];
        int64_t sz = v.axis >= 0 ? redist_mesh_axis_size(m, v.axis) : 1;
        if (me < 0 || redist_plan_set_step_combined(set, i, k) == 1 ||
            v.op == REDIST_OP_SLICE) {
            /* off its mesh; local; measured (combined) */
        } else if (v.op == REDIST_OP_ALL_REDUCE) {
            *msgs += 2 * (uint64_t)(sz - 1);
            ++*calls;
        } else if (v.op == REDIST_OP_PERMUTE) {
            /* even dims here: the rect of an intermediate type */
            rect_t b, a2;
            mesh_type_rect(s, m, -1, &before, me, &b);
            mesh_type_rect(s, m, -1, &v.after, me, &a2);
            int moves = 0;
            for (int d = 0; d < nd; d++)
                moves |= b.lo[d] != a2.lo[d] || b.ext[d] != a2.ext[d];
            *msgs += moves && rect_elems(&b, nd);
            ++*calls;
        } else { /* all_gather, all_to_all, reduce_scatter */
            *msgs += (uint64_t)(sz - 1);
            ++*calls;
        }
        before = v.after;
    }
}

static void redist_setup(redist_alt_t *r, const redist_arrays_t *loaded,
                         uint64_t budget)
{
    redist_error_t e = REDIST_ERROR_INIT;
    const redist_arrays_t *use = loaded;
    r->budget = budget;
    if (budget != redist_arrays_budget(loaded)) {
        const redist_spec_t **specs = xmalloc(sizeof *specs * (size_t)na);
        for (int i = 0; i < na; i++)
            specs[i] = redist_arrays_get(loaded, i);
        die_st(redist_arrays_create(redist_arrays_name(loaded), na,
                                    specs, budget, &r->arrays, &e),
               &e, "redist_arrays_create");
        free(specs);
        use = r->arrays;
    }
    redist_exec_options_t eo = {REDIST_EXEC_PRESERVE_SRC};
    die_st(redist_plan_set_create(use, NULL, NULL, &eo, &r->set, &e), &e,
           "redist_plan_set_create");
    /* two meshes: a context on any mesh of the union's devices (the
     * backend makes the meshes' endpoints); one: on the set's mesh */
    redist_mesh_t *flat = NULL;
    if (S.two) {
        const char *axis[1] = {"rank"};
        int64_t n[1] = {g_size};
        die_st(redist_mesh_create(1, axis, n, &flat, &e), &e,
               "redist_mesh_create");
    }
    die_st(redist_mpi_create(MPI_COMM_WORLD,
                             flat ? flat : S.m[REDIST_SIDE_FROM], NULL,
                             &r->ctx, &e),
           &e, "redist_mpi_create");
    redist_mesh_free(flat);
    void **src = xmalloc(sizeof *src * (size_t)na),
         **dst = xmalloc(sizeof *dst * (size_t)na);
    for (int i = 0; i < na; i++) {
        src[i] = A[i].sbytes ? A[i].src : NULL;
        dst[i] = A[i].dbytes ? A[i].dst : NULL;
        plan_collectives(r->set, i, &r->coll_msgs, &r->colls);
    }
    die_st(redist_plan_set_prepare(r->set, redist_mpi_backend(r->ctx),
                                   src, dst, &r->prep, &e),
           &e, "redist_plan_set_prepare");
    free(src);
    free(dst);
}

static void redist_teardown(redist_alt_t *r)
{
    redist_set_prepared_free(r->prep);
    redist_mpi_free(r->ctx);
    redist_plan_set_free(r->set);
    redist_arrays_free(r->arrays);
}

/* ------------------------------------------------------------- driver */

static redist_exec_report_t last_rep[3];

static void run_impl(int k)
{
    if (k < 3) {
        redist_error_t e = REDIST_ERROR_INIT;
        die_st(redist_set_run(R[k].prep, &last_rep[k], &e), &e,
               impl_name[k]);
    } else if (k == I_ALLGATHER) {
        run_gather();
    } else {
        run_alltoallv();
    }
}

/* The row's name: the gather broadcasts on two meshes. */
static const char *label(int k)
{
    return k == I_ALLGATHER && hand_broadcasts() ? "allgather+bcast"
                                                 : impl_name[k];
}

static double timed(int k)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    run_impl(k);
    double t = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

static double quant(const double *v, int n, double q)
{
    double *s = xmalloc(sizeof(double) * (size_t)n);
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double pos = q * (n - 1);
    int i = (int)pos;
    double f = pos - i, r = i + 1 < n ? s[i] + f * (s[i + 1] - s[i]) : s[i];
    free(s);
    return r;
}

static unsigned parse_impls(const char *list)
{
    unsigned mask = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < NIMPL && strcmp(t, impl_name[k]) != 0)
            k++;
        if (k == NIMPL) {
            if (g_rank == 0)
                fprintf(stderr, "bench_sets: unknown implementation \"%s\"\n",
                        t);
            MPI_Finalize();
            exit(2);
        }
        mask |= 1u << k;
    }
    return mask;
}

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr,
                "usage: mpirun -np D bench_sets SPEC [--reps N] [--warmup N] "
                "[--impl LIST] [--check] [--corrupt IMPL] [--csv FILE]\n");
    MPI_Finalize();
    exit(2);
}

/* Load the set; every array's blocks on this rank, the source filled. */
static redist_arrays_t *load(const char *path, uint64_t *my_src,
                             uint64_t *my_dst)
{
    redist_error_t e = REDIST_ERROR_INIT;
    redist_arrays_t *arrays = NULL;
    die_st(redist_arrays_load_file(path, 0, &arrays, &e), &e, path);
    na = redist_arrays_count(arrays);
    const redist_spec_t *s0 = redist_arrays_get(arrays, 0);
    if (redist_spec_num_devices(s0) != g_size)
        die("%s: the set runs on %lld devices, not %d (mpirun -np)", path,
            (long long)redist_spec_num_devices(s0), g_size);
    sides_init(s0);
    A = xcalloc((size_t)na, sizeof *A);
    *my_src = *my_dst = 0;
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        x->spec = redist_arrays_get(arrays, a);
        x->nd = redist_spec_ndims(x->spec);
        x->elem = redist_dtype_size(redist_spec_dtype(x->spec));
        side_rect(x->spec, REDIST_SIDE_FROM, g_rank, &x->srect);
        side_rect(x->spec, REDIST_SIDE_TO, g_rank, &x->drect);
        x->sbytes = (uint64_t)rect_elems(&x->srect, x->nd) * x->elem;
        x->dbytes = (uint64_t)rect_elems(&x->drect, x->nd) * x->elem;
        if (x->sbytes > INT_MAX)
            die("array \"%s\": block over INT_MAX bytes",
                redist_spec_name(x->spec));
        x->src = xmalloc(x->sbytes);
        x->dst = xmalloc(x->dbytes);
        walk(a, x->src, &x->srect, 0, "fill");
        memset(x->dst, 0, x->dbytes);
        *my_src += x->sbytes;
        *my_dst += x->dbytes;
    }
    return arrays;
}

/* Every selected implementation set up (untimed); returns the smallest
 * budget that works. */
static uint64_t setup_all(const redist_arrays_t *arrays, unsigned mask)
{
    uint64_t minb = 0;
    if (mask & 7u) {
        /* the no-budget set first: its arrays' scratch gives the least
         * budget */
        redist_setup(&R[I_NOBUDGET], arrays, REDIST_NO_BUDGET);
        for (int i = 0; i < na; i++)
            minb = umax(minb, redist_plan_set_array_scratch(R[I_NOBUDGET].set,
                                                            i));
        uint64_t given = redist_arrays_budget(arrays);
        if (mask & 1u << I_BUDGET)
            redist_setup(&R[I_BUDGET], arrays, given);
        if (mask & 1u << I_MINBUDGET)
            redist_setup(&R[I_MINBUDGET], arrays, minb);
    }
    hand_setup((mask & 1u << I_ALLGATHER ? HAND_GATHER : 0u) |
               (mask & 1u << I_ALLTOALLV ? HAND_ALLTOALLV : 0u));
    return minb;
}

/* Each implementation once, checked on every rank; `corrupt` flips a
 * byte of the last array on the last rank that holds a target block of
 * it.  Returns 1 on a wrong result or a modified source. */
static int check_phase(unsigned mask, int corrupt)
{
    uint64_t holder = A[na - 1].dbytes ? (uint64_t)g_rank + 1 : 0;
    int last = (int)umax_over_ranks(holder) - 1;
    int fail = 0;
    for (int k = 0; k < NIMPL; k++) {
        if (!(mask & 1u << k))
            continue;
        poison();
        run_impl(k);
        if (k == corrupt && g_rank == last)
            A[na - 1].dst[A[na - 1].dbytes - 1] ^= 0x10;
        int ok = check_all(impl_name[k], 1);
        say("check %-17s %s\n", label(k),
            ok ? "every element exact on every rank" : "WRONG RESULT");
        fail |= !ok;
    }
    if (!check_all("source after the runs", 0)) {
        say("the source was modified\n");
        fail = 1;
    }
    return fail;
}

/* Implementation k's figures: extra bytes, messages and calls per rank
 * (max over ranks), rounds (0: not redist). */
static void figures(int k, uint64_t *extra, uint64_t *msgs, long *calls,
                    int *rounds)
{
    *rounds = 0;
    if (k < 3) {
        *extra = last_rep[k].scratch_high_water;
        *msgs = redist_set_prepared_messages(R[k].prep) + R[k].coll_msgs;
        *calls = (long)redist_set_prepared_exchanges(R[k].prep) + R[k].colls;
        *rounds = redist_plan_set_num_rounds(R[k].set);
    } else {
        hand_figures(k == I_ALLGATHER ? HAND_GATHER : HAND_ALLTOALLV, extra,
                     msgs, calls);
    }
    *extra = umax_over_ranks(*extra);
    *msgs = umax_over_ranks(*msgs);
    *calls = (long)umax_over_ranks((uint64_t)*calls);
}

static void report(const redist_arrays_t *arrays, unsigned mask,
                   const int *order, int nk, const double *t, int reps,
                   const char *csv)
{
    FILE *cf = NULL;
    if (csv && g_rank == 0) {
        cf = fopen(csv, "a");
        if (!cf)
            die("cannot open %s", csv);
        fseek(cf, 0, SEEK_END);
        if (ftell(cf) == 0)
            fprintf(cf, "spec,ranks,impl,rounds,reps,median_s,q1_s,q3_s,"
                        "extra_bytes,messages,calls\n");
    }
    double base = mask & 1u << I_BUDGET ? quant(&t[I_BUDGET * reps], reps, .5)
                                        : 0;
    say("\n%-17s %6s %11s %23s %8s %13s %9s %7s\n", "implementation",
        "rounds", "median ms", "IQR ms (q1 - q3)", "/budget", "extra/rank",
        "msgs/rank", "calls");
    for (int j = 0; j < nk; j++) {
        int k = order[j], rounds;
        double med = quant(&t[k * reps], reps, .5),
               q1 = quant(&t[k * reps], reps, .25),
               q3 = quant(&t[k * reps], reps, .75);
        uint64_t extra, msgs;
        long calls;
        figures(k, &extra, &msgs, &calls, &rounds);
        char eb[32], rs[16], ratio[16];
        fmt_bytes(extra, eb, sizeof eb);
        if (rounds)
            snprintf(rs, sizeof rs, "%d", rounds);
        else
            snprintf(rs, sizeof rs, "-");
        if (base > 0)
            snprintf(ratio, sizeof ratio, "%.2f", med / base);
        else
            snprintf(ratio, sizeof ratio, "-");
        say("%-17s %6s %11.3f %10.3f - %10.3f %8s %13s %9llu %7ld\n",
            label(k), rs, med * 1e3, q1 * 1e3, q3 * 1e3, ratio, eb,
            (unsigned long long)msgs, calls);
        if (cf)
            fprintf(cf, "%s,%d,%s,%d,%d,%.9f,%.9f,%.9f,%llu,%llu,%ld\n",
                    redist_arrays_name(arrays), g_size, label(k), rounds,
                    reps, med, q1, q3, (unsigned long long)extra,
                    (unsigned long long)msgs, calls);
    }
    if (cf)
        fclose(cf);
}

/* Warm-up and timed rounds, every implementation once a round in an
 * order rotated by one each round; t[k * reps + r]. */
static double *timed_rounds(const int *order, int nk, int reps, int warmup)
{
    double *t = xcalloc((size_t)NIMPL * (size_t)reps, sizeof(double));
    for (int r = 0; r < warmup + reps; r++)
        for (int j = 0; j < nk; j++) {
            int k = order[(j + r) % nk];
            double dt = timed(k);
            if (r >= warmup)
                t[k * reps + (r - warmup)] = dt;
        }
    if (!check_all("source after the timed runs", 0))
        die("the source was modified by a timed run");
    return t;
}

static void cleanup(redist_arrays_t *arrays)
{
    for (int k = 0; k < 3; k++)
        if (R[k].prep)
            redist_teardown(&R[k]);
    hand_free();
    for (int a = 0; a < na; a++) {
        free(A[a].src);
        free(A[a].dst);
    }
    free(A);
    sides_free();
    redist_arrays_free(arrays);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const char *path = NULL, *csv = NULL;
    int reps = 10, warmup = 1, check_only = 0, corrupt = -1;
    unsigned mask = (1u << NIMPL) - 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--impl") && i + 1 < argc)
            mask = parse_impls(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv = argv[++i];
        else if (!strcmp(argv[i], "--check"))
            check_only = 1;
        else if (!strcmp(argv[i], "--corrupt") && i + 1 < argc) {
            unsigned c = parse_impls(argv[++i]);
            corrupt = __builtin_ctz(c);
        } else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage();
    }
    if (!path || reps < 1 || warmup < 0)
        usage();

    uint64_t my_src, my_dst;
    redist_arrays_t *arrays = load(path, &my_src, &my_dst);
    double t0 = MPI_Wtime();
    uint64_t minb = setup_all(arrays, mask);
    double t_setup = MPI_Wtime() - t0;
    char b1[32], b2[32];
    fmt_bytes(umax_over_ranks(my_src), b1, sizeof b1);
    fmt_bytes(umax_over_ranks(my_dst), b2, sizeof b2);
    say("bench_sets: %s: %d arrays on %d ranks (%s), src %s and dst %s per "
        "rank (most); set up in %.3f s\n",
        redist_arrays_name(arrays), na, g_size,
        S.two ? "two meshes" : "one mesh", b1, b2, t_setup);

    /* every implementation checked once before any timing */
    int fail = check_phase(mask, corrupt);
    if (fail || check_only) {
        cleanup(arrays);
        MPI_Finalize();
        return fail;
    }

    int nk = 0, order[NIMPL];
    for (int k = 0; k < NIMPL; k++)
        if (mask & 1u << k)
            order[nk++] = k;
    double *t = timed_rounds(order, nk, reps, warmup);
    report(arrays, mask, order, nk, t, reps, csv);
    if (mask & 7u) {
        char bb[32], mb[32];
        uint64_t given = redist_arrays_budget(arrays);
        if (given == REDIST_NO_BUDGET)
            snprintf(bb, sizeof bb, "none");
        else
            fmt_bytes(given, bb, sizeof bb);
        fmt_bytes(minb, mb, sizeof mb);
        say("budgets: redist-budget %s (the spec's), redist-minbudget %s; "
            "%d timed rounds after %d warm-up, times max over ranks\n",
            bb, mb, reps, warmup);
    }
    free(t);
    cleanup(arrays);
    MPI_Finalize();
    return 0;
}
