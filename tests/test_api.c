/*
 * test_api - unit tests of the public API through C values (no JSON):
 * meshes, sharding types, specs, error formatting, names, plans, step
 * views, redist_plan_from_steps, plan options, and the helpers the
 * command line uses too (byte counts, mesh text, errors, shrinking a
 * shape, the plan hash).
 *
 * Checks never abort: each one counts as passed or failed (with file:line
 * and the values on failure); the last line is "N passed, M failed" and
 * the exit status is non-zero when anything failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"

static int npass, nfail;

static int check_impl(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        npass++;
    } else {
        nfail++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    }
    return ok;
}

#define CHECK(cond) check_impl(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_INT(got, want)                                                 \
    do {                                                                     \
        long long g_ = (long long)(got), w_ = (long long)(want);             \
        if (!check_impl(g_ == w_, __FILE__, __LINE__, #got " == " #want))    \
            fprintf(stderr, "    got %lld, want %lld\n", g_, w_);            \
    } while (0)

#define CHECK_STR(got, want)                                                 \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        if (!check_impl(g_ && strcmp(g_, w_) == 0, __FILE__, __LINE__,       \
                        #got " == \"" #want "\""))                           \
            fprintf(stderr, "    got \"%s\", want \"%s\"\n",                 \
                    g_ ? g_ : "(null)", w_);                                 \
    } while (0)

#define CHECK_CONTAINS(got, part)                                            \
    do {                                                                     \
        const char *g_ = (got), *p_ = (part);                                \
        if (!check_impl(g_ && strstr(g_, p_) != NULL, __FILE__, __LINE__,    \
                        #got " contains " #part))                            \
            fprintf(stderr, "    got \"%s\"\n", g_ ? g_ : "(null)");         \
    } while (0)

/* ------------------------------------------------------------ helpers */

static redist_mesh_t *mesh2(const char *a, int64_t sa, const char *b,
                            int64_t sb)
{
    const char *names[2] = {a, b};
    int64_t sizes[2] = {sa, sb};
    redist_mesh_t *m = NULL;
    if (redist_mesh_create(b ? 2 : 1, names, sizes, &m, NULL) != REDIST_OK)
        return NULL;
    return m;
}

/* A spec from the inline strings (C strings, not JSON); NULL on error. */
static redist_spec_t *spec_s(const char *mesh, const char *shape,
                             const char *dtype, const char *from,
                             const char *fp, const char *to, const char *tp)
{
    redist_spec_t *s = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    if (redist_spec_from_strings(mesh, shape, dtype, from, fp, to, tp, NULL,
                                 NULL, 0, &s, &err) != REDIST_OK) {
        char buf[512];
        fprintf(stderr, "spec_s: %s\n", redist_error_format(&err, buf,
                                                            sizeof buf));
        return NULL;
    }
    return s;
}

static redist_step_view_t step(redist_op_t op, int dim, int from_dim,
                               int to_dim, int axis)
{
    redist_step_view_t v;
    memset(&v, 0, sizeof v);
    v.op = op;
    v.dim = dim;
    v.from_dim = from_dim;
    v.to_dim = to_dim;
    v.axis = axis;
    return v;
}

/* --------------------------------------------------------------- mesh */

static void test_mesh_errors(void)
{
    redist_mesh_t *m = NULL;
    redist_error_t err;
    const char *names[17];
    char store[17][8];
    int64_t sizes[17];
    for (int i = 0; i < 17; i++) {
        snprintf(store[i], sizeof store[i], "a%d", i);
        names[i] = store[i];
        sizes[i] = 1;
    }

    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(0, names, sizes, &m, &err),
              REDIST_ERR_INVALID);
    CHECK_INT(err.status, REDIST_ERR_INVALID);
    CHECK(m == NULL);

    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(17, names, sizes, &m, &err),
              REDIST_ERR_INVALID);
    CHECK(m == NULL);

    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(16, names, sizes, &m, &err), REDIST_OK);
    CHECK_INT(redist_mesh_num_axes(m), 16);
    CHECK_INT(redist_mesh_num_devices(m), 1);
    redist_mesh_free(m);
    m = NULL;

    /* the loaders' axis-name rule holds for C callers too */
    const char *bad_names[] = {"a,b", "a|b", "a=b", "a\x01b", "a\xc2\x85"};
    int64_t one = 2;
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        redist_error_clear(&err);
        CHECK_INT(redist_mesh_create(1, &bad_names[i], &one, &m, &err),
                  REDIST_ERR_INVALID);
        CHECK_STR(err.path, "mesh[0]");
        CHECK(m == NULL);
    }

    const char *dup[3] = {"x", "y", "x"};
    int64_t s3[3] = {2, 2, 2};
    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(3, dup, s3, &m, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "mesh[2]");
    CHECK_CONTAINS(err.text, "duplicate");
    CHECK(m == NULL);

    const char *xy[2] = {"x", "y"};
    int64_t zero[2] = {2, 0};
    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(2, xy, zero, &m, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "mesh[1]");
    CHECK(m == NULL);

    int64_t neg[2] = {-3, 2};
    CHECK_INT(redist_mesh_create(2, xy, neg, &m, NULL), REDIST_ERR_INVALID);

    const char *empty[2] = {"x", ""};
    int64_t ok2[2] = {2, 2};
    CHECK_INT(redist_mesh_create(2, empty, ok2, &m, NULL), REDIST_ERR_INVALID);
    char longname[REDIST_MAX_NAME + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *toolong[1] = {longname};
    CHECK_INT(redist_mesh_create(1, toolong, ok2, &m, NULL),
              REDIST_ERR_INVALID);
    longname[REDIST_MAX_NAME] = '\0'; /* exactly the limit */
    CHECK_INT(redist_mesh_create(1, toolong, ok2, &m, NULL), REDIST_OK);
    redist_mesh_free(m);
    m = NULL;

    /* device count overflow: 2^16 * 2^16 > 2^31 - 1, and 64-bit wrap */
    int64_t big[2] = {65536, 65536};
    redist_error_clear(&err);
    CHECK_INT(redist_mesh_create(2, xy, big, &m, &err), REDIST_ERR_OVERFLOW);
    CHECK_INT(err.status, REDIST_ERR_OVERFLOW);
    CHECK(m == NULL);
    int64_t huge[3] = {INT64_MAX, INT64_MAX, 4};
    const char *xyz[3] = {"x", "y", "z"};
    CHECK_INT(redist_mesh_create(3, xyz, huge, &m, NULL), REDIST_ERR_OVERFLOW);
    int64_t limit[1] = {REDIST_MAX_DEVICES};
    CHECK_INT(redist_mesh_create(1, xy, limit, &m, NULL), REDIST_OK);
    CHECK_INT(redist_mesh_num_devices(m), REDIST_MAX_DEVICES);
    redist_mesh_free(m);
    m = NULL;

    /* NULL arguments */
    CHECK_INT(redist_mesh_create(2, xy, ok2, NULL, NULL), REDIST_ERR_INVALID);
    CHECK_INT(redist_mesh_create(2, NULL, ok2, &m, NULL), REDIST_ERR_INVALID);
    redist_mesh_free(NULL); /* accepted */

    /* the first error is kept */
    redist_error_clear(&err);
    redist_mesh_create(0, xy, ok2, &m, &err);
    char first[REDIST_ERROR_TEXT_LENGTH];
    snprintf(first, sizeof first, "%s", err.text);
    CHECK_INT(redist_mesh_create(3, dup, s3, &m, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.text, first);
    CHECK(m == NULL);
}

static void test_mesh_ranks(void)
{
    const char *names[3] = {"x", "y", "z"};
    int64_t sizes[3] = {2, 3, 4};
    redist_mesh_t *m = NULL;
    CHECK_INT(redist_mesh_create(3, names, sizes, &m, NULL), REDIST_OK);
    if (!m)
        return;
    CHECK_INT(redist_mesh_num_axes(m), 3);
    CHECK_INT(redist_mesh_num_devices(m), 24);
    CHECK_STR(redist_mesh_axis_name(m, 1), "y");
    CHECK(redist_mesh_axis_name(m, 3) == NULL);
    CHECK(redist_mesh_axis_name(m, -1) == NULL);
    CHECK_INT(redist_mesh_axis_size(m, 2), 4);
    CHECK_INT(redist_mesh_find_axis(m, "z"), 2);
    CHECK_INT(redist_mesh_find_axis(m, "q"), -1);
    int bad = 0;
    for (int64_t r = 0; r < 24; r++) {
        int64_t c[3];
        redist_mesh_coords(m, r, c);
        /* row-major: the first axis varies slowest */
        if (c[0] != r / 12 || c[1] != (r / 4) % 3 || c[2] != r % 4)
            bad++;
        if (redist_mesh_rank(m, c) != r)
            bad++;
    }
    CHECK_INT(bad, 0);
    int64_t c[3] = {1, 2, 3};
    CHECK_INT(redist_mesh_rank(m, c), 1 * 12 + 2 * 4 + 3);
    /* names are copied */
    char name[8] = "v";
    const char *vn[1] = {name};
    int64_t vs[1] = {5};
    redist_mesh_t *m2 = NULL;
    CHECK_INT(redist_mesh_create(1, vn, vs, &m2, NULL), REDIST_OK);
    name[0] = 'w';
    CHECK_STR(redist_mesh_axis_name(m2, 0), "v");
    redist_mesh_free(m2);
    redist_mesh_free(m);
}

/* -------------------------------------------------------------- types */

static void test_types(void)
{
    redist_mesh_t *m = mesh2("x", 2, "y", 4);
    if (!CHECK(m != NULL))
        return;
    int64_t shape[2] = {8, 6};
    redist_type_t t, u;
    redist_error_t err;
    char buf[256];

    redist_type_init(&t, 2);
    CHECK_INT(t.ndims, 2);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", NULL), REDIST_OK);
    CHECK_INT(redist_type_push_axis(&t, 2, 0), REDIST_ERR_INVALID);
    CHECK_INT(redist_type_push_axis(&t, -1, 0), REDIST_ERR_INVALID);
    CHECK_INT(redist_type_push_axis(&t, 0, -1), REDIST_ERR_INVALID);
    CHECK_INT(redist_type_push_axis(&t, 0, REDIST_MAX_AXES),
              REDIST_ERR_INVALID);
    CHECK_INT(redist_type_add_partial(&t, REDIST_MAX_AXES),
              REDIST_ERR_INVALID);

    /* a valid type, its local shape and readable form */
    CHECK_INT(redist_type_push_axis(&t, 0, 0), REDIST_OK);
    CHECK_INT(redist_type_push_axis(&t, 0, 1), REDIST_OK);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", NULL), REDIST_OK);
    int64_t local[2] = {0, 0};
    CHECK_INT(redist_type_local_shape(&t, m, shape, local), REDIST_OK);
    CHECK_INT(local[0], 1);
    CHECK_INT(local[1], 6);
    CHECK_STR(redist_type_format(&t, m, buf, sizeof buf), "[{x,y}, {}]");
    redist_type_init(&u, 2);
    redist_type_push_axis(&u, 1, 0);
    redist_type_add_partial(&u, 1);
    CHECK_STR(redist_type_format(&u, m, buf, sizeof buf),
              "[{}, {x}] partial{y}");
    CHECK(!redist_type_equal(&t, &u));
    redist_type_t t2;
    redist_type_init(&t2, 2);
    redist_type_push_axis(&t2, 0, 1);
    redist_type_push_axis(&t2, 0, 0);
    CHECK(!redist_type_equal(&t, &t2)); /* order within a dim matters */
    redist_type_init(&t2, 2);
    redist_type_push_axis(&t2, 0, 0);
    redist_type_push_axis(&t2, 0, 1);
    CHECK(redist_type_equal(&t, &t2));

    /* axis used twice: in two dims, and in a dim and partial */
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 0, 0);
    redist_type_push_axis(&t, 1, 0);
    redist_error_clear(&err);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "from.dims[1][0]");
    CHECK_CONTAINS(err.text, "\"x\"");
    CHECK_CONTAINS(err.text, "twice");
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 0, 1);
    redist_type_add_partial(&t, 1);
    redist_error_clear(&err);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "to", &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "to.dims[0][0]");
    CHECK_CONTAINS(err.text, "partial");

    /* non-divisible dim: 6 is not divisible by y=4; the message names it */
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 1, 1);
    redist_error_clear(&err);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "to", &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "to.dims[1]");
    CHECK_CONTAINS(err.text, "dim 1");
    CHECK_CONTAINS(err.text, "not divisible");
    CHECK_INT(redist_type_local_shape(&t, m, shape, local), REDIST_ERR_INVALID);

    /* rank mismatch */
    redist_type_init(&t, 1);
    redist_error_clear(&err);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "from.dims");
    CHECK_CONTAINS(err.text, "rank mismatch");

    /* an axis index beyond the mesh */
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 0, 5);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", NULL),
              REDIST_ERR_INVALID);
    redist_type_init(&t, 2);
    redist_type_add_partial(&t, 7);
    CHECK_INT(redist_type_validate(&t, m, 2, shape, "from", NULL),
              REDIST_ERR_INVALID);
    redist_mesh_free(m);
}

