/*
 * Two-mesh plans over MPI (redist_mpi_execute_meshes, and one case in two
 * prepared and run twice on the same buffers; doc/meshes.md):
 * random two-mesh specs on at most the job's ranks (rp_meshes_spec; every
 * rank draws the same; one in three on the same devices in the same
 * order, a reshape planned as one mesh), planned under both objectives (half the cases
 * with random axis links of the source mesh: the transfer's senders are
 * then the replicas nearest each receiver; every other case with
 * cross_sums, so partial sources may be summed by the transfer) and run
 * on MPI_COMM_WORLD.  Every rank checks its target block exactly, its source
 * intact under REDIST_EXEC_PRESERVE_SRC, and its scratch high-water mark
 * within the promise; ranks outside both meshes pass NULL buffers.  It
 * counts the runs over the contract's max(src_d, dst_d) on each device
 * (printed) and fails those the layout of the rank's scratch bounds
 * (over_bound); at 8 ranks two directed specs must stay within it where
 * the layout by lifetime brings them (and directed specs check uneven
 * reductions and a transfer that sums in rounds).  Then
 * a call with a rank that passes another plan must fail on every rank,
 * and so must one where a rank's plan chose its transfer's senders under
 * other axis links (even rank counts from 4).
 * Arguments: CASES [SEED].  Exit 0 when every rank passed.  With
 * RP_SHOW_OVER set, each run over the bound is printed (rank, case,
 * flags, blocks, steps; rp_show_over); with RP_SHOW_PLAN too, its plan's JSON.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "../common/random_plan.h"
#include "../../src/exec/exec_internal.h"
#include "../../src/exec/meshes.h"
#include "../../src/plan/plan_internal.h"
#include "../../src/testing/pattern.h"

static rp_rng rng = {0x9e3779b97f4a7c15ULL};

/* Plan `spec` under `po` and run it: 1 when the call failed with
 * REDIST_ERR_MISMATCH (the ranks were given different plans), else 0
 * with a message naming `what`. */
static int mismatched(const redist_spec_t *spec,
                      const redist_plan_options_t *po, int rank,
                      const char *what)
{
    redist_plan_t *p = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_plan_create(spec, po, &p, &err);
    uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank);
    uint64_t db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
    void *src = malloc(sb + 1), *dst = malloc(db + 1);
    redist_status_t st = redist_mpi_execute_meshes(MPI_COMM_WORLD, p, src,
                                                   dst, NULL, NULL, &err);
    if (st != REDIST_ERR_MISMATCH)
        fprintf(stderr, "rank %d: %s gave %s\n", rank, what,
                redist_status_string(st));
    free(src);
    free(dst);
    redist_plan_free(p);
    return st == REDIST_ERR_MISMATCH;
}

/* The outcome of one run of case `what` #i on this rank: 0 when it
 * succeeded, its target block is exact, its source intact when
 * `preserve`, and its scratch high-water mark within the promise; else
 * 1, with a message. */
static int bad_run(const redist_spec_t *spec, int rank, const char *what,
                   int i, redist_status_t st, const redist_error_t *err,
                   const void *src, int preserve, const void *dst,
                   const redist_exec_report_t *rep)
{
    rd_mismatch mm;
    if (st)
        fprintf(stderr, "rank %d %s %d: execute: %s\n", rank, what, i,
                err->text);
    else if (dst && rd_pattern_check(spec, rank, dst, &mm))
        fprintf(stderr, "rank %d %s %d: global %llu expected %s got %s\n",
                rank, what, i, (unsigned long long)mm.global_index,
                mm.expected, mm.got);
    else if (src && preserve && rd_pattern_check_src(spec, rank, src, &mm))
        fprintf(stderr, "rank %d %s %d: source modified\n", rank, what, i);
    else if (rep->scratch_high_water > rep->scratch_bytes)
        fprintf(stderr, "rank %d %s %d: scratch %llu > promise %llu\n", rank,
                what, i, (unsigned long long)rep->scratch_high_water,
                (unsigned long long)rep->scratch_bytes);
    else
        return 0;
    return 1;
}

