/*
 * A failure in the middle of a run on one rank (include/redist/mpi.h,
 * FAILURE; src/backend/mpi/abort.c), under
 * `mpirun -np 4 abort_mpi MODE K`: rank 1's K-th data-moving op from the
 * start of the run fails (rd_mpi_fail_ops; K = 0: none) in a plan run
 * (MODE plan), the second run of a prepared plan (prepared), a set run
 * whose arrays include one between two meshes (set) or a two-mesh run
 * (meshes).  With K = 0 every rank must end with exact results and exit
 * 0.  With K > 0 the job must end: rank 1 prints "redist: device 1 failed
 * in the middle of a plan" and MPI_Abort ends every rank (abort_mpi.sh
 * checks the message, the non-zero exit and the time under `timeout`).
 * MODE noabort: a plan run with REDIST_MPI_NO_ABORT: rank 1 must return
 * the injected error (it then exits 3 by MPI_Abort itself, as the others
 * wait for it, which the script expects).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"
#include "../../src/testing/pattern.h"

static int rank, nranks, bad;

static void die(const char *what, const redist_error_t *e)
{
    fprintf(stderr, "abort_mpi: rank %d: %s: %s\n", rank, what,
            e ? e->text : "");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static redist_spec_t *spec_of(const char *fm, const char *tm,
                              const char *name, const char *from,
                              const char *fp, const char *to)
{
    redist_spec_t *s = NULL;
    redist_error_t e = REDIST_ERROR_INIT;
    redist_status_t st =
        tm ? redist_spec_from_strings_meshes(fm, tm, "8x12", "f64", from,
                                             fp, to, NULL, NULL, name, 0, &s,
                                             &e)
           : redist_spec_from_strings(fm, "8x12", "f64", from, fp, to, NULL,
                                      NULL, name, 0, &s, &e);
    if (st)
        die("spec", &e);
    return s;
}

/* This rank's blocks of `s`, the source filled. */
static void blocks(const redist_spec_t *s, void **src, void **dst)
{
    uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, rank),
             db = redist_spec_device_bytes(s, REDIST_SIDE_TO, rank);
    *src = sb ? calloc(1, sb) : NULL;
    *dst = db ? calloc(1, db) : NULL;
    if (*src)
        rd_pattern_fill(s, rank, *src);
}

static void check(const redist_spec_t *s, const void *dst)
{
    rd_mismatch mm;
    if (redist_spec_device_bytes(s, REDIST_SIDE_TO, rank) &&
        rd_pattern_check(s, rank, dst, &mm)) {
        fprintf(stderr, "abort_mpi: rank %d: wrong result\n", rank);
        bad = 1;
    }
}

static redist_status_t one_mesh(const char *mode, int k, redist_error_t *e)
{
    /* two reduce_scatter steps: K = 2 fails after one worked */
    redist_spec_t *s = spec_of("x=2,y=2", NULL, "a", "|", "x,y", "x|y");
    redist_plan_t *p = NULL;
    if (redist_plan_create(s, NULL, &p, e))
        die("plan", e);
    redist_mpi_options_t o = {0, 0};
    o.flags = strcmp(mode, "noabort") ? 0 : REDIST_MPI_NO_ABORT;
    redist_mpi_t *mx = NULL;
    redist_status_t st =
        redist_mpi_create(MPI_COMM_WORLD, redist_spec_mesh(s), &o, &mx, e);
    void *src, *dst;
    blocks(s, &src, &dst);
    if (!st && !strcmp(mode, "prepared")) {
        redist_mpi_prepared_t *pr = NULL;
        st = redist_mpi_prepare(mx, p, src, dst, NULL, &pr, e);
        if (!st)
            st = redist_mpi_run(pr, NULL, e);
        if (!st && rank == 1)
            rd_mpi_fail_ops(k);
        if (src) /* the first run may have used it as work space */
            rd_pattern_fill(s, rank, src);
        if (!st)
            st = redist_mpi_run(pr, NULL, e);
        redist_mpi_prepared_free(pr);
    } else if (!st) {
        if (rank == 1)
            rd_mpi_fail_ops(k);
        st = redist_mpi_execute(mx, p, src, dst, NULL, NULL, e);
    }
    if (!st)
        check(s, dst);
    free(src);
    free(dst);
    redist_mpi_free(mx);
    redist_plan_free(p);
    redist_spec_free(s);
    return st;
}

