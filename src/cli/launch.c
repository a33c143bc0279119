/*
 * The agreement of the ranks of a launched command (`run` under mpirun /
 * oshrun, `calibrate` under mpirun): no rank leaves, and none moves data,
 * before every rank knows that every other one parsed its arguments,
 * loaded and planned alike.
 *
 *   cli_launch_begin   standard error is redirected to a temporary file:
 *                      what a rank prints before the agreement (a bad
 *                      option, a bad spec) is held back.
 *   cli_launch_agree   every rank that got this far: start the transport,
 *                      then agree (below) on "all ok" and on the
 *                      fingerprint (cli_fp: every option and what was
 *                      loaded, as readable values).
 *   cli_launch_end     a rank that failed before cli_launch_agree joins
 *                      the same agreement with its held-back message, so
 *                      a failure on one rank is an error on every rank
 *                      within one collective, never a hang.
 *
 * AGREEMENT (two max-reductions and at most two broadcasts over every
 * rank):
 *   1. max of (failed ? size - rank : 0, ok, message hash, ~message hash,
 *      exit code): the first rank that failed, and whether every rank
 *      failed with the same message.  If one failed, its message is
 *      broadcast; every rank that failed prints its own message, every
 *      other rank "rank N: <N's message>" (when all failed alike, rank 0
 *      prints it once); every rank exits with the largest exit code.
 *   2. rank 0's fingerprint is broadcast; max of (differs ? size - rank :
 *      0) names the first rank R that differs, whose fingerprint is
 *      broadcast in turn; every rank prints the first field in which R
 *      and rank 0 differ ("the ranks disagree on --repeat: rank 1 has
 *      3, rank 0 has 1") and exits 2.
 * DEADLINE: a rank that never joins (one running another program, or
 * exiting before MPI_Init) must not hang the others.  Each wait of the
 * agreement is bounded by REDIST_AGREE_TIMEOUT seconds (default 60): the
 * start of the transport by a watchdog thread (MPI_Init cannot be
 * polled; the watchdog prints what was waited for and ends the process,
 * which ends the job), each collective of the agreement by polling a
 * non-blocking one (MPI_Iallreduce, MPI_Ibcast) against the deadline, then
 * MPI_Abort with what was waited for.  (The OpenSHMEM transport of a
 * build without MPI has no non-blocking collectives: only its start is
 * bounded.)
 *
 * The transport is MPI (MPI_COMM_WORLD) when MPI is built in: a rank
 * knows whether the others use the mpi or the shmem backend only after
 * the agreement, and Open MPI's OpenSHMEM starts after MPI_Init (its
 * shmem_finalize then finalises MPI).  In a build with OpenSHMEM only it
 * is OpenSHMEM, with reductions over static (hence symmetric) arrays of
 * the executable.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "cli.h"
#include "launch.h"

#if defined(REDIST_HAVE_MPI)
#include <mpi.h>
#elif defined(REDIST_HAVE_SHMEM)
#include <shmem.h>
#endif

#define NRED 5 /* longs of a reduction */
#define AGREE_TIMEOUT 60.0 /* seconds, unless REDIST_AGREE_TIMEOUT */

static struct {
    const char *cmd;
    int held;      /* standard error goes to `file` */
    int saved_err; /* the real standard error */
    FILE *file;
    int started;   /* the transport */
    int agreed;    /* cli_launch_agree ran (successfully or not) */
    int rank, size;
    double timeout; /* seconds a wait of the agreement may take */
} L = {"run", 0, -1, NULL, 0, 0, 0, 1, AGREE_TIMEOUT};

/* ----------------------------------------------------------- deadline */

/* REDIST_AGREE_TIMEOUT: seconds (a positive number), else the default. */
static void read_timeout(void)
{
    const char *v = getenv("REDIST_AGREE_TIMEOUT");
    char *end;
    L.timeout = AGREE_TIMEOUT;
    if (cli_launch_rank() >= 0) /* for messages before the transport's */
        L.rank = (int)cli_launch_rank();
    if (!v)
        return;
    double t = strtod(v, &end);
    if (end != v && *end == '\0' && t > 0 && t <= 1e6)
        L.timeout = t;
    else
        fprintf(stderr, "redistplan: %s: REDIST_AGREE_TIMEOUT: not a number "
                        "of seconds (> 0): \"%.40s\"; waiting %.0f s\n",
                L.cmd, v, AGREE_TIMEOUT);
}

