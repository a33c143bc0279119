/*
 * redist._redist.SetPrepared: a plan set (set_plan.c) prepared on this
 * rank's arrays over an MPIContext (redist_plan_set_prepare on
 * redist_mpi_backend; include/redist/exec.h), made by
 * prepare_set(ctx, set, srcs, dsts, preserve_src): srcs[i] and dsts[i]
 * are this rank's blocks of array i (None for an empty block: a rank
 * outside a two-mesh array's mesh, or an empty uneven block), checked as
 * MPIContext.execute checks one array (mpi.c).  A rank whose arrays fail
 * still enters redist_plan_set_prepare, with no set, so that every rank
 * fails together.  The object holds the context (counted as one of its
 * prepared objects), the set and the arrays' buffers until freed; free()
 * and deallocation are collective.
 */
#include "rpy_mpi.h"

#include <stdio.h>

typedef struct rpy_setprep {
    PyObject_HEAD
    redist_set_prepared_t *prep;
    rpy_mpi *owner;   /* the context, a strong reference while prep lives */
    PyObject *set;    /* the PlanSet, likewise */
    Py_ssize_t n;
    rpy_blocks *b;    /* n blocks */
    void **src, **dst;
} rpy_setprep;

static PyTypeObject rpy_SetPreparedType;

static void free_setprep(rpy_setprep *self)
{
    redist_set_prepared_t *p = self->prep;
    self->prep = NULL;
    if (p) {
        Py_BEGIN_ALLOW_THREADS
        redist_set_prepared_free(p);
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
    if (self->owner) {
        self->owner->nprep--;
        Py_CLEAR(self->owner);
    }
    Py_CLEAR(self->set);
}

static void setprep_dealloc(PyObject *self)
{
    free_setprep((rpy_setprep *)self);
    Py_TYPE(self)->tp_free(self);
}

/* This rank's blocks of every array: 0, or -1 with ValueError naming the
 * array. */
static int set_blocks(rpy_setprep *o, const redist_plan_set_t *set,
                      int64_t rank, PyObject *srcs, PyObject *dsts,
                      int preserve)
{
    Py_ssize_t n = redist_plan_set_num_arrays(set);
    if (!PyList_Check(srcs) || !PyList_Check(dsts) ||
        PyList_GET_SIZE(srcs) != n || PyList_GET_SIZE(dsts) != n) {
        PyErr_Format(PyExc_ValueError, "srcs and dsts: lists of %zd arrays "
                     "(one per array of the set)", n);
        return -1;
    }
    o->b = PyMem_Calloc((size_t)n, sizeof *o->b);
    o->src = PyMem_Calloc((size_t)n, sizeof *o->src);
    o->dst = PyMem_Calloc((size_t)n, sizeof *o->dst);
    if (!o->b || !o->src || !o->dst) {
        PyErr_NoMemory();
        return -1;
    }
    o->n = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        const redist_spec_t *s = redist_plan_spec(redist_plan_set_plan(set, (int)i));
        if (rpy_get_blocks_at(rank, s, PyList_GET_ITEM(srcs, i),
                              PyList_GET_ITEM(dsts, i), preserve, &o->b[i]) < 0) {
            /* name the array: "array 'w': src: ..." */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyObject *msg = value ? PyObject_Str(value) : NULL;
            PyErr_Format(type ? type : PyExc_ValueError, "array '%s': %s",
                         redist_spec_name(s), msg ? PyUnicode_AsUTF8(msg) : "?");
            Py_XDECREF(msg);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return -1;
        }
        o->src[i] = o->b[i].src;
        o->dst[i] = o->b[i].dst;
    }
    return 0;
}

