/*
 * `redistplan run SPEC`: the driver every backend runs behind.
 *
 *   1. options: run's own, the spec and cost groups (options.c), and those
 *      of the mpi and shmem backends (run_mpi.c, run_shmem.c);
 *   2. the backend: --backend, else mpi under a launcher
 *      (OMPI_COMM_WORLD_SIZE / PMI_SIZE), else sim; sim under a launcher
 *      of several ranks is refused (every rank would simulate it all);
 *   3. the spec (with a file, --shape / --dtype / --reduce override it)
 *      and its plan (the cost options choose the objective);
 *   4. the memory: devices x (src + dst + scratch) must fit --max-bytes;
 *      --shrink divides the dims (largest ratio to what the plan's types
 *      need first, by its smallest prime factor) until it does, and
 *      replays the same steps at that shape;
 *   5. under a launcher every rank agrees on all of the above (launch.c:
 *      a fingerprint of the options and of what was loaded and planned);
 *   6. the backend runs: every element of every device is checked
 *      against the exact pattern of src/testing/pattern.h.
 * Exit 0 exact, 1 mismatch, 2 bad input (or no plan, or too large).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define RUN_DEFAULT_MAX_BYTES (1ULL << 30)

enum { RUN_SIM, RUN_MPI, RUN_SHMEM };
static const char *const backends[] = {"sim", "mpi", "shmem", NULL};

typedef struct run_args {
    cli_spec_args spec;
    cli_cost_args cost;
    const char *backend, *shape, *dtype, *reduce; /* overrides of a file */
    uint64_t max_bytes, repeat, corrupt;
    int shrink, fused, preserve, which;
#ifdef REDIST_HAVE_MPI
    cli_mpi_args mpi;
#endif
#ifdef REDIST_HAVE_SHMEM
    cli_shmem_args shmem;
#endif
} run_args;

/* What run() holds, freed at its end. */
typedef struct run_state {
    redist_spec_t *spec;
    redist_plan_t *plan;
    redist_sim_t *world;
    redist_cost_model_t cost;
    int64_t orig[REDIST_MAX_DIMS];
} run_state;

/* -------------------------------------------------------------- options */

static int parse(const cli_command *self, run_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->max_bytes = RUN_DEFAULT_MAX_BYTES;
    a->repeat = 1;
    a->corrupt = UINT64_MAX;
    cli_opt t[16 + 2 * CLI_BACKEND_OPTS] = {
        {.name = "--backend", .kind = CLI_STR, .out = &a->backend},
        {.name = "--shrink", .kind = CLI_FLAG, .out = &a->shrink},
        {.name = "--fused", .kind = CLI_FLAG, .out = &a->fused},
        {.name = "--preserve-src", .kind = CLI_FLAG, .out = &a->preserve},
        {.name = "--max-bytes", .kind = CLI_BYTES, .out = &a->max_bytes},
        {.name = "--repeat", .kind = CLI_COUNT, .out = &a->repeat, .lo = 1,
         .hi = 1000000, .what = "a count"},
        {.name = "--corrupt-device", .kind = CLI_COUNT, .out = &a->corrupt,
         .hi = INT64_MAX, .what = "a device number"}};
    int n = 7;
#ifdef REDIST_HAVE_MPI
    n += cli_mpi_options(&a->mpi, t + n);
#endif
#ifdef REDIST_HAVE_SHMEM
    n += cli_shmem_options(&a->shmem, t + n);
#endif
    t[n].name = NULL;
    cli_cmdline c = {.cmd = self->name, .own = t, .spec = &a->spec,
                     .cost = &a->cost, .pos = &a->spec.path, .maxpos = 1,
                     .pos_words = "one SPEC"};
    if (cli_parse(&c, argc, argv))
        return CLI_BAD_INPUT;
    if (!cli_spec_given(&a->spec)) {
        fprintf(stderr, "redistplan: run: missing SPEC (a file, or '-' with "
                        "--mesh ...)\n");
        return CLI_BAD_INPUT;
    }
    if (a->spec.path && strcmp(a->spec.path, "-") != 0) {
        /* with a spec file, --shape / --dtype / --reduce are overrides */
        a->shape = a->spec.shape;
        a->dtype = a->spec.dtype;
        a->reduce = a->spec.reduce;
        a->spec.shape = a->spec.dtype = a->spec.reduce = NULL;
    }
    return CLI_OK;
}