/* -------------------------------------------------------------- specs */

static void test_spec_create(void)
{
    redist_mesh_t *m = mesh2("x", 2, "y", 4);
    if (!CHECK(m != NULL))
        return;
    redist_type_t f, t;
    redist_spec_t *s = NULL;
    redist_error_t err;

    /* a good spec; the mesh is copied */
    int64_t shape[2] = {8, 12};
    redist_type_init(&f, 2);
    redist_type_push_axis(&f, 0, 0);
    redist_type_push_axis(&f, 1, 1);
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 0, 1);
    redist_type_push_axis(&t, 0, 0);
    redist_error_clear(&err);
    CHECK_INT(redist_spec_create(m, 2, shape, REDIST_BF16, &f, &t,
                                 REDIST_REDUCE_MAX, "demo", &s, &err),
              REDIST_OK);
    redist_mesh_free(m);
    m = NULL;
    if (s) {
        CHECK_STR(redist_spec_name(s), "demo");
        CHECK_INT(redist_spec_ndims(s), 2);
        CHECK_INT(redist_spec_shape(s)[1], 12);
        CHECK_INT(redist_spec_dtype(s), REDIST_BF16);
        CHECK_INT(redist_spec_reduce(s), REDIST_REDUCE_MAX);
        CHECK(redist_type_equal(redist_spec_from(s), &f));
        CHECK(redist_type_equal(redist_spec_to(s), &t));
        CHECK_INT(redist_mesh_num_devices(redist_spec_mesh(s)), 8);
        CHECK_INT(redist_spec_src_bytes(s), 4 * 3 * 2);
        CHECK_INT(redist_spec_dst_bytes(s), 1 * 12 * 2);
        redist_expect_t e;
        redist_spec_expect(s, &e);
        CHECK(!e.has_max_collectives && !e.has_ops && !e.has_infeasible);
    }
    redist_spec_free(s);
    s = NULL;
    redist_spec_free(NULL);

    m = mesh2("x", 2, "y", 4);
    if (!m)
        return;
    /* a name of NULL is the empty name */
    redist_type_init(&f, 1);
    redist_type_init(&t, 1);
    int64_t one[1] = {4};
    CHECK_INT(redist_spec_create(m, 1, one, REDIST_F32, &f, &t,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_OK);
    if (s)
        CHECK_STR(redist_spec_name(s), "");
    redist_spec_free(s);
    s = NULL;

    /* element-count overflow */
    int64_t big[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    redist_type_init(&f, 2);
    redist_type_init(&t, 2);
    redist_error_clear(&err);
    CHECK_INT(redist_spec_create(m, 2, big, REDIST_F32, &f, &t,
                                 REDIST_REDUCE_SUM, NULL, &s, &err),
              REDIST_ERR_OVERFLOW);
    CHECK(s == NULL);
    CHECK(err.path[0] != '\0');
    /* byte-count overflow: 2^62 elements of 8 bytes */
    int64_t elems[1] = {INT64_C(1) << 62};
    redist_type_init(&f, 1);
    redist_type_init(&t, 1);
    CHECK_INT(redist_spec_create(m, 1, elems, REDIST_F64, &f, &t,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_ERR_OVERFLOW);
    CHECK_INT(redist_spec_create(m, 1, elems, REDIST_I8, &f, &t,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_OK);
    redist_spec_free(s);
    s = NULL;

    /* a dim that does not divide is uneven (ceil: 2,2,2,0 for 6 over 4);
     * bad explicit lengths name their place ("to.blocks[1]") */
    redist_type_init(&f, 2);
    redist_type_init(&t, 2);
    redist_type_push_axis(&t, 1, 1); /* 6 % 4 != 0 */
    int64_t shape86[2] = {8, 6};
    redist_error_clear(&err);
    CHECK_INT(redist_spec_create(m, 2, shape86, REDIST_F32, &f, &t,
                                 REDIST_REDUCE_SUM, NULL, &s, &err),
              REDIST_OK);
    CHECK_INT(redist_spec_is_uneven(s), 1);
    CHECK_INT(redist_spec_dst_bytes(s), 8 * 2 * 4);
    CHECK_INT(redist_spec_device_bytes(s, REDIST_SIDE_TO, 3), 0);
    int64_t lens[4] = {0};
    CHECK_INT(redist_spec_block_lengths(s, REDIST_SIDE_TO, 1, lens, 4), 4);
    CHECK(lens[0] == 2 && lens[1] == 2 && lens[2] == 2 && lens[3] == 0);
    redist_layout_t lf, lt;
    memset(&lf, 0, sizeof lf);
    memset(&lt, 0, sizeof lt);
    lt.split = REDIST_SPLIT_BALANCED;
    redist_spec_t *s2 = NULL;
    CHECK_INT(redist_spec_with_layouts(s, &lf, &lt, &s2, &err), REDIST_OK);
    CHECK_INT(redist_spec_block_lengths(s2, REDIST_SIDE_TO, 1, lens, 4), 4);
    CHECK(lens[0] == 2 && lens[1] == 2 && lens[2] == 1 && lens[3] == 1);
    CHECK_INT(redist_spec_split(s2, REDIST_SIDE_TO), REDIST_SPLIT_BALANCED);
    redist_spec_free(s2);
    s2 = NULL;
    const int64_t three[3] = {2, 2, 2};
    lt.blocks[1] = three;
    lt.nblocks[1] = 3;
    redist_error_clear(&err);
    CHECK_INT(redist_spec_with_layouts(s, &lf, &lt, &s2, &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "to.blocks[1]");
    char buf[512];
    redist_error_format(&err, buf, sizeof buf);
    CHECK(strncmp(buf, "to.blocks[1]: ", 14) == 0);
    CHECK(s2 == NULL);
    redist_spec_free(s);
    s = NULL;

    /* bad shape, dtype, reduce, rank */
    int64_t zero[2] = {8, 0};
    redist_error_clear(&err);
    CHECK_INT(redist_spec_create(m, 2, zero, REDIST_F32, &f, &f,
                                 REDIST_REDUCE_SUM, NULL, &s, &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "shape[1]");
    CHECK_INT(redist_spec_create(m, 2, shape86, REDIST_DTYPE_COUNT, &f, &f,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_ERR_INVALID);
    CHECK_INT(redist_spec_create(m, 2, shape86, REDIST_F32, &f, &f,
                                 REDIST_REDUCE_COUNT, NULL, &s, NULL),
              REDIST_ERR_INVALID);
    CHECK_INT(redist_spec_create(m, 1, shape86, REDIST_F32, &f, &f,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_ERR_INVALID);
    CHECK_INT(redist_spec_create(NULL, 2, shape86, REDIST_F32, &f, &f,
                                 REDIST_REDUCE_SUM, NULL, &s, NULL),
              REDIST_ERR_INVALID);

    /* a target partial axis the source lacks: rejected unless allowed */
    redist_type_init(&t, 2);
    redist_type_add_partial(&t, 0);
    CHECK(redist_spec_create(m, 2, shape86, REDIST_F32, &f, &t,
                             REDIST_REDUCE_SUM, NULL, &s, NULL) != REDIST_OK);
    CHECK(s == NULL);
    redist_mesh_free(m);
}

/* ------------------------------------------------------------- errors */

static void test_error_format(void)
{
    redist_error_t err;
    char buf[512];

    redist_error_clear(&err);
    CHECK_INT(err.status, REDIST_OK);
    CHECK_INT(err.line, 0);
    CHECK_STR(err.source, "");

    /* syntax error: "file:3:14: text" */
    redist_error_clear(&err);
    err.status = REDIST_ERR_PARSE;
    err.line = 3;
    err.column = 14;
    snprintf(err.source, sizeof err.source, "file");
    snprintf(err.text, sizeof err.text, "text");
    CHECK_STR(redist_error_format(&err, buf, sizeof buf), "file:3:14: text");

    /* semantic error: "file: to.dims[1]: text" */
    redist_error_clear(&err);
    err.status = REDIST_ERR_INVALID;
    snprintf(err.source, sizeof err.source, "file");
    snprintf(err.path, sizeof err.path, "to.dims[1]");
    snprintf(err.text, sizeof err.text, "text");
    CHECK_STR(redist_error_format(&err, buf, sizeof buf),
              "file: to.dims[1]: text");

    /* no source: "to.dims[1]: text"; no path: "file: text" */
    err.source[0] = '\0';
    CHECK_STR(redist_error_format(&err, buf, sizeof buf), "to.dims[1]: text");
    snprintf(err.source, sizeof err.source, "file");
    err.path[0] = '\0';
    CHECK_STR(redist_error_format(&err, buf, sizeof buf), "file: text");

    /* truncation keeps a terminated string */
    char small[8];
    snprintf(err.path, sizeof err.path, "to.dims[1]");
    redist_error_format(&err, small, sizeof small);
    CHECK_INT(strlen(small), sizeof small - 1);
    CHECK(strncmp(small, "file: t", 7) == 0);

    /* without text, the status string */
    redist_error_clear(&err);
    err.status = REDIST_ERR_NOMEM;
    CHECK_STR(redist_error_format(&err, buf, sizeof buf),
              redist_status_string(REDIST_ERR_NOMEM));

    /* a real error from the inline loader names source and option */
    redist_spec_t *s = NULL;
    redist_error_clear(&err);
    CHECK_INT(redist_spec_from_strings("x=2,y=4", "8x8", NULL, "x|z", NULL,
                                       "|", NULL, NULL, NULL, 0, &s, &err),
              REDIST_ERR_INVALID);
    redist_error_format(&err, buf, sizeof buf);
    CHECK_CONTAINS(buf, "<command line>: --from: ");
    CHECK_CONTAINS(buf, "\"z\"");
    CHECK(s == NULL);

    /* every status has a distinct string */
    const redist_status_t all[] = {
        REDIST_OK, REDIST_ERR_INVALID, REDIST_ERR_NOMEM, REDIST_ERR_OVERFLOW,
        REDIST_ERR_INFEASIBLE, REDIST_ERR_IO, REDIST_ERR_PARSE,
        REDIST_ERR_LIMIT, REDIST_ERR_PLAN, REDIST_ERR_BACKEND,
        REDIST_ERR_MISMATCH};
    int n = (int)(sizeof all / sizeof all[0]), dup = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(redist_status_string(all[i]),
                       redist_status_string(all[j])) == 0)
                dup++;
    CHECK_INT(dup, 0);
    CHECK(redist_status_string((redist_status_t)-99) != NULL);
}

/* -------------------------------------------------------------- names */

static void test_names(void)
{
    int bad = 0;
    for (int i = 0; i < REDIST_OP_COUNT; i++) {
        redist_op_t op = REDIST_OP_COUNT;
        const char *nm = redist_op_name((redist_op_t)i);
        if (!nm || redist_op_from_name(nm, &op) != REDIST_OK ||
            op != (redist_op_t)i)
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_STR(redist_op_name(REDIST_OP_ALL_TO_ALL), "all_to_all");
    CHECK_STR(redist_op_name(REDIST_OP_REDUCE_SCATTER), "reduce_scatter");
    CHECK_STR(redist_op_name(REDIST_OP_PERMUTE), "permute");
    CHECK(redist_op_name(REDIST_OP_COUNT) == NULL);
    CHECK(redist_op_name((redist_op_t)-1) == NULL);
    redist_op_t op;
    CHECK_INT(redist_op_from_name("allgather", &op), REDIST_ERR_INVALID);
    CHECK_INT(redist_op_from_name(NULL, &op), REDIST_ERR_INVALID);
    CHECK_INT(redist_op_is_collective(REDIST_OP_SLICE), 0);
    for (int i = 1; i < REDIST_OP_COUNT; i++)
        CHECK_INT(redist_op_is_collective((redist_op_t)i), 1);

    static const size_t sizes[REDIST_DTYPE_COUNT] = {2, 2, 4, 8, 1, 2, 4,
                                                      8, 1, 2, 4, 8, 8, 16};
    bad = 0;
    for (int i = 0; i < REDIST_DTYPE_COUNT; i++) {
        redist_dtype_t d = REDIST_DTYPE_COUNT;
        const char *nm = redist_dtype_name((redist_dtype_t)i);
        if (!nm || redist_dtype_from_name(nm, &d) != REDIST_OK ||
            d != (redist_dtype_t)i ||
            redist_dtype_size((redist_dtype_t)i) != sizes[i])
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_STR(redist_dtype_name(REDIST_BF16), "bf16");
    CHECK_STR(redist_dtype_name(REDIST_C128), "c128");
    CHECK(redist_dtype_name(REDIST_DTYPE_COUNT) == NULL);
    CHECK_INT(redist_dtype_size(REDIST_DTYPE_COUNT), 0);
    redist_dtype_t d;
    CHECK_INT(redist_dtype_from_name("f128", &d), REDIST_ERR_INVALID);
    CHECK_INT(redist_dtype_from_name("BF16", &d), REDIST_ERR_INVALID);

    bad = 0;
    for (int i = 0; i < REDIST_REDUCE_COUNT; i++) {
        redist_reduce_t r = REDIST_REDUCE_COUNT;
        const char *nm = redist_reduce_name((redist_reduce_t)i);
        if (!nm || redist_reduce_from_name(nm, &r) != REDIST_OK ||
            r != (redist_reduce_t)i)
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_STR(redist_reduce_name(REDIST_REDUCE_SUM), "sum");
    CHECK_STR(redist_reduce_name(REDIST_REDUCE_PROD), "prod");
    CHECK(redist_reduce_name(REDIST_REDUCE_COUNT) == NULL);
    redist_reduce_t r;
    CHECK_INT(redist_reduce_from_name("avg", &r), REDIST_ERR_INVALID);
}

/* -------------------------------------------------------------- plans */

static void test_plan_basics(void)
{
    /* [{x},{}] -> [{},{x}]: one all_to_all, (s-1)/s L = 64 bytes */
    redist_spec_t *s = spec_s("x=2,y=4", "8x8", "f32", "x|", NULL, "|x",
                              NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_t *p = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, NULL, &p, &err), REDIST_OK);
    redist_spec_free(s); /* the plan keeps its own copy */
    if (!p)
        return;
    redist_plan_stats_t st;
    redist_plan_stats(p, &st);
    CHECK_INT(st.src_bytes, 128);
    CHECK_INT(st.dst_bytes, 128);
    CHECK_INT(st.peak_bytes, 128);
    CHECK_INT(redist_plan_peak_bytes(p), 128);
    CHECK_INT(st.recv_bytes, 64);
    CHECK_INT(st.collectives, 1);
    CHECK_INT(st.steps, 1);
    CHECK_INT(st.memory_efficient, 1);
    CHECK_INT(redist_plan_num_steps(p), 1);
    CHECK_INT(redist_spec_src_bytes(redist_plan_spec(p)), 128);

    redist_step_view_t v;
    CHECK_INT(redist_plan_step(p, 0, &v), REDIST_OK);
    CHECK_INT(v.op, REDIST_OP_ALL_TO_ALL);
    CHECK_INT(v.from_dim, 0);
    CHECK_INT(v.to_dim, 1);
    CHECK_INT(v.axis, 0);
    CHECK_INT(v.dim, -1);
    CHECK_INT(v.local_shape[0], 8);
    CHECK_INT(v.local_shape[1], 4);
    CHECK_INT(v.local_bytes, 128);
    CHECK_INT(v.recv_bytes, 64);

    /* step views out of range */
    CHECK_INT(redist_plan_step(p, 1, &v), REDIST_ERR_INVALID);
    CHECK_INT(redist_plan_step(p, -1, &v), REDIST_ERR_INVALID);
    CHECK_INT(redist_plan_step(p, 0, NULL), REDIST_ERR_INVALID);

    redist_verify_result_t vr;
    CHECK_INT(redist_plan_verify(p, &vr, NULL), REDIST_OK);
    CHECK_INT(vr.valid, 1);
    CHECK_INT(vr.failed_step, -1);
    CHECK_INT(vr.recv_bytes, 64);

    FILE *f = tmpfile();
    if (f) {
        CHECK_INT(redist_plan_print(p, f, 1), REDIST_OK);
        CHECK(ftell(f) > 0);
        fclose(f);
    }
    redist_plan_free(p);
    redist_plan_free(NULL);

    /* the identity: no steps */
    s = spec_s("x=2,y=4", "8x8", "f32", "x|y", NULL, "x|y", NULL);
    CHECK(s != NULL);
    if (s)
        CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.steps, 0);
        CHECK_INT(st.recv_bytes, 0);
        CHECK_INT(st.collectives, 0);
        CHECK_INT(st.peak_bytes, 32);
        CHECK_INT(redist_plan_step(p, 0, &v), REDIST_ERR_INVALID);
        redist_plan_free(p);
        p = NULL;
    }
    redist_spec_free(s);

    /* all_reduce of a partial axis: 2(s-1)/s L rounded up; x=3 cannot
     * reduce_scatter a dim of 4, L = 16 bytes */
    s = spec_s("x=3", "4", "f32", "", "x", "", NULL);
    CHECK(s != NULL);
    if (s)
        CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.collectives, 1);
        CHECK_INT(st.recv_bytes, 22); /* ceil(2 * 2/3 * 16) = ceil(21.33) */
        CHECK_INT(redist_plan_step(p, 0, &v), REDIST_OK);
        CHECK_INT(v.op, REDIST_OP_ALL_REDUCE);
        CHECK_INT(v.axis, 0);
        CHECK_INT(v.after.partial, 0);
        redist_plan_free(p);
        p = NULL;
    }
    redist_spec_free(s);
}

static void test_from_steps(void)
{
    redist_spec_t *s = spec_s("x=2,y=4", "8x8", "f32", "x|", NULL, "|x",
                              NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_t *p = NULL;
    redist_error_t err;
    redist_plan_stats_t st;

    /* a valid but non-optimal plan: all_gather then slice (peak 2x) */
    redist_step_view_t two[2] = {
        step(REDIST_OP_ALL_GATHER, 0, -1, -1, 0),
        step(REDIST_OP_SLICE, 1, -1, -1, 0),
    };
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 2, two, &p, &err), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.peak_bytes, 256);
        CHECK_INT(st.recv_bytes, 128);
        CHECK_INT(st.collectives, 1);
        CHECK_INT(st.steps, 2);
        CHECK_INT(st.memory_efficient, 0);
        redist_verify_result_t vr;
        CHECK_INT(redist_plan_verify(p, &vr, NULL), REDIST_OK);
        CHECK_INT(vr.valid, 1);
        redist_plan_free(p);
        p = NULL;
    }

    /* an illegal step: all_gather of a dim with no axes (steps[1]) */
    redist_step_view_t bad1[2] = {
        step(REDIST_OP_SLICE, 1, -1, -1, 1),
        step(REDIST_OP_ALL_GATHER, 1, -1, -1, 0),
    };
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 2, bad1, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[1]");
    CHECK(p == NULL);

    /* slice of an axis that is not replicated (steps[0]) */
    redist_step_view_t bad0[1] = {step(REDIST_OP_SLICE, 1, -1, -1, 0)};
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, bad0, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0]");
    CHECK(p == NULL);

    /* all_to_all of an axis that is not the minor of its dim */
    redist_step_view_t bad2[2] = {
        step(REDIST_OP_SLICE, 0, -1, -1, 1),     /* [{x,y}, {}] */
        step(REDIST_OP_ALL_TO_ALL, -1, 0, 1, 0), /* x is not dim 0's minor */
    };
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 2, bad2, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[1]");
    CHECK(p == NULL);

    /* a legal plan that does not end at the target */
    redist_step_view_t partway[1] = {step(REDIST_OP_ALL_GATHER, 0, -1, -1, 0)};
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, partway, &p, &err),
              REDIST_ERR_PLAN);
    CHECK(p == NULL);

    /* an unknown op */
    redist_step_view_t unk[1] = {step(REDIST_OP_COUNT, 0, -1, -1, 0)};
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, unk, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0]");
    CHECK_INT(redist_plan_from_steps(s, -1, unk, &p, NULL),
              REDIST_ERR_INVALID);
    CHECK_INT(redist_plan_from_steps(s, 1, NULL, &p, NULL),
              REDIST_ERR_INVALID);
    redist_spec_free(s);

    /* permute: [{x,y}] -> [{y,x}], same local shape, recv L */
    s = spec_s("x=2,y=4", "8", "f32", "x,y", NULL, "y,x", NULL);
    if (!CHECK(s != NULL))
        return;
    redist_step_view_t perm[1] = {step(REDIST_OP_PERMUTE, -1, -1, -1, -1)};
    perm[0].after = *redist_spec_to(s);
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, perm, &p, &err), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.recv_bytes, 4);
        CHECK_INT(st.collectives, 1);
        CHECK_INT(st.peak_bytes, 4);
        redist_plan_free(p);
        p = NULL;
    }
    /* the solver finds the same permute (the only plan under 4 bytes) */
    CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
    if (p) {
        redist_step_view_t v;
        redist_plan_stats(p, &st);
        CHECK_INT(st.peak_bytes, 4);
        CHECK_INT(st.recv_bytes, 4);
        CHECK_INT(redist_plan_num_steps(p), 1);
        if (redist_plan_step(p, 0, &v) == REDIST_OK)
            CHECK_INT(v.op, REDIST_OP_PERMUTE);
        redist_plan_free(p);
        p = NULL;
    }
    /* a permute that changes the local shape is illegal */
    redist_type_t other;
    redist_type_init(&other, 1);
    redist_type_push_axis(&other, 0, 1);
    perm[0].after = other;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, perm, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0]");
    CHECK(p == NULL);
    redist_spec_free(s);
}

