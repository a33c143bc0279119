/*
 * libFuzzer target for execution: a fuzzed spec, planned or walked, run
 * under the sim backend and checked exactly.
 *
 * Input: a spec document (JSON, doc/spec-format.md section 3), optionally followed
 * by a NUL byte and a tail that picks the plan:
 *   no tail        the solver's plan (objective bytes);
 *   tail[0] & 1    the time objective (default cost model, each axis on
 *                  the link level of a tail byte);
 *   tail[0] & 2    instead, a random walk of legal steps from the spec's
 *                  source (tests/common: every step kind and permute
 *                  target; with tail[0] & 4 exchanges to random types),
 *                  which becomes the target.  The walk's legality is
 *                  that of even dims on one mesh, so an uneven or a
 *                  two-mesh spec is planned
 *                  instead (by the time objective, default costs).
 * The rest of the tail seeds the random choices (walk, options).
 *
 * Sizes are bounded before planning so that an input runs in
 * milliseconds: at most FUZZ_MAX_DEVICES devices (one thread each;
 * FUZZ_MAX_UNEVEN_DEVICES for an uneven spec, whose search costs more,
 * FUZZ_MAX_MESHES_DEVICES for a two-mesh one, which runs many) and
 * FUZZ_MAX_ELEMS global elements.  A larger shape is first cut to the
 * least one the source and target types divide (so the specs of specs/
 * serve as seeds); a spec still over the bounds is skipped.
 *
 * Each plan is verified, then run by rp_sim_check (random
 * PRESERVE_SRC and fused path): every element of every device against
 * the data pattern (src/testing/pattern.h), the source intact when promised,
 * the scratch high-water mark against the promise and the promise
 * against max(src, dst) and 2 peak.  Then the generic and the fused sim
 * paths must give bit-identical blocks on random bits.  Any failure
 * aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../common/random_plan.h"

#define FUZZ_MAX_DEVICES 32
#define FUZZ_MAX_UNEVEN_DEVICES 16
/* a two-mesh plan solves a phase per candidate (src/plan/meshes.c) */
#define FUZZ_MAX_MESHES_DEVICES 8
#define FUZZ_MAX_ELEMS 4096

/* The global element count of `shape`, saturated at FUZZ_MAX_ELEMS + 1. */
static int64_t elems_of(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] > FUZZ_MAX_ELEMS || n * shape[i] > FUZZ_MAX_ELEMS)
            return FUZZ_MAX_ELEMS + 1;
        n *= shape[i];
    }
    return n;
}

/* The spec within the bounds (NULL: skip it). */
static redist_spec_t *bounded(redist_spec_t *spec)
{
    const redist_mesh_t *m = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec);
    if (redist_spec_num_devices(spec) >
        (redist_spec_num_meshes(spec) == 2 ? FUZZ_MAX_MESHES_DEVICES
         : redist_spec_is_uneven(spec)     ? FUZZ_MAX_UNEVEN_DEVICES
                                           : FUZZ_MAX_DEVICES)) {
        redist_spec_free(spec);
        return NULL;
    }
    if (elems_of(nd, redist_spec_shape(spec)) <= FUZZ_MAX_ELEMS)
        return spec;
    if (redist_spec_num_meshes(spec) == 2) { /* not shrunk: skipped */
        redist_spec_free(spec);
        return NULL;
    }
    int64_t shape[REDIST_MAX_DIMS];
    const redist_type_t *from = redist_spec_from(spec);
    const redist_type_t *to = redist_spec_to(spec);
    for (int i = 0; i < nd; i++)
        shape[i] = rp_lcm(rp_split_count(m, from, i),
                          rp_split_count(m, to, i));
    redist_spec_t *small = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (elems_of(nd, shape) > FUZZ_MAX_ELEMS ||
        redist_spec_create(m, nd, shape, redist_spec_dtype(spec), from, to,
                           redist_spec_reduce(spec), NULL, &small, &err))
        small = NULL;
    redist_spec_free(spec);
    return small;
}

static void failed(const char *what, const redist_plan_t *plan)
{
    fprintf(stderr, "fuzz_exec: %s\n", what);
    if (plan) {
        char *j = redist_plan_to_json(plan);
        if (j)
            fprintf(stderr, "%s\n", j);
        free(j);
    }
    abort();
}

