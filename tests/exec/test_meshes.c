/*
 * Two-mesh plans (doc/meshes.md) under the sim backend: random specs over
 * disjoint, overlapping, reshaped and scattered meshes (rp_meshes_spec),
 * planned under both objectives, must
 *   - be memory-efficient (the plan family always holds such a plan),
 *   - pass the verifier, and survive a round trip through plan JSON,
 *   - run exact on every device, with the scratch high-water within the
 *     promise (rp_sim_check);
 * and the per-device figures of the plan JSON must bound every device by
 * max(src_d, dst_d).
 *
 * Then regrouped meshes: the same devices, the target mesh's axes made of
 * the source mesh's (regrouped and reordered, the device list in the
 * order this gives), random axis links.  With even shapes the two-mesh
 * plan must be at least as good, under its objective, as the one-mesh
 * plan on the source mesh to the target written there (built here from
 * the regrouping); every plan (one in three uneven, random rules) must
 * verify and run exact.
 *
 * Then the transfer under random axis links of the source mesh: every
 * piece comes from a device whose S block holds it (found from every
 * device's S block, not from the walk); a receiver on the source mesh
 * gets it from a holder at the least link level any holder has (the
 * level of two devices: the slowest link of the axes their coordinates
 * differ on); and the transfer's modelled time is each device's
 * messages at their pair's levels (a device outside the source mesh: the
 * slowest source axis, at least node); the plan runs exact.  Arguments:
 * CASES [SEED].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../src/exec/meshes.h"
#include "../common/random_plan.h"

static rp_rng rng = {0x9e3779b97f4a7c15ULL};

/* Every device within its bound, by the plan JSON's per-device peaks. */
static int check_devices(rp_tally *t, const redist_plan_t *plan)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    char *text = redist_plan_to_json(plan);
    json_error_t je;
    json_t *o = text ? json_loads(text, 0, &je) : NULL;
    json_t *pk = json_object_get(json_object_get(o, "stats"),
                                 "peak_bytes_per_device");
    int bad = 0;
    if ((int64_t)json_array_size(pk) != redist_spec_num_devices(s)) {
        rp_fail(t, "meshes", plan, "peak_bytes_per_device: %zu entries",
                json_array_size(pk));
        bad = 1;
    }
    for (int64_t d = 0; !bad && d < redist_spec_num_devices(s); d++) {
        uint64_t a = redist_spec_device_bytes(s, REDIST_SIDE_FROM, d);
        uint64_t b = redist_spec_device_bytes(s, REDIST_SIDE_TO, d);
        uint64_t v = (uint64_t)json_integer_value(json_array_get(pk, d));
        if (v > (a > b ? a : b) || v < a || v < b) {
            rp_fail(t, "meshes", plan,
                    "device %lld: peak %llu, src %llu, dst %llu",
                    (long long)d, (unsigned long long)v,
                    (unsigned long long)a, (unsigned long long)b);
            bad = 1;
        }
    }
    json_decref(o);
    free(text);
    return bad;
}

/* A regrouped pair of meshes: A drawn, B's axes runs of A's axes of size
 * > 1 in a random order; run[c][0..nrun[c]) the axes of A that B's axis c
 * is made of (major first); db[r] the device (A's rank) of B's rank r. */
static redist_mesh_t *regrouped(const redist_mesh_t *ma, int run[][4],
                                int nrun[], int64_t db[])
{
    int ax[REDIST_MAX_AXES], n = 0, na = redist_mesh_num_axes(ma);
    for (int a = 0; a < na; a++)
        if (redist_mesh_axis_size(ma, a) > 1)
            ax[n++] = a;
    for (int k = n - 1; k > 0; k--) {
        int j = (int)rp_in(&rng, 0, k), x = ax[k];
        ax[k] = ax[j];
        ax[j] = x;
    }
    int nb = n ? (int)rp_in(&rng, 1, n) : 1;
    int64_t sizes[REDIST_MAX_AXES];
    const char *names[] = {"p", "q", "r", "s"};
    for (int c = 0, k = 0; c < nb; c++) {
        /* at least one axis each; what is left goes to the last */
        int take = c == nb - 1 ? n - k : (int)rp_in(&rng, 1, n - k - (nb - 1 - c));
        nrun[c] = 0;
        sizes[c] = 1;
        for (int m = 0; m < take; m++, k++) {
            run[c][nrun[c]++] = ax[k];
            sizes[c] *= redist_mesh_axis_size(ma, ax[k]);
        }
    }
    redist_mesh_t *mb = NULL;
    if (redist_mesh_create(nb, names, sizes, &mb, NULL))
        return NULL;
    for (int64_t r = 0; r < redist_mesh_num_devices(mb); r++) {
        int64_t cb[REDIST_MAX_AXES], ca[REDIST_MAX_AXES] = {0};
        redist_mesh_coords(mb, r, cb);
        for (int c = 0; c < nb; c++)
            for (int k = nrun[c] - 1; k >= 0; k--) {
                int64_t sz = redist_mesh_axis_size(ma, run[c][k]);
                ca[run[c][k]] = cb[c] % sz;
                cb[c] /= sz;
            }
        db[r] = redist_mesh_rank(ma, ca);
    }
    return mb;
}