static void test_memory_inefficient(void)
{
    /* [{x}] -> [{y}] on x=2, y=4, shape [4]: local 2 -> 1 elements.  No
     * step moves between them within 2 elements (y cannot slice a local
     * dim of 2, a permute needs equal local shapes, there is no other dim
     * for an all_to_all), so the least peak is the full 4 elements. */
    redist_mesh_t *m = mesh2("x", 2, "y", 4);
    if (!CHECK(m != NULL))
        return;
    int64_t shape[1] = {4};
    redist_type_t f, t;
    redist_type_init(&f, 1);
    redist_type_push_axis(&f, 0, 0);
    redist_type_init(&t, 1);
    redist_type_push_axis(&t, 0, 1);
    redist_spec_t *s = NULL;
    CHECK_INT(redist_spec_create(m, 1, shape, REDIST_F32, &f, &t,
                                 REDIST_REDUCE_SUM, "inefficient", &s, NULL),
              REDIST_OK);
    redist_mesh_free(m);
    if (!s)
        return;
    redist_plan_t *p = NULL;
    redist_error_t err;
    redist_plan_stats_t st;
    /* the bytes objective: no exchange, so the gather's peak is forced
     * (the time objective's exchange meets the bound: test_objective.c) */
    redist_plan_options_t ob;
    memset(&ob, 0, sizeof ob);
    ob.objective = REDIST_OBJECTIVE_BYTES;
    CHECK_INT(redist_plan_create(s, &ob, &p, NULL), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.src_bytes, 8);
        CHECK_INT(st.dst_bytes, 4);
        CHECK_INT(st.peak_bytes, 16);
        CHECK_INT(st.memory_efficient, 0);
        CHECK_INT(st.recv_bytes, 8); /* all_gather x: (2-1) * 8 */
        CHECK_INT(st.collectives, 1);
        redist_verify_result_t vr;
        CHECK_INT(redist_plan_verify(p, &vr, NULL), REDIST_OK);
        CHECK_INT(vr.memory_efficient, 0);
        CHECK_INT(vr.peak_bytes, 16);
        redist_plan_free(p);
        p = NULL;
    }
    /* max_peak_bytes below the forced peak, and below the endpoints */
    redist_plan_options_t o = ob;
    o.max_peak_bytes = 8;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INFEASIBLE);
    CHECK(p == NULL);
    CHECK(err.text[0] != '\0');
    o.max_peak_bytes = 4;
    CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_ERR_INFEASIBLE);
    CHECK(p == NULL);
    o.max_peak_bytes = 16;
    CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_OK);
    redist_plan_free(p);
    p = NULL;
    redist_spec_free(s);
}

