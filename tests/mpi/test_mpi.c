/*
 * The MPI backend under mpirun, at any rank count N:
 *
 *   mpirun -np N test_mpi [CASES [SEED [quick|random]]]   the suite below
 *                                            (quick: one mode per dtype
 *                                            x op, in rotation; random:
 *                                            the directed and random
 *                                            plans only, no coverage
 *                                            checks)
 *   mpirun -np 2 test_mpi --big              one all_gather of more than
 *                                            INT_MAX elements (2 GiB+)
 *
 *  - datatypes: the nested types that carry counts beyond INT_MAX (sizes,
 *    extents and, with a small count limit, the exact bytes they select);
 *  - agreement: a communicator whose size is not the mesh's, ranks with
 *    different meshes, plans or options, a NULL buffer on one rank, a
 *    plan on another mesh, max_scratch below the minimum: the same error
 *    on every rank, no hang; the context still works afterwards;
 *  - every dtype x reduce op on plans with reduce_scatter and all_reduce,
 *    in every mode (whole steps / packed x ordered / native reductions);
 *  - random plans (planned, and random walks of legal steps, which reach
 *    all_gather-then-all_to_all and permutes with partial axes) on random
 *    meshes of exactly N devices, random modes, PRESERVE_SRC, max_scratch
 *    down to the least possible (many rounds), a tiny count limit (the
 *    nested datatypes on real transfers), the raw redist_plan_execute
 *    path, and a communicator in reversed rank order;
 *  - random uneven specs (doc/spec-format.md section 7: shapes often smaller than
 *    the split, every rule, explicit blocks with zero lengths), each
 *    rank's buffers exactly its blocks (NULL when empty), checked with
 *    the exact pattern;
 *  - at 2 ranks or more, as many uneven reductions with empty blocks
 *    (uneven_reduce_case), through redist_mpi_execute, the raw
 *    redist_plan_execute path and prepared objects (run, start/wait).
 * Results are compared with the sim backend byte for byte on random bits
 * (ordered reductions; native reductions on integer dtypes) or checked
 * exactly with the pattern of src/testing/pattern.h (native reductions of
 * floating dtypes, whose order is MPI's); the measured scratch high-water
 * mark must stay within the promise and the bound, and the exchanges must
 * be those redist_mpi_exec_info predicts.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redist.h"
#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"
#include "../../src/testing/pattern.h"
#include "../common/random_plan.h"

/* These tests cover the six steps of the bytes objective one by one
 * (exchange: tests/mpi/run_specs_mpi.sh). */
static const redist_plan_options_t bytes_opts = {
    .objective = REDIST_OBJECTIVE_BYTES};

static int rank, nranks;
static int failures, checks, cases, skipped, sim_compared, pattern_checked;
static int uneven_cases;
static int uneven_reduce_runs; /* uneven_reduce_case */
/* runs with steps in place, with streamed reductions, with in-place swaps */
static int inplace_runs, streamed_runs, swap_runs, ring_runs;
static int mode_count[4], dtype_count[REDIST_DTYPE_COUNT],
    op_count[REDIST_OP_COUNT];
static const char *mode_name[4] = {"fused/ordered", "packed/ordered",
                                   "fused/native", "packed/native"};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    failures++;
    if (failures > 20)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (rank %d, case %d): ", rank, cases);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond))                                                         \
            fail(__VA_ARGS__);                                               \
    } while (0)

/* ------------------------------------------------------------ random */

static rp_rng rng = {0x9e3779b97f4a7c15ULL};

/* Ranks other than 0 wait for rank 0 without spinning the CPU that the
 * sim threads of rank 0 need (8 ranks on 2 cores). */
static void gentle_barrier(MPI_Comm comm)
{
    MPI_Request rq;
    int done = 0;
    MPI_Ibarrier(comm, &rq);
    while (!done) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (!done) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
}

static int all_equal_int(int v)
{
    int lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* ---------------------------------------------------------- datatypes */

static void test_datatypes(void)
{
    MPI_Datatype t;
    MPI_Count size, lb, ext, tlb, text;
    /* 2^31 + 5 bytes with the real limit (INT_MAX) */
    uint64_t big = (1ULL << 31) + 5;
    CHECK(rd_mpi_type_bytes(0, big, &t) == MPI_SUCCESS, "bytes(2^31+5)");
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &ext);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    CHECK(size == (MPI_Count)big && lb == 0 && ext == (MPI_Count)big &&
              tlb == 0 && text == (MPI_Count)big,
          "bytes(2^31+5): size %lld extent %lld true extent %lld",
          (long long)size, (long long)ext, (long long)text);
    MPI_Type_free(&t);
    /* 5 * 2^31 + 3 bytes: more than INT_MAX blocks of INT_MAX? no: a
     * vector of INT_MAX-byte blocks plus a remainder */
    big = 5 * (1ULL << 31) + 3;
    CHECK(rd_mpi_type_bytes(0, big, &t) == MPI_SUCCESS, "bytes(5*2^31+3)");
    MPI_Type_size_x(t, &size);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    CHECK(size == (MPI_Count)big && text == (MPI_Count)big,
          "bytes(5*2^31+3): size %lld true extent %lld", (long long)size,
          (long long)text);
    MPI_Type_free(&t);
    /* 2^31 + 3 rows of 2 bytes, 6 apart, extent 2: a strided type whose
     * row count exceeds INT_MAX */
    uint64_t rows = (1ULL << 31) + 3;
    CHECK(rd_mpi_type_blocks(0, rows, 2, 6, 2, &t) == MPI_SUCCESS,
          "blocks(2^31+3 rows)");
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &ext);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    CHECK(size == (MPI_Count)(2 * rows) && ext == 2 && tlb == 0 &&
              text == (MPI_Count)((rows - 1) * 6 + 2),
          "blocks(2^31+3 rows): size %lld extent %lld true extent %lld",
          (long long)size, (long long)ext, (long long)text);
    MPI_Type_free(&t);

    /* with small limits, the bytes the nested types select, exactly */
    unsigned char in[4096], packed[4096], want[4096];
    for (int i = 0; i < 4096; i++)
        in[i] = (unsigned char)rp_mix((uint64_t)i);
    for (uint64_t lim = 1; lim <= 9; lim++) {
        for (uint64_t n = 1; n <= 300; n += 37) {
            int pos = 0;
            CHECK(rd_mpi_type_bytes(lim, n, &t) == MPI_SUCCESS, "bytes");
            MPI_Pack(in + 3, 1, t, packed, (int)sizeof packed, &pos,
                     MPI_COMM_SELF);
            MPI_Type_size_x(t, &size);
            CHECK(pos == (int)n && size == (MPI_Count)n &&
                      memcmp(packed, in + 3, n) == 0,
                  "bytes(%llu) with limit %llu", (unsigned long long)n,
                  (unsigned long long)lim);
            MPI_Type_free(&t);
        }
        for (uint64_t r = 1; r <= 40; r += 13)
            for (uint64_t row = 1; row <= 23; row += 11) {
                uint64_t stride = row + 1 + r % 5, extent = row;
                int pos = 0;
                if ((r - 1) * stride + row > sizeof in)
                    continue;
                CHECK(rd_mpi_type_blocks(lim, r, row, stride, extent, &t) ==
                          MPI_SUCCESS,
                      "blocks");
                MPI_Pack(in, 2, t, packed, (int)sizeof packed, &pos,
                         MPI_COMM_SELF);
                /* two elements: the second starts `extent` bytes later */
                uint64_t w = 0;
                for (uint64_t e = 0; e < 2; e++)
                    for (uint64_t k = 0; k < r; k++) {
                        memcpy(want + w, in + e * extent + k * stride,
                               (size_t)row);
                        w += row;
                    }
                MPI_Type_get_extent_x(t, &lb, &ext);
                CHECK(pos == (int)w && memcmp(packed, want, w) == 0 &&
                          ext == (MPI_Count)extent,
                      "blocks(%llu x %llu, stride %llu) with limit %llu",
                      (unsigned long long)r, (unsigned long long)row,
                      (unsigned long long)stride, (unsigned long long)lim);
                MPI_Type_free(&t);
            }
    }
}