/* 1 when the options of another backend than a->which were given. */
static int foreign_options(const run_args *a)
{
#ifdef REDIST_HAVE_SHMEM
    if (a->which != RUN_SHMEM && (a->shmem.flags || a->shmem.work_bytes ||
                                  a->shmem.private_buffers)) {
        fprintf(stderr, "redistplan: run: --shmem-packed, --shmem-no-ptr, "
                        "--shmem-private and --shmem-work need --backend "
                        "shmem\n");
        return 1;
    }
#endif
#ifdef REDIST_HAVE_MPI
    if (a->which != RUN_MPI && (a->mpi.flags || a->mpi.max_scratch)) {
        fprintf(stderr, "redistplan: run: --max-scratch, --mpi-packed and "
                        "--mpi-native-reduce need --backend mpi\n");
        return 1;
    }
#endif
    (void)a;
    return 0;
}

/* The backend (a->which): 0, or CLI_BAD_INPUT after the message. */
static int pick_backend(run_args *a)
{
    static const int built[] = {1,
#ifdef REDIST_HAVE_MPI
                                1,
#else
                                0,
#endif
#ifdef REDIST_HAVE_SHMEM
                                1};
#else
                                0};
#endif
    const char *b = a->backend;
    if (!b)
        b = cli_launch_size() >= 0 ? "mpi" : "sim";
    for (a->which = 0; backends[a->which]; a->which++)
        if (strcmp(b, backends[a->which]) == 0)
            break;
    if (foreign_options(a))
        return CLI_BAD_INPUT;
    if (!backends[a->which]) {
        char safe[128];
        cli_sanitize(b, safe, sizeof safe);
        fprintf(stderr, "redistplan: run: unknown backend \"%s\" (sim, mpi, "
                        "shmem)\n", safe);
        return CLI_BAD_INPUT;
    }
    long n = cli_launch_size();
    if (a->which == RUN_SIM && n > 1) {
        fprintf(stderr,
                "redistplan: run: --backend sim runs every device in one "
                "process, but a launcher started %ld ranks (each would run "
                "the whole simulation); run it without mpirun / oshrun, or "
                "use --backend mpi or shmem\n", n);
        return CLI_BAD_INPUT;
    }
    if (!built[a->which]) {
        fprintf(stderr,
                "redistplan: run: the %s backend is not built into this "
                "redistplan; use --backend sim%s\n", b,
                a->which == RUN_MPI ? " (mpi was chosen because an MPI "
                                      "launcher was detected or asked for)"
                                    : "");
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* ------------------------------------------------------ spec and plan */

/* A shape: positive dims separated by x or ',' (64x128); "" is the
 * shape of a 0-dim (scalar) array. */
static int parse_shape(const char *s, int64_t out[], int *n)
{
    *n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 1 || *n >= REDIST_MAX_DIMS)
            return -1;
        out[(*n)++] = v;
        if (*end == 'x' || *end == 'X' || *end == ',') {
            if (!*++end)
                return -1; /* a separator ends the shape */
        } else if (*end) {
            return -1;
        }
        s = end;
    }
    return 0;
}

