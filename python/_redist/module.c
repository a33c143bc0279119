/*
 * redist._redist: the module, its exceptions and constants (rpy.h).
 */
#include "rpy.h"

PyObject *rpy_Error, *rpy_SpecError, *rpy_PlanError, *rpy_ExecError;

static int set_str_or_none(PyObject *e, const char *name, const char *s)
{
    PyObject *v = s && s[0] ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s),
                                                    "backslashreplace")
                            : Py_NewRef(Py_None);
    if (!v)
        return -1;
    int r = PyObject_SetAttrString(e, name, v);
    Py_DECREF(v);
    return r;
}

static int set_int_or_none(PyObject *e, const char *name, long v, int none)
{
    PyObject *o = none ? Py_NewRef(Py_None) : PyLong_FromLong(v);
    if (!o)
        return -1;
    int r = PyObject_SetAttrString(e, name, o);
    Py_DECREF(o);
    return r;
}

PyObject *rpy_raise(PyObject *cls, redist_status_t st,
                    const redist_error_t *err)
{
    redist_error_t none;
    if (!err || err->status == REDIST_OK) {
        redist_error_clear(&none);
        none.status = st;
        snprintf(none.text, sizeof none.text, "%s", redist_status_string(st));
        err = &none;
    }
    char line[1024];
    redist_error_format(err, line, sizeof line);
    PyObject *e = PyObject_CallFunction(cls, "s", line);
    if (!e)
        return NULL;
    if (set_int_or_none(e, "status", (long)st, 0) < 0 ||
        set_str_or_none(e, "status_name", redist_status_string(st)) < 0 ||
        set_str_or_none(e, "message", err->text) < 0 ||
        set_str_or_none(e, "file", err->source) < 0 ||
        set_str_or_none(e, "path", err->path) < 0 ||
        set_int_or_none(e, "line", err->line, err->line == 0) < 0 ||
        set_int_or_none(e, "column", err->column, err->column == 0) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    PyErr_SetObject(cls, e);
    Py_DECREF(e);
    return NULL;
}

static PyObject *status_string(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(redist_status_string((redist_status_t)v));
}

static PyMethodDef module_methods[] = {
    {"status_string", status_string, METH_O,
     "status_string(status) -> str: redist_status_string."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "redist._redist",
    "The C layer of the redist package (see redist's docstring).", -1,
    module_methods, NULL, NULL, NULL, NULL};

static PyObject *new_error(PyObject *m, const char *name, PyObject *base,
                           const char *doc)
{
    char full[64];
    snprintf(full, sizeof full, "redist.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!e || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    return e;
}

/* Add `o` (a new reference, NULL on failure) as m.name. */
static int add_owned(PyObject *m, const char *name, PyObject *o)
{
    if (!o)
        return -1;
    int r = PyModule_AddObjectRef(m, name, o);
    Py_DECREF(o);
    return r;
}

static const char *dtype_name(int i) { return redist_dtype_name((redist_dtype_t)i); }
static const char *op_name(int i) { return redist_op_name((redist_op_t)i); }
static const char *reduce_name(int i) { return redist_reduce_name((redist_reduce_t)i); }
static const char *link_name(int i) { return redist_link_name((redist_link_t)i); }

/* A tuple of name(0..n-1). */
static PyObject *names(int n, const char *(*name)(int))
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromString(name(i));
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static int add_constants(PyObject *m)
{
    static const struct {
        const char *name;
        long value;
    } k[] = {
        {"OK", REDIST_OK},
        {"ERR_INVALID", REDIST_ERR_INVALID},
        {"ERR_NOMEM", REDIST_ERR_NOMEM},
        {"ERR_OVERFLOW", REDIST_ERR_OVERFLOW},
        {"ERR_INFEASIBLE", REDIST_ERR_INFEASIBLE},
        {"ERR_IO", REDIST_ERR_IO},
        {"ERR_PARSE", REDIST_ERR_PARSE},
        {"ERR_LIMIT", REDIST_ERR_LIMIT},
        {"ERR_PLAN", REDIST_ERR_PLAN},
        {"ERR_BACKEND", REDIST_ERR_BACKEND},
        {"ERR_MISMATCH", REDIST_ERR_MISMATCH},
        {"SPEC_ALLOW_UNPLANNABLE", REDIST_SPEC_ALLOW_UNPLANNABLE},
        {"MAX_AXES", REDIST_MAX_AXES},
        {"MAX_DIMS", REDIST_MAX_DIMS},
        {"OBJECTIVE_TIME", REDIST_OBJECTIVE_TIME},
        {"OBJECTIVE_BYTES", REDIST_OBJECTIVE_BYTES},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (PyModule_AddIntConstant(m, k[i].name, k[i].value) < 0)
            return -1;
    if (PyModule_AddStringConstant(m, "LIB_VERSION", REDIST_VERSION_STRING) < 0)
        return -1;
    /* The enums' names in enum order, and the dtype sizes by name. */
    PyObject *sizes = PyDict_New();
    if (add_owned(m, "DTYPES", names(REDIST_DTYPE_COUNT, dtype_name)) < 0 ||
        add_owned(m, "OPS", names(REDIST_OP_COUNT, op_name)) < 0 ||
        add_owned(m, "REDUCE_OPS", names(REDIST_REDUCE_COUNT, reduce_name)) < 0 ||
        add_owned(m, "LINKS", names(REDIST_LINK_COUNT, link_name)) < 0 ||
        !sizes) {
        Py_XDECREF(sizes);
        return -1;
    }
    for (int i = 0; i < REDIST_DTYPE_COUNT; i++) {
        PyObject *v = PyLong_FromSize_t(redist_dtype_size((redist_dtype_t)i));
        if (!v || PyDict_SetItemString(sizes, dtype_name(i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(sizes);
            return -1;
        }
        Py_DECREF(v);
    }
    if (add_owned(m, "DTYPE_SIZES", sizes) < 0)
        return -1;
    if (PyModule_AddIntConstant(m, "HAVE_SHMEM",
#ifdef REDIST_PY_HAVE_SHMEM
                                1
#else
                                0
#endif
                                ) < 0)
        return -1;
#ifdef REDIST_PY_HAVE_MPI
    return PyModule_AddIntConstant(m, "HAVE_MPI", 1);
#else
    return PyModule_AddIntConstant(m, "HAVE_MPI", 0);
#endif
}

PyMODINIT_FUNC PyInit__redist(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (!(rpy_Error = new_error(m, "Error", PyExc_Exception,
                                "A redist call failed: .status (a negative "
                                "redist_status_t), .status_name, .message, "
                                "and where known .file, .path (JSON path), "
                                ".line and .column.")) ||
        !(rpy_SpecError = new_error(m, "SpecError", rpy_Error,
                                    "A spec (or mesh, type, cost file) is "
                                    "invalid or could not be read.")) ||
        !(rpy_PlanError = new_error(m, "PlanError", rpy_Error,
                                    "Planning failed (infeasible, limit) or "
                                    "the verifier rejected a plan.")) ||
        !(rpy_ExecError = new_error(m, "ExecError", rpy_Error,
                                    "Executing a plan failed (on every "
                                    "rank).")) ||
        add_constants(m) < 0 || rpy_spec_plan_init(m) < 0 ||
        rpy_set_plan_init(m) < 0 || rpy_prep_init(m) < 0
#ifdef REDIST_PY_HAVE_MPI
        || rpy_mpi_init(m) < 0
#endif
#ifdef REDIST_PY_HAVE_SHMEM
        || rpy_shmem_init(m) < 0
#endif
    ) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
