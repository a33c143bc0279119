/*
 * redist._redist: the OpenSHMEM backend (include/redist/shmem.h) under
 * oshrun: shmem_start / shmem_stop (shmem_init_thread and
 * shmem_finalize, once per process) and ShmemContext (a redist_shmem_t
 * over all PEs: execute, and prepare, which gives a Prepared object of
 * prep.c: run, start / test / wait, free).  Built when libredist_shmem
 * is.  Plans of two-mesh specs (doc/meshes.md; PE d is global device d)
 * run through execute too, and prepare them with
 * redist_shmem_prepare_meshes (run only: the C API has no start / test /
 * wait for them); prepare_set prepares a plan set (sets.c) on the
 * context's endpoint (redist_shmem_backend, any memory), run only too.
 *
 * The arrays are any buffer-protocol memory, checked as for MPI
 * (blocks.c); they are not in the symmetric heap, so the backend receives
 * into its own symmetric scratch and copies the result into dst (BUFFERS
 * in shmem.h).  A PE whose arrays fail the checks still enters the C call
 * with no plan (or set), so that every PE fails together; a PE outside a
 * two-mesh side's mesh passes None for the block it does not hold.  The
 * GIL is released while data moves.  After shmem_stop no context or
 * prepared object may run: their deallocation then frees nothing (the
 * heap is gone).
 */
#include "rpy.h"

#include "redist/shmem.h"

#include <shmem.h>

static int started, stopped;

typedef struct rpy_shctx {
    PyObject_HEAD
    redist_shmem_t *ctx;
    int nprep;
} rpy_shctx;

static PyTypeObject rpy_ShmemContextType;

static int running(void)
{
    if (!started || stopped) {
        PyErr_SetString(rpy_ExecError, stopped ? "OpenSHMEM is finalized"
                                               : "OpenSHMEM is not started: "
                                                 "call redist.shmem.start() "
                                                 "under oshrun");
        return 0;
    }
    return 1;
}

/* shmem_start(thread_multiple=True) -> (pe, npes) */
static PyObject *sh_start(PyObject *self, PyObject *args)
{
    (void)self;
    int multiple = 1;
    if (!PyArg_ParseTuple(args, "|p", &multiple))
        return NULL;
    if (stopped) {
        PyErr_SetString(rpy_ExecError, "OpenSHMEM was finalized in this "
                        "process; it cannot start again");
        return NULL;
    }
    if (!started) {
        int provided = 0, rc = 0;
        Py_BEGIN_ALLOW_THREADS
        if (multiple)
            rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
        else
            shmem_init();
        Py_END_ALLOW_THREADS
        if (rc != 0) {
            PyErr_Format(rpy_ExecError, "shmem_init_thread failed (%d)", rc);
            return NULL;
        }
        started = 1;
    }
    return Py_BuildValue("(ii)", shmem_my_pe(), shmem_n_pes());
}