/* ------------------------------------------------------------ one run */

typedef struct run_cfg {
    unsigned mpi_flags;
    int preserve;
    int tight;      /* 1: max_scratch = the least possible; 2: between */
    uint64_t limit; /* count limit, 0: INT_MAX */
    int raw;        /* redist_plan_execute on the endpoint */
    int reversed;   /* a communicator in reversed world order */
    int pattern;    /* pattern data (else random bits compared with sim) */
    int ring;       /* all-gathers by ring whatever the block size */
    int prepared;   /* redist_mpi_prepare, then run and start/wait */
} run_cfg;

static redist_mpi_t *world_ctx_for(const redist_mesh_t *mesh, MPI_Comm comm)
{
    redist_mpi_t *mx = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_mpi_create(comm, mesh, NULL, &mx, &err))
        fail("redist_mpi_create: %s", err.text);
    return mx;
}

static int is_integer(redist_dtype_t d)
{
    return d >= REDIST_I8 && d <= REDIST_U64;
}

/* Execute `plan` on every rank with `cfg`; compare with the sim or the
 * pattern; check the memory and exchange figures.  `shared`: a context
 * on the world for the plan's mesh, reused (else one is created). */
/* A prepared object (cfg.prepared): runs it, checks the pattern and
 * the promise, refills the source, then runs it again started (with
 * MPI_THREAD_MULTIPLE) or run; the caller checks the last run. */
static redist_status_t run_prepared(redist_mpi_t *mx,
                                    const redist_plan_t *plan,
                                    const redist_spec_t *s, int me,
                                    void *src, void *dst,
                                    const redist_exec_options_t *eo,
                                    redist_exec_report_t *rep,
                                    redist_error_t *err)
{
    redist_mpi_prepared_t *pr = NULL;
    redist_status_t st = redist_mpi_prepare(mx, plan, src, dst, eo, &pr, err);
    if (st)
        return st;
    st = redist_mpi_run(pr, rep, err);
    if (!st) {
        rd_mismatch mm;
        memset(&mm, 0, sizeof mm);
        CHECK(!rd_pattern_check(s, me, dst, &mm),
              "prepared run: device %d local %llu: expected %s got %s", me,
              (unsigned long long)mm.local_index, mm.expected, mm.got);
        CHECK(rep->scratch_high_water <= rep->scratch_bytes,
              "prepared run: high-water %llu over the promise %llu",
              (unsigned long long)rep->scratch_high_water,
              (unsigned long long)rep->scratch_bytes);
        if (src)
            rd_pattern_fill(s, me, src);
        if (redist_mpi_prepared_async(pr)) {
            st = redist_mpi_start(pr, err);
            if (!st)
                st = redist_mpi_wait(pr, rep, err);
        } else {
            st = redist_mpi_run(pr, rep, err);
        }
    }
    redist_mpi_prepared_free(pr);
    return st;
}

