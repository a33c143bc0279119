/*
 * The implementations bench_redist compares, in the order of the report
 * and the CSV rows; the interface is bench_impl_t (bench.h), each
 * implementation its own impl_*.c file.  To add one: write its file,
 * add it to bench/meson.build and one line here.  One this binary was
 * built without (needs OpenSHMEM or ScaLAPACK) keeps its row, without
 * hooks, so that its name is still known and every case says why it
 * did not run.
 */
#include <string.h>

#include "bench.h"

extern const bench_impl_t bench_redist_mpi, bench_redist_mpi_prep,
    bench_redist_mpi_start, bench_redist_mpi_win, bench_redist_mpi_bytes, bench_redist_mpi_packed,
    bench_gather, bench_alltoallv, bench_alltoallw, bench_memcpy,
    bench_transport;

#ifdef BENCH_HAVE_SHMEM
extern const bench_impl_t bench_redist_shmem, bench_redist_shmem_prep,
    bench_redist_shmem_bytes;
#else
static const bench_impl_t bench_redist_shmem = {
    .name = "redist-shmem", .needs = BENCH_MPI | BENCH_SHMEM};
static const bench_impl_t bench_redist_shmem_prep = {
    .name = "redist-shmem-prep", .needs = BENCH_MPI | BENCH_SHMEM};
static const bench_impl_t bench_redist_shmem_bytes = {
    .name = "redist-shmem-bytes", .needs = BENCH_MPI | BENCH_SHMEM,
    .flags = BENCH_BYTES_PLAN};
#endif

#ifdef BENCH_HAVE_SCALAPACK
extern const bench_impl_t bench_pdgemr2d;
#else
static const bench_impl_t bench_pdgemr2d = {
    .name = "pdgemr2d", .needs = BENCH_MPI | BENCH_SCALAPACK,
    .flags = BENCH_WHOLE_TARGET};
#endif

const bench_impl_t *const bench_impls[] = {
    &bench_redist_mpi,         &bench_redist_mpi_prep,
    &bench_redist_mpi_start,   &bench_redist_mpi_win,
    &bench_redist_mpi_bytes,
    &bench_redist_mpi_packed,  &bench_redist_shmem,
    &bench_redist_shmem_prep,  &bench_redist_shmem_bytes,
    &bench_gather,             &bench_alltoallv,
    &bench_alltoallw,          &bench_pdgemr2d,
    &bench_memcpy,             &bench_transport,
};
const int bench_nimpls = (int)(sizeof bench_impls / sizeof bench_impls[0]);

_Static_assert(sizeof bench_impls / sizeof bench_impls[0] <= BENCH_MAX_IMPLS,
               "BENCH_MAX_IMPLS too small");

int bench_built(unsigned needs)
{
#ifndef BENCH_HAVE_SHMEM
    if (needs & BENCH_SHMEM)
        return 0;
#endif
#ifndef BENCH_HAVE_SCALAPACK
    if (needs & BENCH_SCALAPACK)
        return 0;
#endif
    (void)needs;
    return 1;
}

unsigned bench_parse_impls(const char *list)
{
    unsigned m = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        if (strcmp(tok, "all") == 0) {
            m |= (1u << bench_nimpls) - 1;
            continue;
        }
        for (k = 0; k < bench_nimpls; k++)
            if (strcmp(tok, bench_impls[k]->name) == 0)
                break;
        if (k == bench_nimpls)
            die("unknown implementation '%s'", tok);
        m |= 1u << k;
    }
    return m;
}