/* shmem_stop(): shmem_finalize (collective), once. */
static PyObject *sh_stop(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (started && !stopped) {
        stopped = 1;
        Py_BEGIN_ALLOW_THREADS
        shmem_finalize();
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

/* ----------------------------------------------- prepared (prep.c) */

static redist_status_t sh_run(void *p, redist_exec_report_t *rep,
                              redist_error_t *err)
{
    return redist_shmem_run(p, rep, err);
}

static redist_status_t sh_start_run(void *p, redist_error_t *err)
{
    return redist_shmem_start(p, err);
}

static redist_status_t sh_test(void *p, int *done, redist_error_t *err)
{
    return redist_shmem_test(p, done, err);
}

static redist_status_t sh_wait(void *p, redist_exec_report_t *rep,
                               redist_error_t *err)
{
    return redist_shmem_wait(p, rep, err);
}

static int sh_async(void *p)
{
    return redist_shmem_prepared_async(p);
}

/* After shmem_stop the symmetric heap is gone: nothing to free. */
static void sh_free(void *p)
{
    if (started && !stopped)
        redist_shmem_prepared_free(p);
}

static const rpy_prep_ops shmem_ops = {"OpenSHMEM", sh_run, sh_start_run,
                                       sh_test, sh_wait, sh_async, sh_free,
                                       running, NULL};

static redist_status_t sh_run_meshes(void *p, redist_exec_report_t *rep,
                                     redist_error_t *err)
{
    return redist_shmem_run_meshes(p, rep, err);
}

static void sh_free_meshes(void *p)
{
    if (started && !stopped)
        redist_shmem_meshes_free(p);
}

static const rpy_prep_ops meshes_ops = {"two-mesh plans", sh_run_meshes,
                                        NULL, NULL, NULL, NULL,
                                        sh_free_meshes, running, NULL};

static void sh_free_set(void *p)
{
    if (started && !stopped)
        redist_set_prepared_free(p);
}

static const rpy_prep_ops set_ops = {"plan sets", rpy_set_run, NULL, NULL,
                                     NULL, NULL, sh_free_set, running,
                                     rpy_set_report};

/* ------------------------------------------------------------ context */

static redist_shmem_t *ctx_of(rpy_shctx *self)
{
    if (!running())
        return NULL;
    if (!self->ctx)
        PyErr_SetString(PyExc_ValueError, "the OpenSHMEM context is freed");
    return self->ctx;
}

static void free_ctx(rpy_shctx *self)
{
    redist_shmem_t *ctx = self->ctx;
    self->ctx = NULL;
    if (ctx && started && !stopped) {
        Py_BEGIN_ALLOW_THREADS
        redist_shmem_free(ctx);
        Py_END_ALLOW_THREADS
    }
}

static void ctx_dealloc(PyObject *self)
{
    free_ctx((rpy_shctx *)self);
    Py_TYPE(self)->tp_free(self);
}

/* ShmemContext(names, sizes, flags=0): redist_shmem_create (collective) */
static int ctx_init(PyObject *self_obj, PyObject *args, PyObject *kw)
{
    rpy_shctx *self = (rpy_shctx *)self_obj;
    static char *kwlist[] = {"names", "sizes", "flags", NULL};
    PyObject *names, *sizes;
    unsigned flags = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|I", kwlist, &names, &sizes,
                                     &flags))
        return -1;
    if (!running())
        return -1;
    redist_mesh_t *mesh = NULL;
    if (rpy_mesh_from_py(names, sizes, &mesh) < 0)
        return -1;
    redist_shmem_options_t opts = {flags, 0};
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    redist_shmem_t *ctx = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = redist_shmem_create(mesh, &opts, &ctx, &err);
    Py_END_ALLOW_THREADS
    redist_mesh_free(mesh);
    if (st != REDIST_OK) {
        rpy_raise(rpy_ExecError, st, &err);
        return -1;
    }
    if (self->nprep) { /* re-initialised while in use: keep the old one */
        redist_shmem_free(ctx);
        PyErr_SetString(PyExc_ValueError, "the context has prepared objects");
        return -1;
    }
    free_ctx(self);
    self->ctx = ctx;
    return 0;
}

enum { FAIL_EXECUTE, FAIL_PREPARE, FAIL_MESHES };

/* This PE's part in the collective failure of the call `fail` names
 * (FAIL_EXECUTE, FAIL_PREPARE or FAIL_MESHES: redist_shmem_execute,
 * _prepare or _prepare_meshes), entered with no plan. */
static void fail_call(redist_shmem_t *ctx, int preserve, int fail)
{
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_shmem_prepared_t *none = NULL;
    redist_shmem_meshes_t *no_meshes = NULL;
    Py_BEGIN_ALLOW_THREADS
    if (fail == FAIL_EXECUTE)
        redist_shmem_execute(ctx, NULL, NULL, NULL, &eo, NULL, NULL);
    else if (fail == FAIL_PREPARE)
        redist_shmem_prepare(ctx, NULL, NULL, NULL, &eo, &none, NULL);
    else
        redist_shmem_prepare_meshes(ctx, NULL, NULL, NULL, &eo, &no_meshes,
                                    NULL);
    Py_END_ALLOW_THREADS
    redist_shmem_prepared_free(none);
    redist_shmem_meshes_free(no_meshes);
}

/* Check this PE's arrays; on failure enter the call `fail` names (with
 * no plan, fail_call) so that every PE fails together, and return -1
 * with the local exception. */
