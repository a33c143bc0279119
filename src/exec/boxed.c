/*
 * The geometry of a whole uneven reduce_scatter (boxed.h): the cut of
 * a box into chunks contiguous in it.  The outermost dim d whose inner
 * product u_d (the elements of one index along d) is at most c, and
 * runs of up to c / u_d indices along d under each index of the dims
 * before it.  Cost: O(ndims) per chunk.
 */
#include "boxed.h"

uint64_t rd_box_elems(int nd, const int64_t B[])
{
    uint64_t e = 1;
    for (int i = 0; i < nd; i++)
        e *= (uint64_t)B[i];
    return e;
}

rd_box_cut rd_box_cut_of(int nd, const int64_t B[], uint64_t c)
{
    rd_box_cut k = {0, 1, 1, 1, 1};
    for (int i = 0; i < nd; i++)
        if (B[i] == 0) {
            k.n = 0;
            return k;
        }
    if (nd == 0)
        return k;
    int d = nd - 1;
    uint64_t u = 1;
    /* the outermost d with prod(B[d+1..]) <= c */
    while (d > 0 && u * (uint64_t)B[d] <= c) {
        u *= (uint64_t)B[d];
        d--;
    }
    k.d = d;
    k.unit = u;
    uint64_t len = c / u;
    k.len = len < (uint64_t)B[d] ? (int64_t)len : B[d];
    k.per = (B[d] + k.len - 1) / k.len;
    k.n = rd_box_elems(d, B) * (uint64_t)k.per;
    return k;
}

uint64_t rd_box_chunk(int nd, const int64_t B[], const rd_box_cut *k,
                      uint64_t r, int64_t off[], int64_t sh[])
{
    if (nd == 0)
        return 1;
    uint64_t pre = r / (uint64_t)k->per;
    int64_t start = (int64_t)(r % (uint64_t)k->per) * k->len;
    for (int i = k->d - 1; i >= 0; i--) {
        off[i] = (int64_t)(pre % (uint64_t)B[i]);
        pre /= (uint64_t)B[i];
        sh[i] = 1;
    }
    off[k->d] = start;
    sh[k->d] = B[k->d] - start < k->len ? B[k->d] - start : k->len;
    for (int i = k->d + 1; i < nd; i++) {
        off[i] = 0;
        sh[i] = B[i];
    }
    return (uint64_t)sh[k->d] * k->unit;
}

const int64_t *rd_box_mbox_off(const rd_xstep *xs, int64_t m)
{
    return xs->mbox + 2 * m * xs->ndims;
}

const int64_t *rd_box_mbox_shape(const rd_xstep *xs, int64_t m)
{
    return xs->mbox + (2 * m + 1) * xs->ndims;
}

uint64_t rd_box_most(const rd_xstep *xs)
{
    uint64_t big = 0;
    for (int64_t m = 0; m < xs->group.size; m++) {
        uint64_t e = rd_box_elems(xs->ndims, rd_box_mbox_shape(xs, m));
        big = e > big ? e : big;
    }
    return big;
}

uint64_t rd_box_rounds(const rd_xstep *xs, uint64_t c)
{
    uint64_t R = 0;
    for (int64_t m = 0; m < xs->group.size; m++) {
        rd_box_cut k = rd_box_cut_of(xs->ndims, rd_box_mbox_shape(xs, m), c);
        R = k.n > R ? k.n : R;
    }
    return R;
}
