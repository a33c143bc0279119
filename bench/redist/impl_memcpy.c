/*
 * memcpy: the roofline.  Every rank copies, with memcpy, the bytes it
 * must receive from others (the bytes that change owner, c->x.lack_bytes),
 * all ranks at once: one copy of the moved data at this machine's copy
 * bandwidth.  Not a redistribution, so never checked.
 */
#include <string.h>

#include "bench.h"

/* lack_bytes from src to dst, wrapping around both buffers */
static uint64_t run(bcase_t *c, impl_t *im)
{
    (void)im;
    uint64_t left = c->x.lack_bytes, so = 0, doff = 0;
    while (left) {
        uint64_t n = left;
        if (n > c->src_bytes - so)
            n = c->src_bytes - so;
        if (n > c->dst_bytes - doff)
            n = c->dst_bytes - doff;
        memcpy(c->dst + doff, c->src + so, n);
        left -= n;
        so = (so + n) % c->src_bytes;
        doff = (doff + n) % c->dst_bytes;
    }
    return 0;
}

const bench_impl_t bench_memcpy = {
    .name = "memcpy", .needs = BENCH_MPI, .flags = BENCH_NO_CHECK,
    .run = run};
