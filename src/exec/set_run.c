/*
 * Running many arrays on one device (doc/arrays.md): a plan set (set.c)
 * prepared once, run many times, through any backend.
 *
 * ALGORITHM.  Prepare: every array's generic executor program (the one
 * its scratch figure was computed for) is built and bound to this
 * device; one agreement combines the ranks' local checks and a hash of
 * every plan and the rounds; then one scratch arena, as large as the
 * largest round, is allocated and agreed on.  The arrays of a round take
 * consecutive, aligned parts of it, so a round never holds more than its
 * scratch figure, and so never more than the budget.  Run: round by
 * round, the arrays' programs advance in lockstep: each array runs its
 * passes up to its next exchange (rd_exec_until_exchange), then the
 * exchanges of every array that reached one go out together through the
 * backend's exchange_multi (one message per peer and direction: MPI
 * sends each peer one struct datatype over the arrays' pieces, OpenSHMEM
 * one signalled series of puts), then again, until every program has
 * ended.  An exchange is an exchange op's pass, or a whole exchange step
 * of a backend without that op (OpenSHMEM).  A two-mesh array stops at
 * its transfer, and in a set of two or more arrays also at each exchange
 * pass of its phases (rd_set_two_advance: the phase's other passes run
 * on its mesh's endpoint), whose part of the combined exchange names
 * the union's ranks (set_two.c); a device off that mesh stops at the
 * same passes and gives an empty part.  Every rank runs the same
 * programs (they depend on the plans only), so every rank makes the
 * same calls in the same order.
 *
 * COST.  The arrays' programs, with the exchanges of a round's arrays
 * combined: per combined exchange alpha * peers instead of alpha *
 * peers * arrays.  A set of two or more arrays runs its all_gather,
 * all_to_all and permute steps, and most reductions (program.c), as
 * exchanges (set.c), two-mesh arrays' phases included, so they combine
 * too; other reductions run one collective per array.
 * PREPARE: per two-mesh array with lowered phases, one copy of each
 * phase exchange's bound lists with the peers translated and sorted
 * (O(pieces log pieces)), none per run.
 * MEMORY.  The arena (the largest round's scratch) and O(arrays + passes)
 * bookkeeping; the programs' own buffers are the caller's blocks and
 * their parts of the arena.  A set of one two-mesh array (solo) has the
 * layout of set_two.c, SOLO: its arena is the symmetric part, and its S
 * block (and, streamed, its R block) may take private memory of this
 * device's own size besides; a streamed transfer's counters (npes + 1
 * longs, symmetric) are allocated with the arena.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "set.h"
#include "set_two.h"
#include "../core/internal.h"

/* One array of a prepared set on this device. */
typedef struct set_array {
    int is_two;      /* it moves between two meshes */
    rd_exec_prep xp; /* one mesh: program, buffers */
    rd_set_two two;  /* two meshes: phases, transfer (else unused) */
    int cursor;      /* during a run: its next pass (two meshes: 0 phase
                        A, 1 the transfer, 2 phase B, 3 done) */
    int pc, begun;   /* two meshes, lowered phases: the phase's next pass;
                        whether the phase has started */
} set_array;

struct redist_set_prepared {
    const redist_plan_set_t *set;
    redist_backend_t *be;
    set_array *arr;   /* per array */
    rd_set_eps eps;   /* endpoints on the two-mesh arrays' meshes */
    int *order;       /* arrays by round, spec order within a round */
    int *start;       /* order[start[r] .. start[r + 1]) is round r (in
                         order's allocation) */
    rd_xpart *parts;  /* a combined exchange's parts, and their arrays */
    int *at;          /* in parts' allocation */
    void *arena;
    uint64_t arena_bytes; /* the largest round's parts, then the work */
    void *priv;           /* a solo two-mesh array's private S block */
    uint64_t priv_bytes;
    long *sig;            /* its streamed transfer's counters */
    size_t sig_bytes;
    uint64_t work_bytes;  /* the backends' work space (size_work) */
    uint64_t union_work;  /* of which the union endpoint's */
    int began;
    uint64_t high, count, messages, exchanges;
    rd_prepared f; /* start / test / wait (exec/async.c, set_async) */
};

