/*
 * The exchange step executed under the sim backend, checked exactly
 * (every element of every device, the pattern of src/testing/pattern.h).
 *
 * Three sources of plans, each run with a random dtype and reduce op, the
 * generic (pack / point-to-point / unpack) or the fused sim path, with or
 * without REDIST_EXEC_PRESERVE_SRC:
 *   - direct: one exchange straight from a random source type to a random
 *     target type with the same partial set (uneven block overlaps, axes
 *     moved between dims, replicated axes that become sharded and back);
 *   - chains: random walks mixing exchanges with every other step kind,
 *     built with redist_plan_from_steps;
 *   - timed: random specs planned with the time objective under random
 *     axis links (what `redistplan run --objective time` runs).
 * Checks: data exact; the traffic each device reports equals the
 * planner's need (rd_exchange_need) for single exchanges; scratch
 * high-water <= the promise, the promise <= max(src, dst) for
 * memory-efficient plans (2 max with PRESERVE_SRC), no scratch without
 * collectives; the source intact when promised; the report's steps and
 * writes_src (all in rp_sim_check).  Then: a backend without the
 * exchange op refuses the plan on every device with a clear error,
 * before any data moves.
 *
 *   need: rd_exchange_need's two maxima (elements, peers) against the
 *     devices enumerated one by one from the definition, on random type
 *     pairs whose local sizes divide one another or not.
 *
 *   test_exchange [DIRECT [CHAINS [TIMED [SEED [NEEDS]]]]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "../../src/exec/exec_internal.h"
#include "../../src/plan/steps.h"
#include "../common/random_plan.h"

static rp_rng rng = {0x2545f4914f6cdd1dULL};
static rp_tally tally;
static int skipped, exchanges, packed, unpacked;
static int checks, check_failures;

#define CHECK(c)                                                             \
    do {                                                                     \
        checks++;                                                            \
        if (!(c)) {                                                          \
            check_failures++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                     \
        }                                                                    \
    } while (0)

/* Run one plan with random options and check everything
 * (rp_sim_check); count its exchange passes.  `need` (or UINT64_MAX) is
 * the exact number of bytes the most needy device receives, for plans of
 * one exchange. */
static void run_plan(const char *what, const redist_plan_t *plan,
                     uint64_t need)
{
    if (rp_sim_check(&rng, &tally, what, plan, need))
        return;
    rd_program prog;
    if (rd_program_build(plan, 0, 0, 0, &prog, NULL) == REDIST_OK)
        for (int k = 0; k < prog.npasses; k++) {
            packed += prog.pass[k].kind == RD_PASS_XPACK;
            unpacked += prog.pass[k].kind == RD_PASS_XUNPACK;
            exchanges += prog.pass[k].kind == RD_PASS_XCHG &&
                         prog.pass[k].x.op == REDIST_OP_EXCHANGE;
        }
    rd_program_free(&prog);
}

static redist_step_view_t exchange_view(const redist_type_t *after)
{
    redist_step_view_t v;
    memset(&v, 0, sizeof v);
    v.op = REDIST_OP_EXCHANGE;
    v.dim = v.from_dim = v.to_dim = v.axis = -1;
    v.after = *after;
    return v;
}

static uint64_t planner_need(const redist_spec_t *spec,
                             const redist_type_t *a, const redist_type_t *b)
{
    rd_ctx cx;
    rd_ctype ca, cb;
    uint64_t elems, peers;
    rd_ctx_init(&cx, spec);
    rd_ctype_from_type(&ca, a);
    rd_ctype_from_type(&cb, b);
    if (rd_exchange_need(&cx, &ca, &cb, RD_EXCHANGE_LIMIT, &elems, &peers))
        return UINT64_MAX;
    return elems * cx.elem_size;
}

/* A mesh of at most 32 devices (one time in ten 128), rp_ndims dims, source
 * and target types over the axes not in a random set of partial axes
 * (each with probability 1/den). */
