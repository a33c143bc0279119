/*
 * COPIES, kept in this one place on purpose: helpers that redistplan
 * has too (src/cli/ext.c: path_multiples, smallest_factor; src/cli/
 * common.c: cli_parse_size) and that belong in the library, where both
 * programs could call them.  Until the library exposes them, this file
 * is the bench's only copy: change them together with the originals,
 * and delete each here once the library has it.
 */
#include <stdint.h>
#include <string.h>

#include "bench.h"

/* Bytes with an optional binary suffix, any case, optional "iB" / "B":
 * 8, 4096, 64K, 4MiB, 1G, 2T.  0, or -1 when malformed or too large.
 * (cli_parse_size) */
int bench_parse_size(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
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

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int64_t bench_smallest_factor(int64_t r)
{
    for (int64_t p = 2; p <= 1000000 && p * p <= r; p++)
        if (r % p == 0)
            return p;
    return r;
}

/* Per dim, the lcm of the split counts of every type on the plan's path:
 * a shape keeps the plan valid iff each dim stays a multiple of it.
 * (path_multiples) */
void bench_path_multiples(const redist_plan_t *plan, int64_t q[])
{
    const redist_spec_t *spec = redist_plan_spec(plan);
    const redist_mesh_t *m = redist_spec_mesh(spec);
    int nd = redist_spec_ndims(spec), n = redist_plan_num_steps(plan);
    for (int i = 0; i < nd; i++)
        q[i] = 1;
    for (int k = -1; k <= n; k++) {
        redist_type_t t;
        redist_step_view_t v;
        if (k < 0)
            t = *redist_spec_from(spec);
        else if (k == n)
            t = *redist_spec_to(spec);
        else {
            redist_plan_step(plan, k, &v);
            t = v.after;
        }
        for (int i = 0; i < nd; i++) {
            int64_t p = 1;
            for (int j = 0; j < t.dim_naxes[i]; j++)
                p *= redist_mesh_axis_size(m, t.dims[i][j]);
            q[i] = q[i] / (int64_t)gcd64((uint64_t)q[i], (uint64_t)p) * p;
        }
    }
}