static void set_async_init(redist_set_prepared_t *p);
static redist_status_t set_async_setup(redist_set_prepared_t *p,
                                       uint64_t hash, redist_error_t *err);

/* Do two backends build the same set programs? */
static int same_kind(const rd_backend_ops *a, const rd_backend_ops *b)
{
    unsigned fa = a->step ? a->fused_ops : 0, fb = b->step ? b->fused_ops : 0;
    return strcmp(a->name, b->name) == 0 && a->caps == b->caps && fa == fb &&
           !a->exchange == !b->exchange && a->set_build == b->set_build;
}

static redist_status_t local_checks(const redist_plan_set_t *set,
                                    redist_backend_t *be, void *const src[],
                                    void *const dst[], redist_error_t *err)
{
    if (!set)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "set", "NULL set");
    if (!src || !dst)
        return rd_error(err, REDIST_ERR_INVALID, NULL, src ? "dst" : "src",
                        "NULL buffer list");
    if (set->has_kind && !same_kind(&set->kind, be->ops))
        return rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                        "the set was planned for backend %s with other "
                        "options than this %s endpoint's: plan it with "
                        "this endpoint (redist_plan_set_create)",
                        set->kind.name, be->ops->name);
    /* A set planned for no backend runs the generic programs, which
     * assume nothing of where a step may write; a backend with
     * restrictions (RD_CAP_*: OpenSHMEM's receives land in its symmetric
     * scratch only) cannot run them. */
    if (!set->has_kind && be->ops->caps)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                        "the set was planned for no backend, and the %s "
                        "backend runs only sets planned for its endpoint: "
                        "plan it with this endpoint (redist_plan_set_create)",
                        be->ops->name);
    for (int i = 0; i < set->n; i++) {
        const redist_spec_t *s = redist_plan_spec(set->plan[i]);
        if (redist_spec_num_meshes(s) == 2 &&
            !(be->ops->sub && be->ops->exchange_multi))
            return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                            "array \"%s\" moves between two meshes: the "
                            "%s backend does not run two-mesh arrays in a "
                            "set (mpi, shmem and sim do)",
                            redist_spec_name(s), be->ops->name);
        if (be->size != redist_spec_num_devices(s))
            return rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                            "the backend connects %lld ranks, array \"%s\" "
                            "runs on %lld devices",
                            (long long)be->size, redist_spec_name(s),
                            (long long)redist_spec_num_devices(s));
        for (int side = 0; side < 2; side++) {
            void *b = side ? dst[i] : src[i];
            if (!b && redist_spec_device_bytes(s, side, be->rank))
                return rd_error(err, REDIST_ERR_INVALID, NULL,
                                side ? "dst" : "src",
                                "NULL buffer for array \"%s\" on device %lld",
                                redist_spec_name(s), (long long)be->rank);
        }
        if (src[i] && src[i] == dst[i])
            return rd_error(err, REDIST_ERR_INVALID, NULL, "dst",
                            "array \"%s\": src and dst must be distinct "
                            "buffers",
                            redist_spec_name(s));
    }
    return REDIST_OK;
}

/* Programs built and bound; the rounds' order. */
static redist_status_t build(redist_set_prepared_t *p, void *const src[],
                             void *const dst[], uint64_t *hash,
                             redist_error_t *err)
{
    const redist_plan_set_t *set = p->set;
    redist_status_t st = REDIST_OK;
    *hash = rd_fnv_u64(RD_FNV_BASIS, (uint64_t)set->n);
    *hash = rd_fnv_u64(*hash, (uint64_t)set->solo_r);
    for (int i = 0; i < set->n && !st; i++) {
        set_array *a = &p->arr[i];
        rd_exec_prep *xp = &a->xp;
        *hash = rd_fnv_u64(*hash, rd_plan_hash(set->plan[i],
                                               set->exec_flags));
        *hash = rd_fnv_u64(*hash, (uint64_t)set->round[i]);
        *hash = rd_fnv_u64(*hash, rd_set_flags(set, i));
        if ((a->is_two =
                 redist_spec_num_meshes(redist_plan_spec(set->plan[i])) == 2)) {
            /* a set's two-mesh arrays lower their phases (set.c); a
             * solo array's keep the plan's collectives */
            st = rd_set_two_build(&a->two, set->plan[i],
                                  set->has_kind ? &set->kind : NULL,
                                  set->solo ? set->exec_flags
                                            : rd_set_flags(set, i),
                                  set->solo ? set->solo_r : RD_SOLO_R_ARENA,
                                  p->be->rank, src[i],
                                  dst[i], err);
            continue;
        }
        xp->be = p->be;
        xp->nsteps = redist_plan_num_steps(set->plan[i]);
        st = rd_set_program(set->plan[i], set->has_kind ? &set->kind : NULL,
                            rd_set_flags(set, i), &xp->p, err);
        if (!st)
            st = rd_exec_check_backend(&xp->p, p->be->ops, err);
        if (!st)
            st = rd_program_bind(&xp->p, set->plan[i], p->be->rank, err);
        xp->buf[RD_BUF_SRC] = src[i];
        xp->buf[RD_BUF_DST] = dst[i];
    }
    int k = 0;
    for (int r = 0; r < set->nrounds; r++) {
        p->start[r] = k;
        for (int i = 0; i < set->n; i++)
            if (set->round[i] == r)
                p->order[k++] = i;
    }
    p->start[set->nrounds] = k;
    return st;
}

