/*
 * Many arrays under one budget (doc/spec-format.md section 10,
 * doc/arrays.md): every array planned, the set grouped into rounds.
 *
 * ALGORITHM.  Each array is planned on its own (redist_plan_create, one
 * or two meshes), so each plan is the one a one-array spec would get.
 * Arrays of one round run together (set_run.c): their programs'
 * exchanges are combined into one message per peer, and every array of
 * the round holds its scratch at once.  So a round needs the sum of its
 * arrays' scratch, each array's figure being its executor program's
 * (rd_set_program: the program set_run.c runs on the backend kind the
 * set is planned for, or the generic one; the most any device needs; each of its two
 * scratch buffers rounded up to RD_SET_ALIGN bytes, as the arena lays
 * them out).  Rounds are
 * filled first-fit in order of decreasing scratch (ties: spec order), so
 * no round's sum exceeds budget_bytes; without a budget there is one
 * round.  An array whose scratch alone exceeds the budget makes the set
 * infeasible; the error names it and the smallest budget that works
 * (the largest single array's scratch, with reductions kept as
 * collectives where that needs less: COMBINED COLLECTIVES below).  A set
 * with reductions that run as collectives keeps
 * RD_SET_WORK_LEAST bytes of every round for the backend's work space
 * (backend.h, begin_programs: the slowest reduction needs one element
 * beside a pass's spare region); a run gives the backend whatever the
 * budget leaves beside the largest round on top.
 *
 * MODELLED TIME OF A ROUND.  set_run.c advances a round's arrays in
 * lockstep: the j-th exchange of every array that has one (a one-mesh
 * array's j-th exchange pass of its set program: its j-th exchange step;
 * a two-mesh array's exchange passes of its phase A's set program, then
 * its transfer, then those of its phase B: with phases of no exchange,
 * its transfer is its first) goes out as one combined exchange, one
 * message per peer and direction.  Everything
 * else runs as each plan says.  So a round costs its arrays' plan times
 * (each array's own, unchanged, in its line of the table), less, per
 * combined exchange of two or more parts, what combining saves: the
 * parts' own step times added up, less the combined exchange's time, the
 * most any device d spends,
 *   max(sum over the peers d receives from, sum over those it sends to,
 *       of one alpha per peer) + max(beta x bytes received, beta x bytes
 *       sent, each part's bytes at its part's beta) + gamma x the bytes
 *       d receives of parts that reduce them (a lowered reduction's
 *       contributions, a transfer's that sums: at least what it reduces,
 *       so the reducing is never credited away),
 * the alpha of a peer being the slowest of the parts that message it.
 * Each part's alpha and beta are its plan's cost model's at the step's
 * link level, the level the planner charges the step at
 * (redist_plan_step_link: a collective's axis, a lowered all_reduce's
 * too; an exchange's moved axes; a phase's: its phase plan's, on its
 * mesh, whose ranks are
 * the devices of the mesh's list), a transfer's the level of a message leaving the source mesh
 * (the slowest axis, at least node; a plan that costs the transfer pair
 * by pair may give some messages a faster level, so this can only
 * under-credit).  A combined exchange never costs more than its parts
 * added up (the lesser is taken), nor a round more than its arrays; a
 * round of one array, or with one part per exchange, costs its plans'
 * times exactly; plans without a cost model (time 0) are not credited.
 * Per device and peer this is alpha once for k arrays' messages where the
 * plans pay it k times.  The set's time adds up its rounds'.
 *
 * COMBINED COLLECTIVES.  A set of two or more arrays builds its one-mesh
 * programs with RD_PROG_LOWER (program.c): every all_gather, all_to_all
 * and permute step becomes an exchange from the type before it to the
 * type after it (exchange.c: each piece from its one holder within the
 * group, the rule an uneven plan's collectives already run by).  So they
 * are exchange passes like any other, and a round combines them with
 * the other arrays' exchanges and transfers: a round of a hundred arrays
 * each ending in an all_gather sends one message per peer, not a hundred
 * collectives.  The bytes are the collective's (a member receives the
 * s - 1 other chunks of its group, each once); per array the messages
 * are point to point where MPI_Allgather may use log s rounds, but
 * combined, k arrays pay s - 1 alphas instead of k (s - 1).  Scratch:
 * the lowered program's (exchange.c: its pack and unpack buffers hold
 * at most the blocks before and after, as the collective's split and
 * merge passes do), which is what the scratch figures and so the rounds
 * count.  The modelled time credits them as combined exchanges (above),
 * each part's own time its collective step's.  With RD_PROG_LOWER_RED the
 * reductions (reduce_scatter, all_reduce) of one-mesh arrays are
 * lowered too (program.c): an exchange of the contributions and a sum of
 * them in member order (an all_reduce: then an exchange that gathers the
 * sums, each of its two exchanges credited half the step's time).  Their
 * scratch holds the contributions, a block, where the collective needs
 * the reserve only, so under a budget that cannot hold every array's
 * lowered program the arrays whose lowered program does not fit keep
 * their collectives (rd_set_flags, fit_budget) when that needs a smaller
 * budget.  Other reductions run as each plan says, one collective per
 * array.  A set of one array runs its plan's own collectives.
 *
 * TWO-MESH ARRAYS' PHASES.  In a set of two or more arrays a two-mesh
 * array's phases are built the same way (rd_set_flags: RD_PROG_LOWER,
 * RD_PROG_LOWER_RED unless kept), each phase plan being a one-mesh plan
 * on its mesh: their all_gather, all_to_all, permute and exchange steps
 * and most reductions are exchange passes, which the round combines
 * with the other arrays' exchanges and transfers on the union's
 * endpoint, each piece's peer (a rank of the phase's mesh) the device of
 * that rank in the mesh's list (set_two.c translates the bound lists
 * once at preparation).  So k two-mesh arrays each ending in an
 * all_gather on the target mesh make two combined exchanges (the
 * transfers, then the gathers), not one and k collectives.  The phases'
 * scratch is the lowered programs' (rd_set_two_layout_of with the same
 * flags), which the array's figure counts; fit_budget treats a two-mesh
 * array's phase reductions as a one-mesh array's reductions
 * (rd_set_collective_reductions looks at both phases).  What stays a
 * collective (a kept or unlowered reduction) runs on the phase's mesh
 * endpoint as before.
 *
 * EXCHANGES FIGURE.  A round's `exchanges` is the combined exchanges the
 * runner makes: the most exchange passes of any array's set program (a
 * two-mesh array's: its phases' exchange passes and its transfer, in a
 * set of one its transfer alone), so it counts lowered collectives,
 * an uneven plan's collectives (exchanges in its program) and OpenSHMEM's
 * whole exchange steps alike.
 *
 * COST.  The plans' own cost (n plans), one program per array (two per
 * two-mesh array: its phases), and O(n log n + n R) for the rounds (R
 * rounds).  The round times: each array's set programs once more, and
 * for each combined exchange
 * of two or more parts, every part's lists bound for every device
 * (O(N) per part and device for an exchange's lists, a transfer's walk
 * per device); one-mesh exchanges of the same geometry and cost (a
 * model's many layers) are bound once per device for all of them.
 * MEMORY: the plans, a round's programs at once and O(N) per combined
 * exchange.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "set.h"
#include "set_two.h"
#include "../plan/plan_internal.h"
#include "../plan/steps.h"
#include "../core/internal.h"

void redist_plan_set_free(redist_plan_set_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n && !s->borrowed; i++)
        redist_plan_free(s->plan[i]);
    free(s->plan);
    free(s->scratch);
    free(s->keep);
    free(s->round);
    free(s->rounds);
    free(s->name);
    free(s);
}

redist_status_t rd_set_program(const redist_plan_t *plan,
                               const rd_backend_ops *ops, unsigned flags,
                               rd_program *p, redist_error_t *err)
{
    /* the backend's whole steps, but exchange steps as passes of their
     * own wherever it has an exchange op (MPI), so that they combine */
    unsigned caps = ops ? ops->caps : 0;
    unsigned fused = ops && ops->step ? ops->fused_ops : 0;
    if (ops && ops->exchange)
        fused &= ~(1u << REDIST_OP_EXCHANGE);
    return rd_program_build_b(plan, caps, fused, ops ? ops->set_build : 0,
                              flags, p, err);
}