/* The generic and the fused sim paths agree bit for bit on random bits. */
static void same_on_bits(const redist_plan_t *plan, uint64_t seed,
                         const redist_exec_options_t *opts)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    int64_t D = redist_spec_num_devices(s);
    uint64_t T = redist_spec_dst_bytes(s);
    void **a = NULL, **b = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (rp_sim_expect(plan, seed, 0, opts, &a, &err) ||
        rp_sim_expect(plan, seed, REDIST_SIM_FUSED, opts, &b, &err)) {
        fprintf(stderr, "fuzz_exec: %s\n", err.text);
        failed("a run on random bits failed", plan);
    }
    for (int64_t r = 0; r < D; r++)
        if (memcmp(a[r], b[r], (size_t)T)) {
            fprintf(stderr, "fuzz_exec: device %lld differs\n", (long long)r);
            failed("generic and fused sim paths differ on random bits", plan);
        }
    rp_free_blocks(a, D);
    rp_free_blocks(b, D);
}

static void run(const redist_plan_t *plan, rp_rng *rng)
{
    redist_verify_result_t res;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_plan_verify(plan, &res, &err) || !res.valid)
        failed("the plan does not verify", plan);
    rp_tally tally = {0};
    if (rp_sim_check(rng, &tally, "fuzz", plan, UINT64_MAX) ||
        tally.failures)
        failed("run under the sim backend (see above)", plan);
    redist_exec_options_t opts = {0};
    if (rp_next(rng) % 2)
        opts.flags |= REDIST_EXEC_PRESERVE_SRC;
    same_on_bits(plan, rp_next(rng), &opts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : size;
    const uint8_t *tail = nul ? nul + 1 : NULL;
    size_t tlen = nul ? size - slen - 1 : 0;
    redist_error_t err;
    redist_spec_t *spec = NULL;
    redist_error_clear(&err);
    if (redist_spec_load_buffer((const char *)data, slen, "fuzz.json", 0,
                                &spec, &err))
        return 0; /* fuzz_spec checks the loader's errors */
    spec = bounded(spec);
    if (!spec)
        return 0;
    unsigned mode = tlen ? tail[0] : 0;
    rp_rng rng = {0x9e3779b97f4a7c15ULL};
    for (size_t i = 1; i < tlen; i++)
        rng.s = rp_mix(rng.s ^ tail[i]);
    rng.s |= 1;

    redist_plan_t *plan = NULL;
    if ((mode & 2) &&
        (redist_spec_is_uneven(spec) || redist_spec_num_meshes(spec) == 2))
        mode = 1; /* walks are even-only, on one mesh: plan it (see the
                   * header) */
    if (mode & 2) {
        rp_problem p;
        memset(&p, 0, sizeof p);
        p.mesh = redist_spec_mesh(spec);
        p.nd = redist_spec_ndims(spec);
        memcpy(p.shape, redist_spec_shape(spec),
               sizeof(int64_t) * (size_t)p.nd);
        p.from = *redist_spec_from(spec);
        p.dtype = redist_spec_dtype(spec);
        p.reduce = redist_spec_reduce(spec);
        rp_walk w;
        if (rp_random_walk(&rng, &p, RP_WALK_MAX, (mode & 4) != 0, &w) == 0) {
            redist_error_clear(&err);
            if (rp_walk_plan(&p, &w, &plan, &err)) {
                fprintf(stderr, "fuzz_exec: %s\n", err.text);
                failed("a walk of legal steps is refused", NULL);
            }
        }
    } else {
        redist_cost_model_t cm;
        /* the uneven search costs far more per state (layouts, per-device
         * figures: about 50 us optimised, 8 ms in this instrumented build
         * on 32 devices): uneven inputs get fewer devices (bounded()) and
         * a smaller budget, so that every input stays well within the
         * fuzzer's timeout (regress/exec/uneven-six-axes-slow) */
        redist_plan_options_t po = {
            .max_states = redist_spec_is_uneven(spec) ? 500 : 20000};
        if (mode & 1) {
            redist_cost_model_default(&cm);
            for (int a = 0; a < redist_mesh_num_axes(redist_spec_mesh(spec));
                 a++)
                cm.axis_link[a] = (uint8_t)(rp_next(&rng) % REDIST_LINK_COUNT);
            po.objective = REDIST_OBJECTIVE_TIME;
            po.cost = &cm;
        }
        redist_error_clear(&err);
        if (redist_plan_create(spec, &po, &plan, &err)) {
            if (err.text[0] == '\0')
                abort(); /* every failure must explain itself */
            plan = NULL;
        }
    }
    if (plan)
        run(plan, &rng);
    redist_plan_free(plan);
    redist_spec_free(spec);
    return 0;
}
