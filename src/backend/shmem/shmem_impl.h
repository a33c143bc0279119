/*
 * The OpenSHMEM backend's insides (private to src/backend/shmem/): one PE
 * per mesh device, every exchange a whole step of one-sided puts into
 * the final places, behind the executor's ops table (exec/backend.h).
 * It builds into libredist_shmem, never into libredist.  The contract is
 * include/redist/shmem.h; each file below opens with its algorithm, cost
 * and memory:
 *   context.c        the context: the fixed symmetric block, options
 *   agree.c          the agreement before any data moves, abort
 *   signal.c         per-step counters: READY / DONE between group members
 *   put.c            one-sided writes: stores through shmem_ptr or puts
 *   step.c           the ops table; a step of each kind
 *   reduce_mode.c    which reduction protocol a step uses
 *   reduce_common.c  what each member reduces, shared by the protocols
 *   reduce_pull.c    pull and get: inputs read in place
 *   reduce_push.c    push: contributions put into work space, in rounds
 *   reduce_serial.c  serial: no work space, one sender at a time
 *   reduce_boxed.c   an uneven reduce_scatter whole: each member's box
 *                    put to it in chunks, no buffer sized by the largest
 *   scratch.c        symmetric allocations that fail on every PE together
 *   execute.c        redist_shmem_exec_info / redist_shmem_execute
 *   prepared.c       prepared objects: prepare once, run many, start /
 *                    test / wait on a progress thread
 * Costs: alpha-beta, s members, L bytes per member.
 */
#ifndef REDIST_BACKEND_SHMEM_IMPL_H
#define REDIST_BACKEND_SHMEM_IMPL_H

#include "redist/shmem.h"
#include "../../exec/exec_internal.h"
#include "shmem_internal.h"

#define RD_SHM_SLOTS 1024 /* exchanges per call */
enum { SIG_READY, SIG_DONE, SIG_END, SIG_FREE, RD_SHM_NSIG };
#define RD_SHM_NRED 8 /* longs per agreement reduction */

/* The fixed symmetric block (one shmem_malloc). */
typedef struct shm_sym {
    long sig[RD_SHM_SLOTS * RD_SHM_NSIG];
    long abort_word; /* 0, or 1 + the rank that aborted */
    long abort_status;
    long status[2];  /* a failed PE's status at agreement number parity */
    long red_src[RD_SHM_NRED], red_dst[RD_SHM_NRED];
    long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > RD_SHM_NRED
                  ? SHMEM_REDUCE_MIN_WRKDATA_SIZE
                  : RD_SHM_NRED];
    long psync[2][SHMEM_REDUCE_SYNC_SIZE];
    char text[2][REDIST_ERROR_TEXT_LENGTH];
    char abort_text[REDIST_ERROR_TEXT_LENGTH];
    long hash; /* this PE's hash at the last agreement */
} shm_sym;

struct redist_shmem {
    /* npes, me: the PEs of this context's mesh and this PE's rank in it
     * (the job's for a context of redist_shmem_create; a mesh of a
     * set's two-mesh array for a sub context, sub.c) */
    int npes, me;
    /* a sub context: its context, the job's PE of each mesh rank, and
     * its own signal counters (symmetric); NULL, NULL, sym->sig for a
     * context of redist_shmem_create */
    struct redist_shmem *root;
    int *pes;
    long *sig;
    unsigned flags;
    uint64_t work_bytes;
    int ptr_ok; /* every PE reaches every PE by load */
    int dead;   /* a plan was aborted: every later call fails */
    shm_sym *sym;
    char *work; /* symmetric, work_bytes */
    long expect[RD_SHM_SLOTS * RD_SHM_NSIG];
    int turn;   /* parity of the reductions (pSync, text) */
    int seq;    /* exchanges so far in this call */
    uint64_t work_used; /* most of the work area used in this call */
    uint64_t work_cap;  /* redist_shmem_execute: most of it to use (0: all) */
    uint64_t bound_free; /* redist_shmem_execute: what max(src, dst) leaves
                            beside the executor's scratch (red_mode) */
    int prefer;          /* tests: the reduction protocol to use where it
                            can (-1: red_mode's choice) */
    uint64_t modes[RED_NMODES]; /* reductions run per protocol */
    char *free_sym;     /* free symmetric memory during this step */
    uint64_t free_sym_bytes;
    struct {
        void *p;
        size_t bytes;
    } scr[4];
    int alloc_failed; /* a scratch allocation of this call failed: the
                         first PE whose shmem_malloc did, else -1 */
    int alloc_mine;   /* ... and it was this PE's */
    int64_t nops, fail_at; /* exchanges so far; injected failure (tests) */
    int busy; /* a prepared object's non-blocking run is in flight */
    struct redist_backend ep[2]; /* [0] any buffers, [1] symmetric */
};

