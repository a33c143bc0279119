/*
 * Agreement and failure.  Every check a PE can fail on its own is folded
 * into one reduction over all PEs (shmem_long_max_to_all of RD_SHM_NRED
 * longs) before any data moves: every PE learns the first failed PE and
 * reads its message with shmem_getmem, and whether the hashes (plan,
 * options) agree; on differing hashes one more reduction names the first
 * PE that differs from PE 0.  A PE that fails in the middle of a plan
 * writes an abort word to every PE (rd_shm_abort): the waits of its
 * peers (signal.c) return an error, and the context stays failed.
 * Cost: alpha log P per agreement; memory: the fixed symmetric block.
 */
#include <string.h>

#include "shmem_impl.h"
#include "../../core/internal.h"

static void post_error(redist_shmem_t *c, redist_status_t st,
                       const redist_error_t *err, char *text, long *status)
{
    *status = st;
    rd_strlcpy(text, err && err->text[0] ? err->text : redist_status_string(st),
               REDIST_ERROR_TEXT_LENGTH);
    (void)c;
}

/* Every PE learns the first failed PE (and its error) and whether the
 * hashes agree.  One reduction over all PEs: also a synchronisation
 * point (no PE leaves before every PE arrived). */
redist_status_t rd_shm_agree_all(redist_shmem_t *c, redist_status_t local,
                                 uint64_t hash, long extra, const char *what,
                                 long *extra_max, redist_error_t *err)
{
    shm_sym *y = c->sym;
    int t = c->turn;
    if (local)
        post_error(c, local, err, y->text[t], &y->status[t]);
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = local ? (long)(c->npes - c->me) : 0;
    y->red_src[1] = (long)hash;
    y->red_src[2] = ~(long)hash;
    y->red_src[3] = extra;
    y->hash = (long)hash;
    rd_shm_reduce_max(c);
    long first = y->red_dst[0] ? c->npes - y->red_dst[0] : -1;
    int differs = first < 0 && y->red_dst[1] != ~y->red_dst[2];
    if (extra_max)
        *extra_max = y->red_dst[3];
    long who = -1;
    if (differs) { /* which PE differs from PE 0: PE 0 rewrites its hash
                    * only after everybody has passed this reduction */
        long h0 = shmem_long_g(&y->hash, 0);
        memset(y->red_src, 0, sizeof y->red_src);
        y->red_src[0] = (long)hash != h0 ? (long)(c->npes - c->me) : 0;
        rd_shm_reduce_max(c);
        who = c->npes - y->red_dst[0];
    }
    if (local)
        return local;
    if (first >= 0) {
        char text[REDIST_ERROR_TEXT_LENGTH];
        long status = shmem_long_g(&y->status[t], (int)first);
        shmem_getmem(text, y->text[t], sizeof text, (int)first);
        text[sizeof text - 1] = '\0';
        if (status >= 0 || status < -100)
            status = REDIST_ERR_BACKEND;
        return rd_error(err, (redist_status_t)status, NULL, NULL,
                        "PE %ld failed: %s", first, text);
    }
    if (differs)
        return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                        "the PEs were given different %s (PE %ld differs "
                        "from PE 0)",
                        what, who);
    return REDIST_OK;
}

redist_status_t rd_shm_agree(redist_backend_t *be, redist_status_t local,
                             uint64_t plan_hash, redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    c->seq = 0;
    if (c->alloc_failed >= 0) { /* every PE saw NULL (rd_shm_alloc_all) */
        if (err && local) /* the executor's "cannot allocate" */
            redist_error_clear(err);
        if (!c->alloc_mine)
            local = REDIST_OK; /* the PE that failed says why */
        else if (local)
            local = rd_error(err, local, NULL, NULL,
                             "cannot allocate the executor's scratch in "
                             "the symmetric heap of PE %d (too small: "
                             "SHMEM_SYMMETRIC_SIZE)",
                             c->me);
        c->alloc_failed = -1;
        c->alloc_mine = 0;
    }
    if (!local && (c->dead || rd_shm_aborted(c))) {
        c->dead = 1;
        local = rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                         "shmem: the context failed earlier (a plan was "
                         "aborted)");
    }
    return rd_shm_agree_all(c, local, plan_hash, 0, "plans", NULL, err);
}

void rd_shm_abort(redist_backend_t *be, redist_status_t st,
                  const redist_error_t *err)
{
    redist_shmem_t *c = ctx_of(be);
    if (c->root) { /* a sub context: every PE of the job */
        c->dead = 1;
        c = c->root;
    }
    if (rd_shm_aborted(c)) { /* somebody else was first */
        c->dead = 1;
        return;
    }
    c->dead = 1;
    post_error(c, st, err, c->sym->abort_text, &c->sym->abort_status);
    shmem_quiet();
    for (int pe = 0; pe < c->npes; pe++)
        (void)shmem_long_atomic_compare_swap(&c->sym->abort_word, 0,
                                             (long)c->me + 1, pe);
    shmem_quiet();
}
