/*
 * Whole-file reading for every loader (spec, plan JSON, cost model, rank
 * map, hwloc XML).
 *
 * The file is opened with O_NONBLOCK, so that opening a FIFO, a terminal
 * or another device returns at once instead of waiting for a writer; the
 * descriptor then says (fstat) what it is, and only a regular file is
 * read.  There is no window between a check and the open: the check is
 * on the open descriptor.  At most `max` bytes are accepted (max + 1 are
 * read to tell "exactly max" from "more").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "a special file";
}

redist_status_t rd_read_file(const char *path, size_t max, const char *what,
                             char **out, size_t *outlen, redist_error_t *err)
{
    struct stat sb;
    if (!path || !out || !outlen)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL argument");
    *out = NULL;
    *outlen = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return rd_error(err, REDIST_ERR_IO, path, NULL, "cannot open: %s",
                        strerror(errno));
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return rd_error(err, REDIST_ERR_IO, path, NULL, "cannot stat: %s",
                        strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return rd_error(err, REDIST_ERR_IO, path, NULL,
                        "cannot read %s from %s: only regular files are read",
                        what, file_kind(sb.st_mode));
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return rd_error(err, REDIST_ERR_LIMIT, path, NULL,
                        "file is larger than %zu bytes; not %s", max, what);
    }
    /* regular files never block; reading goes on as usual */
    size_t cap = sb.st_size > 0 && (uint64_t)sb.st_size < max
                     ? (size_t)sb.st_size + 1
                     : (max < 65536 ? max + 1 : 65536);
    size_t len = 0;
    char *buf = malloc(cap + 1);
    redist_status_t st = REDIST_OK;
    while (buf) {
        if (len == cap) {
            if (cap > max) {
                st = rd_error(err, REDIST_ERR_LIMIT, path, NULL,
                              "file is larger than %zu bytes; not %s", max,
                              what);
                break;
            }
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            st = rd_error(err, REDIST_ERR_IO, path, NULL, "read error: %s",
                          strerror(errno));
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf)
        return rd_error(err, REDIST_ERR_NOMEM, path, NULL, "out of memory");
    if (st) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return REDIST_OK;
}