static int blocks_or_fail(redist_shmem_t *ctx, PyObject *plan_obj,
                          PyObject *src, PyObject *dst, int preserve,
                          rpy_blocks *b, const redist_plan_t **plan,
                          int fail)
{
    *plan = rpy_plan_of(plan_obj);
    if (*plan && rpy_get_blocks_at(shmem_my_pe(), redist_plan_spec(*plan), src,
                                   dst, preserve, b) == 0)
        return 0;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    fail_call(ctx, preserve, fail);
    PyErr_Restore(type, value, tb);
    return -1;
}

/* Whether a plan object is a two-mesh spec's (no exception left: the
 * checks that follow raise it). */
static int two_mesh_plan(PyObject *plan_obj)
{
    const redist_plan_t *plan = rpy_plan_of(plan_obj);
    if (!plan) {
        PyErr_Clear();
        return 0;
    }
    return redist_spec_num_meshes(redist_plan_spec(plan)) == 2;
}

/* execute(plan, src, dst, preserve_src=True, report=False) */
static PyObject *ctx_execute(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"plan", "src", "dst", "preserve_src", "report",
                             NULL};
    PyObject *plan_obj, *src, *dst;
    int preserve = 1, want_report = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|pp", kwlist, &plan_obj,
                                     &src, &dst, &preserve, &want_report))
        return NULL;
    redist_shmem_t *ctx = ctx_of((rpy_shctx *)self);
    if (!ctx)
        return NULL;
    rpy_blocks b;
    const redist_plan_t *plan;
    if (blocks_or_fail(ctx, plan_obj, src, dst, preserve, &b, &plan,
                       FAIL_EXECUTE) < 0)
        return NULL;
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_exec_report_t rep;
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = redist_shmem_execute(ctx, plan, b.src, b.dst, &eo, &rep, &err);
    Py_END_ALLOW_THREADS
    rpy_release_blocks(&b);
    return rpy_run_outcome(st, &rep, &err, want_report);
}

/* prepare(plan, src, dst, preserve_src=True) -> Prepared (prep.c):
 * redist_shmem_prepare, or redist_shmem_prepare_meshes for a two-mesh
 * plan. */
static PyObject *ctx_prepare(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"plan", "src", "dst", "preserve_src", NULL};
    PyObject *plan_obj, *src, *dst;
    int preserve = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|p", kwlist, &plan_obj,
                                     &src, &dst, &preserve))
        return NULL;
    rpy_shctx *owner = (rpy_shctx *)self;
    redist_shmem_t *ctx = ctx_of(owner);
    if (!ctx)
        return NULL;
    int two = two_mesh_plan(plan_obj);
    int fail = two ? FAIL_MESHES : FAIL_PREPARE;
    rpy_prep *obj = rpy_prep_new(two ? &meshes_ops : &shmem_ops, 1);
    if (!obj) {
        fail_call(ctx, preserve, fail);
        return NULL;
    }
    const redist_plan_t *plan;
    if (blocks_or_fail(ctx, plan_obj, src, dst, preserve, obj->b, &plan,
                       fail) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    redist_exec_options_t eo = {preserve ? REDIST_EXEC_PRESERVE_SRC : 0u};
    redist_error_t err;
    redist_error_clear(&err);
    redist_status_t st;
    void *p = NULL;
    Py_BEGIN_ALLOW_THREADS
    if (two) {
        redist_shmem_meshes_t *m = NULL;
        st = redist_shmem_prepare_meshes(ctx, plan, obj->b->src, obj->b->dst,
                                         &eo, &m, &err);
        p = m;
    } else {
        redist_shmem_prepared_t *pr = NULL;
        st = redist_shmem_prepare(ctx, plan, obj->b->src, obj->b->dst, &eo,
                                  &pr, &err);
        p = pr;
    }
    Py_END_ALLOW_THREADS
    if (st != REDIST_OK) {
        Py_DECREF(obj);
        return rpy_raise(rpy_ExecError, st, &err);
    }
    rpy_prep_bind(obj, p, self, &owner->nprep, NULL);
    return (PyObject *)obj;
}

