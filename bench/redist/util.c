/*
 * Small helpers of bench_redist: errors, rank-0 output, allocation,
 * agreement over the ranks, byte formatting.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "../../src/core/internal.h"

void die(const char *fmt, ...)
{
    char msg[2048]; /* one write: the ranks' lines do not interleave */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench_redist: rank %d: %s\n", g_rank, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

void die_err(const redist_error_t *err, const char *what)
{
    char msg[600];
    die("%s: %s", what, redist_error_format(err, msg, sizeof msg));
}

void die_run(const bcase_t *c, const impl_t *im, const redist_error_t *err)
{
    char what[700];
    snprintf(what, sizeof what, "%s: %s failed", c->name, im->impl->name);
    die_err(err, what);
}

void say(const char *fmt, ...)
{
    if (g_rank != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t umax_over_ranks(uint64_t v)
{
    uint64_t r;
    MPI_Allreduce(&v, &r, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return r;
}

int all_ok(int ok)
{
    int r;
    MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return r;
}

void fmt_bytes(uint64_t b, char *buf, size_t n) { rd_format_bytes(b, buf, n); }
