/*
 * The executor's program (internal): a plan turned into passes over
 * local buffers, with every pass's input and output buffer chosen ahead
 * of time.  Built by program.c (the passes) and assign.c (the buffers,
 * with the scheme and its memory argument), bound to one device by
 * bind.c, run by runtime.c.
 */
#ifndef REDIST_EXEC_INTERNAL_H
#define REDIST_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"

/* The buffers a pass may read or write. */
enum { RD_BUF_SRC, RD_BUF_DST, RD_BUF_SA, RD_BUF_SB, RD_NBUF };

enum {
    RD_PASS_COPY,  /* memcpy (only as the last pass) */
    RD_PASS_BOX,   /* one or more consecutive slices: a sub-block copy */
    RD_PASS_SPLIT, /* pack before all_to_all / reduce_scatter */
    RD_PASS_MERGE, /* unpack after all_gather / all_to_all */
    RD_PASS_XCHG,  /* a backend exchange */
    RD_PASS_FUSED, /* a whole step run by the backend */
    RD_PASS_XPACK,  /* exchange: pack the send pieces */
    RD_PASS_XUNPACK, /* exchange: unpack the received pieces */
    RD_PASS_VPACK,  /* uneven reduce_scatter: the members' boxes, packed */
    RD_PASS_RSUM    /* a set's lowered reduction: s slabs of `chunk` bytes
                       reduced in order into one (program.c) */
};

/* Uneven passes (rd_pass.umode): what bind.c fills per device. */
enum {
    RD_U_NONE,
    RD_U_BOX,   /* BOX: the box before step `first` to the one after `last` */
    RD_U_CHUNK, /* BOX: this member's chunk of a packed reduce_scatter */
    RD_U_COUNT, /* XCHG all_reduce: this device's box after the step */
    RD_U_SUM,   /* XCHG all_reduce: the packed members' boxes */
    RD_U_VPACK, /* VPACK: the members' boxes after the step */
    RD_U_DST,   /* COPY: this device's target block */
    RD_U_RSUM,  /* RSUM: this device's box after the step (the slabs) */
    RD_U_RSUM_MID, /* RSUM of a lowered uneven all_reduce: this device's
                      middle box (its gather's, exchange xi: the input) */
    RD_U_RS     /* FUSED reduce_scatter: this device's boxes (x.boxed) */
};

typedef struct rd_pass {
    int kind;
    int first, last; /* plan steps this pass belongs to (-1: final copy) */
    uint64_t in_bytes, out_bytes;
    int inplace_ok;
    int in_buf, out_buf;
    uint64_t pre, s, chunk;              /* split / merge */
    int64_t off[REDIST_MAX_DIMS];        /* box: offset in the input */
    rd_xstep x;                          /* shapes; exchange details */
    int xi;                              /* exchange steps: index in xchg */
    /* backend passes: may the backend run it in place, with how much
     * spare (rd_backend_ops.inplace_need; UINT64_MAX: no) */
    uint64_t inplace_need;
    /* backend passes: the spare region during the pass (buffer, offset,
     * bytes; spare_buf -1: none) */
    int spare_buf;
    uint64_t spare_off, spare_bytes;
    /* the largest other free region within the scratch SA / SB (not for
     * in-place passes) */
    int sspare_buf;
    uint64_t sspare_off, sspare_bytes;
    /* the bytes this device reads and writes (bind.c): in_bytes and
     * out_bytes (the most any device does) unless the dims are uneven */
    uint64_t dev_in, dev_out;
    int umode;       /* RD_U_*: uneven, what bind fills */
    int final;       /* its output is the target block (uneven) */
    int64_t nvbox;   /* VPACK: boxes (member order), offset then shape */
    int64_t *vbox;   /* 2 * ndims per box (bind.c; freed with the program) */
    /* RSUM of fused reduce_scatters: the groups' sizes in the steps'
     * order (nlev > 1; their product is s), each reduced in turn */
    int nlev;
    uint64_t lev[REDIST_MAX_AXES];
} rd_pass;

