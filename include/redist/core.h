/*
 * redist/core.h - status codes, errors, element types, meshes and sharding
 * types.  Pure values, no I/O, no MPI.
 *
 * Conventions (all of libredist):
 *  - every fallible call returns a redist_status_t (REDIST_OK == 0, errors
 *    negative) and takes an optional redist_error_t *err (NULL allowed) that
 *    receives a message naming the place of the first error;
 *  - output parameters come last (just before the error struct) and are
 *    written only on success;
 *  - objects returned through `**out` belong to the caller, who frees them
 *    with the matching *_free function (which accepts NULL);
 *  - the library never prints, never aborts and never asserts on input.
 *
 * Bad input (all of libredist, every header of include/redist/):
 *  - a function returning redist_status_t returns REDIST_ERR_INVALID (and
 *    fills `err`) when a pointer it needs is NULL, and an error status for
 *    out-of-range values and malformed caller-filled values (a
 *    redist_type_t, step view or cost model is checked field by field
 *    before anything indexes by its fields);
 *  - every other function documents what it gives for NULL ("NULL: 0")
 *    and, where it takes values that can be out of range, for those
 *    ("NULL or out of range: -1"); a void function given NULL does
 *    nothing (an output struct it would fill is zeroed where it says so).
 * tests/badinput generates a test from these comments: every function is
 * called with NULL and with garbage, under ASan and UBSan too.
 */
#ifndef REDIST_CORE_H
#define REDIST_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REDIST_API marks the public calls.  libredist and its backend libraries
 * are built with hidden visibility, so these calls (all named redist_*)
 * are the only symbols they export. */
#if defined(__GNUC__) || defined(__clang__)
#define REDIST_API __attribute__((visibility("default")))
#else
#define REDIST_API
#endif

#define REDIST_VERSION_MAJOR 0
#define REDIST_VERSION_MINOR 2
#define REDIST_VERSION_PATCH 0
#define REDIST_VERSION_STRING "0.2.0"

/** Largest number of mesh axes and of array dims. */
#define REDIST_MAX_AXES 16
#define REDIST_MAX_DIMS 16
/** Longest axis name, terminating NUL excluded. */
#define REDIST_MAX_NAME 63
/** Largest device count of a mesh (ranks are C ints in every backend). */
#define REDIST_MAX_DEVICES 2147483647LL

typedef enum redist_status {
    REDIST_OK = 0,
    REDIST_ERR_INVALID = -1,    /**< bad argument or bad input (spec, plan) */
    REDIST_ERR_NOMEM = -2,      /**< allocation failed */
    REDIST_ERR_OVERFLOW = -3,   /**< a size or byte count exceeds 64 bits */
    REDIST_ERR_INFEASIBLE = -4, /**< no plan exists under the constraints */
    REDIST_ERR_IO = -5,         /**< a file could not be read or written */
    REDIST_ERR_PARSE = -6,      /**< JSON syntax error (line and column set) */
    REDIST_ERR_LIMIT = -7,      /**< a search or size limit was reached */
    REDIST_ERR_PLAN = -8,       /**< the verifier rejected a plan */
    REDIST_ERR_BACKEND = -9,    /**< the communication backend failed */
    REDIST_ERR_MISMATCH = -10   /**< ranks disagree (size, plan, data) */
} redist_status_t;

/** A short constant description of a status ("invalid input", ...).
 *  Out of range: "unknown status". */
REDIST_API const char *redist_status_string(redist_status_t status);

#define REDIST_ERROR_SOURCE_LENGTH 256
#define REDIST_ERROR_PATH_LENGTH 128
#define REDIST_ERROR_TEXT_LENGTH 384

/**
 * Where and why something failed.  Modelled on jansson's json_error_t.
 * `source` is the file name (or "<command line>", "<string>"); `line` and
 * `column` are 1-based and set (non-zero) for JSON syntax errors; `path` is
 * a JSON path into the document for semantic errors ("to.dims[1]").  Empty
 * strings and zeros mean "not applicable".
 */
