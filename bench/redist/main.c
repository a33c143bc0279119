/*
 * Redistribution benchmark: one redistribution, several implementations,
 * alternated in one MPI run.  Like FFTW's bench it never reports a time
 * for a result it has not checked.
 *
 *   mpirun -np D bench_redist [options] CASE...
 *
 * CASE is a spec file (a .json file of specs/; its shape is scaled to each
 * --sizes entry, scale.c) or an inline case NAME:MESH:SHAPE:DTYPE:FROM:TO
 * with the syntax of `redistplan plan -` (e.g.
 * "row2col:x=2,y=2:8192x8192:f64:x,y|:|x,y"; its shape is used as given),
 * optionally followed by :FROM_LAYOUT[:TO_LAYOUT] for uneven dims: a split
 * rule (ceil, balanced, chunk) or block lengths as redistplan's --blocks
 * ("|" between dims, "," between lengths; e.g. "800,800,800,800,800,800,
 * 0,0|" for 4800 rows of 8 blocks moved onto 6 ranks).
 * Cases whose mesh does not have D devices are skipped with a message
 * (the driver script, scripts/bench.sh, groups cases by D).
 *
 * IMPLEMENTATIONS (--impl, default: all that were built): the rows of
 * registry.c, each described at the top of its file: redist-mpi,
 * redist-mpi-prep, redist-mpi-start, redist-mpi-win, redist-mpi-bytes,
 * redist-mpi-packed
 * (impl_redist_mpi.c), redist-shmem, redist-shmem-prep,
 * redist-shmem-bytes (impl_redist_shmem.c), gather, alltoallv, alltoallw,
 * pdgemr2d, memcpy, transport (impl_NAME.c).  The interface: bench.h.  MPI is
 * initialised with MPI_THREAD_MULTIPLE (redist-mpi-start's progress
 * thread) for every implementation alike.
 *
 * METHOD (case.c, measure.c).  Per case: setup outside the timing (plans,
 * contexts, datatypes, counts, and the hand-written alternatives'
 * workspaces, which are allocated and touched once and reused by every
 * timed call, as a careful code does; --fresh allocates them inside each
 * call instead).  redist's one-shot calls allocate their scratch inside
 * each call (that is the library); its prepared objects are made at setup
 * and hold theirs.  Then `--warmup` rounds and `--reps` timed rounds; a
 * round runs every implementation once, in an order rotated by one each
 * round.  Before each run (untimed) the source block is restored from a
 * pristine copy and the destination is poisoned (0xff bytes); the run is
 * MPI_Barrier, MPI_Wtime, the call, MPI_Wtime; its time is the maximum
 * over the ranks.  The page faults of each call are counted (getrusage,
 * max over ranks; median and max over the timed runs are reported; on
 * some virtual machines a first touch of fresh memory costs tens of
 * microseconds per page, printed at start).  Then one memory probe run of
 * each implementation, with every buffer it needs allocated inside the
 * call: its peak RSS (getrusage max RSS = VmHWM, reset through
 * /proc/self/clear_refs just before, after malloc_trim) above the RSS
 * before the call; and Pss (/proc/self/smaps_rollup) after it, above the
 * Pss when the case's buffers were set up: what counts for SHMEM, whose
 * symmetric heap is shared and stays mapped.
 *
 * VERIFICATION.  Every element of every rank's result is checked
 * (src/testing/pattern.h: every value identifies its global index) after the
 * first warm-up run, the last timed run and the memory probe run of each
 * implementation (memcpy excepted: it is not a redistribution).  A wrong
 * value prints the case, implementation, rank, local and global index,
 * expected and actual value, and the program exits 1 at once, or, with
 * --keep-going, after the remaining cases (the row says FAIL).
 * --corrupt IMPL flips a byte of the last rank's result of IMPL after
 * each call, to see the checker fail.
 *
 * OUTPUT (report.c).  One line per implementation on rank 0; --csv FILE
 * appends one row per (case, implementation), header first when the file
 * is empty.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../../src/core/internal.h"

#ifdef BENCH_HAVE_SHMEM
#include "redist/shmem.h"
#endif

int g_rank, g_size;
int g_shmem;
int g_thread_level;
int g_keep_going;
int g_failures;
int g_corrupt = -1;

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr,
                "usage: mpirun -np D bench_redist [--reps N] [--warmup N]\n"
                "         [--sizes 1M,16M,...] [--impl LIST|all] [--csv FILE]\n"
                "         [--mem-budget BYTES] [--shmem] [--keep-going] "
                "[--fresh] [--corrupt IMPL] CASE...\n"
                "       bench_redist --features\n"
                "  CASE: SPEC.json (scaled to each size per rank) or\n"
                "        NAME:MESH:SHAPE:DTYPE:FROM:TO[:FROM_LAYOUT[:TO_LAYOUT]]\n"
                "        (as given)\n");
}

static void parse_sizes(const char *arg, opts_t *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    o->nsizes = 0;
    for (char *t = strtok(buf, ","); t && o->nsizes < 32;
         t = strtok(NULL, ","))
        if (rd_parse_bytes(t, strlen(t), &o->sizes[o->nsizes++]))
            die("bad size '%s'", t);
}

/* The features this binary was built with, for scripts. */
static void print_features(void)
{
    if (g_rank == 0)
        printf("mpi%s%s\n", bench_built(BENCH_SHMEM) ? " shmem" : "",
               bench_built(BENCH_SCALAPACK) ? " scalapack" : "");
}

