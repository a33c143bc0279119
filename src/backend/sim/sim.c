/*
 * The sim backend: every device of the mesh in one process, one thread per
 * device, each running the SPMD executor (exec.c) exactly as an MPI rank
 * would.
 *
 * Exchange: each device posts its send and receive pointers in its slot,
 * then a mesh-wide barrier; each device then computes its own output by
 * reading its peers' send buffers directly (no intermediate copy, no
 * memory of its own), then a second barrier so that nobody reuses a
 * buffer a peer may still read.  Cost: two barriers per exchange and each
 * received byte copied once (reductions: each contribution read once).
 * The point-to-point exchange step works the same way: each device also
 * posts its list of sends (sorted by peer), and each receiver pulls its
 * pieces from the senders' ranges (fused: straight from the senders'
 * blocks into its own).  Fused, an uneven reduce_scatter is one step too
 * (uneven_rs): each row of the device's box after it reduced
 * from the same row of the members' blocks, which hold one box.
 *
 * Failure: the barrier can be aborted.  `agree` combines the devices'
 * statuses before any data moves; a device that fails later calls
 * `abort`, which wakes every waiting device and makes every later op fail,
 * so the whole mesh fails together instead of hanging.  A world that saw
 * an abort stays failed.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../exec/exec_internal.h"
#include "../../exec/kernels.h"
#include "../../exec/meshes.h"
#include "sim_internal.h"
#include "../../core/internal.h"

typedef struct sim_slot {
    const void *send;
    void *recv;
    const rd_xfer *to; /* exchange: this device's sends, sorted by peer */
    int64_t nto;
    const rd_xpart *parts; /* exchange_multi: this device's parts */
} sim_slot;

/* A world of one mesh of a set's two-mesh arrays (sim_sub): made by the
 * first device of the parent world to ask for it (the key-th `sub` call
 * of each device), freed when every member has released it and every
 * device of the parent has been by. */
typedef struct sim_sub_entry {
    redist_sim_t *w;
    int64_t arrived, left, members;
    redist_status_t st;
} sim_sub_entry;

struct redist_sim {
    int64_t n;
    unsigned flags;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t waiting;
    uint64_t gen;
    int aborted;
    sim_slot *slot;
    redist_status_t *status; /* agree */
    uint64_t *hash;
    int64_t agree_first;     /* lowest failed rank of this agree, -1 */
    redist_error_t agree_err;
    int64_t res_first;       /* outcome of the last agree: failed rank, */
    int64_t res_differs;     /* a rank whose plan differs from rank 0's */
    redist_error_t res_err;
    int64_t root_rank;       /* the device whose failure came first, -1 */
    redist_status_t root_status;
    redist_error_t root_err;
    int64_t fail_rank, fail_at; /* injected failure (tests) */
    int64_t *nops;
    struct redist_backend *ep;
    rd_backend_ops ops; /* sim_fused_ops, less `step` unless fused */
    /* mesh worlds (sim_sub): per device the `sub` calls it made, the
     * entries by that count; a mesh world's parent and key */
    int64_t *nsubs;
    sim_sub_entry *subs;
    int64_t nsub_cap;
    redist_sim_t *parent;
    int64_t key;
};

static void record_root(redist_sim_t *w, int64_t rank, redist_status_t st,
                        const redist_error_t *err)
{
    /* under w->mu */
    if (w->root_rank >= 0)
        return;
    w->root_rank = rank;
    w->root_status = st;
    if (err)
        w->root_err = *err;
    else
        redist_error_clear(&w->root_err);
}

static redist_status_t aborted_error(redist_sim_t *w, redist_error_t *err)
{
    pthread_mutex_lock(&w->mu);
    int64_t r = w->root_rank;
    char text[REDIST_ERROR_TEXT_LENGTH];
    rd_strlcpy(text,
               w->root_err.text[0] ? w->root_err.text
                                   : redist_status_string(w->root_status),
               sizeof text);
    pthread_mutex_unlock(&w->mu);
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                    "aborted: device %lld failed: %s", (long long)r, text);
}

/* Wait for every device; the last one to arrive runs `release` (if any)
 * under the lock before releasing the others. */
