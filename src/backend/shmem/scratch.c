/*
 * Symmetric memory.  The executor's scratch is shmem_malloc'ed through
 * the ops' alloc / free (counted by the executor's allocator), and every
 * symmetric allocation fails on every PE together (rd_shm_alloc_all), so
 * the heaps stay alike.  The backend keeps nothing of its own beyond the
 * fixed symmetric work area (push only, context.c) and O(slots + PEs)
 * bytes of counters.
 */
#include <string.h>

#include "shmem_impl.h"

int rd_shm_is_scratch(const redist_shmem_t *c, const void *p)
{
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            return 1;
    return 0;
}

/* Bytes of the executor's scratch buffer starting at p (0: not one). */
uint64_t rd_shm_scratch_cap(const redist_shmem_t *c, const void *p)
{
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            return c->scr[i].bytes;
    return 0;
}

/*
 * shmem_malloc on every PE that fails on every PE together: NULL on every
 * PE if it failed on any (*mine: on this one), so the symmetric heaps stay
 * alike and the PEs in step.  shmem_malloc is collective but may fail on
 * one PE only (a smaller heap there).  Open MPI 4.1 returns NULL then
 * without the barrier a successful shmem_malloc ends with, and
 * shmem_free(NULL) has none either: the failing PE stands in for both.
 */
void *rd_shm_alloc_all(redist_shmem_t *c, size_t bytes, int *mine)
{
    void *p = shmem_malloc(bytes);
    *mine = p == NULL;
    if (!p)
        shmem_barrier_all();
    shm_sym *y = c->sym;
    memset(y->red_src, 0, sizeof y->red_src);
    y->red_src[0] = p ? 0 : (long)(c->npes - c->me);
    rd_shm_reduce_max(c);
    if (!y->red_dst[0])
        return p;
    c->alloc_failed = (int)(c->npes - y->red_dst[0]);
    if (p)
        shmem_free(p);
    else
        shmem_barrier_all();
    return NULL;
}

void *redist_shmem_malloc_all(redist_shmem_t *c, size_t bytes, int *mine)
{
    int failed = 0;
    if (mine)
        *mine = 0;
    if (!c || !bytes)
        return NULL;
    void *p = rd_shm_alloc_all(c, bytes, &failed);
    if (mine)
        *mine = failed;
    c->alloc_failed = -1;
    return p;
}

void *rd_shm_alloc(redist_backend_t *be, size_t bytes)
{
    redist_shmem_t *c = ctx_of(be);
    int mine;
    void *p = rd_shm_alloc_all(c, bytes, &mine);
    c->alloc_mine |= mine;
    if (p)
        for (int i = 0; i < 4; i++)
            if (!c->scr[i].p) {
                c->scr[i].p = p;
                c->scr[i].bytes = bytes;
                break;
            }
    return p;
}

void rd_shm_free(redist_backend_t *be, void *p, size_t bytes)
{
    redist_shmem_t *c = ctx_of(be);
    (void)bytes;
    for (int i = 0; i < 4; i++)
        if (c->scr[i].p == p)
            c->scr[i].p = NULL;
    shmem_free(p);
}