/* Options into *o; returns the index of the first case, or -1 (exit 0:
 * --features) or -2 (usage, exit 2). */
static int parse_options(int argc, char **argv, opts_t *o, int *want_shmem)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (strcmp(a, "--reps") == 0 && more)
            o->reps = atoi(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && more)
            o->warmup = atoi(argv[++i]);
        else if (strcmp(a, "--sizes") == 0 && more)
            parse_sizes(argv[++i], o);
        else if (strcmp(a, "--impl") == 0 && more)
            o->impl_mask = bench_parse_impls(argv[++i]);
        else if (strcmp(a, "--csv") == 0 && more)
            o->csv = argv[++i];
        else if (strcmp(a, "--mem-budget") == 0 && more) {
            const char *v = argv[++i];
            if (rd_parse_bytes(v, strlen(v), &o->mem_budget))
                die("bad --mem-budget");
        } else if (strcmp(a, "--shmem") == 0)
            *want_shmem = 1;
        else if (strcmp(a, "--keep-going") == 0)
            g_keep_going = 1;
        else if (strcmp(a, "--fresh") == 0)
            o->fresh = 1;
        else if (strcmp(a, "--corrupt") == 0 && more) {
            unsigned m = bench_parse_impls(argv[++i]);
            for (g_corrupt = 0; g_corrupt < bench_nimpls; g_corrupt++)
                if (m >> g_corrupt & 1u)
                    break;
        } else if (strcmp(a, "--features") == 0) {
            print_features();
            return -1;
        } else if (a[0] == '-' && a[1] == '-')
            return -2;
        else
            return i;
    }
    return -2;
}

/* The case's spec has D devices; else say so (0). */
static int fits_world(redist_spec_t *spec, const char *name)
{
    int64_t d = redist_mesh_num_devices(redist_spec_mesh(spec));
    if (d == g_size)
        return 1;
    say("%-44s skipped: %lld devices, %d ranks\n", name, (long long)d, g_size);
    return 0;
}

/* A layout field of an inline case: a split rule name, or block lengths
 * in redistplan's --blocks form (dims separated by '|', lengths by ','). */
static void layout_field(const char *f, const char **split,
                         const char **blocks)
{
    *split = *blocks = NULL;
    if (f && f[0])
        *(strpbrk(f, "0123456789") ? blocks : split) = f;
}

/* An inline case NAME:MESH:SHAPE:DTYPE:FROM:TO[:FROM_LAYOUT[:TO_LAYOUT]],
 * as given. */
static void run_inline(const char *arg, const opts_t *o, FILE *csv)
{
    char buf[512], *f[8], msg[600];
    int nf = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    char *p = buf;
    f[nf++] = p;
    while (nf < 8 && (p = strchr(p, ':'))) {
        *p++ = '\0';
        f[nf++] = p;
    }
    if (nf < 6)
        die("inline case '%s': NAME:MESH:SHAPE:DTYPE:FROM:TO"
            "[:FROM_LAYOUT[:TO_LAYOUT]]", arg);
    redist_spec_t *spec;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_from_strings(f[1], f[2], f[3], f[4], NULL, f[5], NULL,
                                 NULL, f[0], 0, &spec, &err))
        die("inline case '%s': %s", arg,
            redist_error_format(&err, msg, sizeof msg));
    if (nf > 6) {
        const char *fs, *fb, *ts, *tb;
        layout_field(f[6], &fs, &fb);
        layout_field(nf > 7 ? f[7] : NULL, &ts, &tb);
        redist_spec_t *laid;
        if (redist_spec_with_layout_strings(spec, fs, fb, ts, tb, &laid,
                                            &err))
            die("inline case '%s': %s", arg,
                redist_error_format(&err, msg, sizeof msg));
        redist_spec_free(spec);
        spec = laid;
    }
    if (!fits_world(spec, f[0])) {
        redist_spec_free(spec);
        return;
    }
    run_case(spec, f[0], "inline", o, csv);
}