typedef struct redist_error {
    redist_status_t status;
    int line;
    int column;
    char source[REDIST_ERROR_SOURCE_LENGTH];
    char path[REDIST_ERROR_PATH_LENGTH];
    char text[REDIST_ERROR_TEXT_LENGTH];
} redist_error_t;

/**
 * "No error", for a declaration: `redist_error_t err = REDIST_ERROR_INIT;`
 * (the same as redist_error_clear).  An error struct is written only when
 * a call fails, so one read after a call that succeeded must start out
 * initialised.
 */
#define REDIST_ERROR_INIT {REDIST_OK, 0, 0, {0}, {0}, {0}}

/** Reset an error struct to "no error" (status REDIST_OK, empty strings). */
REDIST_API void redist_error_clear(redist_error_t *err);

/**
 * Format an error as one line: "source:line:col: text" for syntax errors,
 * "source: path: text" for semantic ones, omitting empty parts.  Writes at
 * most `size` bytes including the NUL; returns `buf` (a NULL err gives "";
 * the struct's strings are read within their arrays).  NULL: NULL (when
 * buf is NULL).
 */
REDIST_API char *redist_error_format(const redist_error_t *err, char *buf, size_t size);

/**
 * Record an error the way every call of the library does, for a caller's
 * own functions that take a redist_error_t too: when `err` is non-NULL
 * and still clear (the first error is kept), set its status, `source`
 * and `path` (NULL: empty) and `text` (NULL: the status's
 * redist_status_string), line and column 0.  Returns `status`.  A status
 * that is not an error (REDIST_OK, out of range) is the caller's mistake:
 * REDIST_ERR_INVALID, recorded as such.
 */
REDIST_API redist_status_t redist_error_set(redist_error_t *err, redist_status_t status,
                                 const char *source, const char *path,
                                 const char *text);

/**
 * A byte count for people: "512 B" below 1 KiB, else 4 significant
 * digits and a binary unit ("28 MiB", "1.5 GiB"), as in printed plans
 * (redist_plan_print).  Writes at most `size` bytes including the NUL and
 * returns buf.  NULL: NULL (when buf is NULL).
 */
REDIST_API char *redist_bytes_format(uint64_t bytes, char *buf, size_t size);
/**
 * The `len` characters at `text` as a byte count (no NUL needed): digits
 * with an optional binary unit K, M, G or T in either case, then an
 * optional "i" and "B" ("4096", "64K", "4MiB", "1gb"); no sign, space or
 * fraction.  REDIST_ERR_INVALID when malformed or over 64 bits.
 * redistplan's size options (--max-scratch 64K) take this form.
 */
REDIST_API redist_status_t redist_bytes_parse(const char *text, size_t len, uint64_t *out,
                                   redist_error_t *err);

/* ---------------------------------------------------------------- dtypes */

typedef enum redist_dtype {
    REDIST_F16, REDIST_BF16, REDIST_F32, REDIST_F64,
    REDIST_I8, REDIST_I16, REDIST_I32, REDIST_I64,
    REDIST_U8, REDIST_U16, REDIST_U32, REDIST_U64,
    REDIST_C64, REDIST_C128,
    REDIST_DTYPE_COUNT
} redist_dtype_t;

/** Element size in bytes.  Out of range: 0. */
REDIST_API size_t redist_dtype_size(redist_dtype_t dtype);
/** The name in spec files ("bf16"; doc/spec-format.md section 3).  Out
 *  of range: NULL. */
REDIST_API const char *redist_dtype_name(redist_dtype_t dtype);
/** Look a dtype up by name; REDIST_ERR_INVALID if unknown (`out` may be
 *  NULL to only check the name). */
REDIST_API redist_status_t redist_dtype_from_name(const char *name, redist_dtype_t *out);

typedef enum redist_reduce {
    REDIST_REDUCE_SUM, REDIST_REDUCE_MAX, REDIST_REDUCE_MIN,
    REDIST_REDUCE_PROD, REDIST_REDUCE_COUNT
} redist_reduce_t;

