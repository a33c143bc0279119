#ifndef REDIST_SPEC_INTERNAL_H
#define REDIST_SPEC_INTERNAL_H

#include "redist/spec.h"
#include "../core/internal.h"
#include "../core/layout.h"

/* The two placed meshes of a version-2 spec (doc/spec-format.md section
 * 8): [0] the source's, [1] the target's, each with its name and its
 * device list in row-major order (global device ids).  ndevices: the
 * devices the plan runs on are 0..ndevices-1 (the largest id + 1). */
typedef struct rd_meshes {
    redist_mesh_t mesh[2];
    char name[2][REDIST_MAX_NAME + 1];
    int64_t *dev[2];
    int64_t ndevices;
    /* pos[side][d]: the rank of global device d in side's mesh, -1 when
     * it is not there (built by rd_spec_finish; ndevices entries) */
    int64_t *pos[2];
} rd_meshes;

/* Most devices a placed mesh of a two-mesh spec may have, and its device
 * ids stay below twice that: device lists and the plans' per-device
 * figures are stored. */
#define RD_MESHES_MAX_DEVICES (1ll << 20)

struct redist_spec {
    char *name;
    redist_mesh_t mesh; /* the source's mesh (the only one without two) */
    /* NULL: one mesh over devices 0..N-1 (version 1).  Else the two
     * placed meshes; `mesh` is a copy of two->mesh[0]. */
    rd_meshes *two;
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
    /* Layouts (doc/spec-format.md section 7), [0] source, [1] target: the rule,
     * explicit lengths per dim (owned; NULL: the rule), and, when the spec
     * is uneven, the boundaries.  uneven: some dim of the source or target
     * is not the even split; then src_bytes and dst_bytes are the most
     * any device holds, and planning takes the uneven path (solver.c). */
    redist_split_t split[2];
    int64_t *blocks[2][REDIST_MAX_DIMS];
    int uneven;
    rd_layout lay[2];
};

/* "an object", "a string", ...: a JSON value's kind for messages. */
struct json_t;
const char *rd_json_kind(const struct json_t *v);
/* REDIST_ERR_INVALID (of `source`) at the first key of the object `obj`
 * not in `allowed` (NULL-terminated): its path is `where` (may be ""),
 * a dot and the key, the key cut to `width` characters there and in the
 * message, which lists the allowed keys. */
redist_status_t rd_json_check_keys(struct json_t *obj, const char *where,
                                   int width, const char *const allowed[],
                                   const char *source, redist_error_t *err);
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
/* malloc'd copy of a string (NULL when out of memory). */
char *rd_strdup(const char *s);
/* A spec from a parsed JSON object (parse_spec of load.c; errors name
 * `source` and their path in `root`). */
redist_status_t rd_spec_from_json(struct json_t *root, const char *source,
                                  unsigned flags, redist_spec_t **out,
                                  redist_error_t *err);
/* Set side 0 (source) or 1 (target)'s rule and explicit lengths (blocks
 * may be NULL, and each entry; counts[i] lengths in blocks[i]); checked
 * by rd_spec_finish.  REDIST_ERR_NOMEM. */
redist_status_t rd_spec_set_layout(redist_spec_t *s, int side,
                                   redist_split_t split,
                                   const int64_t *const blocks[],
                                   const int64_t counts[]);
/* The mesh of side 0 (source) or 1 (target). */
const redist_mesh_t *rd_spec_side_mesh(const redist_spec_t *s, int side);
/* Copy of `m` (NULL: NULL); -1 out of memory. */
int rd_meshes_copy(rd_meshes **dst, const rd_meshes *m);
void rd_meshes_free(rd_meshes *m);
/* redist_spec_create with two placed meshes (NULL: one; taken over,
 * freed on failure) and the loaders' flags (REDIST_SPEC_*). */
redist_status_t rd_spec_new(const redist_mesh_t *mesh, int ndims,
                            const int64_t shape[], redist_dtype_t dtype,
                            const redist_type_t *from,
                            const redist_type_t *to, redist_reduce_t reduce,
                            const char *name, rd_meshes *two, unsigned flags,
                            redist_spec_t **out, redist_error_t *err);
/* NULL for a good mesh name, else why it is not (into why). */
const char *rd_mesh_name_problem(const char *name, char *why, size_t size);
/* Position of global device `dev` in side's mesh (its rank there), or -1
 * when it is not in that mesh.  One-mesh specs: dev itself if in range. */
int64_t rd_spec_mesh_rank(const redist_spec_t *s, int side, int64_t dev);
/* Bytes device `coord` (coordinates on side's mesh) holds of side 0
 * (source) or 1 (target). */
uint64_t rd_spec_device_bytes(const redist_spec_t *s, int side,
                              const int64_t coord[]);
/* "x, y, z": the mesh's axis names, for messages (cut to `size`). */
void rd_spec_axis_list(const redist_mesh_t *mesh, char *buf, size_t size);
/* Local bytes of a type valid for the spec's mesh and shape. */
uint64_t rd_spec_type_bytes(const redist_spec_t *s, const redist_type_t *t);
/* The same on a given mesh (a two-mesh spec's target side). */
uint64_t rd_spec_type_bytes_on(const redist_spec_t *s,
                               const redist_mesh_t *mesh,
                               const redist_type_t *t);

#endif
