/*
 * redist/spec.h - a redistribution problem ("spec"): mesh, global shape,
 * dtype, source and target types, reduce op, and the optional `expect`
 * block of a spec file.  Built from C values or loaded from JSON
 * (doc/spec-format.md section 3) with jansson.
 */
#ifndef REDIST_SPEC_H
#define REDIST_SPEC_H

#include "redist/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redist_spec redist_spec_t;

/** What a spec file's `expect` block asks for (only `check` reads it). */
typedef struct redist_expect {
    int has_max_collectives, has_max_recv_bytes, has_max_peak_bytes;
    int has_ops, has_infeasible;
    int64_t max_collectives;
    uint64_t max_recv_bytes;
    uint64_t max_peak_bytes;
    int infeasible;
    int nops;
    const char *const *ops; /**< op names, owned by the spec */
} redist_expect_t;

/** Flags of the loaders. */
enum {
    /** Accept a target whose partial axes the source lacks (no plan can
     *  exist; redist_plan_create then reports REDIST_ERR_INFEASIBLE).
     *  Without the flag such a spec is rejected as bad input. */
    REDIST_SPEC_ALLOW_UNPLANNABLE = 1u << 0
};

/**
 * Build a spec from C values.  `mesh` is copied (the caller keeps and frees
 * its own); `name` may be NULL.  Every product of sizes and the byte counts
 * are checked for 64-bit overflow; the types are validated against the mesh
 * and shape (errors name "from"/"to" paths).
 */
REDIST_API redist_status_t redist_spec_create(const redist_mesh_t *mesh, int ndims,
                                   const int64_t shape[], redist_dtype_t dtype,
                                   const redist_type_t *from,
                                   const redist_type_t *to,
                                   redist_reduce_t reduce, const char *name,
                                   redist_spec_t **out, redist_error_t *err);

/**
 * A mesh placed on devices (doc/spec-format.md section 8): `devices` lists
 * the global device ids (ranks of the communicator or PE set a plan runs
 * on) in the mesh's row-major order, NULL for 0..n-1.  `name` names it in
 * plans and errors (NULL: "from" for the source's, "to" for the target's).
 */
typedef struct redist_placed_mesh {
    const char *name;
    const redist_mesh_t *mesh;
    const int64_t *devices;
} redist_placed_mesh_t;

/**
 * A spec whose source lives on one placed mesh and whose target on
 * another: disjoint, overlapping, or the same devices in another shape or
 * order.  As redist_spec_create otherwise; `from` is a type of
 * from_mesh->mesh, `to` of to_mesh->mesh.  The device lists are copied;
 * each holds distinct ids in [0, REDIST_MAX_DEVICES).  A target with a
 * partial axis (of size > 1) is REDIST_ERR_INFEASIBLE: pending
 * reductions do not stay pending across meshes (the source's are reduced
 * on the source mesh, or summed by the transfer: doc/meshes.md).
 */
REDIST_API redist_status_t redist_spec_create_meshes(
    const redist_placed_mesh_t *from_mesh,
    const redist_placed_mesh_t *to_mesh, int ndims, const int64_t shape[],
    redist_dtype_t dtype, const redist_type_t *from, const redist_type_t *to,
    redist_reduce_t reduce, const char *name, redist_spec_t **out,
    redist_error_t *err);

/** Load a spec file.  Errors carry the file name, line:column for syntax
 *  errors (a NUL byte included) and a JSON path for semantic ones.  The
 *  file must be a regular file of at most 16 MiB: a FIFO, device or
 *  directory is refused at once (REDIST_ERR_IO), a larger file is
 *  REDIST_ERR_LIMIT.  Mesh axis names hold none of ',' '|' '=' and no
 *  control character; the name holds no control character. */
REDIST_API redist_status_t redist_spec_load_file(const char *path, unsigned flags,
                                      redist_spec_t **out,
                                      redist_error_t *err);
/** Load a spec from `len` bytes of text; `source` names it in errors. */
REDIST_API redist_status_t redist_spec_load_buffer(const char *text, size_t len,
                                        const char *source, unsigned flags,
                                        redist_spec_t **out,
                                        redist_error_t *err);

/**
 * Build a spec from the command-line (inline) form:
 *   mesh   "x=2,y=4"         shape "1024x512"
 *   type   "x,y|"  (dims separated by '|', axes of a dim major first by ',')
 *   partial "x,y"  (may be NULL or "")
 * dtype and reduce by name (NULL: "f32", "sum"); name may be NULL.
 * Errors name the option ("--from") as their path.
 */
REDIST_API redist_status_t redist_spec_from_strings(const char *mesh, const char *shape,
                                         const char *dtype, const char *from,
                                         const char *from_partial,
                                         const char *to, const char *to_partial,
                                         const char *reduce, const char *name,
                                         unsigned flags, redist_spec_t **out,
                                         redist_error_t *err);

