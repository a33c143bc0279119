/*
 * redist._redist: Spec and Plan (rpy.h).  Specs come from the C loaders
 * only (a file, or the JSON text python/redist/_types.py writes), so every
 * key the loader learns works from Python unchanged; the accessors return
 * plain tuples and dicts that the Python layer wraps.
 */
#include "rpy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

static PyObject *shape_tuple(int n, const int64_t v[])
{
    PyObject *t = PyTuple_New(n > 0 ? n : 0);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *axis_name(const redist_mesh_t *mesh, int a)
{
    const char *s = redist_mesh_axis_name(mesh, a);
    return s ? PyUnicode_FromString(s) : PyLong_FromLong(a);
}

PyObject *rpy_type_to_py(const redist_type_t *t, const redist_mesh_t *mesh)
{
    int nd = t->ndims < 0 ? 0 : t->ndims > REDIST_MAX_DIMS ? REDIST_MAX_DIMS
                                                           : t->ndims;
    PyObject *dims = PyTuple_New(nd), *partial = PyList_New(0);
    if (!dims || !partial)
        goto fail;
    for (int i = 0; i < nd; i++) {
        int na = t->dim_naxes[i] > REDIST_MAX_AXES ? REDIST_MAX_AXES
                                                   : t->dim_naxes[i];
        PyObject *d = PyTuple_New(na);
        if (!d)
            goto fail;
        PyTuple_SET_ITEM(dims, i, d);
        for (int k = 0; k < na; k++) {
            PyObject *s = axis_name(mesh, t->dims[i][k]);
            if (!s)
                goto fail;
            PyTuple_SET_ITEM(d, k, s);
        }
    }
    for (int a = 0; a < 32; a++) {
        if (!(t->partial >> a & 1u))
            continue;
        PyObject *s = axis_name(mesh, a);
        if (!s || PyList_Append(partial, s) < 0) {
            Py_XDECREF(s);
            goto fail;
        }
        Py_DECREF(s);
    }
    PyObject *pt = PyList_AsTuple(partial);
    Py_DECREF(partial);
    if (!pt) {
        Py_DECREF(dims);
        return NULL;
    }
    return Py_BuildValue("(NN)", dims, pt);
fail:
    Py_XDECREF(dims);
    Py_XDECREF(partial);
    return NULL;
}

/* A dict built from "key", value pairs; values are new references (a NULL
 * one fails the whole dict). */
static PyObject *dict_of(int n, const char *const keys[], PyObject *vals[])
{
    PyObject *d = PyDict_New();
    int ok = d != NULL;
    for (int i = 0; i < n; i++) {
        if (ok && (!vals[i] || PyDict_SetItemString(d, keys[i], vals[i]) < 0))
            ok = 0;
        Py_XDECREF(vals[i]);
    }
    if (!ok)
        Py_CLEAR(d);
    return d;
}

/* ---------------------------------------------------------------- Spec */

const redist_spec_t *rpy_spec_of(PyObject *o)
{
    return rpy_unwrap(o, &rpy_SpecType, "redist.Spec");
}

const redist_plan_t *rpy_plan_of(PyObject *o)
{
    return rpy_unwrap(o, &rpy_PlanType, "redist.Plan");
}

/* tp_dealloc of both types (and their Python subclasses). */
static void obj_dealloc(PyObject *self)
{
    rpy_obj *o = (rpy_obj *)self;
    if (o->owner) /* a view into a set: the owner frees it */
        Py_CLEAR(o->owner);
    else if (PyObject_TypeCheck(self, &rpy_SpecType))
        redist_spec_free(((rpy_obj *)self)->ptr);
    else
        redist_plan_free(((rpy_obj *)self)->ptr);
    Py_TYPE(self)->tp_free(self);
}

static int spec_take(rpy_obj *self, redist_status_t st, redist_spec_t *s,
                     const redist_error_t *err)
{
    if (st != REDIST_OK) {
        rpy_raise(rpy_SpecError, st, err);
        return -1;
    }
    if (self->owner) { /* a set's array is not replaced */
        redist_spec_free(s);
        PyErr_SetString(PyExc_ValueError, "an array of a set is read-only");
        return -1;
    }
    redist_spec_free(self->ptr);
    self->ptr = s;
    return 0;
}

static PyObject *spec_load_file(PyObject *self, PyObject *args)
{
    PyObject *path = NULL;
    unsigned flags = 0;
    if (!PyArg_ParseTuple(args, "O&|I", PyUnicode_FSConverter, &path, &flags))
        return NULL;
    redist_spec_t *s = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_spec_load_file(PyBytes_AS_STRING(path), flags, &s, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (spec_take((rpy_obj *)self, st, s, &err) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *spec_load_buffer(PyObject *self, PyObject *args)
{
    const char *text, *source;
    Py_ssize_t len;
    unsigned flags = 0;
    if (!PyArg_ParseTuple(args, "s#s|I", &text, &len, &source, &flags))
        return NULL;
    redist_spec_t *s = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st =
        redist_spec_load_buffer(text, (size_t)len, source, flags, &s, &err);
    if (spec_take((rpy_obj *)self, st, s, &err) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *expect_dict(const redist_spec_t *s)
{
    redist_expect_t e;
    redist_spec_expect(s, &e);
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    PyObject *v;
#define PUT(key, expr)                                                     \
    do {                                                                   \
        v = (expr);                                                        \
        if (!v || PyDict_SetItemString(d, key, v) < 0) {                   \
            Py_XDECREF(v);                                                 \
            Py_DECREF(d);                                                  \
            return NULL;                                                   \
        }                                                                  \
        Py_DECREF(v);                                                      \
    } while (0)
    if (e.has_max_collectives)
        PUT("max_collectives", PyLong_FromLongLong(e.max_collectives));
    if (e.has_max_recv_bytes)
        PUT("max_recv_bytes", PyLong_FromUnsignedLongLong(e.max_recv_bytes));
    if (e.has_max_peak_bytes)
        PUT("max_peak_bytes", PyLong_FromUnsignedLongLong(e.max_peak_bytes));
    if (e.has_infeasible)
        PUT("infeasible", PyBool_FromLong(e.infeasible));
    if (e.has_ops) {
        PyObject *ops = PyTuple_New(e.nops);
        for (int i = 0; ops && i < e.nops; i++) {
            PyObject *o = PyUnicode_FromString(e.ops[i]);
            if (!o)
                Py_CLEAR(ops);
            else
                PyTuple_SET_ITEM(ops, i, o);
        }
        PUT("ops", ops);
    }
#undef PUT
    return d;
}

/* A mesh as ((name, size), ...) */
static PyObject *mesh_axes(const redist_mesh_t *mesh)
{
    int na = redist_mesh_num_axes(mesh);
    PyObject *axes = PyTuple_New(na > 0 ? na : 0);
    for (int a = 0; axes && a < na; a++) {
        PyObject *p = Py_BuildValue("(sL)", redist_mesh_axis_name(mesh, a),
                                    (long long)redist_mesh_axis_size(mesh, a));
        if (!p)
            Py_CLEAR(axes);
        else
            PyTuple_SET_ITEM(axes, a, p);
    }
    return axes;
}

/* Side's mesh as (name, axes, devices): the global device of each of its
 * ranks (row-major). */
static PyObject *side_mesh(const redist_spec_t *s, int side)
{
    const redist_mesh_t *mesh = redist_spec_side_mesh(s, side);
    int64_t n = redist_mesh_num_devices(mesh);
    PyObject *dev = PyTuple_New(n > 0 ? (Py_ssize_t)n : 0);
    for (int64_t r = 0; dev && r < n; r++) {
        PyObject *x = PyLong_FromLongLong(redist_spec_mesh_device(s, side, r));
        if (!x)
            Py_CLEAR(dev);
        else
            PyTuple_SET_ITEM(dev, (Py_ssize_t)r, x);
    }
    if (!dev)
        return NULL;
    return Py_BuildValue("(sNN)", redist_spec_mesh_name(s, side),
                         mesh_axes(mesh), dev);
}

static PyObject *spec_info(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_spec_t *s = rpy_spec_of(self);
    if (!s)
        return NULL;
    const redist_mesh_t *mesh = redist_spec_mesh(s),
                        *smesh = redist_spec_side_mesh(s, REDIST_SIDE_FROM),
                        *dmesh = redist_spec_side_mesh(s, REDIST_SIDE_TO);
    int nd = redist_spec_ndims(s);
    const int64_t *shape = redist_spec_shape(s);
    int64_t sl[REDIST_MAX_DIMS], dl[REDIST_MAX_DIMS];
    /* uneven dims: local shapes differ per device (None below) */
    int uneven = redist_spec_is_uneven(s);
    if (!uneven && (redist_type_local_shape(redist_spec_from(s), smesh, shape, sl) ||
        redist_type_local_shape(redist_spec_to(s), dmesh, shape, dl))) {
        PyErr_SetString(PyExc_RuntimeError, "redist: a loaded spec's type is invalid");
        return NULL;
    }
    static const char *const keys[] = {
        "name", "mesh", "shape", "dtype", "reduce", "src", "dst",
        "src_bytes", "dst_bytes", "src_local_shape", "dst_local_shape",
        "expect", "src_split", "dst_split", "num_meshes", "src_mesh",
        "dst_mesh", "num_devices"};
    PyObject *vals[] = {
        PyUnicode_FromString(redist_spec_name(s)),
        mesh_axes(mesh),
        shape_tuple(nd, shape),
        PyUnicode_FromString(redist_dtype_name(redist_spec_dtype(s))),
        PyUnicode_FromString(redist_reduce_name(redist_spec_reduce(s))),
        rpy_type_to_py(redist_spec_from(s), smesh),
        rpy_type_to_py(redist_spec_to(s), dmesh),
        PyLong_FromUnsignedLongLong(redist_spec_src_bytes(s)),
        PyLong_FromUnsignedLongLong(redist_spec_dst_bytes(s)),
        uneven ? Py_NewRef(Py_None) : shape_tuple(nd, sl),
        uneven ? Py_NewRef(Py_None) : shape_tuple(nd, dl),
        expect_dict(s),
        PyUnicode_FromString(redist_split_name(redist_spec_split(s, REDIST_SIDE_FROM))),
        PyUnicode_FromString(redist_split_name(redist_spec_split(s, REDIST_SIDE_TO))),
        PyLong_FromLong(redist_spec_num_meshes(s)),
        side_mesh(s, REDIST_SIDE_FROM),
        side_mesh(s, REDIST_SIDE_TO),
        PyLong_FromLongLong(redist_spec_num_devices(s))};
    return dict_of((int)(sizeof keys / sizeof keys[0]), keys, vals);
}

int rpy_block_box(const redist_spec_t *s, int side, int64_t rank,
                  int64_t lo[], int64_t hi[])
{
    const redist_mesh_t *mesh = redist_spec_side_mesh(s, side);
    const redist_type_t *t =
        side == REDIST_SIDE_FROM ? redist_spec_from(s) : redist_spec_to(s);
    if (!mesh || rank < 0 || rank >= redist_spec_num_devices(s))
        return -1;
    /* the device's rank within side's mesh (two meshes: by its list) */
    int64_t n = redist_mesh_num_devices(mesh), mr = -1;
    for (int64_t r = 0; r < n && mr < 0; r++)
        if (redist_spec_mesh_device(s, side, r) == rank)
            mr = r;
    if (mr < 0)
        return 1;
    int64_t c[REDIST_MAX_AXES];
    redist_mesh_coords(mesh, mr, c);
    for (int i = 0; i < t->ndims; i++) {
        int64_t b = 0, k = 1;
        for (int j = 0; j < t->dim_naxes[i]; j++) {
            int a = t->dims[i][j];
            b = b * redist_mesh_axis_size(mesh, a) + c[a];
            k *= redist_mesh_axis_size(mesh, a);
        }
        int64_t *len = malloc(sizeof *len * (size_t)k);
        if (!len || redist_spec_block_lengths(s, side, i, len, k) != k) {
            free(len);
            return -1;
        }
        int64_t start = 0;
        for (int64_t q = 0; q < b; q++)
            start += len[q];
        lo[i] = start;
        hi[i] = start + len[b];
        free(len);
    }
    return 0;
}

/* _block(side, rank) -> ((start, stop), ...) per dim (rpy_block_box) */
static PyObject *spec_block(PyObject *self, PyObject *args)
{
    int side;
    long long rank;
    if (!PyArg_ParseTuple(args, "iL", &side, &rank))
        return NULL;
    const redist_spec_t *s = rpy_spec_of(self);
    if (!s)
        return NULL;
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    if (side != REDIST_SIDE_FROM && side != REDIST_SIDE_TO) {
        PyErr_SetString(PyExc_ValueError, "side: 0 (from) or 1 (to)");
        return NULL;
    }
    int r = rpy_block_box(s, side, (int64_t)rank, lo, hi);
    if (r > 0) /* a device outside side's mesh holds no block */
        Py_RETURN_NONE;
    if (r < 0) {
        PyErr_Format(PyExc_ValueError, "device %lld out of range (the spec "
                     "runs on %lld devices)", rank,
                     (long long)redist_spec_num_devices(s));
        return NULL;
    }
    int nd = redist_spec_ndims(s);
    PyObject *t = PyTuple_New(nd);
    for (int i = 0; t && i < nd; i++) {
        PyObject *p = Py_BuildValue("(LL)", (long long)lo[i], (long long)hi[i]);
        if (!p)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, p);
    }
    return t;
}

static PyMethodDef spec_methods[] = {
    {"_load_file", spec_load_file, METH_VARARGS,
     "_load_file(path, flags=0): redist_spec_load_file into this object."},
    {"_load_buffer", spec_load_buffer, METH_VARARGS,
     "_load_buffer(text, source, flags=0): redist_spec_load_buffer."},
    {"_info", spec_info, METH_NOARGS, "The spec's fields as a dict."},
    {"_block", spec_block, METH_VARARGS,
     "_block(side, rank): device rank's block as ((start, stop), ...)."},
    {NULL, NULL, 0, NULL}};

PyTypeObject rpy_SpecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.Spec",
    .tp_basicsize = sizeof(rpy_obj),
    .tp_dealloc = obj_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_spec_t (base of redist.Spec).",
    .tp_methods = spec_methods,
    .tp_new = PyType_GenericNew,
};

int rpy_mesh_from_py(PyObject *names, PyObject *sizes, redist_mesh_t **out)
{
    if (!PyTuple_Check(names) || !PyTuple_Check(sizes)) {
        PyErr_SetString(PyExc_TypeError, "a mesh: a tuple of names and a "
                        "tuple of sizes");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n != PyTuple_GET_SIZE(sizes) || n > REDIST_MAX_AXES) {
        PyErr_Format(PyExc_ValueError, "a mesh has 1 to %d axes, each a name "
                     "and a size", REDIST_MAX_AXES);
        return -1;
    }
    const char *cn[REDIST_MAX_AXES];
    int64_t cs[REDIST_MAX_AXES];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *nm = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(nm)) {
            PyErr_Format(PyExc_TypeError, "mesh axis %zd: the name must be a "
                         "str, not %s", i, Py_TYPE(nm)->tp_name);
            return -1;
        }
        Py_ssize_t len;
        if (!(cn[i] = PyUnicode_AsUTF8AndSize(nm, &len)))
            return -1;
        if ((size_t)len != strlen(cn[i])) {
            PyErr_Format(PyExc_ValueError, "mesh axis %zd: the name holds a "
                         "NUL character", i);
            return -1;
        }
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, i));
        if (v == -1 && PyErr_Occurred())
            return -1;
        cs[i] = v;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = redist_mesh_create((int)n, cn, cs, out, &err);
    if (st != REDIST_OK) {
        rpy_raise(rpy_SpecError, st, &err);
        return -1;
    }
    return 0;
}

/* mesh_check(names, sizes) -> the device count, or SpecError. */
static PyObject *mesh_check(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *names, *sizes;
    redist_mesh_t *m = NULL;
    if (!PyArg_ParseTuple(args, "OO", &names, &sizes) ||
        rpy_mesh_from_py(names, sizes, &m) < 0)
        return NULL;
    PyObject *r = PyLong_FromLongLong(redist_mesh_num_devices(m));
    redist_mesh_free(m);
    return r;
}

/* ---------------------------------------------------------------- Plan */


int rpy_plan_options(int objective, unsigned long long max_peak,
                     unsigned long long max_states, PyObject *cost_path,
                     const char *cost_text, Py_ssize_t cost_len,
                     const char *links, const char *mesh_link,
                     const redist_mesh_t *mesh, redist_plan_options_t *opts,
                     redist_cost_model_t *cost)
{
    memset(opts, 0, sizeof *opts);
    opts->max_peak_bytes = max_peak;
    opts->max_states = max_states;
    opts->objective = (redist_objective_t)objective;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = REDIST_OK;
    if (objective == REDIST_OBJECTIVE_TIME || cost_path || cost_text || links ||
        mesh_link) {
        redist_cost_model_default(cost);
        if (cost_path)
            st = redist_cost_model_load_file(PyBytes_AS_STRING(cost_path),
                                             cost, &err);
        if (st == REDIST_OK && cost_text)
            st = redist_cost_model_load_buffer(cost_text, (size_t)cost_len,
                                               "<cost>", cost, &err);
        if (st == REDIST_OK && links)
            st = redist_cost_model_set_axis_links(cost, mesh, links, &err);
        if (st == REDIST_OK && mesh_link)
            st = redist_cost_model_set_mesh_link(cost, mesh_link, NULL,
                                                 "mesh_link", &err);
        opts->cost = cost;
    }
    if (st != REDIST_OK) {
        rpy_raise(rpy_SpecError, st, &err);
        return -1;
    }
    return 0;
}

/* PyArg "O&" converter: a path (str, bytes, os.PathLike) or None. */
int rpy_fs_or_none(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(o, out);
}

/* _create(spec, objective, max_peak_bytes, max_states, cost_path,
 *         cost_text, axis_links, cross_sums=1, mesh_link=None):
 *         redist_plan_create.  A cost model is
 * built (from the defaults) when the objective is time or any of the last
 * three is not None, as `redistplan plan` does. */
static PyObject *plan_create(PyObject *self, PyObject *args)
{
    PyObject *spec_obj, *cost_path = NULL;
    int objective;
    unsigned long long max_peak, max_states;
    const char *cost_text = NULL, *links = NULL, *mesh_link = NULL;
    Py_ssize_t cost_len = 0;
    int cross_sums = 1;
    if (!PyArg_ParseTuple(args, "OiKKO&z#z|pz", &spec_obj, &objective,
                          &max_peak, &max_states, rpy_fs_or_none, &cost_path,
                          &cost_text, &cost_len, &links, &cross_sums,
                          &mesh_link))
        return NULL;
    const redist_spec_t *spec = rpy_spec_of(spec_obj);
    if (!spec) {
        Py_XDECREF(cost_path);
        return NULL;
    }
    redist_plan_options_t opts;
    redist_cost_model_t cost;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = REDIST_OK;
    int bad = rpy_plan_options(objective, max_peak, max_states, cost_path,
                               cost_text, cost_len, links, mesh_link,
                               redist_spec_mesh(spec), &opts, &cost);
    Py_XDECREF(cost_path);
    if (bad)
        return NULL;
    opts.no_cross_sums = !cross_sums;
    redist_plan_t *plan = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_plan_create(spec, &opts, &plan, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_PlanError, st, &err);
    if (((rpy_obj *)self)->owner) { /* a set's plan is not replaced */
        redist_plan_free(plan);
        PyErr_SetString(PyExc_ValueError, "a plan of a set is read-only");
        return NULL;
    }
    redist_plan_free(((rpy_obj *)self)->ptr);
    ((rpy_obj *)self)->ptr = plan;
    Py_RETURN_NONE;
}

static Py_ssize_t plan_len(PyObject *self)
{
    const redist_plan_t *p = rpy_plan_of(self);
    return p ? redist_plan_num_steps(p) : -1;
}

static PyObject *none_if_neg(int v)
{
    return v < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(v);
}

/* step(i) -> (op, dim, from_dim, to_dim, axis, (dims, partial),
 *             local_shape, local_bytes, recv_bytes, time_s, mesh): mesh is
 * the side (0 source, 1 target) whose mesh `after` and `axis` are on */
static PyObject *plan_step(PyObject *self, PyObject *arg)
{
    const redist_plan_t *p = rpy_plan_of(self);
    if (!p)
        return NULL;
    long li = PyLong_AsLong(arg);
    if (li == -1 && PyErr_Occurred())
        return NULL;
    int i = li < INT_MIN ? INT_MIN : li > INT_MAX ? INT_MAX : (int)li;
    redist_step_view_t v;
    if (redist_plan_step(p, i, &v) != REDIST_OK) {
        PyErr_Format(PyExc_IndexError, "step %d of a plan of %d steps", i,
                     redist_plan_num_steps(p));
        return NULL;
    }
    const redist_spec_t *s = redist_plan_spec(p);
    const redist_mesh_t *mesh = redist_spec_side_mesh(s, v.mesh);
    return Py_BuildValue("(sNNNNNNKKdi)", redist_op_name(v.op),
                         none_if_neg(v.dim), none_if_neg(v.from_dim),
                         none_if_neg(v.to_dim),
                         v.axis < 0 ? Py_NewRef(Py_None) : axis_name(mesh, v.axis),
                         rpy_type_to_py(&v.after, mesh),
                         shape_tuple(redist_spec_ndims(s), v.local_shape),
                         (unsigned long long)v.local_bytes,
                         (unsigned long long)v.recv_bytes, v.time_s, v.mesh);
}

static PyObject *plan_stats(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_plan_t *p = rpy_plan_of(self);
    if (!p)
        return NULL;
    redist_plan_stats_t t;
    redist_plan_stats(p, &t);
    static const char *const keys[] = {
        "src_bytes", "dst_bytes", "peak_bytes", "recv_bytes", "collectives",
        "steps", "memory_efficient", "time_s", "optimal", "bound_peak_bytes",
        "bound_recv_bytes", "bound_time_s", "states_visited"};
    PyObject *vals[] = {
        PyLong_FromUnsignedLongLong(t.src_bytes),
        PyLong_FromUnsignedLongLong(t.dst_bytes),
        PyLong_FromUnsignedLongLong(t.peak_bytes),
        PyLong_FromUnsignedLongLong(t.recv_bytes),
        PyLong_FromLong(t.collectives),
        PyLong_FromLong(t.steps),
        PyBool_FromLong(t.memory_efficient),
        PyFloat_FromDouble(t.time_s),
        PyBool_FromLong(t.optimal),
        PyLong_FromUnsignedLongLong(t.bound_peak_bytes),
        PyLong_FromUnsignedLongLong(t.bound_recv_bytes),
        PyFloat_FromDouble(t.bound_time_s),
        PyLong_FromUnsignedLongLong(redist_plan_states_visited(p))};
    return dict_of((int)(sizeof keys / sizeof keys[0]), keys, vals);
}

static PyObject *plan_to_json(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_plan_t *p = rpy_plan_of(self);
    if (!p)
        return NULL;
    char *text = redist_plan_to_json(p);
    if (!text)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

/* table(grid) -> str: redist_plan_print into memory. */
static PyObject *plan_table(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"grid", NULL};
    int grid = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &grid))
        return NULL;
    const redist_plan_t *p = rpy_plan_of(self);
    rpy_mem m;
    if (!p || !rpy_mem_open(&m))
        return NULL;
    return rpy_mem_close(&m, redist_plan_print(p, m.f, grid));
}

