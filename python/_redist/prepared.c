/*
 * redist._redist.Prepared: a redist_mpi_prepared_t (include/redist/mpi.h,
 * PREPARED OBJECTS) over this rank's arrays, made by
 * MPIContext.prepare(plan, src, dst, preserve_src=True).
 *
 * The arrays are checked as for execute and their buffers stay held (the
 * buffer protocol's export lock: NumPy refuses to resize them) until the
 * object is freed, since every run moves data through them.  A rank whose
 * arrays fail the checks still enters redist_mpi_prepare, with no plan,
 * so that every rank fails together.  The object keeps a reference to its
 * context and counts itself there: the context cannot be freed first.
 *
 * run() and wait() release the GIL while data moves; start() hands the
 * run to the C object's progress thread (MPI_THREAD_MULTIPLE, mpi4py's
 * default), so Python code runs while data moves; test() never blocks.
 * free() and the object's deallocation are collective, as for the
 * context: every rank drops its object at the same point of an SPMD
 * program (a run in flight is waited for first).
 */
#include "rpy_mpi.h"

typedef struct rpy_prepared {
    PyObject_HEAD
    redist_mpi_prepared_t *prep;
    rpy_mpi *owner; /* a strong reference while prep lives */
    rpy_blocks b;
} rpy_prepared;

static PyTypeObject rpy_PreparedType;

static void free_prepared(rpy_prepared *self)
{
    redist_mpi_prepared_t *p = self->prep;
    self->prep = NULL;
    if (p) {
        Py_BEGIN_ALLOW_THREADS
        redist_mpi_prepared_free(p);
        Py_END_ALLOW_THREADS
    }
    rpy_release_blocks(&self->b);
    if (self->owner) {
        self->owner->nprep--;
        Py_CLEAR(self->owner);
    }
}

static void prepared_dealloc(PyObject *self)
{
    free_prepared((rpy_prepared *)self);
    Py_TYPE(self)->tp_free(self);
}

static redist_mpi_prepared_t *prep_of(rpy_prepared *self)
{
    if (!self->prep)
        PyErr_SetString(PyExc_ValueError, "the prepared object is freed");
    return self->prep;
}

PyObject *rpy_ctx_prepare(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"plan", "src", "dst", "preserve_src", NULL};
    PyObject *plan_obj, *src, *dst;
    int preserve = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|p", kwlist, &plan_obj,
                                     &src, &dst, &preserve))
        return NULL;
    rpy_mpi *owner = (rpy_mpi *)self;
    redist_mpi_t *ctx = rpy_ctx_of(owner);
    if (!ctx)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    rpy_prepared *obj = PyObject_New(rpy_prepared, &rpy_PreparedType);
    if (obj) {
        obj->prep = NULL;
        obj->owner = NULL;
        memset(&obj->b, 0, sizeof obj->b);
    }
    /* local checks; on failure this rank still takes part, with no plan */
    const redist_plan_t *plan = obj ? rpy_plan_of(plan_obj) : NULL;
    if (!plan || rpy_get_blocks(ctx, plan, src, dst, preserve, &obj->b) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        redist_mpi_prepared_t *none = NULL;
        Py_BEGIN_ALLOW_THREADS
        redist_mpi_prepare(ctx, NULL, NULL, NULL, &eo, &none, NULL);
        Py_END_ALLOW_THREADS
        Py_XDECREF(obj);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    redist_mpi_prepared_t *p = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_prepare(ctx, plan, obj->b.src, obj->b.dst, &eo, &p, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj); /* releases the arrays */
        return rpy_raise(rpy_ExecError, st, &err);
    }
    obj->prep = p;
    obj->owner = owner;
    Py_INCREF(owner);
    owner->nprep++;
    return (PyObject *)obj;
}

/* run(report=False) and wait(report=False): redist_mpi_run or
 * redist_mpi_wait, the GIL released. */