/* Is every dim divisible by the product of both meshes' axis sizes, so
 * that every type a plan passes through is even?  Uneven one-mesh
 * programs are sized by the largest device (doc/uneven.md), so a phase
 * may exceed a smaller device's bound. */
static int even(const redist_spec_t *s)
{
    int64_t p = 1;
    for (int side = 0; side < 2; side++) {
        const redist_mesh_t *m = redist_spec_side_mesh(s, side);
        for (int a = 0; a < redist_mesh_num_axes(m); a++)
            p *= redist_mesh_axis_size(m, a);
    }
    for (int i = 0; i < redist_spec_ndims(s); i++)
        if (redist_spec_shape(s)[i] % p)
            return 0;
    return 1;
}

/* Are the source's blocks even (every dim's blocks of one length on the
 * source mesh)? */
static int even_src(const redist_spec_t *s)
{
    for (int i = 0; i < redist_spec_ndims(s); i++) {
        int64_t k = redist_spec_block_lengths(s, REDIST_SIDE_FROM, i, NULL, 0);
        int64_t *len = k > 0 ? malloc((size_t)k * sizeof *len) : NULL;
        int same = len && redist_spec_block_lengths(s, REDIST_SIDE_FROM, i,
                                                    len, k) == k;
        for (int64_t j = 1; same && j < k; j++)
            same = len[j] == len[0];
        free(len);
        if (!same)
            return 0;
    }
    return 1;
}

/* The least max(src_d, dst_d) over the source mesh's devices. */
static uint64_t least_src_bound(const redist_spec_t *s)
{
    uint64_t least = UINT64_MAX;
    const redist_mesh_t *m = redist_spec_side_mesh(s, REDIST_SIDE_FROM);
    for (int64_t k = 0; k < redist_mesh_num_devices(m); k++) {
        int64_t d = redist_spec_mesh_device(s, REDIST_SIDE_FROM, k);
        uint64_t sb = redist_spec_device_bytes(s, REDIST_SIDE_FROM, d);
        uint64_t db = redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
        uint64_t b = sb > db ? sb : db;
        least = b < least ? b : least;
    }
    return least;
}

/* Is the source phase all-reduces only (steps 0 .. kt - 1)? */
static int all_reduces(const redist_plan_t *plan, int kt)
{
    for (int k = 0; k < kt; k++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, k, &v) || v.op != REDIST_OP_ALL_REDUCE)
            return 0;
    }
    return kt > 0;
}

/* Is the source phase one reduce_scatter (step 0, kt == 1)? */
static int one_reduce_scatter(const redist_plan_t *plan, int kt)
{
    redist_step_view_t v;
    return kt == 1 && !redist_plan_step(plan, 0, &v) &&
           v.op == REDIST_OP_REDUCE_SCATTER;
}

/* The contract's bound on a device, max(src_d, dst_d): 1 when the
 * high-water mark exceeds it (counted, printed), and *must_fail set when
 * the layout of the rank's scratch (src/backend/mpi/meshes.c: one arena
 * of max(A + S, S + R + W, R + B), S in dst and R in src where they fit)
 * makes the bound hold for certain and it did not (*sure: counted):
 *  - the rank holds no block (no phase runs on it: the transfer reads
 *    src, writes dst): at most the work area of a transfer that sums,
 *    within max(bound, its largest piece), a piece of its R block;
 *  - or, even plans without REDIST_EXEC_PRESERVE_SRC, it is on both
 *    meshes with both phases non-empty and sb == db: S <= src_d and R <=
 *    dst_d fit the other buffer, so it holds max(A, W, B), each phase's
 *    scratch within its one-mesh bound and the work area within the
 *    room beside S and R, which sums or not;
 *  - or, without REDIST_EXEC_PRESERVE_SRC, an even source, a source
 *    phase of all-reduces and no target phase, it is on the source mesh:
 *    S is its source buffer (phase A in place), so it holds phase A's
 *    scratch, within the least bound over the source mesh, or the work
 *    area, within its bound (its pieces are parts of its R block);
 *  - or the same with a source phase of one uneven reduce_scatter whose
 *    every box after it is empty or the first elements of its block
 *    (rd_boxed_prefix): it runs whole, in place in the source
 *    (rd_meshes_s_in_src), with its work space alone, which the phase's
 *    room caps at the least bound over the source mesh, one element at
 *    least (MPI plans work space alike on every rank, so a rank with
 *    no block holds it too when another rank needs it: not claimed);
 *  - or, without REDIST_EXEC_PRESERVE_SRC, a source phase of one
 *    reduce_scatter and no target phase, it is on the source mesh and
 *    its transfer does not sum where it is also on the target mesh: it
 *    holds S beside phase A's work space, which the phase's context caps
 *    at the room the bound leaves beside S over the source mesh
 *    (rd_meshes_phase_room), and an uneven one runs whole within any
 *    room of one element or more (src/backend/mpi/reduce_boxed.c; even
 *    ones within their least need, an element too). */
