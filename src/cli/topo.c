/*
 * `redistplan topo`: the machine, where the ranks run, how each mesh
 * axis maps onto it, and the modelled cost of each step of the plans of
 * both objectives (time, the default, and bytes).  Also the topology options of `plan`
 * (cli_topo_axis_links).  Built only with hwloc (libredist_topo).
 *
 *   redistplan topo [SPEC] [--xml FILE | --synthetic DESC]
 *                   [--rank-map FILE] [--cost FILE]
 *                   [--axis-links AXIS=LEVEL,...] [--objective time|bytes]
 *
 * Exit codes: 0 ok; 2 bad input (or no plan for the spec).  The topology
 * options of the other commands come through cli_topo_axis_links
 * (options.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "redist/topo.h"

static redist_status_t load_topo(const cli_topo_args *a, redist_topo_t **t,
                                 redist_placement_t **p, redist_error_t *err)
{
    redist_status_t st;
    *t = NULL;
    *p = NULL;
    if (a->xml && a->synthetic)
        return redist_error_set(err, REDIST_ERR_INVALID, "<command line>",
                                NULL, "give --xml or --synthetic, not both");
    if (a->xml)
        st = redist_topo_load_xml(a->xml, t, err);
    else if (a->synthetic)
        st = redist_topo_load_synthetic(a->synthetic, t, err);
    else
        st = redist_topo_load_local(t, err);
    if (st)
        return st;
    if (a->rank_map)
        st = redist_placement_load_file(*t, a->rank_map, p, err);
    else
        st = redist_placement_default(*t, p, err);
    if (st) {
        redist_topo_free(*t);
        *t = NULL;
    }
    return st;
}

redist_status_t cli_topo_axis_links(const cli_topo_args *a,
                                    const redist_mesh_t *mesh,
                                    redist_cost_model_t *model,
                                    redist_error_t *err)
{
    redist_topo_t *t;
    redist_placement_t *p;
    if (!a->xml && !a->synthetic && !a->rank_map)
        return REDIST_OK;
    redist_status_t st = load_topo(a, &t, &p, err);
    if (!st)
        st = redist_topo_axis_links(p, mesh, model, err);
    if (st && err->source[0] == '\0' && a->rank_map)
        snprintf(err->source, sizeof err->source, "%s", a->rank_map);
    redist_placement_free(p);
    redist_topo_free(t);
    return st;
}

/* ------------------------------------------------------------ printing */

static void print_location(const redist_placement_t *p, int64_t r, char *buf,
                           size_t size)
{
    redist_topo_location_t l;
    if (redist_placement_location(p, r, &l)) {
        snprintf(buf, size, "%lld (?)", (long long)r);
        return;
    }
    snprintf(buf, size, "%lld (h%lld p%d n%d c%d)", (long long)r,
             (long long)l.host, l.package, l.numa, l.core);
}

static void print_machine(const redist_topo_t *t, const redist_placement_t *p)
{
    redist_topo_info_t in;
    char source[4 * sizeof in.source], host[4 * sizeof in.hostname],
        ranks[1600];
    redist_topo_get_info(t, &in);
    /* names from files and paths: shown with control characters escaped */
    cli_sanitize(in.source, source, sizeof source);
    cli_sanitize(in.hostname, host, sizeof host);
    cli_sanitize(redist_placement_description(p), ranks, sizeof ranks);
    printf("machine   %s%s%s%s\n", source, host[0] ? " (host " : "", host,
           host[0] ? ")" : "");
    if (in.levels[0])
        printf("  levels  %s\n", in.levels);
    else
        printf("  levels  asymmetric (hwloc gives no synthetic form)\n");
    int nocache = strcmp(in.cache_name, "core") == 0;
    char caches[64];
    if (nocache)
        snprintf(caches, sizeof caches, "no caches");
    else
        snprintf(caches, sizeof caches, "%d %s cache%s", in.caches,
                 in.cache_name, in.caches == 1 ? "" : "s");
    printf("  per host  %d package%s, %d NUMA node%s, %s, %d core%s, %d "
           "PU%s\n",
           in.packages, in.packages == 1 ? "" : "s", in.numa_nodes,
           in.numa_nodes == 1 ? "" : "s", caches, in.cores,
           in.cores == 1 ? "" : "s", in.pus, in.pus == 1 ? "" : "s");
    printf("  links   across hosts: network; across packages: node; across "
           "NUMA nodes: package;\n          across %ss: numa; within "
           "one%s: cache\n",
           nocache ? "core" : in.cache_name,
           nocache ? " (no cache objects: the same core)" : "");
    printf("ranks     %s\n", ranks);
}