static void run_plan(const redist_plan_t *plan, const run_cfg *cfg,
                     redist_mpi_t *shared)
{
    const redist_spec_t *s = redist_plan_spec(plan);
    const redist_mesh_t *mesh = redist_spec_mesh(s);
    int64_t D = redist_mesh_num_devices(mesh);
    uint64_t S = redist_spec_src_bytes(s), T = redist_spec_dst_bytes(s);
    uint64_t M = S > T ? S : T;
    redist_dtype_t dt = redist_spec_dtype(s);
    int uneven = redist_spec_is_uneven(s);
    MPI_Comm comm = MPI_COMM_WORLD;
    int me = rank;
    if (cfg->reversed) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - 1 - rank, &comm);
        MPI_Comm_rank(comm, &me);
    }
    redist_mpi_t *mx = shared && !cfg->reversed ? shared
                                                : world_ctx_for(mesh, comm);
    if (!mx) {
        if (cfg->reversed)
            MPI_Comm_free(&comm);
        return;
    }
    redist_exec_options_t eo = {cfg->preserve ? REDIST_EXEC_PRESERVE_SRC
                                              : 0u};
    redist_mpi_options_t mo = {cfg->mpi_flags, 0};
    redist_error_t err;
    redist_error_clear(&err);
    rd_mpi_set_count_limit(mx, cfg->limit);
    rd_mpi_set_ring_bytes(mx, cfg->ring ? 0 : 64 << 10);
    redist_mpi_set_options(mx, &mo, NULL);
    redist_mpi_info_t info;
    if (redist_mpi_exec_info(mx, plan, &eo, &info, &err)) {
        fail("exec_info: %s", err.text);
        goto out;
    }
    if (cfg->tight) {
        mo.max_scratch = info.min_scratch_bytes;
        if (cfg->tight == 2) /* between the least and max(src, dst) */
            mo.max_scratch += (M > mo.max_scratch ? M - mo.max_scratch : 0) /
                                  3 + 1;
        if (mo.max_scratch == 0)
            mo.max_scratch = 1; /* 0 would mean "default" */
        redist_mpi_set_options(mx, &mo, NULL);
        if (redist_mpi_exec_info(mx, plan, &eo, &info, &err)) {
            fail("exec_info (max_scratch %llu): %s",
                 (unsigned long long)mo.max_scratch, err.text);
            goto out;
        }
    }
    /* the promise */
    redist_plan_stats_t stats;
    redist_plan_stats(plan, &stats);
    CHECK(info.scratch_bytes <= info.bound_bytes,
          "promise %llu over the bound %llu",
          (unsigned long long)info.scratch_bytes,
          (unsigned long long)info.bound_bytes);
    if (!mo.max_scratch && stats.memory_efficient && !uneven)
        CHECK(info.scratch_bytes <= (cfg->preserve ? 2 * M : M),
              "promise %llu over max(src, dst) %llu (min %llu)",
              (unsigned long long)info.scratch_bytes, (unsigned long long)M,
              (unsigned long long)info.min_scratch_bytes);

    /* uneven dims: exactly this device's blocks (NULL when empty) */
    if (uneven) {
        S = redist_spec_device_bytes(s, REDIST_SIDE_FROM, me);
        T = redist_spec_device_bytes(s, REDIST_SIDE_TO, me);
    }
    unsigned char *src = S ? malloc(S) : NULL, *dst = T ? malloc(T) : NULL;
    uint64_t seed = rp_next(&rng);
    if (cfg->pattern && src)
        rd_pattern_fill(s, me, src);
    else if (src)
        rp_fill_bits(src, S, seed, me);
    if (dst)
        memset(dst, 0xEE, T);
    redist_exec_report_t rep;
    redist_status_t st;
    if (cfg->raw)
        st = redist_plan_execute(plan, redist_mpi_backend(mx), src, dst, &eo,
                                 &rep, &err);
    else if (cfg->prepared)
        st = run_prepared(mx, plan, s, me, src, dst, &eo, &rep, &err);
    else
        st = redist_mpi_execute(mx, plan, src, dst, &eo, &rep, &err);
    CHECK(st == REDIST_OK, "execute (%s%s%s limit %llu): %s",
          mode_name[(cfg->mpi_flags & 1) + 2 * (cfg->mpi_flags >> 1 & 1)],
          cfg->raw ? ", raw" : "", cfg->preserve ? ", preserve" : "",
          (unsigned long long)cfg->limit, err.text);
    if (st == REDIST_OK && !cfg->raw) {
        CHECK(rep.scratch_high_water <= info.scratch_bytes &&
                  rep.scratch_bytes == info.scratch_bytes,
              "scratch high-water %llu, reported promise %llu, promise "
              "%llu",
              (unsigned long long)rep.scratch_high_water,
              (unsigned long long)rep.scratch_bytes,
              (unsigned long long)info.scratch_bytes);
        if (mo.max_scratch)
            CHECK(rep.scratch_high_water <= mo.max_scratch,
                  "high-water %llu over max_scratch %llu",
                  (unsigned long long)rep.scratch_high_water,
                  (unsigned long long)mo.max_scratch);
        inplace_runs += info.exec.inplace_passes > 0;
        streamed_runs += rd_mpi_last_streamed(mx) > 0;
        swap_runs += rd_mpi_last_swaps(mx) > 0;
        ring_runs += rd_mpi_last_rings(mx) > 0;
        /* uneven dims: rounds are predicted for the largest device
         * (a prepared object counts on its own clone of the context) */
        CHECK(cfg->prepared ||
                  (uneven ? rd_mpi_last_exchanges(mx) <= info.exchanges
                          : rd_mpi_last_exchanges(mx) == info.exchanges),
              "%lld exchanges, predicted %lld",
              (long long)rd_mpi_last_exchanges(mx),
              (long long)info.exchanges);
    }
    if (st == REDIST_OK && (cfg->preserve || !rep.writes_src)) {
        unsigned char *orig = malloc(S ? S : 1);
        if (cfg->pattern && src)
            rd_pattern_fill(s, me, orig);
        else if (src)
            rp_fill_bits(orig, S, seed, me);
        CHECK(!S || memcmp(orig, src, S) == 0,
              "source modified (preserve %d)", cfg->preserve);
        free(orig);
    }
    if (cfg->pattern) {
        rd_mismatch mm;
        memset(&mm, 0, sizeof mm);
        int bad = st == REDIST_OK && rd_pattern_check(s, me, dst, &mm);
        CHECK(!bad, "%s %s: device %d local %llu: expected %s got %s",
              redist_dtype_name(dt), redist_reduce_name(redist_spec_reduce(s)),
              me, (unsigned long long)mm.local_index, mm.expected, mm.got);
        pattern_checked++;
    } else {
        /* byte for byte against the sim on rank 0 (device = comm rank) */
        unsigned char *alld = me == 0 ? malloc(T * (uint64_t)D) : NULL;
        MPI_Gather(dst, (int)T, MPI_BYTE, alld, (int)T, MPI_BYTE, 0, comm);
        if (me == 0) {
            void **dd = NULL;
            redist_error_t e2;
            redist_error_clear(&e2);
            if (rp_sim_expect(plan, seed, 0, &eo, &dd, &e2))
                fail("sim: %s", e2.text);
            else
                for (int64_t r = 0; r < D; r++)
                    if (memcmp(dd[r], alld + (uint64_t)r * T, T)) {
                        uint64_t k = 0;
                        while (((unsigned char *)dd[r])[k] ==
                               alld[(uint64_t)r * T + k])
                            k++;
                        fail("%s %s %s: device %lld differs from the sim "
                             "at byte %llu of %llu",
                             mode_name[(cfg->mpi_flags & 1) +
                                       2 * (cfg->mpi_flags >> 1 & 1)],
                             redist_dtype_name(dt),
                             redist_reduce_name(redist_spec_reduce(s)),
                             (long long)r, (unsigned long long)k,
                             (unsigned long long)T);
                        char *j = redist_plan_to_json(plan);
                        if (j && failures < 5)
                            fprintf(stderr, "%s\n", j);
                        free(j);
                        break;
                    }
            checks++;
            sim_compared++;
            rp_free_blocks(dd, D);
        }
        free(alld);
        gentle_barrier(comm);
    }
    mode_count[(cfg->mpi_flags & 1) + 2 * (cfg->mpi_flags >> 1 & 1)]++;
    dtype_count[dt]++;
    for (int k = 0; k < redist_plan_num_steps(plan); k++) {
        redist_step_view_t v;
        redist_plan_step(plan, k, &v);
        op_count[v.op]++;
    }
    free(src);
    free(dst);