static redist_status_t barrier(redist_sim_t *w, void (*release)(redist_sim_t *),
                               redist_error_t *err)
{
    pthread_mutex_lock(&w->mu);
    if (w->aborted) {
        pthread_mutex_unlock(&w->mu);
        return aborted_error(w, err);
    }
    uint64_t gen = w->gen;
    if (++w->waiting == w->n) {
        if (release)
            release(w);
        w->waiting = 0;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        return REDIST_OK;
    }
    while (gen == w->gen && !w->aborted)
        pthread_cond_wait(&w->cv, &w->mu);
    int released = gen != w->gen;
    pthread_mutex_unlock(&w->mu);
    return released ? REDIST_OK : aborted_error(w, err);
}

static void sim_abort(redist_backend_t *be, redist_status_t st,
                      const redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    pthread_mutex_lock(&w->mu);
    record_root(w, be->rank, st, err);
    w->aborted = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void reset_agree(redist_sim_t *w)
{
    w->agree_first = -1;
    redist_error_clear(&w->agree_err);
}

/* Run by the last device to reach the first barrier of an agree. */
static void decide_agree(redist_sim_t *w)
{
    w->res_first = w->agree_first;
    w->res_err = w->agree_err;
    w->res_differs = -1;
    for (int64_t e = 1; e < w->n && w->res_differs < 0; e++)
        if (w->hash[e] != w->hash[0])
            w->res_differs = e;
}

static redist_status_t sim_agree(redist_backend_t *be, redist_status_t local,
                                 uint64_t hash, redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    int64_t r = be->rank;
    w->status[r] = local;
    w->hash[r] = hash;
    if (local) {
        pthread_mutex_lock(&w->mu);
        if (w->agree_first < 0 || r < w->agree_first) {
            w->agree_first = r;
            if (err)
                w->agree_err = *err;
            else
                redist_error_clear(&w->agree_err);
            w->agree_err.status = local;
        }
        pthread_mutex_unlock(&w->mu);
    }
    redist_status_t st = barrier(w, decide_agree, err);
    if (st)
        return local ? local : st;
    int64_t first = w->res_first, differs = w->res_differs;
    redist_error_t first_err = w->res_err;
    st = barrier(w, reset_agree, err);
    if (local)
        return local;
    if (first >= 0)
        return rd_error(err, first_err.status, NULL, NULL,
                        "device %lld failed: %s", (long long)first,
                        first_err.text[0]
                            ? first_err.text
                            : redist_status_string(first_err.status));
    if (differs >= 0)
        return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                        "the devices were given different plans (device "
                        "%lld differs from device 0)",
                        (long long)differs);
    return st;
}

/* Post this device's buffers and wait for everybody's. */
static redist_status_t post(redist_backend_t *be, const void *send,
                            void *recv, redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    int64_t r = be->rank;
    if (r == w->fail_rank && w->nops[r]++ == w->fail_at)
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "injected failure on device %lld", (long long)r);
    w->slot[r].send = send;
    w->slot[r].recv = recv;
    return barrier(w, NULL, err);
}

static redist_status_t done(redist_backend_t *be, redist_error_t *err)
{
    return barrier(be->ctx, NULL, err);
}

static const char *peer_send(redist_backend_t *be, const rd_group *g,
                             int64_t k)
{
    redist_sim_t *w = be->ctx;
    return (const char *)w->slot[rd_group_rank(g, k)].send;
}

/* Block k of recv from each member k: its whole send buffer (all_gather)
 * or its block number g->index (all_to_all, `to_all`). */
static redist_status_t sim_blocks(redist_backend_t *be, const rd_group *g,
                                  int to_all, const void *send, void *recv,
                                  uint64_t bytes, redist_error_t *err)
{
    redist_status_t st = post(be, send, recv, err);
    if (st)
        return st;
    uint64_t off = to_all ? (uint64_t)g->index * bytes : 0;
    for (int64_t k = 0; k < g->size; k++)
        memcpy((char *)recv + (uint64_t)k * bytes, peer_send(be, g, k) + off,
               (size_t)bytes);
    return done(be, err);
}

typedef struct reduce_in {
    redist_backend_t *be;
    const rd_group *g;
    uint64_t offset;
} reduce_in;

static const void *reduce_input(void *user, int64_t m)
{
    reduce_in *ri = user;
    return peer_send(ri->be, ri->g, m) + ri->offset;
}