static PyObject *verify_result(const redist_verify_result_t *r)
{
    static const char *const keys[] = {"valid", "peak_bytes", "recv_bytes",
                                       "collectives", "steps",
                                       "memory_efficient", "failed_step"};
    PyObject *vals[] = {PyBool_FromLong(r->valid),
                        PyLong_FromUnsignedLongLong(r->peak_bytes),
                        PyLong_FromUnsignedLongLong(r->recv_bytes),
                        PyLong_FromLong(r->collectives),
                        PyLong_FromLong(r->steps),
                        PyBool_FromLong(r->memory_efficient),
                        none_if_neg(r->failed_step)};
    return dict_of((int)(sizeof keys / sizeof keys[0]), keys, vals);
}

/* The verifier's outcome: the result dict, or PlanError (SpecError for an
 * unreadable document) carrying it as .result. */
static PyObject *verify_outcome(redist_status_t st,
                                const redist_verify_result_t *r, int filled,
                                const redist_error_t *err)
{
    PyObject *res = filled ? verify_result(r) : Py_NewRef(Py_None);
    if (!res)
        return NULL;
    if (st == REDIST_OK)
        return res;
    rpy_raise(st == REDIST_ERR_PLAN ? rpy_PlanError : rpy_SpecError, st, err);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && PyObject_SetAttrString(value, "result", res) < 0)
        PyErr_Clear();
    Py_DECREF(res);
    PyErr_Restore(type, value, tb);
    return NULL;
}