out:
    if (mx != shared)
        redist_mpi_free(mx);
    if (cfg->reversed)
        MPI_Comm_free(&comm);
}

static void random_cfg(run_cfg *c, redist_dtype_t dt)
{
    memset(c, 0, sizeof *c);
    c->mpi_flags = (unsigned)rp_in(&rng, 0, 3);
    c->preserve = rp_next(&rng) % 3 == 0;
    int t = (int)(rp_next(&rng) % 6);
    c->tight = t == 0 ? 1 : t == 1 ? 2 : 0;
    c->limit = rp_next(&rng) % 4 == 0 ? (uint64_t)rp_in(&rng, 2, 16) : 0;
    c->raw = rp_next(&rng) % 8 == 0;
    c->reversed = rp_next(&rng) % 8 == 0;
    c->ring = rp_next(&rng) % 2 == 0;
    c->pattern = (c->mpi_flags & REDIST_MPI_NATIVE_REDUCE) && !is_integer(dt);
    if (!c->pattern && rp_next(&rng) % 4 == 0)
        c->pattern = 1;
}

/* ------------------------------------------------------------- cases */

/* A planned random spec; with `uneven`, redrawn by rp_uneven_spec
 * (random shapes, often n < k, each side its rule or explicit blocks
 * with zero lengths) and checked exactly with the pattern on buffers of
 * each device's own size. */