/* recv = the reduction over the members of their chunk number g->index
 * (reduce_scatter) or of their whole send buffer (all_reduce, `all`). */
static redist_status_t sim_reduce(redist_backend_t *be, const rd_group *g,
                                  int all, const void *send, void *recv,
                                  uint64_t count, redist_dtype_t dtype,
                                  redist_reduce_t op, redist_error_t *err)
{
    redist_status_t st = post(be, send, recv, err);
    if (st)
        return st;
    uint64_t chunk = (uint64_t)g->index * count * redist_dtype_size(dtype);
    reduce_in ri = {be, g, all ? 0 : chunk};
    rd_reduce_n(dtype, op, recv, count, g->size, reduce_input, &ri);
    return done(be, err);
}

static redist_status_t sim_permute(redist_backend_t *be, const void *send,
                                   int64_t to, void *recv, int64_t from,
                                   uint64_t bytes, redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    (void)to;
    redist_status_t st = post(be, send, recv, err);
    if (st)
        return st;
    memcpy(recv, w->slot[from].send, (size_t)bytes);
    return done(be, err);
}

/* The sender's transfer to rank `r` (its list is sorted by peer). */
static const rd_xfer *find_xfer(const sim_slot *sl, int64_t r)
{
    int64_t lo = 0, hi = sl->nto;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sl->to[mid].peer < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sl->nto && sl->to[lo].peer == r ? &sl->to[lo] : NULL;
}

/* Each device pulls its pieces from the senders' posted buffers. */
static redist_status_t sim_exchange(redist_backend_t *be, const void *send,
                                    int64_t nto, const rd_xfer *to,
                                    void *recv, int64_t nfrom,
                                    const rd_xfer *from, redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    w->slot[be->rank].to = to;
    w->slot[be->rank].nto = nto;
    redist_status_t st = post(be, send, recv, err);
    if (st)
        return st;
    for (int64_t k = 0; k < nfrom; k++) {
        const sim_slot *sl = &w->slot[from[k].peer];
        const rd_xfer *t = find_xfer(sl, be->rank);
        if (!t || t->bytes != from[k].bytes) {
            done(be, err);
            return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                            "sim: device %lld expects %llu bytes from "
                            "device %lld, which sends %llu",
                            (long long)be->rank,
                            (unsigned long long)from[k].bytes,
                            (long long)from[k].peer,
                            (unsigned long long)(t ? t->bytes : 0));
        }
        memcpy((char *)recv + from[k].off, (const char *)sl->send + t->off,
               (size_t)t->bytes);
    }
    return done(be, err);
}

/* An uneven reduce_scatter, whole (rd_xstep.boxed): each row of this
 * device's box after the step reduced from the same row of the members'
 * blocks, where that box sits at box_off (no memory of its own). */
static void boxed_reduce(redist_backend_t *be, const rd_xstep *x, void *out)
{
    int nd = x->ndims;
    int64_t idx[REDIST_MAX_DIMS] = {0};
    uint64_t row = nd ? (uint64_t)x->out_shape[nd - 1] : 1, rows = 1;
    for (int i = 0; i + 1 < nd; i++)
        rows *= (uint64_t)x->out_shape[i];
    if (row == 0)
        return;
    for (uint64_t k = 0; k < rows; k++) {
        uint64_t e = 0; /* the row's first element in the box before */
        for (int i = 0; i < nd; i++)
            e = e * (uint64_t)x->in_shape[i] + (uint64_t)x->box_off[i] +
                (uint64_t)(i + 1 < nd ? idx[i] : 0);
        reduce_in ri = {be, &x->group, e * x->elem};
        rd_reduce_n(x->dtype, x->reduce, (char *)out + k * row * x->elem,
                    row, x->group.size, reduce_input, &ri);
        for (int i = nd - 2; i >= 0 && ++idx[i] == x->out_shape[i]; i--)
            idx[i] = 0;
    }
}

