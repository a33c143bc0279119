/*
 * The option parser of every redistplan command (cli.h) and the option
 * groups they share:
 *   spec    --mesh --shape --dtype --from --from-partial --to --to-partial
 *           --reduce --name: a spec given inline, with '-' for the file
 *   cost    --objective time|bytes --cost FILE --axis-links AXIS=LEVEL,...
 *           --xml FILE --synthetic DESC --rank-map FILE
 * A command lists its own options in a table of cli_opt; cli_parse reads
 * the command line against that table and the groups the command takes,
 * converts each value by its kind (flag, string, digits-only count, byte
 * count with a suffix, a choice), and prints every error as
 * "redistplan: CMD: OPTION: ...".  The same option given twice: the last
 * one counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CLI_SPEC_OPTS 15
#define CLI_COST_OPTS 9
#define CLI_MAX_OPTS 64

/* In redist_objective_t order (a choice stores its index): time, the
 * default, is 0. */
static const char *const objectives[] = {"time", "bytes", NULL};

int cli_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) { /* digits only: strtoull takes " -1" for 2^64-1 */
        uint64_t d = (uint64_t)(*s - '0');
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* The tables of the groups, pointing into the caller's structs. */
static int spec_table(cli_spec_args *s, cli_opt *t)
{
    static const char *const names[CLI_SPEC_OPTS] = {
        "--mesh", "--shape", "--dtype", "--from", "--from-partial", "--to",
        "--to-partial", "--reduce", "--name", "--from-split", "--from-blocks",
        "--to-split", "--to-blocks", "--from-mesh", "--to-mesh"};
    const char **slots[CLI_SPEC_OPTS] = {
        &s->mesh, &s->shape,      &s->dtype,  &s->from, &s->from_partial,
        &s->to,   &s->to_partial, &s->reduce, &s->name, &s->from_split,
        &s->from_blocks, &s->to_split, &s->to_blocks, &s->from_mesh,
        &s->to_mesh};
    for (int k = 0; k < CLI_SPEC_OPTS; k++)
        t[k] = (cli_opt){.name = names[k], .kind = CLI_STR, .out = slots[k]};
    return CLI_SPEC_OPTS;
}

static int cost_table(cli_cost_args *c, cli_opt *t)
{
    t[0] = (cli_opt){.name = "--objective", .kind = CLI_CHOICE,
                     .out = &c->objective, .choices = objectives};
    t[1] = (cli_opt){.name = "--cost", .kind = CLI_STR, .out = &c->file};
    t[2] = (cli_opt){.name = "--axis-links", .kind = CLI_STR,
                     .out = &c->axis_links};
    t[3] = (cli_opt){.name = "--xml", .kind = CLI_STR, .out = &c->topo.xml};
    t[4] = (cli_opt){.name = "--synthetic", .kind = CLI_STR,
                     .out = &c->topo.synthetic};
    t[5] = (cli_opt){.name = "--rank-map", .kind = CLI_STR,
                     .out = &c->topo.rank_map};
    t[6] = (cli_opt){.name = "--cross-sums", .kind = CLI_FLAG,
                     .out = &c->cross_sums};
    t[7] = (cli_opt){.name = "--no-cross-sums", .kind = CLI_FLAG,
                     .out = &c->no_cross_sums};
    t[8] = (cli_opt){.name = "--mesh-link", .kind = CLI_STR,
                     .out = &c->mesh_link};
    return CLI_COST_OPTS;
}

/* The option argv names ("--x" or "--x=value"; *value: after '='). */
static const cli_opt *find(const cli_opt *t, int n, const char *arg,
                           const char **value)
{
    for (int k = 0; k < n; k++) {
        const char *names[2] = {t[k].name, t[k].alias};
        for (int j = 0; j < 2; j++) {
            size_t len = names[j] ? strlen(names[j]) : 0;
            if (!len || strncmp(arg, names[j], len) != 0)
                continue;
            if (arg[len] == '\0' || arg[len] == '=') {
                *value = arg[len] == '=' ? arg + len + 1 : NULL;
                return &t[k];
            }
        }
    }
    return NULL;
}

/* Store value v of option o: 0, or -1 after the message. */
static int store(const char *cmd, const cli_opt *o, const char *v)
{
    char safe[128];
    uint64_t *u = o->out;
    cli_sanitize(v, safe, sizeof safe);
    switch (o->kind) {
    case CLI_FLAG:
        *(int *)o->out = 1;
        return 0;
    case CLI_BIT:
        *(unsigned *)o->out |= (unsigned)o->lo;
        return 0;
    case CLI_STR:
        *(const char **)o->out = v;
        return 0;
    case CLI_U64:
        if (!cli_parse_u64(v, u))
            return 0;
        fprintf(stderr, "redistplan: %s: %s: \"%s\" is not %s (digits only, "
                        "no sign, space or suffix; at most "
                        "18446744073709551615)\n",
                cmd, o->name, safe, o->what);
        return -1;
    case CLI_COUNT:
        if (!cli_parse_u64(v, u) && *u >= o->lo && *u <= o->hi)
            return 0;
        if (o->hi >= INT64_MAX)
            fprintf(stderr, "redistplan: %s: %s: not %s (%llu, %llu, ...): "
                            "%s\n",
                    cmd, o->name, o->what, (unsigned long long)o->lo,
                    (unsigned long long)o->lo + 1, safe);
        else
            fprintf(stderr, "redistplan: %s: %s: not %s (%llu to %llu): %s\n",
                    cmd, o->name, o->what, (unsigned long long)o->lo,
                    (unsigned long long)o->hi, safe);
        return -1;
    case CLI_BYTES:
        if (!cli_parse_size(v, u) && *u >= o->lo)
            return 0;
        fprintf(stderr, "redistplan: %s: %s: not a byte count%s: %s\n", cmd,
                o->name, o->lo ? " (> 0)" : "", safe);
        return -1;
    case CLI_CHOICE:
        for (int k = 0; o->choices[k]; k++)
            if (strcmp(v, o->choices[k]) == 0) {
                *(int *)o->out = k;
                return 0;
            }
        fprintf(stderr, "redistplan: %s: %s: ", cmd, o->name);
        for (int k = 0; o->choices[k]; k++)
            fprintf(stderr, "%s%s", k ? (o->choices[k + 1] ? ", " : " or ")
                                      : "",
                    o->choices[k]);
        fprintf(stderr, ", not %s\n", safe);
        return -1;
    }
    return -1;
}

/* argv[*i] is an option of table t (n entries): 0 (done), -1 (message). */
static int option(const cli_cmdline *c, const cli_opt *t, int n, int argc,
                  char **argv, int *i)
{
    const char *arg = argv[*i], *v = NULL;
    char safe[128];
    const cli_opt *o = find(t, n, arg, &v);
    cli_sanitize(arg, safe, sizeof safe);
    if (!o) {
        fprintf(stderr, "redistplan: %s: unknown option %s (redistplan %s "
                        "--help lists them)\n",
                c->cmd, safe, c->cmd);
        return -1;
    }
    if (o->kind == CLI_FLAG || o->kind == CLI_BIT) {
        if (v) {
            fprintf(stderr, "redistplan: %s: %.*s takes no value\n", c->cmd,
                    (int)(v - 1 - arg), arg);
            return -1;
        }
    } else if (!v) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "redistplan: %s: %s needs a value\n", c->cmd,
                    safe);
            return -1;
        }
        v = argv[++*i];
    }
    return store(c->cmd, o, v);
}