static void planned_case(int uneven)
{
    redist_mesh_t *m = rp_mesh_exact(&rng, nranks, 1);
    rp_problem p;
    rp_planned(&rng, m, uneven ? 2 : 3, &p);
    run_cfg cfg;
    random_cfg(&cfg, p.dtype);
    cfg.pattern |= uneven;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_plan_options_t po;
    memset(&po, 0, sizeof po);
    po.max_states = 200000;
    if (rp_next(&rng) % 3 == 0) /* the time objective: may use exchanges */
        po.objective = REDIST_OBJECTIVE_TIME;
    redist_status_t st = uneven && p.nd == 0 ? REDIST_ERR_INVALID
                         : uneven ? rp_uneven_spec(&rng, &p, &spec, NULL)
                                  : rp_spec(&p, &spec, NULL);
    if (st || p.elems > 6000 || redist_plan_create(spec, &po, &plan, NULL)) {
        skipped++;
    } else {
        cases++;
        uneven_cases += redist_spec_is_uneven(spec);
        run_plan(plan, &cfg, NULL);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

/* Uneven reductions with empty blocks: a 1-d array whose source is
 * pending over some axes (split or replicated over others), reduced to a
 * type split over a random set of axes (a reduce-scatter) or to a
 * replicated one (an all-reduce); small shapes, so that groups reduce
 * different counts and some devices hold nothing.  Each runs through
 * redist_mpi_execute, redist_plan_execute on the endpoint and a prepared
 * object in turn (entry), with or without the source preserved.  The
 * work space of such plans was once sized from the largest count: a
 * group with a smaller count needed more, failed alone and the other
 * ranks hung. */
static void uneven_reduce_case(int entry)
{
    redist_mesh_t *m = rp_mesh_exact(&rng, nranks, 1);
    int na = redist_mesh_num_axes(m);
    rp_problem p;
    memset(&p, 0, sizeof p);
    p.mesh = m;
    p.nd = 1;
    rp_dtype_reduce(&rng, &p);
    p.from.ndims = p.to.ndims = 1;
    uint32_t partial = 0;
    for (int a = 0; a < na; a++)
        if (redist_mesh_axis_size(m, a) > 1 && rp_next(&rng) % 2)
            partial |= 1u << a;
    if (!partial) /* at least one axis of more than one device */
        for (int a = 0; a < na && !partial; a++)
            if (redist_mesh_axis_size(m, a) > 1)
                partial = 1u << a;
    p.from.partial = partial;
    int all = rp_next(&rng) % 3 == 0; /* an all-reduce: target replicated */
    for (int a = 0; a < na; a++) {
        int in_partial = partial >> a & 1;
        if (!in_partial && rp_next(&rng) % 3 == 0) /* source split too */
            p.from.dims[0][p.from.dim_naxes[0]++] = (uint8_t)a;
        if (!all && (in_partial || rp_next(&rng) % 2))
            p.to.dims[0][p.to.dim_naxes[0]++] = (uint8_t)a;
    }
    /* the source's split axes stay split in the target, first */
    if (!all) {
        redist_type_t t = p.to;
        t.dim_naxes[0] = 0;
        for (int j = 0; j < p.from.dim_naxes[0]; j++)
            t.dims[0][t.dim_naxes[0]++] = p.from.dims[0][j];
        for (int j = 0; j < p.to.dim_naxes[0]; j++)
            t.dims[0][t.dim_naxes[0]++] = p.to.dims[0][j];
        p.to = t;
    } else {
        p.to.dims[0][0] = 0;
        p.to.dim_naxes[0] = 0;
        for (int j = 0; j < p.from.dim_naxes[0]; j++)
            p.to.dims[0][p.to.dim_naxes[0]++] = p.from.dims[0][j];
    }
    run_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.pattern = 1;
    cfg.preserve = rp_next(&rng) % 3 != 0; /* no spare in the source */
    cfg.raw = entry == 1;
    cfg.prepared = entry == 2;
    cfg.ring = rp_next(&rng) % 2;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (rp_uneven_spec(&rng, &p, &spec, NULL) ||
        redist_plan_create(spec, NULL, &plan, NULL)) {
        skipped++;
    } else {
        cases++;
        uneven_cases += redist_spec_is_uneven(spec);
        uneven_reduce_runs++;
        run_plan(plan, &cfg, NULL);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
}

static void walk_case(void)
{
    redist_mesh_t *m = rp_mesh_exact(&rng, nranks, 1);
    rp_problem p;
    rp_walk_start(&rng, m, 2, &p);
    run_cfg cfg;
    random_cfg(&cfg, p.dtype);
    rp_walk w;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    /* half the walks with exchange steps: whole steps with box datatypes
     * (packed mode: the executor's pack and unpack) */
    int exchanges = (int)(rp_next(&rng) % 2);
    if (p.elems > 6000 || rp_random_walk(&rng, &p, 5, exchanges, &w))
        skipped++;
    else if (rp_walk_plan(&p, &w, &plan, &err))
        fail("building a walk's plan: %s", err.text);
    else {
        cases++;
        run_plan(plan, &cfg, NULL);
    }
    redist_plan_free(plan);
    redist_mesh_free(m);
}

/* Every dtype x op x mode on plans that reduce: partial over every axis
 * to sharded (reduce_scatter), to replicated (all_reduce, with a count
 * not divisible by the group), and a mixed one. */
static void dtype_op_cases(int quick)
{
    int64_t sizes[2] = {nranks % 2 == 0 && nranks > 2 ? 2 : 1,
                        nranks % 2 == 0 && nranks > 2 ? nranks / 2 : nranks};
    redist_mesh_t *m = NULL;
    redist_mesh_create(2, rp_axis_names, sizes, &m, NULL);
    /* one context for all of them: plans and options change, the
     * communicators stay */
    redist_mpi_t *mx = world_ctx_for(m, MPI_COMM_WORLD);
    for (int shape_kind = 0; shape_kind < 3 && mx; shape_kind++) {
        redist_type_t from, to;
        redist_type_init(&from, 2);
        redist_type_init(&to, 2);
        redist_type_add_partial(&from, 0);
        redist_type_add_partial(&from, 1);
        int64_t shape[2] = {6 * sizes[0] * sizes[1], 5};
        if (shape_kind == 0) { /* reduce_scatter on both axes */
            redist_type_push_axis(&to, 0, 1);
            redist_type_push_axis(&to, 0, 0);
        } else if (shape_kind == 1) { /* all_reduce, ragged */
            shape[0] = 7;
            shape[1] = 3;
        } else { /* rs on b, all_reduce on a */
            redist_type_push_axis(&to, 1, 1);
            shape[1] = 4 * sizes[1];
        }
        for (int dt = 0; dt < REDIST_DTYPE_COUNT; dt++)
            for (int op = 0; op < REDIST_REDUCE_COUNT; op++) {
                redist_spec_t *spec = NULL;
                redist_plan_t *plan = NULL;
                redist_error_t err;
                redist_error_clear(&err);
                if (redist_spec_create(m, 2, shape, (redist_dtype_t)dt, &from,
                                       &to, (redist_reduce_t)op, NULL, &spec,
                                       &err) ||
                    redist_plan_create(spec, &bytes_opts, &plan, &err)) {
                    fail("dtype/op spec: %s", err.text);
                    redist_spec_free(spec);
                    continue;
                }
                for (unsigned mode = 0; mode < 4; mode++) {
                    /* quick (sanitizers): one mode each, in rotation */
                    if (quick && (int)mode != (dt + op + shape_kind) % 4)
                        continue;
                    run_cfg cfg;
                    memset(&cfg, 0, sizeof cfg);
                    cfg.mpi_flags = mode;
                    cfg.pattern = (mode & REDIST_MPI_NATIVE_REDUCE) &&
                                  !is_integer((redist_dtype_t)dt);
                    cfg.tight = (dt + op + (int)mode) % 5 == 0;
                    cfg.ring = (dt + op) % 2;
                    cases++;
                    run_plan(plan, &cfg, mx);
                    if (mode == 0) { /* pattern data too, ordered */
                        cfg.pattern = 1;
                        cases++;
                        run_plan(plan, &cfg, mx);
                    }
                }
                redist_plan_free(plan);
                redist_spec_free(spec);
            }
    }
    redist_mpi_free(mx);
    redist_mesh_free(m);
}

/* ------------------------------------------------------- agreement */

static int contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

static redist_plan_t *simple_plan(const redist_mesh_t *m, redist_dtype_t dt,
                                  int64_t rows)
{
    /* [{axis 0}] -> [{}] partial-free all_gather, or a copy on 1 rank */
    redist_type_t from, to;
    redist_type_init(&from, 2);
    redist_type_init(&to, 2);
    redist_type_push_axis(&from, 0, 0);
    redist_type_push_axis(&to, 1, 0);
    int64_t shape[2] = {rows * redist_mesh_axis_size(m, 0),
                        2 * redist_mesh_axis_size(m, 0)};
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (redist_spec_create(m, 2, shape, dt, &from, &to, REDIST_REDUCE_SUM,
                           NULL, &spec, NULL) ||
        redist_plan_create(spec, &bytes_opts, &plan, NULL))
        fail("simple plan");
    redist_spec_free(spec);
    return plan;
}

static void test_agreement(void)
{
    redist_error_t err;
    redist_mpi_t *mx = NULL;
    redist_status_t st;
    int64_t n1 = nranks + 1, nn = nranks;
    redist_mesh_t *wrong = NULL, *mesh = NULL, *mesh2 = NULL;
    redist_mesh_create(1, rp_axis_names, &n1, &wrong, NULL);
    redist_mesh_create(1, rp_axis_names, &nn, &mesh, NULL);
    int64_t s2[2] = {1, nranks};
    redist_mesh_create(2, rp_axis_names, s2, &mesh2, NULL);

    /* a communicator whose size is not the mesh's device count */
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, wrong, NULL, &mx, &err);
    CHECK(st == REDIST_ERR_INVALID && !mx &&
              contains(err.text, "the communicator has") &&
              contains(err.text, "devices"),
          "wrong-size communicator: %d %s", (int)st, err.text);
    CHECK(all_equal_int(st), "wrong size: ranks disagree");
    if (nranks > 1) { /* the same on halves of the world */
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        redist_error_clear(&err);
        st = redist_mpi_create(half, mesh, NULL, &mx, &err);
        CHECK(st == REDIST_ERR_INVALID && !mx,
              "half communicator with the world's mesh: %d %s", (int)st,
              err.text);
        MPI_Comm_free(&half);
    }
    /* ranks passing different meshes (same device count) */
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, rank == nranks - 1 ? mesh2 : mesh,
                           NULL, &mx, &err);
    CHECK((nranks == 1 ? st == REDIST_OK : st == REDIST_ERR_MISMATCH) &&
              (nranks == 1 || contains(err.text, "different meshes")),
          "different meshes: %d %s", (int)st, err.text);
    redist_mpi_free(mx);
    mx = NULL;
    /* bad flags on one rank */
    redist_mpi_options_t bad = {rank == 0 ? 0x100u : 0u, 0};
    redist_error_clear(&err);
    st = redist_mpi_create(MPI_COMM_WORLD, mesh, &bad, &mx, &err);
    CHECK(st == REDIST_ERR_INVALID && !mx &&
              (rank == 0 ? contains(err.text, "unknown MPI backend flags")
                         : contains(err.text, "device 0 failed")),
          "bad flags on rank 0: %d %s", (int)st, err.text);
    CHECK(redist_mpi_create(MPI_COMM_NULL, mesh, NULL, &mx, NULL) ==
              REDIST_ERR_INVALID,
          "MPI_COMM_NULL");

    /* a working context, then failures of execute */
    redist_error_clear(&err);
    if (redist_mpi_create(MPI_COMM_WORLD, mesh, NULL, &mx, &err)) {
        fail("create: %s", err.text);
        goto out;
    }
    CHECK(redist_mpi_rank(mx) == rank && redist_mpi_size(mx) == nranks &&
              redist_mpi_comm(mx) != MPI_COMM_NULL &&
              redist_mpi_axis_comm(mx, 0) != MPI_COMM_NULL &&
              redist_mpi_axis_comm(mx, 1) == MPI_COMM_NULL,
          "context accessors");
    redist_plan_t *p1 = simple_plan(mesh, REDIST_F32, 3);
    redist_plan_t *p2 = simple_plan(mesh, REDIST_I32, 3);
    redist_plan_t *p3 = simple_plan(mesh2, REDIST_F32, 3);
    const redist_spec_t *sp = redist_plan_spec(p1);
    uint64_t S = redist_spec_src_bytes(sp), T = redist_spec_dst_bytes(sp);
    char *src = calloc(1, S), *dst = calloc(1, T);
    redist_exec_report_t rep;

    /* different plans: REDIST_ERR_MISMATCH everywhere */
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, rank == 0 && nranks > 1 ? p2 : p1, src, dst,
                            NULL, &rep, &err);
    if (nranks > 1)
        CHECK(st == REDIST_ERR_MISMATCH &&
                  contains(err.text, "different plans"),
              "different plans: %d %s", (int)st, err.text);
    /* a NULL buffer on the last rank */
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, p1, rank == nranks - 1 ? NULL : src, dst,
                            NULL, &rep, &err);
    char want[64];
    snprintf(want, sizeof want, "device %d failed", nranks - 1);
    CHECK(st == REDIST_ERR_INVALID &&
              (rank == nranks - 1 ? contains(err.text, "NULL buffer")
                                  : contains(err.text, want)),
          "NULL src on the last rank: %d %s", (int)st, err.text);
    /* different options on one rank */
    if (nranks > 1) {
        redist_mpi_options_t o = {rank == 1 ? REDIST_MPI_PACKED : 0u, 0};
        redist_mpi_set_options(mx, &o, NULL);
        redist_error_clear(&err);
        st = redist_mpi_execute(mx, p1, src, dst, NULL, &rep, &err);
        CHECK(st == REDIST_ERR_MISMATCH, "different options: %d %s", (int)st,
              err.text);
        o.flags = 0;
        redist_mpi_set_options(mx, &o, NULL);
    }
    /* a plan on another mesh (same device count, other axes) */
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, p3, src, dst, NULL, &rep, &err);
    CHECK(st == REDIST_ERR_INVALID && (contains(err.text, "axis sizes") ||
                                       contains(err.text, "device 0")),
          "plan on another mesh: %d %s", (int)st, err.text);
    CHECK(all_equal_int(st), "plan on another mesh: ranks disagree");
    /* max_scratch below the minimum of a reducing plan */
    {
        redist_type_t from, to;
        redist_type_init(&from, 1);
        redist_type_init(&to, 1);
        redist_type_add_partial(&from, 0);
        redist_type_push_axis(&to, 0, 0);
        int64_t shape[1] = {4 * nranks};
        redist_spec_t *spec = NULL;
        redist_plan_t *pr = NULL;
        redist_spec_create(mesh, 1, shape, REDIST_F64, &from, &to,
                           REDIST_REDUCE_SUM, NULL, &spec, NULL);
        redist_plan_create(spec, &bytes_opts, &pr, NULL);
        redist_mpi_info_t info;
        redist_mpi_exec_info(mx, pr, NULL, &info, NULL);
        if (nranks > 1 && info.min_scratch_bytes > 1) {
            redist_mpi_options_t o = {0, info.min_scratch_bytes - 1};
            redist_mpi_set_options(mx, &o, NULL);
            double *s1 = calloc((size_t)(4 * nranks), 8), *d1 = calloc(4, 8);
            redist_error_clear(&err);
            st = redist_mpi_execute(mx, pr, s1, d1, NULL, &rep, &err);
            CHECK(st == REDIST_ERR_LIMIT &&
                      (contains(err.text, "below the least") ||
                       contains(err.text, "device 0")),
                  "max_scratch too small: %d %s", (int)st, err.text);
            CHECK(redist_mpi_exec_info(mx, pr, NULL, &info, NULL) ==
                      REDIST_ERR_LIMIT,
                  "exec_info with max_scratch too small");
            /* the raw path refuses it too, collectively */
            redist_error_clear(&err);
            st = redist_plan_execute(pr, redist_mpi_backend(mx), s1, d1,
                                     NULL, &rep, &err);
            CHECK(st == REDIST_ERR_LIMIT || st == REDIST_ERR_NOMEM,
                  "raw, max_scratch too small: %d %s", (int)st, err.text);
            o.max_scratch = 0;
            redist_mpi_set_options(mx, &o, NULL);
            free(s1);
            free(d1);
        }
        redist_plan_free(pr);
        redist_spec_free(spec);
    }
    /* and the context still works */
    rd_pattern_fill(sp, rank, src);
    redist_error_clear(&err);
    st = redist_mpi_execute(mx, p1, src, dst, NULL, &rep, &err);
    rd_mismatch mm;
    memset(&mm, 0, sizeof mm);
    CHECK(st == REDIST_OK && !rd_pattern_check(sp, rank, dst, &mm),
          "after the failures: %d %s", (int)st, err.text);
    CHECK(redist_mpi_execute(NULL, p1, src, dst, NULL, &rep, NULL) ==
              REDIST_ERR_INVALID,
          "NULL context");
    free(src);
    free(dst);
    redist_plan_free(p1);
    redist_plan_free(p2);
    redist_plan_free(p3);
