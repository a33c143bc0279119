/*
 * Status strings, error structs, dtypes and reduce ops; byte counts
 * written and read as "64 MiB".
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *redist_status_string(redist_status_t status)
{
    switch (status) {
    case REDIST_OK: return "ok";
    case REDIST_ERR_INVALID: return "invalid input";
    case REDIST_ERR_NOMEM: return "out of memory";
    case REDIST_ERR_OVERFLOW: return "size overflow";
    case REDIST_ERR_INFEASIBLE: return "no plan exists";
    case REDIST_ERR_IO: return "input/output error";
    case REDIST_ERR_PARSE: return "syntax error";
    case REDIST_ERR_LIMIT: return "limit reached";
    case REDIST_ERR_PLAN: return "invalid plan";
    case REDIST_ERR_BACKEND: return "backend failure";
    case REDIST_ERR_MISMATCH: return "ranks disagree";
    }
    return "unknown status";
}

void rd_strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return;
    size_t n = src ? strlen(src) : 0;
    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

void rd_appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
    if (*pos >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *pos += (size_t)n;
    if (*pos >= size)
        *pos = size - 1;
}

void rd_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B",   "KiB", "MiB", "GiB",
                                       "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.4g %s", v, unit[u]);
}

int rd_parse_bytes(const char *s, size_t n, uint64_t *out)
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

void redist_error_clear(redist_error_t *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->status = REDIST_OK;
}

static redist_status_t verror(redist_error_t *err, redist_status_t status,
                              const char *source, const char *path, int line,
                              int column, const char *fmt, va_list ap)
{
    if (!err || err->status != REDIST_OK)
        return status;
    err->status = status;
    err->line = line;
    err->column = column;
    rd_strlcpy(err->source, source ? source : "", sizeof err->source);
    rd_strlcpy(err->path, path ? path : "", sizeof err->path);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    return status;
}

redist_status_t rd_error(redist_error_t *err, redist_status_t status,
                         const char *source, const char *path,
                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(err, status, source, path, 0, 0, fmt, ap);
    va_end(ap);
    return status;
}

redist_status_t rd_error_at(redist_error_t *err, redist_status_t status,
                            const char *source, int line, int column,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(err, status, source, NULL, line, column, fmt, ap);
    va_end(ap);
    return status;
}

redist_status_t redist_error_set(redist_error_t *err, redist_status_t status,
                                 const char *source, const char *path,
                                 const char *text)
{
    if (status >= REDIST_OK || status < REDIST_ERR_MISMATCH)
        return rd_error(err, REDIST_ERR_INVALID, source, path,
                        "redist_error_set: status %d is not an error status",
                        (int)status);
    return rd_error(err, status, source, path, "%s",
                    text ? text : redist_status_string(status));
}

char *redist_bytes_format(uint64_t bytes, char *buf, size_t size)
{
    if (buf && size)
        rd_format_bytes(bytes, buf, size);
    return buf;
}

redist_status_t redist_bytes_parse(const char *text, size_t len,
                                   uint64_t *out, redist_error_t *err)
{
    if (!text || !out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    if (rd_parse_bytes(text, len, out))
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "\"%.*s\" is not a byte count (digits with an "
                        "optional K, M, G or T, e.g. 64K or 4MiB, below "
                        "2^64)",
                        (int)(len < 64 ? len : 64), text);
    return REDIST_OK;
}

void rd_error_set_source(redist_error_t *err, const char *source)
{
    if (err && err->status != REDIST_OK && err->source[0] == '\0' && source)
        rd_strlcpy(err->source, source, sizeof err->source);
}

char *redist_error_format(const redist_error_t *err, char *buf, size_t size)
{
    size_t pos = 0;
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    if (!err)
        return buf;
    /* the strings are read within their arrays, terminated or not */
    if (err->source[0]) {
        rd_appendf(buf, size, &pos, "%.*s", (int)sizeof err->source,
                   err->source);
        if (err->line > 0)
            rd_appendf(buf, size, &pos, ":%d:%d", err->line, err->column);
        rd_appendf(buf, size, &pos, ": ");
    } else if (err->line > 0) {
        rd_appendf(buf, size, &pos, "%d:%d: ", err->line, err->column);
    }
    if (err->path[0])
        rd_appendf(buf, size, &pos, "%.*s: ", (int)sizeof err->path,
                   err->path);
    if (err->text[0])
        rd_appendf(buf, size, &pos, "%.*s", (int)sizeof err->text,
                   err->text);
    else
        rd_appendf(buf, size, &pos, "%s", redist_status_string(err->status));
    return buf;
}

