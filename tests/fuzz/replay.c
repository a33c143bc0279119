/*
 * Corpus replay: runs a libFuzzer target's LLVMFuzzerTestOneInput on
 * files, without libFuzzer, so that the inputs that once crashed a target
 * (tests/fuzz/regress/TARGET/) and the seed corpora run in the normal
 * test suite, in the plain and the sanitizer builds.  A target reports a
 * failure by aborting, as under libFuzzer.
 *
 *   fuzz_TARGET_replay [--tails=T1,T2,...] PATH...
 *
 * PATH is a file or a directory of files.  With --tails (decimal bytes),
 * each later file is also replayed with a NUL byte and each tail byte
 * appended: the same inputs scripts/fuzz.sh seeds libFuzzer with (for
 * fuzz_exec: 1 time objective, 2 walk, 6 walk with exchanges).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;
static int ntails;
static uint8_t tails[8];

static void run_one(const uint8_t *data, size_t size)
{
    LLVMFuzzerTestOneInput(data, size);
    count++;
}

/* A regular file of `size` bytes, read whole. */
static int replay_file(const char *path, off_t size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc((size_t)size + 2);
    size_t n = f && buf ? fread(buf, 1, (size_t)size, f) : 0;
    if (!f || !buf || n != (size_t)size) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (f)
            fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    run_one(buf, n);
    for (int t = 0; t < ntails; t++) {
        buf[n] = 0;
        buf[n + 1] = tails[t];
        run_one(buf, n + 2);
    }
    free(buf);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or every file of a directory (in name order). */
static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path, st.st_size);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && rc == 0) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = replay_path(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        if (strncmp(argv[i], "--tails=", 8) == 0) {
            char *p = argv[i] + 8, *end;
            ntails = 0;
            while (*p && ntails < (int)sizeof tails) {
                long v = strtol(p, &end, 10);
                if (end == p || v < 0 || v > 255) {
                    fprintf(stderr, "replay: bad %s\n", argv[i]);
                    return 2;
                }
                tails[ntails++] = (uint8_t)v;
                p = *end == ',' ? end + 1 : end;
            }
            continue;
        }
        rc = replay_path(argv[i]);
    }
    printf("replayed %d inputs\n", count);
    return rc ? 1 : 0;
}
