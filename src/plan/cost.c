/*
 * The alpha-beta cost model: defaults, link names, JSON link costs (as
 * `redistplan calibrate` writes them) and axis-to-link assignments.
 *
 * THE BUILT-IN MODEL (redist_cost_model_default; this is the numbers' one
 * home).  The time objective, the default, plans with it whenever no cost
 * file or topology is given, so its numbers decide the default plans.
 * Only their ratios matter for a plan when every axis sits on one level
 * (the default, `node`): alpha/beta, the message size worth one extra
 * message, and gamma/beta, a reduced byte against a received one.
 *
 * Measured: `mpirun -np 2 redistplan calibrate` (8 B and 4 MiB ping-pong,
 * minimum of 20 round trips; --mca osc ^rdma, --oversubscribe), 10 runs on
 * the development machine: a 2-core VM ("Oxide Virtual Turin-like
 * Processor", one package, one NUMA node, no shared cache between the two
 * cores: the pair is at level `numa`), Open MPI 4.1, shared with other
 * builds (load average 15 to 20 during the runs).  Medians and ranges:
 *   numa alpha    0.33 us (0.15 to 0.92)
 *   numa bw       3.9 GB/s at 4 MiB (0.45 to 7.0); the bench transport
 *                 (ob1, vader, CMA), 7 runs: 3.6 GB/s; 64 MiB messages,
 *                 7 runs: 0.52 GB/s (0.16 to 0.64: memory bandwidth shared
 *                 with the load)
 *   reduction     7.1 GB/s (3.7 to 8.5), f64 sum of 4 MiB buffers
 * doc/bench.md agrees: a 2-rank all_to_all moves 8 MiB in 2.46 ms and
 * 128 MiB in 34.2 ms per rank, 3.4 and 3.9 GB/s.
 *
 * Chosen (alpha us, GB/s per rank):
 *   cache    0.30  4.0  not measurable here; a shared L3 saves the
 *                       handshake, not the copy of multi-MiB messages
 *   numa     0.35  4.0  measured (medians, rounded)
 *   package  0.50  3.5  not measurable here (one NUMA node): remote
 *                       memory, taken as 1.15x numa's time per byte
 *   node     0.70  3.0  not measurable here (one package): across
 *                       sockets, 1.3x numa's time per byte
 *   network  3.00  2.5  a 100 Gb/s link (12.5 GB/s) shared by the 5 or so
 *                       ranks of a node that send at once in a collective,
 *                       and 1 to 2 us of switch and NIC latency plus MPI's
 *                       software overhead; nothing here reaches a network
 *   gamma           7.0 measured (median, rounded)
 * So on `node`, a message costs as much as 2.1 KB, and a reduced byte a
 * bit under half a received one.  With these numbers the time objective
 * picks what the benchmark measured fastest: the single exchange for
 * row2col at 4 ranks (2.58 against 8.60 ms for the three steps of the
 * bytes objective), the single all_to_all at 2 ranks, all_reduce and
 * reduce_scatter for partial sources (tests/cli/test_cli.sh checks it).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../spec/spec_internal.h"
#include "plan_internal.h"
#include "redist/plan.h"

static const char *const link_names[REDIST_LINK_COUNT] = {
    "cache", "numa", "package", "node", "network"};

const char *redist_link_name(redist_link_t link)
{
    if ((unsigned)link >= REDIST_LINK_COUNT)
        return NULL;
    return link_names[link];
}

redist_status_t redist_link_from_name(const char *name, redist_link_t *out)
{
    if (!name)
        return REDIST_ERR_INVALID;
    for (int i = 0; i < REDIST_LINK_COUNT; i++)
        if (strcmp(name, link_names[i]) == 0) {
            if (out)
                *out = (redist_link_t)i;
            return REDIST_OK;
        }
    return REDIST_ERR_INVALID;
}

/* The numbers and their measurements: the top of this file. */
void redist_cost_model_default(redist_cost_model_t *m)
{
    if (!m)
        return;
    static const double alpha[REDIST_LINK_COUNT] = {0.30e-6, 0.35e-6,
                                                    0.50e-6, 0.70e-6, 3.0e-6};
    static const double gbps[REDIST_LINK_COUNT] = {4.0, 4.0, 3.5, 3.0, 2.5};
    memset(m, 0, sizeof *m);
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        m->alpha[l] = alpha[l];
        m->beta[l] = 1.0 / (gbps[l] * 1e9);
    }
    m->gamma = 1.0 / 7e9;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        m->axis_link[a] = REDIST_LINK_NODE;
    m->mesh_link = REDIST_LINK_DERIVED;
}

