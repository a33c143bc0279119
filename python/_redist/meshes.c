/*
 * redist._redist: plans of two-mesh specs (doc/meshes.md) over MPI:
 * execute_meshes(comm, plan, src, dst, preserve_src=True, report=False)
 * (redist_mpi_execute_meshes) and prepare_meshes(...) -> Prepared
 * (prep.c; redist_mpi_prepare_meshes, run() is redist_mpi_run_meshes,
 * start() / test() / wait() redist_mpi_start_meshes .. _wait_meshes).
 *
 * comm is an mpi4py communicator over the union of the meshes: rank d is
 * global device d.  A rank outside a side's mesh holds an empty block of
 * it and passes None.  The arrays are checked as for MPIContext.execute
 * (mpi.c); a rank whose arrays fail still enters the C call, with no
 * plan, so that every rank fails together.
 */
#include "rpy_mpi.h"

static redist_status_t run(void *p, redist_exec_report_t *rep,
                           redist_error_t *err)
{
    return redist_mpi_run_meshes(p, rep, err);
}

static redist_status_t start(void *p, redist_error_t *err)
{
    return redist_mpi_start_meshes(p, err);
}

static redist_status_t test(void *p, int *done, redist_error_t *err)
{
    return redist_mpi_test_meshes(p, done, err);
}

static redist_status_t wait(void *p, redist_exec_report_t *rep,
                            redist_error_t *err)
{
    return redist_mpi_wait_meshes(p, rep, err);
}

static int async(void *p)
{
    return redist_mpi_meshes_async(p);
}

static void free_it(void *p)
{
    redist_mpi_meshes_free(p);
}

static const rpy_prep_ops meshes_ops = {"two-mesh plans", run, start, test,
                                        wait, async, free_it, NULL, NULL};

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
    return rpy_run_outcome(st, &rep, &err, want_report);
}

static PyObject *prepare_meshes(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    MPI_Comm *c;
    const redist_plan_t *plan;
    int preserve, want_report;
    rpy_prep *obj = rpy_prep_new(&meshes_ops, 1);
    if (!obj)
        return NULL;
    if (meshes_args(args, kw, 0, &c, &plan, &preserve, &want_report, obj->b,
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
    st = redist_mpi_prepare_meshes(*c, plan, obj->b->src, obj->b->dst, &eo, &p,
                                   &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj); /* releases the arrays */
        return rpy_raise(rpy_ExecError, st, &err);
    }
    rpy_prep_bind(obj, p, NULL, NULL, NULL);
    return (PyObject *)obj;
}

static PyMethodDef functions[] = {
    {"execute_meshes", (PyCFunction)(void (*)(void))execute_meshes,
     METH_VARARGS | METH_KEYWORDS,
     "execute_meshes(comm, plan, src, dst, preserve_src=True, report=False): "
     "redist_mpi_execute_meshes (collective over comm)."},
    {"prepare_meshes", (PyCFunction)(void (*)(void))prepare_meshes,
     METH_VARARGS | METH_KEYWORDS,
     "prepare_meshes(comm, plan, src, dst, preserve_src=True) -> "
     "Prepared (run, free): redist_mpi_prepare_meshes (collective)."},
    {NULL, NULL, 0, NULL}};

int rpy_meshes_init(PyObject *m)
{
    return PyModule_AddFunctions(m, functions);
}