/* prepare_set(ctx, set, srcs, dsts, preserve_src) -> SetPrepared */
static PyObject *prepare_set(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx_obj, *set_obj, *srcs, *dsts;
    int preserve = 1;
    if (!PyArg_ParseTuple(args, "OOOOp", &ctx_obj, &set_obj, &srcs, &dsts,
                          &preserve))
        return NULL;
    if (!PyObject_TypeCheck(ctx_obj, rpy_MPIContextType)) {
        PyErr_SetString(PyExc_TypeError, "prepare_set: an MPIContext");
        return NULL;
    }
    rpy_mpi *owner = (rpy_mpi *)ctx_obj;
    redist_mpi_t *ctx = rpy_ctx_of(owner);
    if (!ctx)
        return NULL;
    redist_backend_t *be = redist_mpi_backend(ctx);
    rpy_setprep *obj = PyObject_New(rpy_setprep, &rpy_SetPreparedType);
    if (obj) {
        obj->prep = NULL;
        obj->owner = NULL;
        obj->set = NULL;
        obj->n = 0;
        obj->b = NULL;
        obj->src = obj->dst = NULL;
    }
    const redist_plan_set_t *set = obj ? rpy_plan_set_of(set_obj) : NULL;
    if (!set || set_blocks(obj, set, redist_mpi_rank(ctx), srcs, dsts,
                           preserve) < 0) {
        /* this rank still takes part, with no set */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        redist_set_prepared_t *none = NULL;
        Py_BEGIN_ALLOW_THREADS
        redist_plan_set_prepare(NULL, be, NULL, NULL, &none, NULL);
        Py_END_ALLOW_THREADS
        Py_XDECREF(obj);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    redist_set_prepared_t *p = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_plan_set_prepare(set, be, obj->src, obj->dst, &p, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj);
        return rpy_raise(rpy_ExecError, st, &err);
    }
    obj->prep = p;
    obj->owner = (rpy_mpi *)Py_NewRef(owner);
    owner->nprep++;
    obj->set = Py_NewRef(set_obj);
    return (PyObject *)obj;
}

static PyObject *setprep_run(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"report", NULL};
    int want_report = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &want_report))
        return NULL;
    redist_set_prepared_t *p = ((rpy_setprep *)self)->prep;
    if (!p) {
        PyErr_SetString(PyExc_ValueError, "the prepared set is freed");
        return NULL;
    }
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_set_run(p, &rep, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    if (!want_report)
        Py_RETURN_NONE;
    PyObject *d = rpy_report_dict(&rep);
    PyObject *m = PyLong_FromUnsignedLongLong(redist_set_prepared_messages(p));
    PyObject *x = PyLong_FromUnsignedLongLong(redist_set_prepared_exchanges(p));
    if (!d || !m || !x || PyDict_SetItemString(d, "messages", m) < 0 ||
        PyDict_SetItemString(d, "exchanges", x) < 0)
        Py_CLEAR(d);
    Py_XDECREF(m);
    Py_XDECREF(x);
    return d;
}

static PyObject *setprep_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    free_setprep((rpy_setprep *)self);
    Py_RETURN_NONE;
}

static PyObject *setprep_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *setprep_exit(PyObject *self, PyObject *args)
{
    (void)args;
    free_setprep((rpy_setprep *)self);
    Py_RETURN_FALSE;
}

static PyObject *setprep_get_freed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((rpy_setprep *)self)->prep == NULL);
}

static PyMethodDef setprep_methods[] = {
    {"run", (PyCFunction)(void (*)(void))setprep_run,
     METH_VARARGS | METH_KEYWORDS,
     "run(report=False): every round in order on the bound arrays "
     "(collective; redist_set_run).  The report adds 'messages' and "
     "'exchanges'."},
    {"free", setprep_free, METH_NOARGS,
     "free(): redist_set_prepared_free (collective) and release the arrays."},
    {"__enter__", setprep_enter, METH_NOARGS, NULL},
    {"__exit__", setprep_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef setprep_getset[] = {
    {"freed", setprep_get_freed, NULL, "Whether free() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_SetPreparedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.SetPrepared",
    .tp_basicsize = sizeof(rpy_setprep),
    .tp_dealloc = setprep_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plan set prepared on this rank's arrays (prepare_set): "
              "run; free (collective).",
    .tp_methods = setprep_methods,
    .tp_getset = setprep_getset,
};

static PyMethodDef functions[] = {
    {"prepare_set", prepare_set, METH_VARARGS,
     "prepare_set(ctx, set, srcs, dsts, preserve_src) -> SetPrepared: "
     "redist_plan_set_prepare on the context's backend (collective)."},
    {NULL, NULL, 0, NULL}};

int rpy_sets_init(PyObject *m)
{
    if (PyType_Ready(&rpy_SetPreparedType) < 0 ||
        PyModule_AddObjectRef(m, "SetPrepared", (PyObject *)&rpy_SetPreparedType) < 0)
        return -1;
    return PyModule_AddFunctions(m, functions);
}