int rd_cost_is_builtin(const redist_plan_t *plan)
{
    redist_cost_model_t def;
    const redist_cost_model_t *m = &plan->cost;
    redist_cost_model_default(&def);
    int same = memcmp(def.alpha, m->alpha, sizeof def.alpha) == 0 &&
               memcmp(def.beta, m->beta, sizeof def.beta) == 0 &&
               def.gamma == m->gamma && def.mesh_link == m->mesh_link;
    for (int a = 0; same && a < redist_mesh_num_axes(&plan->spec->mesh); a++)
        same = m->axis_link[a] == def.axis_link[a];
    return same;
}

/* The one range of a cost in seconds (alpha, beta, gamma), for the file
 * loader and for models filled in C alike. */
#define RD_COST_MAX_SECONDS 1e3

static int seconds_ok(double v)
{
    return v >= 0 && v <= RD_COST_MAX_SECONDS; /* false for NaN */
}

static redist_status_t bad_seconds(redist_error_t *err, const char *src,
                                   const char *path, double v)
{
    return rd_error(err, REDIST_ERR_INVALID, src, path,
                    "%g s is out of range: seconds from 0 to %g", v,
                    RD_COST_MAX_SECONDS);
}

static redist_status_t get_cost(json_t *o, const char *key, const char *src,
                                const char *path, double *out,
                                redist_error_t *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return REDIST_OK;
    if (!json_is_number(v))
        return rd_error(err, REDIST_ERR_INVALID, src, path,
                        "expected seconds (a number from 0 to %g), got %s",
                        RD_COST_MAX_SECONDS, rd_json_kind(v));
    if (!seconds_ok(json_number_value(v)))
        return bad_seconds(err, src, path, json_number_value(v));
    *out = json_number_value(v);
    return REDIST_OK;
}

redist_status_t redist_cost_model_validate(const redist_cost_model_t *model,
                                           const redist_mesh_t *mesh,
                                           redist_error_t *err)
{
    char path[48];
    if (!model)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "cost",
                        "NULL cost model");
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        snprintf(path, sizeof path, "cost.alpha[%s]", redist_link_name(l));
        if (!seconds_ok(model->alpha[l]))
            return bad_seconds(err, NULL, path, model->alpha[l]);
        snprintf(path, sizeof path, "cost.beta[%s]", redist_link_name(l));
        if (!seconds_ok(model->beta[l]))
            return bad_seconds(err, NULL, path, model->beta[l]);
    }
    if (!seconds_ok(model->gamma))
        return bad_seconds(err, NULL, "cost.gamma", model->gamma);
    int naxes = mesh ? redist_mesh_num_axes(mesh) : REDIST_MAX_AXES;
    for (int a = 0; a < naxes; a++)
        if (model->axis_link[a] >= REDIST_LINK_COUNT) {
            snprintf(path, sizeof path, "cost.axis_link[%d]", a);
            return rd_error(err, REDIST_ERR_INVALID, NULL, path,
                            "%d is not a link level (0 to %d: cache, numa, "
                            "package, node, network)",
                            model->axis_link[a], REDIST_LINK_COUNT - 1);
        }
    if (model->mesh_link >= REDIST_LINK_COUNT &&
        model->mesh_link != REDIST_LINK_DERIVED)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "cost.mesh_link",
                        "%d is not a link level (0 to %d: cache, numa, "
                        "package, node, network; or REDIST_LINK_DERIVED)",
                        model->mesh_link, REDIST_LINK_COUNT - 1);
    return REDIST_OK;
}