/* Replace st->spec by the same spec at another shape / dtype / reduce. */
redist_status_t cli_spec_reshaped(const redist_spec_t *spec,
                                  const int64_t *shape, redist_dtype_t dtype,
                                  redist_reduce_t reduce, redist_spec_t **out,
                                  redist_error_t *err)
{
    const char *name = redist_spec_name(spec);
    redist_spec_t *s2 = NULL;
    redist_status_t rc;
    if (redist_spec_num_meshes(spec) == 2) {
        int64_t *dev[2] = {NULL, NULL};
        redist_placed_mesh_t pm[2];
        rc = REDIST_OK;
        for (int side = 0; side < 2 && !rc; side++) {
            const redist_mesh_t *m = redist_spec_side_mesh(spec, side);
            int64_t n = redist_mesh_num_devices(m);
            if (!(dev[side] = malloc((size_t)n * sizeof *dev[side])))
                rc = REDIST_ERR_NOMEM;
            for (int64_t r = 0; !rc && r < n; r++)
                dev[side][r] = redist_spec_mesh_device(spec, side, r);
            pm[side] = (redist_placed_mesh_t){
                redist_spec_mesh_name(spec, side), m, dev[side]};
        }
        if (!rc)
            rc = redist_spec_create_meshes(
                &pm[0], &pm[1], redist_spec_ndims(spec), shape, dtype,
                redist_spec_from(spec), redist_spec_to(spec), reduce,
                name[0] ? name : NULL, &s2, err);
        else
            redist_error_set(err, rc, NULL, NULL, "out of memory");
        free(dev[0]);
        free(dev[1]);
    } else
        rc = redist_spec_create(redist_spec_mesh(spec),
                                redist_spec_ndims(spec), shape, dtype,
                                redist_spec_from(spec), redist_spec_to(spec),
                                reduce, name[0] ? name : NULL, &s2, err);
    *out = s2;
    return rc;
}

static redist_status_t respec(run_state *st, const int64_t *shape,
                              redist_dtype_t dtype, redist_reduce_t reduce,
                              redist_error_t *err)
{
    redist_spec_t *s2 = NULL;
    redist_status_t rc =
        cli_spec_reshaped(st->spec, shape, dtype, reduce, &s2, err);
    if (rc == REDIST_OK) {
        redist_spec_free(st->spec);
        st->spec = s2;
    }
    return rc;
}