static inline redist_shmem_t *ctx_of(redist_backend_t *be)
{
    return (redist_shmem_t *)be->ctx;
}

static inline int pe_of(const rd_group *g, int64_t k)
{
    return (int)rd_group_rank(g, k);
}

/* The job's PE of rank r of c's mesh. */
static inline int rd_shm_pe(const redist_shmem_t *c, int64_t r)
{
    return c->pes ? c->pes[r] : (int)r;
}

/* signal.c */
void rd_shm_reduce_max(redist_shmem_t *c);
int rd_shm_aborted(redist_shmem_t *c);
/* After rd_shm_aborted: the failed PE's error (the context is dead). */
redist_status_t rd_shm_aborted_error(redist_shmem_t *c, redist_error_t *err);
void rd_shm_signal_pe(redist_shmem_t *c, int slot, int j, int pe);
void rd_shm_signal_group(redist_shmem_t *c, int slot, int j,
                         const rd_group *g);
redist_status_t rd_shm_wait(redist_shmem_t *c, int slot, int j, long n,
                            redist_error_t *err);
redist_status_t rd_shm_next_slot(redist_shmem_t *c, int *slot,
                                 redist_error_t *err);

/* put.c */
void rd_shm_write_box(const redist_shmem_t *c, int pe, char *dst,
                      const int64_t dshape[], const int64_t doff[],
                      const char *src, const int64_t sshape[],
                      const int64_t soff[], const int64_t box[], int nd,
                      size_t elem);
void rd_shm_write_bytes(const redist_shmem_t *c, int pe, char *dst,
                        const char *src, uint64_t n);
void rd_shm_complete(void);

/* reduce_common.c: the part of a reduction that member t computes: runs
 * of `len` elements at in_off in every input, out_off in the output. */
typedef struct red_part {
    int all_reduce;
    uint64_t pre, chunk;  /* reduce_scatter: pre runs of chunk */
    uint64_t count;       /* all_reduce: elements of the block */
    int64_t s;
} red_part;

typedef struct red_inputs {
    const char *const *base; /* pull: member m's input (local address) */
    const char *mine;        /* my own input */
    uint64_t off;            /* bytes, in the inputs */
    const char *work;        /* push: slots of `slot` bytes */
    uint64_t slot;
    int64_t me;
    /* get (no base): the peers' inputs at the symmetric address `mine`,
     * `len` bytes fetched into `buf` one member at a time */
    const rd_group *g;
    char *buf;
    uint64_t len;
    const redist_shmem_t *c; /* its mesh's PEs (rd_shm_pe) */
} red_inputs;

uint64_t rd_shm_ar_lo(const red_part *r, int64_t t);
uint64_t rd_shm_part_runs(const red_part *r);
void rd_shm_part_run(const red_part *r, int64_t t, uint64_t q,
                     uint64_t *in_off, uint64_t *out_off, uint64_t *len);
uint64_t rd_shm_slot_of(int64_t m, int64_t k);
const void *rd_shm_red_input(void *user, int64_t m);
void rd_shm_red_part_of(const rd_xstep *x, red_part *r);
void rd_shm_ar_put_range(redist_shmem_t *c, const rd_group *g,
                         const red_part *r, char *out, size_t elem);
int rd_shm_push_piece(const red_part *rp, int64_t t, uint64_t round,
                      uint64_t B, uint64_t *in_off, uint64_t *out_off,
                      uint64_t *len);
uint64_t rd_shm_piece_rounds(const red_part *rp, uint64_t B);
uint64_t rd_shm_ar_out_free(const red_part *rp);

/* reduce_pull.c, reduce_push.c, reduce_serial.c */
redist_status_t rd_shm_reduce_pull(redist_shmem_t *c, const rd_xstep *x,
                                   const char *in, char *out, int slot,
                                   int get, redist_error_t *err);
redist_status_t rd_shm_reduce_push(redist_shmem_t *c, redist_backend_t *be,
                                   const rd_xstep *x, const char *in,
                                   char *out, int slot, redist_error_t *err);
redist_status_t rd_shm_reduce_serial(redist_shmem_t *c, const rd_xstep *x,
                                     const char *in, char *out, int slot,
                                     redist_error_t *err);

