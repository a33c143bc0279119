/*
 * Two-mesh plans (doc/meshes.md) under the sim backend: random specs over
 * disjoint, overlapping, reshaped and scattered meshes (rp_meshes_spec),
 * planned under both objectives, must
 *   - be memory-efficient (the plan family always holds such a plan),
 *   - pass the verifier, and survive a round trip through plan JSON,
 *   - run exact on every device, with the scratch high-water within the
 *     promise, and within max(src_d, dst_d) where the sim keeps it there
 *     for certain (rp_sim_check, sim_within: S and R together within it,
 *     and each phase of one step, or of whole steps that the device's
 *     own buffers and a lent destination buffer carry with no scratch;
 *     the others counted and printed);
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
 * slowest source axis, at least node); replayed with its model
 * (redist_plan_replay, on the same shape: its layouts too), every piece
 * has the same sender and the figures are the plan's; the plan runs
 * exact.  With
 * crossing allowed (half the cases) a transfer may sum pending contributions:
 * each piece then comes once per coordinate on the pending axes, from a
 * holder with those coordinates, and the receiver's reducing is costed
 * (gamma).  Specs with a partial source are also planned with
 * no_cross_sums under both objectives above.  Last, a spec where the
 * crossing plan must win, and a float run checked to the bit against
 * the sum in ascending source order.  Arguments: CASES [SEED].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../src/exec/meshes.h"
#include "../../src/plan/plan_internal.h"
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

/* Global device e's coordinates on the pending axes `pend` of the source
 * mesh, as one number (-1 off the source mesh). */
