/*
 * The protocol of a reduction over more than one member: by load where
 * the inputs are reachable (reduce_pull.c), else pushed into free
 * symmetric memory, else into the context's work area within what
 * max(src, dst) leaves (reduce_push.c); past that, protocols with no
 * symmetric work space at all (slower: blocking reads, reduce_pull.c;
 * or one sender at a time, reduce_serial.c).  A private input that fits
 * in its symmetric output is copied there first.  redist_shmem_execute
 * makes the same choice from the executor's program before the call
 * (work_promise, execute.c), so the promise covers what runs.
 */
#include "shmem_impl.h"

/* ar_out_free of the facts' all_reduce */
static uint64_t ar_free(const red_facts *f)
{
    red_part rp = {1, 0, 0, f->in_bytes / f->elem, f->s};
    return rd_shm_ar_out_free(&rp);
}


/* The protocols this reduction can use (a mask of 1 << RED_*). */
static unsigned red_legal(const redist_shmem_t *c, const red_facts *f)
{
    uint64_t least = (uint64_t)(f->s - 1) * f->elem; /* one slot each */
    unsigned legal = 0;
    /* a private input that fits in its (symmetric) output is copied
     * there and runs in place */
    int copy = !f->in_place && f->out_sym && f->out_cap >= f->in_bytes;
    if (f->in_sym && c->ptr_ok)
        legal |= 1u << RED_PULL;
    if (f->in_sym)
        legal |= 1u << RED_GET;
    if (copy && c->ptr_ok)
        legal |= 1u << RED_COPY_PULL;
    if (copy)
        legal |= 1u << RED_COPY_GET;
    /* a push reads its input apart from the output: an in-place one
     * first stages it in the spare region */
    if (!f->in_place || f->spare_bytes >= f->in_bytes) {
        int ar = f->all_reduce && ar_free(f) >= (uint64_t)(f->s - 1);
        if (f->in_place ? ar || (!f->all_reduce &&
                                 f->in_bytes - f->in_bytes / (uint64_t)f->s >=
                                     least) /* the staged input's place */
                        : ar || f->sspare_bytes >= least)
            legal |= 1u << RED_PUSH;
        legal |= 1u << RED_PUSH_WORK;
    }
    if (!f->in_place && f->out_sym)
        legal |= 1u << RED_SERIAL;
    return legal;
}

/* The protocol of a reduction over more than one member: by load where
 * the inputs are reachable, else pushed into free symmetric memory, else
 * into the context's work area within what max(src, dst) leaves; past
 * that, protocols with no symmetric work space at all (slower: blocking
 * reads, or one sender at a time). */
int rd_shm_red_mode(const redist_shmem_t *c, const red_facts *f)
{
    static const int order[] = {RED_PULL, RED_COPY_PULL, RED_PUSH,
                                RED_PUSH_WORK, RED_GET, RED_COPY_GET,
                                RED_SERIAL};
    if (f->s <= 1)
        return RED_PULL;
    unsigned legal = red_legal(c, f);
    if (c->prefer >= 0 && (legal >> c->prefer & 1u))
        return c->prefer;
    if (f->bound_free < (uint64_t)(f->s - 1) * f->elem)
        legal &= ~(1u << RED_PUSH_WORK); /* over the bound */
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (legal >> order[k] & 1u)
            return order[k];
    return RED_PUSH_WORK; /* not reached: a private input is copied in or
                             the output is symmetric */
}
