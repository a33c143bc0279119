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
 * (blocks.c), and passed on as they are: the backend decides in each
 * call whether every PE's are symmetric (BUFFERS in shmem.h).  Private
 * ones go through its symmetric scratch; SymmetricBuffer (below, the
 * memory of redist.shmem.empty) gives arrays in the symmetric heap, which
 * it puts straight into.  A PE whose arrays fail the checks still enters the C call
 * with no plan (or set), so that every PE fails together; a PE outside a
 * two-mesh side's mesh passes None for the block it does not hold.  The
 * GIL is released while data moves.  After shmem_stop no context or
 * prepared object may run: their deallocation then frees nothing (the
 * heap is gone).
 *
 * One file of about 900 lines: start / stop, the contexts and the
 * symmetric buffers share the process's OpenSHMEM state (started,
 * stopped, the live and released buffers that stop keeps and collect
 * frees), which no other file may touch.
 */
#include "rpy.h"

#include "redist/shmem.h"

#include <errno.h>
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int started, stopped;

static Py_ssize_t keep_live(void), restore_live(void);
static void forget_released(void);

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

/* shmem_stop() -> int: shmem_finalize (collective), once; the live
 * symmetric buffers stay usable as private memory (keep_live); returns
 * the number of buffers that could not be kept (0 normally). */
static PyObject *sh_stop(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_ssize_t lost = 0;
    if (started && !stopped) {
        stopped = 1;
        lost = keep_live();
        Py_BEGIN_ALLOW_THREADS
        shmem_finalize();
        Py_END_ALLOW_THREADS
        lost += restore_live();
        forget_released();
    }
    return PyLong_FromSsize_t(lost);
}

/* ------------------------------------------- symmetric buffers */

/* SymmetricBuffer: `len` bytes at `p`, from redist_shmem_malloc_all
 * (collective; `cap` >= len bytes on every PE, the same objects), exported
 * writable through the buffer protocol (the NumPy arrays of
 * redist.shmem.empty are views of it).  The last reference's going
 * queues it for shmem_free (`released`).  Live buffers are listed, so
 * that shmem_stop can keep their memory (keep_live, restore_live). */
typedef struct rpy_symbuf {
    PyObject_HEAD
    void *p;
    Py_ssize_t len, cap;
    int kept;   /* outlived shmem_finalize: private pages, never freed */
    void *copy; /* its contents during shmem_finalize */
    struct rpy_symbuf *prev, *next;
} rpy_symbuf;

static rpy_symbuf *live_bufs;
static Py_ssize_t nlive_bufs;

/* Released buffers, not yet given back: shmem_free is collective, and
 * Python drops the last reference at different times on different PEs
 * (the cycle collector), so a release only queues the address; the
 * allocations give back, in one agreed order, what every PE released
 * (shmem_free_released). */
static void **released;
static Py_ssize_t nreleased, released_cap;

/* Queue p; if the queue cannot grow the memory stays taken (on this PE
 * only: the others never see it released, so nothing frees it). */
static void release(void *p)
{
    if (nreleased == released_cap) {
        Py_ssize_t cap = released_cap ? 2 * released_cap : 16;
        void **q = PyMem_RawRealloc(released, (size_t)cap * sizeof *q);
        if (q) {
            released = q;
            released_cap = cap;
        }
    }
    if (nreleased < released_cap)
        released[nreleased++] = p;
}

/* After shmem_finalize: the released memory went with the heap. */
static void forget_released(void)
{
    PyMem_RawFree(released);
    released = NULL;
    nreleased = released_cap = 0;
}

static void symbuf_dealloc(PyObject *self_obj)
{
    rpy_symbuf *self = (rpy_symbuf *)self_obj;
    if (self->p) {
        if (self->prev)
            self->prev->next = self->next;
        else
            live_bufs = self->next;
        if (self->next)
            self->next->prev = self->prev;
        nlive_bufs--;
        void *p = self->p;
        self->p = NULL;
        /* a kept buffer's pages may be shared with another's: left
         * mapped until the process exits.  Otherwise queued. */
        if (!self->kept && started && !stopped)
            release(p);
    }
    PyMem_RawFree(self->copy);
    Py_TYPE(self_obj)->tp_free(self_obj);
}

static int symbuf_getbuffer(PyObject *self_obj, Py_buffer *view, int flags)
{
    rpy_symbuf *self = (rpy_symbuf *)self_obj;
    return PyBuffer_FillInfo(view, self_obj, self->p, self->len, 0, flags);
}