/* The largest round's part of the arena (its arrays' buffers). */
static uint64_t largest_round(const redist_set_prepared_t *p)
{
    const redist_plan_set_t *set = p->set;
    uint64_t most = 0;
    for (int r = 0; r < set->nrounds; r++) {
        uint64_t off = 0;
        for (int k = p->start[r]; k < p->start[r + 1]; k++)
            off += set->scratch[p->order[k]];
        if (off > most)
            most = off;
    }
    return most;
}

/* The slots of the two-mesh arrays' meshes (local, before the first
 * agreement, so that running out of memory fails every rank there). */
static redist_status_t endpoint_slots(redist_set_prepared_t *p,
                                      redist_error_t *err)
{
    for (int i = 0; i < p->set->n; i++) {
        if (!p->arr[i].is_two)
            continue;
        const redist_spec_t *s = redist_plan_spec(p->set->plan[i]);
        for (int side = 0; side < 2; side++)
            if ((p->arr[i].two.ep[side] =
                     rd_set_eps_slot(&p->eps, s, side)) < 0)
                return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "out of memory");
    }
    return REDIST_OK;
}

/* The endpoints of the two-mesh arrays' meshes (collective over the
 * union: every rank gets here, after the first agreement, and makes
 * every one), then each array's phases' endpoints (local checks). */
static redist_status_t endpoints(redist_set_prepared_t *p,
                                 redist_error_t *err)
{
    redist_status_t st = rd_set_eps_make(&p->eps, p->be, err);
    for (int i = 0; i < p->set->n && !st; i++) {
        if (!p->arr[i].is_two)
            continue;
        rd_set_two *w = &p->arr[i].two;
        const redist_spec_t *s = redist_plan_spec(p->set->plan[i]);
        for (int side = 0; side < 2 && !st; side++) {
            w->ph[side].be = p->eps.e[w->ep[side]].be;
            /* a solo array's phase A on symmetric buffers: the
             * endpoint's symmetric kind (set_two.c, SOLO) */
            if (!side && rd_set_two_a_sym(w) && w->ph[0].be)
                w->ph[0].be = w->ph[0].be->ops->sym_endpoint
                                  ? w->ph[0].be->ops->sym_endpoint(
                                        w->ph[0].be)
                                  : NULL;
            if (w->has[side] && !w->ph[side].be)
                st = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                              "no endpoint on a mesh of array \"%s\"",
                              redist_spec_name(s));
            if (!st && w->has[side])
                st = rd_exec_check_backend(&w->ph[side].p,
                                           w->ph[side].be->ops, err);
        }
    }
    return st;
}

/* The programs endpoint `ep` runs (-1: the union's): *n of them. */
static const rd_program **programs_of(const redist_set_prepared_t *p, int ep,
                                      int *n)
{
    const rd_program **v = malloc((size_t)(2 * p->set->n + 1) * sizeof *v);
    *n = 0;
    for (int i = 0; v && i < p->set->n; i++) {
        const set_array *a = &p->arr[i];
        if (!a->is_two && ep < 0)
            v[(*n)++] = &a->xp.p;
        for (int side = 0; a->is_two && side < 2; side++)
            if (a->two.has[side] && a->two.ep[side] == ep)
                v[(*n)++] = &a->two.ph[side].p;
    }
    return v;
}

