/*
 * Plan JSON reader, two meshes (doc/spec-format.md section 4; doc/meshes.md):
 * a plan between two meshes is its steps on the source mesh, one transfer,
 * and its steps on the target mesh.  The document is checked for that
 * shape (each step's mesh, exactly one transfer), the types on either side
 * of the transfer are read, each phase is replayed as a one-mesh plan
 * (json_read.c), and the transfer's and the whole plan's figures are
 * computed per device (meshes.c) and compared with what the document
 * states.  Cost: the two replays plus O(devices) for the figures;
 * memory: the phases' specs and documents, three counts per device.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* One verification: its input, then what the parts below find. */
typedef struct {
    const redist_spec_t *s;
    const rd_meshes *mm;
    json_t *root, *steps;
    const char *source;
    const redist_cost_model_t *cost;
    redist_verify_result_t *res;
    redist_error_t *err;
    size_t n, t;    /* steps; the transfer's index */
    json_t *tr;     /* the transfer step */
    redist_spec_t *on[2], *ph[2]; /* the meshes' specs; the phases' */
    redist_type_t S, R; /* the types before and after the transfer */
    rd_mside ms, mr;
    json_t *doc[2]; /* the phases as plan documents */
    rd_uplan up[2];
    redist_verify_result_t pr[2];
    uint64_t tmax; /* the transfer's largest recv on a device */
    char p[96];    /* the path of the field being read */
} mverify;

/* The steps [lo, hi) of `steps` as a plan document of their own. */
static json_t *sub_doc(json_t *steps, size_t lo, size_t hi)
{
    json_t *doc = json_object(), *a = json_array();
    for (size_t i = lo; i < hi; i++)
        json_array_append(a, json_array_get(steps, i));
    json_object_set_new(doc, "steps", a);
    return doc;
}

/* A phase's error: its step index as the whole plan's (offset). */
static void shift_path(redist_error_t *err, int offset, const char *mesh)
{
    int i;
    char rest[REDIST_ERROR_PATH_LENGTH];
    if (!err || !err->status)
        return;
    if (sscanf(err->path, "steps[%d]%127s", &i, rest) >= 1) {
        const char *tail = strchr(err->path, ']') + 1;
        char p[REDIST_ERROR_PATH_LENGTH];
        snprintf(p, sizeof p, "steps[%d]%.100s", i + offset, tail);
        snprintf(err->path, sizeof err->path, "%s", p);
    }
    char t[REDIST_ERROR_TEXT_LENGTH];
    snprintf(t, sizeof t, "%.300s (on mesh \"%.63s\")", err->text, mesh);
    snprintf(err->text, sizeof err->text, "%s", t);
}

/* The transfer (v->t), exactly one, and the mesh each step names. */
static redist_status_t find_transfer(mverify *v)
{
    const rd_meshes *mm = v->mm;
    int transfers = 0;
    char *p = v->p;
    for (size_t i = 0; i < v->n; i++) {
        json_t *st = json_array_get(v->steps, i);
        json_t *op = json_object_get(st, "op");
        snprintf(p, sizeof v->p, "steps[%zu]", i);
        if (!json_is_object(st) || !json_is_string(op))
            return rd_error(v->err, REDIST_ERR_INVALID, v->source, p,
                            "expected a step object with a string \"op\"");
        if (!strcmp(json_string_value(op), "transfer")) {
            transfers++;
            v->t = i;
            static const char *const keys[2] = {"from_mesh", "to_mesh"};
            for (int side = 0; side < 2; side++) {
                json_t *m = json_object_get(st, keys[side]);
                snprintf(p, sizeof v->p, "steps[%zu].%s", i, keys[side]);
                if (m && (!json_is_string(m) ||
                          strcmp(json_string_value(m), mm->name[side])))
                    return rd_error(v->err, REDIST_ERR_PLAN, v->source, p,
                                    "the transfer goes from mesh \"%s\" to "
                                    "mesh \"%s\"",
                                    mm->name[0], mm->name[1]);
            }
            continue;
        }
        json_t *m = json_object_get(st, "mesh");
        const char *want = mm->name[transfers ? 1 : 0];
        snprintf(p, sizeof v->p, "steps[%zu].mesh", i);
        if (m && (!json_is_string(m) || strcmp(json_string_value(m), want)))
            return rd_error(v->err, REDIST_ERR_PLAN, v->source, p,
                            "this step runs on mesh \"%s\" (%s the "
                            "transfer)",
                            want, transfers ? "after" : "before");
    }
    if (transfers != 1)
        return rd_error(v->err, REDIST_ERR_PLAN, v->source, "steps",
                        "a plan between two meshes has exactly one "
                        "transfer step, not %d",
                        transfers);
    return REDIST_OK;
}

/* v->S, the type before the transfer (the source when it comes first),
 * and v->R, its after, each read on its own mesh. */
