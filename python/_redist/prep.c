/*
 * redist._redist.Prepared: one type for every prepared object (MPI one
 * mesh, two meshes and plan sets; OpenSHMEM): the C object, the backend's
 * calls (rpy_prep_ops), the arrays' buffers it binds and the objects it
 * keeps alive (its context, counted there, and a plan set).
 *
 * The buffers stay held until the object is freed, since every run moves
 * data through them.  run() and wait() release the GIL while data moves;
 * start() hands the run to the C object's progress thread, so Python
 * runs meanwhile; test() never blocks.  Backends without start / test /
 * wait raise TypeError for them.  free() and deallocation are collective
 * (every rank drops its object at the same point of an SPMD program).
 */
#include "rpy.h"

#include <stdlib.h>

static void free_prep(rpy_prep *self)
{
    void *p = self->prep;
    self->prep = NULL;
    if (p) {
        Py_BEGIN_ALLOW_THREADS
        self->ops->free(p);
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t i = 0; self->b && i < self->n; i++)
        rpy_release_blocks(&self->b[i]);
    PyMem_Free(self->b);
    PyMem_Free(self->src);
    PyMem_Free(self->dst);
    self->b = NULL;
    self->src = self->dst = NULL;
    self->n = 0;
    if (self->owner_count)
        --*self->owner_count;
    self->owner_count = NULL;
    Py_CLEAR(self->owner);
    Py_CLEAR(self->keep);
}

static void prep_dealloc(PyObject *self)
{
    free_prep((rpy_prep *)self);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject rpy_PrepType;

rpy_prep *rpy_prep_new(const rpy_prep_ops *ops, Py_ssize_t n)
{
    rpy_prep *o = PyObject_New(rpy_prep, &rpy_PrepType);
    if (!o)
        return NULL;
    o->prep = NULL;
    o->ops = ops;
    o->owner = o->keep = NULL;
    o->owner_count = NULL;
    o->n = n;
    o->b = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *o->b);
    o->src = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *o->src);
    o->dst = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *o->dst);
    if (!o->b || !o->src || !o->dst) {
        Py_DECREF(o);
        PyErr_NoMemory();
        return NULL;
    }
    return o;
}

void rpy_prep_bind(rpy_prep *o, void *prep, PyObject *owner, int *count,
                   PyObject *keep)
{
    o->prep = prep;
    o->owner = owner ? Py_NewRef(owner) : NULL;
    o->owner_count = count;
    if (count)
        ++*count;
    o->keep = keep ? Py_NewRef(keep) : NULL;
}

static void *prep_of(rpy_prep *self)
{
    if (self->ops->usable && !self->ops->usable())
        return NULL;
    if (!self->prep)
        PyErr_SetString(PyExc_ValueError, "the prepared object is freed");
    return self->prep;
}

/* run(report=False) and wait(report=False) */
static PyObject *blocking(PyObject *self, PyObject *args, PyObject *kw,
                          int wait)
{
    int want_report;
    if (rpy_report_arg(args, kw, &want_report) < 0)
        return NULL;
    rpy_prep *o = (rpy_prep *)self;
    if (wait && !o->ops->wait) {
        PyErr_Format(PyExc_TypeError, "wait(): no non-blocking runs for %s",
                     o->ops->what);
        return NULL;
    }
    void *p = prep_of(o);
    if (!p)
        return NULL;
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = wait ? o->ops->wait(p, &rep, &err) : o->ops->run(p, &rep, &err);
    Py_END_ALLOW_THREADS
    PyObject *r = rpy_run_outcome(st, &rep, &err, want_report);
    if (r && want_report && o->ops->report_extra &&
        o->ops->report_extra(p, r) < 0)
        Py_CLEAR(r);
    return r;
}

static PyObject *prep_run(PyObject *self, PyObject *args, PyObject *kw)
{
    return blocking(self, args, kw, 0);
}

static PyObject *prep_wait(PyObject *self, PyObject *args, PyObject *kw)
{
    return blocking(self, args, kw, 1);
}

static PyObject *prep_start(PyObject *self, PyObject *unused)
{
    (void)unused;
    rpy_prep *o = (rpy_prep *)self;
    if (!o->ops->start) {
        PyErr_Format(PyExc_TypeError, "start(): no non-blocking runs for %s",
                     o->ops->what);
        return NULL;
    }
    void *p = prep_of(o);
    if (!p)
        return NULL;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = o->ops->start(p, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    Py_RETURN_NONE;
}

static PyObject *prep_test(PyObject *self, PyObject *unused)
{
    (void)unused;
    rpy_prep *o = (rpy_prep *)self;
    if (!o->ops->test) {
        PyErr_Format(PyExc_TypeError, "test(): no non-blocking runs for %s",
                     o->ops->what);
        return NULL;
    }
    void *p = prep_of(o);
    if (!p)
        return NULL;
    int done = 0;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = o->ops->test(p, &done, &err);
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    return PyBool_FromLong(done);
}

static PyObject *prep_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    free_prep((rpy_prep *)self);
    Py_RETURN_NONE;
}

static PyObject *prep_get_async(PyObject *self, void *closure)
{
    (void)closure;
    rpy_prep *o = (rpy_prep *)self;
    void *p = prep_of(o);
    return p ? PyBool_FromLong(o->ops->async ? o->ops->async(p) : 0) : NULL;
}

static PyObject *prep_get_freed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((rpy_prep *)self)->prep == NULL);
}

static PyMethodDef prep_methods[] = {
    {"run", (PyCFunction)(void (*)(void))prep_run, METH_VARARGS | METH_KEYWORDS,
     "run(report=False): one blocking run on the bound arrays (collective)."},
    {"start", prep_start, METH_NOARGS,
     "start(): start a run and return at once (collective); data moves "
     "while Python runs (one-mesh plans)."},
    {"test", prep_test, METH_NOARGS,
     "test() -> bool: whether the started run is over (local)."},
    {"wait", (PyCFunction)(void (*)(void))prep_wait,
     METH_VARARGS | METH_KEYWORDS,
     "wait(report=False): wait for the started run."},
    {"free", prep_free, METH_NOARGS,
     "free(): free the C object (collective) and release the arrays; "
     "later calls raise ValueError."},
    {"__enter__", rpy_self, METH_NOARGS, NULL},
    {"__exit__", rpy_exit_free, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef prep_getset[] = {
    {"can_start", prep_get_async, NULL,
     "Whether start() is available (a thread-multiple runtime on every "
     "rank; False where the backend has no non-blocking runs).", NULL},
    {"freed", prep_get_freed, NULL, "Whether free() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_PrepType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.Prepared",
    .tp_basicsize = sizeof(rpy_prep),
    .tp_dealloc = prep_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plan or plan set prepared on this rank's arrays: run, or "
              "start / test / wait; free (collective).",
    .tp_methods = prep_methods,
    .tp_getset = prep_getset,
};

int rpy_prep_init(PyObject *m)
{
    if (PyType_Ready(&rpy_PrepType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Prepared", (PyObject *)&rpy_PrepType);
}