out:
    redist_mpi_free(mx);
    redist_mesh_free(wrong);
    redist_mesh_free(mesh);
    redist_mesh_free(mesh2);
}

/* -------------------------------------------- beyond INT_MAX, for real */

static int big_test(void)
{
    /* u8[N] over x=2: [{x}] -> [{}], an all_gather of N/2 > INT_MAX / 2
     * bytes per rank into N > INT_MAX elements */
    int64_t n = nranks, N = (1LL << 31) + 2 * 4096;
    redist_mesh_t *m = NULL;
    redist_mesh_create(1, rp_axis_names, &n, &m, NULL);
    redist_type_t from, to;
    redist_type_init(&from, 1);
    redist_type_init(&to, 1);
    redist_type_push_axis(&from, 0, 0);
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_create(m, 1, &N, REDIST_U8, &from, &to,
                           REDIST_REDUCE_SUM, NULL, &spec, &err) ||
        redist_plan_create(spec, &bytes_opts, &plan, &err)) {
        fail("big spec: %s", err.text);
        return 1;
    }
    uint64_t S = redist_spec_src_bytes(spec), T = redist_spec_dst_bytes(spec);
    unsigned char *src = malloc(S), *dst = malloc(T);
    for (uint64_t i = 0; i < S; i++)
        src[i] = (unsigned char)(((uint64_t)rank * S + i) % 251);
    redist_mpi_t *mx = world_ctx_for(m, MPI_COMM_WORLD);
    redist_exec_report_t rep;
    double t0 = MPI_Wtime();
    redist_status_t st = redist_mpi_execute(mx, plan, src, dst, NULL, &rep,
                                            &err);
    double t = MPI_Wtime() - t0;
    CHECK(st == REDIST_OK, "big all_gather: %s", err.text);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < T && st == REDIST_OK; i++)
        bad += dst[i] != (unsigned char)(i % 251);
    CHECK(bad == 0, "big all_gather: %llu wrong bytes",
          (unsigned long long)bad);
    if (rank == 0)
        printf("all_gather of %llu u8 elements (%llu per rank) in %.3f s: "
               "%s\n",
               (unsigned long long)T, (unsigned long long)S, t,
               bad || st ? "WRONG" : "exact");
    free(src);
    free(dst);
    redist_mpi_free(mx);
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mesh_free(m);
    return 0;
}