static void print_ranks(const redist_placement_t *p, int64_t n)
{
    printf("  %6s  %-12s %7s %5s %6s %5s %5s\n", "rank", "host", "package",
           "numa", "cache", "core", "pu");
    for (int64_t r = 0; r < n; r++) {
        redist_topo_location_t l;
        char name[64], host[256];
        if (redist_placement_location(p, r, &l))
            break;
        redist_placement_host_name(p, l.host, name, sizeof name);
        cli_sanitize(name, host, sizeof host);
        printf("  %6lld  %-12s %7d %5d %6d %5d %5d\n", (long long)r, host,
               l.package, l.numa, l.cache, l.core, l.pu);
    }
}

static void print_plan(const redist_plan_t *plan, const redist_cost_model_t *cm,
                       const char *title)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(s);
    redist_plan_stats_t st;
    redist_plan_stats(plan, &st);
    printf("\n%s: modelled %.2f us\n", title, st.time_s * 1e6);
    printf("  %4s  %-14s %-8s %-8s %14s %12s  %s\n", "step", "op", "axis",
           "link", "recv bytes", "time (us)", "type after");
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        char tf[512];
        int l = redist_plan_step_link(plan, k, cm);
        const char *link = l >= 0 ? redist_link_name((redist_link_t)l)
                                  : "local";
        redist_plan_step(plan, k, &v);
        printf("  %4d  %-14s %-8s %-8s %14llu %12.2f  %s\n", k + 1,
               redist_op_name(v.op),
               v.axis >= 0 ? redist_mesh_axis_name(m, v.axis) : "-", link,
               (unsigned long long)v.recv_bytes, v.time_s * 1e6,
               redist_type_format(&v.after, m, tf, sizeof tf));
    }
    if (redist_plan_num_steps(plan) == 0)
        printf("  (no steps: the types are equal)\n");
    printf("  %d collective%s; received %llu bytes per device; peak %llu "
           "bytes; memory-efficient: %s\n",
           st.collectives, st.collectives == 1 ? "" : "s",
           (unsigned long long)st.recv_bytes,
           (unsigned long long)st.peak_bytes,
           st.memory_efficient ? "yes" : "no");
}

static void print_cost(const redist_cost_model_t *cm, const char *file)
{
    printf("\ncost model  %s%s\n", file ? file : "defaults",
           file ? " (levels it does not name keep the defaults)" : "");
    printf("  %-8s %11s %17s\n", "level", "alpha (us)", "bandwidth (GB/s)");
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        printf("  %-8s %11.2f %17.2f\n", redist_link_name((redist_link_t)l),
               cm->alpha[l] * 1e6,
               cm->beta[l] > 0 ? 1e-9 / cm->beta[l] : 0.0);
    printf("  reductions %.2f GB/s\n",
           cm->gamma > 0 ? 1e-9 / cm->gamma : 0.0);
}

/* ------------------------------------------------------------- command */

