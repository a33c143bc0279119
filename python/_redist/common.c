/*
 * redist._redist: small pieces every object type shares (rpy.h): the
 * context-manager methods of objects with free(), the `report` argument
 * and outcome of a run, tables printed into a str, and unwrapping a
 * Spec / Plan / set object.
 */
#include "rpy.h"

#include <stdlib.h>

void *rpy_unwrap(PyObject *o, PyTypeObject *type, const char *what)
{
    if (!o || !PyObject_TypeCheck(o, type)) {
        PyErr_Format(PyExc_TypeError, "expected a %s, not %s", what,
                     o ? Py_TYPE(o)->tp_name : "NULL");
        return NULL;
    }
    void *p = ((rpy_obj *)o)->ptr;
    if (!p)
        PyErr_Format(PyExc_ValueError, "the %s is not initialised", what);
    return p;
}

PyObject *rpy_self(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

PyObject *rpy_exit_free(PyObject *self, PyObject *args)
{
    (void)args;
    PyObject *r = PyObject_CallMethod(self, "free", NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

int rpy_report_arg(PyObject *args, PyObject *kw, int *want_report)
{
    static char *kwlist[] = {"report", NULL};
    *want_report = 0;
    return PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, want_report)
               ? 0
               : -1;
}

PyObject *rpy_run_outcome(redist_status_t st, const redist_exec_report_t *rep,
                          const redist_error_t *err, int want_report)
{
    if (st != REDIST_OK)
        return rpy_raise(rpy_ExecError, st, err);
    if (want_report)
        return rpy_report_dict(rep);
    Py_RETURN_NONE;
}

FILE *rpy_mem_open(rpy_mem *m)
{
    m->buf = NULL;
    m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    if (!m->f)
        PyErr_NoMemory();
    return m->f;
}

PyObject *rpy_mem_close(rpy_mem *m, redist_status_t st)
{
    if (fclose(m->f) != 0 || !m->buf) {
        free(m->buf);
        return PyErr_NoMemory();
    }
    PyObject *r = st == REDIST_OK
                      ? PyUnicode_DecodeUTF8(m->buf, (Py_ssize_t)m->len, "replace")
                      : rpy_raise(rpy_PlanError, st, NULL);
    free(m->buf);
    return r;
}