static redist_status_t transfer_types(mverify *v)
{
    const redist_spec_t *s = v->s;
    redist_status_t st;
    v->S = s->from;
    if ((st = rd_meshes_phase_spec(s, 0, &s->from, &s->from, &v->on[0],
                                   v->err)) ||
        (st = rd_meshes_phase_spec(s, 1, &s->to, &s->to, &v->on[1], v->err)))
        return st;
    v->tr = json_array_get(v->steps, v->t);
    snprintf(v->p, sizeof v->p, "steps[%zu].after", v->t);
    if (!json_object_get(v->tr, "after"))
        return rd_error(v->err, REDIST_ERR_INVALID, v->source, v->p,
                        "transfer needs \"after\" (its target type)");
    if ((st = rd_json_read_type(v->on[1], json_object_get(v->tr, "after"),
                                v->source, v->p, &v->R, v->err)))
        return st;
    if (v->t == 0)
        return REDIST_OK;
    snprintf(v->p, sizeof v->p, "steps[%zu].after", v->t - 1);
    json_t *a = json_object_get(json_array_get(v->steps, v->t - 1), "after");
    if (!a)
        return rd_error(v->err, REDIST_ERR_INVALID, v->source, v->p,
                        "the step before a transfer states its \"after\"");
    return rd_json_read_type(v->on[0], a, v->source, v->p, &v->S, v->err);
}

/* No pending reduction after the transfer (pending sums before it
 * cross: the transfer reduces them, transfer.c). */
static redist_status_t no_crossing_reduction(mverify *v)
{
    const redist_mesh_t *m = &v->mm->mesh[1];
    for (int a = 0; a < m->naxes; a++)
        if ((v->R.partial >> a & 1u) && m->size[a] > 1) {
            snprintf(v->p, sizeof v->p, "steps[%zu]", v->t);
            v->res->failed_step = (int)v->t;
            return rd_error(v->err, REDIST_ERR_PLAN, v->source, v->p,
                            "the type after the transfer has the pending "
                            "reduction over \"%s\"; a transfer sums "
                            "pending contributions, it does not leave them "
                            "pending",
                            m->name[a]);
        }
    return REDIST_OK;
}

/* The phases, replayed as one-mesh plans (v->pr, v->up). */
static redist_status_t replay_phases(mverify *v)
{
    const redist_spec_t *s = v->s;
    redist_status_t st;
    if ((st = rd_meshes_phase_spec(s, 0, &s->from, &v->S, &v->ph[0],
                                   v->err)) ||
        (st = rd_meshes_phase_spec(s, 1, &v->R, &s->to, &v->ph[1],
                                   v->err))) {
        if (st == REDIST_ERR_INVALID || st == REDIST_ERR_INFEASIBLE)
            st = REDIST_ERR_PLAN;
        return st;
    }
    redist_cost_model_t tmp;
    for (int side = 0; side < 2; side++) {
        size_t lo = side ? v->t + 1 : 0, hi = side ? v->n : v->t;
        v->doc[side] = sub_doc(v->steps, lo, hi);
        v->pr[side].failed_step = -1;
        st = rd_json_verify_root(v->ph[side], v->doc[side], v->source,
                                 rd_meshes_phase_cost(s, v->cost, side, &tmp),
                                 &v->pr[side], &v->up[side], v->err);
        if (st) {
            shift_path(v->err, (int)lo, v->mm->name[side]);
            v->res->failed_step = v->pr[side].failed_step >= 0
                                      ? v->pr[side].failed_step + (int)lo
                                      : -1;
            return st;
        }
    }
    return REDIST_OK;
}

/* The transfer's and the whole plan's figures, per device, into v->res
 * (v->tmax: the transfer's largest recv). */
