/*
 * Commands beyond the planner: `redistplan run`, and the dispatch of `topo`
 * (topo.c) and `calibrate` (calibrate.c; built with MPI and hwloc).
 *
 *   redistplan run SPEC [--backend sim|mpi|shmem] [--shrink] [--shape S]
 *                  [--max-bytes B] [--dtype T] [--reduce OP]
 *                  [--preserve-src] [--fused] [--repeat N]
 *
 * Fills every source block with the exact pattern of src/testing/pattern.h
 * (each value identifies its global index; partial axes hold
 * contributions whose reduction is exact), executes the plan, checks
 * every element of every device, and reports time and the measured
 * scratch high-water mark.  Exit 0 exact, 1 mismatch, 2 bad input (or no
 * plan, or too large to simulate).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../core/internal.h"
#include "../testing/pattern.h"
#include "../plan/plan_internal.h"
#include "launch.h"
#include "run_report.h"
#ifdef REDIST_HAVE_MPI
#include "run_mpi.h"
#endif
#ifdef REDIST_HAVE_SHMEM
#include "run_shmem.h"
#define RD_CLI_SHMEM_CHOSEN(b) (strcmp((b), "shmem") == 0)
#else
#define RD_CLI_SHMEM_CHOSEN(b) 0
#endif

#define RUN_DEFAULT_MAX_BYTES (1ULL << 30)

static const char *run_usage =
    "  run SPEC [--backend sim|mpi|shmem] [--shrink] [--shape 64x128]\n"
    "           [--max-bytes BYTES|64M|1G] [--dtype T] [--reduce OP]\n"
    "           [--preserve-src] [--fused] [--repeat N] "
    "[--corrupt-device R]\n"
    "           [--objective time|bytes] [--cost FILE] [--axis-links "
    "AXIS=LEVEL,...]\n"
    "      execute the plan on exact data, check every element of every\n"
    "      device; report time and the scratch high-water mark.  sim is "
    "the\n"
    "      default backend unless an MPI launcher is detected\n"
    "      (OMPI_COMM_WORLD_SIZE / PMI_SIZE).  The simulated memory,\n"
    "      devices x (src + dst + scratch), must stay under --max-bytes\n"
    "      (default 1 GiB): --shrink divides the dims (largest ratio first,\n"
    "      by their smallest prime factors) until it does, keeping every "
    "type\n"
    "      of the plan divisible, and runs the same steps at that shape;\n"
    "      --shape, --dtype and --reduce override the spec's.\n"
    "      --preserve-src: never write the source (more scratch); --fused:\n"
    "      sim runs whole steps into final places; --repeat N: best of N;\n"
    "      --corrupt-device R: flip bits of device R's last result element\n"
    "      before the check (to test the checker: exit 1).\n"
    "      --objective, --cost, --axis-links: which plan runs (as `plan`:\n"
    "      the time objective by default, which may use the exchange step).\n"
    "      mpi backend (under mpirun -np DEVICES, one rank per device):\n"
    "      --max-scratch BYTES|64K bounds the scratch per rank\n"
    "      (reductions run in rounds); --mpi-packed,\n"
    "      --mpi-native-reduce: doc/mpi.md.\n"
    "      shmem backend (under oshrun -np DEVICES, one PE per device):\n"
    "      --shmem-packed, --shmem-no-ptr, --shmem-private, --shmem-work\n"
    "      BYTES: doc/shmem.md.\n";

void cli_register_extensions(void) { cli_set_extra_usage(run_usage); }

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

/* Rebuild spec with another shape / dtype / reduce. */
static redist_status_t respec(const redist_spec_t *spec, const int64_t *shape,
                              redist_dtype_t dtype, redist_reduce_t reduce,
                              redist_spec_t **out, redist_error_t *err)
{
    const char *name = redist_spec_name(spec);
    return redist_spec_create(redist_spec_mesh(spec), redist_spec_ndims(spec),
                              shape, dtype, redist_spec_from(spec),
                              redist_spec_to(spec), reduce,
                              name[0] ? name : NULL, out, err);
}