/* Whole steps, reading the peers' blocks and writing the final places. */
static redist_status_t sim_step(redist_backend_t *be, const rd_xstep *x,
                                const void *in, void *out,
                                redist_error_t *err)
{
    const rd_group *g = &x->group;
    int nd = x->ndims;
    int64_t s = g->size;
    int64_t src_off[REDIST_MAX_DIMS] = {0}, dst_off[REDIST_MAX_DIMS] = {0};
    int64_t box[REDIST_MAX_DIMS];
    redist_status_t st = post(be, in, out, err);
    if (st)
        return st;
    switch (x->op) {
    case REDIST_OP_ALL_GATHER:
        for (int64_t k = 0; k < s; k++) {
            dst_off[x->dim] = k * x->in_shape[x->dim];
            rd_kernel_box(out, x->out_shape, dst_off, peer_send(be, g, k),
                          x->in_shape, src_off, x->in_shape, nd, x->elem);
        }
        break;
    case REDIST_OP_ALL_TO_ALL: {
        int i = x->from_dim, j = x->to_dim;
        memcpy(box, x->in_shape, sizeof box);
        box[j] /= s;
        src_off[j] = g->index * box[j];
        for (int64_t k = 0; k < s; k++) {
            dst_off[i] = k * x->in_shape[i];
            rd_kernel_box(out, x->out_shape, dst_off, peer_send(be, g, k),
                          x->in_shape, src_off, box, nd, x->elem);
        }
        break;
    }
    case REDIST_OP_REDUCE_SCATTER: {
        if (x->boxed) {
            boxed_reduce(be, x, out);
            break;
        }
        int i = x->dim;
        uint64_t pre = 1, chunk = (uint64_t)(x->in_shape[i] / s);
        for (int d = 0; d < i; d++)
            pre *= (uint64_t)x->in_shape[d];
        for (int d = i + 1; d < nd; d++)
            chunk *= (uint64_t)x->in_shape[d];
        for (uint64_t p = 0; p < pre; p++) {
            reduce_in ri = {be, g,
                            (p * (uint64_t)s + (uint64_t)g->index) * chunk *
                                x->elem};
            rd_reduce_n(x->dtype, x->reduce,
                        (char *)out + p * chunk * x->elem, chunk, s,
                        reduce_input, &ri);
        }
        break;
    }
    case REDIST_OP_EXCHANGE: {
        /* every piece straight from the holder's block to its place */
        const rd_xchg *xc = x->xchg;
        redist_sim_t *w = be->ctx;
        int64_t oa[REDIST_MAX_DIMS], ob[REDIST_MAX_DIMS];
        int64_t la[REDIST_MAX_DIMS]; /* the sender's block (uneven dims) */
        for (int64_t k = 0; k < xc->nrecv; k++) {
            int64_t e = xc->recv[k].peer;
            rd_xchg_box(xc, e, be->rank, box, oa, ob);
            rd_xchg_extent(xc, 0, e, la);
            rd_kernel_box(out, x->out_shape, ob, w->slot[e].send, la, oa, box,
                          nd, x->elem);
        }
        break;
    }
    default:
        done(be, err);
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "sim: no fused form of %s", redist_op_name(x->op));
    }
    return done(be, err);
}

/* Several exchanges at once (many arrays): each device posts its parts;
 * each receiver pulls every part's pieces from the senders' parts (byte
 * ranges as sim_exchange does; a two-mesh transfer's boxes straight from
 * the sender's S block into its R block).  Two barriers for them all. */
static redist_status_t sim_exchange_multi(redist_backend_t *be, int nparts,
                                          const rd_xpart *parts,
                                          redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    int64_t r = be->rank;
    w->slot[r].parts = parts;
    redist_status_t st = post(be, NULL, NULL, err);
    if (st)
        return st;
    for (int j = 0; j < nparts && !st; j++) {
        const rd_xpart *x = &parts[j];
        const rd_tlists *t = x->tl;
        for (int64_t k = 0; t && k < t->nrecv; k++) {
            const rd_tpiece *q = &t->recv[k];
            rd_kernel_box(x->recv, t->r_shape, q->off,
                          w->slot[q->peer].parts[j].send, q->pshape, q->poff,
                          q->box, t->ndims, t->elem);
        }
        for (int64_t k = 0; !t && k < x->nfrom && !st; k++) {
            const rd_xpart *y = &w->slot[x->from[k].peer].parts[j];
            sim_slot sl = {y->send, NULL, y->to, y->nto, NULL};
            const rd_xfer *f = find_xfer(&sl, r);
            if (!f || f->bytes != x->from[k].bytes)
                st = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                              "sim: device %lld expects %llu bytes from "
                              "device %lld in part %d, which sends %llu",
                              (long long)r,
                              (unsigned long long)x->from[k].bytes,
                              (long long)x->from[k].peer, j,
                              (unsigned long long)(f ? f->bytes : 0));
            else
                memcpy((char *)x->recv + x->from[k].off,
                       (const char *)y->send + f->off, (size_t)f->bytes);
        }
    }
    redist_status_t s2 = done(be, err);
    return st ? st : s2;
}