/* The figure the objective ranks second (after the peak). */
static double second(const redist_plan_stats_t *st, int bytes)
{
    return bytes ? (double)st->recv_bytes : st->time_s;
}

static void regrouped_case(rp_tally *t, int *ties)
{
    int64_t n = rp_in(&rng, 1, 4) * (rp_next(&rng) % 2 ? 2 : 3);
    redist_mesh_t *ma = rp_mesh_exact(&rng, n, (int)rp_in(&rng, 0, 1));
    int run[REDIST_MAX_AXES][4], nrun[REDIST_MAX_AXES];
    int64_t da[64], db[64];
    redist_mesh_t *mb = ma ? regrouped(ma, run, nrun, db) : NULL;
    redist_spec_t *two = NULL, *one = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (!mb) {
        rp_fail(t, "regrouped", NULL, "mesh");
        goto out;
    }
    for (int64_t d = 0; d < n; d++)
        da[d] = d;
    int nd = 1 + (int)(rp_next(&rng) % 2);
    redist_type_t from, to, ta;
    rp_type(&rng, ma, nd, ~0u, 1, 0, &from);
    rp_type(&rng, mb, nd, 0, 0, 0, &to);
    /* the target on A: each axis of B replaced by its run */
    redist_type_init(&ta, nd);
    for (int i = 0; i < nd; i++)
        for (int k = 0; k < to.dim_naxes[i]; k++)
            for (int m = 0; m < nrun[to.dims[i][k]]; m++)
                redist_type_push_axis(&ta, i, run[to.dims[i][k]][m]);
    /* one case in three uneven, with random rules on each side: then
     * only verified and run (the one-mesh spec would have other blocks) */
    int uneven = rp_next(&rng) % 3 == 0;
    int64_t shape[REDIST_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int64_t ka = rp_split_count(ma, &from, i);
        int64_t kb = rp_split_count(ma, &ta, i);
        shape[i] = uneven ? rp_in(&rng, 1, 2 * (ka > kb ? ka : kb) + 2)
                          : rp_lcm(ka, kb) * rp_in(&rng, 1, 3);
    }
    redist_placed_mesh_t pa = {"src", ma, da}, pb = {"dst", mb, db};
    if (redist_spec_create_meshes(&pa, &pb, nd, shape, REDIST_F32,
                                  &from, &to, REDIST_REDUCE_SUM, "regrouped",
                                  &two, &err) ||
        (!uneven &&
         redist_spec_create(ma, nd, shape, REDIST_F32, &from, &ta,
                            REDIST_REDUCE_SUM, "one", &one, &err))) {
        rp_fail(t, "regrouped", NULL, "spec: %s", err.text);
        goto out;
    }
    if (uneven) {
        redist_layout_t la = {(redist_split_t)rp_in(&rng, 0, 2), {0}, {0}};
        redist_layout_t lb = {(redist_split_t)rp_in(&rng, 0, 2), {0}, {0}};
        redist_spec_t *u = NULL;
        if (redist_spec_with_layouts(two, &la, &lb, &u, &err)) {
            rp_fail(t, "regrouped", NULL, "layouts: %s", err.text);
            goto out;
        }
        redist_spec_free(two);
        two = u;
    }
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    for (int a = 0; a < redist_mesh_num_axes(ma); a++)
        cm.axis_link[a] = (uint8_t)rp_in(&rng, 0, REDIST_LINK_COUNT - 1);
    for (int obj = 0; obj < 2; obj++) {
        redist_plan_options_t po = {0};
        po.objective = obj ? REDIST_OBJECTIVE_BYTES : REDIST_OBJECTIVE_TIME;
        po.cost = &cm;
        redist_plan_t *p2 = NULL, *p1 = NULL;
        redist_plan_stats_t s2, s1;
        if (redist_plan_create(two, &po, &p2, &err)) {
            rp_fail(t, "regrouped", NULL, "plan: %s", err.text);
            continue;
        }
        redist_plan_stats(p2, &s2);
        if (one && !redist_plan_create(one, &po, &p1, NULL)) {
            redist_plan_stats(p1, &s1);
            if (s2.peak_bytes > s1.peak_bytes ||
                (s2.peak_bytes == s1.peak_bytes &&
                 second(&s2, obj) > second(&s1, obj) * (1 + 1e-9)))
                rp_fail(t, "regrouped", p2,
                        "worse than the one-mesh plan on the source mesh "
                        "(peak %llu vs %llu, %s %g vs %g)",
                        (unsigned long long)s2.peak_bytes,
                        (unsigned long long)s1.peak_bytes,
                        obj ? "recv" : "time", second(&s2, obj),
                        second(&s1, obj));
            /* as good as the one-mesh plan */
            if (s2.peak_bytes == s1.peak_bytes &&
                second(&s2, obj) == second(&s1, obj))
                (*ties)++;
        }
        redist_verify_result_t vr;
        if (redist_plan_verify(p2, &vr, &err) || !vr.valid)
            rp_fail(t, "regrouped", p2, "verify: %s", err.text);
        rp_sim_check(&rng, t, "regrouped", p2, UINT64_MAX);
        redist_plan_free(p1);
        redist_plan_free(p2);
    }
out:
    redist_spec_free(two);
    redist_spec_free(one);
    redist_mesh_free(ma);
    redist_mesh_free(mb);
}

