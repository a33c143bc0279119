/*
 * Helpers shared by the commands of redistplan (cli.h): formatting of
 * sizes, shapes, meshes and mesh coordinates, byte counts with binary
 * suffixes, text made safe for terminals and XML, the clock, the launcher
 * environment (rank and size; the agreement is launch.c), and whether an
 * output file can be written.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_fmt_bytes(uint64_t b, char *buf, size_t n)
{
    char human[32];
    redist_bytes_format(b, human, sizeof human);
    if (b < 1024)
        snprintf(buf, n, "%s", human);
    else
        snprintf(buf, n, "%llu B (%s)", (unsigned long long)b, human);
}

void cli_fmt_device(const redist_spec_t *s, int64_t dev, char *buf,
                    size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    if (redist_spec_num_meshes(s) == 1) {
        cli_fmt_coords(redist_spec_mesh(s), dev, buf, size);
        return;
    }
    for (int side = 0; side < 2; side++) {
        const redist_mesh_t *m = redist_spec_side_mesh(s, side);
        for (int64_t r = 0; r < redist_mesh_num_devices(m); r++)
            if (redist_spec_mesh_device(s, side, r) == dev && pos < size) {
                char co[96];
                cli_fmt_coords(m, r, co, sizeof co);
                pos += (size_t)snprintf(buf + pos, size - pos, "%s%s:%s",
                                        pos ? " " : "",
                                        redist_spec_mesh_name(s, side), co);
            }
    }
    if (!buf[0])
        snprintf(buf, size, "(no mesh)");
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

void cli_appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (*pos < size) {
        int n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
        if (n > 0)
            *pos = size - *pos > (size_t)n ? *pos + (size_t)n : size - 1;
    }
    va_end(ap);
}

/* The length of the UTF-8 sequence at s (1 to 4) and its code point, or 0
 * when s does not start a valid one (overlong, surrogate, > U+10FFFF). */
static int utf8_seq(const unsigned char *s, unsigned *cp)
{
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2
                          : (s[0] & 0xf0) == 0xe0 ? 3
                          : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0)
        return 0;
    unsigned c = n == 1 ? s[0] : s[0] & (0x7f >> n);
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[k] & 0x3f);
    }
    if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

void cli_sanitize(const char *s, char *out, size_t size)
{
    size_t pos = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned cp;
        char esc[16];
        int n = utf8_seq(p, &cp);
        if (n == 0)
            snprintf(esc, sizeof esc, "\\x%02x", *p);
        else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0xfffe ||
                 cp == 0xffff)
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        else
            esc[0] = '\0';
        size_t len = esc[0] ? strlen(esc) : (size_t)n;
        if (pos + len >= size)
            break; /* whole sequences only */
        memcpy(out + pos, esc[0] ? esc : (const char *)p, len);
        pos += len;
        p += n ? n : 1;
    }
    out[pos] = '\0';
}

int cli_parse_size_n(const char *s, size_t n, uint64_t *out)
{
    return redist_bytes_parse(s, n, out, NULL) == REDIST_OK ? 0 : -1;
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

long cli_launch_size(void)
{
    return cli_env_long("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
}

int cli_check_writable(const char *path, char *why, size_t n)
{
    struct stat st;
    if (strcmp(path, "-") == 0)
        return 0;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, n, "%s", strerror(EISDIR));
            return -1;
        }
        if (access(path, W_OK)) {
            snprintf(why, n, "%s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (access(dir, W_OK | X_OK)) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    return 0;
}