/* The backends' work space (begin_programs): the union's and each mesh
 * endpoint's, sharing what the budget leaves beside the largest round. */
static redist_status_t size_work(redist_set_prepared_t *p,
                                 redist_error_t *err)
{
    const redist_plan_set_t *set = p->set;
    uint64_t parts = largest_round(p);
    uint64_t room = set->budget == REDIST_NO_BUDGET ? UINT64_MAX
                    : set->budget > parts ? set->budget - parts
                                          : 0;
    /* the same share on every rank (members or not of each mesh), so
     * that each endpoint's ranks size the same work space: the MPI
     * backend picks its reductions' messages by it */
    uint64_t share = room / (uint64_t)(1 + p->eps.n);
    /* whole alignment units: each figure is rounded up to one below, and
     * a share rounded up would overflow the room (608 bytes of room gave
     * 640 of work: a set the planner fitted refused to run) */
    share = share / RD_SET_ALIGN * RD_SET_ALIGN;
    p->work_bytes = 0;
    for (int ep = -1; ep < p->eps.n; ep++) {
        redist_backend_t *be = ep < 0 ? p->be : p->eps.e[ep].be;
        if (!be || !be->ops->begin_programs)
            continue;
        int n;
        const rd_program **progs = programs_of(p, ep, &n);
        if (!progs)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        uint64_t w = rd_set_align(be->ops->begin_programs(be, n, progs,
                                                          share));
        free(progs);
        if (ep < 0)
            p->began = 1;
        else
            p->eps.e[ep].began = 1;
        if (ep >= 0)
            p->eps.e[ep].work = w;
        else
            p->union_work = w;
        p->work_bytes += w;
    }
    if (p->work_bytes > room)
        return rd_error(err, REDIST_ERR_INFEASIBLE, NULL, "budget_bytes",
                        "backend %s needs %llu bytes of work space beside "
                        "the largest round's %llu, over budget_bytes %llu",
                        p->be->ops->name, (unsigned long long)p->work_bytes,
                        (unsigned long long)parts,
                        (unsigned long long)set->budget);
    return REDIST_OK;
}

/* Collective where the backend allocates (symmetric memory). */
static void *be_alloc(redist_backend_t *be, size_t bytes)
{
    return be->ops->alloc ? be->ops->alloc(be, bytes) : malloc(bytes);
}