/* The plan's steps replayed on another spec (same mesh, types). */
static redist_status_t replan(const redist_plan_t *plan,
                              const redist_spec_t *spec,
                              redist_plan_t **out, redist_error_t *err)
{
    int n = redist_plan_num_steps(plan);
    redist_step_view_t *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) {
        err->status = REDIST_ERR_NOMEM;
        snprintf(err->text, sizeof err->text, "out of memory");
        return REDIST_ERR_NOMEM;
    }
    for (int k = 0; k < n; k++)
        redist_plan_step(plan, k, &v[k]);
    redist_status_t st = redist_plan_from_steps(spec, n, v, out, err);
    free(v);
    return st;
}

static uint64_t sim_bytes(const redist_plan_t *plan,
                          const redist_backend_t *be,
                          const redist_exec_options_t *opts)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t d = (uint64_t)redist_mesh_num_devices(redist_spec_mesh(s));
    uint64_t per = redist_spec_src_bytes(s) + redist_spec_dst_bytes(s) +
                   redist_plan_scratch_bytes(plan, be, opts);
    unsigned __int128 t = (unsigned __int128)d * per;
    return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
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

static int run_cmd(int argc, char **argv)
{
    cli_spec_args sa;
    const char *backend = NULL, *shape_arg = NULL;
    uint64_t max_bytes = RUN_DEFAULT_MAX_BYTES, repeat = 1;
    int shrink = 0, fused = 0;
    int64_t corrupt = -1;
    redist_exec_options_t opts = {0};
    redist_plan_options_t popts = {0}; /* --objective, --cost, --axis-links */
    int objective_given = 0;
    redist_cost_model_t cost;
    const char *cost_file = NULL, *axis_links = NULL;
#ifdef REDIST_HAVE_MPI
    cli_mpi_args mpi_args = {0, 0, 0};
    int mpi = 0;
#endif
#ifdef REDIST_HAVE_SHMEM
    cli_shmem_args shmem_args = {0, 0, 0, 0};
#endif
    memset(&sa, 0, sizeof sa);
    for (int i = 2; i < argc; i++) {
        int r = cli_spec_option(&sa, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
#ifdef REDIST_HAVE_MPI
        if ((r = cli_mpi_option(&mpi_args, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
            continue;
        }
#endif
#ifdef REDIST_HAVE_SHMEM
        if ((r = cli_shmem_option(&shmem_args, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
            continue;
        }
#endif
        const char *a = argv[i];
        if (strcmp(a, "--backend") == 0 && i + 1 < argc)
            backend = argv[++i];
        else if (strncmp(a, "--backend=", 10) == 0)
            backend = a + 10;
        else if (strcmp(a, "--shrink") == 0)
            shrink = 1;
        else if (strcmp(a, "--fused") == 0)
            fused = 1;
        else if (strcmp(a, "--objective") == 0 && i + 1 < argc) {
            if (cli_objective_option(argv[++i], &popts.objective))
                return 2;
            objective_given = 1;
        } else if (strcmp(a, "--cost") == 0 && i + 1 < argc)
            cost_file = argv[++i];
        else if (strcmp(a, "--axis-links") == 0 && i + 1 < argc)
            axis_links = argv[++i];
        else if (strcmp(a, "--corrupt-device") == 0 && i + 1 < argc) {
            uint64_t v;
            if (cli_parse_u64(argv[++i], &v) || v > INT64_MAX) {
                fprintf(stderr, "redistplan: --corrupt-device: not a device "
                                "number (0, 1, ...): %s\n", argv[i]);
                return 2;
            }
            corrupt = (int64_t)v;
        } else if (strcmp(a, "--preserve-src") == 0)
            opts.flags |= REDIST_EXEC_PRESERVE_SRC;
        else if (strcmp(a, "--max-bytes") == 0 && i + 1 < argc) {
            if (cli_parse_size(argv[++i], &max_bytes)) {
                fprintf(stderr, "redistplan: --max-bytes: not a byte count: "
                                "%s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--repeat") == 0 && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &repeat) || repeat < 1 ||
                repeat > 1000000) {
                fprintf(stderr, "redistplan: --repeat: not a count (1.."
                                "1000000): %s\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "redistplan: run: unknown option %s (or missing "
                            "value)\n", a);
            return 2;
        } else if (!sa.path)
            sa.path = a;
        else {
            fprintf(stderr, "redistplan: run takes one spec\n");
            return 2;
        }
    }
    if (!sa.path && !sa.mesh) {
        fprintf(stderr, "redistplan: run: missing SPEC (a file, or '-' with "
                        "--mesh ...)\n");
        return 2;
    }
    if (!backend)
        backend = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE")
                      ? "mpi"
                      : "sim";
#ifdef REDIST_HAVE_SHMEM
    if (!RD_CLI_SHMEM_CHOSEN(backend) && shmem_args.given) {
        fprintf(stderr, "redistplan: run: --shmem-packed, --shmem-no-ptr, "
                        "--shmem-private and --shmem-work need --backend "
                        "shmem\n");
        return 2;
    }
#endif
#ifdef REDIST_HAVE_MPI
    mpi = strcmp(backend, "mpi") == 0;
    if (!mpi && mpi_args.given) {
        fprintf(stderr, "redistplan: run: --max-scratch, --mpi-packed and "
                        "--mpi-native-reduce need --backend mpi\n");
        return 2;
    }
    if (strcmp(backend, "sim") != 0 && !mpi &&
        !RD_CLI_SHMEM_CHOSEN(backend)) {
#else
    if (strcmp(backend, "sim") != 0 && !RD_CLI_SHMEM_CHOSEN(backend)) {
#endif
        if (strcmp(backend, "mpi") == 0 || strcmp(backend, "shmem") == 0)
            fprintf(stderr,
                    "redistplan: run: the %s backend is not built into this "
                    "redistplan; use --backend sim%s\n",
                    backend,
                    strcmp(backend, "mpi") == 0
                        ? " (mpi was chosen because an MPI launcher was "
                          "detected or asked for)"
                        : "");
        else
            fprintf(stderr, "redistplan: run: unknown backend \"%s\" "
                            "(sim, mpi, shmem)\n", backend);
        return 2;
    }

    int sim = strcmp(backend, "sim") == 0;

    /* with a spec file, --shape / --dtype / --reduce are overrides */
    int file = sa.path && strcmp(sa.path, "-") != 0;
    const char *dtype_arg = NULL, *reduce_arg = NULL;
    if (file) {
        shape_arg = sa.shape;
        dtype_arg = sa.dtype;
        reduce_arg = sa.reduce;
        sa.shape = sa.dtype = sa.reduce = NULL;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_spec_t *spec = NULL, *spec2 = NULL;
    redist_plan_t *plan = NULL, *plan2 = NULL;
    void **src = NULL, **dst = NULL;
    redist_sim_t *world = NULL;
    redist_backend_t *be0 = NULL;
    int64_t D = 0;
    int rc = 2;
    if (cli_load_spec(&sa, 0, &spec, &err)) {
        cli_print_error(&err);
        return 2;
    }
    int nd = redist_spec_ndims(spec);
    int64_t shape[REDIST_MAX_DIMS], orig[REDIST_MAX_DIMS];
    memcpy(orig, redist_spec_shape(spec), sizeof(int64_t) * (size_t)nd);
    memcpy(shape, orig, sizeof shape);
    redist_dtype_t dtype = redist_spec_dtype(spec);
    redist_reduce_t reduce = redist_spec_reduce(spec);
    if (dtype_arg && redist_dtype_from_name(dtype_arg, &dtype)) {
        fprintf(stderr, "redistplan: --dtype: unknown dtype \"%s\"\n",
                dtype_arg);
        goto out;
    }
    if (reduce_arg && redist_reduce_from_name(reduce_arg, &reduce)) {
        fprintf(stderr, "redistplan: --reduce: unknown op \"%s\"\n",
                reduce_arg);
        goto out;
    }
    if (shape_arg) {
        int n2;
        if (parse_shape(shape_arg, shape, &n2) || n2 != nd) {
            if (nd == 0)
                fprintf(stderr, "redistplan: --shape: \"%s\" is not the "
                                "shape of a 0-dim array (\"\")\n",
                        shape_arg);
            else
                fprintf(stderr, "redistplan: --shape: \"%s\" is not a "
                                "shape of %d positive dims\n",
                        shape_arg, nd);
            goto out;
        }
    }
    if (shape_arg || dtype_arg || reduce_arg) {
        if (respec(spec, shape, dtype, reduce, &spec2, &err)) {
            rd_cli_source(&err, sa.path);
            cli_print_error(&err);
            goto out;
        }
        redist_spec_free(spec);
        spec = spec2;
        spec2 = NULL;
    }
    if (cost_file || axis_links ||
        popts.objective == REDIST_OBJECTIVE_TIME) {
        redist_cost_model_default(&cost);
        if ((cost_file &&
             redist_cost_model_load_file(cost_file, &cost, &err)) ||
            (axis_links &&
             redist_cost_model_set_axis_links(&cost, redist_spec_mesh(spec),
                                              axis_links, &err))) {
            cli_print_error(&err);
            goto out;
        }
        popts.cost = &cost;
    }
    if (redist_plan_create(spec, &popts, &plan, &err)) {
        rd_cli_source(&err, sa.path);
        cli_print_error(&err);
        fprintf(stderr, "redistplan: run: no plan to execute\n");
        goto out;
    }
    if (RD_CLI_SHMEM_CHOSEN(backend) && !objective_given &&
        plan_has_exchange(plan)) {
        /* The OpenSHMEM backend runs no exchange step: without an explicit
         * --objective it runs the bytes objective's plan (every PE makes
         * the same choice: planning is a pure function of the spec). */
        redist_plan_free(plan);
        plan = NULL;
        popts.objective = REDIST_OBJECTIVE_BYTES;
        if (redist_plan_create(spec, &popts, &plan, &err)) {
            rd_cli_source(&err, sa.path);
            cli_print_error(&err);
            fprintf(stderr, "redistplan: run: no plan to execute\n");
            goto out;
        }
        if (cli_env_long("OMPI_COMM_WORLD_RANK", "PMI_RANK") <= 0)
            fprintf(stderr, "redistplan: run: the time objective's plan has "
                            "an exchange step, which the shmem backend does "
                            "not run: running the bytes objective's plan\n");
    }
    D = redist_mesh_num_devices(redist_spec_mesh(spec));
    if (corrupt >= D) {
        fprintf(stderr, "redistplan: --corrupt-device: device %lld is not in "
                        "the mesh (%lld devices: 0 to %lld)\n",
                (long long)corrupt, (long long)D, (long long)(D - 1));
        goto out;
    }
    /* mpi and shmem: each rank is one device; the sim holds them all */
    const char *unit = sim                           ? "devices"
                       : RD_CLI_SHMEM_CHOSEN(backend) ? "PEs"
                                                      : "MPI ranks";
    if (sim && D > REDIST_SIM_MAX_DEVICES) {
        fprintf(stderr, "redistplan: run: the mesh has %lld devices; the sim "
                        "backend runs at most %d\n",
                (long long)D, REDIST_SIM_MAX_DEVICES);
        goto out;
    }
    if (sim) {
        if (redist_sim_create(D, fused ? REDIST_SIM_FUSED : 0, &world,
                              &err)) {
            cli_print_error(&err);
            goto out;
        }
        be0 = redist_sim_backend(world, 0);
    }
    uint64_t need = sim_bytes(plan, be0, &opts);
    if (need > max_bytes && shrink) {
        int64_t q[REDIST_MAX_DIMS];
        rd_plan_path_multiples(plan, q);
        unsigned __int128 total = need;
        while (total > max_bytes) {
            int64_t f = rd_shrink_step(shape, q, nd);
            if (f == 1)
                break;
            total /= (uint64_t)f; /* every size scales with the shape */
        }
        if (respec(spec, shape, dtype, reduce, &spec2, &err) ||
            replan(plan, spec2, &plan2, &err)) {
            cli_print_error(&err);
            goto out;
        }
        redist_plan_free(plan);
        redist_spec_free(spec);
        plan = plan2;
        spec = spec2;
        plan2 = NULL;
        spec2 = NULL;
        need = sim_bytes(plan, be0, &opts);
    }
    char b1[64], b2[64], b3[64];
    if (need > max_bytes) {
        cli_fmt_bytes(need, b1, sizeof b1);
        cli_fmt_bytes(max_bytes, b2, sizeof b2);
        if (sim)
            fprintf(stderr, "redistplan: run: simulating this spec takes %s "
                            "in this process (%lld devices x (src + dst + "
                            "scratch)), over --max-bytes %s",
                    b1, (long long)D, b2);
        else
            fprintf(stderr, "redistplan: run: this spec takes %s over all "
                            "%lld %s together (each: src + dst + scratch), "
                            "over --max-bytes %s, which bounds that total",
                    b1, (long long)D, unit, b2);
        fprintf(stderr, "; use --shrink, --shape or a larger --max-bytes\n");
        goto out;
    }
    /* under a launcher, every rank agrees on all of it first (launch.c) */
    cli_fp fp = {0};
    cli_fp_add(&fp, "the backend", "%s", backend);
    cli_fp_plan(&fp, plan, orig);
    cli_fp_add(&fp, "--shrink", "%s", shrink ? "on" : "off");
    cli_fp_add(&fp, "--max-bytes", "%llu", (unsigned long long)max_bytes);
    cli_fp_add(&fp, "--preserve-src", "%s",
               opts.flags & REDIST_EXEC_PRESERVE_SRC ? "on" : "off");
    cli_fp_add(&fp, "--fused", "%s", fused ? "on" : "off");
    cli_fp_add(&fp, "--repeat", "%llu", (unsigned long long)repeat);
    cli_fp_add(&fp, "--corrupt-device", "%lld", (long long)corrupt);
    cli_fp_add(&fp, "--objective", "%s", cli_objective_name(popts.objective));
    uint64_t ch = 0;
    if (popts.cost) { /* the model, whatever file it came from */
        ch = cli_fp_hash(1, cost.alpha, sizeof cost.alpha);
        ch = cli_fp_hash(ch, cost.beta, sizeof cost.beta);
        ch = cli_fp_hash(ch, &cost.gamma, sizeof cost.gamma);
        ch = cli_fp_hash(ch, cost.axis_link, sizeof cost.axis_link);
    }
    cli_fp_add(&fp, "--cost", "%s [%016llx]", cost_file ? cost_file : "-",
               (unsigned long long)ch);
    cli_fp_add(&fp, "--axis-links", "%s", axis_links ? axis_links : "-");
#ifdef REDIST_HAVE_MPI
    if (mpi)
        cli_mpi_fingerprint(&mpi_args, &fp);
#endif
#ifdef REDIST_HAVE_SHMEM
    if (RD_CLI_SHMEM_CHOSEN(backend))
        cli_shmem_fingerprint(&shmem_args, plan, &fp);
#endif
    if ((rc = cli_launch_agree(&fp, RD_CLI_SHMEM_CHOSEN(backend))) != 0)
        goto out;
    rc = 2;
#ifdef REDIST_HAVE_MPI
    if (mpi) { /* every rank runs its own device (run_mpi.c) */
        rc = cli_mpi_run(&mpi_args, plan, orig, shrink, &opts, repeat,
                         corrupt);
        goto out;
    }
#endif
#ifdef REDIST_HAVE_SHMEM
    if (RD_CLI_SHMEM_CHOSEN(backend)) { /* every PE runs its own device */
        rc = cli_shmem_run(&shmem_args, plan, orig, shrink, &opts, repeat,
                           corrupt);
        goto out;
    }
#endif

    const redist_spec_t *s = redist_plan_spec(plan);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    redist_exec_info_t info;
    if (redist_plan_exec_info(plan, be0, &opts, &info, &err)) {
        cli_print_error(&err);
        goto out;
    }
    src = calloc((size_t)D, sizeof *src);
    dst = calloc((size_t)D, sizeof *dst);
    if (!src || !dst)
        goto oom;
    for (int64_t r = 0; r < D; r++) {
        src[r] = malloc((size_t)S);
        dst[r] = malloc((size_t)T);
        if (!src[r] || !dst[r])
            goto oom;
    }

    cli_run_head(plan, fused ? "sim (fused)" : "sim", (long long)D,
                 "devices", orig, shrink);

    redist_exec_report_t rep, best;
    double best_wall = 0;
    memset(&best, 0, sizeof best);
    redist_status_t st = REDIST_OK;
    for (uint64_t it = 0; it < repeat; it++) {
        for (int64_t r = 0; r < D; r++) {
            rd_pattern_fill(s, r, src[r]);
            memset(dst[r], 0xA5, (size_t)T);
        }
        double t0 = cli_now();
        st = redist_exec_sim_run(plan, src, dst, fused ? REDIST_SIM_FUSED : 0,
                                 &opts, &rep, NULL, &err);
        double wall = cli_now() - t0;
        if (st)
            break;
        if (it == 0 || rep.seconds < best.seconds) {
            best = rep;
            best_wall = wall;
        }
    }
    if (st) {
        cli_print_error(&err);
        fprintf(stderr, "redistplan: run: execution failed\n");
        goto out;
    }
    cli_run_buffers(s, "device");
    cli_fmt_bytes(best.scratch_high_water, b1, sizeof b1);
    cli_fmt_bytes(info.scratch_bytes, b2, sizeof b2);
    cli_fmt_bytes(info.bound_bytes, b3, sizeof b3);
    printf("  scratch   high-water %s per device (promised %s; max(src, "
           "dst) %s)\n", b1, b2, b3);
    cli_run_source((opts.flags & REDIST_EXEC_PRESERVE_SRC) != 0,
                   best.writes_src);
    cli_fmt_bytes(best.recv_bytes, b1, sizeof b1);
    printf("  traffic   received %s per device (most)\n", b1);
    printf("  time      %.3f ms (slowest device%s), %.3f ms wall with "
           "threads\n",
           best.seconds * 1e3, repeat > 1 ? ", best of repeats" : "",
           best_wall * 1e3);

    if (corrupt >= 0 && corrupt < D) /* testing aid: break one element */
        ((unsigned char *)dst[corrupt])[T - 1] ^= 0x5a;

    /* check every element of every device */
    rd_mismatch mm;
    int bad = 0, src_bad = 0;
    for (int64_t r = 0; r < D && !bad; r++) {
        bad = rd_pattern_check(s, r, dst[r], &mm);
        if (!bad && (opts.flags & REDIST_EXEC_PRESERVE_SRC))
            src_bad = bad = rd_pattern_check_src(s, r, src[r], &mm);
    }
    if (bad) {
        cli_run_mismatch(s, mm.device, &mm, src_bad);
        rc = 1;
        goto out;
    }
    cli_run_exact(s, (long long)D, "devices");
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "redistplan: run: out of memory for the simulated "
                    "buffers\n");
    rc = 2;
out:
    if (src)
        for (int64_t r = 0; r < D; r++)
            free(src[r]);
    if (dst)
        for (int64_t r = 0; r < D; r++)
            free(dst[r]);
    free(src);
    free(dst);
    redist_sim_free(world);
    redist_plan_free(plan2);
    redist_plan_free(plan);
    redist_spec_free(spec2);
    redist_spec_free(spec);
    return rc;
}

/* Under a launcher, a rank that fails before the agreement still joins
 * it (launch.c): every rank learns why, nobody waits. */
static int cmd_run(int argc, char **argv)
{
    cli_launch_begin("run");
    return cli_launch_end(run_cmd(argc, argv));
}

int cli_dispatch_extension(int argc, char **argv)
{
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc, argv);
#ifdef REDIST_HAVE_HWLOC
    if (strcmp(argv[1], "topo") == 0)
        return cli_cmd_topo(argc, argv); /* topo.c */
#else
    if (strcmp(argv[1], "topo") == 0) {
        fprintf(stderr, "redistplan: topo: built without hwloc (install "
                        "libhwloc-dev and reconfigure)\n");
        return 2;
    }
#endif
    if (strcmp(argv[1], "calibrate") == 0) {
#ifdef REDIST_HAVE_CALIBRATE
        return cli_cmd_calibrate(argc, argv); /* calibrate.c */
#else
        /* under a launcher, one message (rank 0's), as for run */
        long rank = -1;
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r)
            r = getenv("PMI_RANK");
        if (r)
            rank = strtol(r, NULL, 10);
        if (rank <= 0)
            fprintf(stderr,
                    "redistplan: calibrate: needs a redistplan built with "
                    "MPI and hwloc (this one has %s; install libopenmpi-dev "
                    "and libhwloc-dev and reconfigure)\n",
#if defined(REDIST_HAVE_MPI)
                    "no hwloc"
#elif defined(REDIST_HAVE_HWLOC)
                    "no MPI"
#else
                    "neither"
#endif
            );
        return 2;
#endif
    }
    return -1;
}