typedef struct rd_program {
    int npasses;
    rd_pass *pass;
    uint64_t scratch[2]; /* bytes of SA and SB */
    /* RD_BUF_SA or RD_BUF_SB: that buffer is the region the endpoint
     * lends (be->lend), not allocated; 0: none */
    int lent;
    uint64_t src_bytes, dst_bytes;
    int writes_src;
    int inplace_passes; /* backend passes planned in place */
    int end_src;        /* RD_BUILD_END_IN_SRC: the data ends in SRC */
    int collectives;
    int nxchg;
    rd_xchg *xchg; /* one per exchange step (exchange.c) */
    /* the layouts of a lowered uneven reduce_scatter's exchange (two per
     * exchange, by index; program.c): the plan's, with a leading dim */
    struct rd_layout *xlay;
    /* uneven dims: pass sizes are the most any device needs, the same
     * program on every device; src_min / dst_min the least any device
     * holds (the capacity the buffer assignment may count on) */
    int uneven;
    uint64_t src_min, dst_min;
    /* built with RD_PROG_LOWER: even all_gather, all_to_all and permute
     * steps are exchanges too (program.c), as an uneven plan's are, and
     * with RD_PROG_LOWER_RED (lower_red) even reductions exchanges and an
     * ordered sum */
    int lower, lower_red;
    /* built for one array with RD_BUILD_LOWER_RS (fuse_rs): reduce_scatter
     * steps are exchanges of contributions and an ordered sum, and a run
     * of consecutive ones along one dim is one exchange and one sum in
     * the steps' order (program.c) */
    int fuse_rs;
    /* built with RD_BUILD_LOWER_MOVES: even all_gathers and all_to_alls
     * are exchanges */
    int lower_moves;
} rd_program;

/* An internal build flag beside REDIST_EXEC_* (rd_program_build): lower
 * the data-moving collectives to exchanges, so that a set's round can
 * combine them with other arrays' (set.c). */
#define RD_PROG_LOWER (1u << 30)
/* With RD_PROG_LOWER: even reductions too (rd_reduction_lowered_dim). */
#define RD_PROG_LOWER_RED (1u << 29)

/* program.c: the passes of `plan` (buffers not yet assigned), one pass
 * appended, the type before step k (the source for k == 0). */
redist_status_t rd_program_passes(const redist_plan_t *plan,
                                  unsigned fused_ops, rd_program *prog,
                                  redist_error_t *err);
rd_pass *rd_program_add_pass(rd_program *prog, int kind, int step,
                             uint64_t in, uint64_t out);
/* The dim along which a program built with RD_PROG_LOWER_RED lowers step
 * k of `plan`, a reduction, to an exchange of contributions and an
 * ordered sum (program.c), or -1 when it runs as the collective (any
 * other step, two meshes, no room for the extra dim, an all_reduce
 * without a dim the group divides, or of uneven dims without a dim
 * whose every block is at least the group long, or whose layout
 * changes). */
int rd_reduction_lowered_dim(const redist_plan_t *plan, int k);
void rd_plan_type_before(const redist_plan_t *plan, int k, redist_type_t *t);
/* Uneven plans: the layout before step k (the source's for k == 0) and
 * after it (src/core/layout.h); NULL for an even plan. */
struct rd_layout;
const struct rd_layout *rd_plan_layout_before(const redist_plan_t *plan,
                                              int k);
const struct rd_layout *rd_plan_layout_after(const redist_plan_t *plan,
                                             int k);

/* assign.c: build the device-independent program of `plan` for a backend
 * with the given capabilities and fused ops: passes and buffer
 * assignment. */
redist_status_t rd_program_build(const redist_plan_t *plan, unsigned caps,
                                 unsigned fused_ops, unsigned flags,
                                 rd_program *prog, redist_error_t *err);
/* The same with build flags (RD_BUILD_UNEVEN_RS only: a set's programs,
 * rd_backend_ops.set_build). */
redist_status_t rd_program_build_b(const redist_plan_t *plan, unsigned caps,
                                   unsigned fused_ops, unsigned build,
                                   unsigned flags, rd_program *prog,
                                   redist_error_t *err);