/* The arena: every array's part of it, then the backend's work space. */
static redist_status_t place(redist_set_prepared_t *p, redist_error_t *err)
{
    const redist_plan_set_t *set = p->set;
    uint64_t parts = largest_round(p), most = parts + p->work_bytes;
    p->arena_bytes = most;
    p->high = most;
    if (most) {
        redist_backend_t *be = p->be;
        p->arena = most > SIZE_MAX ? NULL : be_alloc(be, (size_t)most);
        if (!p->arena)
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "cannot allocate %llu bytes of scratch on "
                            "device %lld",
                            (unsigned long long)most, (long long)be->rank);
        p->count = 1;
        memset(p->arena, 0, (size_t)most); /* no page fault in a run */
    }
    rd_stream *sm = set->solo ? p->arr[0].two.stream : NULL;
    if (set->solo && RD_SOLO_R(set->solo_r) == RD_SOLO_R_STREAM) {
        /* a streamed transfer's counters (set_stream.h), collective on
         * every device (the placement is agreed): bookkeeping like the
         * backend's signal counters, not scratch */
        size_t n = (size_t)p->be->size + 1;
        p->sig_bytes = n * sizeof(long);
        p->sig = be_alloc(p->be, p->sig_bytes);
        long *seen = calloc(n, sizeof *seen);
        if (!p->sig || !seen) {
            free(seen);
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "cannot allocate a streamed transfer's %zu "
                            "counters on device %lld",
                            n, (long long)p->be->rank);
        }
        memset(p->sig, 0, p->sig_bytes);
        if (sm) {
            sm->sig = p->sig;
            sm->seen = seen;
            sm->npes = p->be->size;
        } else {
            free(seen);
        }
    }
    uint64_t pb = set->solo ? p->arr[0].two.priv : 0;
    if (pb) { /* this device's own: no collective */
        if (!(p->priv = pb > SIZE_MAX ? NULL : malloc((size_t)pb)))
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "cannot allocate %llu bytes of scratch on "
                            "device %lld",
                            (unsigned long long)pb, (long long)p->be->rank);
        memset(p->priv, 0, (size_t)pb);
        p->priv_bytes = pb;
        p->high += pb;
        p->count++;
    }
    for (int r = 0; r < set->nrounds; r++) {
        uint64_t off = 0;
        for (int k = p->start[r]; k < p->start[r + 1]; k++) {
            set_array *y = &p->arr[p->order[k]];
            rd_exec_prep *xp = &y->xp;
            char *a = p->arena;
            if (y->is_two && set->solo) {
                rd_set_two_place_solo(&y->two, most ? a : NULL, p->priv);
                continue;
            }
            if (y->is_two) {
                rd_set_two_place(&y->two, a + off);
                off += set->scratch[p->order[k]];
                continue;
            }
            if (xp->p.scratch[0])
                xp->buf[RD_BUF_SA] = a + off;
            off += rd_set_align(xp->p.scratch[0]);
            if (xp->p.scratch[1])
                xp->buf[RD_BUF_SB] = a + off;
            off += rd_set_align(xp->p.scratch[1]);
        }
    }
    char *w = (char *)p->arena + parts;
    if (p->union_work && p->be->ops->use_work) {
        p->be->ops->use_work(p->be, w, p->union_work);
        w += p->union_work;
    }
    for (int k = 0; k < p->eps.n; k++) {
        rd_set_ep *e = &p->eps.e[k];
        if (e->be && e->work && e->be->ops->use_work) {
            e->be->ops->use_work(e->be, w, e->work);
            w += e->work;
        }
    }
    return REDIST_OK;
}

void redist_set_prepared_free(redist_set_prepared_t *p)
{
    if (!p)
        return;
    rd_prepared_destroy(&p->f); /* waits for a run in flight */
    for (int i = 0; p->arr && i < p->set->n; i++) {
        rd_program_free(&p->arr[i].xp.p);
        if (p->arr[i].is_two)
            rd_set_two_free(&p->arr[i].two);
    }
    rd_set_eps_free(&p->eps);
    if (p->began && p->be->ops->end_programs)
        p->be->ops->end_programs(p->be);
    if (p->sig) { /* collective, as its allocation */
        if (p->be->ops->free)
            p->be->ops->free(p->be, p->sig, p->sig_bytes);
        else
            free(p->sig);
    }
    if (p->arena) {
        if (p->be->ops->free)
            p->be->ops->free(p->be, p->arena, (size_t)p->arena_bytes);
        else
            free(p->arena);
    }
    free(p->priv);
    free(p->arr);
    free(p->order); /* start too */
    free(p->parts); /* at too */
    free(p);
}

redist_status_t redist_plan_set_prepare(const redist_plan_set_t *set,
                                        redist_backend_t *be,
                                        void *const src[], void *const dst[],
                                        redist_set_prepared_t **out,
                                        redist_error_t *err)
{
    return rd_set_prepare(set, be, src, dst, REDIST_OK, out, err);
}

redist_status_t rd_set_prepare(const redist_plan_set_t *set,
                               redist_backend_t *be, void *const src[],
                               void *const dst[], redist_status_t pre,
                               redist_set_prepared_t **out,
                               redist_error_t *err)
{
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "out",
                        "NULL argument");
    if (!be || !be->ops)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "backend",
                        "NULL backend"); /* nobody to agree with */
    redist_status_t st = pre ? pre : local_checks(set, be, src, dst, err);
    uint64_t hash = 0;
    redist_set_prepared_t *p = calloc(1, sizeof *p);
    if (!p)
        return be->ops->agree(be, rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                           "out of memory"),
                              0, err);
    p->set = set;
    p->be = be;
    set_async_init(p);
    if (!st) {
        int n = set->n;
        p->arr = calloc((size_t)n, sizeof *p->arr);
        p->order = calloc((size_t)n + (size_t)set->nrounds + 1,
                          sizeof *p->order);
        p->parts = calloc((size_t)n, sizeof *p->parts + sizeof *p->at);
        if (p->order)
            p->start = p->order + n;
        if (p->parts) /* rd_xpart's alignment suits an int */
            p->at = (int *)(void *)(p->parts + n);
        if (!p->arr || !p->order || !p->parts)
            st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
        else
            st = build(p, src, dst, &hash, err);
        if (!st)
            st = endpoint_slots(p, err);
    }
    st = be->ops->agree(be, st, hash, err);
    if (!st)
        st = endpoints(p, err);
    if (!st)
        st = size_work(p, err);
    st = be->ops->agree(be, st, hash, err);
    if (!st) {
        st = place(p, err);
        st = be->ops->agree(be, st, hash, err);
    }
    if (!st)
        st = set_async_setup(p, hash, err);
    if (st) {
        redist_set_prepared_free(p);
        return st;
    }
    *out = p;
    return REDIST_OK;
}