/* ------------------------------------------------------------- dtypes */

static const struct {
    const char *name;
    size_t size;
} dtypes[REDIST_DTYPE_COUNT] = {
    [REDIST_F16] = {"f16", 2},   [REDIST_BF16] = {"bf16", 2},
    [REDIST_F32] = {"f32", 4},   [REDIST_F64] = {"f64", 8},
    [REDIST_I8] = {"i8", 1},     [REDIST_I16] = {"i16", 2},
    [REDIST_I32] = {"i32", 4},   [REDIST_I64] = {"i64", 8},
    [REDIST_U8] = {"u8", 1},     [REDIST_U16] = {"u16", 2},
    [REDIST_U32] = {"u32", 4},   [REDIST_U64] = {"u64", 8},
    [REDIST_C64] = {"c64", 8},   [REDIST_C128] = {"c128", 16},
};

size_t redist_dtype_size(redist_dtype_t dtype)
{
    if ((unsigned)dtype >= REDIST_DTYPE_COUNT)
        return 0;
    return dtypes[dtype].size;
}

const char *redist_dtype_name(redist_dtype_t dtype)
{
    if ((unsigned)dtype >= REDIST_DTYPE_COUNT)
        return NULL;
    return dtypes[dtype].name;
}

redist_status_t redist_dtype_from_name(const char *name, redist_dtype_t *out)
{
    if (!name)
        return REDIST_ERR_INVALID;
    for (int i = 0; i < REDIST_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) {
            if (out)
                *out = (redist_dtype_t)i;
            return REDIST_OK;
        }
    return REDIST_ERR_INVALID;
}

static const char *const reduce_names[REDIST_REDUCE_COUNT] = {
    [REDIST_REDUCE_SUM] = "sum", [REDIST_REDUCE_MAX] = "max",
    [REDIST_REDUCE_MIN] = "min", [REDIST_REDUCE_PROD] = "prod"};

const char *redist_reduce_name(redist_reduce_t op)
{
    if ((unsigned)op >= REDIST_REDUCE_COUNT)
        return NULL;
    return reduce_names[op];
}

/* *out = the index of `name` in names[0..count-1]; REDIST_ERR_INVALID
 * (*out untouched) for an unknown or NULL name. */
static redist_status_t name_index(const char *const names[], int count,
                                  const char *name, int *out)
{
    for (int i = 0; name && i < count; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return REDIST_OK;
        }
    return REDIST_ERR_INVALID;
}

redist_status_t redist_reduce_from_name(const char *name, redist_reduce_t *out)
{
    int i = 0;
    redist_status_t st = name_index(reduce_names, REDIST_REDUCE_COUNT, name, &i);
    if (!st && out)
        *out = (redist_reduce_t)i;
    return st;
}

static const char *const split_names[REDIST_SPLIT_COUNT] = {
    [REDIST_SPLIT_CEIL] = "ceil", [REDIST_SPLIT_BALANCED] = "balanced",
    [REDIST_SPLIT_CHUNK] = "chunk"};

const char *redist_split_name(redist_split_t split)
{
    if ((unsigned)split >= REDIST_SPLIT_COUNT)
        return NULL;
    return split_names[split];
}

redist_status_t redist_split_from_name(const char *name, redist_split_t *out)
{
    int i = 0;
    redist_status_t st = name_index(split_names, REDIST_SPLIT_COUNT, name, &i);
    if (!st && out)
        *out = (redist_split_t)i;
    return st;
}