static void test_plan_errors(void)
{
    redist_plan_t *p = NULL;
    redist_error_t err;

    /* a target partial axis the source lacks: accepted as a spec only with
     * REDIST_SPEC_ALLOW_UNPLANNABLE, then infeasible to plan */
    redist_spec_t *s = NULL;
    redist_error_clear(&err);
    CHECK(redist_spec_from_strings("x=2,y=2", "4x4", "f32", "x|", NULL, "|",
                                   "y", NULL, NULL, 0, &s, &err) != REDIST_OK);
    CHECK(s == NULL);
    redist_error_clear(&err);
    CHECK_INT(redist_spec_from_strings("x=2,y=2", "4x4", "f32", "x|", NULL,
                                       "|", "y", NULL, NULL,
                                       REDIST_SPEC_ALLOW_UNPLANNABLE, &s,
                                       &err),
              REDIST_OK);
    if (s) {
        redist_error_clear(&err);
        CHECK_INT(redist_plan_create(s, NULL, &p, &err),
                  REDIST_ERR_INFEASIBLE);
        CHECK(p == NULL);
        CHECK_CONTAINS(err.text, "\"y\"");
        redist_spec_free(s);
        s = NULL;
    }

    /* a search budget of one visited type: the constructive plan, valid,
     * not proven optimal, its figures within the stated bounds */
    s = spec_s("x=2,y=3,z=2", "12x12x4", "f32", "x,y|z|", "", "|y|x,z",
               NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_options_t o;
    redist_plan_stats_t best, fb;
    memset(&o, 0, sizeof o);
    o.objective = REDIST_OBJECTIVE_BYTES; /* its bounds are in bytes */
    CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_OK);
    redist_plan_stats(p, &best);
    CHECK_INT(best.optimal, 1);
    CHECK_INT(best.bound_peak_bytes, best.peak_bytes);
    CHECK_INT(best.bound_recv_bytes, best.recv_bytes);
    redist_plan_free(p);
    p = NULL;
    o.max_states = 1;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_OK);
    CHECK_INT(err.status, REDIST_OK);
    redist_plan_stats(p, &fb);
    CHECK_INT(fb.optimal, 0);
    CHECK(fb.bound_peak_bytes <= best.peak_bytes);
    CHECK(fb.peak_bytes >= best.peak_bytes);
    if (fb.peak_bytes == best.peak_bytes)
        CHECK(fb.bound_recv_bytes <= best.recv_bytes);
    CHECK_INT(redist_plan_verify(p, NULL, NULL), REDIST_OK);
    char *js = redist_plan_to_json(p);
    CHECK_CONTAINS(js, "\"optimal\": false");
    CHECK_CONTAINS(js, "\"unproven\": \"max_states\"");
    free(js);
    redist_plan_free(p);
    p = NULL;
    /* ... unless max_peak_bytes rules the constructive plan out */
    o.max_peak_bytes = best.peak_bytes;
    if (fb.peak_bytes > best.peak_bytes) {
        redist_error_clear(&err);
        CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_LIMIT);
        CHECK(p == NULL);
        CHECK_CONTAINS(err.text, "raise max_states");
    }

    CHECK_INT(redist_plan_create(NULL, NULL, &p, NULL), REDIST_ERR_INVALID);
    CHECK_INT(redist_plan_create(s, NULL, NULL, NULL), REDIST_ERR_INVALID);
    CHECK_INT(redist_plan_verify(NULL, NULL, NULL), REDIST_ERR_INVALID);
    redist_spec_free(s);
}

