/*
 * The OpenSHMEM backend's context (redist/shmem.h: redist_shmem_create,
 * the options and accessors) and its test hooks.  Creation allocates
 * the fixed symmetric block (counters, the agreement's reduction arrays:
 * about 34 KB) on every PE, agrees on the mesh and the options
 * (agree.c), then allocates the work area of pushed reductions
 * (options.work_bytes, symmetric, failing on every PE together).
 * Two endpoints: [0] any buffers (exchanges land in symmetric scratch,
 * run in place there: RD_BUILD_INPLACE), [1] symmetric buffers; both
 * run uneven reduce_scatters whole (RD_BUILD_UNEVEN_RS, reduce_boxed.c).
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_impl.h"
#include "../../core/internal.h"

static const unsigned known_flags = REDIST_SHMEM_PACKED | REDIST_SHMEM_NO_PTR;

redist_status_t redist_shmem_create(const redist_mesh_t *mesh,
                                    const redist_shmem_options_t *opts,
                                    redist_shmem_t **out, redist_error_t *err)
{
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    int npes = shmem_n_pes(), me = shmem_my_pe();
    unsigned flags = opts ? opts->flags : 0;
    uint64_t work = opts && opts->work_bytes ? opts->work_bytes
                                             : REDIST_SHMEM_WORK_BYTES;
    redist_status_t st = REDIST_OK;
    uint64_t hash = RD_FNV_BASIS;

    /* the fixed symmetric block first: the same call on every PE */
    shm_sym *sym = shmem_malloc(sizeof *sym);
    if (!sym)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                        "shmem: cannot allocate %zu bytes of symmetric "
                        "memory",
                        sizeof *sym);
    memset(sym, 0, sizeof *sym);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            sym->psync[t][i] = SHMEM_SYNC_VALUE;
    redist_shmem_t *c = calloc(1, sizeof *c);
    redist_shmem_t tmp;
    if (!c) {
        memset(&tmp, 0, sizeof tmp);
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    redist_shmem_t *x = c ? c : &tmp;
    x->npes = npes;
    x->me = me;
    x->sym = sym;
    x->sig = sym->sig;
    x->alloc_failed = -1;
    shmem_barrier_all(); /* everybody's pSync is initialised */

    if (st)
        ;
    else if (!mesh)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh", "NULL mesh");
    else if (redist_mesh_num_devices(mesh) != npes)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh",
                      "the mesh has %lld devices but the job has %d PEs",
                      (long long)redist_mesh_num_devices(mesh), npes);
    else if (flags & ~known_flags)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "unknown shmem flags 0x%x", flags & ~known_flags);
    else if (work < 16 * (uint64_t)npes || work > (1ULL << 40))
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "work_bytes",
                      "the work area must hold 16 bytes per PE (%llu) and at "
                      "most 1 TiB, not %llu",
                      (unsigned long long)(16 * (uint64_t)npes),
                      (unsigned long long)work);
    if (!st) {
        int naxes = redist_mesh_num_axes(mesh);
        hash = rd_fnv_u64(hash, (uint64_t)naxes);
        for (int a = 0; a < naxes; a++)
            hash = rd_fnv_u64(hash, (uint64_t)redist_mesh_axis_size(mesh, a));
        hash = rd_fnv_u64(rd_fnv_u64(hash, flags), work);
    }
    int ptr_ok = !(flags & REDIST_SHMEM_NO_PTR);
    for (int pe = 0; pe < npes && ptr_ok; pe++)
        ptr_ok = shmem_ptr(sym, pe) != NULL;
    long no_ptr = 0;
    st = rd_shm_agree_all(x, st, hash, ptr_ok ? 0 : 1, "meshes or options",
                          &no_ptr, err);
    if (!st) { /* every PE gets it, or none */
        int mine;
        x->work = rd_shm_alloc_all(x, (size_t)work, &mine);
        if (!x->work)
            st = rd_shm_agree_all(
                x,
                mine ? rd_error(err, REDIST_ERR_NOMEM, NULL, NULL,
                                "shmem: cannot allocate the work area "
                                "(%llu bytes) in the symmetric heap of PE "
                                "%d (too small: SHMEM_SYMMETRIC_SIZE)",
                                (unsigned long long)work, me)
                     : REDIST_OK,
                0, 0, "work areas", NULL, err);
    }
    if (st) {
        shmem_free(sym);
        free(c);
        return st;
    }
    c->flags = flags;
    c->work_bytes = work;
    c->fail_at = -1;
    c->bound_free = UINT64_MAX;
    c->prefer = -1;
    c->ptr_ok = no_ptr == 0;
    for (int k = 0; k < 2; k++) {
        c->ep[k].ops = &rd_shm_ops[flags & REDIST_SHMEM_PACKED ? 1 : 0][k];
        c->ep[k].ctx = c;
        c->ep[k].rank = me;
        c->ep[k].size = npes;
    }
    /* caller's buffers outside the symmetric heap: every exchange lands
     * in the executor's (symmetric) scratch; running exchanges in place
     * there keeps one scratch buffer instead of two */
    c->ep[0].build = RD_BUILD_INPLACE;
    /* uneven reduce_scatters whole (reduce_boxed.c: no buffer sized by
     * the largest device), on every program of the context; a set's
     * programs take it from the ops (set_build) */
    for (int k = 0; k < 2; k++)
        c->ep[k].build |= RD_BUILD_UNEVEN_RS;
    shmem_barrier_all();
    *out = c;
    return REDIST_OK;
}

void redist_shmem_free(redist_shmem_t *c)
{
    if (!c)
        return;
    shmem_barrier_all(); /* signals in flight have landed */
    shmem_free(c->work);
    shmem_free(c->sym);
    free(c);
}

redist_shmem_options_t redist_shmem_get_options(const redist_shmem_t *c)
{
    redist_shmem_options_t o = {0, 0};
    if (c) {
        o.flags = c->flags;
        o.work_bytes = c->work_bytes;
    }
    return o;
}

int redist_shmem_uses_ptr(const redist_shmem_t *c)
{
    return c ? c->ptr_ok : 0;
}

redist_backend_t *redist_shmem_backend(redist_shmem_t *c, int symmetric)
{
    if (!c)
        return NULL;
    return &c->ep[symmetric != 0];
}

void rd_shmem_prefer(redist_shmem_t *c, int mode)
{
    if (c)
        c->prefer = mode >= 0 && mode < RED_NMODES ? mode : -1;
}

redist_shmem_stats_t redist_shmem_stats(const redist_shmem_t *c)
{
    redist_shmem_stats_t s;
    for (int k = 0; k < RED_NMODES; k++)
        s.reductions[k] = c ? c->modes[k] : 0;
    return s;
}

void rd_shmem_mode_counts(const redist_shmem_t *c, uint64_t out[RED_NMODES])
{
    redist_shmem_stats_t s = redist_shmem_stats(c);
    memcpy(out, s.reductions, sizeof s.reductions);
}

void rd_shmem_inject_failure(redist_shmem_t *c, int64_t op_index)
{
    if (c)
        c->fail_at = op_index < 0 ? -1 : c->nops + op_index;
}

int rd_shmem_dead(const redist_shmem_t *c)
{
    return c ? c->dead : 0;
}