/**
 * The inline form of a two-mesh spec (doc/meshes.md): each placed mesh as
 * "[NAME:]AXES[@DEVICES]", e.g. "train:dp=2,tp=2@0-3" and "tp=4@4-7":
 * AXES as the mesh of redist_spec_from_strings, DEVICES ids and LO-HI
 * ranges separated by ',' (default 0..n-1), NAME a mesh name (default
 * "from", "to").  The types are read against their own meshes; the rest
 * as redist_spec_from_strings.  Errors name "--from-mesh", "--to-mesh",
 * ... as their path.
 */
REDIST_API redist_status_t redist_spec_from_strings_meshes(
    const char *from_mesh, const char *to_mesh, const char *shape,
    const char *dtype, const char *from, const char *from_partial,
    const char *to, const char *to_partial, const char *reduce,
    const char *name, unsigned flags, redist_spec_t **out,
    redist_error_t *err);

/**
 * Uneven dims (doc/spec-format.md section 7).  A dim of size n split into k blocks
 * (k = product of the sizes of its axes) need not divide: `split` chooses
 * which elements each block holds (redist_split_t; REDIST_SPLIT_CEIL by
 * default), and blocks[i], when not NULL, gives dim i's nblocks[i] == k
 * lengths explicitly (each >= 0, summing to n).  A layout where every dim
 * divides evenly is the version-1 spec exactly.
 */
typedef struct redist_layout {
    redist_split_t split;
    const int64_t *blocks[REDIST_MAX_DIMS];
    int64_t nblocks[REDIST_MAX_DIMS];
} redist_layout_t;

/** Sides of a spec, for the layout accessors. */
enum { REDIST_SIDE_FROM = 0, REDIST_SIDE_TO = 1 };

/**
 * A copy of `spec` whose source and target have the given layouts (NULL:
 * REDIST_SPLIT_CEIL with no explicit lengths).  The lengths are copied.
 * Errors name "from.split", "to.blocks[1]" (wrong count, a negative
 * length, a sum other than n) as their path.
 */
REDIST_API redist_status_t redist_spec_with_layouts(const redist_spec_t *spec,
                                         const redist_layout_t *from,
                                         const redist_layout_t *to,
                                         redist_spec_t **out,
                                         redist_error_t *err);

/**
 * The inline form of layouts: `split` a rule name (NULL or "": ceil);
 * `blocks` the dims separated by '|', each empty (the rule) or its
 * lengths separated by ',' ("|300,300,250,174"; NULL or "": none).  As
 * redist_spec_with_layouts; errors name the options ("--from-split",
 * "--to-blocks") as their path.
 */
REDIST_API redist_status_t redist_spec_with_layout_strings(const redist_spec_t *spec,
                                                const char *from_split,
                                                const char *from_blocks,
                                                const char *to_split,
                                                const char *to_blocks,
                                                redist_spec_t **out,
                                                redist_error_t *err);

REDIST_API void redist_spec_free(redist_spec_t *spec);

/* Accessors: the spec's fields, views valid as long as it lives. */
/** The name; "" if none.  NULL: "". */
REDIST_API const char *redist_spec_name(const redist_spec_t *spec);
/** The mesh (the source's for a two-mesh spec).  NULL: NULL. */
REDIST_API const redist_mesh_t *redist_spec_mesh(const redist_spec_t *spec);
/** 2 for a spec over two placed meshes, 1 otherwise.  NULL: 0. */
REDIST_API int redist_spec_num_meshes(const redist_spec_t *spec);
/** The mesh of side `side` (REDIST_SIDE_FROM / REDIST_SIDE_TO; the same
 *  mesh twice for a one-mesh spec).  NULL or out of range: NULL. */
REDIST_API const redist_mesh_t *redist_spec_side_mesh(const redist_spec_t *spec,
                                                      int side);
/** The name of side's mesh; "" for a one-mesh spec.  NULL: "". */
REDIST_API const char *redist_spec_mesh_name(const redist_spec_t *spec,
                                             int side);
/** Global device id of rank `rank` of side's mesh (rank itself for a
 *  one-mesh spec).  NULL or out of range: -1. */
REDIST_API int64_t redist_spec_mesh_device(const redist_spec_t *spec,
                                           int side, int64_t rank);
/** The devices a plan of the spec runs on: 0..N-1, N the largest device
 *  id + 1 (the mesh's size for a one-mesh spec).  NULL: 0. */
REDIST_API int64_t redist_spec_num_devices(const redist_spec_t *spec);
/** The number of array dims.  NULL: -1. */
REDIST_API int redist_spec_ndims(const redist_spec_t *spec);
/** The global shape.  NULL: NULL. */
REDIST_API const int64_t *redist_spec_shape(const redist_spec_t *spec);
/** NULL: REDIST_DTYPE_COUNT (for which redist_dtype_size gives 0). */
REDIST_API redist_dtype_t redist_spec_dtype(const redist_spec_t *spec);
/** NULL: REDIST_REDUCE_COUNT. */
REDIST_API redist_reduce_t redist_spec_reduce(const redist_spec_t *spec);
/** The source and target types.  NULL: NULL. */
REDIST_API const redist_type_t *redist_spec_from(const redist_spec_t *spec);
REDIST_API const redist_type_t *redist_spec_to(const redist_spec_t *spec);
/** 1 when some dim of the source or target is not split evenly (the
 *  plan then takes the uneven path).  NULL: 0. */