static PyBufferProcs symbuf_as_buffer = {symbuf_getbuffer, NULL};

static PyObject *symbuf_get_symmetric(PyObject *self, void *closure)
{
    (void)closure;
    rpy_symbuf *b = (rpy_symbuf *)self;
    return PyBool_FromLong(b->p && !b->kept && started && !stopped);
}

static PyObject *symbuf_get_nbytes(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(((rpy_symbuf *)self)->len);
}

static PyGetSetDef symbuf_getset[] = {
    {"symmetric", symbuf_get_symmetric, NULL,
     "Whether the memory is (still) in the symmetric heap: False after "
     "redist.shmem.stop().", NULL},
    {"nbytes", symbuf_get_nbytes, NULL, "This PE's bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject rpy_SymbufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "redist._redist.SymmetricBuffer",
    .tp_basicsize = sizeof(rpy_symbuf),
    .tp_dealloc = symbuf_dealloc,
    .tp_as_buffer = &symbuf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes of the OpenSHMEM symmetric heap (the base of the "
              "arrays of redist.shmem.empty); released when the last "
              "reference goes, given back (shmem_free) by a later "
              "allocation once every PE released it.",
    .tp_getset = symbuf_getset,
};

/* shmem_finalize unmaps the symmetric heap (Open MPI 4.1), but NumPy
 * arrays keep the buffers' addresses.  keep_live (before it) copies each
 * live buffer aside; restore_live (after it) maps private anonymous
 * pages wherever the buffers' pages were unmapped and copies the
 * contents back, so the arrays stay readable and writable, as ordinary
 * memory that is never freed (it may share pages with another buffer).
 * A buffer whose copy or pages cannot be had is left as it is, its
 * memory unusable; the error is counted (shmem_stop's result). */
static Py_ssize_t keep_live(void)
{
    Py_ssize_t failed = 0;
    for (rpy_symbuf *b = live_bufs; b; b = b->next) {
        b->copy = PyMem_RawMalloc(b->len ? (size_t)b->len : 1);
        if (b->copy)
            memcpy(b->copy, b->p, (size_t)b->len);
        else
            failed++;
    }
    return failed;
}

/* Map private pages over the unmapped pages of [lo, hi): 0 or -1. */
static int map_unmapped(uintptr_t lo, uintptr_t hi, uintptr_t pg)
{
    unsigned char in;
    for (uintptr_t a = lo; a < hi;) {
        if (mincore((void *)a, pg, &in) == 0 || errno != ENOMEM) {
            a += pg; /* mapped (another buffer's pages, restored) */
            continue;
        }
        uintptr_t e = a + pg;
        while (e < hi && mincore((void *)e, pg, &in) != 0 && errno == ENOMEM)
            e += pg;
        void *m = mmap((void *)a, e - a, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                       0);
        if (m == MAP_FAILED)
            return -1;
        if (m != (void *)a) { /* a kernel that ignores the flag */
            munmap(m, e - a);
            return -1;
        }
        a = e;
    }
    return 0;
}

static Py_ssize_t restore_live(void)
{
    Py_ssize_t failed = 0;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (rpy_symbuf *b = live_bufs; b; b = b->next) {
        b->kept = 1;
        if (!b->copy)
            continue;
        uintptr_t lo = (uintptr_t)b->p & ~(pg - 1),
                  hi = ((uintptr_t)b->p + (uintptr_t)(b->cap ? b->cap : 1) +
                        pg - 1) & ~(pg - 1);
        if (map_unmapped(lo, hi, pg) == 0)
            memcpy(b->p, b->copy, (size_t)b->len);
        else
            failed++;
        PyMem_RawFree(b->copy);
        b->copy = NULL;
    }
    return failed;
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

static redist_status_t sh_start_meshes(void *p, redist_error_t *err)
{
    return redist_shmem_start_meshes(p, err);
}

static redist_status_t sh_test_meshes(void *p, int *done,
                                      redist_error_t *err)
{
    return redist_shmem_test_meshes(p, done, err);
}

static redist_status_t sh_wait_meshes(void *p, redist_exec_report_t *rep,
                                      redist_error_t *err)
{
    return redist_shmem_wait_meshes(p, rep, err);
}

static int sh_async_meshes(void *p)
{
    return redist_shmem_meshes_async(p);
}

static void sh_free_meshes(void *p)
{
    if (started && !stopped)
        redist_shmem_meshes_free(p);
}

static const rpy_prep_ops meshes_ops = {"two-mesh plans", sh_run_meshes,
                                        sh_start_meshes, sh_test_meshes,
                                        sh_wait_meshes, sh_async_meshes,
                                        sh_free_meshes, running, NULL};

static void sh_free_set(void *p)
{
    if (started && !stopped)
        redist_set_prepared_free(p);
}

static const rpy_prep_ops set_ops = {"plan sets", rpy_set_run,
                                     rpy_set_start, rpy_set_test,
                                     rpy_set_wait, rpy_set_async,
                                     sh_free_set, running, rpy_set_report};

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

/* _malloc_all(total, length) -> SymmetricBuffer: redist_shmem_malloc_all
 * of `total` bytes (the same on every PE, >= 1; collective, all or
 * none), of which this PE exports `length` (0 <= length <= total).
 * MemoryError on every PE when one PE's heap has no room. */
static PyObject *ctx_malloc_all(PyObject *self, PyObject *args)
{
    Py_ssize_t total, length;
    if (!PyArg_ParseTuple(args, "nn", &total, &length))
        return NULL;
    redist_shmem_t *ctx = ctx_of((rpy_shctx *)self);
    if (!ctx)
        return NULL;
    /* the same total everywhere (agreed by the caller): a bad one fails
     * on every PE before any collective */
    if (total < 1 || length < 0 || length > total) {
        PyErr_Format(PyExc_ValueError, "_malloc_all(%zd, %zd): need "
                     "0 <= length <= total, total >= 1", total, length);
        return NULL;
    }
    rpy_symbuf *b = PyObject_New(rpy_symbuf, &rpy_SymbufType);
    int mine = 0;
    void *p = NULL;
    /* enter the collective even without the object, so that every PE
     * fails together */
    Py_BEGIN_ALLOW_THREADS
    p = redist_shmem_malloc_all(ctx, (size_t)total, &mine);
    Py_END_ALLOW_THREADS
    if (!b) {
        /* MemoryError here alone (shmem_free would be collective): the
         * memory counts as released, and is given back once the other
         * PEs release theirs */
        if (p)
            release(p);
        return NULL;
    }
    b->p = p;
    b->len = length;
    b->cap = total;
    b->kept = 0;
    b->copy = NULL;
    b->prev = b->next = NULL;
    if (!p) {
        Py_DECREF(b);
        return PyErr_Format(PyExc_MemoryError, "redist.shmem: %s symmetric "
                            "heap has no room for %zd bytes (Open MPI: "
                            "SHMEM_SYMMETRIC_SIZE)",
                            mine ? "this PE's" : "another PE's", total);
    }
    b->next = live_bufs;
    if (live_bufs)
        live_bufs->prev = b;
    live_bufs = b;
    nlive_bufs++;
    return (PyObject *)b;
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
    {"_malloc_all", ctx_malloc_all, METH_VARARGS,
     "_malloc_all(total, length) -> SymmetricBuffer: redist_shmem_malloc_all "
     "(collective, all or none; total the same on every PE)."},
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

/* shmem_fail(pe, text): raise ExecError (ERR_INVALID) "PE pe failed:
 * text", this PE's part in a failure that PE found in Python. */
static PyObject *sh_fail(PyObject *self, PyObject *args)
{
    (void)self;
    int pe;
    const char *text;
    if (!PyArg_ParseTuple(args, "is", &pe, &text))
        return NULL;
    redist_error_t err;
    redist_error_clear(&err);
    err.status = REDIST_ERR_INVALID;
    snprintf(err.text, sizeof err.text, "PE %d failed: %s", pe, text);
    return rpy_raise(rpy_ExecError, REDIST_ERR_INVALID, &err);
}

/* shmem_is_symmetric(obj) -> bool: whether obj is one contiguous buffer
 * in the symmetric heap on this PE (shmem_addr_accessible from the next
 * PE; local).  False when OpenSHMEM is not running. */
static PyObject *sh_is_symmetric(PyObject *self, PyObject *obj)
{
    (void)self;
    if (!started || stopped)
        Py_RETURN_FALSE;
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_BufferError) &&
            !PyErr_ExceptionMatches(PyExc_TypeError) &&
            !PyErr_ExceptionMatches(PyExc_ValueError))
            return NULL;
        PyErr_Clear(); /* not one contiguous buffer: not usable as one */
        Py_RETURN_FALSE;
    }
    int pe = (shmem_my_pe() + 1) % shmem_n_pes();
    const char *p = v.buf;
    int sym = p && shmem_addr_accessible(p, pe) &&
              (v.len == 0 || shmem_addr_accessible(p + v.len - 1, pe));
    PyBuffer_Release(&v);
    return PyBool_FromLong(sym);
}

/* shmem_released() -> list of int: the addresses of the buffers this
 * PE released and has not given back. */
static PyObject *sh_released(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *l = PyList_New(nreleased);
    for (Py_ssize_t i = 0; l && i < nreleased; i++) {
        PyObject *v = PyLong_FromVoidPtr(released[i]);
        if (!v) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, v);
    }
    return l;
}

