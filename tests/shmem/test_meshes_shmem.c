/*
 * Two-mesh plans over OpenSHMEM (redist_shmem_execute, and one case in
 * two prepared with redist_shmem_prepare_meshes and run twice on the
 * same buffers; doc/meshes.md): random two-mesh specs on exactly the
 * job's PEs (disjoint, overlapping, reshaped, scattered meshes; uneven;
 * pending sums; every PE draws the same), planned under both objectives,
 * REDIST_EXEC_PRESERVE_SRC one time in three.  Every PE checks its
 * target block exactly, its source intact under PRESERVE_SRC, its
 * scratch high-water mark within the promise and the promise equal to
 * redist_shmem_exec_info's, and within max(src_d, dst_d) where the
 * layout makes that certain (bound_certain).  Every other pair of cases
 * runs on private buffers (malloc'ed blocks, NULL outside a mesh), the
 * others on symmetric ones (every PE the same shmem_malloc'ed objects,
 * as `redistplan run` passes them); the counts of runs over the bound
 * are printed for each.  Then half as many cases again with the
 * streamed transfers' windows capped at one element (a fill per element:
 * src/exec/set_stream.c), checked the same but not counted.  Then PE 0
 * passes another plan, and one PE a NULL plan: both must fail on every
 * PE, nothing hanging; last, PE 1 fails in the
 * middle of a prepared run (an injected failure at the transfer): it
 * fails, every PE returns (the others fail or are exact), and every PE's
 * next call on the context fails.
 * Arguments: CASES [SEED].  Exit 0 when this PE passed.  With
 * RP_SHOW_OVER set, each run on symmetric buffers over the bound is
 * printed (PE, case, flags, blocks, steps); with RP_SHOW_PLAN too, its
 * plan's JSON.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/shmem.h"
#include "../common/random_plan.h"
#include "../../src/testing/pattern.h"
#include "../../src/backend/shmem/shmem_internal.h"

static rp_rng rng = {0x9e3779b97f4a7c15ULL};
static int rank, size, fails;
/* this PE's runs over max(src_d, dst_d), its runs, and those checked
 * against it: [0] private buffers, [1] symmetric ones */
static int over[2], devruns[2], bounded[2];
static int tally = 1; /* count the runs in those */

/* Where does every PE hold at most max(src_d, dst_d)?  A PE holds the
 * symmetric part of the layout (src/exec/set_two.c, SOLO) and its
 * private blocks.  With no steps but the transfer:
 *  - on symmetric buffers (every PE the same objects) with no sums
 *    crossing, the R block can be the destination itself: the
 *    symmetric part is empty and no S block is allocated (S is the
 *    source), so every PE holds nothing, even blocks or not (2: every
 *    PE);
 *  - else, with any buffers, sums crossing or not, even or uneven, the
 *    transfer can stream through a window (src/exec/set_stream.c) no
 *    larger than the least non-empty max(src_d, dst_d), R being the
 *    destination and S the source: every PE with a block holds the
 *    window only, and a PE without one is over with any layout (it has
 *    no room for the symmetric part), so the layout with the fewest
 *    PEs over the bound keeps every PE with a block within it (1).
 * With a phase A of one reduce_scatter and no phase B, on symmetric
 * buffers: the reduce-scatter runs whole (src/backend/shmem/
 * reduce_boxed.c), reading the members' source blocks in place, with
 * no executor buffer and no work space, so a PE holds at most an S
 * block, the largest one where the symmetric part holds it: every PE
 * whose max(src_d, dst_d) is at least the largest S block (3; packed,
 * as before, 15 runs of shmem-meshes-np5 were over it), unless the
 * transfer sums pending contributions (its slabs, prod|P| R blocks, lie
 * beside: u32[1] over a=2,b=2 to two PEs, summed over b, held 8 bytes on
 * 4 at 5 PEs, seed 1007, case 10). */
static int bound_certain(const redist_plan_t *plan, int no_cross_sums,
                         int sym)
{
    redist_step_view_t v;
    if (sym && redist_plan_num_steps(plan) == 2 &&
        !redist_plan_step(plan, 0, &v) &&
        v.op == REDIST_OP_REDUCE_SCATTER && v.mesh == 0 && !v.after.partial)
        return 3;
    if (redist_plan_num_steps(plan) != 1)
        return 0;
    return sym && no_cross_sums ? 2 : 1;
}

/* The most bytes of any device's block after the first step (bound_certain
 * 3: the largest S block). */