static PyObject *plan_verify(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_plan_t *p = rpy_plan_of(self);
    if (!p)
        return NULL;
    redist_verify_result_t r;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = redist_plan_verify(p, &r, &err);
    return verify_outcome(st, &r, 1, &err);
}

/* verify_text(spec, text, source) / verify_file(spec, path): a plan
 * document checked against a spec. */
static PyObject *verify_text(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *spec_obj;
    const char *text, *source;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "Os#s", &spec_obj, &text, &len, &source))
        return NULL;
    const redist_spec_t *spec = rpy_spec_of(spec_obj);
    if (!spec)
        return NULL;
    redist_verify_result_t r;
    memset(&r, 0, sizeof r);
    r.failed_step = -1;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st =
        redist_plan_verify_buffer(spec, text, (size_t)len, source, &r, &err);
    return verify_outcome(st, &r, st == REDIST_OK || st == REDIST_ERR_PLAN,
                          &err);
}

static PyObject *verify_file(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *spec_obj, *path;
    if (!PyArg_ParseTuple(args, "OO&", &spec_obj, PyUnicode_FSConverter, &path))
        return NULL;
    const redist_spec_t *spec = rpy_spec_of(spec_obj);
    if (!spec) {
        Py_DECREF(path);
        return NULL;
    }
    redist_verify_result_t r;
    memset(&r, 0, sizeof r);
    r.failed_step = -1;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st =
        redist_plan_verify_file(spec, PyBytes_AS_STRING(path), &r, &err);
    Py_DECREF(path);
    return verify_outcome(st, &r, st == REDIST_OK || st == REDIST_ERR_PLAN,
                          &err);
}