/* The spec with --shape / --dtype / --reduce applied (st->spec). */
static int load_spec(const run_args *a, run_state *st)
{
    redist_error_t err;
    redist_error_clear(&err);
    if (cli_load_spec(&a->spec, 0, &st->spec, &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    int nd = redist_spec_ndims(st->spec), n2;
    int64_t shape[REDIST_MAX_DIMS];
    memcpy(st->orig, redist_spec_shape(st->spec), sizeof(int64_t) * nd);
    memcpy(shape, st->orig, sizeof shape);
    redist_dtype_t dtype = redist_spec_dtype(st->spec);
    redist_reduce_t reduce = redist_spec_reduce(st->spec);
    if (a->dtype && redist_dtype_from_name(a->dtype, &dtype)) {
        fprintf(stderr, "redistplan: --dtype: unknown dtype \"%s\"\n",
                a->dtype);
        return CLI_BAD_INPUT;
    }
    if (a->reduce && redist_reduce_from_name(a->reduce, &reduce)) {
        fprintf(stderr, "redistplan: --reduce: unknown op \"%s\"\n",
                a->reduce);
        return CLI_BAD_INPUT;
    }
    if (a->shape && (parse_shape(a->shape, shape, &n2) || n2 != nd)) {
        if (nd == 0)
            fprintf(stderr, "redistplan: --shape: \"%s\" is not the shape of "
                            "a 0-dim array (\"\")\n", a->shape);
        else
            fprintf(stderr, "redistplan: --shape: \"%s\" is not a shape of "
                            "%d positive dims\n", a->shape, nd);
        return CLI_BAD_INPUT;
    }
    if ((a->shape || a->dtype || a->reduce) &&
        respec(st, shape, dtype, reduce, &err)) {
        cli_error_source(&err, a->spec.path);
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

static int plan_has_exchange(const redist_plan_t *plan)
{
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        if (redist_plan_step(plan, k, &v) == REDIST_OK &&
            v.op == REDIST_OP_EXCHANGE)
            return 1;
    }
    return 0;
}

static int make_plan(const run_args *a, run_state *st)
{
    redist_error_t err;
    redist_plan_options_t popts = {0};
    redist_error_clear(&err);
    if (cli_plan_options("run", &a->cost, redist_spec_mesh(st->spec),
                         &st->cost, &popts))
        return CLI_BAD_INPUT;
    if (redist_plan_create(st->spec, &popts, &st->plan, &err)) {
        cli_error_source(&err, a->spec.path);
        cli_print_error(&err);
        fprintf(stderr, "redistplan: run: no plan to execute\n");
        return CLI_BAD_INPUT;
    }
    if (a->which == RUN_SHMEM && a->cost.objective < 0 &&
        plan_has_exchange(st->plan)) {
        /* The OpenSHMEM backend runs no exchange step: without an explicit
         * --objective it runs the bytes objective's plan (every PE makes
         * the same choice: planning is a pure function of the spec). */
        redist_plan_free(st->plan);
        st->plan = NULL;
        popts.objective = REDIST_OBJECTIVE_BYTES;
        if (redist_plan_create(st->spec, &popts, &st->plan, &err)) {
            cli_error_source(&err, a->spec.path);
            cli_print_error(&err);
            fprintf(stderr, "redistplan: run: no plan to execute\n");
            return CLI_BAD_INPUT;
        }
        if (cli_env_long("OMPI_COMM_WORLD_RANK", "PMI_RANK") <= 0)
            fprintf(stderr, "redistplan: run: the time objective's plan has "
                            "an exchange step, which the shmem backend does "
                            "not run: running the bytes objective's plan\n");
    }
    return CLI_OK;
}

/* ------------------------------------------------------------ memory */

/* The plan's steps replayed on st->spec (same mesh, types), with its
 * cost model: the same modelled times and transfer senders. */
static redist_status_t replan(run_state *st, redist_error_t *err)
{
    redist_plan_t *p2 = NULL;
    redist_status_t rc = redist_plan_replay(st->plan, st->spec, &p2, err);
    if (rc == REDIST_OK) {
        redist_plan_free(st->plan);
        st->plan = p2;
    }
    return rc;
}

static uint64_t sim_bytes(const redist_plan_t *plan,
                          const redist_backend_t *be,
                          const redist_exec_options_t *opts)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t d = (uint64_t)redist_spec_num_devices(s);
    uint64_t per = redist_spec_src_bytes(s) + redist_spec_dst_bytes(s) +
                   redist_plan_scratch_bytes(plan, be, opts);
    unsigned __int128 t = (unsigned __int128)d * per;
    return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

/* Fit the run under --max-bytes (with --shrink: at a smaller shape). */
static int fit(const run_args *a, run_state *st,
               const redist_exec_options_t *opts)
{
    redist_backend_t *be0 = st->world ? redist_sim_backend(st->world, 0)
                                      : NULL;
    uint64_t need = sim_bytes(st->plan, be0, opts);
    int nd = redist_spec_ndims(st->spec);
    if (need > a->max_bytes && a->shrink) {
        int64_t shape[REDIST_MAX_DIMS];
        redist_error_t err;
        redist_error_clear(&err);
        memcpy(shape, redist_spec_shape(st->spec), sizeof(int64_t) * nd);
        unsigned __int128 total = need;
        while (total > a->max_bytes) {
            int64_t f = redist_plan_shrink_shape(st->plan, shape);
            if (f <= 1)
                break;
            total /= (uint64_t)f; /* every size scales with the shape */
        }
        if (respec(st, shape, redist_spec_dtype(st->spec),
                   redist_spec_reduce(st->spec), &err) ||
            replan(st, &err)) {
            cli_print_error(&err);
            return CLI_BAD_INPUT;
        }
        need = sim_bytes(st->plan, be0, opts);
    }
    if (need <= a->max_bytes)
        return CLI_OK;
    char b1[64], b2[64];
    int64_t D = redist_spec_num_devices(st->spec);
    cli_fmt_bytes(need, b1, sizeof b1);
    cli_fmt_bytes(a->max_bytes, b2, sizeof b2);
    if (a->which == RUN_SIM)
        fprintf(stderr, "redistplan: run: simulating this spec takes %s in "
                        "this process (%lld devices x (src + dst + "
                        "scratch)), over --max-bytes %s",
                b1, (long long)D, b2);
    else
        fprintf(stderr, "redistplan: run: this spec takes %s over all %lld "
                        "%s together (each: src + dst + scratch), over "
                        "--max-bytes %s, which bounds that total",
                b1, (long long)D, a->which == RUN_SHMEM ? "PEs" : "MPI ranks",
                b2);
    fprintf(stderr, "; use --shrink, --shape or a larger --max-bytes\n");
    return CLI_BAD_INPUT;
}

/* The devices: --corrupt-device in range; the sim's world. */
static int devices(const run_args *a, run_state *st)
{
    int64_t D = redist_spec_num_devices(st->spec);
    redist_error_t err;
    redist_error_clear(&err);
    if (a->corrupt != UINT64_MAX && a->corrupt >= (uint64_t)D) {
        fprintf(stderr, "redistplan: --corrupt-device: device %llu is not in "
                        "the mesh (%lld devices: 0 to %lld)\n",
                (unsigned long long)a->corrupt, (long long)D,
                (long long)(D - 1));
        return CLI_BAD_INPUT;
    }
    if (a->which != RUN_SIM)
        return CLI_OK;
    if (D > REDIST_SIM_MAX_DEVICES) {
        fprintf(stderr, "redistplan: run: the mesh has %lld devices; the sim "
                        "backend runs at most %d\n",
                (long long)D, REDIST_SIM_MAX_DEVICES);
        return CLI_BAD_INPUT;
    }
    if (redist_sim_create(D, a->fused ? REDIST_SIM_FUSED : 0, &st->world,
                          &err)) {
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* ---------------------------------------------------------- agreement */

/* The planning options into the fingerprint: objective, sums, links and
 * the cost model c (NULL: none), whatever its source. */
static void fingerprint_cost(const run_args *a, const redist_cost_model_t *c,
                             cli_fp *fp)
{
    cli_fp_add(fp, "--objective", "%s",
               a->cost.objective == REDIST_OBJECTIVE_BYTES ? "bytes" : "time");
    cli_fp_add(fp, "--no-cross-sums", "%s",
               a->cost.no_cross_sums ? "on" : "off");
    const char *opt[5] = {"--axis-links", "--xml", "--synthetic",
                          "--rank-map", "--mesh-link"};
    const char *val[5] = {a->cost.axis_links, a->cost.topo.xml,
                          a->cost.topo.synthetic, a->cost.topo.rank_map,
                          a->cost.mesh_link};
    for (int k = 0; k < 5; k++)
        cli_fp_add(fp, opt[k], "%s", val[k] ? val[k] : "-");
    uint64_t ch = 0;
    if (c && cli_cost_given(&a->cost)) { /* the model, whatever its source */
        ch = cli_fp_hash(1, c->alpha, sizeof c->alpha);
        ch = cli_fp_hash(ch, c->beta, sizeof c->beta);
        ch = cli_fp_hash(ch, &c->gamma, sizeof c->gamma);
        ch = cli_fp_hash(ch, c->axis_link, sizeof c->axis_link);
        ch = cli_fp_hash(ch, &c->mesh_link, sizeof c->mesh_link);
    }
    cli_fp_add(fp, "--cost", "%s [%016llx]",
               a->cost.file ? a->cost.file : "-", (unsigned long long)ch);
}

/* Every option and what was loaded and planned (launch.h). */
static void fingerprint(const run_args *a, const run_state *st,
                        const cli_run *r, cli_fp *fp)
{
    cli_fp_init(fp, "run", 0);
    cli_fp_add(fp, "the backend", "%s", backends[a->which]);
    cli_fp_plan(fp, st->plan, st->orig);
    cli_fp_add(fp, "--shrink", "%s", a->shrink ? "on" : "off");
    cli_fp_add(fp, "--max-bytes", "%llu", (unsigned long long)a->max_bytes);
    cli_fp_add(fp, "--preserve-src", "%s", a->preserve ? "on" : "off");
    cli_fp_add(fp, "--fused", "%s", a->fused ? "on" : "off");
    cli_fp_add(fp, "--repeat", "%llu", (unsigned long long)a->repeat);
    cli_fp_add(fp, "--corrupt-device", "%lld", (long long)r->corrupt);
    fingerprint_cost(a, &st->cost, fp);
#ifdef REDIST_HAVE_MPI
    if (a->which == RUN_MPI)
        cli_mpi_fingerprint(&a->mpi, fp);
#endif
#ifdef REDIST_HAVE_SHMEM
    if (a->which == RUN_SHMEM)
        cli_shmem_fingerprint(&a->shmem, st->plan, fp);
#endif
}

/* --------------------------------------------------------------- hosts */

/* Under mpirun, after the agreement, with the time objective and no
 * axis links or topology given: the mesh axes whose groups span hosts
 * (discovered at run time, cli_mpi_spec_host_links) go on the network level
 * of the model (the built-in one, or the --cost file's), and the spec is
 * planned again at the shape run.  The new plan replaces the agreed one
 * when it fits --max-bytes (with --shrink, it is shrunk further when it
 * needs more scratch); every rank decides alike (the host map is agreed,
 * planning is a pure function of it), and the backend agrees on the plan
 * before it runs.  A two-mesh spec: the source mesh's axes, and the
 * link between the meshes when a device off the source mesh is on
 * another host than one on it.  One host: unchanged.
 * Collective; 0, or CLI_BAD_INPUT on every rank. */
static int rehost(const run_args *a, run_state *st, cli_run *r)
{
#ifdef REDIST_HAVE_MPI
    if (a->which != RUN_MPI || a->cost.objective == REDIST_OBJECTIVE_BYTES ||
        cli_links_given(&a->cost))
        return CLI_OK;
    char axes[512], map[512];
    int64_t nhosts = 0;
    int rank = (int)cli_launch_rank();
    int n = cli_mpi_spec_host_links(st->spec, NULL, &st->cost, &nhosts, axes,
                                    sizeof axes, map, sizeof map);
    if (n < 0)
        return CLI_BAD_INPUT;
    if (n == 0)
        return CLI_OK;
    redist_plan_options_t o = {.objective = REDIST_OBJECTIVE_TIME,
                               .cost = &st->cost};
    redist_plan_t *p = NULL;
    redist_error_t err = REDIST_ERROR_INIT;
    const char *kept = NULL;
    if (redist_plan_create(st->spec, &o, &p, &err))
        kept = "no plan under the network level";
    else if (!a->shrink && sim_bytes(p, NULL, &r->opts) > a->max_bytes)
        kept = "the new plan does not fit --max-bytes";
    if (rank <= 0)
        printf("hosts     %lld discovered, host of each rank: %s\n"
               "  network   axes across hosts: %s; %s%s%s\n",
               (long long)nhosts, map, axes,
               kept ? "kept the agreed plan (" : "planned again",
               kept ? kept : "", kept ? ")" : "");
    if (kept) {
        redist_plan_free(p);
        return CLI_OK;
    }
    redist_plan_free(st->plan);
    st->plan = p;
    /* with --shrink, a plan that needs more scratch runs smaller */
    int rc = fit(a, st, &r->opts);
    r->plan = st->plan;
    return rc;
#else
    (void)a;
    (void)st;
    (void)r;
#endif
    return CLI_OK;
}

/* ------------------------------------------------------------ command */

/* A set under a launcher (mpi or shmem): planned on every rank without
 * an endpoint (with --preserve-src's execution options), the ranks agreed
 * on the spec, the plans and the options (launch.c), then run
 * (run_set_launched.c through run_mpi.c or run_shmem.c). */
static int run_arrays_launched(const run_args *a, const char *path,
                               const redist_arrays_t *arrays,
                               const redist_plan_options_t *opts)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_plan_set_t *set = NULL;
    redist_exec_options_t eo = {0};
    if (a->preserve)
        eo.flags |= REDIST_EXEC_PRESERVE_SRC;
    if (redist_plan_set_create(arrays, opts, NULL, &eo, &set, &err)) {
        cli_error_source(&err, path);
        cli_print_error(&err);
        return CLI_BAD_INPUT;
    }
    /* a failure here is the same on every rank (the same spec and
     * options): they all stop before the agreement */
    redist_arrays_t *shrunk = NULL;
    if (a->shrink &&
        cli_set_shrink(path, arrays, a->max_bytes, &set, &shrunk)) {
        redist_plan_set_free(set);
        redist_arrays_free(shrunk);
        return CLI_BAD_INPUT;
    }
    cli_fp fp;
    cli_fp_init(&fp, "run", 0);
    cli_fp_add(&fp, "the backend", "%s", backends[a->which]);
    cli_fp_add(&fp, "the spec", "%s", path);
    uint64_t h = 1;
    for (int i = 0; i < redist_plan_set_num_arrays(set); i++) {
        char *j = redist_plan_to_json(redist_plan_set_plan(set, i));
        h = j ? cli_fp_hash(h, j, strlen(j)) : h;
        free(j);
    }
    cli_fp_add(&fp, "the plans", "%d arrays, %d rounds [%016llx]",
               redist_plan_set_num_arrays(set),
               redist_plan_set_num_rounds(set), (unsigned long long)h);
    fingerprint_cost(a, opts ? opts->cost : NULL, &fp);
    cli_fp_add(&fp, "--preserve-src", "%s", a->preserve ? "on" : "off");
    cli_fp_add(&fp, "--repeat", "%llu", (unsigned long long)a->repeat);
    cli_fp_add(&fp, "--shrink", "%s", a->shrink ? "on" : "off");
    cli_fp_add(&fp, "--max-bytes", "%llu", (unsigned long long)a->max_bytes);
    cli_set_run r = {.arrays = shrunk ? shrunk : arrays, .popts = opts,
                     .set = set, .shrunk = shrunk != NULL, .orig = arrays,
                     .name = redist_arrays_name(arrays)[0]
                                 ? redist_arrays_name(arrays)
                                 : path,
                     .repeat = a->repeat, .preserve = a->preserve,
                     .rehost = a->which == RUN_MPI && !shrunk &&
                               a->cost.objective != REDIST_OBJECTIVE_BYTES &&
                               !cli_links_given(&a->cost)};
    int rc = CLI_BAD_INPUT;
#ifdef REDIST_HAVE_MPI
    if (a->which == RUN_MPI) {
        cli_mpi_fingerprint(&a->mpi, &fp);
        if (!(rc = cli_launch_agree(&fp, 0)))
            rc = cli_mpi_run_set(&a->mpi, &r);
    }
#endif
#ifdef REDIST_HAVE_SHMEM
    if (a->which == RUN_SHMEM) {
        cli_shmem_set_fingerprint(&a->shmem, set, &fp);
        if (!(rc = cli_launch_agree(&fp, 1)))
            rc = cli_shmem_run_set(&a->shmem, &r);
    }
#endif
    (void)r;
    redist_plan_set_free(set);
    redist_arrays_free(shrunk);
    return rc;
}

/* A spec file with "arrays" (run_set.c): the exit code; -1 for a spec
 * of one array. */
static int run_arrays(const cli_command *self, const run_args *a)
{
    const char *path = a->spec.path;
    if (!path || strcmp(path, "-") == 0)
        return -1;
    redist_error_t err = REDIST_ERROR_INIT;
    redist_arrays_t *arrays = NULL;
    if (redist_arrays_load_file(path, 0, &arrays, &err)) {
        redist_arrays_free(arrays);
        return -1; /* load_spec says why */
    }
    int rc = -1;
    if (redist_arrays_is_set(arrays)) {
        redist_plan_options_t opts = {0};
        redist_cost_model_t cost;
        cli_cost_args ca = a->cost;
        if (a->shape || a->dtype || a->reduce || a->corrupt != UINT64_MAX ||
            a->fused) {
            fprintf(stderr, "redistplan: run: %s holds many arrays: "
                            "--shape, --dtype, --reduce, --fused and "
                            "--corrupt-device apply to one array only; "
                            "--shrink runs a smaller copy of the set\n",
                    path);
            rc = CLI_BAD_INPUT;
        } else if (cli_plan_options(self->name, &ca,
                                    redist_spec_mesh(
                                        redist_arrays_get(arrays, 0)),
                                    &cost, &opts)) {
            rc = CLI_BAD_INPUT;
        } else if (a->which == RUN_SIM) {
            rc = cli_run_set(path, arrays, &opts, a->max_bytes, a->preserve,
                             a->shrink, a->repeat);
        } else {
            rc = run_arrays_launched(a, path, arrays, &opts);
        }
    }
    redist_arrays_free(arrays);
    return rc;
}

static int run(const cli_command *self, int argc, char **argv)
{
    run_args a;
    run_state st;
    cli_fp fp;
    memset(&st, 0, sizeof st);
    int rc = parse(self, &a, argc, argv);
    if (rc == CLI_OK)
        rc = pick_backend(&a);
    if (rc != CLI_OK)
        return rc;
    cli_run r = {.orig = st.orig, .shrink = a.shrink, .fused = a.fused,
                 .repeat = a.repeat,
                 .corrupt = a.corrupt == UINT64_MAX ? -1
                                                    : (int64_t)a.corrupt};
    if (a.preserve)
        r.opts.flags |= REDIST_EXEC_PRESERVE_SRC;
    if ((rc = run_arrays(self, &a)) != -1)
        return rc;
    if ((rc = load_spec(&a, &st)) || (rc = make_plan(&a, &st)) ||
        (rc = devices(&a, &st)) || (rc = fit(&a, &st, &r.opts)))
        goto out;
    r.plan = st.plan;
    fingerprint(&a, &st, &r, &fp);
    if ((rc = cli_launch_agree(&fp, a.which == RUN_SHMEM)) != 0 ||
        (rc = rehost(&a, &st, &r)) != 0)
        goto out;
    switch (a.which) {
#ifdef REDIST_HAVE_MPI
    case RUN_MPI: /* every rank runs its own device (run_mpi.c) */
        rc = cli_mpi_run(&a.mpi, &r);
        break;
#endif
#ifdef REDIST_HAVE_SHMEM
    case RUN_SHMEM: /* every PE runs its own device (run_shmem.c) */
        rc = cli_shmem_run(&a.shmem, &r);
        break;
#endif
    default:
        rc = cli_sim_run(&r, st.world);
    }
out:
    redist_sim_free(st.world);
    redist_plan_free(st.plan);
    redist_spec_free(st.spec);
    return rc;
}

/* Under a launcher, a rank that fails before the agreement still joins
 * it (launch.c): every rank learns why, nobody waits. */
int cli_cmd_run(const cli_command *self, int argc, char **argv)
{
    cli_launch_begin(self->name);
    return cli_launch_end(run(self, argc, argv));
}
