/*
 * Plan a redistribution from C values (no JSON): Megatron column-parallel
 * to row-parallel on a data=2 x model=4 mesh.  Prints the steps and the
 * plan JSON; exits non-zero on any error.
 */
#include <stdio.h>
#include <stdlib.h>

#include <redist.h>

int main(void)
{
    const char *names[] = {"data", "model"};
    int64_t sizes[] = {2, 4}, shape[] = {4096, 16384};
    redist_mesh_t *mesh = NULL;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    char msg[512];
    int rc = 1;

    redist_error_clear(&err);
    if (redist_mesh_create(2, names, sizes, &mesh, &err))
        goto out;

    redist_type_t from, to; /* plain values */
    redist_type_init(&from, 2);
    redist_type_push_axis(&from, 0, 0); /* dim 0 over data */
    redist_type_push_axis(&from, 1, 1); /* dim 1 over model */
    redist_type_init(&to, 2);
    redist_type_push_axis(&to, 0, 0); /* dim 0 over data, then model */
    redist_type_push_axis(&to, 0, 1);

    if (redist_spec_create(mesh, 2, shape, REDIST_BF16, &from, &to,
                           REDIST_REDUCE_SUM, "mlp", &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err))
        goto out;

    for (int i = 0; i < redist_plan_num_steps(plan); i++) {
        redist_step_view_t v;
        char t[256];
        redist_plan_step(plan, i, &v);
        printf("step %d: %s axis %s -> %s, %llu bytes received\n", i + 1,
               redist_op_name(v.op), redist_mesh_axis_name(mesh, v.axis),
               redist_type_format(&v.after, mesh, t, sizeof t),
               (unsigned long long)v.recv_bytes);
    }
    redist_plan_stats_t st;
    redist_plan_stats(plan, &st);
    printf("peak %llu bytes, memory-efficient %s\n",
           (unsigned long long)redist_plan_peak_bytes(plan),
           st.memory_efficient ? "yes" : "no");
    char *json = redist_plan_to_json(plan); /* caller frees */
    if (!json)
        goto out;
    puts(json);
    free(json);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "plan_c_api: %s\n",
                redist_error_format(&err, msg, sizeof msg));
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(mesh);
    return rc;
}