/* One line per mesh axis: its size, stride, link, groups, an example. */
static int print_axes(const redist_placement_t *pl, const redist_mesh_t *m,
                      const redist_cost_model_t *cm,
                      const redist_cost_model_t *from_topo)
{
    redist_error_t err;
    redist_error_clear(&err);
    printf("  %-10s %5s %7s  %-8s %-28s %s\n", "axis", "size", "stride",
           "link", "groups by slowest link", "example group: rank (host "
           "package numa core)");
    for (int a = 0; a < redist_mesh_num_axes(m); a++) {
        redist_topo_axis_t ax;
        char groups[128] = "", member[96], linkname[48];
        size_t pos = 0;
        if (redist_topo_axis_info(pl, m, a, &ax, &err)) {
            fflush(stdout);
            cli_print_error(&err);
            return CLI_BAD_INPUT;
        }
        for (int l = REDIST_LINK_COUNT - 1; l >= 0; l--)
            if (ax.groups_at[l])
                cli_appendf(groups, sizeof groups, &pos, "%s%lld %s",
                            pos ? ", " : "", (long long)ax.groups_at[l],
                            redist_link_name((redist_link_t)l));
        snprintf(linkname, sizeof linkname, "%s%s",
                 redist_link_name((redist_link_t)cm->axis_link[a]),
                 cm->axis_link[a] != from_topo->axis_link[a] ? "*" : "");
        printf("  %-10s %5lld %7lld  %-8s %-28s ", redist_mesh_axis_name(m, a),
               (long long)ax.size, (long long)ax.stride, linkname, groups);
        for (int64_t k = 0; k < ax.size && k < 6; k++) {
            print_location(pl, ax.example + k * ax.stride, member,
                           sizeof member);
            printf("%s%s", k ? ", " : "", member);
        }
        printf("%s\n", ax.size > 6 ? ", ..." : "");
    }
    return CLI_OK;
}

/* 1 when plans a and b have the same steps. */
static int same_steps(const redist_plan_t *a, const redist_plan_t *b)
{
    int same = redist_plan_num_steps(a) == redist_plan_num_steps(b);
    for (int k = 0; same && k < redist_plan_num_steps(a); k++) {
        redist_step_view_t v0, v1;
        redist_plan_step(a, k, &v0);
        redist_plan_step(b, k, &v1);
        same = v0.op == v1.op && v0.dim == v1.dim &&
               v0.from_dim == v1.from_dim && v0.to_dim == v1.to_dim &&
               v0.axis == v1.axis && redist_type_equal(&v0.after, &v1.after);
    }
    return same;
}

/* How the time objective's plan compares with the bytes objective's. */
static void print_comparison(const redist_plan_t *p0, const redist_plan_t *p1)
{
    redist_plan_stats_t s0, s1;
    redist_plan_stats(p0, &s0);
    redist_plan_stats(p1, &s1);
    if (same_steps(p0, p1))
        printf("\nthe time objective keeps the bytes objective's plan "
               "(%.2f us)\n",
               s0.time_s * 1e6);
    else if (s1.peak_bytes < s0.peak_bytes)
        printf("\nthe time objective's plan: %.2f us modelled, the "
               "bytes objective's plan %.2f us; it needs less memory "
               "(peak %llu bytes, the other's %llu: the time objective "
               "minimises the peak first)\n",
               s1.time_s * 1e6, s0.time_s * 1e6,
               (unsigned long long)s1.peak_bytes,
               (unsigned long long)s0.peak_bytes);
    else
        printf("\nthe time objective's plan: %.2f us modelled, the "
               "bytes objective's plan %.2f us (%.2fx faster)\n",
               s1.time_s * 1e6, s0.time_s * 1e6,
               s1.time_s > 0 ? s0.time_s / s1.time_s : 0.0);
}

/* The plans of both objectives (or of `only`) under cm, compared. */
static int print_plans(const redist_spec_t *spec, const char *path,
                       const redist_cost_model_t *cm, int only)
{
    redist_plan_t *plans[2] = {NULL, NULL};
    redist_error_t err;
    int rc = CLI_OK;
    redist_error_clear(&err);
    for (int o = 0; o < 2 && rc == CLI_OK; o++) {
        redist_plan_options_t po;
        memset(&po, 0, sizeof po);
        po.objective = o ? REDIST_OBJECTIVE_TIME : REDIST_OBJECTIVE_BYTES;
        if (only >= 0 && only != (int)po.objective)
            continue;
        po.cost = cm;
        if (redist_plan_create(spec, &po, &plans[o], &err)) {
            cli_error_source(&err, path);
            fflush(stdout);
            cli_print_error(&err);
            fprintf(stderr, "redistplan: topo: no plan for this spec\n");
            rc = CLI_BAD_INPUT;
            break;
        }
        print_plan(plans[o], cm,
                   o ? "plan of the time objective (the default: peak, "
                       "modelled time, collectives)"
                     : "plan of the bytes objective (peak, bytes, "
                       "collectives)");
    }
    if (plans[0] && plans[1])
        print_comparison(plans[0], plans[1]);
    redist_plan_free(plans[0]);
    redist_plan_free(plans[1]);
    return rc;
}

