/*
 * redist._redist: Arrays (a redist_arrays_t: many arrays in one spec,
 * doc/spec-format.md section 10) and PlanSet (a redist_plan_set_t: their
 * plans and rounds, include/redist/exec.h).  As for Spec, arrays come from
 * the C loaders only (a file, or the JSON text python/redist/_sets.py
 * writes).  An array's spec and plan are handed to Python as Spec and Plan
 * objects that borrow the set's pointer and hold a reference to the set
 * (rpy_obj.owner), so they stay valid while used.
 */
#include "rpy.h"

#include <stdio.h>
#include <stdlib.h>

static const redist_arrays_t *arrays_of(PyObject *o)
{
    return rpy_unwrap(o, &rpy_ArraysType, "redist.Arrays");
}

const redist_plan_set_t *rpy_plan_set_of(PyObject *o)
{
    return rpy_unwrap(o, &rpy_PlanSetType, "redist.PlanSet");
}

static void set_dealloc(PyObject *self)
{
    if (PyObject_TypeCheck(self, &rpy_ArraysType))
        redist_arrays_free(((rpy_obj *)self)->ptr);
    else
        redist_plan_set_free(((rpy_obj *)self)->ptr);
    Py_TYPE(self)->tp_free(self);
}

/* Lend `ptr` (owned by `owner`) to `into`, a fresh Spec or Plan object of
 * `type`. */