/* The message of a rank that gave up waiting for `what`. */
static void gave_up(const char *what)
{
    fprintf(stderr,
            "redistplan: %s: rank %d waited %g s for every rank to %s; some "
            "rank never joined (every rank must run the same redistplan "
            "command; REDIST_AGREE_TIMEOUT sets the wait): aborting the "
            "job\n",
            L.cmd, L.rank, L.timeout, what);
    fflush(stderr);
}

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    const char *what;
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL};

static void *watchdog(void *arg)
{
    struct timespec until;
    (void)arg;
    clock_gettime(CLOCK_REALTIME, &until);
    double s = (double)until.tv_sec + until.tv_nsec * 1e-9 + L.timeout;
    until.tv_sec = (time_t)s;
    until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
    pthread_mutex_lock(&W.mu);
    int rc = 0;
    while (!W.done && rc == 0)
        rc = pthread_cond_timedwait(&W.cv, &W.mu, &until);
    if (!W.done) { /* MPI_Init still waits: end this process, hence the job */
        gave_up(W.what);
        _exit(CLI_BAD_INPUT);
    }
    pthread_mutex_unlock(&W.mu);
    return NULL;
}

/* f() under the watchdog: `what` is printed if it outlasts the deadline. */
static int watched(int (*f)(void), const char *what)
{
    pthread_t th;
    W.done = 0;
    W.what = what;
    int armed = pthread_create(&th, NULL, watchdog, NULL) == 0;
    int rc = f();
    if (armed) {
        pthread_mutex_lock(&W.mu);
        W.done = 1;
        pthread_cond_signal(&W.cv);
        pthread_mutex_unlock(&W.mu);
        pthread_join(th, NULL);
    }
    return rc;
}

/* ---------------------------------------------------------- transport */

#if defined(REDIST_HAVE_MPI)

static int t_start(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin || (!init && MPI_Init(NULL, NULL) != MPI_SUCCESS))
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &L.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &L.size);
    return 0;
}

/* Wait for rq until the deadline; past it, abort the job. */
static void t_wait(MPI_Request *rq, const char *what)
{
    double end = MPI_Wtime() + L.timeout;
    struct timespec nap = {0, 200000}; /* 0.2 ms between polls */
    for (int k = 0;; k++) {
        int done = 0;
        MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (MPI_Wtime() > end) {
            gave_up(what);
            MPI_Abort(MPI_COMM_WORLD, CLI_BAD_INPUT);
        }
        if (k > 1000)
            nanosleep(&nap, NULL);
    }
}

static void t_max(long v[NRED], const char *what)
{
    long r[NRED];
    MPI_Request rq;
    MPI_Iallreduce(v, r, NRED, MPI_LONG, MPI_MAX, MPI_COMM_WORLD, &rq);
    t_wait(&rq, what);
    memcpy(v, r, sizeof r);
}

static void t_bcast(void *buf, size_t n, int root, const char *what)
{
    MPI_Request rq;
    MPI_Ibcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD, &rq);
    t_wait(&rq, what);
}

static void t_stop(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Finalize();
}

#elif defined(REDIST_HAVE_SHMEM)

/* static: symmetric in the executable */
static long t_src[NRED], t_dst[NRED], t_sync[2][SHMEM_REDUCE_SYNC_SIZE];
static long t_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > NRED / 2 + 1
                      ? SHMEM_REDUCE_MIN_WRKDATA_SIZE
                      : NRED / 2 + 1];
static char t_buf[CLI_FP_MAX * (CLI_FP_NAME + CLI_FP_VALUE) + CLI_LAUNCH_MSG];
static int t_turn;