static int64_t pcoord(const redist_spec_t *s, uint32_t pend, int64_t e)
{
    const redist_mesh_t *ma = redist_spec_side_mesh(s, REDIST_SIDE_FROM);
    for (int64_t r = 0; r < redist_mesh_num_devices(ma); r++)
        if (redist_spec_mesh_device(s, REDIST_SIDE_FROM, r) == e) {
            int64_t c[REDIST_MAX_AXES], x = 0;
            redist_mesh_coords(ma, r, c);
            for (int a = 0; a < redist_mesh_num_axes(ma); a++)
                if (pend >> a & 1u)
                    x = x * redist_mesh_axis_size(ma, a) + c[a];
            return x;
        }
    return -1;
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
    uint64_t *tin = NULL;
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
    po.no_cross_sums = (int)(rp_next(&rng) % 2);
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_plan_create(spec, &po, &plan, &err)) {
        rp_fail(t, "senders", NULL, "plan: %s", err.text);
        goto out;
    }
    int64_t N = redist_spec_num_devices(spec);
    tl = calloc((size_t)N, sizeof *tl);
    tm = calloc((size_t)N * 4, sizeof *tm);
    tin = calloc((size_t)N, sizeof *tin);
    /* P: the pending axes of the type that crosses (the source's type
     * when the transfer is the first step) */
    uint32_t pend = 0;
    int64_t npc = 1;
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v, w;
        redist_plan_step(plan, k, &v);
        if (v.op != REDIST_OP_TRANSFER)
            continue;
        if (k > 0)
            redist_plan_step(plan, k - 1, &w);
        pend = k > 0 ? w.after.partial : redist_spec_from(spec)->partial;
    }
    for (int a = 0; a < redist_mesh_num_axes(ma); a++)
        if (pend >> a & 1u && redist_mesh_axis_size(ma, a) > 1)
            npc *= redist_mesh_axis_size(ma, a);
        else
            pend &= ~(1u << a);
    if (!tl || !tm || !tin) {
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
            int64_t pk = pcoord(spec, pend, pc->peer);
            for (int64_t e = 0; e < N; e++)
                if (tl[e].in_src && inside(&tl[e], lo, pc->box) &&
                    pcoord(spec, pend, e) == pk) {
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
            /* pending sums: one contribution per coordinate on P */
            int64_t same = 0, twice = 0;
            for (int64_t j = 0; j < tl[d].nrecv; j++)
                if (!memcmp(tl[d].recv[j].off, pc->off,
                            (size_t)tl[d].ndims * sizeof *pc->off)) {
                    same++;
                    twice += j != k &&
                             pcoord(spec, pend, tl[d].recv[j].peer) == pk;
                }
            if (same != npc || twice)
                rp_fail(t, "senders", plan,
                        "device %lld: %lld contributions to a piece (%lld "
                        "with one P coordinate twice), not one per each of "
                        "the %lld coordinates on the pending axes",
                        (long long)d, (long long)same, (long long)twice,
                        (long long)npc);
            tin[d] += pc->bytes;
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
        /* a receiver of pending sums reduces all but one contribution */
        x += cm.gamma * (double)(tin[d] - tin[d] / (uint64_t)npc);
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
    /* its steps replayed with its model (redist_plan_replay, as run
     * --shrink and set replays make them): every piece from the same
     * sender, the same modelled times */
    redist_plan_t *re = NULL;
    if (redist_plan_replay(plan, spec, &re, &err)) {
        rp_fail(t, "senders", plan, "replay: %s", err.text);
    } else {
        redist_plan_stats_t a, b;
        redist_plan_stats(plan, &a);
        redist_plan_stats(re, &b);
        if (a.time_s != b.time_s || a.peak_bytes != b.peak_bytes ||
            a.recv_bytes != b.recv_bytes)
            rp_fail(t, "senders", plan,
                    "replayed: %.9g s, peak %llu, recv %llu; the plan "
                    "%.9g s, %llu, %llu",
                    b.time_s, (unsigned long long)b.peak_bytes,
                    (unsigned long long)b.recv_bytes, a.time_s,
                    (unsigned long long)a.peak_bytes,
                    (unsigned long long)a.recv_bytes);
        for (int64_t d = 0; d < N; d++) {
            rd_tlists r;
            if (rd_transfer_lists(re, d, &r)) {
                rp_fail(t, "senders", plan, "replayed lists");
                break;
            }
            int same = r.nrecv == tl[d].nrecv;
            for (int64_t k = 0; same && k < r.nrecv; k++)
                same = r.recv[k].peer == tl[d].recv[k].peer &&
                       r.recv[k].bytes == tl[d].recv[k].bytes;
            rd_tlists_free(&r);
            if (!same) {
                rp_fail(t, "senders", plan,
                        "device %lld: the replayed plan's transfer has "
                        "other senders",
                        (long long)d);
                break;
            }
        }
    }
    redist_plan_free(re);
    rp_sim_check(&rng, t, "senders", plan, UINT64_MAX);
out:
    if (tl)
        for (int64_t d = 0; d < redist_spec_num_devices(spec); d++)
            rd_tlists_free(&tl[d]);
    free(tl);
    free(tm);
    free(tin);
    redist_plan_free(plan);
    redist_spec_free(spec);
}

/* A partial source over a big axis, a target sharded finer on another
 * mesh: the plan must keep the sum pending and reduce it in the transfer
 * (each of the 8 receivers gets 4 contributions of 1024 x 64 x 4 B =
 * 256 KiB: 1 MiB; reduce-scattering first would have each source device
 * receive 3/4 of 2 MiB = 1.5 MiB, and the time model agrees at this
 * size), under both objectives by default (with no_cross_sums: a
 * reduce-scatter first).  Then the run on sim
 * is exact to the bit: the same bits twice, and each element the float
 * sum of the 4 contributions in ascending order of source device. */
static void crossing_case(rp_tally *t)
{
    static const char text[] =
        "{\"name\": \"crossing\", \"meshes\": {"
        "\"a\": {\"axes\": [[\"dp\", 4]], \"devices\": [0, 1, 2, 3]},"
        "\"b\": {\"axes\": [[\"tp\", 8]], \"devices\": [4, 5, 6, 7, 8, 9, "
        "10, 11]}}, \"shape\": [8192, 64], \"dtype\": \"f32\","
        "\"from\": {\"mesh\": \"a\", \"dims\": [[], []], \"partial\": "
        "[\"dp\"]}, \"to\": {\"mesh\": \"b\", \"dims\": [[\"tp\"], []]}}";
    redist_spec_t *spec = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_load_buffer(text, strlen(text), "crossing", 0, &spec,
                                &err)) {
        rp_fail(t, "crossing", NULL, "spec: %s", err.text);
        return;
    }
    enum { N = 12, E = 8192 * 64, PER = E / 8 };
    float *src[N] = {0}, *dst[2][N] = {{0}};
    for (int obj = 0; obj < 4; obj++) {
        redist_plan_options_t po = {0};
        po.objective = obj % 2 ? REDIST_OBJECTIVE_BYTES
                               : REDIST_OBJECTIVE_TIME;
        po.no_cross_sums = obj >= 2;
        redist_plan_t *plan = NULL;
        redist_plan_stats_t st;
        redist_step_view_t v;
        if (redist_plan_create(spec, &po, &plan, &err)) {
            rp_fail(t, "crossing", NULL, "plan: %s", err.text);
            continue;
        }
        redist_plan_stats(plan, &st);
        redist_plan_step(plan, 0, &v);
        if (po.no_cross_sums) { /* reduce-scatter first */
            if (v.op != REDIST_OP_REDUCE_SCATTER)
                rp_fail(t, "crossing", plan,
                        "with no_cross_sums the first step is %s",
                        redist_op_name(v.op));
        } else if (st.steps != 1 || v.op != REDIST_OP_TRANSFER ||
            st.recv_bytes != 4 * PER * 4 || !st.memory_efficient)
            rp_fail(t, "crossing", plan,
                    "objective %s: %d steps, first %s, recv %llu: not the "
                    "one transfer that sums 4 contributions of %d B",
                    obj ? "bytes" : "time", st.steps,
                    redist_op_name(v.op), (unsigned long long)st.recv_bytes,
                    PER * 4);
        rp_sim_check(&rng, t, "crossing", plan, UINT64_MAX);
        redist_plan_free(plan);
    }
    /* float determinism: random values, two runs, an ordered reference */
    redist_plan_t *plan = NULL;
    redist_plan_options_t po = {0};
    int ok = !redist_plan_create(spec, &po, &plan, &err); /* the default */
    /* no_cross_sums is 0 or 1 */
    redist_plan_t *bad = NULL;
    po.no_cross_sums = 2;
    if (redist_plan_create(spec, &po, &bad, &err) != REDIST_ERR_INVALID ||
        bad || !strstr(err.text, "cross_sums"))
        rp_fail(t, "crossing", bad, "no_cross_sums 2 taken: %s", err.text);
    redist_plan_free(bad);
    for (int d = 0; d < N; d++) {
        src[d] = d < 4 ? malloc(E * sizeof(float)) : NULL;
        for (int r = 0; r < 2; r++)
            dst[r][d] = d >= 4 ? malloc(PER * sizeof(float)) : NULL;
        ok = ok && (d < 4 ? src[d] != NULL
                          : dst[0][d] != NULL && dst[1][d] != NULL);
    }
    for (int d = 0; ok && d < 4; d++)
        for (int e = 0; e < E; e++)
            src[d][e] = (float)((double)(rp_next(&rng) % 2000001) / 7e3 -
                                142.857);
    for (int r = 0; ok && r < 2; r++)
        if (redist_exec_sim_run(plan, (void *const *)src,
                                (void *const *)dst[r], 0, NULL, NULL, NULL,
                                &err)) {
            rp_fail(t, "crossing", plan, "run: %s", err.text);
            ok = 0;
        }
    t->runs += 2;
    for (int d = 4; ok && d < N; d++) {
        if (memcmp(dst[0][d], dst[1][d], PER * sizeof(float)))
            rp_fail(t, "crossing", plan, "device %d: two runs differ", d);
        for (int e = 0; e < PER; e++) {
            int g = (d - 4) * PER + e;
            float want = src[0][g];
            for (int q = 1; q < 4; q++)
                want += src[q][g];
            if (memcmp(&want, &dst[0][d][e], sizeof want)) {
                rp_fail(t, "crossing", plan,
                        "device %d element %d: %.9g, the ordered sum is "
                        "%.9g",
                        d, e, (double)dst[0][d][e], (double)want);
                break;
            }
        }
    }
    if (!ok && !plan)
        rp_fail(t, "crossing", NULL, "plan or memory: %s", err.text);
    for (int d = 0; d < N; d++) {
        free(src[d]);
        free(dst[0][d]);
        free(dst[1][d]);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    rp_seed(&rng, argc > 2 ? argv[2] : NULL, 0);
    rp_tally t = {0};
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
        /* a partial source: both objectives again with pending sums
         * allowed to cross */
        int nplans = redist_spec_from(spec)->partial ? 4 : 2;
        for (int obj = 0; obj < nplans; obj++) {
            redist_plan_options_t po = {0};
            po.objective = obj % 2 ? REDIST_OBJECTIVE_BYTES
                                   : REDIST_OBJECTIVE_TIME;
            po.no_cross_sums = obj < 2;
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
    crossing_case(&t);
    printf("crossing: a pending sum reduced in the transfer, exact and "
           "bit-identical in ascending source order, %d failures\n",
           t.failures);
    printf("meshes: %d of %d device runs over max(src_d, dst_d); %d "
           "within it for certain, checked\n",
           t.over_bound, t.devices, t.sure);
    return t.failures || none ? 1 : 0;
}