/* Free a mesh world's entry once nobody needs it (under the parent's
 * lock). */
static void sub_release(redist_sim_t *parent, sim_sub_entry *e)
{
    if (e->w && e->arrived == parent->n && e->left == e->members) {
        redist_sim_free(e->w);
        e->w = NULL;
    }
}

/* A set's mesh endpoint (backend.h `sub`): rank r of the mesh is device
 * devices[r] of this world; every device calls it, in the same order. */
static redist_status_t sim_sub(redist_backend_t *be, const redist_mesh_t *mesh,
                               const int64_t devices[],
                               redist_backend_t **out, redist_error_t *err)
{
    redist_sim_t *w = be->ctx;
    int64_t n = redist_mesh_num_devices(mesh), pos = -1;
    for (int64_t r = 0; r < n && pos < 0; r++)
        if (devices[r] == be->rank)
            pos = r;
    *out = NULL;
    pthread_mutex_lock(&w->mu);
    int64_t key = w->nsubs[be->rank]++;
    if (key >= w->nsub_cap) {
        int64_t cap = 2 * key + 4;
        sim_sub_entry *v = realloc(w->subs, (size_t)cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&w->mu);
            /* every device of the mesh world still waits for this one:
             * the parent's abort wakes them */
            return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                            "out of memory");
        }
        memset(v + w->nsub_cap, 0,
               (size_t)(cap - w->nsub_cap) * sizeof *v);
        w->subs = v;
        w->nsub_cap = cap;
    }
    sim_sub_entry *e = &w->subs[key];
    if (e->arrived == 0) {
        redist_error_t e2;
        e->members = n;
        e->st = redist_sim_create(n, w->flags, &e->w, &e2);
        if (!e->st) {
            e->w->parent = w;
            e->w->key = key;
        }
    }
    e->arrived++;
    redist_status_t st = e->st;
    if (!st && pos >= 0)
        *out = &e->w->ep[pos];
    sub_release(w, e);
    pthread_mutex_unlock(&w->mu);
    return st ? rd_error(err, st, NULL, NULL,
                         "sim: cannot make the world of a mesh")
              : REDIST_OK;
}

static void sim_sub_free(redist_backend_t *sub)
{
    if (!sub)
        return;
    redist_sim_t *x = sub->ctx, *w = x->parent;
    pthread_mutex_lock(&w->mu);
    sim_sub_entry *e = &w->subs[x->key];
    e->left++;
    sub_release(w, e);
    pthread_mutex_unlock(&w->mu);
}

/* A device's endpoint may be driven by another thread of the device
 * (a prepared set's progress thread): the world only synchronizes
 * endpoints, whatever thread calls them. */
static int sim_threads(redist_backend_t *be, int **busy)
{
    (void)be;
    (void)busy;
    return 1;
}

/* The world's ops: every collective, and whole steps where the world is
 * REDIST_SIM_FUSED (without it, the same table less `step`). */
static const rd_backend_ops sim_fused_ops = {
    .name = "sim",
    .fused_ops = 1u << REDIST_OP_ALL_GATHER | 1u << REDIST_OP_ALL_TO_ALL |
                 1u << REDIST_OP_REDUCE_SCATTER | 1u << REDIST_OP_EXCHANGE,
    .agree = sim_agree,
    .blocks = sim_blocks, .reduce = sim_reduce, .permute = sim_permute,
    .exchange = sim_exchange,
    .exchange_multi = sim_exchange_multi,
    .sub = sim_sub,
    .sub_free = sim_sub_free,
    .step = sim_step,
    .uneven_rs = 1,
    .abort = sim_abort,
    .threads = sim_threads,
};