static int t_start(void)
{
    shmem_init();
    L.rank = shmem_my_pe();
    L.size = shmem_n_pes();
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            t_sync[t][i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    return 0;
}

static void t_max(long v[NRED], const char *what)
{
    (void)what;
    memcpy(t_src, v, sizeof t_src);
    shmem_long_max_to_all(t_dst, t_src, NRED, 0, 0, L.size, t_wrk,
                          t_sync[t_turn]);
    t_turn ^= 1;
    memcpy(v, t_dst, sizeof t_dst);
}

static void t_bcast(void *buf, size_t n, int root, const char *what)
{
    (void)what;
    if (L.rank == root)
        memcpy(t_buf, buf, n < sizeof t_buf ? n : sizeof t_buf);
    shmem_barrier_all();
    if (L.rank != root)
        shmem_getmem(buf, t_buf, n < sizeof t_buf ? n : sizeof t_buf, root);
    shmem_barrier_all();
}

static void t_stop(void) { shmem_finalize(); }

#else

static int t_start(void) { return 0; }
static void t_max(long v[NRED], const char *what)
{
    (void)v;
    (void)what;
}
static void t_bcast(void *buf, size_t n, int root, const char *what)
{
    (void)buf;
    (void)n;
    (void)root;
    (void)what;
}
static void t_stop(void) {}

#endif

/* ------------------------------------------------------ fingerprints */

void cli_fp_add(cli_fp *fp, const char *name, const char *fmt, ...)
{
    if (fp->n >= CLI_FP_MAX)
        return;
    snprintf(fp->name[fp->n], CLI_FP_NAME, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fp->value[fp->n], CLI_FP_VALUE, fmt, ap);
    va_end(ap);
    fp->n++;
}

void cli_fp_init(cli_fp *fp, const char *cmd, int help)
{
    fp->n = 0;
    cli_fp_add(fp, "the command", "%s", cmd);
    cli_fp_add(fp, "--help", "%s", help ? "on" : "off");
}

uint64_t cli_fp_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void cli_fp_plan(cli_fp *fp, const redist_plan_t *plan, const int64_t *orig)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(s);
    int nd = redist_spec_ndims(s);
    char buf[CLI_FP_VALUE];
    size_t pos = 0;
    cli_fp_add(fp, "the spec name", "%s", redist_spec_name(s));
    if (redist_spec_num_meshes(s) == 2) {
        /* each mesh: its name, axes and a hash of its device list */
        for (int side = 0; side < 2; side++) {
            const redist_mesh_t *ms = redist_spec_side_mesh(s, side);
            uint64_t h = 1;
            for (int64_t r = 0; r < redist_mesh_num_devices(ms); r++) {
                int64_t d = redist_spec_mesh_device(s, side, r);
                h = cli_fp_hash(h, &d, sizeof d);
            }
            redist_mesh_format(ms, buf, sizeof buf);
            cli_fp_add(fp, side ? "the target mesh" : "the source mesh",
                       "%s:%s [%016llx]", redist_spec_mesh_name(s, side), buf,
                       (unsigned long long)h);
        }
    } else {
        redist_mesh_format(m, buf, sizeof buf);
        cli_fp_add(fp, "the mesh", "%s", buf);
    }
    redist_shape_format(orig, nd, buf, sizeof buf);
    cli_fp_add(fp, "the spec's shape", "%s", buf);
    redist_shape_format(redist_spec_shape(s), nd, buf, sizeof buf);
    cli_fp_add(fp, "the shape run", "%s", buf);
    cli_fp_add(fp, "the dtype", "%s", redist_dtype_name(redist_spec_dtype(s)));
    cli_fp_add(fp, "the reduction", "%s",
               redist_reduce_name(redist_spec_reduce(s)));
    redist_type_format(redist_spec_from(s), m, buf, sizeof buf);
    cli_fp_add(fp, "the source type", "%s", buf);
    redist_type_format(redist_spec_to(s), redist_spec_side_mesh(s, 1), buf,
                       sizeof buf);
    cli_fp_add(fp, "the target type", "%s", buf);
    pos = 0;
    buf[0] = '\0';
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        cli_appendf(buf, sizeof buf, &pos, "%s%s", k ? " " : "",
                    redist_op_name(v.op));
        if (v.axis >= 0)
            cli_appendf(buf, sizeof buf, &pos, "(%s)",
                        redist_mesh_axis_name(
                            redist_spec_side_mesh(s, v.mesh), v.axis));
    }
    cli_fp_add(fp, "the plan", "%s%s[%016llx]", buf, pos ? " " : "",
               (unsigned long long)redist_plan_hash(plan));
}

/* ------------------------------------------------- held-back stderr */

int cli_launched(void)
{
#if defined(REDIST_HAVE_MPI) || defined(REDIST_HAVE_SHMEM)
    return cli_env_long("OMPI_COMM_WORLD_SIZE", "PMI_SIZE") >= 0;
#else
    return 0;
#endif
}

long cli_launch_rank(void)
{
    return cli_env_long("OMPI_COMM_WORLD_RANK", "PMI_RANK");
}

