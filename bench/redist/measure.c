/*
 * Timing, memory and verification of the calls (the METHOD and
 * VERIFICATION of main.c): one run, the rounds of a case, the memory
 * probe, and the machine's local costs.
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "../../src/testing/pattern.h"

/* ------------------------------------------------- memory readings */

/* A "Key:   123 kB" line of a /proc file, in bytes; 0 if absent. */
uint64_t proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t kl = strlen(key);
    uint64_t v = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0) {
            v = strtoull(line + kl, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

static uint64_t rss_now(void) { return proc_kb("/proc/self/status", "VmRSS:"); }
static uint64_t rss_hwm(void) { return proc_kb("/proc/self/status", "VmHWM:"); }
static uint64_t pss_now(void)
{
    return proc_kb("/proc/self/smaps_rollup", "Pss:");
}

/* Reset the peak RSS (VmHWM) to the current RSS (Linux >= 4.0). */
int hwm_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, "5", 1);
    close(fd);
    return w == 1 ? 0 : -1;
}

static uint64_t faults_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* Rank 0, alone: first-touch cost of fresh pages and one-core memcpy
 * bandwidth (warm buffers), the two local costs behind the results. */
void machine_probe(void)
{
    if (g_rank == 0) {
        size_t n = 64u << 20;
        char *a = xmalloc(n), *b = xmalloc(n);
        double t0 = MPI_Wtime();
        memset(a, 1, n);
        double t1 = MPI_Wtime();
        memset(b, 1, n);
        double best = 1e9;
        for (int i = 0; i < 5; i++) {
            double u0 = MPI_Wtime();
            memcpy(b, a, n);
            double u = MPI_Wtime() - u0;
            best = u < best ? u : best;
        }
        printf("machine: first touch of fresh memory %.2f us per 4 KiB page "
               "(%.2f GB/s); memcpy %.1f GB/s on one core (warm, 64 MiB)\n",
               (t1 - t0) * 1e6 / (double)(n / 4096),
               (double)n / (t1 - t0) * 1e-9, (double)n / best * 1e-9);
        fflush(stdout);
        free(a);
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ------------------------------------------------------ verification */

/* Check this rank's result of implementation k; all ranks agree on the
 * verdict.  A wrong one is printed, and stops the program unless
 * --keep-going. */
static void check_result(bcase_t *c, int k, const char *phase)
{
    impl_t *im = &c->im[k];
    rd_mismatch mm;
    int bad = rd_pattern_check(c->spec, g_rank, im->dst ? im->dst : c->dst,
                               &mm);
    if (bad) {
        char loc[256] = "", glob[256] = "";
        size_t lp = 0, gp = 0;
        for (int i = 0; i < c->nd; i++) {
            lp += (size_t)snprintf(loc + lp, sizeof loc - lp, "%s%lld",
                                   i ? "," : "", (long long)mm.local[i]);
            gp += (size_t)snprintf(glob + gp, sizeof glob - gp, "%s%lld",
                                   i ? "," : "", (long long)mm.global[i]);
        }
        fprintf(stderr,
                "bench_redist: VERIFICATION FAILED: case %s, %s (%s run), "
                "rank %d: local index %llu [%s], global index %llu "
                "[%s]: expected %s, got %s\n",
                c->name, im->impl->name, phase, g_rank,
                (unsigned long long)mm.local_index, loc,
                (unsigned long long)mm.global_index, glob, mm.expected,
                mm.got);
        fflush(stderr);
    }
    if (!all_ok(!bad)) {
        im->failed = 1;
        if (!g_keep_going) {
            if (g_rank == 0)
                fprintf(stderr, "bench_redist: %s: %s gave a wrong "
                                "result; stopping (exit 1)\n",
                        c->name, im->impl->name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    im->checked++;
}

/* ------------------------------------------------------------- runs */

double run_once(bcase_t *c, int k, int verify, const char *phase, int probe)
{
    impl_t *im = &c->im[k];
    char *dst = im->dst ? im->dst : c->dst;
    memcpy(im->src ? im->src : c->src, c->pristine, c->src_bytes);
    memset(dst, 0xff, c->dst_bytes);
    uint64_t before = 0;
    if (probe) {
        malloc_trim(0);
        hwm_reset();
        before = rss_now();
    }
    uint64_t f0 = faults_now();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    uint64_t own = im->impl->run(c, im);
    double t1 = MPI_Wtime();
    uint64_t f1 = faults_now();
    if (probe) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        uint64_t hwm = umax((uint64_t)ru.ru_maxrss * 1024, rss_hwm());
        im->hwm = hwm;
        im->rss_extra = hwm > before ? hwm - before : 0;
        uint64_t pss = pss_now();
        im->pss = pss > c->pss_base ? pss - c->pss_base : 0;
    } else
        im->faults = f1 - f0;
    im->own = umax(im->own, own);
    if (k == g_corrupt && g_rank == g_size - 1 && c->my_dst_bytes)
        dst[c->my_dst_bytes - 1] ^= 0x5a;
    if (verify && !(im->impl->flags & BENCH_NO_CHECK))
        check_result(c, k, phase);
    return t1 - t0;
}

/* Persistent workspaces of every running implementation: keep or drop. */
static void workspaces(bcase_t *c, int keep)
{
    for (int k = 0; k < bench_nimpls; k++)
        if (c->im[k].on && c->im[k].impl->workspace)
            c->im[k].impl->workspace(c, &c->im[k], keep);
}

double run_rounds(bcase_t *c, const opts_t *o)
{
    int n = 0, order[BENCH_MAX_IMPLS];
    for (int k = 0; k < bench_nimpls; k++)
        if (c->im[k].on) {
            order[n++] = k;
            c->im[k].t = xmalloc(sizeof(double) * (size_t)o->reps);
            c->im[k].fl = xmalloc(sizeof(double) * (size_t)o->reps);
        }
    /* the alternatives' workspaces: allocated and touched once, reused
     * by every timed call (what a careful hand-written code does) */
    c->pss_base = pss_now();
    c->fresh = o->fresh;
    if (!c->fresh)
        workspaces(c, 1);
    double wall0 = MPI_Wtime();
    for (int round = -o->warmup; round < o->reps; round++) {
        int shift = (round + o->warmup) % (n ? n : 1);
        for (int j = 0; j < n; j++) {
            int k = order[(j + shift) % n];
            int verify = round == -o->warmup || round == o->reps - 1;
            double v[2];
            v[0] = run_once(c, k, verify,
                            round < 0 ? "warm-up" : "last timed", 0);
            v[1] = (double)c->im[k].faults;
            MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
            if (round >= 0) {
                c->im[k].t[round] = v[0];
                c->im[k].fl[round] = v[1];
            }
        }
    }
    /* memory probe: one more checked run of each, every buffer it needs
     * allocated inside the call, peak RSS from a reset high-water mark */
    workspaces(c, 0);
    c->fresh = 1;
    for (int j = 0; j < n; j++)
        run_once(c, order[j], 1, "memory probe", 1);
    return MPI_Wtime() - wall0;
}