/* Level between global devices d and e (test's own: the slowest link of
 * the source-mesh axes their coordinates differ on; far when either is
 * outside the source mesh). */
static int level(const redist_spec_t *s, const redist_cost_model_t *cm,
                 int far, int64_t d, int64_t e)
{
    const redist_mesh_t *ma = redist_spec_side_mesh(s, REDIST_SIDE_FROM);
    int64_t rd = -1, re = -1;
    for (int64_t r = 0; r < redist_mesh_num_devices(ma); r++) {
        int64_t g = redist_spec_mesh_device(s, REDIST_SIDE_FROM, r);
        rd = g == d ? r : rd;
        re = g == e ? r : re;
    }
    if (rd < 0 || re < 0)
        return far;
    int64_t cd[REDIST_MAX_AXES], ce[REDIST_MAX_AXES];
    redist_mesh_coords(ma, rd, cd);
    redist_mesh_coords(ma, re, ce);
    int l = 0;
    for (int a = 0; a < redist_mesh_num_axes(ma); a++)
        if (cd[a] != ce[a] && cm->axis_link[a] > l)
            l = cm->axis_link[a];
    return l;
}

static int inside(const rd_tlists *t, const int64_t lo[], const int64_t sh[])
{
    for (int i = 0; i < t->ndims; i++)
        if (lo[i] < t->s_lo[i] ||
            lo[i] + sh[i] > t->s_lo[i] + t->s_shape[i])
            return 0;
    return 1;
}

static void senders_case(rp_tally *t, int *nearer)
{
    redist_spec_t *spec = NULL;
    int kind;
    redist_plan_t *plan = NULL;
    rd_tlists *tl = NULL;
    double *tm = NULL;
    if (rp_meshes_spec(&rng, 8, &kind, &spec, NULL))
        return;
    const redist_mesh_t *ma = redist_spec_side_mesh(spec, REDIST_SIDE_FROM);
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    int far = REDIST_LINK_NODE;
    for (int a = 0; a < redist_mesh_num_axes(ma); a++) {
        cm.axis_link[a] = (uint8_t)rp_in(&rng, 0, REDIST_LINK_COUNT - 1);
        far = cm.axis_link[a] > far ? cm.axis_link[a] : far;
    }
    redist_plan_options_t po = {0};
    po.cost = &cm;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_plan_create(spec, &po, &plan, &err)) {
        rp_fail(t, "senders", NULL, "plan: %s", err.text);
        goto out;
    }
    int64_t N = redist_spec_num_devices(spec);
    tl = calloc((size_t)N, sizeof *tl);
    tm = calloc((size_t)N * 4, sizeof *tm);
    if (!tl || !tm) {
        rp_fail(t, "senders", plan, "out of memory");
        goto out;
    }
    for (int64_t d = 0; d < N; d++)
        if (rd_transfer_lists(plan, d, &tl[d])) {
            rp_fail(t, "senders", plan, "lists");
            goto out;
        }
    for (int64_t d = 0; d < N; d++)
        for (int64_t k = 0; k < tl[d].nrecv; k++) {
            const rd_tpiece *pc = &tl[d].recv[k];
            int64_t lo[REDIST_MAX_DIMS];
            for (int i = 0; i < tl[d].ndims; i++)
                lo[i] = tl[d].r_lo[i] + pc->off[i];
            int best = REDIST_LINK_COUNT, holds = 0;
            for (int64_t e = 0; e < N; e++)
                if (tl[e].in_src && inside(&tl[e], lo, pc->box)) {
                    int l = level(spec, &cm, far, e, d);
                    best = l < best ? l : best;
                    holds |= e == pc->peer;
                }
            int got = level(spec, &cm, far, pc->peer, d);
            if (!holds)
                rp_fail(t, "senders", plan,
                        "device %lld receives a piece from %lld, which "
                        "does not hold it",
                        (long long)d, (long long)pc->peer);
            else if (got > best)
                rp_fail(t, "senders", plan,
                        "device %lld receives a piece from %lld over %s; "
                        "a holder is at %s",
                        (long long)d, (long long)pc->peer,
                        redist_link_name((redist_link_t)got),
                        redist_link_name((redist_link_t)best));
            if (pc->peer == d)
                continue;
            *nearer += got < far;
            double b = (double)pc->bytes;
            tm[d] += cm.alpha[got];
            tm[N + pc->peer] += cm.alpha[got];
            tm[2 * N + d] += cm.beta[got] * b;
            tm[3 * N + pc->peer] += cm.beta[got] * b;
        }
    double want = 0;
    for (int64_t d = 0; d < N; d++) {
        double x = (tm[d] > tm[N + d] ? tm[d] : tm[N + d]) +
                   (tm[2 * N + d] > tm[3 * N + d] ? tm[2 * N + d]
                                                  : tm[3 * N + d]);
        want = x > want ? x : want;
    }
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        if (v.op == REDIST_OP_TRANSFER &&
            (v.time_s > want * (1 + 1e-9) + 1e-15 ||
             v.time_s < want * (1 - 1e-9) - 1e-15))
            rp_fail(t, "senders", plan,
                    "transfer modelled %.9g s; its messages at their "
                    "levels give %.9g s",
                    v.time_s, want);
    }
    rp_sim_check(&rng, t, "senders", plan, UINT64_MAX);
