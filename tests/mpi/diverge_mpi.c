/*
 * Rank divergence of the MPI backend's entry points, under
 * `mpirun -np N diverge_mpi` (N >= 2; rank 1 is the odd one): every check
 * a rank can fail locally (communicator size, NULL arguments, flags,
 * options, a plan differing on one rank or on another mesh, execution
 * flags, max_scratch, an allocation of the context, of the executor's
 * scratch or of the reduction work space failing on one rank; the
 * two-mesh entry points given a one-array plan or bad arguments on one
 * rank, or a context made there while the others prepare a two-mesh
 * plan), made to
 * fail or differ on rank 1 only, must end with an error on every rank:
 * rank 1's own reason there, "device 1 failed: <reason>" or "device 1
 * differs" on the others.  After each case every rank runs a plan that
 * must work (the context and the communicator are still in step).
 *
 * Every case runs under a watchdog (tests/common/diverge.h): a rank still
 * inside a case after DV_CASE_SECONDS prints "HANG in case ..." and exits
 * 3, which fails the job at once (a hang is a failure, reported as one,
 * never a pass).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"
#include "../../src/testing/pattern.h"
#include "../common/diverge.h"

static int rank, nranks;

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static redist_plan_t *plan_of(const char *mesh, const char *shape,
                              const char *dtype, const char *from,
                              const char *fp, const char *to)
{
    redist_spec_t *s = NULL;
    redist_plan_t *p = NULL;
    redist_error_t err;
    if (redist_spec_from_strings(mesh, shape, dtype, from, fp, to, NULL,
                                 NULL, NULL, 0, &s, &err) ||
        redist_plan_create(s, NULL, &p, &err)) {
        fprintf(stderr, "diverge_mpi: cannot plan %s %s: %s\n", mesh, shape,
                err.text);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    redist_spec_free(s);
    return p;
}

/* Run the two-mesh plan `p` on MPI_COMM_WORLD, one-shot, on the exact
 * pattern: it must work everywhere (the ranks are still in step). */
static void works_meshes(const redist_plan_t *p)
{
    const redist_spec_t *s = redist_plan_spec(p);
    uint64_t S = redist_spec_device_bytes(s, REDIST_SIDE_FROM, rank);
    uint64_t T = redist_spec_device_bytes(s, REDIST_SIDE_TO, rank);
    char *src = malloc(S ? S : 1), *dst = malloc(T ? T : 1);
    redist_error_t err;
    rd_mismatch mm;
    redist_error_clear(&err);
    rd_pattern_fill(s, rank, src);
    redist_status_t st = redist_mpi_execute_meshes(MPI_COMM_WORLD, p, src,
                                                   dst, NULL, NULL, &err);
    if (st || rd_pattern_check(s, rank, dst, &mm))
        dv_fail("the two-mesh run after the case failed: %s %s",
                redist_status_string(st), err.text);
    free(src);
    free(dst);
}

static void works(redist_mpi_t *mx, const redist_plan_t *p);

/* The two-mesh entry points with rank DV_ODD failing its checks (or
 * passing a one-array plan, or making a context for one while the others
 * prepare the two-mesh plan p2): every rank fails, none waits for a
 * collective another never makes.  `pg`: a one-array plan on `mesh`;
 * (src, dst): buffers for it. */