/* The machine alone: its levels and the first ranks. */
static void print_machine_only(const redist_topo_t *topo,
                               const redist_placement_t *pl)
{
    redist_topo_info_t in;
    redist_topo_get_info(topo, &in);
    int64_t n = redist_placement_num_ranks(pl);
    if (n > in.cores)
        n = in.cores;
    if (n > 64)
        n = 64;
    print_machine(topo, pl);
    print_ranks(pl, n);
}

/* The machine, the spec's axes on it, the cost model, the plans. */
static int print_spec(const redist_topo_t *topo, const redist_placement_t *pl,
                      const redist_spec_t *spec, const char *path,
                      const cli_cost_args *ca)
{
    const redist_mesh_t *m = redist_spec_mesh(spec);
    int64_t D = redist_mesh_num_devices(m);
    redist_cost_model_t cm;
    redist_error_t err;
    redist_error_clear(&err);
    redist_cost_model_default(&cm);
    if ((ca->file && redist_cost_model_load_file(ca->file, &cm, &err)) ||
        redist_topo_axis_links(pl, m, &cm, &err)) {
        if (err.source[0] == '\0' && ca->topo.rank_map)
            snprintf(err.source, sizeof err.source, "%s", ca->topo.rank_map);
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    redist_cost_model_t from_topo = cm;
    if (ca->axis_links &&
        redist_cost_model_set_axis_links(&cm, m, ca->axis_links, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    print_machine(topo, pl);
    const char *name = redist_spec_name(spec);
    char mesh[512];
    redist_mesh_format(m, mesh, sizeof mesh);
    for (char *c = mesh; *c; c++)
        *c = *c == ',' ? ' ' : *c;
    printf("\nspec      %s: mesh %s (%lld device%s, ranks row-major)\n",
           name[0] ? name : "(unnamed)", mesh, (long long)D,
           D == 1 ? "" : "s");
    if (print_axes(pl, m, &cm, &from_topo))
        return CLI_BAD_INPUT;
    if (ca->axis_links)
        printf("  (* set by --axis-links)\n");
    if (D <= 16)
        print_ranks(pl, D);
    print_cost(&cm, ca->file);
    return print_plans(spec, path, &cm, ca->objective);
}

int cli_cmd_topo(const cli_command *self, int argc, char **argv)
{
    cli_spec_args sa;
    cli_cost_args ca;
    cli_cmdline c = {.cmd = self->name, .spec = &sa, .cost = &ca,
                     .pos = &sa.path, .maxpos = 1,
                     .pos_words = "at most one SPEC"};
    if (cli_parse(&c, argc, argv))
        return CLI_BAD_INPUT;
    redist_error_t err;
    redist_error_clear(&err);
    redist_topo_t *topo = NULL;
    redist_placement_t *pl = NULL;
    redist_spec_t *spec = NULL;
    int rc = CLI_BAD_INPUT;
    if (load_topo(&ca.topo, &topo, &pl, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    if (cli_spec_given(&sa) && cli_load_spec(&sa, 0, &spec, &err))
        cli_print_error(&err);
    else if (!spec) {
        print_machine_only(topo, pl);
        rc = CLI_OK;
    } else {
        rc = print_spec(topo, pl, spec, sa.path, &ca);
    }
    redist_spec_free(spec);
    redist_placement_free(pl);
    redist_topo_free(topo);
    return rc;
}