void cli_launch_begin(const char *cmd)
{
    L.cmd = cmd;
    if (!cli_launched() || L.held)
        return;
    FILE *f = tmpfile();
    if (!f)
        return; /* messages go out at once; the agreement still runs */
    fflush(stderr);
    L.saved_err = dup(2);
    if (L.saved_err < 0 || dup2(fileno(f), 2) < 0) {
        if (L.saved_err >= 0)
            close(L.saved_err);
        L.saved_err = -1;
        fclose(f);
        return;
    }
    L.file = f;
    L.held = 1;
}

/* Restore standard error; what was held back goes to msg (NUL-ended). */
static void release(char *msg, size_t n)
{
    msg[0] = '\0';
    if (!L.held)
        return;
    fflush(stderr);
    dup2(L.saved_err, 2);
    close(L.saved_err);
    L.saved_err = -1;
    L.held = 0;
    rewind(L.file);
    size_t got = fread(msg, 1, n - 1, L.file);
    msg[got] = '\0';
    fclose(L.file);
    L.file = NULL;
}

/* -------------------------------------------------------- agreement */

static long hash63(const char *s)
{
    return (long)(cli_fp_hash(0xcbf29ce484222325ULL, s, strlen(s)) >> 1);
}

/* "redistplan: run: " and "run: " prefixes off, for "rank N: ..." */
static const char *bare(const char *line, size_t *len)
{
    size_t c = strlen(L.cmd);
    if (strncmp(line, "redistplan: ", 12) == 0)
        line += 12;
    if (strncmp(line, L.cmd, c) == 0 && strncmp(line + c, ": ", 2) == 0)
        line += c + 2;
    const char *nl = strchr(line, '\n');
    *len = nl ? (size_t)(nl - line) : strlen(line);
    return line;
}

/* Rank `who`'s message, each line as "redistplan: CMD: rank N: ...". */
static void print_for(int who, const char *msg)
{
    const char *p = msg;
    if (!*p)
        fprintf(stderr, "redistplan: %s: rank %d failed\n", L.cmd, who);
    while (*p) {
        size_t len;
        const char *b = bare(p, &len);
        if (len)
            fprintf(stderr, "redistplan: %s: rank %d: %.*s\n", L.cmd, who,
                    (int)len, b);
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
}

/* Step 1: 0 when no rank failed, else the exit code of every rank. */
static int agree_status(int rc, const char *msg)
{
    long v[NRED] = {rc ? L.size - L.rank : 0, rc ? 0 : 1,
                    rc ? hash63(msg) : -1, rc ? ~hash63(msg) : -1, rc};
    t_max(v, "report whether it failed (the agreement's first step)");
    if (!v[0])
        return 0;
    int first = (int)(L.size - v[0]);
    int alike = !v[1] && v[2] == ~v[3]; /* all failed, same message */
    char text[CLI_LAUNCH_MSG];
    memset(text, 0, sizeof text);
    if (L.rank == first)
        snprintf(text, sizeof text, "%s", msg ? msg : "");
    t_bcast(text, sizeof text, first, "receive the failed rank's message");
    text[sizeof text - 1] = '\0';
    if (alike) {
        if (L.rank == 0)
            fputs(msg, stderr);
    } else if (rc)
        fputs(msg, stderr);
    else
        print_for(first, text);
    fflush(stderr);
    return v[4] ? (int)v[4] : CLI_BAD_INPUT;
}

/* The fingerprint as text: "name\tvalue\n" per field. */
static void fp_text(const cli_fp *fp, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < fp->n; i++)
        cli_appendf(buf, n, &pos, "%s\t%s\n", fp->name[i], fp->value[i]);
}

/* One line "name\tvalue" (len 0: a field the other rank lacks). */
static void field(const char *line, size_t len, char *name, size_t nn,
                  char *val, size_t nv)
{
    const char *t = memchr(line, '\t', len);
    size_t nl = t ? (size_t)(t - line) : len;
    snprintf(name, nn, "%.*s", (int)nl, line);
    if (len)
        snprintf(val, nv, "%.*s", t ? (int)(len - nl - 1) : 0,
                 t ? t + 1 : "");
    else
        snprintf(val, nv, "(none)");
}

/* The first field in which fingerprint texts a and b differ. */
static int first_diff(const char *a, const char *b, char *name, size_t nn,
                      char *va, char *vb, size_t nv)
{
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a);
        size_t lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la)) {
            char nb[CLI_FP_NAME];
            field(a, la, name, nn, va, nv);
            field(b, lb, nb, sizeof nb, vb, nv);
            if (!la)
                snprintf(name, nn, "%s", nb);
            return 1;
        }
        a += la + (ea != NULL);
        b += lb + (eb != NULL);
    }
    return 0;
}

