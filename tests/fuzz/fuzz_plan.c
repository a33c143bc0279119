/*
 * libFuzzer target for the plan reader and verifier (`redistplan verify`):
 * arbitrary plan documents against a fixed spec.
 */
#include <stdint.h>
#include <stdlib.h>

#include "redist.h"

static redist_spec_t *spec;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redist_error_t err;
    redist_verify_result_t res;
    if (!spec) {
        redist_error_clear(&err);
        if (redist_spec_from_strings("x=2,y=3,z=2", "12x6x4", "f32", "x|y|",
                                     "z", "y|x|", NULL, NULL, "fuzz", 0, &spec,
                                     &err))
            abort();
    }
    redist_error_clear(&err);
    redist_status_t st = redist_plan_verify_buffer(spec, (const char *)data,
                                                   size, "plan.json", &res,
                                                   &err);
    if (st != REDIST_OK && err.text[0] == '\0')
        abort();
    if (st == REDIST_OK && !res.valid)
        abort();
    return 0;
}
