/*
 * `redistplan run SET` under a launcher (doc/arrays.md): the driver the
 * mpi (run_mpi.c) and shmem (run_shmem.c) backends share for a spec
 * with "arrays".  Rank d is device d.  After the agreement (launch.c:
 * every rank loaded, planned and parsed alike), every rank
 *
 *   1. starts the transport and checks the job's size against the set's
 *      device count (the same answer on every rank: both are global);
 *      under mpirun across hosts, plans the set again with the axes of
 *      its one mesh that span hosts on the network level (rehost);
 *   2. fills its source blocks of every array (malloc'd: a set's blocks
 *      are private memory on every backend) with the exact pattern of
 *      src/testing/pattern.h;
 *   3. makes the backend's context over the mesh of the set's one-mesh
 *      arrays when they all share one (their collectives run on its
 *      axes), else over a one-axis mesh of every rank (two-mesh arrays
 *      make their meshes' own), plans the set again for
 *      that endpoint where the backend needs it (OpenSHMEM: its whole
 *      steps), and prepares it (one scratch arena of the largest round);
 *   4. runs it --repeat times (the sources filled again before each run
 *      unless --preserve-src keeps them), then checks every element of
 *      every array (and the sources with --preserve-src);
 *   5. agrees on failure, mismatch, the maxima of scratch high-water,
 *      traffic, messages and best time, and on the first rank whose
 *      high-water passed the budget; rank 0 reports.
 * Each collective step is reached by every rank together (a failure on
 * one rank is agreed first), so nothing hangs.  Cost: the run itself,
 * plus one pattern fill and check per element and a few reductions of
 * NVAL words.  Memory per rank: its blocks of every array, plus the
 * arena (at most the budget) and the backend's work space.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

enum { V_FAIL, V_MISMATCH, V_HIGH, V_RECV, V_MSGS, V_NS, V_OVER, V_WRITES,
       NVAL };

/* The mesh every one-mesh array of the set is on, when they share one of
 * `nd` devices (the same axes, names and sizes), else NULL: the
 * context's mesh, on whose axes their collectives run. */
static const redist_mesh_t *shared_mesh(const redist_plan_set_t *set,
                                        int64_t nd)
{
    const redist_mesh_t *m = NULL;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s =
            redist_plan_spec(redist_plan_set_plan(set, i));
        if (redist_spec_num_meshes(s) != 1)
            continue;
        const redist_mesh_t *x = redist_spec_mesh(s);
        if (!m) {
            m = x;
            continue;
        }
        int same = redist_mesh_num_axes(x) == redist_mesh_num_axes(m);
        for (int a = 0; same && a < redist_mesh_num_axes(m); a++)
            same = redist_mesh_axis_size(x, a) == redist_mesh_axis_size(m, a) &&
                   !strcmp(redist_mesh_axis_name(x, a),
                           redist_mesh_axis_name(m, a));
        if (!same)
            return NULL;
    }
    return m && redist_mesh_num_devices(m) == nd ? m : NULL;
}

/* Are the placed meshes of side `side` of specs a and b the same (axes,
 * names, sizes and device lists)? */
static int same_side(const redist_spec_t *a, const redist_spec_t *b,
                     int side)
{
    const redist_mesh_t *x = redist_spec_side_mesh(a, side);
    const redist_mesh_t *y = redist_spec_side_mesh(b, side);
    int same = redist_mesh_num_axes(x) == redist_mesh_num_axes(y) &&
               redist_mesh_num_devices(x) == redist_mesh_num_devices(y);
    for (int k = 0; same && k < redist_mesh_num_axes(x); k++)
        same = redist_mesh_axis_size(x, k) == redist_mesh_axis_size(y, k) &&
               !strcmp(redist_mesh_axis_name(x, k),
                       redist_mesh_axis_name(y, k));
    for (int64_t k = 0; same && k < redist_mesh_num_devices(x); k++)
        same = redist_spec_mesh_device(a, side, k) ==
               redist_spec_mesh_device(b, side, k);
    return same;
}