/* ------------------------------------------------------------ worlds */

/* The world's memory (its per-rank arrays may be NULL). */
static void world_free(redist_sim_t *w)
{
    free(w->slot);
    free(w->status);
    free(w->hash);
    free(w->nops);
    free(w->ep);
    free(w->nsubs);
    free(w->subs);
    free(w);
}

redist_status_t redist_sim_create(int64_t n, unsigned flags,
                                  redist_sim_t **out, redist_error_t *err)
{
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    if (n < 1 || n > REDIST_SIM_MAX_DEVICES)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "the sim backend runs 1 to %d devices, not %lld",
                        REDIST_SIM_MAX_DEVICES, (long long)n);
    if (flags & ~(unsigned)REDIST_SIM_FUSED)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown sim flags 0x%x",
                        flags & ~(unsigned)REDIST_SIM_FUSED);
    redist_sim_t *w = calloc(1, sizeof *w);
    if (!w)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    w->n = n;
    w->flags = flags;
    w->slot = calloc((size_t)n, sizeof *w->slot);
    w->status = calloc((size_t)n, sizeof *w->status);
    w->hash = calloc((size_t)n, sizeof *w->hash);
    w->nops = calloc((size_t)n, sizeof *w->nops);
    w->ep = calloc((size_t)n, sizeof *w->ep);
    w->nsubs = calloc((size_t)n, sizeof *w->nsubs);
    if (!w->slot || !w->status || !w->hash || !w->nops || !w->ep ||
        !w->nsubs) {
        world_free(w);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->agree_first = -1;
    w->res_first = w->res_differs = -1;
    w->root_rank = -1;
    w->fail_rank = -1;
    w->ops = sim_fused_ops;
    if (!(flags & REDIST_SIM_FUSED)) {
        w->ops.fused_ops = 0;
        w->ops.step = NULL;
    }
    for (int64_t r = 0; r < n; r++) {
        w->ep[r].ops = &w->ops;
        w->ep[r].ctx = w;
        w->ep[r].rank = r;
        w->ep[r].size = n;
        w->ep[r].build = RD_BUILD_MESH_USR | RD_BUILD_MESH_FUSE;
    }
    *out = w;
    return REDIST_OK;
}