redist_status_t rd_set_two_layout_of(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, rd_set_two_layout *l,
                                     redist_error_t *err)
{
    return rd_set_two_layout_ab(plan, ops, ops, flags, l, err);
}

redist_status_t rd_set_two_layout_ab(const redist_plan_t *plan,
                                     const rd_backend_ops *ops_a,
                                     const rd_backend_ops *ops,
                                     unsigned flags, rd_set_two_layout *l,
                                     redist_error_t *err)
{
    memset(l, 0, sizeof *l);
    for (int side = 0; side < 2; side++) {
        const redist_plan_t *ph = plan->m->phase[side];
        /* an empty phase: the caller's block is S (R), except the R
         * block of a backend that receives in its own scratch only
         * (one-sided puts: the arena is symmetric, the caller's
         * destination may not be), copied to the destination after the
         * transfer (set_two.c) */
        if (!redist_plan_num_steps(ph) && side && ops &&
            (ops->caps & RD_CAP_RECV_IN_SCRATCH))
            l->bytes[RD_TWO_R] = redist_spec_src_bytes(redist_plan_spec(ph));
        if (!redist_plan_num_steps(ph))
            continue;
        redist_status_t st = rd_set_program(ph, side ? ops : ops_a, flags,
                                            &l->prog[side], err);
        if (st)
            return st;
        const redist_spec_t *ps = redist_plan_spec(ph);
        int a = side ? RD_TWO_BSA : RD_TWO_ASA;
        l->bytes[a] = l->prog[side].scratch[0];
        l->bytes[a + 1] = l->prog[side].scratch[1];
        l->bytes[side ? RD_TWO_R : RD_TWO_S] =
            side ? redist_spec_src_bytes(ps) : redist_spec_dst_bytes(ps);
    }
    int64_t k = rd_two_slabs(plan);
    if (k > 1) /* the landing slabs of a transfer that sums */
        l->bytes[RD_TWO_C] =
            (uint64_t)k *
            redist_spec_src_bytes(redist_plan_spec(plan->m->phase[1]));
    for (int p = 0; p < RD_TWO_NPARTS; p++)
        l->part[p] = rd_set_align(l->bytes[p]);
    return REDIST_OK;
}

