/*
 * Non-blocking runs of prepared two-mesh objects and prepared sets over
 * OpenSHMEM (redist_shmem_start_meshes .. _wait_meshes, redist_set_start
 * .. _wait; include/redist/shmem.h, exec.h):
 *   oshrun -np N test_async_shmem [overlap|single]
 * The checks of tests/mpi/test_async_mpi.c (tests/common/async_check.c)
 * on PEs: a two-mesh plan (x=2 on PEs 0, 1 to y=2 on PEs 1, 0; PEs from
 * 2 on are in neither mesh, so the job must have 2 PEs: PE d is device
 * d) and a set of two all_to_all arrays on every PE, planned for the
 * context's endpoint; the two-mesh plan once more with its transfer
 * streamed through a small window.  `single`: shmem_init only.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/shmem.h"
#include "../common/async_check.h"
#include "../common/overlap.h"
#include "../../src/backend/shmem/shmem_internal.h"
#include "../../src/testing/pattern.h"

static int rank, nranks, failures, checks;
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long l_in, l_out, l_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double d_in, d_out, d_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void barrier(void)
{
    shmem_barrier_all();
}

static double max_of(double v)
{
    d_in = v;
    shmem_barrier_all();
    shmem_double_max_to_all(&d_out, &d_in, 1, 0, 0, nranks, d_wrk, psync);
    shmem_barrier_all();
    return d_out;
}

static int sum_of(int v)
{
    l_in = v;
    shmem_barrier_all();
    shmem_long_sum_to_all(&l_out, &l_in, 1, 0, 0, nranks, l_wrk, psync);
    shmem_barrier_all();
    return (int)l_out;
}

static ac_env env = {0, barrier, max_of, sum_of};

static redist_status_t m_run(void *p, redist_exec_report_t *r,
                             redist_error_t *err)
{
    return redist_shmem_run_meshes(p, r, err);
}

static redist_status_t m_start(void *p, redist_error_t *err)
{
    return redist_shmem_start_meshes(p, err);
}

static redist_status_t m_test(void *p, int *done, redist_error_t *err)
{
    return redist_shmem_test_meshes(p, done, err);
}

static redist_status_t m_wait(void *p, redist_exec_report_t *r,
                              redist_error_t *err)
{
    return redist_shmem_wait_meshes(p, r, err);
}

static int m_async(const void *p)
{
    return redist_shmem_meshes_async(p);
}

static redist_shmem_t *g_ctx;
static const redist_plan_t *g_plan;
static const redist_plan_set_t *g_set;
static void *g_src[2], *g_dst[2];

static redist_status_t meshes_again(void **p)
{
    redist_shmem_meshes_t *m = NULL;
    redist_status_t st = redist_shmem_prepare_meshes(g_ctx, g_plan, g_src[0],
                                                     g_dst[0], NULL, &m,
                                                     NULL);
    *p = m;
    return st;
}

static void meshes_drop(void *p)
{
    redist_shmem_meshes_free(p);
}

static void two_mesh(int single, int overlap)
{
    int64_t rows = overlap ? 2048 : 128, cols = overlap ? 4096 : 256;
    redist_spec_t *s = ac_two_spec(rows, cols);
    redist_plan_t *plan = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    if (!s || redist_plan_create(s, NULL, &plan, &err) ||
        redist_shmem_create(redist_spec_mesh(s), NULL, &g_ctx, &err)) {
        fprintf(stderr, "PE %d: two-mesh plan: %s\n", rank, err.text);
        failures++;
    } else {
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
            fprintf(stderr, "PE %d: prepare_meshes failed\n", rank);
            failures++;
        } else {
            const redist_spec_t *specs[1] = {s};
            ac_case c = {single, overlap, 1, specs, g_src, g_dst, &db,
                         meshes_again, meshes_drop};
            failures += ac_check(&env, &o, &c, &checks);
            redist_shmem_meshes_free(o.p);
        }
        free(g_src[0]);
        free(g_dst[0]);
    }
    redist_shmem_free(g_ctx);
    g_ctx = NULL;
    redist_plan_free(plan);
    redist_spec_free(s);
}

static redist_status_t set_again(void **p)
{
    redist_set_prepared_t *q = NULL;
    redist_status_t st = redist_plan_set_prepare(
        g_set, redist_shmem_backend(g_ctx, 0), g_src, g_dst, &q, NULL);
    *p = q;
    return st;
}

static void set_drop(void *p)
{
    redist_set_prepared_free(p);
}

static void set_case(int single, int overlap)
{
    int64_t rows = (overlap ? 512 : 32) * nranks;
    int64_t cols = (overlap ? 2048 : 64) * nranks;
    redist_spec_t *s[2] = {ac_a2a_spec(nranks, rows, cols, "a"),
                           ac_a2a_spec(nranks, rows, cols, "b")};
    redist_arrays_t *arrays = NULL;
    redist_plan_set_t *set = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    if (!s[0] || !s[1] ||
        redist_shmem_create(redist_spec_mesh(s[0]), NULL, &g_ctx, &err) ||
        redist_arrays_create("pair", 2, (const redist_spec_t *const *)s,
                             REDIST_NO_BUDGET, &arrays, &err) ||
        redist_plan_set_create(arrays, NULL, redist_shmem_backend(g_ctx, 0),
                               NULL, &set, &err)) {
        fprintf(stderr, "PE %d: set: %s\n", rank, err.text);
        failures++;
    } else {
        uint64_t db[2];
        for (int i = 0; i < 2; i++) { /* the same sizes on every PE */
            uint64_t sb = redist_spec_device_bytes(s[i], REDIST_SIDE_FROM,
                                                   rank);
            db[i] = redist_spec_device_bytes(s[i], REDIST_SIDE_TO, rank);
            g_src[i] = shmem_malloc(sb);
            g_dst[i] = shmem_malloc(db[i]);
            rd_pattern_fill(s[i], rank, g_src[i]);
        }
        g_set = set;
        void *p = NULL;
        if (set_again(&p)) {
            fprintf(stderr, "PE %d: set prepare failed\n", rank);
            failures++;
        } else {
            ac_obj o = ac_set_obj(p, "set of two arrays");
            const redist_spec_t *specs[2] = {s[0], s[1]};
            ac_case c = {single, overlap, 2, specs, g_src, g_dst, db, set_again,
                         set_drop};
            failures += ac_check(&env, &o, &c, &checks);
            redist_set_prepared_free(o.p);
        }
        for (int i = 1; i >= 0; i--) {
            shmem_free(g_dst[i]);
            shmem_free(g_src[i]);
        }
    }
    redist_plan_set_free(set);
    redist_arrays_free(arrays);
    redist_shmem_free(g_ctx);
    g_ctx = NULL;
    redist_spec_free(s[0]);
    redist_spec_free(s[1]);
}

int main(int argc, char **argv)
{
    int single = argc > 1 && !strcmp(argv[1], "single");
    int overlap = argc > 1 && !strcmp(argv[1], "overlap");
    int provided = SHMEM_THREAD_SINGLE;
    if (single)
        shmem_init();
    else
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    rank = shmem_my_pe();
    nranks = shmem_n_pes();
    env.rank = rank;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    double t0 = ov_now();
    if (!single && provided < SHMEM_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("no SHMEM_THREAD_MULTIPLE: skipped\n");
        shmem_finalize();
        return 77;
    }
    if (nranks == 2) {
        two_mesh(single, overlap);
        /* again, its transfer streamed through a window of 1 KiB
         * (src/exec/set_stream.c), without the overlap's timing */
        rd_shmem_stream_cap(1024);
        two_mesh(single, 0);
        rd_shmem_stream_cap(0);
    }
    set_case(single, overlap);
    int total = sum_of(failures);
    if (rank == 0)
        printf("shmem async, %d PEs%s: %d checks, %d failed; %.2f s\n",
               nranks, single ? " (shmem_init)" : "", checks, total,
               ov_now() - t0);
    shmem_finalize();
    return total ? 1 : 0;
}
