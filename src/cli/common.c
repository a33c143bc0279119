/*
 * Helpers shared by the commands of redistplan (cli.h): formatting of
 * sizes, shapes and mesh coordinates, byte counts with binary suffixes,
 * the clock, and the launcher environment of `run --backend mpi|shmem`
 * and `calibrate` (rank detection; their agreement is launch.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "../core/internal.h"

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_fmt_bytes(uint64_t b, char *buf, size_t n)
{
    char human[32];
    rd_format_bytes(b, human, sizeof human);
    if (b < 1024)
        snprintf(buf, n, "%s", human);
    else
        snprintf(buf, n, "%llu B (%s)", (unsigned long long)b, human);
}

void cli_fmt_shape(const int64_t *s, int n, char *buf, size_t size)
{
    size_t pos = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && pos < size; i++)
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%lld", i ? "," : "",
                                (long long)s[i]);
    if (pos < size)
        snprintf(buf + pos, size - pos, "]");
}

void cli_fmt_coords(const redist_mesh_t *m, int64_t rank, char *buf,
                    size_t size)
{
    int64_t c[REDIST_MAX_AXES];
    size_t pos = 0;
    redist_mesh_coords(m, rank, c);
    buf[0] = '\0';
    for (int a = 0; a < redist_mesh_num_axes(m) && pos < size; a++)
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%s=%lld",
                                a ? "," : "", redist_mesh_axis_name(m, a),
                                (long long)c[a]);
}

int cli_parse_size_n(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0, mul = 1;
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        uint64_t d = (uint64_t)(s[i++] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (i == 0)
        return -1;
    if (i < n) {
        static const char units[] = "KMGT";
        const char *p = memchr(units, s[i] & ~0x20, 4);
        if (!p)
            return -1;
        mul = 1ULL << (10 * (p - units + 1));
        i++;
        if (i < n && s[i] == 'i')
            i++;
        if (i < n && (s[i] == 'B' || s[i] == 'b'))
            i++;
        if (i != n)
            return -1;
    }
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    return cli_parse_size_n(s, strlen(s), out);
}

long cli_env_long(const char *a, const char *b)
{
    const char *v = getenv(a);
    if (!v)
        v = getenv(b);
    return v ? strtol(v, NULL, 10) : -1;
}