REDIST_API int redist_spec_is_uneven(const redist_spec_t *spec);
/** The rule of side `side` (REDIST_SIDE_FROM or REDIST_SIDE_TO).  NULL or
 *  out of range: REDIST_SPLIT_COUNT. */
REDIST_API redist_split_t redist_spec_split(const redist_spec_t *spec, int side);
/** The block lengths of dim `dim` of side `side` (whatever the rule):
 *  returns their number k and writes the first min(k, n) into lengths
 *  (which may be NULL when n is 0).  NULL or out of range: -1. */
REDIST_API int64_t redist_spec_block_lengths(const redist_spec_t *spec, int side,
                                  int dim, int64_t lengths[], int64_t n);
/** Bytes device `rank` (a global device id) holds of side `side`; 0 for
 *  a device outside that side's mesh.  NULL or out of range: 0. */
REDIST_API uint64_t redist_spec_device_bytes(const redist_spec_t *spec, int side,
                                  int64_t rank);
/** Bytes per device of the source and target local blocks; for an uneven
 *  spec the most any device holds.  NULL: 0. */
REDIST_API uint64_t redist_spec_src_bytes(const redist_spec_t *spec);
REDIST_API uint64_t redist_spec_dst_bytes(const redist_spec_t *spec);
/** The expect block; all has_* are 0 when the spec had none (and for a
 *  NULL spec).  The view lives as long as the spec. */
REDIST_API void redist_spec_expect(const redist_spec_t *spec, redist_expect_t *out);

/* ------------------------------------------------- many arrays (§10) */
/**
 * Many arrays in one spec (doc/spec-format.md section 10): one-array
 * specs that share the spec's meshes and run on the same devices, with an
 * optional budget: the most scratch memory any device may use, beyond the
 * caller's source and destination buffers, at any point of running the
 * whole set (redist/exec.h plans the set into rounds under it).
 */
typedef struct redist_arrays redist_arrays_t;

/** No budget: every array may be in flight at once (one round). */
#define REDIST_NO_BUDGET UINT64_MAX
/** Most arrays in one set. */
#define REDIST_MAX_ARRAYS 65536

/**
 * Load a spec file with "arrays" (each element: name, shape, dtype, from,
 * to, reduce, expect; the file's "mesh" or "meshes" are shared; optional
 * "budget_bytes").  A one-array spec file loads as a set of one without a
 * budget (redist_arrays_is_set is then 0).  Errors name the file and the
 * place, e.g. `model.json: arrays[3].to.dims[1]: ...`: REDIST_ERR_PARSE,
 * REDIST_ERR_INVALID (also for two arrays of one name and for arrays on
 * different device counts), REDIST_ERR_IO, REDIST_ERR_LIMIT,
 * REDIST_ERR_NOMEM.
 */
REDIST_API redist_status_t redist_arrays_load_file(const char *path,
                                                   unsigned flags,
                                                   redist_arrays_t **out,
                                                   redist_error_t *err);
/** The same from text (`source` names it in errors; NULL: "<string>"). */
REDIST_API redist_status_t redist_arrays_load_buffer(const char *text,
                                                     size_t len,
                                                     const char *source,
                                                     unsigned flags,
                                                     redist_arrays_t **out,
                                                     redist_error_t *err);
/**
 * A set from C values: `n` (1..REDIST_MAX_ARRAYS) specs, copied, with
 * distinct names and the same device count; `budget_bytes` or
 * REDIST_NO_BUDGET.  REDIST_ERR_INVALID for NULL arguments and the rules
 * above.
 */
REDIST_API redist_status_t redist_arrays_create(const char *name, int n,
                                                const redist_spec_t *const specs[],
                                                uint64_t budget_bytes,
                                                redist_arrays_t **out,
                                                redist_error_t *err);
REDIST_API void redist_arrays_free(redist_arrays_t *arrays);
/** The set's name ("" without one).  NULL: NULL. */
REDIST_API const char *redist_arrays_name(const redist_arrays_t *arrays);
/** The number of arrays.  NULL: 0. */
REDIST_API int redist_arrays_count(const redist_arrays_t *arrays);
/** 1 when the set came from a file with "arrays" or from C; 0 for a
 *  one-array spec file.  NULL: 0. */
REDIST_API int redist_arrays_is_set(const redist_arrays_t *arrays);
/** Array i as a one-array spec (its name is the array's), owned by the
 *  set.  NULL or out of range: NULL. */
REDIST_API const redist_spec_t *redist_arrays_get(const redist_arrays_t *arrays,
                                                  int i);
/** The array named `name`, or -1.  NULL: -1. */
REDIST_API int redist_arrays_find(const redist_arrays_t *arrays,
                                  const char *name);
/** budget_bytes, or REDIST_NO_BUDGET.  NULL: REDIST_NO_BUDGET. */
REDIST_API uint64_t redist_arrays_budget(const redist_arrays_t *arrays);

#ifdef __cplusplus
}
#endif
#endif
