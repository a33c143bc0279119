/*
 * Signals between the members of a step.  Within a step each PE talks
 * only to its group (the members of its mesh-axis group, base + k *
 * stride, any size and stride; or its permute or exchange partners).
 * Per step (a slot of RD_SHM_NSIG symmetric counters per PE, indexed by
 * the exchange's number within the call):
 *   1. READY: atomic increment of every peer's READY counter ("my input
 *      is final, my output and my work area are free"), then wait until
 *      mine has received one from every peer;
 *   2. data (put.c);
 *   3. fence + shmem_quiet, atomic increment of every peer's DONE
 *      counter, wait for theirs: my output is complete and nobody reads
 *      my input any more.
 * Counters only grow; each PE keeps the value it expects per counter.
 * Slots are reused by later calls: every call starts with the executor's
 * `agree` (agree.c, a reduction over all PEs), so no PE can be a call
 * ahead.  A PE never waits for anybody outside its group within a step:
 * no global barrier inside a plan.  A wait polls the abort word too
 * (agree.c), so a failed peer ends it.  Cost: 2 (s-1) atomics per step;
 * memory: RD_SHM_SLOTS * RD_SHM_NSIG longs, symmetric, per context.
 */
#include <sched.h>

#include "shmem_impl.h"
#include "../../core/internal.h"

/* Max-reduce RD_SHM_NRED longs of red_src over all PEs into red_dst. */
void rd_shm_reduce_max(redist_shmem_t *c)
{
    shm_sym *y = c->sym;
    shmem_long_max_to_all(y->red_dst, y->red_src, RD_SHM_NRED, 0, 0,
                          c->npes, y->pwrk, y->psync[c->turn]);
    c->turn ^= 1;
}

static redist_status_t aborted_error(redist_shmem_t *c, redist_error_t *err)
{
    redist_shmem_t *r = c->root ? c->root : c;
    long who = shmem_long_atomic_fetch(&c->sym->abort_word, r->me) - 1;
    char text[REDIST_ERROR_TEXT_LENGTH];
    c->dead = 1;
    if (who >= 0 && who < r->npes) {
        shmem_getmem(text, c->sym->abort_text, sizeof text, (int)who);
        text[sizeof text - 1] = '\0';
    } else {
        rd_strlcpy(text, "unknown error", sizeof text);
    }
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                    "aborted: PE %ld failed: %s", who, text);
}

redist_status_t rd_shm_aborted_error(redist_shmem_t *c, redist_error_t *err)
{
    return aborted_error(c, err);
}

int rd_shm_aborted(redist_shmem_t *c)
{
    return shmem_long_test(&c->sym->abort_word, SHMEM_CMP_NE, 0);
}

/* Add 1 to counter j of the slot on PE pe. */
void rd_shm_signal_pe(redist_shmem_t *c, int slot, int j, int pe)
{
    shmem_long_atomic_inc(&c->sig[slot * RD_SHM_NSIG + j], rd_shm_pe(c, pe));
}

void rd_shm_signal_group(redist_shmem_t *c, int slot, int j, const rd_group *g)
{
    for (int64_t t = 1; t < g->size; t++)
        rd_shm_signal_pe(c, slot, j, pe_of(g, (g->index + t) % g->size));
}

/* Wait until counter j of the slot has received n more signals. */
redist_status_t rd_shm_wait(redist_shmem_t *c, int slot, int j, long n,
                            redist_error_t *err)
{
    int i = slot * RD_SHM_NSIG + j;
    if (n <= 0)
        return REDIST_OK;
    c->expect[i] += n;
    long *a = &c->sig[i];
    for (unsigned spins = 1;
         !shmem_long_test(a, SHMEM_CMP_GE, c->expect[i]); spins++) {
        if (rd_shm_aborted(c))
            return aborted_error(c, err);
        if (spins % 16 == 0)
            sched_yield(); /* oversubscribed PEs */
    }
    return REDIST_OK;
}

redist_status_t rd_shm_next_slot(redist_shmem_t *c, int *slot,
                                 redist_error_t *err)
{
    if (c->dead)
        return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                        "shmem: the context failed earlier");
    if (c->seq >= RD_SHM_SLOTS)
        /* the same exchange on every PE: all fail here, nobody waits */
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "shmem: more than %d exchanges in one plan",
                        RD_SHM_SLOTS);
    *slot = c->seq++;
    return REDIST_OK;
}
