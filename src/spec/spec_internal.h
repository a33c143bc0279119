#ifndef REDIST_SPEC_INTERNAL_H
#define REDIST_SPEC_INTERNAL_H

#include "redist/spec.h"
#include "../core/internal.h"

struct redist_spec {
    char *name;
    redist_mesh_t mesh;
    int ndims;
    int64_t shape[REDIST_MAX_DIMS];
    redist_dtype_t dtype;
    redist_reduce_t reduce;
    redist_type_t from, to;
    uint64_t elem_size;
    uint64_t global_bytes;
    uint64_t src_bytes, dst_bytes;
    redist_expect_t expect;
    char **ops; /* expect.ops storage */
};

/* "an object", "a string", ...: a JSON value's kind for messages. */
struct json_t;
const char *rd_json_kind(const struct json_t *v);
/* Parse the JSON text of a loader's input (spec, plan, cost model, rank
 * map): an empty text, a NUL byte (at its line:col; jansson would take it
 * for the end) and jansson's own errors become REDIST_ERR_PARSE errors of
 * `source` (*root NULL). */
redist_status_t rd_json_parse(const char *text, size_t len,
                              const char *source, struct json_t **root,
                              redist_error_t *err);
/* Validate the assembled fields of `s` (types, overflow, partial subset
 * unless flags allow); fills the derived byte counts. */
redist_status_t rd_spec_finish(redist_spec_t *s, unsigned flags,
                               redist_error_t *err);
/* REDIST_ERR_INFEASIBLE (naming the axis) when the target has a partial
 * axis of size > 1 that the source lacks: no step creates a pending
 * reduction.  (A size-1 partial axis is no reduction at all.) */
redist_status_t rd_spec_partial_check(const redist_spec_t *s,
                                      redist_error_t *err);
redist_spec_t *rd_spec_clone(const redist_spec_t *s);
/* Local bytes of a type valid for the spec's mesh and shape. */
uint64_t rd_spec_type_bytes(const redist_spec_t *s, const redist_type_t *t);

#endif