/* The first array's spec when every array of the set moves between the
 * same two placed meshes, else NULL: one model (the source mesh's axis
 * links, the meshes' link) then describes every array. */
static const redist_spec_t *shared_meshes(const redist_plan_set_t *set)
{
    const redist_spec_t *s0 = redist_plan_spec(redist_plan_set_plan(set, 0));
    for (int i = 0; s0 && i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s =
            redist_plan_spec(redist_plan_set_plan(set, i));
        if (redist_spec_num_meshes(s) != 2 || !same_side(s, s0, 0) ||
            !same_side(s, s0, 1))
            return NULL;
    }
    return s0;
}

/* Under mpirun (r->rehost, b->host_links): when every array of the set
 * is on one mesh, the same for all, the axes of that mesh whose groups
 * span hosts (discovered now) go on the network level of the set's model
 * and the set is planned again into *hosted (its budget as before); rank
 * 0 prints the hosts line of the one-array run (run.c, rehost).  When
 * every array moves between the same two meshes, the same with the
 * source mesh's axes and the link between the meshes
 * (cli_mpi_spec_host_links).  No plan under that model keeps the agreed
 * one.  Every rank decides alike: the host map is agreed, planning is a
 * pure function of it.  Collective; 0, or -1 on every rank. */
static int rehost(const cli_set_run *r, const cli_set_backend *b, int rank,
                  int64_t nd, redist_plan_set_t **hosted)
{
    const redist_mesh_t *m = shared_mesh(r->set, nd);
    const redist_spec_t *two = shared_meshes(r->set);
    for (int i = 0; m && i < redist_plan_set_num_arrays(r->set); i++)
        if (redist_spec_num_meshes(
                redist_plan_spec(redist_plan_set_plan(r->set, i))) != 1)
            m = NULL; /* axis links name one mesh's axes */
    if (!r->rehost || !b->host_links || (!m && !two))
        return 0;
    redist_cost_model_t cost;
    if (r->popts->cost)
        cost = *r->popts->cost;
    else
        redist_cost_model_default(&cost);
    char axes[512], map[512];
    int64_t nhosts = 0;
    int n = b->host_links(m ? NULL : two, m, &cost, &nhosts, axes,
                          sizeof axes, map, sizeof map);
    if (n <= 0)
        return n;
    redist_plan_options_t o = *r->popts;
    o.cost = &cost;
    o.objective = REDIST_OBJECTIVE_TIME;
    redist_exec_options_t eo = {0};
    if (r->preserve)
        eo.flags |= REDIST_EXEC_PRESERVE_SRC;
    redist_error_t err = REDIST_ERROR_INIT;
    int kept = redist_plan_set_create(r->arrays, &o, NULL, &eo, hosted,
                                      &err) != REDIST_OK;
    if (rank == 0)
        printf("hosts     %lld discovered, host of each rank: %s\n"
               "  network   axes across hosts: %s; %s\n",
               (long long)nhosts, map, axes,
               kept ? "kept the agreed plans (no plan under the network "
                      "level)"
                    : "planned again");
    if (kept) {
        redist_plan_set_free(*hosted);
        *hosted = NULL;
    }
    return 0;
}

/* Every rank waits for every other (a reduction). */
static void barrier(const cli_set_backend *b)
{
    uint64_t v[1] = {0};
    b->max(b->self, v, 1);
}

static void free_blocks(void **l, int n)
{
    for (int i = 0; l && i < n; i++)
        free(l[i]);
    free(l);
}

static void fill(const redist_plan_set_t *set, int rank, void **src)
{
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++)
        if (src[i])
            rd_pattern_fill(redist_plan_spec(redist_plan_set_plan(set, i)),
                            rank, src[i]);
}

/* This rank's blocks of every array (NULL for an empty one): 0, or -1
 * when out of memory. */