/* A spec file, scaled to each size. */
static void run_spec_file(const char *arg, const opts_t *o, FILE *csv)
{
    char msg[600];
    redist_spec_t *spec;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_load_file(arg, 0, &spec, &err)) {
        say("%-44s skipped: %s\n", arg,
            redist_error_format(&err, msg, sizeof msg));
        return;
    }
    const char *base = strrchr(arg, '/');
    base = base ? base + 1 : arg;
    char sname[256];
    snprintf(sname, sizeof sname, "%s", base);
    char *dot = strstr(sname, ".json");
    if (dot)
        *dot = '\0';
    if (fits_world(spec, sname)) {
        for (int s = 0; s < o->nsizes; s++) {
            redist_spec_t *sized;
            if (scale_spec(spec, o->sizes[s], &sized, &err)) {
                say("%-44s skipped: %s\n", sname,
                    redist_error_format(&err, msg, sizeof msg));
                break;
            }
            run_case(sized, sname, sname, o, csv);
        }
    }
    redist_spec_free(spec);
}

/* Program-wide set-up of the selected implementations and the CSV. */
static FILE *start(opts_t *o, int want_shmem)
{
    if (!o->mem_budget) {
        /* 80% of what the node has available now (rank 0's view) */
        uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable:");
        MPI_Bcast(&avail, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        o->mem_budget = avail / 10 * 8;
    }
    if (want_shmem) {
#ifdef BENCH_HAVE_SHMEM
        shmem_init();
        g_shmem = 1;
#else
        die("--shmem: this bench_redist was built without OpenSHMEM");
#endif
    }
    for (int k = 0; k < bench_nimpls; k++) {
        if (!want_shmem && bench_impls[k]->needs & BENCH_SHMEM)
            o->impl_mask &= ~(1u << k);
        if (o->impl_mask >> k & 1u && bench_impls[k]->start)
            bench_impls[k]->start();
    }
    FILE *csv = NULL;
    if (o->csv && g_rank == 0) {
        csv = fopen(o->csv, "a");
        if (!csv)
            die("%s: %s", o->csv, strerror(errno));
        if (ftell(csv) == 0)
            csv_header(csv);
    }
    machine_probe();
    if (hwm_reset() != 0)
        say("note: /proc/self/clear_refs not writable; peak RSS figures "
            "are cumulative\n");
    return csv;
}

static int finish(const opts_t *o, FILE *csv)
{
    if (csv)
        fclose(csv);
    int fails = g_failures;
    if (g_rank == 0 && fails)
        fprintf(stderr, "bench_redist: %d implementation run(s) gave WRONG "
                        "results (see above)\n",
                fails);
    for (int k = 0; k < bench_nimpls; k++)
        if (o->impl_mask >> k & 1u && bench_impls[k]->finish)
            bench_impls[k]->finish();
#ifdef BENCH_HAVE_SHMEM
    if (g_shmem)
        shmem_finalize();
#endif
    int fin;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    /* MPI_THREAD_MULTIPLE for redist-mpi-start's progress thread; every
     * implementation runs under the same level */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &g_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    opts_t o;
    memset(&o, 0, sizeof o);
    o.reps = 10;
    o.warmup = 1;
    o.sizes[o.nsizes++] = 1ULL << 20;
    o.impl_mask = (1u << bench_nimpls) - 1;
    int want_shmem = 0;
    int first_case = parse_options(argc, argv, &o, &want_shmem);
    if (first_case == -1) {
        MPI_Finalize();
        return 0;
    }
    if (first_case < 0 || o.reps < 1 || o.warmup < 1) {
        usage();
        MPI_Finalize();
        return 2;
    }
    FILE *csv = start(&o, want_shmem);
    for (int i = first_case; i < argc; i++) {
        if (strchr(argv[i], ':') && !strstr(argv[i], ".json"))
            run_inline(argv[i], &o, csv);
        else
            run_spec_file(argv[i], &o, csv);
    }
    return finish(&o, csv);
}