/* The same for a backend endpoint: its caps, fused ops and, with
 * be->build & RD_BUILD_INPLACE, its in-place passes (be NULL: none). */
redist_status_t rd_program_build_for(const redist_plan_t *plan,
                                     const redist_backend_t *be,
                                     unsigned flags, rd_program *prog,
                                     redist_error_t *err);
/* The scratch the program allocates: SA + SB less a lent buffer. */
uint64_t rd_program_scratch(const rd_program *prog);
/* bind.c: fill the device-dependent parts (slice offsets, groups, permute
 * peers, exchange transfers) for device `rank`. */
/* Does every device's box after step k of `plan` (an uneven
 * reduce_scatter) start its box before, contiguous there, or is it empty
 * (bind.c)?  Then the step may run in place. */
int rd_boxed_prefix(const redist_plan_t *plan, int k);
redist_status_t rd_program_bind(rd_program *prog, const redist_plan_t *plan,
                                int64_t rank, redist_error_t *err);
/* program.c */
void rd_program_free(rd_program *prog);

/* permute.c: the permute pairing of doc/spec-format.md for device `rank` going
 * from type `before` to `after` (same local shape and partial set): the
 * rank it sends its block to and the rank it receives its new block
 * from. */
redist_status_t rd_permute_peers(const redist_mesh_t *mesh,
                                 const redist_type_t *before,
                                 const redist_type_t *after, int64_t rank,
                                 int64_t *send_to, int64_t *recv_from);

/* Exchange steps (exchange.c).  init: the device-independent geometry
 * from type a (local shape la) to type b (lb); bind: this device's
 * transfer lists (REDIST_ERR_NOMEM); unbind frees them; pack: the
 * distinct send pieces from the `a` block `in` into `out`; unpack: the
 * received pieces from `in` into the `b` block `out`. */
void rd_xchg_init(rd_xchg *x, const redist_mesh_t *mesh,
                  const redist_type_t *a, const redist_type_t *b,
                  const int64_t la[], const int64_t lb[], int ndims,
                  size_t elem, const struct rd_layout *al,
                  const struct rd_layout *bl);
redist_status_t rd_xchg_bind(rd_xchg *x, int64_t rank, redist_error_t *err);
void rd_xchg_unbind(rd_xchg *x);
void rd_xchg_pack(const rd_xchg *x, const void *in, void *out);
void rd_xchg_unpack(const rd_xchg *x, const void *in, void *out);

/* runtime.c: a run prepared once, run many times (redist_plan_execute is
 * prepare + run + release).  prepare: every check, the program bound to
 * this device, both agreements (backend `agree`) and the scratch
 * (touched once when `touch`); on failure it has released everything.
 * run: the passes only (no agreement, no allocation); `r` gets the
 * traffic, steps and scratch figures (not `seconds`).  release: the
 * scratch (backend `free`, collective where that is) and the program. */
typedef struct rd_exec_prep {
    redist_backend_t *be;
    rd_program p;
    void *buf[RD_NBUF]; /* src, dst and the scratch */
    int nsteps;
    uint64_t cur, high, count; /* the counting allocator */
} rd_exec_prep;

redist_status_t rd_exec_prepare(const redist_plan_t *plan,
                                redist_backend_t *be, void *src, void *dst,
                                unsigned flags, int touch, rd_exec_prep *xp,
                                redist_exec_report_t *r, redist_error_t *err);
redist_status_t rd_exec_run(rd_exec_prep *xp, redist_exec_report_t *r,
                            redist_error_t *err);
void rd_exec_release(rd_exec_prep *xp);
/* Many arrays (set_run.c) run several prepared programs interleaved:
 * rd_exec_until_exchange runs xp's passes from *k on and stops at the
 * next exchange pass (rd_pass_is_exchange: an exchange op's pass, or a
 * whole exchange step of a backend without one; *k then names it, for the
 * caller to run combined with other arrays') or at the end (*k ==
 * npasses); a failed pass aborts the other ranks.  rd_pass_account adds
 * a backend pass's traffic to r.  rd_exec_check_backend: does the
 * backend run every pass of p (exchange steps are optional)? */
