/*
 * Model sync benchmark: a whole set of arrays (a spec with "arrays",
 * doc/arrays.md) moved on the MPI backend by redist's plan set against
 * what is done per tensor today, alternated in one MPI run.
 *
 *   mpirun -np D bench_sets SPEC [--reps N] [--warmup N] [--impl LIST]
 *                               [--check] [--corrupt IMPL] [--csv FILE]
 *
 * SPEC is a one-mesh set of D devices, e.g. the shrunk reshaped weight
 * sync (scripts/model_spec.py --variant reshaped --shrink 8).
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
 *     one round: `redistplan plan SPEC` against `--preserve-src`).
 *   allgather       per tensor, what RL frameworks do today: one
 *                   MPI_Allgatherv of every rank's source block over the
 *                   ranks that shard it (the whole tensor on every rank),
 *                   then each rank copies its target block out
 *   alltoallv       per tensor, exact boxes: each rank packs exactly the
 *                   intersection of its source block with each peer's
 *                   target block (from the one holder that agrees with the
 *                   receiver on the source's replicated axes), one
 *                   MPI_Alltoallv, unpack
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
 * reduce_scatter on an axis of s ranks, 2(s-1) for an all_reduce);
 * allgather: g-1 per MPI_Allgatherv of g ranks
 * (a ring; Open MPI may pick another algorithm); alltoallv: the peers it
 * sends a non-empty piece to (what the linear algorithm posts).  And MPI
 * calls per rank per run (collective calls; redist: its collectives and
 * combined exchanges).  After the timed rounds every source block is
 * checked unchanged.
 *
 * VERIFICATION.  Byte b of element g (global row-major index) of array a
 * holds a hash of (a, g, b): any misplaced, missing or duplicated byte
 * is caught.  --check runs that check once per implementation and stops
 * (no timing: the meson test `bench-sets-check`).  --corrupt IMPL flips
 * one byte of the last rank's last array after IMPL's checked run, to see
 * the checker fail (exit 1).
 *
 * Exit status: 0, 1 on a wrong result, 2 on bad input.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "redist.h"
#include "redist/mpi.h"
#include "redist/bench.h" /* bench/redist/bench.h: rects, helpers */

int g_rank, g_size; /* redist/bench.h's helpers read them */

enum { I_BUDGET, I_NOBUDGET, I_MINBUDGET, I_ALLGATHER, I_ALLTOALLV, NIMPL };
static const char *const impl_name[NIMPL] = {
    "redist-budget", "redist-nobudget", "redist-minbudget", "allgather",
    "alltoallv"};

/* One array on this rank. */
typedef struct arr {
    const redist_spec_t *spec;
    int nd;
    size_t elem;
    rect_t srect, drect;
    uint64_t sbytes, dbytes;
    char *src, *dst;
    /* allgather */
    MPI_Comm gcomm; /* borrowed from the cache */
    int gsize;
    rect_t *grect;         /* members' source blocks */
    int *gcount, *gdispl;  /* bytes */
    uint64_t gbytes;
    /* alltoallv */
    rect_t *spiece, *rpiece; /* per peer */
    char *has_s, *has_r;
    int *scount, *sdispl, *rcount, *rdispl; /* bytes */
    uint64_t stot, rtot;
    int nsend;               /* peers sent to (not self) */
} arr_t;

typedef struct redist_alt {
    redist_plan_set_t *set;
    redist_arrays_t *arrays; /* NULL: the loaded one */
    redist_mpi_t *ctx;
    redist_set_prepared_t *prep;
    uint64_t budget;
    uint64_t coll_msgs; /* this rank's collective messages (from plans) */
    int colls;          /* collective calls per run */
} redist_alt_t;

static int na;
static arr_t *A;
static redist_alt_t R[3];
static char *gbuf, *sbuf; /* allgather; alltoallv send + receive */
static uint64_t gbuf_bytes, xbuf_bytes;

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

