/*
 * PE divergence of the OpenSHMEM backend's entry points, under
 * `oshrun -np N diverge_shmem` (N >= 2; PE 1 is the odd one, and its
 * symmetric heap is smaller: SMA_SYMMETRIC_SIZE is set per PE before
 * shmem_init): every check a PE can fail locally (the device count, NULL
 * arguments, flags, options, the work area, a plan differing on one PE,
 * execution flags, the work area or the executor's scratch too large for
 * PE 1's heap only), made to fail or differ on PE 1 only, must end with
 * an error on every PE: PE 1's own reason there, "PE 1 failed: <reason>"
 * or "PE 1 differs" on the others.  After each case every PE runs a plan
 * that must work: the PEs are still in step and their heaps alike.
 * Symmetric buffers on some PEs only are no error: the call runs with
 * private buffers everywhere and its result is exact.
 *
 * Every case runs under a watchdog (tests/common/diverge.h): a PE still
 * inside a case after DV_CASE_SECONDS prints "HANG in case ..." and exits
 * 3, which fails the job at once (a hang is a failure, reported as one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../../src/testing/pattern.h"
#include "../../src/backend/shmem/shmem_internal.h"
#include "../common/diverge.h"

/* The OpenSHMEM backend runs the six steps of the bytes objective, not
 * exchange. */
static const redist_plan_options_t bytes_opts = {
    .objective = REDIST_OBJECTIVE_BYTES};

#define ODD_HEAP "4M"     /* PE 1's symmetric heap */
#define HEAP "64M"        /* the others' */
#define TOO_BIG (8 << 20) /* more than PE 1's heap, less than the others' */

static int me, npes;
static int sum_src, sum_dst, sum_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long sum_sync[SHMEM_REDUCE_SYNC_SIZE];

static void barrier(void) { shmem_barrier_all(); }

static redist_plan_t *plan_of(const char *mesh, const char *shape,
                              const char *dtype, const char *from,
                              const char *to)
{
    redist_spec_t *s = NULL;
    redist_plan_t *p = NULL;
    redist_error_t err;
    if (redist_spec_from_strings(mesh, shape, dtype, from, NULL, to, NULL,
                                 NULL, NULL, 0, &s, &err) ||
        redist_plan_create(s, &bytes_opts, &p, &err)) {
        fprintf(stderr, "diverge_shmem: cannot plan %s %s: %s\n", mesh,
                shape, err.text);
        shmem_global_exit(2);
    }
    redist_spec_free(s);
    return p;
}

/* Run `p` on the exact pattern, with symmetric buffers (sym) or not: it
 * must work on every PE. */
static void works(redist_shmem_t *cx, const redist_plan_t *p, int sym)
{
    const redist_spec_t *s = redist_plan_spec(p);
    size_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    char *src = sym ? shmem_malloc(S) : malloc(S);
    char *dst = sym ? shmem_malloc(T) : malloc(T);
    redist_error_t err;
    rd_mismatch mm;
    redist_error_clear(&err);
    rd_pattern_fill(s, me, src);
    redist_status_t st =
        redist_shmem_execute(cx, p, src, dst, NULL, NULL, &err);
    if (st || rd_pattern_check(s, me, dst, &mm))
        dv_fail("the run after the case failed: %s %s",
             redist_status_string(st), err.text);
    if (sym) {
        shmem_free(dst);
        shmem_free(src);
    } else {
        free(src);
        free(dst);
    }
}