/* Bytes of a transfer this device receives (0) or sends (1) from or to
 * others. */
static uint64_t transfer_bytes(const rd_tlists *t, int send, int64_t me)
{
    uint64_t b = 0;
    int64_t n = send ? t->nsend : t->nrecv;
    const rd_tpiece *v = send ? t->send : t->recv;
    for (int64_t k = 0; k < n; k++)
        if (v[k].peer != me)
            b += v[k].bytes;
    return b;
}

/* One combined exchange of the arrays order[a..b) that stopped at one. */
static redist_status_t combined(redist_set_prepared_t *p, int a, int b,
                                redist_exec_report_t *r, int *any,
                                redist_error_t *err)
{
    redist_backend_t *be = p->be;
    int np = 0;
    for (int k = a; k < b; k++) {
        int i = p->order[k];
        set_array *a = &p->arr[i];
        rd_exec_prep *xp = &a->xp;
        if (a->is_two && a->two.lower && a->cursor != 1 && a->cursor < 3) {
            /* a lowered phase's exchange pass (rd_set_two_advance stopped
             * there; every rank, members of its mesh or not) */
            int side = a->cursor / 2;
            if (a->pc >= a->two.ph[side].p.npasses)
                continue;
            p->parts[np] = rd_set_two_xpart(&a->two, side, a->pc, r);
            p->at[np++] = i;
            continue;
        }
        if (a->is_two) { /* its transfer, once phase A has run */
            if (a->cursor != 1)
                continue;
            p->parts[np] = rd_set_two_part(&a->two);
            r->recv_bytes += transfer_bytes(&a->two.t, 0, be->rank);
            r->sent_bytes += transfer_bytes(&a->two.t, 1, be->rank);
            p->at[np++] = i;
            continue;
        }
        if (a->cursor >= xp->p.npasses)
            continue;
        const rd_pass *ps = &xp->p.pass[a->cursor];
        const rd_xchg *x = ps->x.xchg;
        rd_pass_account(be, ps, r);
        p->parts[np] = (rd_xpart){xp->buf[ps->in_buf], x->nsend, x->send,
                                  xp->buf[ps->out_buf], x->nrecv, x->recv,
                                  NULL,
                                  ps->kind == RD_PASS_FUSED ? &ps->x : NULL,
                                  NULL, NULL};
        p->at[np++] = i;
    }
    *any = np > 0;
    if (!np)
        return REDIST_OK;
    p->exchanges++;
    /* messages: the distinct other peers sent to */
    for (int64_t q = 0; q < be->size; q++) {
        int sent = 0;
        for (int j = 0; j < np && !sent; j++) {
            const rd_tlists *tl = p->parts[j].tl;
            int64_t m = tl ? tl->nsend : p->parts[j].nto;
            for (int64_t t = 0; t < m && !sent; t++)
                sent = q != be->rank &&
                       (tl ? tl->send[t].peer == q && tl->send[t].bytes
                           : p->parts[j].to[t].peer == q &&
                                 p->parts[j].to[t].bytes);
        }
        p->messages += (uint64_t)sent;
    }
    redist_status_t st = REDIST_OK;
    if (be->ops->exchange_multi)
        st = be->ops->exchange_multi(be, np, p->parts, err);
    else /* no two-mesh parts: they need exchange_multi */
        for (int j = 0; j < np && !st; j++)
            st = p->parts[j].x
                     ? be->ops->step(be, p->parts[j].x, p->parts[j].send,
                                     p->parts[j].recv, err)
                     : be->ops->exchange(be, p->parts[j].send,
                                         p->parts[j].nto, p->parts[j].to,
                                         p->parts[j].recv, p->parts[j].nfrom,
                                         p->parts[j].from, err);
    if (st) {
        if (be->ops->abort)
            be->ops->abort(be, st, err);
        return st;
    }
    for (int j = 0; j < np; j++) {
        set_array *y = &p->arr[p->at[j]];
        if (y->is_two && y->cursor != 1)
            y->pc++; /* past a lowered phase's exchange */
        else
            y->cursor++;
    }
    return REDIST_OK;
}

