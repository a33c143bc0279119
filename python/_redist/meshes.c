/*
 * redist._redist: plans of two-mesh specs (doc/meshes.md) over MPI:
 * execute_meshes(comm, plan, src, dst, preserve_src=True, report=False)
 * (redist_mpi_execute_meshes) and prepare_meshes(...) -> MeshesPrepared
 * (redist_mpi_prepare_meshes; run() is redist_mpi_run_meshes).
 *
 * comm is an mpi4py communicator over the union of the meshes: rank d is
 * global device d.  A rank outside a side's mesh holds an empty block of
 * it and passes None.  The arrays are checked as for MPIContext.execute
 * (mpi.c); a rank whose arrays fail still enters the C call, with no
 * plan, so that every rank fails together.  As for Prepared, the
 * arrays' buffers stay held until the object is freed, and free() and
 * the object's deallocation are collective.
 */
#include "rpy_mpi.h"

typedef struct rpy_meshes {
    PyObject_HEAD
    redist_mpi_meshes_t *prep;
    rpy_blocks b;
} rpy_meshes;

static PyTypeObject rpy_MeshesType;

/* Parse (comm, plan, src, dst, preserve_src) and check this rank's
 * arrays: 0 with the blocks held, or -1 with the exception set (after the
 * collective failure when `fail` is given: it is called with *c). */
static int meshes_args(PyObject *args, PyObject *kw, int with_report,
                       MPI_Comm **c, const redist_plan_t **plan,
                       int *preserve, int *want_report, rpy_blocks *b,
                       void (*fail)(MPI_Comm, int))
{
    static char *kw_run[] = {"comm", "plan", "src", "dst", "preserve_src",
                             "report", NULL};
    static char *kw_prep[] = {"comm", "plan", "src", "dst", "preserve_src",
                              NULL};
    PyObject *comm, *plan_obj, *src, *dst;
    *preserve = 1;
    *want_report = 0;
    if (!(with_report
              ? PyArg_ParseTupleAndKeywords(args, kw, "OOOO|pp", kw_run, &comm,
                                            &plan_obj, &src, &dst, preserve,
                                            want_report)
              : PyArg_ParseTupleAndKeywords(args, kw, "OOOO|p", kw_prep, &comm,
                                            &plan_obj, &src, &dst, preserve)))
        return -1;
    if (!(*c = rpy_comm_of(comm)))
        return -1;
    int rank = 0;
    MPI_Comm_rank(**c, &rank);
    *plan = rpy_plan_of(plan_obj);
    if (!*plan || rpy_get_blocks_at(rank, redist_plan_spec(*plan), src, dst,
                                    *preserve, b) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        fail(**c, *preserve);
        PyErr_Restore(type, value, tb);
        return -1;
    }
    return 0;
}

static void fail_execute(MPI_Comm c, int preserve)
{
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    Py_BEGIN_ALLOW_THREADS
    redist_mpi_execute_meshes(c, NULL, NULL, NULL, &eo, NULL, NULL);
    Py_END_ALLOW_THREADS
}

static void fail_prepare(MPI_Comm c, int preserve)
{
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_mpi_meshes_t *none = NULL;
    Py_BEGIN_ALLOW_THREADS
    redist_mpi_prepare_meshes(c, NULL, NULL, NULL, &eo, &none, NULL);
    Py_END_ALLOW_THREADS
    redist_mpi_meshes_free(none);
}

static PyObject *execute_meshes(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    MPI_Comm *c;
    const redist_plan_t *plan;
    int preserve, want_report;
    rpy_blocks b;
    if (meshes_args(args, kw, 1, &c, &plan, &preserve, &want_report, &b,
                    fail_execute) < 0)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_execute_meshes(*c, plan, b.src, b.dst, &eo, &rep, &err);
    Py_END_ALLOW_THREADS
    rpy_release_blocks(&b);
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    if (want_report)
        return rpy_report_dict(&rep);
    Py_RETURN_NONE;
}

