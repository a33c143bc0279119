/*
 * The permute pairing of doc/spec-format.md: for each block, the devices holding
 * it before a permute (same coordinates on the partial axes) are paired
 * with those needing it after: a device that keeps its block pairs with
 * itself, the others in rank order.  Each device sends one block and
 * receives one.  Cost: O(devices * axes) per device, no memory.
 */
#include "exec_internal.h"

static uint64_t block_key(const redist_mesh_t *mesh, const redist_type_t *t,
                          const int64_t *coords)
{
    uint64_t key = 0;
    for (int i = 0; i < t->ndims; i++) {
        uint64_t nb = 1, idx = 0;
        for (int k = 0; k < t->dim_naxes[i]; k++) {
            int a = t->dims[i][k];
            uint64_t s = (uint64_t)redist_mesh_axis_size(mesh, a);
            idx = idx * s + (uint64_t)coords[a];
            nb *= s;
        }
        key = key * nb + idx;
    }
    for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
        if (t->partial >> a & 1u)
            key = key * (uint64_t)redist_mesh_axis_size(mesh, a) +
                  (uint64_t)coords[a];
    return key;
}

typedef struct {
    uint64_t before, after;
} key_pair;

static key_pair keys_of(const redist_mesh_t *mesh, const redist_type_t *b,
                        const redist_type_t *a, int64_t rank)
{
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, rank, c);
    key_pair k = {block_key(mesh, b, c), block_key(mesh, a, c)};
    return k;
}

redist_status_t rd_permute_peers(const redist_mesh_t *mesh,
                                 const redist_type_t *before,
                                 const redist_type_t *after, int64_t rank,
                                 int64_t *send_to, int64_t *recv_from)
{
    int64_t D = redist_mesh_num_devices(mesh);
    key_pair me = keys_of(mesh, before, after, rank);
    if (me.before == me.after) {
        *send_to = *recv_from = rank;
        return REDIST_OK;
    }
    /* my position among the non-keeping holders of my old block, and
     * among the non-keeping receivers of my new block (rank order) */
    int64_t qs = 0, qr = 0;
    for (int64_t e = 0; e < rank; e++) {
        key_pair k = keys_of(mesh, before, after, e);
        if (k.before == k.after)
            continue;
        qs += k.before == me.before;
        qr += k.after == me.after;
    }
    int64_t to = -1, from = -1;
    for (int64_t e = 0; e < D && (to < 0 || from < 0); e++) {
        key_pair k = keys_of(mesh, before, after, e);
        if (k.before == k.after)
            continue;
        if (k.after == me.before && to < 0 && qs-- == 0)
            to = e;
        if (k.before == me.after && from < 0 && qr-- == 0)
            from = e;
    }
    if (to < 0 || from < 0)
        return REDIST_ERR_PLAN;
    *send_to = to;
    *recv_from = from;
    return REDIST_OK;
}