static int alloc_blocks(const redist_plan_set_t *set, int rank, void ***src,
                        void ***dst)
{
    int n = redist_plan_set_num_arrays(set);
    *src = calloc((size_t)n, sizeof **src);
    *dst = calloc((size_t)n, sizeof **dst);
    if (!*src || !*dst)
        return -1;
    for (int i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        uint64_t sb = redist_spec_device_bytes(s, 0, rank),
                 db = redist_spec_device_bytes(s, 1, rank);
        if ((sb && !((*src)[i] = malloc((size_t)sb))) ||
            (db && !((*dst)[i] = malloc((size_t)db))))
            return -1;
    }
    fill(set, rank, *src);
    return 0;
}

/* The first bad block of this rank (destination, or a source written
 * despite --preserve-src): 1 after its lines. */
static int check(const redist_plan_set_t *set, const cli_set_backend *b,
                 int rank, void **src, void **dst, int preserve)
{
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, i));
        rd_mismatch mm;
        int bad_dst = dst[i] && rd_pattern_check(s, rank, dst[i], &mm);
        int bad_src = !bad_dst && preserve && src[i] &&
                      rd_pattern_check_src(s, rank, src[i], &mm);
        if (bad_dst || bad_src) {
            printf("  %s %d, array %s:\n", b->unit, rank,
                   redist_spec_name(s));
            cli_run_mismatch(s, rank, &mm, bad_src);
            return 1;
        }
    }
    return 0;
}

/* Prepare and run --repeat times; v[] gets this rank's figures. */
static redist_status_t run_all(const cli_set_run *r, const cli_set_backend *b,
                               const redist_plan_set_t *set,
                               redist_backend_t *be, int rank, void **src,
                               void **dst, uint64_t v[NVAL],
                               redist_error_t *err)
{
    redist_set_prepared_t *p = NULL;
    redist_status_t st = redist_plan_set_prepare(set, be, src, dst, &p, err);
    double best = -1;
    for (uint64_t k = 0; !st && k < r->repeat; k++) {
        if (k && !r->preserve)
            fill(set, rank, src); /* the last run may have used them */
        redist_exec_report_t rep;
        memset(&rep, 0, sizeof rep);
        barrier(b); /* start together: the time is the run's */
        if ((st = redist_set_run(p, &rep, err)))
            break;
        if (rep.scratch_high_water > v[V_HIGH])
            v[V_HIGH] = rep.scratch_high_water;
        v[V_RECV] = rep.recv_bytes;
        v[V_MSGS] = redist_set_prepared_messages(p);
        v[V_WRITES] |= (uint64_t)(rep.writes_src != 0);
        if (best < 0 || rep.seconds < best)
            best = rep.seconds;
    }
    v[V_NS] = best > 0 ? (uint64_t)(best * 1e9) : 0;
    redist_set_prepared_free(p);
    return st;
}

static void report(const cli_set_run *r, const cli_set_backend *b,
                   const redist_plan_set_t *set, int size, const uint64_t *v)
{
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    int n = t.narrays;
    printf("run %s: backend %s, %d %s, %d arrays in %d round%s\n", r->name,
           b->name, size, b->units, n, t.nrounds, t.nrounds == 1 ? "" : "s");
    if (r->shrunk)
        cli_set_shrunk_line(set, r->orig);
    printf("  scratch   %llu bytes per %s (most)",
           (unsigned long long)v[V_HIGH], b->unit);
    if (t.budget_bytes == REDIST_NO_BUDGET)
        printf(", no budget\n");
    else if (v[V_OVER])
        printf(", budget %llu: OVER (first over: %s %d)\n",
               (unsigned long long)t.budget_bytes, b->unit,
               size - (int)v[V_OVER]);
    else
        printf(", budget %llu: within\n", (unsigned long long)t.budget_bytes);
    printf("  traffic   received %llu bytes per %s (most), %llu messages "
           "from a %s (most)\n",
           (unsigned long long)v[V_RECV], b->unit,
           (unsigned long long)v[V_MSGS], b->unit);
    printf("  time      %.3f ms (the slowest %s's best of %llu run%s)\n",
           (double)v[V_NS] * 1e-6, b->unit, (unsigned long long)r->repeat,
           r->repeat == 1 ? "" : "s");
    cli_run_source(r->preserve, (int)v[V_WRITES]);
    if (!v[V_MISMATCH] && !v[V_OVER])
        printf("  result    exact: %d arrays on %d %s\n", n, size, b->units);
}