static PyObject *blocking(PyObject *self, PyObject *args, PyObject *kw,
                          int wait)
{
    static char *kwlist[] = {"report", NULL};
    int want_report = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &want_report))
        return NULL;
    redist_mpi_prepared_t *p = prep_of((rpy_prepared *)self);
    if (!p)
        return NULL;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = wait ? redist_mpi_wait(p, &rep, &err) : redist_mpi_run(p, &rep, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    if (want_report)
        return rpy_report_dict(&rep);
    Py_RETURN_NONE;
}

static PyObject *prepared_run(PyObject *self, PyObject *args, PyObject *kw)
{
    return blocking(self, args, kw, 0);
}

static PyObject *prepared_wait(PyObject *self, PyObject *args, PyObject *kw)
{
    return blocking(self, args, kw, 1);
}

/* start(): redist_mpi_start */
static PyObject *prepared_start(PyObject *self, PyObject *unused)
{
    (void)unused;
    redist_mpi_prepared_t *p = prep_of((rpy_prepared *)self);
    if (!p)
        return NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_start(p, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    Py_RETURN_NONE;
}

/* test() -> bool: redist_mpi_test */
static PyObject *prepared_test(PyObject *self, PyObject *unused)
{
    (void)unused;
    redist_mpi_prepared_t *p = prep_of((rpy_prepared *)self);
    if (!p)
        return NULL;
    int done = 0;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = redist_mpi_test(p, &done, &err);
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    return PyBool_FromLong(done);
}

static PyObject *prepared_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    free_prepared((rpy_prepared *)self);
    Py_RETURN_NONE;
}

static PyObject *prepared_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *prepared_exit(PyObject *self, PyObject *args)
{
    (void)args;
    free_prepared((rpy_prepared *)self);
    Py_RETURN_FALSE;
}

static PyObject *prepared_get_async(PyObject *self, void *closure)
{
    (void)closure;
    redist_mpi_prepared_t *p = prep_of((rpy_prepared *)self);
    return p ? PyBool_FromLong(redist_mpi_prepared_async(p)) : NULL;
}

static PyObject *prepared_get_freed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((rpy_prepared *)self)->prep == NULL);
}

static PyMethodDef prepared_methods[] = {
    {"run", (PyCFunction)(void (*)(void))prepared_run,
     METH_VARARGS | METH_KEYWORDS,
     "run(report=False): one blocking run on the bound arrays (collective; "
     "redist_mpi_run)."},
    {"start", prepared_start, METH_NOARGS,
     "start(): start a run and return at once (collective; "
     "redist_mpi_start); data moves while Python runs."},
    {"test", prepared_test, METH_NOARGS,
     "test() -> bool: whether the started run is over (local)."},
    {"wait", (PyCFunction)(void (*)(void))prepared_wait,
     METH_VARARGS | METH_KEYWORDS,
     "wait(report=False): wait for the started run (redist_mpi_wait)."},
    {"free", prepared_free, METH_NOARGS,
     "free(): redist_mpi_prepared_free (collective) and release the "
     "arrays; later calls raise ValueError."},
    {"__enter__", prepared_enter, METH_NOARGS, NULL},
    {"__exit__", prepared_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef prepared_getset[] = {
    {"can_start", prepared_get_async, NULL,
     "Whether start() is available (MPI_THREAD_MULTIPLE on every rank).",
     NULL},
    {"freed", prepared_get_freed, NULL, "Whether free() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_PreparedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.Prepared",
    .tp_basicsize = sizeof(rpy_prepared),
    .tp_dealloc = prepared_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plan prepared on this rank's arrays (MPIContext.prepare): "
              "run, or start / test / wait; free (collective).",
    .tp_methods = prepared_methods,
    .tp_getset = prepared_getset,
};

int rpy_prepared_init(PyObject *m)
{
    if (PyType_Ready(&rpy_PreparedType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Prepared", (PyObject *)&rpy_PreparedType);
}
