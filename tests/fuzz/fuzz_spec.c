/*
 * libFuzzer target for the spec loader: any bytes must give either a spec
 * or an error with a message, never a crash, leak or hang.  Specs that
 * load are planned (with a small search budget) and the plan verified.
 * The many-array loader reads the same bytes; a set of at most four
 * arrays is planned into rounds and written as JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"

/* The bytes as a spec with "arrays" (doc/arrays.md). */
static void fuzz_set(const uint8_t *data, size_t size)
{
    redist_error_t err = REDIST_ERROR_INIT;
    redist_arrays_t *a = NULL;
    if (redist_arrays_load_buffer((const char *)data, size, "fuzz.json", 0,
                                  &a, &err) != REDIST_OK) {
        if (err.status == REDIST_OK || err.text[0] == '\0')
            abort();
        return;
    }
    if (redist_arrays_is_set(a) && redist_arrays_count(a) <= 4) {
        redist_plan_options_t opts = {.max_states = 20000};
        redist_plan_set_t *set = NULL;
        redist_error_clear(&err);
        if (redist_plan_set_create(a, &opts, NULL, NULL, &set, &err) == REDIST_OK) {
            free(redist_plan_set_to_json(set));
            redist_plan_set_free(set);
        } else if (err.text[0] == '\0') {
            abort();
        }
    }
    redist_arrays_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_set(data, size);
    redist_error_t err;
    redist_spec_t *spec = NULL;
    redist_error_clear(&err);
    redist_status_t st = redist_spec_load_buffer((const char *)data, size,
                                                 "fuzz.json", 0, &spec, &err);
    if (st != REDIST_OK) {
        if (err.status == REDIST_OK || err.text[0] == '\0')
            abort(); /* every failure must explain itself */
        return 0;
    }
    redist_plan_options_t opts = {.max_states = 20000};
    redist_plan_t *plan = NULL;
    redist_error_clear(&err);
    st = redist_plan_create(spec, &opts, &plan, &err);
    if (st == REDIST_OK) {
        redist_verify_result_t res;
        if (redist_plan_verify(plan, &res, &err) != REDIST_OK || !res.valid)
            abort(); /* the solver returned a plan its verifier rejects */
        char *json = redist_plan_to_json(plan);
        if (json) {
            if (redist_plan_verify_buffer(spec, json, strlen(json), "plan",
                                          &res, &err) != REDIST_OK)
                abort();
            free(json);
        }
        redist_plan_free(plan);
    } else if (err.text[0] == '\0') {
        abort();
    }
    redist_spec_free(spec);
    return 0;
}