/* A two-mesh array with lowered phases: its phase runs up to its next
 * exchange pass; a phase that ends moves it on (phase A to its
 * transfer, phase B to done). */
static redist_status_t advance_two(redist_set_prepared_t *p, set_array *a,
                                   redist_exec_report_t *r,
                                   redist_error_t *err)
{
    while (a->cursor == 0 || a->cursor == 2) {
        int side = a->cursor / 2;
        redist_status_t st = rd_set_two_advance(&a->two, side, &a->pc,
                                                !a->begun, p->be, r, err);
        a->begun = 1;
        if (st || a->pc < a->two.ph[side].p.npasses)
            return st; /* failed, or at an exchange */
        a->cursor++;
        a->pc = a->begun = 0;
    }
    return REDIST_OK;
}

static redist_status_t set_run(redist_set_prepared_t *p,
                               redist_exec_report_t *report,
                               redist_error_t *err)
{
    redist_exec_report_t r;
    memset(&r, 0, sizeof r);
    r.failed_step = -1;
    double t0 = rd_exec_seconds();
    if (!p) {
        if (report)
            *report = r;
        return rd_error(err, REDIST_ERR_INVALID, NULL, "prep",
                        "NULL prepared set");
    }
    redist_status_t st = REDIST_OK;
    p->messages = p->exchanges = 0;
    /* every endpoint, in the same order on every rank */
    if (p->be->ops->run_begins)
        p->be->ops->run_begins(p->be);
    for (int k = 0; k < p->eps.n; k++)
        if (p->eps.e[k].be && p->eps.e[k].be->ops->run_begins)
            p->eps.e[k].be->ops->run_begins(p->eps.e[k].be);
    for (int rd = 0; rd < p->set->nrounds && !st; rd++) {
        int a = p->start[rd], b = p->start[rd + 1], any = 1;
        for (int k = a; k < b; k++)
            p->arr[p->order[k]].cursor = p->arr[p->order[k]].pc =
                p->arr[p->order[k]].begun = 0;
        while (any && !st) {
            for (int k = a; k < b && !st; k++) {
                set_array *a = &p->arr[p->order[k]];
                if (!a->is_two) {
                    st = rd_exec_until_exchange(&a->xp, &a->cursor, &r, err);
                } else if (a->two.lower) {
                    st = advance_two(p, a, &r, err);
                } else if (a->cursor == 0 || a->cursor == 2) {
                    /* phase A before its transfer, phase B after it */
                    st = rd_set_two_phase(&a->two, a->cursor / 2, p->be, &r,
                                          err);
                    a->cursor++;
                }
            }
            if (!st)
                st = combined(p, a, b, &r, &any, err);
        }
        if (!st)
            r.steps_done += b - a; /* arrays done */
    }
    r.scratch_bytes = p->arena_bytes + p->priv_bytes; /* within budget */
    r.scratch_high_water = p->high;
    r.scratch_allocations = p->count;
    r.writes_src = 0;
    for (int i = 0; i < p->set->n; i++)
        r.writes_src |= p->arr[i].is_two
                            ? p->arr[i].two.ph[0].p.writes_src ||
                                  RD_SOLO_R(p->arr[i].two.r_at) ==
                                      RD_SOLO_R_SRC ||
                                  p->arr[i].two.r_src
                            : p->arr[i].xp.p.writes_src;
    r.seconds = rd_exec_seconds() - t0;
    if (report)
        *report = r;
    return st;
}