/* ------------------------------------------------ hardening regressions */

/* A caller-filled step with after.ndims > 16 (even for an op that has no
 * use for `after`), dim_naxes beyond the mesh, an axis index of 200 or a
 * partial bit beyond the mesh is rejected before anything indexes by it. */
static void test_from_steps_after_ndims_overflow(void)
{
    redist_spec_t *s = spec_s("x=2,y=2", "8x8", "f32", "x|y", NULL, "y|x",
                              NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_t *p = NULL;
    redist_error_t err;
    redist_step_view_t v = step(REDIST_OP_PERMUTE, -1, -1, -1, -1);
    v.after.ndims = 40;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0].after.dims");
    CHECK(p == NULL);
    v.after.ndims = -3;
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, NULL), REDIST_ERR_PLAN);
    /* right rank, other fields broken */
    redist_type_init(&v.after, 2);
    v.after.dim_naxes[0] = 200;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0].after.dims[0]");
    redist_type_init(&v.after, 2);
    v.after.dim_naxes[1] = 1;
    v.after.dims[1][0] = 200;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0].after.dims[1][0]");
    redist_type_init(&v.after, 2);
    v.after.partial = 1u << 20;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[0].after.partial");
    /* an op out of range, in a later step */
    redist_step_view_t two[2] = {v, v};
    two[0] = step(REDIST_OP_PERMUTE, -1, -1, -1, -1);
    two[0].after = *redist_spec_to(s);
    two[1].op = (redist_op_t)77;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 2, two, &p, &err), REDIST_ERR_PLAN);
    CHECK_STR(err.path, "steps[1]");
    CHECK_CONTAINS(err.text, "unknown op 77");
    /* ops that need no `after` ignore a broken one */
    redist_step_view_t a2a[2] = {step(REDIST_OP_ALL_TO_ALL, -1, 0, 1, 0),
                                 step(REDIST_OP_ALL_TO_ALL, -1, 1, 0, 1)};
    memset(&a2a[0].after, 0xA5, sizeof a2a[0].after);
    a2a[1].after.ndims = 40;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 2, a2a, &p, &err), REDIST_ERR_PLAN);
    redist_step_view_t ok[3] = {step(REDIST_OP_ALL_GATHER, 0, -1, -1, 0),
                                step(REDIST_OP_ALL_TO_ALL, -1, 1, 0, 1),
                                step(REDIST_OP_SLICE, 1, -1, -1, 0)};
    memset(&ok[0].after, 0xA5, sizeof ok[0].after);
    ok[1].after.ndims = 40;
    ok[2].after.ndims = 17;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_from_steps(s, 3, ok, &p, &err), REDIST_OK);
    CHECK_INT(redist_plan_verify(p, NULL, NULL), REDIST_OK);
    redist_plan_free(p);
    redist_spec_free(s);
}