static void two_mesh_cases(const redist_plan_t *p2, const redist_plan_t *pg,
                           const redist_mesh_t *mesh, redist_mpi_t *mx,
                           void *src, void *dst)
{
    const redist_spec_t *s = redist_plan_spec(p2);
    uint64_t S = redist_spec_device_bytes(s, REDIST_SIDE_FROM, rank);
    uint64_t T = redist_spec_device_bytes(s, REDIST_SIDE_TO, rank);
    char *s2 = malloc(S ? S : 1), *d2 = malloc(T ? T : 1);
    int odd = rank == DV_ODD;
    redist_error_t err;
    redist_status_t st;
    static const struct {
        const char *name, *mine;
        redist_status_t want;
    } cases[] = {
        {"a one-array plan", "one-mesh spec", REDIST_ERR_INVALID},
        {"NULL plan", "NULL plan", REDIST_ERR_INVALID},
        {"NULL dst", "NULL buffer", REDIST_ERR_INVALID},
        {"src == dst", "the same buffer", REDIST_ERR_INVALID},
        {"unknown flags", "REDIST_EXEC_PRESERVE_SRC only",
         REDIST_ERR_INVALID},
        {"NULL output", "NULL output", REDIST_ERR_INVALID},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int prep = 0; prep < 2; prep++)
        for (int k = 0; k < ncases; k++) {
            char name[128];
            if (!prep && k == ncases - 1)
                continue; /* one-shot: no output */
            snprintf(name, sizeof name, "%s: %s on device 1",
                     prep ? "prepare_meshes" : "execute_meshes",
                     cases[k].name);
            dv_begin(name, barrier);
            const redist_plan_t *p = p2;
            void *a = s2, *b = d2;
            redist_exec_options_t eo = {0};
            redist_mpi_meshes_t *pm = NULL, **out = &pm;
            if (odd)
                switch (k) {
                case 0: p = pg; a = src; b = dst; break;
                case 1: p = NULL; break;
                case 2: b = NULL; break;
                case 3: b = a; break;
                case 4: eo.flags = 0x8000u; break;
                default: out = NULL; break;
                }
            redist_error_clear(&err);
            st = prep ? redist_mpi_prepare_meshes(MPI_COMM_WORLD, p, a, b,
                                                  &eo, out, &err)
                      : redist_mpi_execute_meshes(MPI_COMM_WORLD, p, a, b,
                                                  &eo, NULL, &err);
            dv_expect(st, &err, cases[k].want, cases[k].mine, NULL);
            if (pm)
                dv_fail("a failed prepare returned an object");
            redist_mpi_meshes_free(pm);
            works_meshes(p2);
            works(mx, pg);
            dv_end();
        }

    /* device 1 makes a context for a one-array plan (as redist.execute
     * does for one on a communicator it has no context for yet) while
     * the others prepare the two-mesh plan: both begin with the same
     * agreement over the communicator, which differs */
    dv_begin("a context made on device 1, prepare_meshes on the others",
             barrier);
    redist_error_clear(&err);
    if (odd) {
        redist_mpi_t *x1 = NULL;
        st = redist_mpi_create(MPI_COMM_WORLD, mesh, NULL, &x1, &err);
        if (x1)
            dv_fail("a failed create returned a context");
        redist_mpi_free(x1);
    } else {
        redist_mpi_meshes_t *pm = NULL;
        st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, p2, s2, d2, NULL, &pm,
                                       &err);
        if (pm)
            dv_fail("a failed prepare returned an object");
        redist_mpi_meshes_free(pm);
    }
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    works_meshes(p2);
    works(mx, pg);
    dv_end();
    free(s2);
    free(d2);
}

