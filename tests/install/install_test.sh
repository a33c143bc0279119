#!/bin/sh
# Installing: `meson install` of this build into a temporary root, then,
# as an outside user would, build a C program with
# `pkg-config --cflags --libs redist` only and run it, link an OpenSHMEM
# program with `pkg-config --cflags --libs redist-shmem` only (when that
# module is installed), and run the installed redistplan (it finds
# libredist.so through its install rpath, with no LD_LIBRARY_PATH).
# Usage: install_test.sh BUILD_DIR SPEC
set -eu
build=$1
spec=$2
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; echo "FAIL: meson install"; exit 1; }

# The installed tree under $root: the build's prefix and libdir.
pc=$(find "$root" -name redist.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no redist.pc installed"; exit 1; }
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
bin=$(find "$root" -type f -name redistplan | head -n 1)
[ -x "$bin" ] || { echo "FAIL: no redistplan installed"; exit 1; }
# The .pc files name the build's prefix: move it into $root, as
# PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig alone does for a real install.
export PKG_CONFIG_PATH="$pcdir"
prefix=$(pkg-config --variable=prefix redist)
pc() { pkg-config --define-variable=prefix="$root$prefix" "$@"; }

cat >"$tmp/outside.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <redist.h>
int main(int argc, char **argv)
{
    redist_spec_t *spec = NULL;
    redist_plan_t *plan = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (argc != 2 || redist_spec_load_file(argv[1], 0, &spec, &err) ||
        redist_plan_create(spec, NULL, &plan, &err)) {
        char buf[512];
        fprintf(stderr, "%s\n", redist_error_format(&err, buf, sizeof buf));
        return 1;
    }
    printf("steps %d\n", redist_plan_num_steps(plan));
    redist_plan_free(plan);
    redist_spec_free(spec);
    return 0;
}
C
# shellcheck disable=SC2046
$cc ${CFLAGS:-} -o "$tmp/outside" "$tmp/outside.c" $(pc --cflags --libs redist) ||
    { echo "FAIL: outside program does not build with pkg-config redist"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$tmp/outside" "$spec" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; echo "FAIL: outside program"; exit 1; }
grep -q '^steps [1-9]' "$tmp/out" || { cat "$tmp/out"; echo "FAIL: no plan"; exit 1; }
echo "outside program: $(cat "$tmp/out")"

if [ -f "$pcdir/redist-shmem.pc" ]; then
    cat >"$tmp/shm.c" <<'C'
#include <shmem.h>
#include <redist/shmem.h>
int main(void)
{
    shmem_init();
    redist_shmem_stats_t s = redist_shmem_stats(NULL);
    shmem_finalize();
    return (int)s.reductions[0];
}
C
    # shellcheck disable=SC2046
    $cc ${CFLAGS:-} -o "$tmp/shm" "$tmp/shm.c" $(pc --cflags --libs redist-shmem) ||
        { echo "FAIL: OpenSHMEM program does not link with pkg-config redist-shmem"; exit 1; }
    echo "OpenSHMEM program links with pkg-config redist-shmem"
fi

# The installed redistplan: no LD_LIBRARY_PATH, its rpath finds libredist.
env -u LD_LIBRARY_PATH "$bin" plan "$spec" >"$tmp/plan" 2>&1 ||
    { cat "$tmp/plan"; echo "FAIL: installed redistplan"; exit 1; }
if command -v ldd >/dev/null; then
    env -u LD_LIBRARY_PATH ldd "$bin" | grep 'libredist\.so' | grep -q "$root" ||
        { ldd "$bin"; echo "FAIL: redistplan does not load the installed libredist.so"; exit 1; }
fi
echo "installed redistplan plans $(basename "$spec")"