/* Messages and calls of array i's collectives on this rank (its plan);
 * with `lowered` (a set of two or more arrays runs its all_gather,
 * all_to_all and permute steps as exchanges: measured, combined) only
 * its reductions'. */
static void plan_collectives(const redist_plan_t *plan, int lowered,
                             uint64_t *msgs, int *calls)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(s);
    int nd = redist_spec_ndims(s);
    redist_type_t before = *redist_spec_from(s);
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, k, &v))
            die("step %d of %s", k, redist_spec_name(s));
        int64_t sz = v.axis >= 0 ? redist_mesh_axis_size(m, v.axis) : 1;
        int op = lowered && (v.op == REDIST_OP_ALL_GATHER ||
                             v.op == REDIST_OP_ALL_TO_ALL ||
                             v.op == REDIST_OP_PERMUTE)
                     ? REDIST_OP_EXCHANGE
                     : v.op;
        switch (op) {
        case REDIST_OP_ALL_GATHER:
        case REDIST_OP_ALL_TO_ALL:
        case REDIST_OP_REDUCE_SCATTER:
            *msgs += (uint64_t)(sz - 1);
            ++*calls;
            break;
        case REDIST_OP_ALL_REDUCE:
            *msgs += 2 * (uint64_t)(sz - 1);
            ++*calls;
            break;
        case REDIST_OP_PERMUTE: {
            /* even dims here: type_rect of an intermediate type */
            rect_t b, a2;
            type_rect(s, &before, g_rank, &b);
            type_rect(s, &v.after, g_rank, &a2);
            int moves = 0;
            for (int d = 0; d < nd; d++)
                moves |= b.lo[d] != a2.lo[d] || b.ext[d] != a2.ext[d];
            *msgs += moves && rect_elems(&b, nd);
            ++*calls;
            break;
        }
        default: /* slice: local; exchange: measured (combined) */
            break;
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
    die_st(redist_mpi_create(MPI_COMM_WORLD,
                             redist_spec_mesh(redist_arrays_get(use, 0)), NULL,
                             &r->ctx, &e),
           &e, "redist_mpi_create");
    void **src = xmalloc(sizeof *src * (size_t)na),
         **dst = xmalloc(sizeof *dst * (size_t)na);
    for (int i = 0; i < na; i++) {
        src[i] = A[i].sbytes ? A[i].src : NULL;
        dst[i] = A[i].dbytes ? A[i].dst : NULL;
        plan_collectives(redist_plan_set_plan(r->set, i), na > 1,
                         &r->coll_msgs, &r->colls);
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

/* -------------------------------------------------------- hand-written */

typedef struct comm_cache {
    uint32_t mask;
    MPI_Comm comm;
} comm_cache_t;
static comm_cache_t cc[64];
static int ncc;

static MPI_Comm group_comm(const redist_mesh_t *m, uint32_t shard)
{
    for (int i = 0; i < ncc; i++)
        if (cc[i].mask == shard)
            return cc[i].comm;
    if (ncc == 64)
        die("too many gather groups");
    uint32_t all = (uint32_t)((1ull << redist_mesh_num_axes(m)) - 1);
    cc[ncc].mask = shard;
    MPI_Comm_split(MPI_COMM_WORLD, color_of(m, g_rank, all & ~shard), g_rank,
                   &cc[ncc].comm);
    return cc[ncc++].comm;
}

static int fits_int(uint64_t v) { return v <= INT_MAX; }

static void hand_setup(int a)
{
    arr_t *x = &A[a];
    const redist_spec_t *s = x->spec;
    const redist_mesh_t *m = redist_spec_mesh(s);
    const redist_type_t *from = redist_spec_from(s), *to = redist_spec_to(s);
    uint32_t shard = axes_of(from);
    uint32_t all = (uint32_t)((1ull << redist_mesh_num_axes(m)) - 1);
    uint32_t rep = all & ~shard & ~from->partial;
    if (from->partial || to->partial)
        die("array \"%s\": partial types are not written by hand here",
            redist_spec_name(s));
    size_t P = (size_t)g_size;
    /* allgather: the ranks that differ only on the sharding axes */
    x->gcomm = group_comm(m, shard);
    MPI_Comm_size(x->gcomm, &x->gsize);
    x->grect = xcalloc((size_t)x->gsize, sizeof(rect_t));
    x->gcount = xcalloc((size_t)x->gsize, sizeof(int));
    x->gdispl = xcalloc((size_t)x->gsize, sizeof(int));
    int k = 0, mycol = color_of(m, g_rank, rep);
    x->gbytes = 0;
    for (int64_t p = 0; p < g_size; p++) {
        if (color_of(m, p, rep) != mycol)
            continue;
        type_rect(s, from, p, &x->grect[k]);
        uint64_t b = (uint64_t)rect_elems(&x->grect[k], x->nd) * x->elem;
        if (!fits_int(b) || !fits_int(x->gbytes + b))
            die("array \"%s\": gather over INT_MAX bytes", redist_spec_name(s));
        x->gcount[k] = (int)b;
        x->gdispl[k] = (int)x->gbytes;
        x->gbytes += b;
        k++;
    }
    /* alltoallv: p sends r the meet of their blocks when they agree on
     * the source's replicated axes */
    x->spiece = xcalloc(P, sizeof(rect_t));
    x->rpiece = xcalloc(P, sizeof(rect_t));
    x->has_s = xcalloc(P, 1);
    x->has_r = xcalloc(P, 1);
    x->scount = xcalloc(P, sizeof(int));
    x->sdispl = xcalloc(P, sizeof(int));
    x->rcount = xcalloc(P, sizeof(int));
    x->rdispl = xcalloc(P, sizeof(int));
    int64_t me = g_rank;
    for (int64_t q = 0; q < g_size; q++) {
        rect_t qs, qd;
        type_rect(s, from, q, &qs);
        type_rect(s, to, q, &qd);
        /* q -> me */
        if (color_of(m, q, rep) == color_of(m, me, rep) &&
            rect_meet(&qs, &x->drect, x->nd, &x->rpiece[q])) {
            uint64_t b =
                (uint64_t)rect_elems(&x->rpiece[q], x->nd) * x->elem;
            x->has_r[q] = 1;
            if (q != me) {
                if (!fits_int(b) || !fits_int(x->rtot + b))
                    die("alltoallv count over INT_MAX");
                x->rcount[q] = (int)b;
                x->rdispl[q] = (int)x->rtot;
                x->rtot += b;
            }
        }
        /* me -> q */
        if (q != me && color_of(m, q, rep) == color_of(m, me, rep) &&
            rect_meet(&x->srect, &qd, x->nd, &x->spiece[q])) {
            uint64_t b =
                (uint64_t)rect_elems(&x->spiece[q], x->nd) * x->elem;
            x->has_s[q] = 1;
            if (!fits_int(b) || !fits_int(x->stot + b))
                die("alltoallv count over INT_MAX");
            x->scount[q] = (int)b;
            x->sdispl[q] = (int)x->stot;
            x->stot += b;
            x->nsend += b > 0;
        }
    }
    gbuf_bytes = umax(gbuf_bytes, x->gbytes);
    xbuf_bytes = umax(xbuf_bytes, x->stot + x->rtot);
}

static void run_allgather(void)
{
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        MPI_Allgatherv(x->src, (int)x->sbytes, MPI_BYTE, gbuf, x->gcount,
                       x->gdispl, MPI_BYTE, x->gcomm);
        for (int k = 0; k < x->gsize; k++) {
            rect_t piece;
            if (rect_meet(&x->grect[k], &x->drect, x->nd, &piece))
                rect_move(x->dst, &x->drect, gbuf + x->gdispl[k],
                          &x->grect[k], &piece, x->nd, x->elem,
                          redist_spec_dtype(x->spec), OP_COPY);
        }
    }
}

static void run_alltoallv(void)
{
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        redist_dtype_t dt = redist_spec_dtype(x->spec);
        char *rb = sbuf + x->stot;
        for (int q = 0; q < g_size; q++)
            if (x->has_s[q])
                rect_move(sbuf + x->sdispl[q], &x->spiece[q], x->src,
                          &x->srect, &x->spiece[q], x->nd, x->elem, dt,
                          OP_COPY);
        if (x->has_r[g_rank])
            rect_move(x->dst, &x->drect, x->src, &x->srect,
                      &x->rpiece[g_rank], x->nd, x->elem, dt, OP_COPY);
        MPI_Alltoallv(sbuf, x->scount, x->sdispl, MPI_BYTE, rb, x->rcount,
                      x->rdispl, MPI_BYTE, MPI_COMM_WORLD);
        for (int q = 0; q < g_size; q++)
            if (q != g_rank && x->has_r[q])
                rect_move(x->dst, &x->drect, rb + x->rdispl[q],
                          &x->rpiece[q], &x->rpiece[q], x->nd, x->elem, dt,
                          OP_COPY);
    }
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
        run_allgather();
    } else {
        run_alltoallv();
    }
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

    redist_error_t e = REDIST_ERROR_INIT;
    redist_arrays_t *arrays = NULL;
    die_st(redist_arrays_load_file(path, 0, &arrays, &e), &e, path);
    na = redist_arrays_count(arrays);
    const redist_spec_t *s0 = redist_arrays_get(arrays, 0);
    if (redist_spec_num_meshes(s0) != 1 ||
        redist_spec_num_devices(s0) != g_size)
        die("%s: want one mesh of %d devices (mpirun -np)", path, g_size);
    A = xcalloc((size_t)na, sizeof *A);
    uint64_t my_src = 0, my_dst = 0;
    for (int a = 0; a < na; a++) {
        arr_t *x = &A[a];
        x->spec = redist_arrays_get(arrays, a);
        if (redist_spec_num_meshes(x->spec) != 1)
            die("array \"%s\": two meshes", redist_spec_name(x->spec));
        x->nd = redist_spec_ndims(x->spec);
        x->elem = redist_dtype_size(redist_spec_dtype(x->spec));
        type_rect(x->spec, redist_spec_from(x->spec), g_rank, &x->srect);
        type_rect(x->spec, redist_spec_to(x->spec), g_rank, &x->drect);
        x->sbytes = (uint64_t)rect_elems(&x->srect, x->nd) * x->elem;
        x->dbytes = (uint64_t)rect_elems(&x->drect, x->nd) * x->elem;
        if (!fits_int(x->sbytes))
            die("array \"%s\": block over INT_MAX bytes",
                redist_spec_name(x->spec));
        x->src = xmalloc(x->sbytes);
        x->dst = xmalloc(x->dbytes);
        walk(a, x->src, &x->srect, 0, "fill");
        memset(x->dst, 0, x->dbytes);
        my_src += x->sbytes;
        my_dst += x->dbytes;
    }
    double t0 = MPI_Wtime();
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
    double t_redist = MPI_Wtime() - t0;
    if (mask & (1u << I_ALLGATHER | 1u << I_ALLTOALLV)) {
        for (int a = 0; a < na; a++)
            hand_setup(a);
        if (mask & 1u << I_ALLGATHER) {
            gbuf = xmalloc(gbuf_bytes);
            memset(gbuf, 0, gbuf_bytes);
        }
        if (mask & 1u << I_ALLTOALLV) {
            sbuf = xmalloc(xbuf_bytes);
            memset(sbuf, 0, xbuf_bytes);
        }
    }

    char b1[32], b2[32];
    fmt_bytes(umax_over_ranks(my_src), b1, sizeof b1);
    fmt_bytes(umax_over_ranks(my_dst), b2, sizeof b2);
    say("bench_sets: %s: %d arrays on %d ranks, src %s and dst %s per rank "
        "(most); redist sets planned and prepared in %.3f s\n",
        redist_arrays_name(arrays), na, g_size, b1, b2, t_redist);

    /* every implementation checked once before any timing */
    int fail = 0;
    for (int k = 0; k < NIMPL; k++) {
        if (!(mask & 1u << k))
            continue;
        poison();
        run_impl(k);
        if (k == corrupt && g_rank == g_size - 1 && A[na - 1].dbytes)
            A[na - 1].dst[A[na - 1].dbytes - 1] ^= 0x10;
        int ok = check_all(impl_name[k], 1);
        say("check %-17s %s\n", impl_name[k],
            ok ? "every element exact on every rank" : "WRONG RESULT");
        fail |= !ok;
    }
    if (!check_all("source after the runs", 0)) {
        say("the source was modified\n");
        fail = 1;
    }
    if (fail || check_only) {
        redist_arrays_free(arrays);
        MPI_Finalize();
        return fail;
    }

    /* timed rounds */
    int nk = 0, order[NIMPL];
    for (int k = 0; k < NIMPL; k++)
        if (mask & 1u << k)
            order[nk++] = k;
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
        int k = order[j];
        double med = quant(&t[k * reps], reps, .5),
               q1 = quant(&t[k * reps], reps, .25),
               q3 = quant(&t[k * reps], reps, .75);
        uint64_t extra, msgs;
        int rounds = 0;
        long calls;
        if (k < 3) {
            extra = last_rep[k].scratch_high_water;
            msgs = redist_set_prepared_messages(R[k].prep) + R[k].coll_msgs;
            calls = (long)redist_set_prepared_exchanges(R[k].prep) +
                    R[k].colls;
            rounds = redist_plan_set_num_rounds(R[k].set);
        } else if (k == I_ALLGATHER) {
            extra = gbuf_bytes;
            msgs = 0;
            for (int a = 0; a < na; a++)
                msgs += (uint64_t)(A[a].gsize - 1);
            calls = na;
        } else {
            extra = xbuf_bytes;
            msgs = 0;
            for (int a = 0; a < na; a++)
                msgs += (uint64_t)A[a].nsend;
            calls = na;
        }
        extra = umax_over_ranks(extra);
        msgs = umax_over_ranks(msgs);
        calls = (long)umax_over_ranks((uint64_t)calls);
        char eb[32], rs[16];
        fmt_bytes(extra, eb, sizeof eb);
        if (rounds)
            snprintf(rs, sizeof rs, "%d", rounds);
        else
            snprintf(rs, sizeof rs, "-");
        char ratio[16];
        if (base > 0)
            snprintf(ratio, sizeof ratio, "%.2f", med / base);
        else
            snprintf(ratio, sizeof ratio, "-");
        say("%-17s %6s %11.3f %10.3f - %10.3f %8s %13s %9llu %7ld\n",
            impl_name[k], rs, med * 1e3, q1 * 1e3, q3 * 1e3, ratio, eb,
            (unsigned long long)msgs, calls);
        if (cf)
            fprintf(cf, "%s,%d,%s,%d,%d,%.9f,%.9f,%.9f,%llu,%llu,%ld\n",
                    redist_arrays_name(arrays), g_size, impl_name[k], rounds,
                    reps, med, q1, q3, (unsigned long long)extra,
                    (unsigned long long)msgs, calls);
    }
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
    if (cf)
        fclose(cf);
    free(t);
    for (int k = 0; k < 3; k++)
        if (R[k].prep)
            redist_teardown(&R[k]);
    for (int i = 0; i < ncc; i++)
        MPI_Comm_free(&cc[i].comm);
    redist_arrays_free(arrays);
    MPI_Finalize();
    return 0;
}