uint64_t redist_set_prepared_messages(const redist_set_prepared_t *p)
{
    return p ? p->messages : 0;
}

uint64_t redist_set_prepared_exchanges(const redist_set_prepared_t *p)
{
    return p ? p->exchanges : 0;
}

redist_status_t redist_plan_set_execute(const redist_plan_set_t *set,
                                        redist_backend_t *be,
                                        void *const src[], void *const dst[],
                                        redist_exec_report_t *report,
                                        redist_error_t *err)
{
    redist_set_prepared_t *p = NULL;
    redist_status_t st = redist_plan_set_prepare(set, be, src, dst, &p, err);
    if (st) {
        if (report) {
            memset(report, 0, sizeof *report);
            report->failed_step = -1;
        }
        return st;
    }
    st = redist_set_run(p, report, err);
    redist_set_prepared_free(p);
    return st;
}

/* ------------------------------------------------------ non-blocking
 *
 * A prepared set runs without blocking as a prepared object of a
 * backend does (exec/async.c): prepare spawns a progress thread where
 * the endpoint allows a second thread (rd_backend_ops.threads) and the
 * ranks agree on it (all allow it, or start fails on every rank);
 * start hands the run (set_run, unchanged) to the thread, test reads a
 * flag, wait returns the run's status and report; free waits for a run
 * in flight.  Cost: one thread per prepared set, asleep between runs;
 * one more agreement at prepare. */

static const rd_prepared_api set_api = {
    "redist_set_run", "redist_set_start", "redist_set_test",
    "redist_set_wait", "this prepared set",
    "a backend that lets a second thread call it on every rank "
    "(MPI_THREAD_MULTIPLE, SHMEM_THREAD_MULTIPLE)"};

static redist_status_t set_run_fn(void *arg, redist_exec_report_t *r,
                                  redist_error_t *err)
{
    return set_run(arg, r, err);
}

static void set_async_init(redist_set_prepared_t *p)
{
    rd_prepared_init(&p->f, &set_api, NULL, 1, set_run_fn, p);
}

void rd_set_prepared_names(redist_set_prepared_t *p,
                           const struct rd_prepared_api *api)
{
    if (p)
        p->f.api = api;
}

/* The thread where this rank's endpoint allows it, then two agreements:
 * a failure to spawn fails every rank; the ranks' answers differ (the
 * hash mismatches): start is refused on every rank. */
static redist_status_t set_async_setup(redist_set_prepared_t *p,
                                       uint64_t hash, redist_error_t *err)
{
    redist_backend_t *be = p->be;
    int *busy = NULL;
    int ok = be->ops->threads ? be->ops->threads(be, &busy) != 0 : 0;
    redist_status_t st = REDIST_OK;
    if (ok && rd_async_spawn(&p->f.async))
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                      "cannot create the progress thread");
    st = be->ops->agree(be, st, hash, err);
    if (st)
        return st;
    redist_error_t e;
    redist_error_clear(&e);
    redist_status_t same = be->ops->agree(be, REDIST_OK, ok ? 1 : 2, &e);
    p->f.level = same == REDIST_OK && ok;
    p->f.busy = busy;
    return REDIST_OK;
}

redist_status_t redist_set_run(redist_set_prepared_t *p,
                               redist_exec_report_t *report,
                               redist_error_t *err)
{
    if (!p) {
        rd_report_empty(report);
        return rd_error(err, REDIST_ERR_INVALID, NULL, "prep",
                        "NULL prepared set");
    }
    return rd_prepared_run(&p->f, report, err);
}

redist_status_t redist_set_start(redist_set_prepared_t *p,
                                 redist_error_t *err)
{
    return rd_prepared_start(p ? &p->f : NULL, err);
}

redist_status_t redist_set_test(redist_set_prepared_t *p, int *done,
                                redist_error_t *err)
{
    return rd_prepared_test(p ? &p->f : NULL, done, err);
}

redist_status_t redist_set_wait(redist_set_prepared_t *p,
                                redist_exec_report_t *report,
                                redist_error_t *err)
{
    return rd_prepared_wait(p ? &p->f : NULL, report, err);
}

int redist_set_prepared_async(const redist_set_prepared_t *p)
{
    return p && rd_prepared_async(&p->f);
}
