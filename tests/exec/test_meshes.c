/*
 * Two-mesh plans (doc/meshes.md) under the sim backend: random specs over
 * disjoint, overlapping, reshaped and scattered meshes (rp_meshes_spec),
 * planned under both objectives, must
 *   - be memory-efficient (the plan family always holds such a plan),
 *   - pass the verifier, and survive a round trip through plan JSON,
 *   - run exact on every device, with the scratch high-water within the
 *     promise (rp_sim_check);
 * and the per-device figures of the plan JSON must bound every device by
 * max(src_d, dst_d).  Arguments: CASES [SEED].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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
    return t.failures || none ? 1 : 0;
}