/** "sum", "max", "min", "prod".  Out of range: NULL. */
REDIST_API const char *redist_reduce_name(redist_reduce_t op);
/** As redist_dtype_from_name. */
REDIST_API redist_status_t redist_reduce_from_name(const char *name, redist_reduce_t *out);

/**
 * How a dim of global size n split into k blocks (the product of the sizes
 * of its axes; block index as for a type) assigns elements to blocks when
 * k does not divide n (doc/spec-format.md section 7).  All rules agree when k
 * divides n.
 *  - CEIL (default; JAX / XLA): c = ceil(n/k), block b holds
 *    [min(b c, n), min((b+1) c, n)): the last blocks may be short or empty;
 *  - BALANCED (MPI / PETSc): the first n mod k blocks hold floor(n/k)+1;
 *  - CHUNK (PyTorch DTensor Shard on a multi-dim mesh): torch.chunk axis
 *    by axis, major axis first, each level ceil within its parent block.
 */
typedef enum redist_split {
    REDIST_SPLIT_CEIL, REDIST_SPLIT_BALANCED, REDIST_SPLIT_CHUNK,
    REDIST_SPLIT_COUNT
} redist_split_t;

/** "ceil", "balanced", "chunk".  Out of range: NULL. */
REDIST_API const char *redist_split_name(redist_split_t split);
/** As redist_dtype_from_name. */
REDIST_API redist_status_t redist_split_from_name(const char *name, redist_split_t *out);

/* ------------------------------------------------------------------ mesh */

/** A device mesh: ordered named axes; ranks are row-major (first axis
 *  slowest).  Immutable once created. */
typedef struct redist_mesh redist_mesh_t;

/**
 * Create a mesh of `naxes` axes (1..REDIST_MAX_AXES).  Names must be
 * distinct, non-empty, at most REDIST_MAX_NAME bytes, without ',', '|',
 * '=' or control characters (the separators of the inline and printed
 * forms); sizes >= 1, with a
 * device count of at most REDIST_MAX_DEVICES.  The names are copied.
 */
REDIST_API redist_status_t redist_mesh_create(int naxes, const char *const names[],
                                   const int64_t sizes[], redist_mesh_t **out,
                                   redist_error_t *err);
REDIST_API void redist_mesh_free(redist_mesh_t *mesh);

/** Number of axes.  NULL: 0. */
REDIST_API int redist_mesh_num_axes(const redist_mesh_t *mesh);
/** Name of axis `axis`.  NULL or out of range: NULL. */
REDIST_API const char *redist_mesh_axis_name(const redist_mesh_t *mesh, int axis);
/** Size of axis `axis`.  NULL or out of range: 0. */
REDIST_API int64_t redist_mesh_axis_size(const redist_mesh_t *mesh, int axis);
/** Number of devices.  NULL: 0. */
REDIST_API int64_t redist_mesh_num_devices(const redist_mesh_t *mesh);
/** Index of the axis called `name` (an unknown name is out of range).
 *  NULL or out of range: -1. */
REDIST_API int redist_mesh_find_axis(const redist_mesh_t *mesh, const char *name);
/** Rank of the device with the given coordinates (one per axis; each
 *  within its axis).  NULL or out of range: -1. */
REDIST_API int64_t redist_mesh_rank(const redist_mesh_t *mesh, const int64_t coords[]);
/** Coordinates (one per axis) of device `rank`; every coordinate is -1
 *  for a rank out of range.  NULL: nothing written. */
REDIST_API void redist_mesh_coords(const redist_mesh_t *mesh, int64_t rank,
                        int64_t coords[]);
/** Write the axes as the inline form of a mesh, "x=2,y=4" (axis=size in
 *  axis order; the syntax of `--mesh`), into buf (at most size bytes
 *  including the NUL).  Returns buf: "" for a NULL mesh.  NULL: NULL (when
 *  buf is NULL). */