int64_t rd_two_slabs(const redist_plan_t *plan)
{
    unsigned p = plan->m->sent.t.partial;
    if (!p)
        return 1;
    const redist_mesh_t *m = redist_spec_side_mesh(redist_plan_spec(plan), 0);
    int64_t k = 1;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        if (p >> a & 1u)
            k *= redist_mesh_axis_size(m, a);
    return k;
}

redist_status_t rd_set_array_scratch(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, uint64_t *out,
                                     redist_error_t *err)
{
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2) {
        /* a two-mesh array's phases, lowered as a one-mesh array's
         * program is (flags): the programs set_two.c runs */
        rd_set_two_layout l;
        redist_status_t st = rd_set_two_layout_of(plan, ops, flags, &l, err);
        *out = 0;
        for (int k = 0; k < RD_TWO_NPARTS; k++)
            *out += l.part[k];
        rd_program_free(&l.prog[0]);
        rd_program_free(&l.prog[1]);
        return st;
    }
    rd_program p;
    redist_status_t st = rd_set_program(plan, ops, flags, &p, err);
    if (!st)
        *out = rd_set_align(p.scratch[0]) + rd_set_align(p.scratch[1]);
    rd_program_free(&p);
    return st;
}

static int by_scratch(const void *a, const void *b, void *ctx)
{
    const uint64_t *sc = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (sc[i] != sc[j])
        return sc[i] > sc[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Insertion sort with a context (n is the set's size; qsort has no
 * context in C11). */
static void sort_idx(int *idx, int n, const uint64_t *sc)
{
    for (int i = 1; i < n; i++) {
        int v = idx[i], j = i;
        while (j > 0 && by_scratch(&idx[j - 1], &v, (void *)sc) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* First-fit decreasing under the budget. */
static redist_status_t group(redist_plan_set_t *s, redist_error_t *err)
{
    int n = s->n;
    if (n < 1)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "no arrays");
    int *idx = malloc((size_t)n * sizeof *idx);
    uint64_t *fill = calloc((size_t)n, sizeof *fill);
    if (!idx || !fill) {
        free(idx);
        free(fill);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    sort_idx(idx, n, s->scratch);
    int worst = idx[0];
    uint64_t need = s->scratch[worst] + s->reserve;
    if (s->budget != REDIST_NO_BUDGET && need > s->budget) {
        free(idx);
        free(fill);
        return rd_error(
            err, REDIST_ERR_INFEASIBLE, NULL, "budget_bytes",
            "array \"%s\" alone needs %llu bytes of scratch per device "
            "(%llu for its buffers, %llu of reduction work space), more "
            "than budget_bytes %llu: the smallest budget that works is %llu",
            redist_spec_name(redist_plan_spec(s->plan[worst])),
            (unsigned long long)need, (unsigned long long)s->scratch[worst],
            (unsigned long long)s->reserve, (unsigned long long)s->budget,
            (unsigned long long)need);
    }
    int nr = 0;
    for (int k = 0; k < n; k++) {
        int i = idx[k], r = 0;
        if (s->budget != REDIST_NO_BUDGET)
            while (r < nr &&
                   fill[r] + s->scratch[i] + s->reserve > s->budget)
                r++;
        if (r == nr)
            nr++;
        fill[r] += s->scratch[i];
        s->round[i] = r;
    }
    free(idx);
    free(fill);
    s->nrounds = nr;
    return REDIST_OK;
}

/* Per-round figures from the arrays' plans. */
static void round_figures(redist_plan_set_t *s)
{
    for (int i = 0; i < s->n; i++) {
        redist_plan_stats_t ps;
        rd_set_round *r = &s->rounds[s->round[i]];
        redist_plan_stats(s->plan[i], &ps);
        r->narrays++;
        r->scratch_bytes += s->scratch[i] + (r->narrays == 1 ? s->reserve : 0);
        r->recv_bytes += ps.recv_bytes;
        r->peak_bytes += ps.peak_bytes;
        r->arrays_time_s += ps.time_s;
        r->collectives += ps.collectives;
        if (!ps.memory_efficient)
            s->memory_efficient = 0;
    }
}

/* One part of a combined exchange (the model: the top of this file): an
 * array's exchange pass (prog, xi) or its transfer (prog NULL), its
 * plan step's modelled time, and the alpha and beta of its messages. */
typedef struct rt_part {
    const redist_plan_t *plan;
    rd_program *prog;
    int xi;
    double t, alpha, beta;
    int mult; /* in a combined exchange: the parts it stands for (0: one
                 of another part's) */
    double gamma; /* per byte received: it is reduced (contributions) */
    /* a two-mesh array's lowered phase: its lists are in ranks of side's
     * mesh of spec two (rank r: device redist_spec_mesh_device(two, side,
     * r)); NULL: the union's */
    const redist_spec_t *two;
    int side;
} rt_part;

/* Do parts a and b run on the same ranks (the union, or meshes of the
 * same devices in the same order)? */
static int rt_same_ranks(const rt_part *a, const rt_part *b)
{
    if (!a->two || !b->two)
        return !a->two && !b->two;
    int64_t n = redist_mesh_num_devices(redist_spec_side_mesh(a->two, a->side));
    if (n != redist_mesh_num_devices(redist_spec_side_mesh(b->two, b->side)))
        return 0;
    for (int64_t r = 0; r < n; r++)
        if (redist_spec_mesh_device(a->two, a->side, r) !=
            redist_spec_mesh_device(b->two, b->side, r))
            return 0;
    return 1;
}

/* Do one-mesh exchange parts a and b move the same pieces between the
 * same devices at the same cost (even blocks)?  Then a device's lists
 * are made once for both: a set often holds many arrays of one shape. */
static int rt_same(const rt_part *a, const rt_part *b)
{
    if (!a->prog || !b->prog || a->alpha != b->alpha || a->beta != b->beta ||
        a->gamma != b->gamma || !rt_same_ranks(a, b))
        return 0;
    const rd_xchg *x = &a->prog->xchg[a->xi], *y = &b->prog->xchg[b->xi];
    size_t nd = (size_t)x->ndims * sizeof(int64_t),
           na = (size_t)x->naxes * sizeof(int64_t);
    return !x->al && !x->bl && !y->al && !y->bl && x->ndims == y->ndims &&
           x->naxes == y->naxes && x->elem == y->elem &&
           !memcmp(x->size, y->size, na) && !memcmp(x->stride, y->stride, na) &&
           !memcmp(x->la, y->la, nd) && !memcmp(x->lb, y->lb, nd) &&
           redist_type_equal(&x->a, &y->a) && redist_type_equal(&x->b, &y->b);
}

/* Received (send 0) or sent bytes of one message of a part at device d:
 * per peer the slowest alpha of the parts that message it, beta by
 * part. */
static void rt_add(double *alpha, double *beta, int64_t N, int64_t d,
                   int send, int64_t peer, uint64_t bytes, const rt_part *p)
{
    if (peer == d || peer < 0 || peer >= N || !bytes)
        return;
    double *a = &alpha[send ? N + peer : peer];
    if (p->alpha > *a)
        *a = p->alpha;
    beta[send] += p->beta * (double)bytes * (double)p->mult;
    if (!send) /* the reducing of what it receives, after the exchange */
        beta[2] += p->gamma * (double)bytes * (double)p->mult;
}

/* Part p's peer q as a device of the union. */
static int64_t rt_peer(const rt_part *p, int64_t q)
{
    return p->two ? redist_spec_mesh_device(p->two, p->side, q) : q;
}

/* The modelled time of one combined exchange of parts[0..np): the parts'
 * own times added up, or, when each has a cost model and there are two
 * or more, the most any device spends with one message per peer, if
 * that is less. */
static redist_status_t rt_combined(rt_part *parts, int np, int64_t N,
                                   double *out, redist_error_t *err)
{
    double sum = 0;
    int cost = np > 1;
    for (int k = 0; k < np; k++) {
        sum += parts[k].t;
        cost = cost && parts[k].plan->has_cost &&
               (!parts[k].prog || parts[k].xi >= 0);
    }
    *out = sum;
    if (!cost)
        return REDIST_OK;
    for (int k = 0; k < np; k++) {
        parts[k].mult = 1;
        for (int j = 0; j < k && parts[k].mult; j++)
            if (parts[j].mult && rt_same(&parts[j], &parts[k])) {
                parts[j].mult++;
                parts[k].mult = 0;
            }
    }
    double *alpha = malloc((size_t)N * 2 * sizeof *alpha), most = 0;
    if (!alpha)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    redist_status_t st = REDIST_OK;
    for (int64_t d = 0; d < N && !st; d++) {
        double beta[3] = {0, 0, 0}, al[2] = {0, 0};
        for (int64_t q = 0; q < 2 * N; q++)
            alpha[q] = 0;
        for (int k = 0; k < np && !st; k++) {
            const rt_part *p = &parts[k];
            if (!p->mult)
                continue;
            if (!p->prog) {
                rd_tlists t;
                if (rd_transfer_lists(p->plan, d, &t)) {
                    st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                  "out of memory");
                    break;
                }
                for (int64_t m = 0; m < t.nrecv; m++)
                    rt_add(alpha, beta, N, d, 0, t.recv[m].peer,
                           t.recv[m].bytes, p);
                for (int64_t m = 0; m < t.nsend; m++)
                    rt_add(alpha, beta, N, d, 1, t.send[m].peer,
                           t.send[m].bytes, p);
                rd_tlists_free(&t);
                continue;
            }
            rd_xchg *x = &p->prog->xchg[p->xi];
            /* a phase's lists: d's rank in its mesh, peers translated */
            int64_t r = p->two ? rd_spec_mesh_rank(p->two, p->side, d) : d;
            if (r < 0)
                continue;
            st = rd_xchg_bind(x, r, err);
            for (int64_t m = 0; !st && m < x->nrecv; m++)
                rt_add(alpha, beta, N, d, 0, rt_peer(p, x->recv[m].peer),
                       x->recv[m].bytes, p);
            for (int64_t m = 0; !st && m < x->nsend; m++)
                rt_add(alpha, beta, N, d, 1, rt_peer(p, x->send[m].peer),
                       x->send[m].bytes, p);
            rd_xchg_unbind(x);
        }
        for (int64_t q = 0; q < N; q++) {
            al[0] += alpha[q];
            al[1] += alpha[N + q];
        }
        double t = (al[0] > al[1] ? al[0] : al[1]) +
                   (beta[0] > beta[1] ? beta[0] : beta[1]) + beta[2];
        if (t > most)
            most = t;
    }
    free(alpha);
    if (!st && most < sum)
        *out = most;
    return st;
}

/* The exchange passes of program prog of plan (a one-mesh array's, or
 * side's phase of the two-mesh spec two) appended to parts (*np). */
static void rt_prog_parts(const redist_plan_t *plan, rd_program *prog,
                          const redist_spec_t *two, int side, rt_part *parts,
                          int *np)
{
    const redist_cost_model_t *cm = &plan->cost;
    redist_step_view_t v;
    for (int k = 0; k < prog->npasses; k++) {
        const rd_pass *ps = &prog->pass[k];
        if (!rd_pass_is_exchange(ps) || redist_plan_step(plan, ps->first, &v))
            continue;
        /* a lowered all_reduce is two exchanges: each half the step; the
         * first exchange of a lowered reduction brings the contributions
         * its sum reduces (gamma per byte received) */
        int halves = 0, first = 1;
        for (int j = 0; j < prog->npasses; j++) {
            halves += rd_pass_is_exchange(&prog->pass[j]) &&
                      prog->pass[j].first == ps->first;
            first &= !(j < k && rd_pass_is_exchange(&prog->pass[j]) &&
                       prog->pass[j].first == ps->first);
        }
        int sums = first && (v.op == REDIST_OP_REDUCE_SCATTER ||
                             v.op == REDIST_OP_ALL_REDUCE);
        /* the level the plan charges the step at: a collective's axis
         * (an all_reduce moves no shard, so the moved axes would say the
         * fastest level), an exchange's moved axes; -1 for a step that
         * sends nothing, whose part has no peers to charge */
        int l = redist_plan_step_link(plan, ps->first, cm);
        if (l < 0)
            l = 0;
        parts[(*np)++] = (rt_part){
            plan, prog, ps->xi >= 0 && ps->xi < prog->nxchg ? ps->xi : -1,
            v.time_s / halves, cm->alpha[l], cm->beta[l], 1,
            sums ? cm->gamma : 0, two, side};
    }
}

/* Array i's exchanges, in the order a round combines them (set_run.c):
 * a one-mesh array's exchange passes of its set program (prog[0]); a
 * two-mesh array's transfer, after its phase A's exchange passes and
 * before phase B's when the set lowers them (prog[0], prog[1]: its
 * phases' programs).  The caller frees prog[0..2).  parts gets them
 * (*np their number). */
static redist_status_t rt_parts_of(const redist_plan_set_t *s, int i,
                                   rd_program prog[2], rt_part **parts,
                                   int *np, redist_error_t *err)
{
    const redist_plan_t *plan = s->plan[i];
    const rd_backend_ops *kind = s->has_kind ? &s->kind : NULL;
    redist_status_t st;
    *np = 0;
    *parts = NULL;
    if (redist_spec_num_meshes(plan->spec) == 2) {
        const redist_cost_model_t *cm = &plan->cost;
        redist_step_view_t v;
        rd_set_two_layout l;
        memset(&l, 0, sizeof l);
        st = s->lower ? rd_set_two_layout_of(plan, kind, rd_set_flags(s, i),
                                             &l, err)
                      : REDIST_OK;
        prog[0] = l.prog[0];
        prog[1] = l.prog[1];
        if (!st && !(*parts = calloc((size_t)(prog[0].npasses +
                                              prog[1].npasses + 1),
                                     sizeof **parts)))
            st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
        if (st)
            return st;
        rt_prog_parts(plan->m->phase[0], &prog[0], plan->spec, 0, *parts, np);
        /* the level the plan gives a message that leaves the source mesh */
        int far = rd_transfer_far_link(plan->spec, cm);
        rt_part *t = &(*parts)[(*np)++];
        *t = (rt_part){plan, NULL, -1, 0, cm->alpha[far], cm->beta[far],
                       1, rd_two_slabs(plan) > 1 ? cm->gamma : 0, NULL, 0};
        for (int k = 0; k < redist_plan_num_steps(plan); k++)
            if (!redist_plan_step(plan, k, &v) && v.op == REDIST_OP_TRANSFER)
                t->t += v.time_s;
        rt_prog_parts(plan->m->phase[1], &prog[1], plan->spec, 1, *parts, np);
        return REDIST_OK;
    }
    st = rd_set_program(plan, kind, rd_set_flags(s, i), &prog[0], err);
    if (!st && prog[0].npasses &&
        !(*parts = calloc((size_t)prog[0].npasses, sizeof **parts)))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (!st)
        rt_prog_parts(plan, &prog[0], NULL, 0, *parts, np);
    return st;
}

/* Round r's modelled time: its arrays' plan times less, per combined
 * exchange, what combining saves (rt_combined). */
static redist_status_t round_time(redist_plan_set_t *s, int r,
                                  redist_error_t *err)
{
    rd_set_round *x = &s->rounds[r];
    int m = x->narrays, J = 0;
    rd_program *prog = calloc(2 * ((size_t)m + 1), sizeof *prog);
    rt_part **parts = calloc((size_t)m + 1, sizeof *parts);
    int *np = calloc((size_t)m + 1, sizeof *np);
    rt_part *comb = calloc((size_t)m + 1, sizeof *comb);
    redist_status_t st = REDIST_OK;
    if (!prog || !parts || !np || !comb)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    int64_t N = redist_spec_num_devices(s->plan[0]->spec);
    int k = 0;
    for (int i = 0; i < s->n && !st; i++)
        if (s->round[i] == r) {
            st = rt_parts_of(s, i, &prog[2 * k], &parts[k], &np[k], err);
            if (np[k] > J)
                J = np[k];
            k++;
        }
    /* the combined exchanges the runner makes: as many as the most any
     * array stops at (its programs' exchange passes, not its plan's
     * exchange steps: an uneven plan's collectives, a set's lowered ones
     * and the transfers are exchanges too) */
    x->exchanges = J;
    x->time_s = x->arrays_time_s;
    for (int j = 0; j < J && !st; j++) {
        int c = 0;
        double sum = 0, t;
        for (int a = 0; a < k; a++)
            if (j < np[a]) {
                comb[c++] = parts[a][j];
                sum += parts[a][j].t;
            }
        st = rt_combined(comb, c, N, &t, err);
        if (!st)
            x->time_s -= sum - t;
    }
    for (int a = 0; prog && parts && a < m; a++) {
        rd_program_free(&prog[2 * a]);
        rd_program_free(&prog[2 * a + 1]);
        free(parts[a]);
    }
    free(prog);
    free(parts);
    free(np);
    free(comb);
    return st;
}

static redist_status_t finish(redist_plan_set_t *s, redist_plan_set_t **out,
                              redist_error_t *err);

/* The reserve of every round of a set with reductions run as collectives:
 * the backend's least work space, for the union's endpoint and each two-
 * mesh array's mesh (each has work space of its own). */
static uint64_t reserve_of(const redist_plan_set_t *s)
{
    return RD_SET_WORK_LEAST * (uint64_t)(1 + rd_set_distinct_meshes(s));
}

/* The least budget a set needs with these scratch figures: the largest
 * and, when some array runs reductions as collectives, the reserve. */
static uint64_t need_of(const redist_plan_set_t *s, const uint64_t *sc,
                        int collectives)
{
    uint64_t most = 0;
    for (int i = 0; i < s->n; i++)
        most = sc[i] > most ? sc[i] : most;
    return most + (collectives ? reserve_of(s) : 0);
}

/* Lowered reductions (program.c) hold the contributions, a block, where
 * the collective needs little beside the backend's work space.  Under a
 * budget that cannot hold every array's lowered program, the arrays whose
 * lowered scratch does not fit keep their collectives (alt[i]: their
 * scratch so, UINT64_MAX for an array with nothing to keep); of
 * two that both fail, the one needing the smaller budget stays, so that
 * the error names the smallest budget that works. */
static void fit_budget(redist_plan_set_t *s, const uint64_t *alt)
{
    int any = 0, col = 0;
    for (int i = 0; i < s->n; i++) {
        any |= alt[i] != UINT64_MAX;
        col |= rd_set_collective_reductions(s->plan[i], s->lower);
    }
    if (!any || s->budget == REDIST_NO_BUDGET)
        return;
    uint64_t need_a = need_of(s, s->scratch, col);
    if (need_a <= s->budget)
        return;
    /* with collectives kept, every round holds the reserve */
    uint64_t r = reserve_of(s);
    uint64_t *b = malloc((size_t)s->n * sizeof *b);
    if (!b)
        return; /* the lowered figures stand: no budget is exceeded */
    int kept = 0;
    for (int i = 0; i < s->n; i++) {
        int keep = alt[i] != UINT64_MAX && s->scratch[i] + r > s->budget &&
                   alt[i] < s->scratch[i];
        b[i] = keep ? alt[i] : s->scratch[i];
        kept |= keep;
    }
    if (kept && need_of(s, b, 1) < need_a)
        for (int i = 0; i < s->n; i++)
            if (b[i] != s->scratch[i]) {
                s->keep[i] = 1;
                s->scratch[i] = b[i];
            }
    free(b);
}

/* A set of `arrays`: each planned (popts), or with `of` each replaying
 * of's plan of the same index; for backends of kind `kind` (NULL: the
 * generic programs) and execution flags `flags`. */
static redist_status_t create(const redist_arrays_t *arrays,
                              const redist_plan_options_t *popts,
                              const rd_backend_ops *kind, unsigned flags,
                              const redist_plan_set_t *of,
                              redist_plan_set_t **out, redist_error_t *err)
{
    redist_exec_options_t eo = {flags};
    int n = redist_arrays_count(arrays);
    redist_plan_set_t *s = calloc(1, sizeof *s);
    if (!s)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    s->plan = calloc((size_t)n, sizeof *s->plan);
    s->scratch = calloc((size_t)n, sizeof *s->scratch);
    s->round = calloc((size_t)n, sizeof *s->round);
    s->keep = calloc((size_t)n, sizeof *s->keep);
    s->name = malloc(strlen(redist_arrays_name(arrays)) + 1);
    s->budget = redist_arrays_budget(arrays);
    s->exec_flags = eo.flags;
    s->lower = n > 1;
    s->is_set = redist_arrays_is_set(arrays);
    s->memory_efficient = 1;
    if (kind) {
        s->has_kind = 1;
        s->kind = *kind;
    }
    if (!s->plan || !s->scratch || !s->round || !s->keep || !s->name) {
        redist_plan_set_free(s);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    strcpy(s->name, redist_arrays_name(arrays));
    uint64_t *alt = malloc((size_t)n * sizeof *alt);
    redist_status_t st = alt ? REDIST_OK
                             : rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                        "out of memory");
    for (int i = 0; alt && i < n; i++)
        alt[i] = UINT64_MAX; /* no alternative */
    for (int i = 0; i < n && !st; i++) {
        const redist_spec_t *sp = redist_arrays_get(arrays, i);
        st = of ? redist_plan_replay(of->plan[i], sp, &s->plan[i], err)
                : redist_plan_create(sp, popts, &s->plan[i], err);
        if (!st) {
            s->n = i + 1;
            st = rd_set_array_scratch(s->plan[i],
                                      s->has_kind ? &s->kind : NULL,
                                      rd_set_flags(s, i), &s->scratch[i], err);
        }
        /* the scratch with its reductions as collectives (fit_budget) */
        if (!st && s->lower && s->budget != REDIST_NO_BUDGET &&
            rd_set_collective_reductions(s->plan[i], 0) &&
            !rd_set_collective_reductions(s->plan[i], 1)) {
            s->keep[i] = 1;
            st = rd_set_array_scratch(s->plan[i],
                                      s->has_kind ? &s->kind : NULL,
                                      rd_set_flags(s, i), &alt[i], err);
            s->keep[i] = 0;
        }
        if (st && err) {
            /* name the array whose planning failed */
            char text[REDIST_ERROR_TEXT_LENGTH];
            size_t pos = 0;
            text[0] = '\0';
            rd_appendf(text, sizeof text, &pos, "array \"%s\": %s",
                       redist_spec_name(sp), err->text);
            rd_strlcpy(err->text, text, sizeof err->text);
        }
    }
    if (!st)
        fit_budget(s, alt);
    free(alt);
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    return finish(s, out, err);
}

redist_status_t redist_plan_set_create(const redist_arrays_t *arrays,
                                       const redist_plan_options_t *popts,
                                       const redist_backend_t *backend,
                                       const redist_exec_options_t *eopts,
                                       redist_plan_set_t **out,
                                       redist_error_t *err)
{
    if (!arrays || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL arrays or output");
    unsigned flags = eopts ? eopts->flags : 0;
    if (flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown execution flags 0x%x",
                        flags & ~(unsigned)REDIST_EXEC_PRESERVE_SRC);
    return create(arrays, popts, backend ? backend->ops : NULL, flags, NULL,
                  out, err);
}

redist_status_t redist_plan_set_replay(const redist_plan_set_t *set,
                                       const redist_arrays_t *arrays,
                                       const redist_backend_t *backend,
                                       redist_plan_set_t **out,
                                       redist_error_t *err)
{
    if (!set || !arrays || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL set, arrays or output");
    if (redist_arrays_count(arrays) != set->n)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "arrays",
                        "%d arrays to replay a set of %d",
                        redist_arrays_count(arrays), set->n);
    const rd_backend_ops *kind = backend && backend->ops ? backend->ops
                                 : set->has_kind     ? &set->kind
                                                     : NULL;
    return create(arrays, NULL, kind, set->exec_flags, set, out, err);
}

int rd_set_collective_reductions(const redist_plan_t *plan, int lower)
{
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2)
        return rd_set_collective_reductions(plan->m->phase[0], lower) ||
               rd_set_collective_reductions(plan->m->phase[1], lower);
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        if (!redist_plan_step(plan, k, &v) &&
            (v.op == REDIST_OP_REDUCE_SCATTER ||
             v.op == REDIST_OP_ALL_REDUCE) &&
            !(lower && rd_reduction_lowered_dim(plan, k) >= 0))
            return 1;
    }
    return 0;
}

/* The reserve, the rounds and their figures of a set whose plans and
 * scratch figures are made; *out = s, or s is freed. */
static redist_status_t finish(redist_plan_set_t *s, redist_plan_set_t **out,
                              redist_error_t *err)
{
    redist_status_t st = REDIST_OK;
    for (int i = 0; i < s->n && !s->reserve; i++)
        if (rd_set_collective_reductions(s->plan[i],
                                         s->lower && !s->keep[i]))
            s->reserve = reserve_of(s);
    st = group(s, err);
    if (!st && !(s->rounds = calloc((size_t)s->nrounds, sizeof *s->rounds)))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    round_figures(s);
    for (int r = 0; r < s->nrounds && !st; r++)
        st = round_time(s, r, err);
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    *out = s;
    return REDIST_OK;
}

redist_status_t rd_plan_set_of_plan(const redist_plan_t *plan,
                                    const rd_backend_ops *kind,
                                    unsigned flags, int usr,
                                    redist_plan_set_t **out,
                                    redist_error_t *err)
{
    redist_plan_set_t *s = calloc(1, sizeof *s);
    if (s) {
        s->plan = calloc(1, sizeof *s->plan);
        s->scratch = calloc(1, sizeof *s->scratch);
        s->round = calloc(1, sizeof *s->round);
        s->name = calloc(1, 1);
    }
    if (!s || !s->plan || !s->scratch || !s->round || !s->name) {
        redist_plan_set_free(s);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    s->borrowed = 1;
    s->n = 1;
    s->plan[0] = (redist_plan_t *)plan;
    s->budget = REDIST_NO_BUDGET;
    s->exec_flags = flags;
    s->memory_efficient = 1;
    if (kind) {
        s->has_kind = 1;
        s->kind = *kind;
    }
    uint64_t priv;
    s->solo = redist_spec_num_meshes(redist_plan_spec(plan)) == 2;
    s->solo_r = s->solo ? usr : RD_SOLO_R_ARENA;
    redist_status_t st =
        s->solo ? rd_set_two_solo_sizes(plan, kind, flags, usr, -1,
                                        &s->scratch[0], &priv, err)
                : rd_set_array_scratch(plan, kind, flags, &s->scratch[0],
                                       err);
    if (st) {
        redist_plan_set_free(s);
        return st;
    }
    return finish(s, out, err);
}

int redist_plan_set_num_arrays(const redist_plan_set_t *s)
{
    return s ? s->n : 0;
}

const redist_plan_t *redist_plan_set_plan(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->plan[i] : NULL;
}

int redist_plan_set_num_rounds(const redist_plan_set_t *s)
{
    return s ? s->nrounds : 0;
}

int redist_plan_set_round_of(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->round[i] : -1;
}

uint64_t redist_plan_set_array_scratch(const redist_plan_set_t *s, int i)
{
    return s && i >= 0 && i < s->n ? s->scratch[i] : 0;
}

int redist_plan_set_step_combined(const redist_plan_set_t *s, int i, int k)
{
    redist_step_view_t v;
    if (!s || i < 0 || i >= s->n || redist_plan_step(s->plan[i], k, &v))
        return -1;
    const redist_plan_t *plan = s->plan[i];
    if (v.op == REDIST_OP_TRANSFER)
        return 1;
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2) {
        if (!s->lower)
            return 0; /* the phases run whole */
        /* phase A's steps, the transfer, phase B's: lowered as a one-mesh
         * array's are */
        int na = redist_plan_num_steps(plan->m->phase[0]);
        plan = plan->m->phase[k > na];
        k = k > na ? k - na - 1 : k;
    }
    const redist_spec_t *sp = redist_plan_spec(plan);
    switch (v.op) {
    case REDIST_OP_EXCHANGE:
        return 1;
    case REDIST_OP_ALL_GATHER:
    case REDIST_OP_ALL_TO_ALL:
    case REDIST_OP_PERMUTE:
        return s->lower || redist_spec_is_uneven(sp);
    case REDIST_OP_REDUCE_SCATTER:
    case REDIST_OP_ALL_REDUCE:
        return (rd_set_flags(s, i) & RD_PROG_LOWER_RED) &&
               rd_reduction_lowered_dim(plan, k) >= 0;
    default:
        return 0;
    }
}

redist_status_t redist_plan_set_round(const redist_plan_set_t *s, int r,
                                      redist_round_stats_t *out)
{
    if (!s || !out || r < 0 || r >= s->nrounds)
        return REDIST_ERR_INVALID;
    *out = s->rounds[r];
    return REDIST_OK;
}

void redist_plan_set_stats(const redist_plan_set_t *s,
                           redist_plan_set_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->budget_bytes = REDIST_NO_BUDGET;
    if (!s)
        return;
    out->narrays = s->n;
    out->nrounds = s->nrounds;
    out->budget_bytes = s->budget;
    out->memory_efficient = s->memory_efficient;
    for (int r = 0; r < s->nrounds; r++) {
        const rd_set_round *x = &s->rounds[r];
        if (x->scratch_bytes > out->scratch_bytes)
            out->scratch_bytes = x->scratch_bytes;
        if (x->peak_bytes > out->peak_bytes)
            out->peak_bytes = x->peak_bytes;
        out->recv_bytes += x->recv_bytes;
        out->time_s += x->time_s;
        out->arrays_time_s += x->arrays_time_s;
        out->collectives += x->collectives;
        out->exchanges += x->exchanges;
    }
}