static PyObject *lend(PyObject *owner, const void *ptr, PyObject *into,
                      PyTypeObject *type, const char *what)
{
    if (!ptr) {
        PyErr_Format(PyExc_IndexError, "%s index out of range", what);
        return NULL;
    }
    if (!PyObject_TypeCheck(into, type) || ((rpy_obj *)into)->ptr) {
        PyErr_Format(PyExc_TypeError, "a fresh %s object is needed", what);
        return NULL;
    }
    ((rpy_obj *)into)->ptr = (void *)ptr;
    ((rpy_obj *)into)->owner = Py_NewRef(owner);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------- Arrays */

static int arrays_take(rpy_obj *self, redist_status_t st, redist_arrays_t *a,
                       const redist_error_t *err)
{
    if (st != REDIST_OK) {
        rpy_raise(rpy_SpecError, st, err);
        return -1;
    }
    redist_arrays_free(self->ptr);
    self->ptr = a;
    return 0;
}

static PyObject *arrays_load_file(PyObject *self, PyObject *args)
{
    PyObject *path = NULL;
    unsigned flags = 0;
    if (!PyArg_ParseTuple(args, "O&|I", PyUnicode_FSConverter, &path, &flags))
        return NULL;
    redist_arrays_t *a = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_arrays_load_file(PyBytes_AS_STRING(path), flags, &a, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (arrays_take((rpy_obj *)self, st, a, &err) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *arrays_load_buffer(PyObject *self, PyObject *args)
{
    const char *text, *source;
    Py_ssize_t len;
    unsigned flags = 0;
    if (!PyArg_ParseTuple(args, "s#s|I", &text, &len, &source, &flags))
        return NULL;
    redist_arrays_t *a = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_arrays_load_buffer(text, (size_t)len, source, flags, &a, &err);
    Py_END_ALLOW_THREADS
    if (arrays_take((rpy_obj *)self, st, a, &err) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* _info() -> (name, count, is_set, budget or None) */
static PyObject *arrays_info(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_arrays_t *a = arrays_of(self);
    if (!a)
        return NULL;
    uint64_t b = redist_arrays_budget(a);
    return Py_BuildValue("(siNN)", redist_arrays_name(a), redist_arrays_count(a),
                         PyBool_FromLong(redist_arrays_is_set(a)),
                         b == REDIST_NO_BUDGET
                             ? Py_NewRef(Py_None)
                             : PyLong_FromUnsignedLongLong(b));
}

/* _spec(i, into): array i's spec lent to `into`, a fresh redist.Spec. */
static PyObject *arrays_spec(PyObject *self, PyObject *args)
{
    int i;
    PyObject *into;
    if (!PyArg_ParseTuple(args, "iO", &i, &into))
        return NULL;
    const redist_arrays_t *a = arrays_of(self);
    if (!a)
        return NULL;
    return lend(self, redist_arrays_get(a, i), into, &rpy_SpecType,
                "redist.Spec");
}

static PyMethodDef arrays_methods[] = {
    {"_load_file", arrays_load_file, METH_VARARGS,
     "_load_file(path, flags=0): redist_arrays_load_file into this object."},
    {"_load_buffer", arrays_load_buffer, METH_VARARGS,
     "_load_buffer(text, source, flags=0): redist_arrays_load_buffer."},
    {"_info", arrays_info, METH_NOARGS,
     "(name, count, is_set, budget_bytes or None)."},
    {"_spec", arrays_spec, METH_VARARGS,
     "_spec(i, into): array i's spec, lent to a fresh Spec object."},
    {NULL, NULL, 0, NULL}};

PyTypeObject rpy_ArraysType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.Arrays",
    .tp_basicsize = sizeof(rpy_obj),
    .tp_dealloc = set_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_arrays_t (base of redist.Arrays).",
    .tp_methods = arrays_methods,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------ PlanSet */

/* _create(arrays, objective, max_peak_bytes, max_states, cost_path,
 *         cost_text, axis_links, preserve_src, endpoint=None):
 * redist_plan_set_create for backends without placement constraints
 * (sim, MPI), or for `endpoint`'s kind: a capsule "redist.backend" of a
 * redist_backend_t (an OpenSHMEM context's, which needs it), the scratch
 * figured under REDIST_EXEC_PRESERVE_SRC when preserve_src, as
 * `redistplan plan [--preserve-src]` does. */
static PyObject *set_create(PyObject *self, PyObject *args)
{
    PyObject *arrays_obj, *cost_path = NULL, *endpoint = Py_None;
    int objective, preserve;
    unsigned long long max_peak, max_states;
    const char *cost_text = NULL, *links = NULL, *mesh_link = NULL;
    Py_ssize_t cost_len = 0;
    if (!PyArg_ParseTuple(args, "OiKKO&z#zp|Oz", &arrays_obj, &objective,
                          &max_peak, &max_states, rpy_fs_or_none, &cost_path,
                          &cost_text, &cost_len, &links, &preserve, &endpoint,
                          &mesh_link))
        return NULL;
    const redist_backend_t *be = NULL;
    if (endpoint != Py_None &&
        !(be = PyCapsule_GetPointer(endpoint, "redist.backend"))) {
        Py_XDECREF(cost_path);
        return NULL;
    }
    const redist_arrays_t *a = arrays_of(arrays_obj);
    if (!a) {
        Py_XDECREF(cost_path);
        return NULL;
    }
    redist_plan_options_t opts;
    redist_cost_model_t cost;
    int bad = rpy_plan_options(objective, max_peak, max_states, cost_path,
                               cost_text, cost_len, links, mesh_link,
                               redist_spec_mesh(redist_arrays_get(a, 0)),
                               &opts, &cost);
    Py_XDECREF(cost_path);
    if (bad)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_plan_set_t *set = NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_plan_set_create(a, &opts, be, &eo, &set, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(st == REDIST_ERR_INVALID || st == REDIST_ERR_PARSE
                             ? rpy_SpecError
                             : rpy_PlanError,
                         st, &err);
    redist_plan_set_free(((rpy_obj *)self)->ptr);
    ((rpy_obj *)self)->ptr = set;
    Py_RETURN_NONE;
}

static Py_ssize_t set_len(PyObject *self)
{
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    return s ? redist_plan_set_num_arrays(s) : -1;
}

/* _plan(i, plan, spec): array i's plan and its spec lent to `plan` and
 * `spec`, a fresh redist.Plan and redist.Spec. */
static PyObject *set_plan(PyObject *self, PyObject *args)
{
    int i;
    PyObject *plan, *spec;
    if (!PyArg_ParseTuple(args, "iOO", &i, &plan, &spec))
        return NULL;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    if (!s)
        return NULL;
    const redist_plan_t *p = redist_plan_set_plan(s, i);
    if (!p) {
        PyErr_SetString(PyExc_IndexError, "array index out of range");
        return NULL;
    }
    if (!PyObject_TypeCheck(spec, &rpy_SpecType) || ((rpy_obj *)spec)->ptr) {
        PyErr_SetString(PyExc_TypeError, "a fresh redist.Spec object is needed");
        return NULL;
    }
    PyObject *r = lend(self, p, plan, &rpy_PlanType, "redist.Plan");
    if (!r)
        return NULL;
    Py_DECREF(r);
    return lend(self, redist_plan_spec(p), spec, &rpy_SpecType, "redist.Spec");
}

/* _array(i) -> (round, scratch_bytes) */
static PyObject *set_array(PyObject *self, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    if (!s)
        return NULL;
    if (i < 0 || i >= redist_plan_set_num_arrays(s)) {
        PyErr_SetString(PyExc_IndexError, "array index out of range");
        return NULL;
    }
    return Py_BuildValue("(iK)", redist_plan_set_round_of(s, (int)i),
                         (unsigned long long)redist_plan_set_array_scratch(s, (int)i));
}

/* _round(r) -> dict of redist_round_stats_t */
static PyObject *set_round(PyObject *self, PyObject *arg)
{
    long r = PyLong_AsLong(arg);
    if (r == -1 && PyErr_Occurred())
        return NULL;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    if (!s)
        return NULL;
    redist_round_stats_t t;
    if (r < 0 || r >= redist_plan_set_num_rounds(s) ||
        redist_plan_set_round(s, (int)r, &t) != REDIST_OK) {
        PyErr_SetString(PyExc_IndexError, "round index out of range");
        return NULL;
    }
    return Py_BuildValue("{sisKsKsKsdsisi}", "narrays", t.narrays,
                         "scratch_bytes", (unsigned long long)t.scratch_bytes,
                         "recv_bytes", (unsigned long long)t.recv_bytes,
                         "peak_bytes", (unsigned long long)t.peak_bytes,
                         "time_s", t.time_s, "collectives", t.collectives,
                         "exchanges", t.exchanges);
}

static PyObject *set_stats(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    if (!s)
        return NULL;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(s, &t);
    return Py_BuildValue(
        "{sisisNsKsKsKsdsisisN}", "narrays", t.narrays, "nrounds", t.nrounds,
        "budget_bytes",
        t.budget_bytes == REDIST_NO_BUDGET
            ? Py_NewRef(Py_None)
            : PyLong_FromUnsignedLongLong(t.budget_bytes),
        "scratch_bytes", (unsigned long long)t.scratch_bytes, "peak_bytes",
        (unsigned long long)t.peak_bytes, "recv_bytes",
        (unsigned long long)t.recv_bytes, "time_s", t.time_s, "collectives",
        t.collectives, "exchanges", t.exchanges, "memory_efficient",
        PyBool_FromLong(t.memory_efficient));
}

static PyObject *set_to_json(PyObject *self, PyObject *unused)
{
    (void)unused;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    if (!s)
        return NULL;
    char *text = redist_plan_set_to_json(s);
    if (!text)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

/* table(plans=False) -> str: redist_plan_set_print into memory. */
static PyObject *set_table(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"plans", NULL};
    int plans = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &plans))
        return NULL;
    const redist_plan_set_t *s = rpy_plan_set_of(self);
    rpy_mem m;
    if (!s || !rpy_mem_open(&m))
        return NULL;
    return rpy_mem_close(&m, redist_plan_set_print(s, m.f, plans));
}

static PyMethodDef set_methods[] = {
    {"_create", set_create, METH_VARARGS,
     "_create(arrays, objective, max_peak_bytes, max_states, cost_path, "
     "cost_text, axis_links, preserve_src, endpoint=None): "
     "redist_plan_set_create."},
    {"_plan", set_plan, METH_VARARGS,
     "_plan(i, plan, spec): array i's plan and spec, lent to fresh Plan "
     "and Spec objects."},
    {"_array", set_array, METH_O, "_array(i) -> (round, scratch_bytes)."},
    {"_round", set_round, METH_O, "_round(r) -> redist_round_stats_t dict."},
    {"_stats", set_stats, METH_NOARGS, "redist_plan_set_stats as a dict."},
    {"to_json", set_to_json, METH_NOARGS,
     "to_json() -> str: the set as `redistplan plan --json` prints it."},
    {"table", (PyCFunction)(void (*)(void))set_table,
     METH_VARARGS | METH_KEYWORDS,
     "table(plans=False) -> str: the table `redistplan plan` prints "
     "(plans=True: --plans)."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods set_as_sequence = {.sq_length = set_len};

PyTypeObject rpy_PlanSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.PlanSet",
    .tp_basicsize = sizeof(rpy_obj),
    .tp_dealloc = set_dealloc,
    .tp_as_sequence = &set_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_plan_set_t (base of redist.PlanSet).",
    .tp_methods = set_methods,
    .tp_new = PyType_GenericNew,
};

int rpy_set_plan_init(PyObject *m)
{
    if (PyType_Ready(&rpy_ArraysType) < 0 || PyType_Ready(&rpy_PlanSetType) < 0 ||
        PyModule_AddObjectRef(m, "Arrays", (PyObject *)&rpy_ArraysType) < 0 ||
        PyModule_AddObjectRef(m, "PlanSet", (PyObject *)&rpy_PlanSetType) < 0)
        return -1;
    return 0;
}