int main(void)
{
    const char *rs = getenv("OMPI_COMM_WORLD_RANK");
    if (!rs)
        rs = getenv("PMI_RANK");
    long r = strtol(rs ? rs : "0", NULL, 10);
    setenv("SMA_SYMMETRIC_SIZE", r == DV_ODD ? ODD_HEAP : HEAP, 1);
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    dv_init("diverge_shmem", "PE", me);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        sum_sync[i] = SHMEM_SYNC_VALUE;
    if (npes < 2 || me != r) {
        if (me == 0)
            fprintf(stderr, "diverge_shmem: needs at least 2 PEs, PE = "
                            "launcher rank\n");
        shmem_finalize();
        return 2;
    }
    char m1[32], m1b[40], m2[32], sh[32], big[32];
    snprintf(m1, sizeof m1, "x=%d", npes);
    snprintf(m1b, sizeof m1b, "x=%d,y=1", npes);
    snprintf(m2, sizeof m2, "x=%d", npes - 1);
    snprintf(sh, sizeof sh, "%dx%d", 2 * npes, 3 * npes);
    /* an all_gather whose result (TOO_BIG f32 bytes per PE) lands in
     * symmetric scratch when the buffers are private */
    snprintf(big, sizeof big, "%dx%d", 2 * npes, TOO_BIG / 4 / (2 * npes));
    redist_plan_t *pg = plan_of(m1, sh, "f32", "x|", "|");
    redist_plan_t *pg_i32 = plan_of(m1, sh, "i32", "x|", "|");
    redist_plan_t *pg_b = plan_of(m1b, sh, "f32", "x|", "|");
    redist_plan_t *ps = plan_of(m2, sh, "f32", "x|", "|");
    redist_plan_t *pbig = plan_of(m1, big, "f32", "x|", "|");
    const redist_mesh_t *mesh = redist_spec_mesh(redist_plan_spec(pg));
    const redist_mesh_t *mesh_b = redist_spec_mesh(redist_plan_spec(pg_b));
    const redist_mesh_t *mesh_small =
        redist_spec_mesh(redist_plan_spec(ps));
    redist_error_t err;
    redist_shmem_t *cx = NULL, *bad = NULL;
    redist_status_t st;
    int odd = me == DV_ODD;

    /* ---- redist_shmem_create */
    static const struct {
        const char *name, *mine;
        redist_status_t want;
    } cr[] = {
        {"create: the mesh's device count is not the job's",
         "the mesh has", REDIST_ERR_INVALID},
        {"create: NULL mesh", "NULL mesh", REDIST_ERR_INVALID},
        {"create: unknown flags", "unknown shmem flags", REDIST_ERR_INVALID},
        {"create: REDIST_SHMEM_NO_PTR", NULL, REDIST_ERR_MISMATCH},
        {"create: another work_bytes", NULL, REDIST_ERR_MISMATCH},
        {"create: a work area below 16 bytes per PE", "the work area must",
         REDIST_ERR_INVALID},
        {"create: another mesh of the same size", NULL,
         REDIST_ERR_MISMATCH},
        {"create: a work area beyond PE 1's symmetric heap",
         "symmetric heap of PE 1", REDIST_ERR_NOMEM},
    };
    for (int k = 0; k < (int)(sizeof cr / sizeof cr[0]); k++) {
        dv_begin(cr[k].name, barrier);
        const redist_mesh_t *m = mesh;
        redist_shmem_options_t o = {0, 0};
        if (k == 7)
            o.work_bytes = TOO_BIG;
        if (odd) {
            switch (k) {
            case 0: m = mesh_small; break;
            case 1: m = NULL; break;
            case 2: o.flags = 0x80u; break;
            case 3: o.flags = REDIST_SHMEM_NO_PTR; break;
            case 4: o.work_bytes = 4096; break;
            case 5: o.work_bytes = 8; break;
            case 6: m = mesh_b; break;
            default: break;
            }
        }
        redist_error_clear(&err);
        st = redist_shmem_create(m, &o, &bad, &err);
        dv_expect(st, &err, cr[k].want, cr[k].mine, NULL);
        if (bad) {
            dv_fail("a failed create returned a context");
            bad = NULL;
        }
        dv_end();
    }

    dv_begin("create: a working context", barrier);
    redist_error_clear(&err);
    if (redist_shmem_create(mesh, NULL, &cx, &err)) {
        dv_fail("create: %s", err.text);
        shmem_global_exit(1);
    }
    works(cx, pg, 1);
    works(cx, pg, 0);
    dv_end();

    /* ---- redist_shmem_execute */
    const redist_spec_t *sg = redist_plan_spec(pg);
    size_t S = redist_spec_src_bytes(sg), T = redist_spec_dst_bytes(sg);
    char *src = shmem_malloc(S), *dst = shmem_malloc(T);
    for (int k = 0; k < DV_EXEC_CASES; k++) {
        dv_begin(dv_exec_cases[k].name, barrier);
        const redist_plan_t *p = pg;
        void *s = src, *d = dst;
        redist_exec_options_t eo = {0};
        dv_exec_args(k, &p, pg_i32, ps, &s, &d, &eo);
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, p, s, d, &eo, NULL, &err);
        dv_expect(st, &err, dv_exec_cases[k].want,
               dv_exec_cases[k].mine ? dv_exec_cases[k].mine : "the mesh has",
               NULL);
        works(cx, pg, 1);
        dv_end();
    }

    dv_begin("execute: symmetric buffers on every PE but PE 1", barrier);
    {
        char *ps1 = odd ? malloc(S) : src, *pd1 = odd ? malloc(T) : dst;
        rd_mismatch mm;
        rd_pattern_fill(sg, me, ps1);
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, pg, ps1, pd1, NULL, NULL, &err);
        if (st || rd_pattern_check(sg, me, pd1, &mm))
            dv_fail("mixed buffers: %s %s", redist_status_string(st),
                 err.text);
        if (odd) {
            free(ps1);
            free(pd1);
        }
    }
    dv_end();

    dv_begin("execute: scratch beyond PE 1's symmetric heap", barrier);
    {
        const redist_spec_t *sb = redist_plan_spec(pbig);
        char *bs = malloc(redist_spec_src_bytes(sb));
        char *bd = malloc(redist_spec_dst_bytes(sb));
        redist_shmem_info_t info;
        redist_shmem_exec_info(cx, pbig, bs, bd, NULL, &info, NULL);
        if (info.exec.scratch_bytes <= TOO_BIG / 2)
            dv_fail("the big all_gather takes %llu bytes of scratch: no case",
                 (unsigned long long)info.exec.scratch_bytes);
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, pbig, bs, bd, NULL, NULL, &err);
        dv_expect(st, &err, REDIST_ERR_NOMEM, "symmetric heap of PE 1", NULL);
        free(bs);
        free(bd);
    }
    works(cx, pg, 1);
    works(cx, pg, 0);
    dv_end();

    dv_begin("redist_plan_execute on the endpoint: another plan", barrier);
    redist_error_clear(&err);
    st = redist_plan_execute(odd ? pg_i32 : pg, redist_shmem_backend(cx, 1),
                             src, dst, NULL, NULL, &err);
    dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
    works(cx, pg, 1);
    dv_end();

    /* a two-mesh plan (x over every PE to y over them in reverse order)
     * on every PE but PE 1, whose call has no plan, or a one-array one:
     * the two-mesh path's leading reduction and the one-array path's
     * differ, and no PE may wait for a collective another never makes */
    {
        redist_spec_t *s2 = NULL;
        redist_plan_t *p2 = NULL;
        if (dv_reversed_plan(npes, &bytes_opts, &s2, &p2, &err))
            dv_fail("two-mesh plan: %s", err.text);
        size_t S2 = redist_spec_device_bytes(s2, REDIST_SIDE_FROM, me);
        size_t T2 = redist_spec_device_bytes(s2, REDIST_SIDE_TO, me);
        char *s2s = shmem_malloc(S2), *s2d = shmem_malloc(T2);

        dv_begin("execute of a two-mesh plan: no plan on PE 1", barrier);
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, odd ? NULL : p2, s2s, s2d, NULL, NULL,
                                  &err);
        dv_expect(st, &err, REDIST_ERR_INVALID, "NULL plan", NULL);
        works(cx, pg, 1);
        dv_end();

        dv_begin("execute: a one-array plan on PE 1, a two-mesh plan on the "
                 "others", barrier);
        redist_error_clear(&err);
        st = redist_shmem_execute(cx, odd ? pg : p2, odd ? src : s2s,
                                  odd ? dst : s2d, NULL, NULL, &err);
        dv_expect(st, &err, REDIST_ERR_MISMATCH, NULL, NULL);
        works(cx, pg, 1);
        if (p2) {
            rd_mismatch mm;
            rd_pattern_fill(s2, me, s2s);
            redist_error_clear(&err);
            st = redist_shmem_execute(cx, p2, s2s, s2d, NULL, NULL, &err);
            if (st || rd_pattern_check(s2, me, s2d, &mm))
                dv_fail("the two-mesh run after the case failed: %s %s",
                        redist_status_string(st), err.text);
        }
        dv_end();
        shmem_free(s2d);
        shmem_free(s2s);
        redist_plan_free(p2);
        redist_spec_free(s2);
    }

    dv_begin("redist_shmem_malloc_all: more than PE 1's heap", barrier);
    {
        int mine = -1;
        void *big = redist_shmem_malloc_all(cx, TOO_BIG, &mine);
        if (big || mine != odd)
            dv_fail("malloc_all beyond PE 1's heap: %p, mine %d", big, mine);
        if (big)
            shmem_free(big);
    }
    works(cx, pg, 1);
    dv_end();

    dv_begin("redist_shmem_malloc_all: within every heap", barrier);
    {
        int mine = -1, none = -1;
        char *a = redist_shmem_malloc_all(cx, 4096, &mine);
        if (!a || mine != 0)
            dv_fail("malloc_all of 4096 bytes: %p, mine %d", (void *)a, mine);
        if (redist_shmem_malloc_all(NULL, 4096, &none) || none != 0 ||
            redist_shmem_malloc_all(cx, 0, NULL))
            dv_fail("malloc_all of a NULL context or 0 bytes is not NULL");
        if (a)
            shmem_free(a);
    }
    works(cx, pg, 1);
    dv_end();

    shmem_free(dst);
    shmem_free(src);
    redist_shmem_free(cx);
    redist_plan_free(pg);
    redist_plan_free(pg_i32);
    redist_plan_free(pg_b);
    redist_plan_free(ps);
    redist_plan_free(pbig);

    sum_src = dv_failures;
    shmem_barrier_all();
    shmem_int_sum_to_all(&sum_dst, &sum_src, 1, 0, 0, npes, sum_wrk,
                         sum_sync);
    if (me == 0)
        printf("diverge_shmem, %d PEs: %d cases, each failing on PE %d "
               "only: %s (%d failed checks)\n",
               npes, dv_ncases, DV_ODD,
               sum_dst ? "FAILED" : "every PE failed with the reason",
               sum_dst);
    int rc = sum_dst ? 1 : 0;
    shmem_finalize();
    return rc;
}