/* The cost model given to redist_plan_create is checked like the file
 * loader checks its values: a link out of range, NaN, negative. */
static void test_cost_model_unvalidated(void)
{
    redist_spec_t *s = spec_s("x=2,y=2", "8x8", "f32", "x|y", NULL, "y|x",
                              NULL);
    if (!CHECK(s != NULL))
        return;
    redist_cost_model_t c;
    redist_plan_options_t o;
    redist_plan_t *p = NULL;
    redist_error_t err;
    memset(&o, 0, sizeof o);
    o.objective = REDIST_OBJECTIVE_TIME;
    o.cost = &c;
    redist_cost_model_default(&c);
    c.axis_link[1] = 200;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "cost.axis_link[1]");
    CHECK(p == NULL);
    o.objective = REDIST_OBJECTIVE_BYTES; /* times are modelled all the same */
    CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_ERR_INVALID);
    o.objective = REDIST_OBJECTIVE_TIME;
    c.axis_link[5] = 200; /* beyond the mesh's 2 axes: never read */
    c.axis_link[1] = REDIST_LINK_NUMA;
    CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_OK);
    redist_plan_free(p);
    p = NULL;
    CHECK_INT(redist_cost_model_validate(&c, NULL, NULL), REDIST_ERR_INVALID);
    /* the meshes' link: a level or REDIST_LINK_DERIVED (the default) */
    redist_cost_model_default(&c);
    CHECK_INT(c.mesh_link, REDIST_LINK_DERIVED);
    c.mesh_link = REDIST_LINK_NETWORK;
    CHECK_INT(redist_cost_model_validate(&c, NULL, NULL), REDIST_OK);
    c.mesh_link = REDIST_LINK_COUNT;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "cost.mesh_link");
    CHECK(p == NULL);
    redist_cost_model_default(&c);
    c.alpha[REDIST_LINK_NETWORK] = 0.0 / 0.0;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "cost.alpha[network]");
    CHECK_CONTAINS(err.text, "out of range");
    redist_cost_model_default(&c);
    c.beta[0] = -1;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "cost.beta[cache]");
    redist_cost_model_default(&c);
    c.gamma = 1e300;
    redist_error_clear(&err);
    CHECK_INT(redist_plan_create(s, &o, &p, &err), REDIST_ERR_INVALID);
    CHECK_STR(err.path, "cost.gamma");
    redist_cost_model_default(&c);
    CHECK_INT(redist_cost_model_validate(&c, NULL, NULL), REDIST_OK);
    /* the loader: the same range, the same message */
    const char *neg = "{\"links\": {\"numa\": {\"alpha\": -1}}}";
    redist_error_clear(&err);
    CHECK_INT(redist_cost_model_load_buffer(neg, strlen(neg), "c.json", &c,
                                            &err),
              REDIST_ERR_INVALID);
    CHECK_STR(err.path, "links.numa.alpha");
    CHECK_CONTAINS(err.text, "-1 s is out of range");
    redist_spec_free(s);
}

/* 16 partial axes reduce-scattered onto one dim: a plan of 16
 * reduce-scatters, found at once (it used to exhaust the search budget),
 * proven optimal under both objectives; reversed order too. */
static void test_search_budget_partial_axes(void)
{
    char mesh[256], axes[256], rev[256];
    size_t pm = 0, pa = 0, pr = 0;
    for (int a = 0; a < 16; a++) {
        pm += (size_t)snprintf(mesh + pm, sizeof mesh - pm, "%sa%d=2",
                               a ? "," : "", a);
        pa += (size_t)snprintf(axes + pa, sizeof axes - pa, "%sa%d",
                               a ? "," : "", a);
        pr += (size_t)snprintf(rev + pr, sizeof rev - pr, "%sa%d",
                               a ? "," : "", 15 - a);
    }
    const char *targets[2] = {axes, rev};
    for (int t = 0; t < 2; t++)
        for (int obj = 0; obj < 2; obj++) {
            redist_spec_t *s = spec_s(mesh, "65536", "u8", "", axes,
                                      targets[t], NULL);
            if (!CHECK(s != NULL))
                return;
            redist_plan_options_t o;
            redist_plan_t *p = NULL;
            redist_plan_stats_t st;
            memset(&o, 0, sizeof o);
            o.objective = obj ? REDIST_OBJECTIVE_TIME : REDIST_OBJECTIVE_BYTES;
            CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_OK);
            if (p) {
                redist_plan_stats(p, &st);
                CHECK_INT(st.optimal, 1);
                CHECK_INT(st.collectives, 16);
                CHECK_INT(st.recv_bytes, 65535);
                CHECK(redist_plan_states_visited(p) < 20000);
                redist_plan_free(p);
            }
            redist_spec_free(s);
        }
}

/* Size-1 axes cost nothing and add no step: pp=1 with data=8 needs one
 * all_to_all; the last step's `after` is exactly the target; the plan's
 * JSON verifies; 14 size-1 axes do not slow the search. */