out:
    if (tl)
        for (int64_t d = 0; d < redist_spec_num_devices(spec); d++)
            rd_tlists_free(&tl[d]);
    free(tl);
    free(tm);
    redist_plan_free(plan);
    redist_spec_free(spec);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, 0);
    rp_tally t = {0, 0};
    int kinds[4] = {0}, uneven = 0, partial = 0, steps = 0, none = 0;
    for (int i = 0; i < cases; i++) {
        redist_spec_t *spec = NULL;
        int kind = 0;
        redist_error_t err;
        redist_error_clear(&err);
        if (rp_meshes_spec(&rng, 8, &kind, &spec, &err)) {
            rp_fail(&t, "meshes", NULL, "spec: %s", err.text);
            continue;
        }
        kinds[kind]++;
        uneven += redist_spec_is_uneven(spec);
        partial += redist_spec_from(spec)->partial != 0;
        for (int obj = 0; obj < 2; obj++) {
            redist_plan_options_t po = {0};
            po.objective = obj ? REDIST_OBJECTIVE_BYTES : REDIST_OBJECTIVE_TIME;
            redist_plan_t *plan = NULL;
            redist_plan_stats_t st;
            if (redist_plan_create(spec, &po, &plan, &err)) {
                rp_fail(&t, "meshes", NULL, "plan: %s", err.text);
                none++;
                continue;
            }
            redist_plan_stats(plan, &st);
            steps += st.steps;
            if (!st.memory_efficient)
                rp_fail(&t, "meshes", plan, "not memory-efficient");
            redist_verify_result_t vr;
            if (redist_plan_verify(plan, &vr, &err))
                rp_fail(&t, "meshes", plan, "verify: %s", err.text);
            char *json = redist_plan_to_json(plan);
            if (!json ||
                redist_plan_verify_buffer(spec, json, strlen(json), "plan",
                                          &vr, &err) ||
                !vr.valid || vr.peak_bytes != st.peak_bytes ||
                vr.recv_bytes != st.recv_bytes)
                rp_fail(&t, "meshes", plan, "verify of its JSON: %s",
                        err.text);
            free(json);
            check_devices(&t, plan);
            rp_sim_check(&rng, &t, "meshes", plan, UINT64_MAX);
            redist_plan_free(plan);
        }
        redist_spec_free(spec);
    }
    printf("meshes: %d specs (disjoint %d, overlapping %d, reshaped %d, "
           "scattered %d; %d uneven, %d with pending sums), %d runs, %d "
           "steps in all, %d failures\n",
           cases, kinds[0], kinds[1], kinds[2], kinds[3], uneven, partial,
           t.runs, steps, t.failures);
    int regroups = cases / 2, ties = 0;
    for (int i = 0; i < regroups; i++)
        regrouped_case(&t, &ties);
    printf("regrouped: %d specs, %d plans as good as the one-mesh plan on "
           "the source mesh, %d failures\n",
           regroups, ties, t.failures);
    int nearer = 0;
    for (int i = 0; i < cases; i++)
        senders_case(&t, &nearer);
    printf("senders: %d specs under random axis links, %d messages below "
           "the slowest level, %d failures\n",
           cases, nearer, t.failures);
    return t.failures || none ? 1 : 0;
}