static int over_bound(const redist_plan_t *plan, int dev, uint64_t sb,
                      uint64_t db, int preserve, int sums, uint64_t hw,
                      int *must_fail, int *sure_out)
{
    int n = redist_plan_num_steps(plan), kt = rp_transfer_step(plan);
    const redist_spec_t *s = redist_plan_spec(plan);
    int in_a = rp_on_mesh(s, REDIST_SIDE_FROM, dev);
    int in_b = rp_on_mesh(s, REDIST_SIDE_TO, dev);
    int a = kt > 0, b = kt >= 0 && kt < n - 1;
    uint64_t bound = sb > db ? sb : db;
    int sure = (!(in_a && a) && !(in_b && b)) ||
               (!preserve && even(s) && in_a && in_b && a && b && sb == db) ||
               (!preserve && in_a && !b && all_reduces(plan, kt) &&
                even_src(s)) ||
               (!preserve && in_a && !b && one_reduce_scatter(plan, kt) &&
                redist_spec_is_uneven(plan->m->phase[0]->spec) &&
                rd_boxed_prefix(plan->m->phase[0], 0) &&
                least_src_bound(s) >= redist_dtype_size(redist_spec_dtype(s))) ||
               (!preserve && in_a && !b && (!in_b || !sums) &&
                one_reduce_scatter(plan, kt) &&
                rd_meshes_phase_room(plan, 0, 0) >=
                    redist_dtype_size(redist_spec_dtype(s)));
    *must_fail = sure && hw > bound;
    *sure_out = sure;

    return hw > bound;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, cases = argc > 1 ? atoi(argv[1]) : 40;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)size);
    int fails = 0, runs = 0, outside = 0, prepared = 0, same_order = 0;
    int summing = 0; /* plans whose transfer sums pending contributions */
    int over = 0;    /* runs on this rank over max(src_d, dst_d) */
    int sure = 0;    /* ... of which it holds for certain (over_bound) */
    for (int i = 0; i < cases; i++) {
        redist_spec_t *spec = NULL;
        int kind;
        /* one case in three: both meshes list the same devices in the
         * same order (a reshape, planned as one mesh, often with uneven
         * reductions whose groups reduce different counts) */
        kind = 4;
        if (i % 3 == 2 ? rp_meshes_spec_kind(&rng, size < 2 ? 2 : size, 4,
                                             &spec, NULL)
                       : rp_meshes_spec(&rng, size < 2 ? 2 : size, &kind,
                                        &spec, NULL))
            continue;
        same_order += kind == 4;
        if (redist_spec_num_devices(spec) > size) { /* one rank: 2 devices */
            redist_spec_free(spec);
            continue;
        }
        for (int obj = 0; obj < 2; obj++) {
            redist_plan_options_t po = {0};
            po.objective = obj ? REDIST_OBJECTIVE_BYTES : REDIST_OBJECTIVE_TIME;
            /* one time in two, random axis links (the same draw on every
             * rank): the transfer's senders are then the replicas
             * nearest each receiver */
            redist_cost_model_t cm;
            redist_cost_model_default(&cm);
            const redist_mesh_t *ma =
                redist_spec_side_mesh(spec, REDIST_SIDE_FROM);
            for (int a = 0; a < redist_mesh_num_axes(ma); a++)
                cm.axis_link[a] =
                    (uint8_t)rp_in(&rng, 0, REDIST_LINK_COUNT - 1);
            if (i % 4 < 2)
                po.cost = &cm;
            /* every other case lets the source's pending sums cross: the
             * transfer then sums contributions as they land */
            po.no_cross_sums = i % 2;
            redist_plan_t *plan = NULL;
            redist_error_t err;
            redist_error_clear(&err);
            if (redist_plan_create(spec, &po, &plan, &err)) {
                fprintf(stderr, "rank %d case %d: plan: %s\n", rank, i,
                        err.text);
                fails++;
                continue;
            }
            int sums = 0;
            for (int k = 0; k < redist_plan_num_steps(plan); k++) {
                redist_step_view_t v, w;
                redist_plan_step(plan, k, &v);
                if (k > 0)
                    redist_plan_step(plan, k - 1, &w);
                sums += v.op == REDIST_OP_TRANSFER &&
                        (k > 0 ? w.after.partial
                               : redist_spec_from(spec)->partial) != 0;
            }
            summing += sums;
            uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank);
            uint64_t db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
            void *src = sb ? malloc(sb) : NULL, *dst = db ? malloc(db) : NULL;
            outside += !sb && !db;
            if (src)
                rd_pattern_fill(spec, rank, src);
            if (dst)
                memset(dst, 0xEE, db);
            redist_exec_options_t xo = {0};
            xo.flags = i % 3 == 0 ? REDIST_EXEC_PRESERVE_SRC : 0;
            redist_exec_report_t rep;
            redist_status_t st;
            if (i % 2) { /* the one-shot call */
                st = redist_mpi_execute_meshes(MPI_COMM_WORLD, plan, src,
                                               dst, &xo, &rep, &err);
            } else { /* prepared, run twice (the source refilled) */
                redist_mpi_meshes_t *pm = NULL;
                st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, plan, src,
                                               dst, &xo, &pm, &err);
                for (int k = 0; k < 2 && !st; k++) {
                    if (src)
                        rd_pattern_fill(spec, rank, src);
                    if (dst)
                        memset(dst, 0xEE, db);
                    st = redist_mpi_run_meshes(pm, &rep, &err);
                    prepared += k == 1 && !st;
                }
                redist_mpi_meshes_free(pm);
            }
            runs++;
            int bad = bad_run(spec, rank, "case", i, st, &err, src,
                              xo.flags != 0, dst, &rep), must = 0, certain = 0;
            if (!bad)
                over += over_bound(plan, rank, sb, db, xo.flags != 0, sums,
                                   rep.scratch_high_water, &must, &certain);
            sure += certain;
            if (!bad)
                rp_show_over(plan, "rank", rank, i, xo.flags, sb, db,
                             rep.scratch_high_water);
            if (must)
                fprintf(stderr, "rank %d case %d: scratch %llu over "
                        "max(src_d, dst_d) = %llu\n", rank, i,
                        (unsigned long long)rep.scratch_high_water,
                        (unsigned long long)(sb > db ? sb : db));
            fails += bad || must;
            free(src);
            free(dst);
            redist_plan_free(plan);
        }
        redist_spec_free(spec);
    }
    /* directed, at 8 ranks: i32[7] pending over c and d of a=2,b=1,c=2,
     * d=2 to a split over t=8 on the same devices in the same order (a
     * reshape, planned as one mesh: two uneven reduce-scatters whose
     * groups reduce 2 and 1 elements; device 7 ends empty), one-shot and
     * prepared, the source preserved or not.  Its work space was once
     * sized from the largest count only: a group failed alone. */
    int same_directed = 0;
    if (size == 8) {
        const char *an[] = {"a", "b", "c", "d"}, *bn[] = {"t"};
        int64_t as[] = {2, 1, 2, 2}, bs[] = {8}, dv[8], shape[] = {7};
        for (int d = 0; d < 8; d++)
            dv[d] = d;
        redist_mesh_t *ma = NULL, *mb = NULL;
        redist_spec_t *sp = NULL;
        redist_plan_t *pl = NULL;
        redist_type_t from, to;
        redist_type_init(&from, 1);
        redist_type_init(&to, 1);
        redist_type_add_partial(&from, 2);
        redist_type_add_partial(&from, 3);
        redist_type_push_axis(&to, 0, 0);
        redist_mesh_create(4, an, as, &ma, NULL);
        redist_mesh_create(1, bn, bs, &mb, NULL);
        redist_placed_mesh_t pa = {"src", ma, dv}, pb = {"dst", mb, dv};
        redist_error_t err;
        redist_error_clear(&err);
        if (redist_spec_create_meshes(&pa, &pb, 1, shape, REDIST_I32, &from,
                                      &to, REDIST_REDUCE_MAX, "same-order",
                                      &sp, &err) ||
            redist_plan_create(sp, NULL, &pl, &err)) {
            fprintf(stderr, "rank %d: same-order spec: %s\n", rank,
                    err.text);
            fails++;
        }
        for (int k = 0; pl && k < 4; k++) {
            uint64_t sb = redist_spec_device_bytes(sp, REDIST_SIDE_FROM, rank);
            uint64_t db = redist_spec_device_bytes(sp, REDIST_SIDE_TO, rank);
            void *src = sb ? malloc(sb) : NULL, *dst = db ? malloc(db) : NULL;
            if (src)
                rd_pattern_fill(sp, rank, src);
            redist_exec_options_t xo = {k % 2 ? REDIST_EXEC_PRESERVE_SRC : 0};
            redist_exec_report_t rep;
            redist_status_t st;
            if (k < 2) {
                st = redist_mpi_execute_meshes(MPI_COMM_WORLD, pl, src, dst,
                                               &xo, &rep, &err);
            } else {
                redist_mpi_meshes_t *pm = NULL;
                st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, pl, src, dst,
                                               &xo, &pm, &err);
                if (!st)
                    st = redist_mpi_run_meshes(pm, &rep, &err);
                redist_mpi_meshes_free(pm);
            }
            if (bad_run(sp, rank, "same-order run", k, st, &err, src,
                        k % 2, dst, &rep))
                fails++;
            else
                same_directed++;
            free(src);
            free(dst);
        }
        redist_plan_free(pl);
        redist_spec_free(sp);
        redist_mesh_free(ma);
        redist_mesh_free(mb);
    }
    /* directed, at 8 ranks: two uneven specs whose parts, held at once,
     * exceeded the bound where their lifetimes do not overlap
     * (src/backend/mpi/meshes.c, the arena).  "sum-after-phase": c64[4]
     * pending over a=2,b=4, to ["b","a"] on the same devices in another
     * mesh: a reduce_scatter over b, then a transfer that sums over a;
     * every rank held phase A's scratch, S and the work area (40 or 48
     * bytes on a 32-byte bound), and holds max(A + S, S + W) = 32.
     * "both-phases": i32[1,4,2] pending over a=3 to replicated on 4 of
     * the 6 source devices, planned with a over node links and b over
     * the network: a reduce_scatter, a transfer, two all_gathers; the ranks on both meshes (S in dst, R in src) held both
     * phases' scratch (36 bytes on 32), and hold the larger (20).
     * "in-place": bf16[] pending over a=2 and c=4 to replicated on the
     * same 8 devices in another order, planned without sums crossing:
     * two all_reduces and a transfer;
     * phase A ends in place in src, each all-reduce in place (out of
     * place, SRC -> SA -> SRC, each needed work space beside SA: 4 bytes
     * on 2).  The runs must stay within max(src_d, dst_d) on those ranks
     * (every rank for the first and the last), one-shot and prepared (run
     * twice), exact. */
    int layout_directed = 0;
    if (size == 8) {
        static const char *const texts[] = {
            "{\"name\": \"sum-after-phase\", \"meshes\": {"
            "\"src\": {\"axes\": [[\"a\", 2], [\"b\", 4]]},"
            "\"dst\": {\"axes\": [[\"a\", 1], [\"b\", 4], [\"c\", 1], "
            "[\"d\", 2]]}},"
            "\"shape\": [4], \"dtype\": \"c64\", \"reduce\": \"max\","
            "\"from\": {\"mesh\": \"src\", \"dims\": [[]], "
            "\"partial\": [\"a\", \"b\"]},"
            "\"to\": {\"mesh\": \"dst\", \"dims\": [[\"b\", \"a\"]], "
            "\"split\": \"balanced\"}}",
            "{\"name\": \"both-phases\", \"meshes\": {"
            "\"src\": {\"axes\": [[\"a\", 3], [\"b\", 2], [\"c\", 1], "
            "[\"d\", 1]], \"devices\": [1, 3, 2, 5, 4, 7]},"
            "\"dst\": {\"axes\": [[\"a\", 2], [\"b\", 2]], "
            "\"devices\": [7, 1, 6, 4]}},"
            "\"shape\": [1, 4, 2], \"dtype\": \"i32\", \"reduce\": \"prod\","
            "\"from\": {\"mesh\": \"src\", \"dims\": [[], [\"b\"], [\"d\"]], "
            "\"partial\": [\"a\"], \"split\": \"balanced\"},"
            "\"to\": {\"mesh\": \"dst\", \"dims\": [[], [], []]}}",
            "{\"name\": \"in-place\", \"meshes\": {"
            "\"src\": {\"axes\": [[\"a\", 2], [\"b\", 1], [\"c\", 4]]},"
            "\"dst\": {\"axes\": [[\"a\", 2], [\"b\", 4]], "
            "\"devices\": [3, 5, 0, 6, 1, 2, 4, 7]}},"
            "\"shape\": [], \"dtype\": \"bf16\", \"reduce\": \"min\","
            "\"from\": {\"mesh\": \"src\", \"dims\": [], "
            "\"partial\": [\"a\", \"c\"]},"
            "\"to\": {\"mesh\": \"dst\", \"dims\": []}}"};
        for (int c = 0; c < 3; c++) {
            redist_spec_t *sp = NULL;
            redist_plan_t *pl = NULL;
            redist_error_t err;
            redist_error_clear(&err);
            /* both-phases: its source mesh's a over node links, b over
             * the network (reduce_scatter, transfer, two all_gathers) */
            redist_plan_options_t po = {0};
            redist_cost_model_t cm;
            redist_cost_model_default(&cm);
            cm.axis_link[0] = REDIST_LINK_NODE;
            cm.axis_link[1] = REDIST_LINK_NETWORK;
            po.cost = c == 1 ? &cm : NULL;
            po.no_cross_sums = c == 2; /* in-place: sums on the source */
            if (redist_spec_load_buffer(texts[c], strlen(texts[c]), "layout",
                                        0, &sp, &err) ||
                redist_plan_create(sp, &po, &pl, &err)) {
                fprintf(stderr, "rank %d: layout spec %d: %s\n", rank, c,
                        err.text);
                fails++;
                redist_spec_free(sp);
                continue;
            }
            if (c == 2 && (redist_plan_num_steps(pl) != 3 ||
                           rp_transfer_step(pl) != 2 ||
                           !all_reduces(pl, 2))) {
                fprintf(stderr, "rank %d: in-place: not two all_reduces "
                        "and a transfer\n", rank);
                fails++;
            }
            uint64_t sb = redist_spec_device_bytes(sp, REDIST_SIDE_FROM, rank);
            uint64_t db = redist_spec_device_bytes(sp, REDIST_SIDE_TO, rank);
            int check = c != 1 || (rp_on_mesh(sp, REDIST_SIDE_FROM, rank) &&
                                   rp_on_mesh(sp, REDIST_SIDE_TO, rank));
            for (int k = 0; k < 2; k++) {
                void *src = sb ? malloc(sb) : NULL;
                void *dst = db ? malloc(db) : NULL;
                redist_exec_report_t rep;
                redist_status_t st = REDIST_OK;
                redist_mpi_meshes_t *pm = NULL;
                if (k)
                    st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, pl, src,
                                                   dst, NULL, &pm, &err);
                for (int run = 0; run < 1 + k; run++) {
                    if (src)
                        rd_pattern_fill(sp, rank, src);
                    if (dst)
                        memset(dst, 0xEE, db);
                    if (!k)
                        st = redist_mpi_execute_meshes(MPI_COMM_WORLD, pl, src,
                                                       dst, NULL, &rep, &err);
                    else if (!st)
                        st = redist_mpi_run_meshes(pm, &rep, &err);
                    if (bad_run(sp, rank, "layout run", c, st, &err, src, 0,
                                dst, &rep))
                        fails++;
                    else if (check &&
                             rep.scratch_high_water > (sb > db ? sb : db)) {
                        fprintf(stderr, "rank %d layout %d: scratch %llu over "
                                "max(src_d, dst_d) = %llu\n", rank, c,
                                (unsigned long long)rep.scratch_high_water,
                                (unsigned long long)(sb > db ? sb : db));
                        fails++;
                    } else
                        layout_directed += check;
                }
                redist_mpi_meshes_free(pm);
                free(src);
                free(dst);
            }
            redist_plan_free(pl);
            redist_spec_free(sp);
        }
    }
    /* directed, at 3 ranks or more: f32[64,32] pending over dp=2 on
     * ranks 0-1, rows over t=2 on ranks 1-2.  The default plan is one
     * transfer that sums: rank 2 receives two contributions of its whole
     * 4 KiB block.  Received whole at once they took 8 KiB of work area,
     * twice its bound max(src_2, dst_2) = 4 KiB; in rounds (one
     * contribution each) the run must stay within it, one-shot and
     * prepared (run twice). */
    int cross_directed = 0;
    if (size >= 3) {
        static const char text[] =
            "{\"name\": \"rounds\", \"meshes\": {"
            "\"a\": {\"axes\": [[\"dp\", 2]], \"devices\": [0, 1]},"
            "\"b\": {\"axes\": [[\"t\", 2]], \"devices\": [1, 2]}},"
            "\"shape\": [64, 32], \"dtype\": \"f32\","
            "\"from\": {\"mesh\": \"a\", \"dims\": [[], []], "
            "\"partial\": [\"dp\"]},"
            "\"to\": {\"mesh\": \"b\", \"dims\": [[\"t\"], []]}}";
        redist_spec_t *sp = NULL;
        redist_plan_t *pl = NULL;
        redist_error_t err;
        redist_error_clear(&err);
        redist_step_view_t v = {0};
        if (redist_spec_load_buffer(text, strlen(text), "rounds", 0, &sp,
                                    &err) ||
            redist_plan_create(sp, NULL, &pl, &err)) {
            fprintf(stderr, "rank %d: rounds spec: %s\n", rank, err.text);
            fails++;
        } else if (redist_plan_num_steps(pl) != 1 ||
                   redist_plan_step(pl, 0, &v) ||
                   v.op != REDIST_OP_TRANSFER) {
            fprintf(stderr, "rank %d: rounds: not one transfer that sums\n",
                    rank);
            fails++;
        }
        uint64_t sb = sp ? redist_spec_device_bytes(sp, REDIST_SIDE_FROM,
                                                    rank) : 0;
        uint64_t dbb = sp ? redist_spec_device_bytes(sp, REDIST_SIDE_TO,
                                                     rank) : 0;
        uint64_t bound = sb > dbb ? sb : dbb;
        for (int k = 0; pl && k < 2; k++) {
            void *src = sb ? malloc(sb) : NULL, *dst = dbb ? malloc(dbb) : NULL;
            redist_exec_report_t rep;
            redist_status_t st = REDIST_OK;
            redist_mpi_meshes_t *pm = NULL;
            if (k == 0)
                st = redist_mpi_prepare_meshes(MPI_COMM_WORLD, pl, src, dst,
                                               NULL, &pm, &err);
            for (int run = 0; run < (k ? 1 : 2); run++) {
                if (src)
                    rd_pattern_fill(sp, rank, src);
                if (k)
                    st = redist_mpi_execute_meshes(MPI_COMM_WORLD, pl, src,
                                                   dst, NULL, &rep, &err);
                else if (!st)
                    st = redist_mpi_run_meshes(pm, &rep, &err);
                if (bad_run(sp, rank, "rounds run", k, st, &err, src, 0,
                            dst, &rep))
                    fails++;
                else if (rep.scratch_high_water > bound) {
                    fprintf(stderr, "rank %d rounds %d: scratch %llu over "
                            "max(src_d, dst_d) = %llu\n", rank, k,
                            (unsigned long long)rep.scratch_high_water,
                            (unsigned long long)bound);
                    fails++;
                } else
                    cross_directed++;
            }
            redist_mpi_meshes_free(pm);
            free(src);
            free(dst);
        }
        redist_plan_free(pl);
        redist_spec_free(sp);
    }
    /* a rank that passes another plan: every rank fails, none hangs */
    int diverged = 0;
    if (size >= 2) {
        redist_spec_t *a = NULL;
        int kind;
        rp_rng r2 = {0x1234567ULL + (rank == size - 1)};
        do {
            redist_spec_free(a);
            a = NULL;
            rp_meshes_spec(&r2, size, &kind, &a, NULL);
        } while (!a || redist_spec_num_devices(a) > size);
        diverged = mismatched(a, NULL, rank, "a diverging plan");
        fails += !diverged;
        redist_spec_free(a);
    }
    /* the same spec and steps, but the last rank's plan chose its
     * transfer's senders under other axis links: every rank fails.  The
     * spec: a source replicated over `h` on devices 0..size-1, a target
     * on the last half, so receivers have a near and a far replica. */
    int links_caught = 0;
    if (size >= 4 && size % 2 == 0) {
        const char *an[] = {"h", "g"}, *bn[] = {"t"};
        int64_t as[] = {2, size / 2}, bs[] = {size / 2}, da[64], db[64];
        for (int d = 0; d < size; d++)
            da[d] = d;
        for (int d = 0; d < size / 2; d++)
            db[d] = size / 2 + d;
        redist_mesh_t *ma = NULL, *mb = NULL;
        redist_spec_t *sp = NULL;
        redist_type_t from, to;
        redist_type_init(&from, 2);
        redist_type_init(&to, 2);
        redist_type_push_axis(&from, 0, 1);
        redist_type_push_axis(&to, 1, 0);
        int64_t shape[] = {2 * size, 2 * size};
        redist_mesh_create(2, an, as, &ma, NULL);
        redist_mesh_create(1, bn, bs, &mb, NULL);
        redist_placed_mesh_t pa = {"a", ma, da}, pb = {"b", mb, db};
        redist_spec_create_meshes(&pa, &pb, 2, shape, REDIST_F32, &from, &to,
                                  REDIST_REDUCE_SUM, "links", &sp, NULL);
        redist_cost_model_t cm;
        redist_cost_model_default(&cm);
        cm.axis_link[0] = REDIST_LINK_NETWORK;
        cm.axis_link[1] = rank == size - 1 ? REDIST_LINK_NETWORK
                                           : REDIST_LINK_CACHE;
        redist_plan_options_t po = {0};
        po.cost = &cm;
        links_caught = mismatched(sp, &po, rank, "plans with other axis links");
        fails += !links_caught;
        redist_spec_free(sp);
        redist_mesh_free(ma);
        redist_mesh_free(mb);
    }
    int all = 0, all_over = 0, all_runs = 0, all_sure = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&over, &all_over, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&runs, &all_runs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&sure, &all_sure, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi meshes, %d ranks: %d of %d device runs over "
               "max(src_d, dst_d); within it for certain: %d (checked)\n",
               size, all_over, all_runs, all_sure);
    if (rank == 0)
        printf("mpi meshes, %d ranks: %d runs on rank 0 (%d prepared and "
               "run twice, %d outside both meshes; %d specs on the same "
               "devices in order, %d directed runs, %d within the bound "
               "summing in rounds, %d within it by lifetime or in place; "
               "%d plans whose transfer sums), diverging plans %s, "
               "plans under other axis links %s; %d failures\n",
               size, runs, prepared, outside, same_order, same_directed,
               cross_directed, layout_directed, summing,
               size >= 2 ? (diverged ? "caught" : "MISSED") : "not tried",
               size >= 4 && size % 2 == 0
                   ? (links_caught ? "caught" : "MISSED")
                   : "not tried",
               all);
    MPI_Finalize();
    return all ? 1 : 0;
}
