/*
 * transport: a second roofline, MPI's.  One MPI_Alltoallv of the direct
 * exchange's counts (c->x) straight from the source buffer to the
 * destination buffer, as contiguous runs: the bytes every rank must
 * receive, moved by MPI with no layout work (no datatypes, no pack, no
 * local copy).  What any MPI implementation of the case pays at least
 * for the transport; not a redistribution, so never checked.  Only
 * where the pieces fit the blocks contiguously on every rank (a rank
 * sending one block to several peers does not).
 */
#include "bench.h"

/* Collective (every rank decides the same): the driver asks every rank
 * in the same order. */
static int applies(const bcase_t *c, char *why, size_t n)
{
    if (all_ok(c->x.send_elems * c->elem <= c->src_bytes &&
               c->x.recv_elems * c->elem <= c->dst_bytes))
        return 0;
    snprintf(why, n, "sends or receives more than a block");
    return 1;
}

static uint64_t run(bcase_t *c, impl_t *im)
{
    (void)im;
    const xchg_t *x = &c->x;
    MPI_Alltoallv(c->src, x->scount, x->sdispl, c->et, c->dst, x->rcount,
                  x->rdispl, c->et, MPI_COMM_WORLD);
    return 0;
}

const bench_impl_t bench_transport = {
    .name = "transport", .needs = BENCH_MPI, .flags = BENCH_NO_CHECK,
    .applies = applies, .run = run};
