/*
 * A spec of specs/ scaled to a per-rank size (--sizes).
 *
 * The size of a case is the larger of a rank's source and target block.
 * Dims stay multiples of every split count on the bytes objective's path
 * (rd_plan_path_multiples), so the same plan remains possible: shrinking
 * (rd_shrink_step) until the size is at most the target, then growing,
 * doubling the smallest dim while the size stays within it.
 */
#include "bench.h"
#include "../../src/plan/plan_internal.h"

static uint64_t local_bytes(const redist_spec_t *spec, const int64_t *shape,
                            const redist_type_t *t)
{
    uint64_t n = redist_dtype_size(redist_spec_dtype(spec));
    for (int i = 0; i < redist_spec_ndims(spec); i++)
        n *= (uint64_t)(shape[i] / split_count(redist_spec_mesh(spec), t, i));
    return n;
}

static uint64_t block_bytes(const redist_spec_t *spec, const int64_t *shape)
{
    return umax(local_bytes(spec, shape, redist_spec_from(spec)),
                local_bytes(spec, shape, redist_spec_to(spec)));
}

redist_status_t scale_spec(const redist_spec_t *spec, uint64_t target,
                           redist_spec_t **out, redist_error_t *err)
{
    redist_plan_t *plan;
    redist_plan_options_t pb = {0}; /* the bytes objective's steps */
    pb.objective = REDIST_OBJECTIVE_BYTES;
    redist_status_t st = redist_plan_create(spec, &pb, &plan, err);
    if (st)
        return st;
    const redist_mesh_t *m = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec);
    int64_t q[REDIST_MAX_DIMS], cur[REDIST_MAX_DIMS];
    rd_plan_path_multiples(plan, q);
    redist_plan_free(plan);
    for (int i = 0; i < nd; i++)
        cur[i] = redist_spec_shape(spec)[i];
    while (block_bytes(spec, cur) > target && rd_shrink_step(cur, q, nd) > 1)
        ;
    while (nd > 0) { /* (a 0-dim array has nothing to grow) */
        int best = 0;
        for (int i = 1; i < nd; i++)
            if (cur[i] < cur[best])
                best = i;
        if (block_bytes(spec, cur) * 2 > target)
            break;
        cur[best] *= 2;
    }
    const char *name = redist_spec_name(spec);
    return redist_spec_create(m, nd, cur, redist_spec_dtype(spec),
                              redist_spec_from(spec), redist_spec_to(spec),
                              redist_spec_reduce(spec),
                              name[0] ? name : NULL, out, err);
}