/* A plan known to need the in-place and streamed paths under the least
 * scratch: a reduce_scatter then an all_gather (partial to replicated the
 * long way), with and without the source preserved, in every mode, with
 * max_scratch at the least the executor reports.  The random cases reach
 * these paths too, but only by chance; this makes the coverage checks
 * below hold whatever the random sequence. */
static void directed_cases(void)
{
    if (nranks < 2)
        return;
    int64_t sz = nranks;
    const char *nm = "x";
    redist_mesh_t *m = NULL;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (redist_mesh_create(1, &nm, &sz, &m, NULL))
        fail("directed mesh");
    redist_mpi_t *mx = m ? world_ctx_for(m, MPI_COMM_WORLD) : NULL;
    redist_type_t part, rows, repl;
    redist_type_init(&part, 2);
    redist_type_add_partial(&part, 0);
    redist_type_init(&rows, 2);
    redist_type_push_axis(&rows, 0, 0);
    redist_type_init(&repl, 2);
    int64_t shape[2] = {4 * sz, 3};
    redist_step_view_t st[2];
    memset(st, 0, sizeof st);
    st[0].op = REDIST_OP_REDUCE_SCATTER;
    st[1].op = REDIST_OP_ALL_GATHER;
    for (int k = 0; k < 2; k++) {
        st[k].dim = 0;
        st[k].from_dim = st[k].to_dim = -1;
        st[k].axis = 0;
    }
    if (m && (redist_spec_create(m, 2, shape, REDIST_F64, &part, &repl,
                                 REDIST_REDUCE_SUM, NULL, &spec, NULL) ||
              redist_plan_from_steps(spec, 2, st, &plan, NULL)))
        fail("directed plans");
    for (unsigned flags = 0; flags < 4 && mx && plan; flags++)
        for (int pres = 0; pres < 2; pres++) {
            run_cfg cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.mpi_flags = flags;
            cfg.tight = 1;
            cfg.pattern = 1;
            cfg.preserve = pres;
            cases++;
            run_plan(plan, &cfg, mx);
        }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mpi_free(mx);
    redist_mesh_free(m);
}