static void test_size1_axes_cost_nothing(void)
{
    redist_spec_t *s = spec_s("pp=1,data=8", "64x64", "f32", "pp,data|",
                              NULL, "|data", NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_t *p = NULL;
    redist_plan_stats_t st;
    redist_step_view_t v;
    CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.collectives, 1);
        CHECK_INT(st.steps, 1);
        CHECK_INT(st.optimal, 1);
        CHECK_INT(redist_plan_step(p, 0, &v), REDIST_OK);
        CHECK_INT(v.op, REDIST_OP_ALL_TO_ALL);
        CHECK(redist_type_equal(&v.after, redist_spec_to(s)));
        CHECK_INT(redist_plan_verify(p, NULL, NULL), REDIST_OK);
        char *js = redist_plan_to_json(p);
        CHECK_INT(redist_plan_verify_buffer(s, js, js ? strlen(js) : 0,
                                            "<plan>", NULL, NULL),
                  REDIST_OK);
        free(js);
        /* rebuilt from its own views, it keeps its labels */
        redist_plan_t *q = NULL;
        CHECK_INT(redist_plan_from_steps(s, 1, &v, &q, NULL), REDIST_OK);
        if (q && redist_plan_step(q, 0, &v) == REDIST_OK)
            CHECK(redist_type_equal(&v.after, redist_spec_to(s)));
        redist_plan_free(q);
        redist_plan_free(p);
        p = NULL;
    }
    redist_spec_free(s);

    /* equivalent types: no step at all; a partial size-1 axis in the
     * target only is no pending reduction either */
    s = spec_s("pp=1,data=8", "64x64", "f32", "|data", NULL, "|data", "pp");
    if (CHECK(s != NULL)) {
        CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
        CHECK_INT(redist_plan_num_steps(p), 0);
        CHECK_INT(redist_plan_verify(p, NULL, NULL), REDIST_OK);
        redist_plan_free(p);
        p = NULL;
        /* a hand-written step on the size-1 axis only relabels */
        redist_step_view_t ag = step(REDIST_OP_ALL_REDUCE, -1, -1, -1, 0);
        CHECK_INT(redist_plan_from_steps(s, 1, &ag, &p, NULL), REDIST_OK);
        if (p) {
            redist_plan_stats(p, &st);
            CHECK_INT(st.recv_bytes, 0);
            CHECK_INT(st.collectives, 1);
        }
        redist_plan_free(p);
        p = NULL;
        redist_spec_free(s);
    }
    s = spec_s("pp=1,data=8", "8", "f32", "data,pp", NULL, "pp,data", NULL);
    CHECK(redist_type_equivalent(redist_spec_from(s), redist_spec_to(s),
                                 redist_spec_mesh(s)));
    CHECK(!redist_type_equal(redist_spec_from(s), redist_spec_to(s)));
    redist_spec_free(s);

    /* 14 size-1 axes beside x=2, y=2, under the time objective */
    char mesh[256];
    size_t pos = (size_t)snprintf(mesh, sizeof mesh, "x=2,y=2");
    for (int a = 0; a < 14; a++)
        pos += (size_t)snprintf(mesh + pos, sizeof mesh - pos, ",a%d=1", a);
    s = spec_s(mesh, "8x8", "f32", "x|y", NULL, "y|x", NULL);
    if (CHECK(s != NULL)) {
        redist_plan_options_t o;
        memset(&o, 0, sizeof o);
        o.objective = REDIST_OBJECTIVE_TIME;
        CHECK_INT(redist_plan_create(s, &o, &p, NULL), REDIST_OK);
        if (p) {
            redist_plan_stats(p, &st);
            CHECK_INT(st.optimal, 1);
            CHECK_INT(st.collectives, 1);
            CHECK(redist_plan_states_visited(p) < 100);
        }
        redist_plan_free(p);
        redist_spec_free(s);
    }
}

/* A permute on a mesh of size-1 axes moves nothing: 0 bytes received
 * (doc/spec-format.md section 2: 0 for a device that keeps its block), and the
 * solver needs no step at all. */
static void test_permute_recv_on_1_device_mesh(void)
{
    redist_spec_t *s = spec_s("x=1,y=1", "8x8", "f32", "x|y", NULL, "y|x",
                              NULL);
    if (!CHECK(s != NULL))
        return;
    redist_plan_t *p = NULL;
    redist_plan_stats_t st;
    redist_step_view_t v = step(REDIST_OP_PERMUTE, -1, -1, -1, -1);
    v.after = *redist_spec_to(s);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, NULL), REDIST_OK);
    if (p) {
        redist_plan_stats(p, &st);
        CHECK_INT(st.recv_bytes, 0);
        CHECK_INT(st.collectives, 1);
        redist_plan_free(p);
        p = NULL;
    }
    CHECK_INT(redist_plan_create(s, NULL, &p, NULL), REDIST_OK);
    CHECK_INT(redist_plan_num_steps(p), 0);
    redist_plan_free(p);
    redist_spec_free(s);
    /* a permute that moves blocks still receives its whole block */
    s = spec_s("x=1,y=2,z=2", "8", "f32", "y,z", NULL, "z,y", NULL);
    if (!CHECK(s != NULL))
        return;
    v.after = *redist_spec_to(s);
    CHECK_INT(redist_plan_from_steps(s, 1, &v, &p, NULL), REDIST_OK);
    redist_plan_stats(p, &st);
    CHECK_INT(st.recv_bytes, 8);
    redist_plan_free(p);
    redist_spec_free(s);
}

/* The accessors given NULL return their documented values. */
static void test_null_accessors(void)
{
    redist_plan_stats_t st;
    redist_expect_t e;
    redist_type_t t;
    char buf[64] = "x";
    int64_t co[2] = {0, 0};
    memset(&st, 0xA5, sizeof st);
    redist_plan_stats(NULL, &st);
    CHECK_INT(st.peak_bytes, 0);
    CHECK_INT(st.optimal, 0);
    CHECK_INT(redist_plan_peak_bytes(NULL), 0);
    CHECK_INT(redist_spec_ndims(NULL), -1);
    CHECK_INT(redist_spec_src_bytes(NULL), 0);
    memset(&e, 0xA5, sizeof e);
    redist_spec_expect(NULL, &e);
    CHECK_INT(e.has_ops, 0);
    CHECK(e.ops == NULL);
    redist_type_init(NULL, 2);
    CHECK_INT(redist_type_equal(NULL, NULL), 0);
    redist_cost_model_default(NULL);
    CHECK_INT(redist_mesh_rank(NULL, co), -1);
    redist_type_init(&t, 1);
    CHECK(redist_type_format(NULL, NULL, buf, sizeof buf) == buf);
    CHECK_STR(buf, "");
    CHECK(redist_spec_mesh(NULL) == NULL);
    CHECK_INT(redist_spec_dtype(NULL), REDIST_DTYPE_COUNT);
    CHECK_INT(redist_spec_reduce(NULL), REDIST_REDUCE_COUNT);
    /* a type filled with garbage formats as such, and equals nothing */
    memset(&t, 0xA5, sizeof t);
    CHECK_STR(redist_type_format(&t, NULL, buf, sizeof buf),
              "(invalid type)");
    CHECK_INT(redist_type_equal(&t, &t), 0);
    CHECK_INT(redist_type_push_axis(&t, 0, 0), REDIST_ERR_INVALID);
}

/* ------------------------------------------- helpers the CLI also uses */

static void test_bytes_format_parse(void)
{
    char buf[32];
    uint64_t v = 7;
    redist_error_t err;
    CHECK_STR(redist_bytes_format(0, buf, sizeof buf), "0 B");
    CHECK_STR(redist_bytes_format(1023, buf, sizeof buf), "1023 B");
    CHECK_STR(redist_bytes_format(1024, buf, sizeof buf), "1 KiB");
    CHECK_STR(redist_bytes_format(1536, buf, sizeof buf), "1.5 KiB");
    CHECK_STR(redist_bytes_format(29360128, buf, sizeof buf), "28 MiB");
    CHECK_STR(redist_bytes_format(UINT64_MAX, buf, sizeof buf), "16 EiB");
    CHECK_STR(redist_bytes_format(29360128, buf, 4), "28 ");
    CHECK(redist_bytes_format(1, NULL, 8) == NULL);

    static const struct {
        const char *text;
        uint64_t want;
    } good[] = {{"8", 8},          {"4096", 4096},      {"64K", 65536},
                {"64k", 65536},    {"64KiB", 65536},    {"64KB", 65536},
                {"4MiB", 4 << 20}, {"1gb", 1ULL << 30}, {"2T", 2ULL << 40},
                {"0", 0},          {"18446744073709551615", UINT64_MAX},
                {"16777215T", 16777215ULL << 40}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        v = 7;
        CHECK_INT(redist_bytes_parse(good[i].text, strlen(good[i].text), &v,
                                     NULL),
                  REDIST_OK);
        CHECK(v == good[i].want);
    }
    /* only the first len characters count */
    CHECK_INT(redist_bytes_parse("64K,1M", 3, &v, NULL), REDIST_OK);
    CHECK_INT(v, 65536);
    static const char *const bad[] = {
        "", "K", "-1", "+1", " 1", "1 K", "1.5K", "1P", "1KiBx", "1iB",
        "0x10", "18446744073709551616", "16777216T", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        redist_error_clear(&err);
        CHECK_INT(redist_bytes_parse(bad[i], strlen(bad[i]), &v, &err),
                  REDIST_ERR_INVALID);
        CHECK_INT(v, 7); /* written on success only */
        CHECK_INT(err.status, REDIST_ERR_INVALID);
        CHECK_CONTAINS(err.text, "is not a byte count");
    }
    redist_error_clear(&err);
    CHECK_INT(redist_bytes_parse("1 K", 3, &v, &err), REDIST_ERR_INVALID);
    CHECK_CONTAINS(err.text, "\"1 K\"");
    CHECK_INT(redist_bytes_parse(NULL, 3, &v, NULL), REDIST_ERR_INVALID);
    CHECK_INT(redist_bytes_parse("8", 1, NULL, NULL), REDIST_ERR_INVALID);
}