int cli_launched_run_set(const cli_set_run *r, const cli_set_backend *b)
{
    int rank = 0, size = 0, n = redist_plan_set_num_arrays(r->set);
    b->start(b->self, &rank, &size);
    int64_t nd = redist_spec_num_devices(
        redist_plan_spec(redist_plan_set_plan(r->set, 0)));
    if (nd != size) { /* size is the job's: every rank returns here */
        if (rank == 0)
            fprintf(stderr, "redistplan: run: the set runs on %lld devices: "
                            "run it under %s %lld (this job has %d %s)\n",
                    (long long)nd, b->launcher, (long long)nd, size,
                    b->units);
        b->finish(b->self);
        return CLI_BAD_INPUT;
    }
    redist_error_t err = REDIST_ERROR_INIT;
    const char *axis[1] = {b->unit};
    int64_t sizes[1] = {nd};
    redist_mesh_t *flat = NULL;
    redist_backend_t *be = NULL;
    redist_plan_set_t *own = NULL, *hosted = NULL;
    const redist_plan_set_t *set = r->set;
    if (rehost(r, b, rank, nd, &hosted)) {
        b->finish(b->self);
        return CLI_BAD_INPUT;
    }
    if (hosted)
        set = hosted;
    void **src = NULL, **dst = NULL;
    redist_status_t st = REDIST_OK;
    if (alloc_blocks(set, rank, &src, &dst)) {
        st = err.status = REDIST_ERR_NOMEM;
        snprintf(err.text, sizeof err.text, "out of memory for the blocks "
                 "on %s %d", b->unit, rank);
    }
    if (!st)
        st = redist_mesh_create(1, axis, sizes, &flat, &err);
    /* every rank reaches each collective call below together; a failure
     * is agreed (and said once when every rank failed alike) */
    int bad = cli_launch_failed(st != REDIST_OK, &err, NULL);
    if (!bad) {
        const redist_mesh_t *m = shared_mesh(set, nd);
        st = b->create(b->self, m ? m : flat, &be, &err);
    }
    if (!bad && !st && b->endpoint_plans) {
        redist_exec_options_t eo = {0};
        if (r->preserve)
            eo.flags |= REDIST_EXEC_PRESERVE_SRC;
        /* a shrunk set replays its steps (the same as every rank's) */
        st = r->shrunk
                 ? redist_plan_set_replay(r->set, r->arrays, be, &own, &err)
                 : redist_plan_set_create(r->arrays, r->popts, be, &eo, &own,
                                          &err);
        set = own;
    }
    bad = bad || cli_launch_failed(st != REDIST_OK, &err, NULL);
    uint64_t v[NVAL] = {0};
    if (!bad) {
        st = run_all(r, b, set, be, rank, src, dst, v, &err);
        bad = cli_launch_failed(st != REDIST_OK, &err, NULL);
        if (bad && rank == 0 && b->explain)
            b->explain(b->self, set, &err);
    }
    if (!bad)
        v[V_MISMATCH] = (uint64_t)check(set, b, rank, src, dst, r->preserve);
    redist_plan_set_stats_t t;
    redist_plan_set_stats(set, &t);
    v[V_FAIL] = (uint64_t)bad;
    v[V_OVER] = !v[V_FAIL] && t.budget_bytes != REDIST_NO_BUDGET &&
                        v[V_HIGH] > t.budget_bytes
                    ? (uint64_t)(size - rank)
                    : 0;
    b->max(b->self, v, NVAL);
    if (rank == 0 && !v[V_FAIL])
        report(r, b, set, size, v);
    redist_plan_set_free(own);
    redist_plan_set_free(hosted);
    redist_mesh_free(flat);
    free_blocks(src, n);
    free_blocks(dst, n);
    b->finish(b->self);
    return v[V_FAIL] ? CLI_BAD_INPUT
           : v[V_MISMATCH] || v[V_OVER] ? CLI_MISMATCH
                                        : CLI_OK;
}