redist_status_t redist_cost_model_load_buffer(const char *text, size_t len,
                                              const char *source,
                                              redist_cost_model_t *model,
                                              redist_error_t *err)
{
    const char *src = source ? source : "<string>";
    char path[96];
    json_t *root;
    if (!model || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL argument");
    redist_status_t st = rd_json_parse(text, len, src, &root, err);
    if (st)
        return st;
    redist_cost_model_t m = *model;
    const char *key;
    json_t *v;
    if (!json_is_object(root)) {
        st = rd_error(err, REDIST_ERR_INVALID, src, NULL,
                      "a cost model is a JSON object");
        goto out;
    }
    json_object_foreach(root, key, v) {
        if (strcmp(key, "links") && strcmp(key, "gamma") &&
            strcmp(key, "machine") && strcmp(key, "method")) {
            snprintf(path, sizeof path, "%.80s", key);
            st = rd_error(err, REDIST_ERR_INVALID, src, path,
                          "unknown key \"%.80s\" (allowed: links, gamma, "
                          "machine, method)",
                          key);
            goto out;
        }
    }
    if ((st = get_cost(root, "gamma", src, "gamma", &m.gamma, err)))
        goto out;
    json_t *links = json_object_get(root, "links");
    if (links && !json_is_object(links)) {
        st = rd_error(err, REDIST_ERR_INVALID, src, "links",
                      "expected an object of link levels");
        goto out;
    }
    json_object_foreach(links, key, v) {
        redist_link_t l;
        snprintf(path, sizeof path, "links.%.80s", key);
        if (redist_link_from_name(key, &l)) {
            st = rd_error(err, REDIST_ERR_INVALID, src, path,
                          "unknown link level (levels: cache, numa, package, "
                          "node, network)");
            goto out;
        }
        if (!json_is_object(v)) {
            st = rd_error(err, REDIST_ERR_INVALID, src, path,
                          "expected {\"alpha\": s, \"beta\": s/byte}");
            goto out;
        }
        const char *k2;
        json_t *v2;
        json_object_foreach(v, k2, v2) {
            if (strcmp(k2, "alpha") && strcmp(k2, "beta")) {
                st = rd_error(err, REDIST_ERR_INVALID, src, path,
                              "unknown key \"%.60s\" (allowed: alpha, beta)",
                              k2);
                goto out;
            }
        }
        char p2[128];
        snprintf(p2, sizeof p2, "%s.alpha", path);
        if ((st = get_cost(v, "alpha", src, p2, &m.alpha[l], err)))
            goto out;
        snprintf(p2, sizeof p2, "%s.beta", path);
        if ((st = get_cost(v, "beta", src, p2, &m.beta[l], err)))
            goto out;
    }
    *model = m;
out:
    json_decref(root);
    return st;
}

/* Cost files are a few lines (`redistplan calibrate` writes them). */
#define RD_MAX_COST_BYTES (1u << 20)

redist_status_t redist_cost_model_load_file(const char *path,
                                            redist_cost_model_t *model,
                                            redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    redist_status_t st = rd_read_file(path, RD_MAX_COST_BYTES, "a cost model",
                                      &buf, &len, err);
    if (st)
        return st;
    st = redist_cost_model_load_buffer(buf, len, path, model, err);
    free(buf);
    return st;
}

redist_status_t redist_cost_model_set_mesh_link(redist_cost_model_t *model,
                                                const char *level,
                                                const char *source,
                                                const char *path,
                                                redist_error_t *err)
{
    redist_link_t l;
    if (!model || !level)
        return rd_error(err, REDIST_ERR_INVALID, source, path,
                        "NULL argument");
    if (redist_link_from_name(level, &l))
        return rd_error(err, REDIST_ERR_INVALID, source, path,
                        "unknown link level \"%.40s\" (levels: cache, numa, "
                        "package, node, network)",
                        level);
    model->mesh_link = (uint8_t)l;
    return REDIST_OK;
}

redist_status_t redist_cost_model_set_axis_links(redist_cost_model_t *model,
                                                 const redist_mesh_t *mesh,
                                                 const char *text,
                                                 redist_error_t *err)
{
    const char *src = "<command line>";
    if (!model || !mesh || !text)
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL argument");
    const char *p = text;
    uint8_t links[REDIST_MAX_AXES];
    uint32_t given = 0;
    memcpy(links, model->axis_link, sizeof links);
    while (*p) {
        char axis[REDIST_MAX_NAME + 1], level[32];
        size_t n = strcspn(p, "=");
        if (n == 0 || n > REDIST_MAX_NAME || p[n] != '=')
            return rd_error(err, REDIST_ERR_INVALID, src, "--axis-links",
                            "expected AXIS=LEVEL[,AXIS=LEVEL...] in \"%.80s\"",
                            text);
        memcpy(axis, p, n);
        axis[n] = '\0';
        p += n + 1;
        size_t m = strcspn(p, ",");
        if (m == 0 || m >= sizeof level)
            return rd_error(err, REDIST_ERR_INVALID, src, "--axis-links",
                            "axis \"%s\": missing link level", axis);
        memcpy(level, p, m);
        level[m] = '\0';
        p += m;
        if (*p == ',')
            p++;
        int a = redist_mesh_find_axis(mesh, axis);
        if (a < 0)
            return rd_error(err, REDIST_ERR_INVALID, src, "--axis-links",
                            "axis \"%s\" is not in the mesh", axis);
        if (given >> a & 1u)
            return rd_error(err, REDIST_ERR_INVALID, src, "--axis-links",
                            "axis \"%s\" is given twice", axis);
        given |= 1u << a;
        redist_link_t l;
        if (redist_link_from_name(level, &l))
            return rd_error(err, REDIST_ERR_INVALID, src, "--axis-links",
                            "unknown link level \"%s\" (levels: cache, numa, "
                            "package, node, network)",
                            level);
        links[a] = (uint8_t)l;
    }
    memcpy(model->axis_link, links, sizeof links);
    return REDIST_OK;
}