/* Sums pending over every axis of a mesh of two or three axes (x=2,
 * y=2, z=n/4 at 8 ranks; x=2, y=n/2 otherwise), reduce-scattered along
 * dim 0 one axis after the other: the executor runs the steps as one
 * exchange of the contributions and one sum in the steps' order
 * (RD_BUILD_LOWER_RS, src/backend/mpi/execute.c).  One-shot on random
 * bits, compared with the sim byte for byte; prepared on the pattern
 * (run_prepared checks it); exactly one exchange predicted. */
static void fused_rs_case(void)
{
    if (nranks < 4 || nranks % 2)
        return;
    int na = nranks == 8 ? 3 : 2;
    const char *nm[3] = {"x", "y", "z"};
    int64_t sz[3] = {2, na == 3 ? 2 : nranks / 2, 2};
    redist_mesh_t *m = NULL;
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    if (redist_mesh_create(na, nm, sz, &m, NULL))
        fail("fused reduce_scatter mesh");
    redist_mpi_t *mx = m ? world_ctx_for(m, MPI_COMM_WORLD) : NULL;
    redist_type_t part, rows;
    redist_type_init(&part, 2);
    redist_type_init(&rows, 2);
    redist_step_view_t st[3];
    memset(st, 0, sizeof st);
    for (int a = 0; a < na; a++) {
        redist_type_add_partial(&part, a);
        redist_type_push_axis(&rows, 0, a);
        st[a].op = REDIST_OP_REDUCE_SCATTER;
        st[a].dim = 0;
        st[a].from_dim = st[a].to_dim = -1;
        st[a].axis = a;
    }
    int64_t shape[2] = {3 * (int64_t)nranks, 5};
    if (m && (redist_spec_create(m, 2, shape, REDIST_F32, &part, &rows,
                                 REDIST_REDUCE_SUM, NULL, &spec, NULL) ||
              redist_plan_from_steps(spec, na, st, &plan, NULL)))
        fail("fused reduce_scatter plan");
    redist_mpi_info_t info;
    if (mx && plan && !redist_mpi_exec_info(mx, plan, NULL, &info, NULL))
        CHECK(info.exchanges == 1,
              "%d reduce_scatters along one dim: %lld exchanges predicted, "
              "expected 1 (lowered and fused)",
              na, (long long)info.exchanges);
    for (int prep = 0; prep < 2 && mx && plan; prep++) {
        run_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.prepared = prep;
        cfg.pattern = prep;
        cases++;
        run_plan(plan, &cfg, mx);
    }
    redist_plan_free(plan);
    redist_spec_free(spec);
    redist_mpi_free(mx);
    redist_mesh_free(m);
}

/* ---------------------------------------------------------------- main */

/* Keep Open MPI's and PMIx's plugins mapped after MPI_Finalize closes
 * them, so that LeakSanitizer can name the module of every frame of the
 * leaks they leave (and match tests/mpi/lsan.supp) quickly. */
static int pin_one(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    (void)user;
    const char *n = info->dlpi_name;
    if (n && n[0])
        dlopen(n, RTLD_NOW | RTLD_NOLOAD);
    return 0;
}

static void pin_plugins(void) { dl_iterate_phdr(pin_one, NULL); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    double t0 = MPI_Wtime();
    int total_fail = 0;
    const int big = argc > 1 && strcmp(argv[1], "--big") == 0;
    const int random_only = argc > 3 && strcmp(argv[3], "random") == 0;
    if (big) {
        big_test();
    } else {
        int ncases = argc > 1 ? atoi(argv[1]) : 100;
        rp_seed(&rng, argc > 2 ? argv[2] : NULL, (uint64_t)nranks);
        if (!random_only) {
            test_datatypes();
            test_agreement();
            dtype_op_cases(argc > 3 && strcmp(argv[3], "quick") == 0);
        }
        directed_cases();
        fused_rs_case();
        for (int i = 0; nranks > 1 && i < ncases; i++)
            uneven_reduce_case(i % 3);
        for (int i = 0; i < ncases; i++) {
            if (i % 3 == 1)
                walk_case();
            else
                planned_case(i % 3 == 2);
        }
    }
    /* the tight bounds must reach the in-place and streamed paths (a
     * random-only run of a few cases promises no such coverage) */
    if (nranks > 1 && !big && !random_only) {
        CHECK(inplace_runs > 0, "no run had steps in place");
        CHECK(streamed_runs > 0, "no run streamed a reduction");
        CHECK(uneven_reduce_runs > 0, "no uneven reduction ran");
        /* groups of 3, 5, 6, 7 ... members gather by ring */
        if (nranks & (nranks - 1))
            CHECK(ring_runs > 0, "no all-gather ran as a ring");
    }
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    int total_checks = 0;
    MPI_Reduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, 0,
               MPI_COMM_WORLD);
    if (rank == 0 && !big) {
        printf("mpi, %d rank%s: %d cases (%d skipped: no plan or too "
               "large; %d uneven), %d compared with the sim byte for byte, "
               "%d checked with the exact pattern; %d checks, %d failed; "
               "%.2f s\n",
               nranks, nranks == 1 ? "" : "s", cases, skipped, uneven_cases,
               sim_compared,
               pattern_checked, total_checks, total_fail, MPI_Wtime() - t0);
        printf("  memory: %d runs with steps in place, %d with streamed "
               "reductions, %d with in-place swaps, %d with ring "
               "all-gathers, %d uneven reductions (rank 0)\n",
               inplace_runs, streamed_runs, swap_runs, ring_runs,
               uneven_reduce_runs);
        printf("  modes:");
        for (int k = 0; k < 4; k++)
            printf(" %s %d", mode_name[k], mode_count[k]);
        printf("\n  ops:");
        for (int k = 0; k < REDIST_OP_COUNT; k++)
            printf(" %s %d", redist_op_name((redist_op_t)k), op_count[k]);
        printf("\n  dtypes:");
        for (int k = 0; k < REDIST_DTYPE_COUNT; k++)
            printf(" %s %d", redist_dtype_name((redist_dtype_t)k),
                   dtype_count[k]);
        printf("\n");
    }
    pin_plugins();
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