REDIST_API char *redist_mesh_format(const redist_mesh_t *mesh, char *buf, size_t size);
/** Write a shape of `ndims` dims as "[4096,28672]", as printed plans show
 *  global and local shapes, into buf (at most size bytes including the
 *  NUL).  Returns buf: "" for a NULL shape or ndims outside
 *  0..REDIST_MAX_DIMS.  NULL: NULL (when buf is NULL). */
REDIST_API char *redist_shape_format(const int64_t shape[], int ndims, char *buf,
                          size_t size);

/* --------------------------------------------------------- sharding type */

/**
 * A sharding type, a plain value the caller may fill directly.
 * dims[i][0..ndims_axes[i]-1] are the mesh-axis indices that split array
 * dim i, major first; `partial` is a bitmask (bit a = mesh axis a) of axes
 * holding pending reductions; every other axis is replicated.
 */
typedef struct redist_type {
    int ndims;
    uint8_t dim_naxes[REDIST_MAX_DIMS];
    uint8_t dims[REDIST_MAX_DIMS][REDIST_MAX_AXES];
    uint32_t partial;
} redist_type_t;

/** A fully replicated type of `ndims` dims (clamped to
 *  0..REDIST_MAX_DIMS).  NULL: nothing. */
REDIST_API void redist_type_init(redist_type_t *type, int ndims);
/** Append mesh axis `axis` as the new minor axis of `dim`.
 *  REDIST_ERR_INVALID for a dim or axis out of range, a full dim, or a
 *  type whose ndims or axis counts are out of range. */
REDIST_API redist_status_t redist_type_push_axis(redist_type_t *type, int dim, int axis);
/** Mark mesh axis `axis` as partial (REDIST_ERR_INVALID as above). */
REDIST_API redist_status_t redist_type_add_partial(redist_type_t *type, int axis);
/** 1 when both types are the same (same dims lists, same partial set).
 *  A type whose ndims or axis counts are out of range is invalid.  NULL
 *  or invalid: 0. */
REDIST_API int redist_type_equal(const redist_type_t *a, const redist_type_t *b);
/**
 * 1 when both types give every device of `mesh` the same data: they are
 * equal once their size-1 axes are left out.  A mesh axis of size 1 never
 * changes a local shape or a block index, and a reduction over it is no
 * reduction, so where a size-1 axis sits (in a dim's list, partial or
 * replicated) does not matter; plans and the verifier compare types this
 * way (redist/plan.h).  A type that is not one of the mesh (an axis out
 * of range, used twice...) is invalid.  NULL or invalid: 0.
 */
REDIST_API int redist_type_equivalent(const redist_type_t *a, const redist_type_t *b,
                           const redist_mesh_t *mesh);

/**
 * Check a type against a mesh and global shape: axes exist, none used
 * twice, every dim divisible by its product of axis sizes.  `what` names
 * the type in error paths ("from", "to").
 */
REDIST_API redist_status_t redist_type_validate(const redist_type_t *type,
                                     const redist_mesh_t *mesh, int ndims,
                                     const int64_t shape[], const char *what,
                                     redist_error_t *err);

/** Local (per-device) shape of a type; REDIST_ERR_INVALID unless it is
 *  valid for the mesh and shape (redist_type_validate). */
REDIST_API redist_status_t redist_type_local_shape(const redist_type_t *type,
                                        const redist_mesh_t *mesh,
                                        const int64_t shape[],
                                        int64_t local[]);

/**
 * Write a readable form, e.g. "[{data,model}, {}] partial{x}", into buf
 * (at most size bytes including the NUL).  Returns buf: "" for a NULL
 * type, "(invalid type)" for one whose ndims or axis counts are out of
 * range, "#7" for an axis the mesh (which may be NULL) lacks.  NULL: NULL
 * (when buf is NULL).
 */
REDIST_API char *redist_type_format(const redist_type_t *type, const redist_mesh_t *mesh,
                         char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