/* prepare_set(set, srcs, dsts, preserve_src) -> Prepared (sets.c) */
static PyObject *ctx_prepare_set(PyObject *self, PyObject *args)
{
    PyObject *set_obj, *srcs, *dsts;
    int preserve = 1;
    if (!PyArg_ParseTuple(args, "OOOp", &set_obj, &srcs, &dsts, &preserve))
        return NULL;
    rpy_shctx *owner = (rpy_shctx *)self;
    redist_shmem_t *ctx = ctx_of(owner);
    if (!ctx)
        return NULL;
    return rpy_prep_set(set_obj, redist_shmem_backend(ctx, 0), shmem_my_pe(),
                        srcs, dsts, preserve, self, &owner->nprep, &set_ops);
}

/* _endpoint() -> capsule "redist.backend": the context's endpoint
 * (redist_shmem_backend, any memory) for planning a set for it
 * (set_plan.c); valid while the context lives. */
static PyObject *ctx_endpoint(PyObject *self, PyObject *unused)
{
    (void)unused;
    redist_shmem_t *ctx = ctx_of((rpy_shctx *)self);
    redist_backend_t *be = ctx ? redist_shmem_backend(ctx, 0) : NULL;
    if (ctx && !be)
        PyErr_SetString(rpy_ExecError, "no OpenSHMEM endpoint");
    return be ? PyCapsule_New(be, "redist.backend", NULL) : NULL;
}

static PyObject *ctx_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (((rpy_shctx *)self)->nprep) {
        PyErr_Format(PyExc_ValueError, "the context still has %d prepared "
                     "object(s): free them first", ((rpy_shctx *)self)->nprep);
        return NULL;
    }
    free_ctx((rpy_shctx *)self);
    Py_RETURN_NONE;
}

static PyObject *ctx_get_pe(PyObject *self, void *closure)
{
    (void)self;
    (void)closure;
    return running() ? PyLong_FromLong(shmem_my_pe()) : NULL;
}

static PyObject *ctx_get_npes(PyObject *self, void *closure)
{
    (void)self;
    (void)closure;
    return running() ? PyLong_FromLong(shmem_n_pes()) : NULL;
}

static PyMethodDef ctx_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))ctx_execute,
     METH_VARARGS | METH_KEYWORDS,
     "execute(plan, src, dst, preserve_src=True, report=False): "
     "redist_shmem_execute (collective over all PEs; one- or two-mesh "
     "plans)."},
    {"prepare", (PyCFunction)(void (*)(void))ctx_prepare,
     METH_VARARGS | METH_KEYWORDS,
     "prepare(plan, src, dst, preserve_src=True) -> Prepared: "
     "redist_shmem_prepare, or redist_shmem_prepare_meshes for a two-mesh "
     "plan (collective); the arrays stay bound until the object is freed."},
    {"prepare_set", ctx_prepare_set, METH_VARARGS,
     "prepare_set(set, srcs, dsts, preserve_src) -> Prepared (run, free): "
     "redist_plan_set_prepare on the context's endpoint (collective); "
     "srcs and dsts are lists in the set's order."},
    {"_endpoint", ctx_endpoint, METH_NOARGS,
     "_endpoint() -> capsule: the context's endpoint, for planning a set "
     "for it (PlanSet(..., executor=))."},
    {"free", ctx_free, METH_NOARGS,
     "free(): redist_shmem_free (collective; its prepared objects first)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ctx_getset[] = {
    {"pe", ctx_get_pe, NULL, "This PE (= mesh device).", NULL},
    {"npes", ctx_get_npes, NULL, "The number of PEs.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_ShmemContextType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.ShmemContext",
    .tp_basicsize = sizeof(rpy_shctx),
    .tp_dealloc = ctx_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A redist_shmem_t over all PEs (base of redist.shmem.Executor).",
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
    .tp_init = ctx_init,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef functions[] = {
    {"shmem_start", sh_start, METH_VARARGS,
     "shmem_start(thread_multiple=True) -> (pe, npes): shmem_init_thread "
     "once per process (under oshrun)."},
    {"shmem_stop", sh_stop, METH_NOARGS,
     "shmem_stop(): shmem_finalize (collective), once; nothing can run "
     "afterwards."},
    {NULL, NULL, 0, NULL}};

int rpy_shmem_init(PyObject *m)
{
    if (PyType_Ready(&rpy_ShmemContextType) < 0 ||
        PyModule_AddObjectRef(m, "ShmemContext",
                              (PyObject *)&rpy_ShmemContextType) < 0)
        return -1;
    return PyModule_AddFunctions(m, functions);
}
