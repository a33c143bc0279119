/*
 * The one-sided writes of a step: every piece a PE owes a peer goes
 * straight to its final offset in the peer's output block.  When the
 * peer's symmetric memory is mapped in this process (shmem_ptr: PEs on
 * one node, and not REDIST_SHMEM_NO_PTR) the data is stored with the
 * local box kernel: one copy, no library call per contiguous run;
 * otherwise shmem_putmem_nbi per contiguous run (shmem_iput when the runs
 * are single elements with regular strides).  Either way completion is
 * shmem_quiet (plus a fence for the stores) before the DONE signal.
 * Cost: one put per contiguous run (or per row of single-element runs);
 * no pack, no unpack, no receive-side copy, no memory.
 */
#include <string.h>

#include "shmem_impl.h"
#include "../../exec/kernels.h"

/* Put `count` runs of `run` bytes, `sstride` apart in src, to `dstride`
 * apart at the symmetric address dst on PE pe. */
static void put_runs(char *dst, int64_t dstride, const char *src,
                     int64_t sstride, uint64_t run, uint64_t count, int pe)
{
    uintptr_t al = (uintptr_t)dst | (uintptr_t)src;
    if (count > 1 && (run == 1 || run == 2 || run == 4 || run == 8 ||
                      run == 16) &&
        dstride % (int64_t)run == 0 && sstride % (int64_t)run == 0 &&
        al % run == 0) {
        ptrdiff_t ts = (ptrdiff_t)(dstride / (int64_t)run);
        ptrdiff_t ss = (ptrdiff_t)(sstride / (int64_t)run);
        switch (run) {
        case 1: shmem_iput8(dst, src, ts, ss, (size_t)count, pe); return;
        case 2: shmem_iput16(dst, src, ts, ss, (size_t)count, pe); return;
        case 4: shmem_iput32(dst, src, ts, ss, (size_t)count, pe); return;
        case 8: shmem_iput64(dst, src, ts, ss, (size_t)count, pe); return;
        default: shmem_iput128(dst, src, ts, ss, (size_t)count, pe); return;
        }
    }
    for (uint64_t k = 0; k < count; k++)
        shmem_putmem_nbi(dst + (int64_t)k * dstride,
                         src + (int64_t)k * sstride, (size_t)run, pe);
}

/* rd_kernel_box to another PE: the box at soff of src (shape sshape) to
 * doff of the symmetric block dst (shape dshape) on PE pe, one put per
 * contiguous run. */
static void put_box(int pe, char *dst, const int64_t dshape[],
                    const int64_t doff[], const char *src,
                    const int64_t sshape[], const int64_t soff[],
                    const int64_t box[], int nd, size_t elem)
{
    int64_t sst[REDIST_MAX_DIMS], dst_[REDIST_MAX_DIMS];
    int64_t so = 0, dso = 0;
    if (nd == 0) { /* a 0-dim block: one element */
        shmem_putmem_nbi(dst, src, elem, pe);
        return;
    }
    for (int i = 0; i < nd; i++)
        if (box[i] <= 0)
            return;
    sst[nd - 1] = dst_[nd - 1] = (int64_t)elem;
    for (int i = nd - 2; i >= 0; i--) {
        sst[i] = sst[i + 1] * sshape[i + 1];
        dst_[i] = dst_[i + 1] * dshape[i + 1];
    }
    for (int i = 0; i < nd; i++) {
        so += soff[i] * sst[i];
        dso += doff[i] * dst_[i];
    }
    /* the innermost run: dims d.. (all after d whole in both blocks) */
    int d = nd - 1;
    uint64_t run = (uint64_t)box[d];
    while (d > 0 && box[d] == sshape[d] && box[d] == dshape[d]) {
        d--;
        run *= (uint64_t)box[d];
    }
    run *= elem;
    if (d == 0) {
        shmem_putmem_nbi(dst + dso, src + so, (size_t)run, pe);
        return;
    }
    int e = d - 1; /* strided dim of put_runs; dims < e: odometer */
    int64_t idx[REDIST_MAX_DIMS] = {0};
    for (;;) {
        int64_t s0 = so, d0 = dso;
        for (int i = 0; i < e; i++) {
            s0 += idx[i] * sst[i];
            d0 += idx[i] * dst_[i];
        }
        put_runs(dst + d0, dst_[e], src + s0, sst[e], run,
                 (uint64_t)box[e], pe);
        int i = e - 1;
        while (i >= 0 && ++idx[i] == box[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
}

/* The one-sided writes of a step.  When the peer's symmetric memory is
 * mapped in this process (shmem_ptr: PEs on one node, and not
 * REDIST_SHMEM_NO_PTR) the data is stored straight into the final place
 * with the local kernels: one copy, no library call per contiguous run;
 * otherwise shmem_putmem_nbi / shmem_iput.  Either way completion is
 * shmem_quiet (plus a fence for the stores) before the DONE signal. */
void rd_shm_write_box(const redist_shmem_t *c, int pe, char *dst,
                      const int64_t dshape[], const int64_t doff[],
                      const char *src, const int64_t sshape[],
                      const int64_t soff[], const int64_t box[], int nd,
                      size_t elem)
{
    for (int i = 0; i < nd; i++)
        if (box[i] == 0)
            return; /* empty (an uneven block may be NULL: no shmem_ptr) */
    pe = rd_shm_pe(c, pe);
    char *direct = c->ptr_ok ? shmem_ptr(dst, pe) : NULL;
    if (direct)
        rd_kernel_box(direct, dshape, doff, src, sshape, soff, box, nd,
                      elem);
    else
        put_box(pe, dst, dshape, doff, src, sshape, soff, box, nd, elem);
}

void rd_shm_write_bytes(const redist_shmem_t *c, int pe, char *dst,
                        const char *src, uint64_t n)
{
    if (n == 0)
        return; /* before shmem_ptr: an empty block may be NULL */
    pe = rd_shm_pe(c, pe);
    char *direct = c->ptr_ok ? shmem_ptr(dst, pe) : NULL;
    if (direct)
        memcpy(direct, src, (size_t)n);
    else
        shmem_putmem_nbi(dst, src, (size_t)n, pe);
}

/* Every write of this PE is complete and visible (before a signal). */
void rd_shm_complete(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shmem_quiet();
}
