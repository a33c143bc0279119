/*
 * Internal helpers shared by the library's layers (not installed).
 */
#ifndef REDIST_INTERNAL_H
#define REDIST_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "redist/core.h"

#if defined(__GNUC__)
#define RD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RD_PRINTF(a, b)
#endif

/* Set *err (if non-NULL and still clear) and return status.  `source`
 * and `path` may be NULL. */
redist_status_t rd_error(redist_error_t *err, redist_status_t status,
                         const char *source, const char *path,
                         const char *fmt, ...) RD_PRINTF(5, 6);
/* Like rd_error but with a line and column (syntax errors). */
redist_status_t rd_error_at(redist_error_t *err, redist_status_t status,
                            const char *source, int line, int column,
                            const char *fmt, ...) RD_PRINTF(6, 7);
/* Fill in a source on an error that does not have one yet. */
void rd_error_set_source(redist_error_t *err, const char *source);

/* Greatest common divisor; gcd(a, 0) = a. */
static inline uint64_t rd_gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ceil(a / b) for b > 0, without overflow. */
static inline uint64_t rd_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* FNV-1a (64 bits) over bytes, from RD_FNV_BASIS: the hash of what all
 * ranks must agree on (plans, options); never stored. */
#define RD_FNV_BASIS 0xcbf29ce484222325ULL
static inline uint64_t rd_fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
static inline uint64_t rd_fnv_u64(uint64_t h, uint64_t v)
{
    return rd_fnv(h, &v, sizeof v);
}

/* Overflow-checked arithmetic: return 1 on overflow. */
static inline int rd_mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return __builtin_mul_overflow(a, b, r);
}
static inline int rd_add_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return __builtin_add_overflow(a, b, r);
}

struct redist_mesh {
    int naxes;
    int64_t size[REDIST_MAX_AXES];
    int64_t stride[REDIST_MAX_AXES]; /* rank = sum coord * stride */
    int64_t ndevices;
    char name[REDIST_MAX_AXES][REDIST_MAX_NAME + 1];
};

redist_mesh_t *rd_mesh_clone(const redist_mesh_t *mesh);
/* The mesh as "x=2,y=4" (axis=size, in axis order) into buf. */
void rd_mesh_format(const redist_mesh_t *mesh, char *buf, size_t size);

/* Check a caller-filled type before anything indexes by its fields: rank
 * `ndims` (0..REDIST_MAX_DIMS), each dim's axis count, axis indices within
 * the mesh, no axis twice, partial bits within the mesh; with a non-NULL
 * `shape` also positive sizes and divisibility (redist_type_validate).
 * `what` names the type in error paths. */
redist_status_t rd_type_check(const redist_type_t *type,
                              const redist_mesh_t *mesh, int ndims,
                              const int64_t shape[], const char *what,
                              redist_error_t *err);

/* "12 MiB"-style size (binary units, 4 significant digits; "512 B"). */
void rd_format_bytes(uint64_t bytes, char *buf, size_t size);
/* The n characters at s as a byte count: digits with an optional binary
 * suffix, any case, optional "iB" / "B" (8, 4096, 64K, 4MiB, 1G, 2T).
 * 0, or -1 when malformed or over 64 bits (*out untouched).  The option
 * parser of redistplan and of the benchmarks. */
int rd_parse_bytes(const char *s, size_t n, uint64_t *out);

/* Read the whole regular file `path` (file.c): at most `max` bytes, into
 * a malloc'd buffer (*out, NUL-terminated; *len bytes).  A FIFO, device
 * or directory is refused without blocking; `what` ("a spec") names the
 * content in the messages.  Status IO, LIMIT or NOMEM, the path as
 * source. */
redist_status_t rd_read_file(const char *path, size_t max, const char *what,
                             char **out, size_t *len, redist_error_t *err);

/* Minimal safe string copy (always NUL-terminates). */
void rd_strlcpy(char *dst, const char *src, size_t size);
/* snprintf appending at *pos into buf of size; never overflows. */
void rd_appendf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    RD_PRINTF(4, 5);

/* The first control character of s (C0, DEL, or C1 in UTF-8), *cp its
 * code point; NULL if none.  Names are printed on terminals and in XML
 * reports, where such characters do harm. */
const char *rd_control_char(const char *s, unsigned *cp);
/* The rule for mesh axis names beyond their length: none of ',', '|', '='
 * (the separators of the inline and printed forms) and no control
 * character.  NULL when `name` follows it, else what breaks it. */
const char *rd_axis_name_problem(const char *name, char *why, size_t size);

#endif
