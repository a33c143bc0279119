/*
 * Plan sets (set_plan.c) prepared on this device's arrays, as Prepared
 * objects (prep.c: run, free): rpy_prep_set on any backend's endpoint
 * (redist_plan_set_prepare; include/redist/exec.h), used by the
 * OpenSHMEM context (shmem.c) and, with MPI, by
 * redist._redist.prepare_set(ctx, set, srcs, dsts, preserve_src) over an
 * MPIContext (redist_mpi_backend).  srcs[i] and dsts[i] are this
 * device's blocks of array i (None for an empty block: a device outside
 * a two-mesh array's mesh, or an empty uneven block), checked as
 * MPIContext.execute checks one array (blocks.c).  A device whose arrays
 * fail still enters redist_plan_set_prepare, with no set, so that every
 * device fails together.  The object holds the context (counted as one
 * of its prepared objects), the set and the arrays' buffers until freed.
 */
#include "rpy.h"

#ifdef REDIST_PY_HAVE_MPI
#include "rpy_mpi.h"
#endif

redist_status_t rpy_set_run(void *p, redist_exec_report_t *rep,
                            redist_error_t *err)
{
    return redist_set_run(p, rep, err);
}

redist_status_t rpy_set_start(void *p, redist_error_t *err)
{
    return redist_set_start(p, err);
}

redist_status_t rpy_set_test(void *p, int *done, redist_error_t *err)
{
    return redist_set_test(p, done, err);
}

redist_status_t rpy_set_wait(void *p, redist_exec_report_t *rep,
                             redist_error_t *err)
{
    return redist_set_wait(p, rep, err);
}

int rpy_set_async(void *p)
{
    return redist_set_prepared_async(p);
}

static void free_it(void *p)
{
    redist_set_prepared_free(p);
}

int rpy_set_report(void *p, PyObject *d)
{
    PyObject *m = PyLong_FromUnsignedLongLong(redist_set_prepared_messages(p));
    PyObject *x = PyLong_FromUnsignedLongLong(redist_set_prepared_exchanges(p));
    int rc = !m || !x || PyDict_SetItemString(d, "messages", m) < 0 ||
                     PyDict_SetItemString(d, "exchanges", x) < 0
                 ? -1
                 : 0;
    Py_XDECREF(m);
    Py_XDECREF(x);
    return rc;
}

static const rpy_prep_ops set_ops = {"plan sets", rpy_set_run,
                                     rpy_set_start, rpy_set_test,
                                     rpy_set_wait, rpy_set_async, free_it,
                                     NULL, rpy_set_report};

/* This rank's blocks of every array: 0, or -1 with ValueError naming the
 * array. */
static int set_blocks(rpy_prep *o, const redist_plan_set_t *set, int64_t rank,
                      PyObject *srcs, PyObject *dsts, int preserve)
{
    Py_ssize_t n = o->n;
    if (!PyList_Check(srcs) || !PyList_Check(dsts) ||
        PyList_GET_SIZE(srcs) != n || PyList_GET_SIZE(dsts) != n) {
        PyErr_Format(PyExc_ValueError, "srcs and dsts: lists of %zd arrays "
                     "(one per array of the set)", n);
        return -1;
    }
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

PyObject *rpy_prep_set(PyObject *set_obj, redist_backend_t *be,
                       int64_t rank, PyObject *srcs, PyObject *dsts,
                       int preserve, PyObject *owner, int *count,
                       const rpy_prep_ops *ops)
{
    const redist_plan_set_t *set = rpy_plan_set_of(set_obj);
    rpy_prep *obj = set ? rpy_prep_new(ops ? ops : &set_ops,
                                       redist_plan_set_num_arrays(set))
                        : NULL;
    if (!obj || set_blocks(obj, set, rank, srcs, dsts, preserve) < 0) {
        /* this device still takes part, with no set */
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
    rpy_prep_bind(obj, p, owner, count, set_obj);
    return (PyObject *)obj;
}

#ifdef REDIST_PY_HAVE_MPI
/* prepare_set(ctx, set, srcs, dsts, preserve_src) -> Prepared */
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
    return rpy_prep_set(set_obj, redist_mpi_backend(ctx), redist_mpi_rank(ctx),
                        srcs, dsts, preserve, ctx_obj, &owner->nprep, NULL);
}

static PyMethodDef functions[] = {
    {"prepare_set", prepare_set, METH_VARARGS,
     "prepare_set(ctx, set, srcs, dsts, preserve_src) -> Prepared (run, "
     "free): redist_plan_set_prepare on the context's backend "
     "(collective)."},
    {NULL, NULL, 0, NULL}};

int rpy_sets_init(PyObject *m)
{
    return PyModule_AddFunctions(m, functions);
}
#endif
