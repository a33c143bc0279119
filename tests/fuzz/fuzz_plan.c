/*
 * libFuzzer target for the plan reader and verifier (`redistplan verify`):
 * arbitrary plan documents against arbitrary specs.
 *
 * Input: SPEC NUL PLAN, a spec document (doc/spec-format.md section 3), a NUL
 * byte, then a plan document (section 4).  Without a NUL byte the whole
 * input is a plan for a fixed spec (x=2,y=3,z=2, f32[12,6,4], x|y| with
 * z partial to y|x|).  A spec that does not load is skipped (fuzz_spec
 * checks the loader).  Every failure must explain itself; a plan the
 * reader accepts must be valid, and its replay must agree with itself
 * when the result is read again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"

static redist_spec_t *fixed;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redist_error_t err;
    redist_verify_result_t res, again;
    redist_spec_t *spec = NULL;
    const uint8_t *nul = memchr(data, 0, size);
    const char *plan = (const char *)data;
    size_t plen = size;
    if (nul) {
        redist_error_clear(&err);
        if (redist_spec_load_buffer((const char *)data,
                                    (size_t)(nul - data), "spec.json", 0,
                                    &spec, &err))
            return 0;
        plan = (const char *)nul + 1;
        plen = size - (size_t)(nul - data) - 1;
    } else {
        if (!fixed) {
            redist_error_clear(&err);
            if (redist_spec_from_strings("x=2,y=3,z=2", "12x6x4", "f32",
                                         "x|y|", "z", "y|x|", NULL, NULL,
                                         "fuzz", 0, &fixed, &err))
                abort();
        }
    }
    const redist_spec_t *s = spec ? spec : fixed;
    redist_error_clear(&err);
    redist_status_t st = redist_plan_verify_buffer(s, plan, plen, "plan.json",
                                                   &res, &err);
    if (st != REDIST_OK && err.text[0] == '\0')
        abort();
    if (st == REDIST_OK) {
        if (!res.valid)
            abort();
        /* deterministic: the same document gives the same replay */
        redist_error_clear(&err);
        if (redist_plan_verify_buffer(s, plan, plen, "plan.json", &again,
                                      &err) != REDIST_OK ||
            again.valid != res.valid || again.peak_bytes != res.peak_bytes ||
            again.recv_bytes != res.recv_bytes ||
            again.collectives != res.collectives ||
            again.steps != res.steps ||
            again.memory_efficient != res.memory_efficient)
            abort();
    }
    redist_spec_free(spec);
    return 0;
}