static PyObject *prepare_meshes(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    MPI_Comm *c;
    const redist_plan_t *plan;
    int preserve, want_report;
    rpy_meshes *obj = PyObject_New(rpy_meshes, &rpy_MeshesType);
    if (!obj)
        return NULL;
    obj->prep = NULL;
    memset(&obj->b, 0, sizeof obj->b);
    if (meshes_args(args, kw, 0, &c, &plan, &preserve, &want_report, &obj->b,
                    fail_prepare) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    redist_mpi_meshes_t *p = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_prepare_meshes(*c, plan, obj->b.src, obj->b.dst, &eo, &p,
                                   &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj); /* releases the arrays */
        return rpy_raise(rpy_ExecError, st, &err);
    }
    obj->prep = p;
    return (PyObject *)obj;
}

static void free_meshes(rpy_meshes *self)
{
    redist_mpi_meshes_t *p = self->prep;
    self->prep = NULL;
    if (p) {
        Py_BEGIN_ALLOW_THREADS
        redist_mpi_meshes_free(p);
        Py_END_ALLOW_THREADS
    }
    rpy_release_blocks(&self->b);
}

static void meshes_dealloc(PyObject *self)
{
    free_meshes((rpy_meshes *)self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *meshes_run(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"report", NULL};
    int want_report = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &want_report))
        return NULL;
    redist_mpi_meshes_t *p = ((rpy_meshes *)self)->prep;
    if (!p) {
        PyErr_SetString(PyExc_ValueError, "the prepared object is freed");
        return NULL;
    }
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_run_meshes(p, &rep, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    if (want_report)
        return rpy_report_dict(&rep);
    Py_RETURN_NONE;
}

static PyObject *meshes_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    free_meshes((rpy_meshes *)self);
    Py_RETURN_NONE;
}

static PyObject *meshes_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *meshes_exit(PyObject *self, PyObject *args)
{
    (void)args;
    free_meshes((rpy_meshes *)self);
    Py_RETURN_FALSE;
}

static PyObject *meshes_get_freed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((rpy_meshes *)self)->prep == NULL);
}

static PyMethodDef meshes_methods[] = {
    {"run", (PyCFunction)(void (*)(void))meshes_run,
     METH_VARARGS | METH_KEYWORDS,
     "run(report=False): one blocking run on the bound arrays (collective; "
     "redist_mpi_run_meshes)."},
    {"free", meshes_free, METH_NOARGS,
     "free(): redist_mpi_meshes_free (collective) and release the arrays."},
    {"__enter__", meshes_enter, METH_NOARGS, NULL},
    {"__exit__", meshes_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef meshes_getset[] = {
    {"freed", meshes_get_freed, NULL, "Whether free() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_MeshesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.MeshesPrepared",
    .tp_basicsize = sizeof(rpy_meshes),
    .tp_dealloc = meshes_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A two-mesh plan prepared on this rank's arrays "
              "(prepare_meshes): run; free (collective).",
    .tp_methods = meshes_methods,
    .tp_getset = meshes_getset,
};

static PyMethodDef functions[] = {
    {"execute_meshes", (PyCFunction)(void (*)(void))execute_meshes,
     METH_VARARGS | METH_KEYWORDS,
     "execute_meshes(comm, plan, src, dst, preserve_src=True, report=False): "
     "redist_mpi_execute_meshes (collective over comm)."},
    {"prepare_meshes", (PyCFunction)(void (*)(void))prepare_meshes,
     METH_VARARGS | METH_KEYWORDS,
     "prepare_meshes(comm, plan, src, dst, preserve_src=True) -> "
     "MeshesPrepared: redist_mpi_prepare_meshes (collective)."},
    {NULL, NULL, 0, NULL}};

int rpy_meshes_init(PyObject *m)
{
    if (PyType_Ready(&rpy_MeshesType) < 0 ||
        PyModule_AddObjectRef(m, "MeshesPrepared", (PyObject *)&rpy_MeshesType) < 0)
        return -1;
    return PyModule_AddFunctions(m, functions);
}