static redist_status_t plan_figures(mverify *v)
{
    const redist_spec_t *s = v->s;
    redist_verify_result_t *res = v->res;
    int64_t N = v->mm->ndevices;
    double ttime = 0;
    redist_status_t st;
    uint64_t *arr = calloc((size_t)N * 3, sizeof *arr);
    if (!arr)
        return rd_error(v->err, REDIST_ERR_NOMEM, v->source, NULL,
                        "out of memory");
    uint64_t *trecv = arr, *peak = arr + N, *recv = arr + 2 * N;
    if ((st = rd_mside_init(&v->ms, s, 0, &v->S, v->err)) ||
        (st = rd_mside_init(&v->mr, s, 1, &v->R, v->err)) ||
        (st = rd_meshes_transfer_figures(s, &v->ms, &v->mr, v->cost, trecv,
                                         &ttime))) {
        if (st == REDIST_ERR_NOMEM)
            rd_error(v->err, st, v->source, NULL, "out of memory");
        free(arr);
        return st;
    }
    int64_t bad = -1;
    uint64_t got = 0, want = 0;
    if ((st = rd_meshes_transfer_check(s, &v->ms, &v->mr, &bad, &got,
                                       &want))) {
        free(arr);
        if (st == REDIST_ERR_NOMEM)
            return rd_error(v->err, st, v->source, NULL, "out of memory");
        snprintf(v->p, sizeof v->p, "steps[%zu]", v->t);
        v->res->failed_step = (int)v->t;
        return rd_error(v->err, REDIST_ERR_PLAN, v->source, v->p,
                        "the transfer gives device %lld %llu elements, "
                        "not %llu (one contribution per coordinate on the "
                        "pending axes for each element of its block)",
                        (long long)bad, (unsigned long long)got,
                        (unsigned long long)want);
    }
    for (int side = 0; side < 2; side++)
        rd_meshes_add_phase(s, side, v->up[side].dev_peak,
                            v->up[side].dev_recv, v->pr[side].peak_bytes,
                            v->pr[side].recv_bytes, peak, recv);
    v->tmax = 0;
    for (int64_t d = 0; d < N; d++)
        if (trecv[d] > v->tmax)
            v->tmax = trecv[d];
    res->valid = 1;
    rd_meshes_judge(s, trecv, peak, recv, &res->memory_efficient,
                    &res->peak_bytes, &res->recv_bytes);
    free(arr);
    const redist_verify_result_t *pr = v->pr;
    res->collectives = pr[0].collectives + 1 + pr[1].collectives;
    res->steps = (int)v->n;
    res->exchange_steps = pr[0].exchange_steps + pr[1].exchange_steps;
    res->time_s = pr[0].time_s + ttime + pr[1].time_s;
    json_t *stats = json_object_get(v->root, "stats");
    res->stated_unproven =
        json_is_false(json_object_get(stats, "optimal")) ? 1 : 0;
    return REDIST_OK;
}

/* What the document states of the transfer and of the whole plan. */
static redist_status_t check_claims(mverify *v)
{
    const redist_spec_t *s = v->s;
    int64_t longest[REDIST_MAX_DIMS];
    uint64_t lb = rd_layout_max_elems(&v->mr.lay, longest) * s->elem_size;
    uint64_t x;
    int has;
    redist_status_t st;
    const char *p = v->p;
    snprintf(v->p, sizeof v->p, "steps[%zu]", v->t);
    json_t *ls = json_object_get(v->tr, "local_shape");
    int ok = 1;
    if (ls) {
        ok = (int)json_array_size(ls) == s->ndims;
        for (int i = 0; ok && i < s->ndims; i++)
            ok = json_integer_value(json_array_get(ls, (size_t)i)) ==
                 longest[i];
    }
    if ((st = rd_json_read_count(s, v->source, v->tr, "recv_bytes", p, &has,
                                 &x, v->err)))
        return st;
    if (has && x != v->tmax)
        st = rd_error(v->err, REDIST_ERR_PLAN, v->source, p,
                      "recv_bytes stated wrongly: the transfer's most "
                      "needy device receives %llu bytes",
                      (unsigned long long)v->tmax);
    else if ((st = rd_json_read_count(s, v->source, v->tr, "local_bytes", p,
                                      &has, &x, v->err)))
        return st;
    else if (has && x != lb)
        st = rd_error(v->err, REDIST_ERR_PLAN, v->source, p,
                      "local_bytes stated wrongly: %llu",
                      (unsigned long long)lb);
    else if (!ok)
        st = rd_error(v->err, REDIST_ERR_PLAN, v->source, p,
                      "local_shape stated wrongly");
    if (st) {
        v->res->failed_step = (int)v->t;
        return st;
    }
    return rd_json_check_stats(s, v->source,
                               json_object_get(v->root, "stats"), v->res,
                               v->err);
}

redist_status_t rd_meshes_verify_doc(const redist_spec_t *s, json_t *root,
                                     const char *source,
                                     const redist_cost_model_t *cost,
                                     redist_verify_result_t *res,
                                     redist_error_t *err)
{
    mverify v;
    memset(&v, 0, sizeof v);
    v.s = s;
    v.mm = s->two;
    v.root = root;
    v.source = source;
    v.cost = cost;
    v.res = res;
    v.err = err;
    v.steps = json_is_object(root) ? json_object_get(root, "steps") : NULL;
    if (!json_is_array(v.steps))
        return rd_error(err, REDIST_ERR_INVALID, source,
                        json_is_object(root) ? "steps" : NULL,
                        "a plan is an object with a \"steps\" array");
    v.n = json_array_size(v.steps);
    v.t = v.n;
    redist_status_t st = find_transfer(&v);
    if (st)
        return st;
    if (!(st = transfer_types(&v)) && !(st = no_crossing_reduction(&v)) &&
        !(st = replay_phases(&v)) && !(st = plan_figures(&v)))
        st = check_claims(&v);
    if (st)
        res->valid = 0;
    for (int side = 0; side < 2; side++) {
        redist_spec_free(v.on[side]);
        redist_spec_free(v.ph[side]);
        rd_uplan_free(&v.up[side]);
        json_decref(v.doc[side]);
    }
    rd_mside_free(&v.ms);
    rd_mside_free(&v.mr);
    return st;
}