/* reduce_boxed.c: an uneven reduce_scatter run whole (x->boxed; in_sym:
 * its input symmetric, read in place); the chunk (elements) it puts
 * with W bytes of work space, and whether it takes the context's work
 * area (a pass with sspare_bytes of free symmetric scratch) */
redist_status_t rd_shm_rs_boxed(redist_shmem_t *c, redist_backend_t *be,
                                const rd_xstep *x, const char *in, char *out,
                                int in_sym, int slot, redist_error_t *err);
uint64_t rd_shm_boxed_chunk(const rd_xstep *x, uint64_t W);
int rd_shm_boxed_uses_work(const rd_xstep *x, int in_sym,
                           uint64_t sspare_bytes);

/* reduce_mode.c: how a reduction over more than one member runs.  The
 * facts come from the pass (work_promise, execute.c) or from the step's
 * buffers (run_step, step.c): the same decision either way. */
typedef struct red_facts {
    int64_t s;
    size_t elem;
    int all_reduce;
    uint64_t in_bytes;
    int in_sym;           /* input symmetric (the peers can read it) */
    int in_place;         /* input == output */
    int out_sym;          /* output symmetric */
    uint64_t out_cap;     /* bytes of the output's scratch buffer, or 0 */
    uint64_t spare_bytes; /* the pass's spare region */
    uint64_t sspare_bytes; /* free symmetric scratch of the pass */
    uint64_t bound_free;  /* what max(src, dst) leaves beside the scratch */
} red_facts;

int rd_shm_red_mode(const redist_shmem_t *c, const red_facts *f);

/* step.c */
extern const rd_backend_ops rd_shm_ops[2][2];

/* agree.c */
redist_status_t rd_shm_agree_all(redist_shmem_t *c, redist_status_t local,
                                 uint64_t hash, long extra,
                                 const char *what, long *extra_max,
                                 redist_error_t *err);
redist_status_t rd_shm_agree(redist_backend_t *be, redist_status_t local,
                             uint64_t plan_hash, redist_error_t *err);
void rd_shm_abort(redist_backend_t *be, redist_status_t st,
                  const redist_error_t *err);

/* execute.c */
int rd_shm_symmetric(redist_shmem_t *c, const redist_plan_t *plan,
                     const void *src, const void *dst);
uint64_t rd_shm_work_plan(redist_shmem_t *c, const redist_plan_t *plan,
                          const redist_exec_options_t *opts, int sym);

/* sub.c: the endpoints of a set's two-mesh arrays (backend.h `sub`),
 * the start of a set run, combined transfers (exchange_multi) */
redist_status_t rd_shm_sub(redist_backend_t *be, const redist_mesh_t *mesh,
                           const int64_t devices[], redist_backend_t **out,
                           redist_error_t *err);
void rd_shm_sub_free(redist_backend_t *sub);
void rd_shm_run_begins(redist_backend_t *be);
/* rd_backend_ops.threads (prepared.c): SHMEM_THREAD_MULTIPLE; the
 * root context's busy flag. */
int rd_shm_threads(redist_backend_t *be, int **busy);
redist_status_t rd_shm_exchange_multi(redist_backend_t *be, int nparts,
                                      const struct rd_xpart *parts,
                                      redist_error_t *err);
/* stream.c: a solo two-mesh array's transfer through its window */
redist_status_t rd_shm_stream(redist_shmem_t *c, const struct rd_xpart *q,
                              redist_error_t *err);

/* execute.c: whether [p, p + n) lies in the symmetric heap (locally;
 * NULL: no) */
int rd_shm_sym_range(const redist_shmem_t *c, const void *p, uint64_t n);
/* meshes.c: redist_shmem_execute and _exec_info of a two-mesh plan */
redist_status_t rd_shm_meshes_execute(redist_shmem_t *c,
                                      const redist_plan_t *plan, void *src,
                                      void *dst,
                                      const redist_exec_options_t *opts,
                                      redist_exec_report_t *report,
                                      redist_error_t *err);
redist_status_t rd_shm_meshes_info(const redist_shmem_t *c,
                                   const redist_plan_t *plan,
                                   const void *src, const void *dst,
                                   const redist_exec_options_t *opts,
                                   redist_shmem_info_t *out,
                                   redist_error_t *err);

/* scratch.c */
int rd_shm_is_scratch(const redist_shmem_t *c, const void *p);
uint64_t rd_shm_scratch_cap(const redist_shmem_t *c, const void *p);
void *rd_shm_alloc_all(redist_shmem_t *c, size_t bytes, int *mine);
void *rd_shm_alloc(redist_backend_t *be, size_t bytes);
void rd_shm_free(redist_backend_t *be, void *p, size_t bytes);

#endif