static uint64_t s_most(const redist_plan_t *plan)
{
    redist_step_view_t v;
    return redist_plan_step(plan, 0, &v) ? UINT64_MAX : v.local_bytes;
}

/* The name of the plan's first step (for messages). */
static const char *first_op(const redist_plan_t *plan)
{
    redist_step_view_t v;
    return redist_plan_step(plan, 0, &v) ? "-" : redist_op_name(v.op);
}

/* The most bytes of a side's block on any device. */
static uint64_t most_bytes(const redist_spec_t *spec, int side)
{
    uint64_t most = 0;
    for (int64_t d = 0; d < redist_spec_num_devices(spec); d++) {
        uint64_t b = redist_spec_device_bytes(spec, side, d);
        most = b > most ? b : most;
    }
    return most;
}

/* One run (prepared: twice) of `plan`; 0 when right on this PE.
 * `certain`: bound_certain.  `sym`: every PE passes the same symmetric
 * src and dst objects (as `redistplan run` does), else malloc'ed blocks
 * (NULL for an empty one). */
static int one_run(redist_shmem_t *ctx, const redist_plan_t *plan,
                   unsigned flags, int prepared, int c, int certain, int sym)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank);
    uint64_t db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
    void *src, *dst;
    if (sym) { /* collective; at least one byte: a non-NULL object */
        uint64_t ms = most_bytes(spec, REDIST_SIDE_FROM);
        uint64_t md = most_bytes(spec, REDIST_SIDE_TO);
        src = redist_shmem_malloc_all(ctx, ms ? ms : 1, NULL);
        dst = redist_shmem_malloc_all(ctx, md ? md : 1, NULL);
        if (!src || !dst) {
            fprintf(stderr, "PE %d case %d: no symmetric buffers\n", rank,
                    c);
            shmem_free(src);
            shmem_free(dst);
            return 1;
        }
    } else {
        src = sb ? malloc(sb) : NULL;
        dst = db ? malloc(db) : NULL;
    }
    redist_exec_options_t xo = {flags};
    redist_error_t e = REDIST_ERROR_INIT;
    redist_shmem_info_t info;
    redist_shmem_meshes_t *m = NULL;
    redist_status_t st = redist_shmem_exec_info(ctx, plan, src, dst, &xo,
                                                &info, &e);
    if (!st && prepared)
        st = redist_shmem_prepare_meshes(ctx, plan, src, dst, &xo, &m, &e);
    int bad = 0, over_bound = 0; /* the latter: every PE runs on */
    for (int k = 0; k < (prepared ? 2 : 1) && !st && !bad; k++) {
        if (src)
            rd_pattern_fill(spec, rank, src);
        if (db)
            memset(dst, 0xEE, db);
        redist_exec_report_t rep;
        st = prepared ? redist_shmem_run_meshes(m, &rep, &e)
                      : redist_shmem_execute(ctx, plan, src, dst, &xo, &rep,
                                             &e);
        if (st)
            break;
        rd_mismatch mm;
        if (db && rd_pattern_check(spec, rank, dst, &mm)) {
            fprintf(stderr, "PE %d case %d run %d: element %llu: expected "
                            "%s, got %s\n",
                    rank, c, k, (unsigned long long)mm.local_index,
                    mm.expected, mm.got);
            bad = 1;
        }
        if (sb && (flags & REDIST_EXEC_PRESERVE_SRC) &&
            rd_pattern_check_src(spec, rank, src, &mm)) {
            fprintf(stderr, "PE %d case %d: the source was written\n", rank,
                    c);
            bad = 1;
        }
        devruns[sym] += tally;
        over[sym] += tally && rep.scratch_high_water > (sb > db ? sb : db);
        if (tally && sym)
            rp_show_over(plan, "PE", rank, c, flags, sb, db,
                         rep.scratch_high_water);
        if (certain == 2 || (certain == 1 && (sb || db)) ||
            (certain == 3 && (sb > db ? sb : db) >= s_most(plan))) {
            bounded[sym]++;
            if (rep.scratch_high_water > (sb > db ? sb : db)) {
                fprintf(stderr, "PE %d case %d (%s buffers, %d steps, "
                                "step 0 %s): scratch %llu over "
                                "max(src_d, dst_d) %llu (%llu, %llu)\n",
                        rank, c, sym ? "symmetric" : "private",
                        redist_plan_num_steps(plan), first_op(plan),
                        (unsigned long long)rep.scratch_high_water,
                        (unsigned long long)(sb > db ? sb : db),
                        (unsigned long long)sb, (unsigned long long)db);
                over_bound = 1;
            }
        }
        if (rep.scratch_high_water > rep.scratch_bytes ||
            rep.scratch_bytes != info.scratch_bytes) {
            fprintf(stderr, "PE %d case %d: scratch %llu, promised %llu, "
                            "exec_info %llu\n",
                    rank, c, (unsigned long long)rep.scratch_high_water,
                    (unsigned long long)rep.scratch_bytes,
                    (unsigned long long)info.scratch_bytes);
            bad = 1;
        }
    }
    if (st) {
        fprintf(stderr, "PE %d case %d: %s\n", rank, c, e.text);
        bad = 1;
    }
    redist_shmem_meshes_free(m);
    if (sym) { /* collective, in the order of their allocation */
        shmem_free(dst);
        shmem_free(src);
    } else {
        free(src);
        free(dst);
    }
    return bad || over_bound;
}