static void test_mesh_format(void)
{
    char buf[32];
    redist_mesh_t *m = mesh2("data", 2, "model", 4);
    CHECK(m != NULL);
    CHECK_STR(redist_mesh_format(m, buf, sizeof buf), "data=2,model=4");
    CHECK_STR(redist_mesh_format(m, buf, 7), "data=2");
    CHECK_STR(redist_mesh_format(NULL, buf, sizeof buf), "");
    CHECK(redist_mesh_format(m, NULL, 8) == NULL);
    redist_mesh_free(m);
    m = mesh2("pp", 1, NULL, 0);
    CHECK_STR(redist_mesh_format(m, buf, sizeof buf), "pp=1");
    redist_mesh_free(m);

    const int64_t shape[3] = {4096, 28672, 1};
    CHECK_STR(redist_shape_format(shape, 2, buf, sizeof buf), "[4096,28672]");
    CHECK_STR(redist_shape_format(shape, 3, buf, sizeof buf),
              "[4096,28672,1]");
    CHECK_STR(redist_shape_format(shape, 0, buf, sizeof buf), "[]");
    CHECK_STR(redist_shape_format(shape, 2, buf, 6), "[4096");
    CHECK_STR(redist_shape_format(NULL, 2, buf, sizeof buf), "");
    CHECK_STR(redist_shape_format(shape, -1, buf, sizeof buf), "");
    CHECK_STR(redist_shape_format(shape, REDIST_MAX_DIMS + 1, buf,
                                  sizeof buf), "");
    CHECK(redist_shape_format(shape, 2, NULL, 8) == NULL);
}

static void test_error_set(void)
{
    redist_error_t err;
    redist_error_clear(&err);
    CHECK_INT(redist_error_set(&err, REDIST_ERR_PLAN, "a.json", "steps[2]",
                               "a wrong step"),
              REDIST_ERR_PLAN);
    CHECK_INT(err.status, REDIST_ERR_PLAN);
    CHECK_STR(err.source, "a.json");
    CHECK_STR(err.path, "steps[2]");
    CHECK_STR(err.text, "a wrong step");
    CHECK_INT(err.line, 0);
    CHECK_INT(err.column, 0);
    /* the first error is kept, the status still returned */
    CHECK_INT(redist_error_set(&err, REDIST_ERR_IO, "b", NULL, "later"),
              REDIST_ERR_IO);
    CHECK_STR(err.text, "a wrong step");
    CHECK_INT(err.status, REDIST_ERR_PLAN);
    /* NULL strings: empty, and the status's own text */
    redist_error_clear(&err);
    CHECK_INT(redist_error_set(&err, REDIST_ERR_NOMEM, NULL, NULL, NULL),
              REDIST_ERR_NOMEM);
    CHECK_STR(err.source, "");
    CHECK_STR(err.path, "");
    CHECK_STR(err.text, redist_status_string(REDIST_ERR_NOMEM));
    /* not an error status: the caller's mistake */
    static const int notes[] = {REDIST_OK, 1, -11, -1000};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++) {
        redist_error_clear(&err);
        CHECK_INT(redist_error_set(&err, (redist_status_t)notes[i], "s", "p",
                                   "t"),
                  REDIST_ERR_INVALID);
        CHECK_INT(err.status, REDIST_ERR_INVALID);
        CHECK_CONTAINS(err.text, "is not an error status");
    }
    CHECK_INT(redist_error_set(NULL, REDIST_ERR_IO, NULL, NULL, NULL),
              REDIST_ERR_IO);
}

/* The shape is shrunk one smallest prime factor at a time, on the dim
 * furthest above the multiple the plan's types need, and the steps stay
 * valid at every size. */
static void test_plan_shrink_shape(void)
{
    static const redist_plan_options_t bytes = {
        .objective = REDIST_OBJECTIVE_BYTES};
    redist_spec_t *s = spec_s("x=2,y=4", "36x20", "f32", "x|y", NULL,
                              "y|x", NULL);
    redist_plan_t *p = NULL;
    CHECK(s != NULL);
    CHECK_INT(redist_plan_create(s, &bytes, &p, NULL), REDIST_OK);
    /* every type of the path splits each dim at most 4 ways: q = 4, 4 */
    int64_t shape[2] = {36, 20};
    static const int64_t want[][3] = {
        {3, 12, 20}, {5, 12, 4}, {3, 4, 4}, {1, 4, 4}, {1, 4, 4}};
    for (int k = 0; k < 5; k++) {
        CHECK_INT(redist_plan_shrink_shape(p, shape), want[k][0]);
        CHECK_INT(shape[0], want[k][1]);
        CHECK_INT(shape[1], want[k][2]);
    }
    /* the plan's steps replay on the smallest shape */
    redist_spec_t *small = spec_s("x=2,y=4", "4x4", "f32", "x|y", NULL,
                                  "y|x", NULL);
    int n = redist_plan_num_steps(p);
    redist_step_view_t v[16];
    redist_plan_t *p2 = NULL;
    CHECK(n > 0 && n <= 16);
    for (int k = 0; k < n && k < 16; k++)
        redist_plan_step(p, k, &v[k]);
    CHECK_INT(redist_plan_from_steps(small, n, v, &p2, NULL), REDIST_OK);
    CHECK_INT(redist_plan_num_steps(p2), n);
    /* ties go to the first dim */
    shape[0] = shape[1] = 8;
    CHECK_INT(redist_plan_shrink_shape(p, shape), 2);
    CHECK_INT(shape[0], 4);
    CHECK_INT(shape[1], 8);
    CHECK_INT(redist_plan_shrink_shape(NULL, shape), 0);
    CHECK_INT(redist_plan_shrink_shape(p, NULL), 0);
    redist_plan_free(p2);
    redist_plan_free(p);
    redist_spec_free(small);
    redist_spec_free(s);
}

/* Plans the ranks must agree on hash alike; any difference changes it. */
static void test_plan_hash(void)
{
    static const redist_plan_options_t bytes = {
        .objective = REDIST_OBJECTIVE_BYTES};
    const char *variants[][4] = {
        /* mesh, shape, dtype, to */
        {"x=2,y=4", "8x8", "f32", "y|x"}, {"x=2,y=4", "8x16", "f32", "y|x"},
        {"x=2,y=4", "8x8", "f64", "y|x"}, {"x=4,y=2", "8x8", "f32", "y|x"},
        {"x=2,y=4", "8x8", "f32", "|x"}};
    uint64_t h[5];
    for (int i = 0; i < 5; i++) {
        redist_spec_t *s = spec_s(variants[i][0], variants[i][1],
                                  variants[i][2], "x|y", NULL,
                                  variants[i][3], NULL);
        redist_plan_t *p = NULL, *q = NULL;
        CHECK(s != NULL);
        CHECK_INT(redist_plan_create(s, &bytes, &p, NULL), REDIST_OK);
        CHECK_INT(redist_plan_create(s, &bytes, &q, NULL), REDIST_OK);
        h[i] = redist_plan_hash(p);
        CHECK(h[i] != 0);
        CHECK(redist_plan_hash(q) == h[i]); /* planned twice: the same */
        /* the same steps given by hand: the same plan, the same hash */
        redist_step_view_t v[16];
        redist_plan_t *r = NULL;
        int n = redist_plan_num_steps(p);
        for (int k = 0; k < n && k < 16; k++)
            redist_plan_step(p, k, &v[k]);
        CHECK_INT(redist_plan_from_steps(s, n, v, &r, NULL), REDIST_OK);
        CHECK(redist_plan_hash(r) == h[i]);
        for (int j = 0; j < i; j++)
            CHECK(h[j] != h[i]);
        redist_plan_free(r);
        redist_plan_free(q);
        redist_plan_free(p);
        redist_spec_free(s);
    }
    CHECK(redist_plan_hash(NULL) == 0);
}

int main(void)
{
    test_mesh_errors();
    test_mesh_ranks();
    test_types();
    test_spec_create();
    test_error_format();
    test_names();
    test_plan_basics();
    test_from_steps();
    test_memory_inefficient();
    test_plan_errors();
    test_from_steps_after_ndims_overflow();
    test_cost_model_unvalidated();
    test_search_budget_partial_axes();
    test_size1_axes_cost_nothing();
    test_permute_recv_on_1_device_mesh();
    test_null_accessors();
    test_bytes_format_parse();
    test_mesh_format();
    test_error_set();
    test_plan_shrink_shape();
    test_plan_hash();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