void redist_sim_free(redist_sim_t *w)
{
    if (!w)
        return;
    for (int64_t k = 0; k < w->nsub_cap; k++) /* never released */
        redist_sim_free(w->subs[k].w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    world_free(w);
}

redist_backend_t *redist_sim_backend(redist_sim_t *w, int64_t rank)
{
    if (!w || rank < 0 || rank >= w->n)
        return NULL;
    return &w->ep[rank];
}

void rd_sim_inject_failure(redist_sim_t *w, int64_t rank, int64_t op_index)
{
    w->fail_rank = rank;
    w->fail_at = op_index;
}

/* ------------------------------------------------------------ run */

typedef struct sim_job {
    rd_sim_fn fn;
    void *arg;
    redist_backend_t *be;
    redist_exec_report_t report;
    redist_error_t err;
    redist_status_t status;
} sim_job;

static void *sim_thread(void *arg)
{
    sim_job *j = arg;
    redist_error_clear(&j->err);
    j->status = j->fn(j->arg, j->be, &j->report, &j->err);
    return NULL;
}

/* One plan on every device: src[rank], dst[rank]. */
typedef struct plan_job {
    const redist_plan_t *plan;
    void *const *src, *const *dst;
    const redist_exec_options_t *opts;
} plan_job;

static redist_status_t run_plan(void *arg, redist_backend_t *be,
                                redist_exec_report_t *r, redist_error_t *err)
{
    const plan_job *j = arg;
    return redist_plan_execute(j->plan, be, j->src[be->rank],
                               j->dst[be->rank], j->opts, r, err);
}

redist_status_t rd_sim_run_world(redist_sim_t *w, const redist_plan_t *plan,
                                 void *const src[], void *const dst[],
                                 const redist_exec_options_t *opts,
                                 redist_exec_report_t *report,
                                 redist_exec_report_t *per_device,
                                 redist_error_t *err)
{
    plan_job j = {plan, src, dst, opts};
    return rd_sim_run_each(w, run_plan, &j, report, per_device, err);
}

redist_status_t rd_sim_run_each(redist_sim_t *w, rd_sim_fn fn, void *arg,
                                redist_exec_report_t *report,
                                redist_exec_report_t *per_device,
                                redist_error_t *err)
{
    int64_t n = w->n;
    sim_job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!jobs || !th) {
        free(jobs);
        free(th);
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = 1u << 20;
#ifdef PTHREAD_STACK_MIN
    if (stack < (size_t)PTHREAD_STACK_MIN)
        stack = (size_t)PTHREAD_STACK_MIN;
#endif
    pthread_attr_setstacksize(&attr, stack);
    int64_t started = 0;
    redist_status_t st = REDIST_OK;
    for (int64_t r = 0; r < n; r++) {
        jobs[r].fn = fn;
        jobs[r].arg = arg;
        jobs[r].be = &w->ep[r];
        if (pthread_create(&th[r], &attr, sim_thread, &jobs[r]) != 0) {
            redist_error_t e;
            redist_error_clear(&e);
            rd_error(&e, REDIST_ERR_BACKEND, NULL, NULL,
                     "sim: cannot start the thread of device %lld",
                     (long long)r);
            sim_abort(&w->ep[r], REDIST_ERR_BACKEND, &e);
            st = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL, "%s", e.text);
            break;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    for (int64_t r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    redist_exec_report_t agg;
    memset(&agg, 0, sizeof agg);
    agg.failed_step = -1;
    agg.steps_done = INT_MAX;
    for (int64_t r = 0; r < started; r++) {
        const redist_exec_report_t *x = &jobs[r].report;
        if (per_device)
            per_device[r] = *x;
#define RD_MAX(f) if (x->f > agg.f) agg.f = x->f
        RD_MAX(scratch_bytes);
        RD_MAX(scratch_high_water);
        RD_MAX(scratch_allocations);
        RD_MAX(sent_bytes);
        RD_MAX(recv_bytes);
        RD_MAX(seconds);
        RD_MAX(writes_src);
#undef RD_MAX
        if (x->steps_done < agg.steps_done)
            agg.steps_done = x->steps_done;
        if (x->failed_step >= 0 &&
            (agg.failed_step < 0 || x->failed_step < agg.failed_step))
            agg.failed_step = x->failed_step;
    }
    if (started == 0)
        agg.steps_done = 0;
    if (!st) {
        /* the error of the device that failed first, else the lowest */
        int64_t root = -1;
        pthread_mutex_lock(&w->mu);
        if (w->aborted && w->root_rank >= 0 && jobs[w->root_rank].status)
            root = w->root_rank;
        else if (!w->aborted && w->res_first >= 0 &&
                 jobs[w->res_first].status)
            root = w->res_first;
        pthread_mutex_unlock(&w->mu);
        for (int64_t r = 0; r < n && root < 0; r++)
            if (jobs[r].status)
                root = r;
        if (root >= 0) {
            st = jobs[root].status;
            if (err && err->status == REDIST_OK) {
                *err = jobs[root].err;
                if (!err->status)
                    err->status = st;
            }
        }
    }
    if (report)
        *report = agg;
    free(jobs);
    free(th);
    return st;
}

redist_status_t redist_exec_sim_run(const redist_plan_t *plan,
                                    void *const src[], void *const dst[],
                                    unsigned sim_flags,
                                    const redist_exec_options_t *opts,
                                    redist_exec_report_t *report,
                                    redist_exec_report_t *per_device,
                                    redist_error_t *err)
{
    redist_sim_t *w = NULL;
    if (report) {
        memset(report, 0, sizeof *report);
        report->failed_step = -1;
    }
    if (!plan || !src || !dst)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL plan or buffer array");
    if (redist_spec_num_meshes(redist_plan_spec(plan)) == 2) {
        rd_sim_args a = {plan, src, dst, sim_flags, opts, report, per_device};
        return rd_meshes_sim_run(&a, err);
    }
    int64_t n = redist_mesh_num_devices(redist_spec_mesh(
        redist_plan_spec(plan)));
    redist_status_t st = redist_sim_create(n, sim_flags, &w, err);
    if (st)
        return st;
    st = rd_sim_run_world(w, plan, src, dst, opts, report, per_device, err);
    redist_sim_free(w);
    return st;
}