/* A call that must fail on every PE: PE `who` passes `odd` instead of
 * `plan`.  0 when it failed here. */
static int must_fail(redist_shmem_t *ctx, const redist_plan_t *plan,
                     const redist_plan_t *odd, int who, const char *what)
{
    const redist_plan_t *p = rank == who ? odd : plan;
    const redist_spec_t *spec = redist_plan_spec(plan);
    uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank);
    uint64_t db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
    /* room for either plan's blocks */
    void *src = malloc(sb + 4096), *dst = malloc(db + 4096);
    redist_error_t e = REDIST_ERROR_INIT;
    redist_shmem_meshes_t *m = NULL;
    redist_status_t st =
        redist_shmem_prepare_meshes(ctx, p, src, dst, NULL, &m, &e);
    redist_shmem_meshes_free(m);
    free(src);
    free(dst);
    if (st == REDIST_OK || !e.text[0]) {
        fprintf(stderr, "PE %d: %s: status %d, \"%s\"\n", rank, what,
                (int)st, e.text);
        return 1;
    }
    return 0;
}

/* PE 1 fails at its first exchange of a prepared run; 0 when right here
 * (the context is failed afterwards). */
static int fail_midway(redist_shmem_t *ctx, const redist_plan_t *plan)
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank);
    uint64_t db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
    void *src = sb ? malloc(sb) : NULL, *dst = db ? malloc(db) : NULL;
    if (src)
        rd_pattern_fill(spec, rank, src);
    redist_error_t e = REDIST_ERROR_INIT;
    redist_shmem_meshes_t *m = NULL;
    redist_status_t st =
        redist_shmem_prepare_meshes(ctx, plan, src, dst, NULL, &m, &e);
    int bad = 0;
    if (st) {
        fprintf(stderr, "PE %d: fail midway: prepare: %s\n", rank, e.text);
        bad = 1;
    } else {
        if (rank == 1)
            rd_shmem_inject_failure(ctx, 0);
        st = redist_shmem_run_meshes(m, NULL, &e);
        rd_mismatch mm;
        if (rank == 1 && (st != REDIST_ERR_BACKEND ||
                          !strstr(e.text, "injected failure"))) {
            fprintf(stderr, "PE 1: fail midway: status %d \"%s\"\n",
                    (int)st, e.text);
            bad = 1;
        } else if (rank != 1 && !st && dst &&
                   rd_pattern_check(spec, rank, dst, &mm)) {
            fprintf(stderr, "PE %d: fail midway: finished, not exact\n",
                    rank);
            bad = 1;
        }
    }
    redist_shmem_meshes_free(m);
    /* every PE's next call fails: the abort is seen at the agreement */
    redist_error_clear(&e);
    redist_exec_report_t rep;
    st = redist_shmem_execute(ctx, plan, src, dst, NULL, &rep, &e);
    if (!st) {
        fprintf(stderr, "PE %d: a call after the failure passed\n", rank);
        bad = 1;
    }
    free(src);
    free(dst);
    return bad;
}