static PyMethodDef plan_methods[] = {
    {"_create", plan_create, METH_VARARGS,
     "_create(spec, objective, max_peak_bytes, max_states, cost_path, "
     "cost_text, axis_links, cross_sums=1, mesh_link=None): redist_plan_create into this object."},
    {"_step", plan_step, METH_O, "_step(i) -> tuple of the step's fields."},
    {"_stats", plan_stats, METH_NOARGS, "redist_plan_stats as a dict."},
    {"to_json", plan_to_json, METH_NOARGS,
     "to_json() -> str: the plan object of doc/spec-format.md section 4, as "
     "`redistplan plan --json` prints it."},
    {"table", (PyCFunction)(void (*)(void))plan_table,
     METH_VARARGS | METH_KEYWORDS,
     "table(grid=True) -> str: the table `redistplan plan` prints "
     "(grid=False: --no-grid)."},
    {"_verify", plan_verify, METH_NOARGS,
     "redist_plan_verify: the result dict, or PlanError."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods plan_as_sequence = {.sq_length = plan_len};

PyTypeObject rpy_PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.Plan",
    .tp_basicsize = sizeof(rpy_obj),
    .tp_dealloc = obj_dealloc,
    .tp_as_sequence = &plan_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_plan_t (base of redist.Plan).",
    .tp_methods = plan_methods,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef functions[] = {
    {"mesh_check", mesh_check, METH_VARARGS,
     "mesh_check(names, sizes) -> device count, or SpecError."},
    {"verify_text", verify_text, METH_VARARGS,
     "verify_text(spec, text, source) -> result dict, or PlanError."},
    {"verify_file", verify_file, METH_VARARGS,
     "verify_file(spec, path) -> result dict, or PlanError."},
    {NULL, NULL, 0, NULL}};

int rpy_spec_plan_init(PyObject *m)
{
    if (PyType_Ready(&rpy_SpecType) < 0 || PyType_Ready(&rpy_PlanType) < 0 ||
        PyModule_AddObjectRef(m, "Spec", (PyObject *)&rpy_SpecType) < 0 ||
        PyModule_AddObjectRef(m, "Plan", (PyObject *)&rpy_PlanType) < 0)
        return -1;
    return PyModule_AddFunctions(m, functions);
}