/* shmem_free_released(addrs): shmem_free each address, in that order,
 * and drop it from the queue (collective: every PE passes the same list,
 * of addresses every PE released).  ValueError, before any free, for an
 * address this PE has not released. */
static PyObject *sh_free_released(PyObject *self, PyObject *seq)
{
    (void)self;
    if (!running())
        return NULL;
    PyObject *f = PySequence_Fast(seq, "a list of addresses is needed");
    if (!f)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    void **ps = PyMem_Calloc((size_t)(n ? n : 1), sizeof *ps);
    if (!ps) {
        Py_DECREF(f);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        ps[i] = PyLong_AsVoidPtr(PySequence_Fast_GET_ITEM(f, i));
        Py_ssize_t k = 0;
        while (k < nreleased && released[k] != ps[i])
            k++;
        if (PyErr_Occurred() || k == nreleased) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError,
                                "an address this PE has not released");
            Py_DECREF(f);
            PyMem_Free(ps);
            return NULL;
        }
    }
    Py_DECREF(f);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t k = 0;
        while (k < nreleased && released[k] != ps[i])
            k++;
        if (k < nreleased)
            released[k] = released[--nreleased];
        Py_BEGIN_ALLOW_THREADS
        shmem_free(ps[i]);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(ps);
    Py_RETURN_NONE;
}