int main(int argc, char **argv)
{
    shmem_init();
    rank = shmem_my_pe();
    size = shmem_n_pes();
    int cases = argc > 1 ? atoi(argv[1]) : 20, runs = 0, preps = 0;
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)size);
    const char *axis = "pe";
    int64_t nd = size;
    redist_mesh_t *line = NULL;
    redist_mesh_create(1, &axis, &nd, &line, NULL);
    redist_shmem_t *ctx = NULL;
    if (redist_shmem_create(line, NULL, &ctx, NULL)) {
        fprintf(stderr, "PE %d: no context\n", rank);
        shmem_finalize();
        return 1;
    }
    redist_plan_t *keep = NULL;
    for (int c = 0; c < cases && size > 1; c++) {
        redist_spec_t *spec = rp_set_two_spec(&rng, size, "two");
        unsigned flags = rp_in(&rng, 0, 2) == 0 ? REDIST_EXEC_PRESERVE_SRC
                                                 : 0;
        for (int obj = 0; spec && obj < 2; obj++) {
            redist_plan_options_t po = {0};
            po.objective = obj ? REDIST_OBJECTIVE_BYTES
                               : REDIST_OBJECTIVE_TIME;
            po.no_cross_sums = c % 2; /* else pending sums may cross */
            redist_plan_t *plan = NULL;
            if (redist_plan_create(spec, &po, &plan, NULL))
                continue; /* no plan (the same on every PE) */
            int prepared = (c + obj) % 2;
            int sym = c / 2 % 2; /* both with and without sums */
            fails += one_run(ctx, plan, flags, prepared, c,
                             bound_certain(plan, po.no_cross_sums, sym),
                             sym);
            runs++;
            preps += prepared;
            if (!keep)
                keep = plan;
            else
                redist_plan_free(plan);
        }
        redist_spec_free(spec);
    }
    /* streamed transfers through windows of one element (a fill per
     * element, pieces split across fills), the layout otherwise chosen
     * as above: exact and within the promise (not counted above) */
    rd_shmem_stream_cap(1);
    tally = 0;
    for (int c = 0; c < cases / 2 && size > 1; c++) {
        redist_spec_t *spec = rp_set_two_spec(&rng, size, "tiny");
        redist_plan_options_t po = {0};
        po.no_cross_sums = c % 3 == 2;
        redist_plan_t *plan = NULL;
        if (spec && !redist_plan_create(spec, &po, &plan, NULL))
            fails += one_run(ctx, plan, c % 4 == 3 ? REDIST_EXEC_PRESERVE_SRC
                                                   : 0,
                             c % 2, 1000 + c, 0, c / 2 % 2);
        runs += plan != NULL;
        redist_plan_free(plan);
        redist_spec_free(spec);
    }
    rd_shmem_stream_cap(0);
    tally = 1;
    if (keep) {
        /* PE 0 with another plan (the other objective's, or a one-mesh
         * plan's stand-in: NULL), then the last PE with a NULL plan */
        redist_plan_options_t po = {0};
        po.objective = REDIST_OBJECTIVE_BYTES;
        redist_plan_t *other = NULL;
        redist_spec_t *s2 = rp_set_two_spec(&rng, size, "other");
        if (s2 && !redist_plan_create(s2, &po, &other, NULL))
            fails += must_fail(ctx, keep, other, 0, "PE 0 another plan");
        else
            fails += must_fail(ctx, keep, NULL, 0, "PE 0 a NULL plan");
        fails += must_fail(ctx, keep, NULL, size - 1, "a NULL plan");
        /* and the context still runs afterwards */
        fails += one_run(ctx, keep, 0, 1, -1, 0, 0);
        fails += fail_midway(ctx, keep);
        redist_plan_free(other);
        redist_spec_free(s2);
    }
    redist_plan_free(keep);
    redist_shmem_free(ctx);
    redist_mesh_free(line);
    /* the runs over max(src_d, dst_d), summed over the PEs */
    static int cnt[6], tot[6];
    static long psync[SHMEM_REDUCE_SYNC_SIZE];
    static int pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > 6
                        ? SHMEM_REDUCE_MIN_WRKDATA_SIZE
                        : 6];
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    for (int k = 0; k < 2; k++) {
        cnt[3 * k] = over[k];
        cnt[3 * k + 1] = devruns[k];
        cnt[3 * k + 2] = bounded[k];
    }
    shmem_barrier_all();
    shmem_int_sum_to_all(tot, cnt, 6, 0, 0, size, pwrk, psync);
    if (rank == 0)
        printf("two-mesh plans over OpenSHMEM at %d PEs: %d runs (%d "
               "prepared, run twice); PE 0: %d failures; %d of %d device "
               "runs over max(src_d, dst_d) (%d checked against it): "
               "private buffers %d of %d (%d checked), symmetric %d of %d "
               "(%d checked)\n",
               size, runs, preps, fails, tot[0] + tot[3], tot[1] + tot[4],
               tot[2] + tot[5], tot[0], tot[1], tot[2], tot[3], tot[4],
               tot[5]);
    shmem_finalize();
    return fails ? 1 : 0;
}
