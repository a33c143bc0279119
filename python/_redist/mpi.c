/*
 * redist._redist.MPIContext: a redist_mpi_t (include/redist/mpi.h) over an
 * mpi4py communicator, and execution on buffer-protocol arrays.
 *
 * The communicator's handle comes from mpi4py's C API (PyMPIComm_Get, which
 * checks the object's type), imported on first use so that planning never
 * imports mpi4py (nor initialises MPI).  Each array is checked before any
 * data moves: C-contiguous, the spec's dtype (or raw bytes), exactly the
 * local block's size and either flat or of the local shape, dst writable,
 * src writable unless preserve_src, no overlap.  A rank whose arrays fail
 * those checks still enters redist_mpi_execute, with NULL buffers, so that
 * every rank fails together (the others get ExecError naming it; this one
 * gets ValueError) and none waits forever.  The GIL is released while
 * data moves.
 *
 * The prepared and non-blocking forms are prepared.c's.
 */
#include "rpy_mpi.h"

#include <mpi4py/mpi4py.h>

static int mpi4py_ready;

MPI_Comm *rpy_comm_of(PyObject *comm)
{
    if (!mpi4py_ready) {
        if (import_mpi4py() < 0)
            return NULL;
        mpi4py_ready = 1;
    }
    MPI_Comm *c = PyMPIComm_Get(comm);
    if (!c)
        return NULL;
    if (*c == MPI_COMM_NULL) {
        PyErr_SetString(PyExc_ValueError, "comm is MPI.COMM_NULL");
        return NULL;
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) {
        PyErr_SetString(rpy_ExecError, "MPI is finalized");
        return NULL;
    }
    return c;
}

redist_mpi_t *rpy_ctx_of(rpy_mpi *self)
{
    if (!self->ctx)
        PyErr_SetString(PyExc_ValueError, "the MPI context is freed");
    return self->ctx;
}

static void free_ctx(rpy_mpi *self)
{
    redist_mpi_t *ctx = self->ctx;
    if (self->nprep)
        return; /* not reached: a prepared object holds a reference */
    self->ctx = NULL;
    if (ctx) {
        Py_BEGIN_ALLOW_THREADS
        redist_mpi_free(ctx);
        Py_END_ALLOW_THREADS
    }
}

static void ctx_dealloc(PyObject *self)
{
    free_ctx((rpy_mpi *)self);
    Py_TYPE(self)->tp_free(self);
}

/* MPIContext(comm, names, sizes, flags=0, max_scratch=0): collective over
 * comm (redist_mpi_create). */
static int ctx_init(PyObject *self_obj, PyObject *args, PyObject *kw)
{
    rpy_mpi *self = (rpy_mpi *)self_obj;
    static char *kwlist[] = {"comm", "names", "sizes", "flags", "max_scratch",
                             NULL};
    PyObject *comm, *names, *sizes;
    unsigned flags = 0;
    unsigned long long max_scratch = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|IK", kwlist, &comm, &names,
                                     &sizes, &flags, &max_scratch))
        return -1;
    MPI_Comm *c = rpy_comm_of(comm);
    if (!c)
        return -1;
    redist_mesh_t *mesh = NULL;
    if (rpy_mesh_from_py(names, sizes, &mesh) < 0)
        return -1;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    redist_mpi_options_t opts = {flags, max_scratch};
    redist_mpi_t *ctx = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_create(*c, mesh, &opts, &ctx, &err);
    Py_END_ALLOW_THREADS
    redist_mesh_free(mesh);
    if (st != REDIST_OK) {
        rpy_raise(rpy_ExecError, st, &err);
        return -1;
    }
    free_ctx(self);
    self->ctx = ctx;
    return 0;
}

int rpy_get_blocks(redist_mpi_t *ctx, const redist_plan_t *plan,
                   PyObject *src, PyObject *dst, int preserve, rpy_blocks *b)
{
    return rpy_get_blocks_at(redist_mpi_rank(ctx), redist_plan_spec(plan),
                             src, dst, preserve, b);
}

