/*
 * The link level of each mesh axis under a placement (redist/topo.h:
 * redist_topo_axis_info, redist_topo_axis_links): the slowest link
 * within any of the axis's groups.  Links form an ultrametric
 * (placement.c), so the slowest link within a group is the slowest from
 * its first member: an axis costs O(devices) to analyse, every group
 * once, every member once.  No memory.
 */
#include <string.h>

#include "topo_internal.h"

static redist_status_t check_mesh(const redist_placement_t *p,
                                  const redist_mesh_t *m, redist_error_t *err)
{
    if (!p || !m)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "NULL argument");
    int64_t D = redist_mesh_num_devices(m);
    if (D > REDIST_TOPO_MAX_DEVICES)
        return rd_error(err, REDIST_ERR_LIMIT, NULL, NULL,
                        "the mesh has %lld devices; the topology analysis "
                        "visits at most %lld",
                        (long long)D, (long long)REDIST_TOPO_MAX_DEVICES);
    if (p->nranks < D)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "the placement has %lld rank%s, the mesh %lld "
                        "devices (%s)",
                        (long long)p->nranks, p->nranks == 1 ? "" : "s",
                        (long long)D, p->desc);
    return REDIST_OK;
}

redist_status_t redist_topo_axis_info(const redist_placement_t *p,
                                      const redist_mesh_t *m, int axis,
                                      redist_topo_axis_t *out,
                                      redist_error_t *err)
{
    redist_status_t st = check_mesh(p, m, err);
    if (st)
        return st;
    if (!out || axis < 0 || axis >= redist_mesh_num_axes(m))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "axis %d is not in the mesh", axis);
    int64_t D = redist_mesh_num_devices(m);
    int64_t s = redist_mesh_axis_size(m, axis), stride = 1;
    for (int b = axis + 1; b < redist_mesh_num_axes(m); b++)
        stride *= redist_mesh_axis_size(m, b);
    redist_topo_axis_t a;
    memset(&a, 0, sizeof a);
    a.link = REDIST_LINK_CACHE;
    a.size = s;
    a.stride = stride;
    a.example = 0;
    int64_t first_at[REDIST_LINK_COUNT];
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        first_at[l] = -1;
    for (int64_t base = 0; base < D; base++) {
        if ((base / stride) % s != 0)
            continue;
        int64_t h0, h;
        int u0, u;
        rd_placement_where(p, base, &h0, &u0);
        redist_link_t worst = REDIST_LINK_CACHE;
        for (int64_t k = 1; k < s && worst < REDIST_LINK_NETWORK; k++) {
            rd_placement_where(p, base + k * stride, &h, &u);
            redist_link_t l = rd_placement_link_of(p, h0, u0, h, u);
            if (l > worst)
                worst = l;
        }
        a.groups++;
        a.groups_at[worst]++;
        if (first_at[worst] < 0)
            first_at[worst] = base;
        if (worst > a.link)
            a.link = worst;
    }
    a.example = first_at[a.link] >= 0 ? first_at[a.link] : 0;
    *out = a;
    return REDIST_OK;
}

redist_status_t redist_topo_axis_links(const redist_placement_t *p,
                                       const redist_mesh_t *m,
                                       redist_cost_model_t *model,
                                       redist_error_t *err)
{
    redist_link_t links[REDIST_MAX_AXES];
    if (!model)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL model");
    redist_status_t st = check_mesh(p, m, err);
    for (int a = 0; !st && a < redist_mesh_num_axes(m); a++) {
        redist_topo_axis_t info;
        st = redist_topo_axis_info(p, m, a, &info, err);
        links[a] = info.link;
    }
    if (st)
        return st;
    for (int a = 0; a < redist_mesh_num_axes(m); a++)
        model->axis_link[a] = (uint8_t)links[a];
    return REDIST_OK;
}
