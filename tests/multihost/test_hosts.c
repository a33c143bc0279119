/*
 * redist_mpi_discover_hosts (redist/mpi.h): which host each rank runs on.
 *
 *   mpirun -np N test_hosts [K]
 *
 * Without K every rank must be on one host (the mpi suite, one machine);
 * with K, rank r must be on host r / K (the multihost suite's layouts,
 * tests/multihost/mpirun.sh --per-host K).  Checks, every one on every
 * rank:
 *  - MPI_COMM_WORLD gives that map, the same on every rank;
 *  - a sub-communicator (the odd ranks, reversed) gives its own map:
 *    hosts renumbered in the order of their lowest sub-rank;
 *  - bad input on one rank only (a wrong nranks on rank 1, a NULL array
 *    on the last rank, an allocation failure on rank 0) fails on every
 *    rank with REDIST_ERR_INVALID / REDIST_ERR_NOMEM and a message, and
 *    leaves every rank's array unwritten; MPI_COMM_NULL fails at once;
 *  - after the failures, a good call still succeeds (nothing left
 *    half-collective);
 *  - the verdicts on gathered tables no real MPI gives: two hosts with
 *    one name, ranks sharing memory with two names, a bad lowest rank
 *    (rd_mpi_number_hosts).
 * Prints "test_hosts: N ranks on H hosts: ok" on rank 0; exit 0, or 1
 * after the failures on any rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/mpi.h"
#include "../../src/backend/mpi/mpi_internal.h"

static int fails;
static int rank, size;

#define CHECK(c, ...)                                                      \
    do {                                                                   \
        if (!(c)) {                                                        \
            fprintf(stderr, "test_hosts: rank %d: ", rank);                \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            fails++;                                                       \
        }                                                                  \
    } while (0)

/* host of world rank r: r / per, or 0 on one host */
static int64_t want(int r, int per) { return per > 0 ? r / per : 0; }

static void bad_call(const char *what, int64_t nranks, int null_here,
                     int fail_alloc, redist_status_t expect)
{
    int64_t *h = malloc((size_t)size * sizeof *h);
    for (int r = 0; r < size; r++)
        h[r] = -7;
    redist_error_t err = REDIST_ERROR_INIT;
    if (fail_alloc)
        rd_mpi_fail_allocs(1);
    redist_status_t st = redist_mpi_discover_hosts(
        MPI_COMM_WORLD, nranks, null_here ? NULL : h, &err);
    rd_mpi_fail_allocs(0);
    CHECK(st == expect, "%s: status %d, expected %d (%s)", what, (int)st,
          (int)expect, err.text);
    CHECK(err.status == st && err.text[0], "%s: no error message", what);
    for (int r = 0; r < size; r++)
        CHECK(h[r] == -7, "%s: hosts[%d] written on failure", what, r);
    free(h);
}