/* Step 2: 0 when every fingerprint is rank 0's, else 2. */
static int agree_fp(const cli_fp *fp)
{
    static char mine[CLI_FP_MAX * (CLI_FP_NAME + CLI_FP_VALUE)],
        zero[sizeof mine];
    fp_text(fp, mine, sizeof mine);
    memcpy(zero, mine, sizeof zero);
    t_bcast(zero, sizeof zero, 0, "receive rank 0's arguments");
    long v[NRED] = {strcmp(mine, zero) ? L.size - L.rank : 0, 0, 0, 0, 0};
    t_max(v, "compare its arguments with rank 0's");
    if (!v[0])
        return 0;
    int who = (int)(L.size - v[0]);
    static char theirs[sizeof mine];
    memcpy(theirs, mine, sizeof theirs);
    t_bcast(theirs, sizeof theirs, who, "receive the differing arguments");
    char name[CLI_FP_NAME + 8], va[CLI_FP_VALUE], vb[CLI_FP_VALUE];
    if (!first_diff(theirs, zero, name, sizeof name, va, vb, sizeof va))
        snprintf(name, sizeof name, "(unknown)");
    fprintf(stderr,
            "redistplan: %s: the ranks disagree on %s: rank %d has %s, rank "
            "0 has %s (every rank must run the same command)\n",
            L.cmd, name, who, va, vb);
    fflush(stderr);
    return CLI_BAD_INPUT;
}

static int start(void)
{
    if (L.started)
        return 0;
    read_timeout();
    if (watched(t_start, "start (MPI_Init), to join the agreement"))
        return -1;
    L.started = 1;
    return 0;
}

int cli_launch_agree(const cli_fp *fp, int shmem)
{
    char msg[CLI_LAUNCH_MSG];
    if (!cli_launched())
        return 0;
    L.agreed = 1;
    release(msg, sizeof msg);
    if (shmem) /* Open MPI 4.1.4 crashes in shmem_finalize with it */
        setenv("OMPI_MCA_osc", "^rdma", 0);
    if (start()) {
        fprintf(stderr, "redistplan: %s: cannot start MPI\n", L.cmd);
        return CLI_BAD_INPUT;
    }
    int rc = agree_status(0, msg);
    if (!rc)
        rc = agree_fp(fp);
    if (!rc && L.rank == 0 && msg[0]) /* warnings: the same on every rank */
        fputs(msg, stderr);
    return rc;
}

int cli_launch_end(int rc)
{
    if (!cli_launched())
        return rc;
    if (!L.agreed) { /* failed before the agreement: join it */
        char msg[CLI_LAUNCH_MSG];
        L.agreed = 1;
        release(msg, sizeof msg);
        if (start()) {
            fputs(msg, stderr);
            return rc ? rc : CLI_BAD_INPUT;
        }
        int r = agree_status(rc ? rc : CLI_BAD_INPUT, msg);
        rc = r ? r : CLI_BAD_INPUT;
    }
    fflush(stdout);
    fflush(stderr);
    if (L.started)
        t_stop();
    L.started = 0;
    return rc;
}

int cli_launch_shmem_started(void)
{
#if !defined(REDIST_HAVE_MPI) && defined(REDIST_HAVE_SHMEM)
    return L.started;
#else
    return 0;
#endif
}

int cli_launch_report(int failed, const char *text)
{
    char msg[CLI_LAUNCH_MSG];
    snprintf(msg, sizeof msg, "%s", text && failed ? text : "");
    if (!cli_launched() || !L.started) {
        if (failed)
            fputs(msg, stderr);
        return failed;
    }
    return agree_status(failed ? CLI_BAD_INPUT : CLI_OK, msg) != 0;
}

int cli_launch_failed(int bad, const redist_error_t *err, const char *what)
{
    char msg[CLI_LAUNCH_MSG], e[CLI_LAUNCH_MSG];
    size_t pos = 0;
    msg[0] = '\0';
    if (bad && err && err->status)
        cli_appendf(msg, sizeof msg, &pos, "redistplan: %s\n",
                    redist_error_format(err, e, sizeof e));
    if (bad && (what || !pos))
        cli_appendf(msg, sizeof msg, &pos, "redistplan: %s: %s\n", L.cmd,
                    what ? what : "failed");
    return cli_launch_report(bad, msg);
}