static redist_status_t meshes(int k, redist_error_t *e)
{
    /* a source phase (reduce_scatter), then the transfer: with the sums
     * resolved on the source mesh (by default they would cross in the
     * transfer, one op on rank 1, and K = 2 would never fail) */
    redist_spec_t *s = spec_of("x=2@0-1", "x=2@2-3", "m", "|", "x", "|x");
    redist_plan_t *p = NULL;
    redist_plan_options_t po = {.no_cross_sums = 1};
    if (redist_plan_create(s, &po, &p, e))
        die("plan", e);
    void *src, *dst;
    blocks(s, &src, &dst);
    if (rank == 1)
        rd_mpi_fail_ops(k);
    redist_status_t st =
        redist_mpi_execute_meshes(MPI_COMM_WORLD, p, src, dst, NULL, NULL, e);
    if (!st)
        check(s, dst);
    free(src);
    free(dst);
    redist_plan_free(p);
    redist_spec_free(s);
    return st;
}

static redist_status_t set(int k, redist_error_t *e)
{
    redist_spec_t *sp[3] = {
        spec_of("x=2,y=2", NULL, "a", "x|y", NULL, "y|x"),
        spec_of("x=2,y=2", NULL, "b", "x|", NULL, "|"),
        spec_of("x=2@0-1", "x=2@2-3", "c", "x|", NULL, "|x")};
    redist_arrays_t *a = NULL;
    redist_plan_set_t *set = NULL;
    redist_mpi_t *mx = NULL;
    redist_set_prepared_t *pr = NULL;
    if (redist_arrays_create("set", 3, (const redist_spec_t *const *)sp,
                             REDIST_NO_BUDGET, &a, e) ||
        redist_plan_set_create(a, NULL, NULL, NULL, &set, e))
        die("plan set", e);
    void *src[3], *dst[3];
    for (int i = 0; i < 3; i++)
        blocks(sp[i], &src[i], &dst[i]);
    redist_status_t st = redist_mpi_create(
        MPI_COMM_WORLD, redist_spec_mesh(sp[0]), NULL, &mx, e);
    if (!st)
        st = redist_plan_set_prepare(set, redist_mpi_backend(mx), src, dst,
                                     &pr, e);
    if (!st && rank == 1)
        rd_mpi_fail_ops(k);
    /* two runs (the source refilled between them: it is work space), so
     * that K = 2 fails inside a run however few ops a round combines
     * into (one combined exchange here) */
    for (int run = 0; run < 2 && !st; run++) {
        for (int i = 0; i < 3 && run; i++)
            if (src[i])
                rd_pattern_fill(sp[i], rank, src[i]);
        st = redist_set_run(pr, NULL, e);
    }
    for (int i = 0; i < 3; i++) {
        if (!st)
            check(sp[i], dst[i]);
        free(src[i]);
        free(dst[i]);
        redist_spec_free(sp[i]);
    }
    redist_set_prepared_free(pr);
    redist_mpi_free(mx);
    redist_plan_set_free(set);
    redist_arrays_free(a);
    return st;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 4 || argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 4 abort_mpi "
                            "plan|prepared|set|meshes|noabort K\n");
        MPI_Finalize();
        return 2;
    }
    const char *mode = argv[1];
    int k = atoi(argv[2]);
    redist_error_t e = REDIST_ERROR_INIT;
    redist_status_t st = !strcmp(mode, "set")      ? set(k, &e)
                         : !strcmp(mode, "meshes") ? meshes(k, &e)
                                                   : one_mesh(mode, k, &e);
    if (st && !strcmp(mode, "noabort") && rank == 1 &&
        strstr(e.text, "injected")) {
        fprintf(stderr, "abort_mpi: rank 1 returned: %s\n", e.text);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (st) {
        fprintf(stderr, "abort_mpi: rank %d returned %s: %s\n", rank,
                redist_status_string(st), e.text);
        bad = 1;
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