/* The verdicts on tables no real MPI gives (rd_mpi_number_hosts). */
static void tables(void)
{
    /* ranks 0,1 | 2 | 3,4 share memory; names a a b c c */
    uint64_t good[10] = {0, 11, 0, 11, 2, 22, 3, 33, 3, 33};
    int64_t out[5], want_map[5] = {0, 0, 1, 2, 2};
    redist_error_t err = REDIST_ERROR_INIT;
    CHECK(rd_mpi_number_hosts(good, 5, out, &err) == REDIST_OK &&
              memcmp(out, want_map, sizeof out) == 0,
          "a good table: %s", err.text);
    struct {
        const char *what, *says;
        uint64_t tab[10];
        redist_status_t st;
    } bad[] = {
        {"two hosts with one name", "two hosts with one name",
         {0, 11, 0, 11, 2, 11, 3, 33, 3, 33}, REDIST_ERR_MISMATCH},
        {"one host with two names", "different processor names",
         {0, 11, 0, 12, 2, 22, 3, 33, 3, 33}, REDIST_ERR_MISMATCH},
        {"a lowest rank above the rank", "which it is not",
         {0, 11, 2, 11, 2, 22, 3, 33, 3, 33}, REDIST_ERR_BACKEND},
        {"a lowest rank that is not its own", "which it is not",
         {0, 11, 0, 11, 2, 22, 3, 33, 1, 33}, REDIST_ERR_BACKEND},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        redist_error_clear(&err);
        redist_status_t st = rd_mpi_number_hosts(bad[k].tab, 5, out, &err);
        CHECK(st == bad[k].st && strstr(err.text, bad[k].says),
              "%s: status %d, message '%s'", bad[k].what, (int)st, err.text);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int per = argc > 1 ? atoi(argv[1]) : 0;
    tables();
    int64_t *h = calloc((size_t)size, sizeof *h);
    redist_error_t err = REDIST_ERROR_INIT;

    /* the whole job */
    redist_status_t st = redist_mpi_discover_hosts(MPI_COMM_WORLD, size, h,
                                                   &err);
    CHECK(st == REDIST_OK, "MPI_COMM_WORLD: %s", err.text);
    int64_t nh = 0;
    for (int r = 0; r < size && !st; r++) {
        CHECK(h[r] == want(r, per), "rank %d on host %lld, expected %lld",
              r, (long long)h[r], (long long)want(r, per));
        nh = h[r] + 1 > nh ? h[r] + 1 : nh;
    }
    /* the same map on every rank */
    int64_t sum = 0, lo = 0, hi = 0;
    for (int r = 0; r < size; r++)
        sum = sum * 31 + h[r];
    MPI_Allreduce(&sum, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "the ranks got different maps");

    /* the odd ranks, in reverse order: sub-rank k is world rank
     * odd[n-1-k]; hosts numbered by their lowest sub-rank */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &sub);
    if (rank % 2) {
        int ns = 0;
        MPI_Comm_size(sub, &ns);
        int64_t *s = calloc((size_t)ns, sizeof *s), *num = NULL;
        num = malloc((size_t)size * sizeof *num);
        for (int r = 0; r < size; r++)
            num[r] = -1;
        st = redist_mpi_discover_hosts(sub, ns, s, &err);
        CHECK(st == REDIST_OK, "odd ranks: %s", err.text);
        int64_t next = 0;
        for (int k = 0; k < ns && !st; k++) {
            int w = size - 1 - (size % 2 == 0 ? 0 : 1) - 2 * k;
            int64_t hw = want(w, per);
            if (num[hw] < 0)
                num[hw] = next++;
            CHECK(s[k] == num[hw], "odd ranks: sub-rank %d (world %d) on "
                  "host %lld, expected %lld", k, w, (long long)s[k],
                  (long long)num[hw]);
        }
        free(s);
        free(num);
    }
    MPI_Comm_free(&sub);

    /* failures on one rank are failures on every rank */
    bad_call("nranks wrong on rank 1", rank == 1 % size ? size + 1 : size, 0,
             0, REDIST_ERR_INVALID);
    bad_call("NULL hosts on the last rank", size, rank == size - 1, 0,
             REDIST_ERR_INVALID);
    bad_call("no memory on rank 0", size, 0, rank == 0, REDIST_ERR_NOMEM);
    bad_call("negative nranks", -1, 0, 0, REDIST_ERR_INVALID);
    st = redist_mpi_discover_hosts(MPI_COMM_NULL, size, h, &err);
    CHECK(st == REDIST_ERR_INVALID, "MPI_COMM_NULL: status %d", (int)st);
    st = redist_mpi_discover_hosts(MPI_COMM_WORLD, size, h, NULL);
    CHECK(st == REDIST_OK && h[size - 1] == want(size - 1, per),
          "a good call after the failures");

    int any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_hosts: %d ranks on %lld hosts: %s\n", size,
               (long long)nh, any ? "FAILED" : "ok");
    free(h);
    MPI_Finalize();
    return any ? 1 : 0;
}
