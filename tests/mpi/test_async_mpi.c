/*
 * Non-blocking runs of prepared two-mesh objects and prepared sets over
 * MPI (redist_mpi_start_meshes .. _wait_meshes, redist_set_start ..
 * _wait; include/redist/mpi.h, exec.h):
 *   mpirun -np N test_async_mpi [overlap|single]
 * For a two-mesh plan (x=2 on ranks 0, 1 to y=2 on ranks 1, 0; ranks
 * from 2 on are in neither mesh) and a set of two all_to_all arrays on
 * every rank: the misuse cases fail on every rank alike (wait or test
 * with none started, start or run while in flight, a second wait); a
 * started run, polled with test, leaves the target exact; so does a run
 * started and then freed (free waits for it).  `overlap`: bigger arrays
 * and the hidden fraction of a sleeping compute phase (at least 50%,
 * the least of 5, up to three tries).  `single`: MPI_Init only: the objects
 * say they cannot start, and start fails on every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "../common/async_check.h"
#include "../../src/testing/pattern.h"

static int rank, nranks, failures, checks;

#include "../common/mpi_check.h"

static void barrier(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
}

static double max_of(double v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static int sum_of(int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return v;
}

static ac_env env = {0, barrier, max_of, sum_of};

static redist_status_t m_run(void *p, redist_exec_report_t *r,
                             redist_error_t *err)
{
    return redist_mpi_run_meshes(p, r, err);
}

static redist_status_t m_start(void *p, redist_error_t *err)
{
    return redist_mpi_start_meshes(p, err);
}

static redist_status_t m_test(void *p, int *done, redist_error_t *err)
{
    return redist_mpi_test_meshes(p, done, err);
}

static redist_status_t m_wait(void *p, redist_exec_report_t *r,
                              redist_error_t *err)
{
    return redist_mpi_wait_meshes(p, r, err);
}

static int m_async(const void *p)
{
    return redist_mpi_meshes_async(p);
}

static const redist_plan_t *g_plan;
static void *g_src[2], *g_dst[2];

static redist_status_t meshes_again(void **p)
{
    redist_mpi_meshes_t *m = NULL;
    redist_status_t st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, g_plan,
                                                   g_src[0], g_dst[0], NULL,
                                                   &m, NULL);
    *p = m;
    return st;
}

static void meshes_drop(void *p)
{
    redist_mpi_meshes_free(p);
}

static void two_mesh(int single, int overlap)
{
    int64_t rows = overlap ? 4096 : 128, cols = overlap ? 4096 : 256;
    redist_spec_t *s = ac_two_spec(rows, cols);
    redist_plan_t *plan = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    if (!s || redist_plan_create(s, NULL, &plan, &err)) {
        CHECK(0, "two-mesh plan: %s", err.text);
        redist_spec_free(s);
        return;
    }
    uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, rank);
    uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, rank);
    g_plan = plan;
    g_src[0] = sb ? malloc(sb) : NULL;
    g_dst[0] = db ? malloc(db) : NULL;
    if (sb)
        rd_pattern_fill(s, rank, g_src[0]);
    ac_obj o = {"two-mesh object", NULL, m_run, m_start, m_test, m_wait,
                m_async};
    if (meshes_again(&o.p)) {
        CHECK(0, "prepare_meshes failed");
    } else {
        const redist_spec_t *specs[1] = {s};
        ac_case c = {single, overlap, 1, specs, g_src, g_dst, &db, meshes_again,
                     meshes_drop};
        failures += ac_check(&env, &o, &c, &checks);
        redist_mpi_meshes_free(o.p);
    }
    free(g_src[0]);
    free(g_dst[0]);
    redist_plan_free(plan);
    redist_spec_free(s);
}

static const redist_plan_set_t *g_set;
static redist_backend_t *g_be;

static redist_status_t set_again(void **p)
{
    redist_set_prepared_t *q = NULL;
    redist_status_t st = redist_plan_set_prepare(g_set, g_be, g_src, g_dst,
                                                 &q, NULL);
    *p = q;
    return st;
}

static void set_drop(void *p)
{
    redist_set_prepared_free(p);
}

static void set_case(int single, int overlap)
{
    int64_t rows = (overlap ? 1024 : 32) * nranks;
    int64_t cols = (overlap ? 2048 : 64) * nranks;
    redist_spec_t *s[2] = {ac_a2a_spec(nranks, rows, cols, "a"),
                           ac_a2a_spec(nranks, rows, cols, "b")};
    redist_arrays_t *arrays = NULL;
    redist_plan_set_t *set = NULL;
    redist_mpi_t *mx = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    if (!s[0] || !s[1] ||
        redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s[0]), NULL, &mx,
                          &err) ||
        redist_arrays_create("pair", 2, (const redist_spec_t *const *)s,
                             REDIST_NO_BUDGET, &arrays, &err) ||
        redist_plan_set_create(arrays, NULL, redist_mpi_backend(mx), NULL,
                               &set, &err)) {
        CHECK(0, "set: %s", err.text);
    } else {
        uint64_t db[2];
        for (int i = 0; i < 2; i++) {
            uint64_t sb = redist_spec_device_bytes(s[i], REDIST_SIDE_FROM,
                                                   rank);
            db[i] = redist_spec_device_bytes(s[i], REDIST_SIDE_TO, rank);
            g_src[i] = malloc(sb);
            g_dst[i] = malloc(db[i]);
            rd_pattern_fill(s[i], rank, g_src[i]);
        }
        g_set = set;
        g_be = redist_mpi_backend(mx);
        void *p = NULL;
        if (set_again(&p)) {
            CHECK(0, "set prepare failed");
        } else {
            ac_obj o = ac_set_obj(p, "set of two arrays");
            const redist_spec_t *specs[2] = {s[0], s[1]};
            ac_case c = {single, overlap, 2, specs, g_src, g_dst, db, set_again,
                         set_drop};
            failures += ac_check(&env, &o, &c, &checks);
            redist_set_prepared_free(o.p);
        }
        for (int i = 0; i < 2; i++) {
            free(g_src[i]);
            free(g_dst[i]);
        }
    }
    redist_plan_set_free(set);
    redist_arrays_free(arrays);
    redist_mpi_free(mx);
    redist_spec_free(s[0]);
    redist_spec_free(s[1]);
}

int main(int argc, char **argv)
{
    int single = argc > 1 && !strcmp(argv[1], "single");
    int overlap = argc > 1 && !strcmp(argv[1], "overlap");
    int provided = MPI_THREAD_SINGLE;
    if (single)
        MPI_Init(&argc, &argv);
    else
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    env.rank = rank;
    double t0 = MPI_Wtime();
    if (!single && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("no MPI_THREAD_MULTIPLE: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (nranks >= 2)
        two_mesh(single, overlap);
    set_case(single, overlap);
    int total = sum_of(failures);
    if (rank == 0)
        printf("mpi async, %d ranks%s: %d checks, %d failed; %.2f s\n",
               nranks, single ? " (MPI_Init)" : "", checks, total,
               MPI_Wtime() - t0);
    MPI_Finalize();
    return total ? 1 : 0;
}