int cli_parse(cli_cmdline *c, int argc, char **argv)
{
    cli_opt t[CLI_MAX_OPTS];
    int n = 0;
    for (const cli_opt *o = c->own; o && o->name && n < CLI_MAX_OPTS; o++)
        t[n++] = *o;
    if (c->spec) {
        memset(c->spec, 0, sizeof *c->spec);
        if (n + CLI_SPEC_OPTS <= CLI_MAX_OPTS)
            n += spec_table(c->spec, t + n);
    }
    if (c->cost) {
        memset(c->cost, 0, sizeof *c->cost);
        c->cost->objective = -1;
        if (n + CLI_COST_OPTS <= CLI_MAX_OPTS)
            n += cost_table(c->cost, t + n);
    }
    c->npos = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] != '\0') {
            if (option(c, t, n, argc, argv, &i))
                return CLI_BAD_INPUT;
        } else if (c->npos < c->maxpos) {
            c->pos[c->npos++] = a;
        } else {
            char safe[128];
            cli_sanitize(a, safe, sizeof safe);
            fprintf(stderr, "redistplan: %s: unexpected argument \"%s\" (%s "
                            "takes %s)\n",
                    c->cmd, safe, c->cmd, c->pos_words);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------- spec */

int cli_spec_given(const cli_spec_args *a)
{
    return a->path || a->mesh || a->from_mesh || a->to_mesh;
}

redist_status_t cli_load_spec(const cli_spec_args *a, unsigned flags,
                              redist_spec_t **out, redist_error_t *err)
{
    if (a->path && strcmp(a->path, "-") != 0) {
        if (a->mesh || a->shape || a->from || a->to || a->from_split ||
            a->from_blocks || a->to_split || a->to_blocks || a->from_mesh ||
            a->to_mesh)
            return redist_error_set(err, REDIST_ERR_INVALID, NULL, NULL,
                                    "give either a spec file or the inline "
                                    "options (with '-'), not both");
        return redist_spec_load_file(a->path, flags, out, err);
    }
    redist_spec_t *s = NULL, *u = NULL;
    redist_status_t st;
    if (a->from_mesh || a->to_mesh) {
        if (a->mesh)
            return redist_error_set(err, REDIST_ERR_INVALID, NULL, "--mesh",
                                    "give --mesh (one mesh) or --from-mesh "
                                    "and --to-mesh (two), not both");
        st = redist_spec_from_strings_meshes(
            a->from_mesh, a->to_mesh, a->shape, a->dtype, a->from,
            a->from_partial, a->to, a->to_partial, a->reduce, a->name, flags,
            &s, err);
    } else
        st = redist_spec_from_strings(a->mesh, a->shape, a->dtype, a->from,
                                      a->from_partial, a->to, a->to_partial,
                                      a->reduce, a->name, flags, &s, err);
    if (st || !(a->from_split || a->from_blocks || a->to_split ||
                a->to_blocks)) {
        *out = s;
        return st;
    }
    st = redist_spec_with_layout_strings(s, a->from_split, a->from_blocks,
                                         a->to_split, a->to_blocks, &u, err);
    redist_spec_free(s);
    *out = u;
    return st;
}

void cli_error_source(redist_error_t *err, const char *path)
{
    if (err->source[0] == '\0')
        snprintf(err->source, sizeof err->source, "%s",
                 path && strcmp(path, "-") ? path : "<command line>");
}

void cli_print_error(const redist_error_t *err)
{
    char buf[1024], safe[2048];
    cli_sanitize(redist_error_format(err, buf, sizeof buf), safe,
                 sizeof safe);
    fprintf(stderr, "redistplan: %s\n", safe);
}

/* ---------------------------------------------------------------- cost */

static int topo_given(const cli_cost_args *c)
{
    return c->topo.xml || c->topo.synthetic || c->topo.rank_map;
}

int cli_links_given(const cli_cost_args *c)
{
    return c->axis_links || c->mesh_link || topo_given(c);
}

int cli_cost_given(const cli_cost_args *c)
{
    /* the time objective is the default: a model unless --objective
     * bytes alone */
    return c->file || c->axis_links || c->mesh_link || topo_given(c) ||
           c->objective != REDIST_OBJECTIVE_BYTES;
}

/* The model of the cost options for `mesh`: the defaults, then the --cost
 * file, the links of the topology options, --axis-links. */
static redist_status_t cost_model(const char *cmd, const cli_cost_args *c,
                                  const redist_mesh_t *mesh,
                                  redist_cost_model_t *model,
                                  redist_error_t *err)
{
    redist_cost_model_default(model);
#ifndef REDIST_HAVE_HWLOC
    if (topo_given(c)) {
        char text[REDIST_ERROR_TEXT_LENGTH];
        snprintf(text, sizeof text,
                 "%s: --xml, --synthetic and --rank-map need a redistplan "
                 "built with hwloc (libhwloc-dev); use --axis-links",
                 cmd);
        return redist_error_set(err, REDIST_ERR_INVALID, NULL, NULL, text);
    }
#else
    (void)cmd;
#endif
    redist_status_t st = REDIST_OK;
    if (c->file)
        st = redist_cost_model_load_file(c->file, model, err);
#ifdef REDIST_HAVE_HWLOC
    if (!st && topo_given(c))
        st = cli_topo_axis_links(&c->topo, mesh, model, err);
#endif
    if (!st && c->axis_links)
        st = redist_cost_model_set_axis_links(model, mesh, c->axis_links,
                                              err);
    if (!st && c->mesh_link)
        st = redist_cost_model_set_mesh_link(model, c->mesh_link,
                                             "<command line>", "--mesh-link",
                                             err);
    return st;
}

redist_status_t cli_plan_options_err(const char *cmd, const cli_cost_args *c,
                                     const redist_mesh_t *mesh,
                                     redist_cost_model_t *model,
                                     redist_plan_options_t *opts,
                                     redist_error_t *err)
{
    if (c->objective >= 0)
        opts->objective = (redist_objective_t)c->objective;
    if (c->cross_sums && c->no_cross_sums)
        return redist_error_set(err, REDIST_ERR_INVALID, "<command line>",
                                NULL,
                                "--cross-sums and --no-cross-sums: give one");
    opts->no_cross_sums = c->no_cross_sums;
    if (!cli_cost_given(c))
        return REDIST_OK;
    redist_status_t st = cost_model(cmd, c, mesh, model, err);
    if (!st)
        opts->cost = model;
    return st;
}

int cli_plan_options(const char *cmd, const cli_cost_args *c,
                     const redist_mesh_t *mesh, redist_cost_model_t *model,
                     redist_plan_options_t *opts)
{
    redist_error_t err = REDIST_ERROR_INIT;
    if (cli_plan_options_err(cmd, c, mesh, model, opts, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}