/* Run `p` through `mx` on the exact pattern: it must work everywhere. */
static void works(redist_mpi_t *mx, const redist_plan_t *p)
{
    const redist_spec_t *s = redist_plan_spec(p);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    char *src = malloc(S ? S : 1), *dst = malloc(T ? T : 1);
    redist_error_t err;
    rd_mismatch mm;
    redist_error_clear(&err);
    rd_pattern_fill(s, rank, src);
    redist_status_t st =
        redist_mpi_execute(mx, p, src, dst, NULL, NULL, &err);
    if (st || rd_pattern_check(s, rank, dst, &mm))
        dv_fail("the run after the case failed: %s %s",
             redist_status_string(st), err.text);
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    dv_init("diverge_mpi", "device", rank);
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "diverge_mpi: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    double t0 = MPI_Wtime();
    char m1[32], m1b[40], m2[32], sh[32];
    snprintf(m1, sizeof m1, "x=%d", nranks);
    snprintf(m1b, sizeof m1b, "x=%d,y=1", nranks);
    snprintf(m2, sizeof m2, "x=%d", nranks - 1);
    snprintf(sh, sizeof sh, "%dx%d", 2 * nranks, 3 * nranks);
    /* all_gather; its i32 twin; the same on another mesh of the same
     * size; a reduce_scatter (work space); an all_to_all (scratch when
     * packed with PRESERVE_SRC); an all_gather on fewer devices */
    redist_plan_t *pg = plan_of(m1, sh, "f32", "x|", NULL, "|");
    redist_plan_t *pg_i32 = plan_of(m1, sh, "i32", "x|", NULL, "|");
    redist_plan_t *pg_b = plan_of(m1b, sh, "f32", "x|", NULL, "|");
    redist_plan_t *pr = plan_of(m1, sh, "f64", "|", "x", "x|");
    redist_plan_t *pa = plan_of(m1, sh, "f32", "x|", NULL, "|x");
    redist_plan_t *ps = plan_of(m2, sh, "f32", "x|", NULL, "|");
    const redist_mesh_t *mesh = redist_spec_mesh(redist_plan_spec(pg));
    const redist_mesh_t *mesh_b = redist_spec_mesh(redist_plan_spec(pg_b));
    const redist_mesh_t *mesh_small =
        redist_spec_mesh(redist_plan_spec(ps));
    redist_error_t err;
    redist_mpi_t *mx = NULL, *bad = NULL;
    redist_status_t st;
    int odd = rank == DV_ODD;

    /* ---- redist_mpi_create */
    dv_begin("create: the mesh's device count is not the communicator's",
             barrier);
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, odd ? mesh_small : mesh, NULL,
                           &bad, &err);
    dv_expect(st, &err, REDIST_ERR_INVALID, "the communicator has", NULL);
    dv_end();

    dv_begin("create: NULL mesh", barrier);
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, odd ? NULL : mesh, NULL, &bad,
                           &err);
    dv_expect(st, &err, REDIST_ERR_INVALID, "NULL mesh", NULL);
    dv_end();

    dv_begin("create: unknown flags", barrier);
    redist_mpi_options_t o = {odd ? 0x40u : 0u, 0};
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, mesh, &o, &bad, &err);
    dv_expect(st, &err, REDIST_ERR_INVALID, "unknown MPI backend flags", NULL);
    dv_end();

    dv_begin("create: other flags", barrier);
    o.flags = odd ? REDIST_MPI_PACKED : 0u;
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, mesh, &o, &bad, &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    dv_end();

    dv_begin("create: other max_scratch", barrier);
    o.flags = 0;
    o.max_scratch = odd ? 4096 : 0;
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, mesh, &o, &bad, &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    dv_end();

    dv_begin("create: another mesh of the same size", barrier);
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, odd ? mesh_b : mesh, NULL, &bad,
                           &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    dv_end();

    dv_begin("create: out of memory", barrier);
    if (odd)
        rd_mpi_fail_allocs(1);
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, mesh, NULL, &bad, &err);
    rd_mpi_fail_allocs(0);
    dv_expect(st, &err, REDIST_ERR_NOMEM, "out of memory", NULL);
    dv_end();
    if (bad)
        dv_fail("a failed create returned a context");

    dv_begin("create: a working context", barrier);
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, mesh, NULL, &mx, &err)) {
        dv_fail("create: %s", err.text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    works(mx, pg);
    dv_end();

    /* ---- redist_mpi_execute */
    const redist_spec_t *sg = redist_plan_spec(pg);
    uint64_t S = redist_spec_src_bytes(sg), T = redist_spec_dst_bytes(sg);
    char *src = calloc(1, S), *dst = calloc(1, T);
    const redist_spec_t *sr = redist_plan_spec(pr);
    char *rsrc = calloc(1, redist_spec_src_bytes(sr));
    char *rdst = calloc(1, redist_spec_dst_bytes(sr));
    const redist_spec_t *sa = redist_plan_spec(pa);
    char *asrc = calloc(1, redist_spec_src_bytes(sa));
    char *adst = calloc(1, redist_spec_dst_bytes(sa));

    for (int k = 0; k < DV_EXEC_CASES; k++) {
        dv_begin(dv_exec_cases[k].name, barrier);
        const redist_plan_t *p = pg;
        void *s = src, *d = dst;
        redist_exec_options_t eo = {0};
        dv_exec_args(k, &p, pg_i32, pg_b, &s, &d, &eo);
        redist_error_clear(&err);
        st = redist_mpi_execute(mx, p, s, d, &eo, NULL, &err);
        dv_expect(st, &err, dv_exec_cases[k].want,
               dv_exec_cases[k].mine ? dv_exec_cases[k].mine : "axis sizes",
               NULL);
        works(mx, pg);
        dv_end();
    }

    dv_begin("execute: set_options differ (packed)", barrier);
    o.flags = odd ? REDIST_MPI_PACKED : 0u;
    o.max_scratch = 0;
    redist_mpi_set_options(mx, &o, NULL);
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, pg, src, dst, NULL, NULL, &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    o.flags = 0;
    redist_mpi_set_options(mx, &o, NULL);
    works(mx, pg);
    dv_end();

    dv_begin("execute: max_scratch below the least on one rank", barrier);
    redist_mpi_info_t info;
    redist_mpi_exec_info(mx, pr, NULL, &info, NULL);
    o.max_scratch = odd ? 1 : 0;
    redist_mpi_set_options(mx, &o, NULL);
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, pr, rsrc, rdst, NULL, NULL, &err);
    if (info.min_scratch_bytes > 1)
        dv_expect(st, &err, REDIST_ERR_LIMIT, "below the least", NULL);
    else
        dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    o.max_scratch = 0;
    redist_mpi_set_options(mx, &o, NULL);
    works(mx, pr);
    dv_end();

    /* a bound below the source block: the reduce_scatter runs as the
     * collective through a work buffer (its lowered form's slabs, the
     * whole block, would not fit; execute.c) */
    dv_begin("execute: the reduction work space cannot be allocated", barrier);
    o.max_scratch = redist_spec_src_bytes(redist_plan_spec(pr)) / 2;
    redist_mpi_set_options(mx, &o, NULL);
    redist_mpi_exec_info(mx, pr, NULL, &info, NULL);
    if (!info.work_bytes)
        dv_fail("the reduce_scatter plan needs no work space: no case");
    if (odd)
        rd_mpi_fail_allocs(1);
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, pr, rsrc, rdst, NULL, NULL, &err);
    rd_mpi_fail_allocs(0);
    dv_expect(st, &err, REDIST_ERR_NOMEM, "work space", NULL);
    o.max_scratch = 0;
    redist_mpi_set_options(mx, &o, NULL);
    works(mx, pr);
    dv_end();

    dv_begin("execute: the executor's scratch cannot be allocated", barrier);
    o.flags = REDIST_MPI_PACKED;
    redist_mpi_set_options(mx, &o, NULL);
    redist_exec_options_t keep = {REDIST_EXEC_PRESERVE_SRC};
    redist_mpi_exec_info(mx, pa, &keep, &info, NULL);
    if (!info.exec.scratch_bytes)
        dv_fail("the packed all_to_all needs no scratch: no case");
    if (odd)
        rd_mpi_fail_allocs(1);
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, pa, asrc, adst, &keep, NULL, &err);
    rd_mpi_fail_allocs(0);
    dv_expect(st, &err, REDIST_ERR_NOMEM, "scratch", NULL);
    works(mx, pa);
    o.flags = 0;
    redist_mpi_set_options(mx, &o, NULL);
    dv_end();

    dv_begin("redist_plan_execute on the endpoint: another plan", barrier);
    redist_error_clear(&err);
    st = redist_plan_execute(odd ? pg_i32 : pg, redist_mpi_backend(mx), src,
                             dst, NULL, NULL, &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    works(mx, pg);
    dv_end();

    /* ---- two meshes: x over every rank to y over them in reverse */
    {
        redist_spec_t *s2 = NULL;
        redist_plan_t *p2 = NULL;
        if (dv_reversed_plan(nranks, NULL, &s2, &p2, &err)) {
            fprintf(stderr, "diverge_mpi: two-mesh plan: %s\n", err.text);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        two_mesh_cases(p2, pg, mesh, mx, src, dst);
        redist_plan_free(p2);
        redist_spec_free(s2);
    }

    free(src);
    free(dst);
    free(rsrc);
    free(rdst);
    free(asrc);
    free(adst);
    redist_mpi_free(mx);
    redist_plan_free(pg);
    redist_plan_free(pg_i32);
    redist_plan_free(pg_b);
    redist_plan_free(pr);
    redist_plan_free(pa);
    redist_plan_free(ps);

    int total = 0;
    MPI_Allreduce(&dv_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("diverge_mpi, %d ranks: %d cases, each failing on rank %d "
               "only: %s (%d failed checks); %.2f s\n",
               nranks, dv_ncases, DV_ODD,
               total ? "FAILED" : "every rank failed with the reason",
               total, MPI_Wtime() - t0);
    MPI_Finalize();
    return total ? 1 : 0;
}
