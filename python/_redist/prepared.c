/*
 * MPIContext.prepare(plan, src, dst, preserve_src=True): a
 * redist_mpi_prepared_t (include/redist/mpi.h, PREPARED OBJECTS) over this
 * rank's arrays, as a Prepared object (prep.c: run, start / test / wait
 * on the C object's progress thread (MPI_THREAD_MULTIPLE, mpi4py's
 * default), free).
 *
 * The arrays are checked as for execute.  A rank whose arrays fail the
 * checks still enters redist_mpi_prepare, with no plan, so that every
 * rank fails together.  The object keeps a reference to its context and
 * counts itself there: the context cannot be freed first.
 */
#include "rpy_mpi.h"

static redist_status_t run(void *p, redist_exec_report_t *rep,
                           redist_error_t *err)
{
    return redist_mpi_run(p, rep, err);
}

static redist_status_t start(void *p, redist_error_t *err)
{
    return redist_mpi_start(p, err);
}

static redist_status_t test(void *p, int *done, redist_error_t *err)
{
    return redist_mpi_test(p, done, err);
}

static redist_status_t wait(void *p, redist_exec_report_t *rep,
                            redist_error_t *err)
{
    return redist_mpi_wait(p, rep, err);
}

static int async(void *p)
{
    return redist_mpi_prepared_async(p);
}

static void free_it(void *p)
{
    redist_mpi_prepared_free(p);
}

static const rpy_prep_ops mpi_ops = {"MPI", run, start, test, wait, async,
                                     free_it, NULL, NULL};

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
    rpy_prep *obj = rpy_prep_new(&mpi_ops, 1);
    /* local checks; on failure this rank still takes part, with no plan */
    const redist_plan_t *plan = obj ? rpy_plan_of(plan_obj) : NULL;
    if (!plan || rpy_get_blocks(ctx, plan, src, dst, preserve, obj->b) < 0) {
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
    st = redist_mpi_prepare(ctx, plan, obj->b->src, obj->b->dst, &eo, &p, &err);
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj); /* releases the arrays */
        return rpy_raise(rpy_ExecError, st, &err);
    }
    rpy_prep_bind(obj, p, self, &owner->nprep, NULL);
    return (PyObject *)obj;
}