/* shmem_pes() -> (pe, npes); ExecError unless OpenSHMEM is running. */
static PyObject *sh_pes(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (!running())
        return NULL;
    return Py_BuildValue("(ii)", shmem_my_pe(), shmem_n_pes());
}

/* shmem_live() -> int: the number of live symmetric buffers. */
static PyObject *sh_live(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromSsize_t(nlive_bufs);
}

static PyMethodDef functions[] = {
    {"shmem_fail", sh_fail, METH_VARARGS,
     "shmem_fail(pe, text): raise ExecError 'PE pe failed: text'."},
    {"shmem_is_symmetric", sh_is_symmetric, METH_O,
     "shmem_is_symmetric(obj) -> bool: obj's buffer is in the symmetric "
     "heap (local)."},
    {"shmem_released", sh_released, METH_NOARGS,
     "shmem_released() -> list: addresses released, not given back."},
    {"shmem_free_released", sh_free_released, METH_O,
     "shmem_free_released(addrs): shmem_free them in that order "
     "(collective; the same list on every PE)."},
    {"shmem_pes", sh_pes, METH_NOARGS,
     "shmem_pes() -> (pe, npes); ExecError unless OpenSHMEM runs."},
    {"shmem_live", sh_live, METH_NOARGS,
     "shmem_live() -> int: live symmetric buffers."},
    {"shmem_start", sh_start, METH_VARARGS,
     "shmem_start(thread_multiple=True) -> (pe, npes): shmem_init_thread "
     "once per process (under oshrun)."},
    {"shmem_stop", sh_stop, METH_NOARGS,
     "shmem_stop() -> int: shmem_finalize (collective), once; nothing can "
     "run afterwards.  Live symmetric buffers become private memory; the "
     "result counts those that could not be kept."},
    {NULL, NULL, 0, NULL}};

int rpy_shmem_init(PyObject *m)
{
    if (PyType_Ready(&rpy_ShmemContextType) < 0 ||
        PyType_Ready(&rpy_SymbufType) < 0 ||
        PyModule_AddObjectRef(m, "SymmetricBuffer",
                              (PyObject *)&rpy_SymbufType) < 0 ||
        PyModule_AddObjectRef(m, "ShmemContext",
                              (PyObject *)&rpy_ShmemContextType) < 0)
        return -1;
    return PyModule_AddFunctions(m, functions);
}