static redist_mesh_t *random_problem(int den, rp_problem *p)
{
    redist_mesh_t *m = rp_mesh_upto(&rng, 32, 128);
    p->mesh = m;
    p->nd = rp_ndims(&rng);
    uint32_t partial = rp_subset(&rng, redist_mesh_num_axes(m), den);
    rp_type(&rng, m, p->nd, 0, 0, partial, &p->from);
    return m;
}

/* random_problem with a target type of the same partial set, a shape
 * from the two split counts' lcm times 1..3 (sometimes blocks of
 * unrelated sizes: uneven overlaps; room for another axis with
 * extra_axis) and a random dtype and reduce op. */
static redist_mesh_t *random_pair(rp_problem *p, int extra_axis)
{
    redist_mesh_t *m = random_problem(5, p);
    rp_type(&rng, m, p->nd, 0, 0, p->from.partial, &p->to);
    rp_shape_between(&rng, p, 3, extra_axis);
    rp_dtype_reduce(&rng, p);
    return m;
}

static void direct_case(void)
{
    rp_problem p;
    redist_mesh_t *m = random_pair(&p, 0);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (p.elems > 30000 || rp_spec(&p, &spec, &err)) {
        skipped++;
    } else {
        redist_step_view_t v = exchange_view(&p.to);
        if (redist_plan_from_steps(spec, 1, &v, &plan, &err)) {
            rp_fail(&tally, "direct", NULL, "building the plan: %s",
                    err.text);
        } else {
            redist_plan_stats_t st;
            redist_plan_stats(plan, &st);
            uint64_t need = planner_need(spec, &p.from, &p.to);
            if (st.recv_bytes != need)
                rp_fail(&tally, "direct", plan, "plan recv %llu, need %llu",
                        (unsigned long long)st.recv_bytes,
                        (unsigned long long)need);
            if (!st.memory_efficient)
                rp_fail(&tally, "direct", plan,
                        "a single exchange is not memory-efficient");
            run_plan("direct", plan, need);
        }
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------ need */

/* Dim i's block of type t on the device of coordinates coord: its start
 * (the mixed-radix index of the dim's axes, major first, times the local
 * size l). */
static int64_t block_start(const redist_mesh_t *m, const redist_type_t *t,
                           int i, const int64_t *coord, int64_t l)
{
    int64_t idx = 0;
    for (int k = 0; k < t->dim_naxes[i]; k++) {
        int a = t->dims[i][k];
        idx = idx * redist_mesh_axis_size(m, a) + coord[a];
    }
    return idx * l;
}

/* rd_exchange_need's two maxima by the definition, device by device: what
 * a device lacks of its b block (its elements less the overlap with its
 * a block) and from how many devices it receives (the a blocks its b
 * block meets, each from one holder, less its own when that one meets). */
static void need_by_devices(const redist_mesh_t *m, const rp_problem *p,
                            uint64_t *elems, uint64_t *peers)
{
    int na = redist_mesh_num_axes(m);
    int64_t la[REDIST_MAX_DIMS], lb[REDIST_MAX_DIMS], coord[REDIST_MAX_AXES];
    for (int i = 0; i < p->nd; i++) {
        la[i] = p->shape[i] / rp_split_count(m, &p->from, i);
        lb[i] = p->shape[i] / rp_split_count(m, &p->to, i);
    }
    memset(coord, 0, sizeof coord);
    *elems = *peers = 0;
    for (;;) {
        uint64_t blk = 1, common = 1, pieces = 1;
        for (int i = 0; i < p->nd; i++) {
            int64_t sa = block_start(m, &p->from, i, coord, la[i]);
            int64_t sb = block_start(m, &p->to, i, coord, lb[i]);
            int64_t lo = sa > sb ? sa : sb;
            int64_t hi = sa + la[i] < sb + lb[i] ? sa + la[i] : sb + lb[i];
            blk *= (uint64_t)lb[i];
            common *= hi > lo ? (uint64_t)(hi - lo) : 0;
            pieces *= (uint64_t)((sb + lb[i] - 1) / la[i] - sb / la[i] + 1);
        }
        uint64_t e = blk - common, q = pieces - (common ? 1 : 0);
        if (e > *elems)
            *elems = e;
        if (q > *peers)
            *peers = q;
        int a = 0;
        for (; a < na; a++) {
            if (++coord[a] < redist_mesh_axis_size(m, a))
                break;
            coord[a] = 0;
        }
        if (a == na)
            return;
    }
}

static int need_nested, need_other;

/* rd_exchange_need against need_by_devices on a random pair of types:
 * shapes from the two split counts' lcm times 1..3 (one size dividing the
 * other, or not: both of its paths). */
static void need_case(void)
{
    rp_problem p;
    redist_mesh_t *m = random_pair(&p, 1);
    redist_spec_t *spec = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (rp_spec(&p, &spec, &err)) {
        skipped++;
        redist_mesh_free(m);
        return;
    }
    int nested = 1;
    for (int i = 0; i < p.nd; i++) {
        int64_t a = p.shape[i] / rp_split_count(m, &p.from, i);
        int64_t b = p.shape[i] / rp_split_count(m, &p.to, i);
        nested &= a % b == 0 || b % a == 0;
    }
    nested ? need_nested++ : need_other++;
    rd_ctx cx;
    rd_ctype ca, cb;
    uint64_t elems, peers, want_elems, want_peers;
    rd_ctx_init(&cx, spec);
    rd_ctype_from_type(&ca, &p.from);
    rd_ctype_from_type(&cb, &p.to);
    need_by_devices(m, &p, &want_elems, &want_peers);
    CHECK(rd_exchange_need(&cx, &ca, &cb, RD_EXCHANGE_LIMIT, &elems,
                           &peers) == 0);
    CHECK(elems == want_elems);
    CHECK(peers == want_peers);
    if (elems != want_elems || peers != want_peers) {
        char a[256], b[256];
        fprintf(stderr, "  need: %s -> %s: elements %llu (devices say "
                        "%llu), peers %llu (devices say %llu)\n",
                redist_type_format(&p.from, m, a, sizeof a),
                redist_type_format(&p.to, m, b, sizeof b),
                (unsigned long long)elems, (unsigned long long)want_elems,
                (unsigned long long)peers, (unsigned long long)want_peers);
    }
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------ chains */

/* Random walks mixing exchanges to random types with the other steps. */
static void chain_case(void)
{
    rp_problem p;
    redist_mesh_t *m = random_problem(4, &p);
    rp_shape_walk(&rng, &p, 2);
    rp_dtype_reduce(&rng, &p);
    rp_walk w;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    if (p.elems > 20000 || rp_random_walk(&rng, &p, 5, 1, &w)) {
        skipped++;
        redist_mesh_free(m);
        return;
    }
    if (w.refused[0])
        rp_fail(&tally, "chain", NULL, "step table refused a step: %s",
                w.refused);
    if (w.exchanges == 0)
        skipped++;
    else if (rp_walk_plan(&p, &w, &plan, &err))
        rp_fail(&tally, "chain", NULL, "building the chain's plan: %s",
                err.text);
    else
        run_plan("chain", plan, UINT64_MAX);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------- timed */

static void timed_case(void)
{
    rp_problem p;
    redist_mesh_t *m = random_problem(4, &p);
    int naxes = redist_mesh_num_axes(m);
    /* the target may reduce some partial axes */
    rp_type(&rng, m, p.nd, 0, 0, p.from.partial & (uint32_t)rp_next(&rng),
            &p.to);
    rp_shape_between(&rng, &p, 2, 1);
    rp_dtype_reduce(&rng, &p);
    redist_cost_model_t cm;
    redist_cost_model_default(&cm);
    for (int a = 0; a < naxes; a++)
        cm.axis_link[a] = (uint8_t)rp_in(&rng, 0, REDIST_LINK_COUNT - 1);
    redist_plan_options_t po = {.max_states = 200000,
                                .objective = REDIST_OBJECTIVE_TIME,
                                .cost = &cm};
    redist_plan_t *plan = NULL;
    if (p.elems > 20000 || rp_plan(&p, &po, &plan, NULL))
        skipped++;
    else
        run_plan("timed", plan, UINT64_MAX);
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* ------------------------------------------- a backend without exchange */

typedef struct {
    const redist_plan_t *plan;
    redist_backend_t *be;
    void *src, *dst;
    redist_status_t st;
    redist_error_t err;
} job_t;

static void *job_run(void *p)
{
    job_t *j = p;
    redist_error_clear(&j->err);
    j->st = redist_plan_execute(j->plan, j->be, j->src, j->dst, NULL, NULL,
                                &j->err);
    return NULL;
}

static void no_exchange_backend(void)
{
    redist_spec_t *s = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    CHECK(redist_spec_from_strings("x=2,y=2", "16", "f32", "x", NULL, "y",
                                   NULL, NULL, NULL, 0, &s, &err) == 0);
    if (!s)
        return;
    redist_step_view_t v = exchange_view(redist_spec_to(s));
    CHECK(redist_plan_from_steps(s, 1, &v, &plan, &err) == REDIST_OK);
    redist_sim_t *w = NULL;
    CHECK(redist_sim_create(4, 0, &w, &err) == REDIST_OK);
    if (!plan || !w) {
        redist_plan_free(plan);
        redist_spec_free(s);
        redist_sim_free(w);
        return;
    }
    rd_backend_ops ops = *redist_sim_backend(w, 0)->ops;
    ops.exchange = NULL;
    ops.name = "nox";
    for (int r = 0; r < 4; r++)
        redist_sim_backend(w, r)->ops = &ops;
    redist_exec_info_t info;
    CHECK(redist_plan_exec_info(plan, redist_sim_backend(w, 0), NULL, &info,
                                &err) == REDIST_ERR_INVALID);
    CHECK(strstr(err.text, "backend nox does not run exchange steps") !=
          NULL);
    /* no backend given: the figures of a backend that runs everything */
    CHECK(redist_plan_exec_info(plan, NULL, NULL, &info, NULL) == REDIST_OK);
    job_t jobs[4];
    pthread_t th[4];
    float bufs[8][8];
    memset(bufs, 0, sizeof bufs);
    for (int r = 0; r < 4; r++) {
        jobs[r].plan = plan;
        jobs[r].be = redist_sim_backend(w, r);
        jobs[r].src = bufs[r];
        jobs[r].dst = bufs[4 + r];
        pthread_create(&th[r], NULL, job_run, &jobs[r]);
    }
    for (int r = 0; r < 4; r++) {
        pthread_join(th[r], NULL);
        CHECK(jobs[r].st == REDIST_ERR_INVALID);
        CHECK(strstr(jobs[r].err.text, "does not run exchange steps (step "
                                       "1)") != NULL);
    }
    redist_sim_free(w);
    redist_plan_free(plan);
    redist_spec_free(s);
}

int main(int argc, char **argv)
{
    int direct = argc > 1 ? atoi(argv[1]) : 400;
    int chains = argc > 2 ? atoi(argv[2]) : 400;
    int timed = argc > 3 ? atoi(argv[3]) : 400;
    int needs = argc > 5 ? atoi(argv[5]) : 20000;
    rp_seed(&rng, argc > 4 ? argv[4] : NULL, 0);
    for (int i = 0; i < needs; i++)
        need_case();
    for (int i = 0; i < direct; i++)
        direct_case();
    for (int i = 0; i < chains; i++)
        chain_case();
    for (int i = 0; i < timed; i++)
        timed_case();
    no_exchange_backend();
    printf("runs %d (skipped %d: too large, no plan or no exchange); "
           "exchange steps %d (%d packed, %d unpacked, the others direct)\n",
           tally.runs, skipped, exchanges, packed, unpacked);
    printf("need by devices: %d pairs (%d nested, %d not)\n",
           need_nested + need_other, need_nested, need_other);
    printf("checks %d, %d failed\n", checks, check_failures);
    printf("%d passed, %d failed\n", tally.runs - tally.failures,
           tally.failures);
    return tally.failures != 0 || check_failures != 0;
}