/* execute(plan, src, dst, preserve_src=True, report=False) */
static PyObject *ctx_execute(PyObject *self, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const kwlist[] = {"plan", "src", "dst",
                                         "preserve_src", "report", NULL};
    PyObject *v[5] = {NULL, NULL, NULL, Py_True, Py_False};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 5 || nargs + nkw < 3) {
        PyErr_SetString(PyExc_TypeError,
                        "execute(plan, src, dst, preserve_src=True, report=False)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int j = 0;
        while (name && kwlist[j] && strcmp(kwlist[j], name))
            j++;
        if (!name || !kwlist[j] || j < nargs) {
            PyErr_Format(PyExc_TypeError, "execute(): unexpected or repeated "
                         "keyword argument '%s'", name ? name : "?");
            return NULL;
        }
        v[j] = args[nargs + k];
    }
    if (!v[0] || !v[1] || !v[2]) {
        PyErr_SetString(PyExc_TypeError, "execute() needs plan, src and dst");
        return NULL;
    }
    redist_mpi_t *ctx = rpy_ctx_of((rpy_mpi *)self);
    if (!ctx)
        return NULL;
    int preserve = PyObject_IsTrue(v[3]), want_report = PyObject_IsTrue(v[4]);
    if (preserve < 0 || want_report < 0)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;

    /* Local checks; on failure this rank still takes part, with no plan,
     * so that every rank fails together. */
    const redist_plan_t *plan = rpy_plan_of(v[0]);
    rpy_blocks b;
    if (!plan || rpy_get_blocks(ctx, plan, v[1], v[2], preserve, &b) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        Py_BEGIN_ALLOW_THREADS
        redist_mpi_execute(ctx, NULL, NULL, NULL, &eo, NULL, NULL);
        Py_END_ALLOW_THREADS
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = redist_mpi_execute(ctx, plan, b.src, b.dst, &eo, &rep, &err);
    Py_END_ALLOW_THREADS
    rpy_release_blocks(&b);
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    if (want_report)
        return rpy_report_dict(&rep);
    Py_RETURN_NONE;
}

/* matches(comm) -> bool: the context runs over the same group in the same
 * order as comm (MPI_Comm_compare IDENT or CONGRUENT), so it may serve it. */
static PyObject *ctx_matches(PyObject *self, PyObject *comm)
{
    redist_mpi_t *ctx = rpy_ctx_of((rpy_mpi *)self);
    if (!ctx)
        return NULL;
    MPI_Comm *c = rpy_comm_of(comm);
    if (!c)
        return NULL;
    int r = MPI_UNEQUAL;
    if (MPI_Comm_compare(redist_mpi_comm(ctx), *c, &r) != MPI_SUCCESS)
        r = MPI_UNEQUAL;
    return PyBool_FromLong(r == MPI_IDENT || r == MPI_CONGRUENT);
}

/* info(plan, preserve_src=True) -> dict (redist_mpi_exec_info) */
static PyObject *ctx_info(PyObject *self, PyObject *args)
{
    PyObject *plan_obj;
    int preserve = 1;
    if (!PyArg_ParseTuple(args, "O|p", &plan_obj, &preserve))
        return NULL;
    redist_mpi_t *ctx = rpy_ctx_of((rpy_mpi *)self);
    const redist_plan_t *plan = ctx ? rpy_plan_of(plan_obj) : NULL;
    if (!plan)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_mpi_info_t in;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st = redist_mpi_exec_info(ctx, plan, &eo, &in, &err);
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, &err);
    return Py_BuildValue(
        "{sKsKsKsKsLsKsNsisi}", "scratch_bytes",
        (unsigned long long)in.scratch_bytes, "work_bytes",
        (unsigned long long)in.work_bytes, "bound_bytes",
        (unsigned long long)in.bound_bytes, "min_scratch_bytes",
        (unsigned long long)in.min_scratch_bytes, "exchanges",
        (long long)in.exchanges, "exec_scratch_bytes",
        (unsigned long long)in.exec.scratch_bytes, "writes_src",
        PyBool_FromLong(in.exec.writes_src), "passes", in.exec.passes,
        "collectives", in.exec.collectives);
}

static PyObject *ctx_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (((rpy_mpi *)self)->nprep) { /* the same on every rank (SPMD) */
        PyErr_Format(PyExc_ValueError, "the context still has %d prepared "
                     "object(s): free them first", ((rpy_mpi *)self)->nprep);
        return NULL;
    }
    free_ctx((rpy_mpi *)self);
    Py_RETURN_NONE;
}

static PyObject *ctx_get_rank(PyObject *self, void *closure)
{
    (void)closure;
    redist_mpi_t *ctx = rpy_ctx_of((rpy_mpi *)self);
    return ctx ? PyLong_FromLong(redist_mpi_rank(ctx)) : NULL;
}

static PyObject *ctx_get_size(PyObject *self, void *closure)
{
    (void)closure;
    redist_mpi_t *ctx = rpy_ctx_of((rpy_mpi *)self);
    return ctx ? PyLong_FromLong(redist_mpi_size(ctx)) : NULL;
}

static PyMethodDef ctx_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))ctx_execute,
     METH_FASTCALL | METH_KEYWORDS,
     "execute(plan, src, dst, preserve_src=True, report=False): run the plan "
     "on this rank's blocks (collective; redist_mpi_execute)."},
    {"matches", ctx_matches, METH_O,
     "matches(comm) -> bool: same group and order as comm."},
    {"info", ctx_info, METH_VARARGS,
     "info(plan, preserve_src=True) -> dict: redist_mpi_exec_info."},
    {"prepare", (PyCFunction)(void (*)(void))rpy_ctx_prepare,
     METH_VARARGS | METH_KEYWORDS,
     "prepare(plan, src, dst, preserve_src=True) -> Prepared: "
     "redist_mpi_prepare (collective); the arrays stay bound until the "
     "object is freed."},
    {"free", ctx_free, METH_NOARGS,
     "free(): redist_mpi_free (collective; its prepared objects first); "
     "later calls raise ValueError."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ctx_getset[] = {
    {"rank", ctx_get_rank, NULL, "This rank (= mesh device).", NULL},
    {"size", ctx_get_size, NULL, "The number of ranks.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject rpy_MPIType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.MPIContext",
    .tp_basicsize = sizeof(rpy_mpi),
    .tp_dealloc = ctx_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_mpi_t over an mpi4py communicator (base of "
              "redist.Executor).",
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
    .tp_init = ctx_init,
    .tp_new = PyType_GenericNew,
};

PyTypeObject *rpy_MPIContextType = &rpy_MPIType;

int rpy_mpi_init(PyObject *m)
{
    if (PyType_Ready(&rpy_MPIType) < 0 ||
        PyModule_AddObjectRef(m, "MPIContext", (PyObject *)&rpy_MPIType) < 0)
        return -1;
    if (rpy_meshes_init(m) < 0)
        return -1;
    return rpy_sets_init(m);
}