int rd_pass_is_exchange(const rd_pass *ps);
redist_status_t rd_exec_until_exchange(rd_exec_prep *xp, int *k,
                                       redist_exec_report_t *r,
                                       redist_error_t *err);
void rd_pass_account(const redist_backend_t *be, const rd_pass *ps,
                     redist_exec_report_t *r);
redist_status_t rd_exec_check_backend(const rd_program *p,
                                      const rd_backend_ops *ops,
                                      redist_error_t *err);
/* A monotonic clock in seconds (the reports' `seconds`). */
double rd_exec_seconds(void);

/* async.c: the progress thread of a prepared object (the backends'
 * start / test / wait).  init, then spawn (-1: no thread); start posts a
 * run of `run(arg, report, err)`; test: *done; wait: its status, report
 * and error; busy: a run posted and not yet waited for; destroy waits
 * for a run in flight, then ends the thread.  `who` names the call in
 * the errors (REDIST_ERR_INVALID: in flight, nothing started; for test,
 * also a NULL `a` (the object's) or `done`). */
typedef redist_status_t (*rd_async_fn)(void *arg, redist_exec_report_t *r,
                                       redist_error_t *err);
typedef struct rd_async {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int thread, state;
    atomic_int done;
    rd_async_fn run;
    void *arg;
    redist_status_t st;
    redist_error_t err;
    redist_exec_report_t rep;
} rd_async;

void rd_async_init(rd_async *a, rd_async_fn run, void *arg);
int rd_async_spawn(rd_async *a);
int rd_async_busy(rd_async *a);
redist_status_t rd_async_start(rd_async *a, const char *who,
                               redist_error_t *err);
redist_status_t rd_async_test(rd_async *a, int *done, const char *who,
                              redist_error_t *err);
redist_status_t rd_async_wait(rd_async *a, redist_exec_report_t *r,
                              const char *who, redist_error_t *err);
void rd_async_destroy(rd_async *a);
/* A report of a call that did nothing (NULL: nothing). */
void rd_report_empty(redist_exec_report_t *r);

/* The calls of a backend's prepared objects (redist_mpi_run .. _wait,
 * redist_shmem_run .. _wait) over their progress thread.  `api` names
 * the calls in the errors; `whose` says what a run in flight belongs to
 * ("this prepared object"), `need` what start needs ("MPI_THREAD_MULTIPLE
 * on every rank (MPI_Init_thread)").  `busy`: a flag wider than the
 * object, set while one of its runs is started and not waited for (the
 * shmem context's: one run in flight per context), or NULL (the object's
 * own thread decides).  `level` (set by the backend at prepare): the
 * lowest thread level of the ranks; start needs `need_level`.
 * Every call takes NULL for a NULL object (REDIST_ERR_INVALID) and
 * empties its `report` (may be NULL) first; run: on the calling thread,
 * refused while a non-blocking run is in flight; wait: the report of the
 * run waited for; destroy: waits for a run in flight, then ends the
 * thread. */
typedef struct rd_prepared_api {
    const char *run, *start, *test, *wait;
    const char *whose, *need;
} rd_prepared_api;

typedef struct rd_prepared {
    rd_async async;
    const rd_prepared_api *api;
    int *busy;
    int level, need_level;
} rd_prepared;

void rd_prepared_init(rd_prepared *f, const rd_prepared_api *api, int *busy,
                      int need_level, rd_async_fn run, void *arg);
redist_status_t rd_prepared_run(rd_prepared *f, redist_exec_report_t *report,
                                redist_error_t *err);
redist_status_t rd_prepared_start(rd_prepared *f, redist_error_t *err);
redist_status_t rd_prepared_test(rd_prepared *f, int *done,
                                 redist_error_t *err);
redist_status_t rd_prepared_wait(rd_prepared *f, redist_exec_report_t *report,
                                 redist_error_t *err);
int rd_prepared_async(const rd_prepared *f);
void rd_prepared_destroy(rd_prepared *f);

/* hash.c: a hash of everything about a plan that all ranks must agree
 * on. */
uint64_t rd_plan_hash(const redist_plan_t *plan, unsigned flags);

#endif
