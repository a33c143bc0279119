/*
 * redist._redist: this rank's arrays checked against a spec (any backend:
 * mpi.c, prepared.c, meshes.c, sets.c, shmem.c).  Each array must be
 * C-contiguous, of the spec's dtype (or raw bytes; bf16 as a 2-byte
 * integer view), exactly the block's bytes, flat or of the block's shape;
 * dst writable, src writable unless preserved; no overlap.
 */
#include "rpy.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ arrays */

/* The kind ('f' float, 'i' signed, 'u' unsigned, 'c' complex, '?' other)
 * of a struct-module format; raw byte formats give 'b'. */
static char format_kind(const char *fmt)
{
    if (!fmt)
        return 'b';
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    else if (*fmt == '>' || *fmt == '!')
        return '?'; /* big-endian data: never this machine's (x86, arm) */
    if (fmt[0] == 'Z')
        return strchr("efd", fmt[1]) && fmt[1] && !fmt[2] ? 'c' : '?';
    if (!fmt[0] || fmt[1])
        return '?';
    if (fmt[0] == 'B' || fmt[0] == 'c')
        return 'b';
    if (strchr("efd", fmt[0]))
        return 'f';
    if (strchr("bhilqn", fmt[0]))
        return 'i';
    if (strchr("HILQN", fmt[0]))
        return 'u';
    return '?';
}

static char dtype_kind(redist_dtype_t d)
{
    switch (d) {
    case REDIST_F16: case REDIST_BF16: case REDIST_F32: case REDIST_F64:
        return 'f';
    case REDIST_I8: case REDIST_I16: case REDIST_I32: case REDIST_I64:
        return 'i';
    case REDIST_U8: case REDIST_U16: case REDIST_U32: case REDIST_U64:
        return 'u';
    default:
        return 'c';
    }
}

/* Get the buffer of one block and check it against the spec; 0, or -1
 * with ValueError (or TypeError for an object without the buffer
 * protocol). */
static int get_block(PyObject *obj, const char *what, int writable,
                     const redist_spec_t *spec, const int64_t local[],
                     uint64_t bytes, Py_buffer *view)
{
    if (obj == Py_None) {
        PyErr_Format(PyExc_ValueError, "%s is None: an array of the local "
                     "block is needed", what);
        return -1;
    }
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s does not support the buffer "
                     "protocol (a NumPy array, bytearray, memoryview...)",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *s = value ? PyObject_Str(value) : NULL;
        PyErr_Format(PyExc_ValueError, "%s: a %sC-contiguous array is needed "
                     "(%s)", what, writable ? "writable " : "",
                     s ? PyUnicode_AsUTF8(s) : "no buffer");
        Py_XDECREF(s);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    redist_dtype_t dt = redist_spec_dtype(spec);
    int nd = redist_spec_ndims(spec);
    char fk = format_kind(view->format), dk = dtype_kind(dt);
    size_t dsize = redist_dtype_size(dt);
    int raw = fk == 'b' && view->itemsize == 1 && dsize != 1;
    /* f16 data is no bf16: bf16 takes 2-byte integer views or raw bytes */
    int same = raw ||
               (fk == dk && (size_t)view->itemsize == dsize &&
                dt != REDIST_BF16) ||
               (dt == REDIST_BF16 && (fk == 'u' || fk == 'i') &&
                view->itemsize == 2) ||
               (dsize == 1 && fk == 'b' && view->itemsize == 1 && dk == 'u');
    const char *msg = NULL;
    char buf[256];
    if (!same) {
        snprintf(buf, sizeof buf, "the spec's dtype is %s, the array's "
                 "format is '%s' of %zd bytes%s", redist_dtype_name(dt),
                 view->format ? view->format : "B", view->itemsize,
                 dt == REDIST_BF16 ? " (bf16: pass a uint16 view or raw bytes)"
                                   : "");
        msg = buf;
    } else if ((uint64_t)view->len != bytes) {
        snprintf(buf, sizeof buf, "%zd bytes, the local block has %llu",
                 view->len, (unsigned long long)bytes);
        msg = buf;
    } else if (view->ndim > 1 || (view->ndim == 0 && nd != 0) ||
               (raw && view->ndim != 1)) {
        int ok = !raw && view->ndim == nd;
        for (int i = 0; ok && i < nd; i++)
            ok = view->shape[i] == local[i];
        if (!ok) {
            int n = snprintf(buf, sizeof buf, "shape (");
            for (int i = 0; i < view->ndim && n < 120; i++)
                n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%zd",
                              i ? ", " : "", view->shape[i]);
            n += snprintf(buf + n, sizeof buf - (size_t)n,
                          "), expected flat or the local shape (");
            for (int i = 0; i < nd && n < 230; i++)
                n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld",
                              i ? ", " : "", (long long)local[i]);
            snprintf(buf + n, sizeof buf - (size_t)n, ")");
            msg = buf;
        }
    }
    if (msg) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: %s", what, msg);
        return -1;
    }
    return 0;
}

PyObject *rpy_report_dict(const redist_exec_report_t *r)
{
    return Py_BuildValue(
        "{sKsKsKsKsKsdsNsisN}", "scratch_bytes",
        (unsigned long long)r->scratch_bytes, "scratch_high_water",
        (unsigned long long)r->scratch_high_water, "scratch_allocations",
        (unsigned long long)r->scratch_allocations, "sent_bytes",
        (unsigned long long)r->sent_bytes, "recv_bytes",
        (unsigned long long)r->recv_bytes, "seconds", r->seconds,
        "writes_src", PyBool_FromLong(r->writes_src), "steps_done",
        r->steps_done, "failed_step",
        r->failed_step < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(r->failed_step));
}

/* Device `rank`'s block shape of side `side` (every device's the same
 * unless the dims are uneven); zeros if out of range. */
static void local_shape(const redist_spec_t *spec, int side, int64_t rank,
                        int64_t out[])
{
    int64_t lo[REDIST_MAX_DIMS], hi[REDIST_MAX_DIMS];
    int nd = redist_spec_ndims(spec);
    int bad = rpy_block_box(spec, side, rank, lo, hi);
    for (int i = 0; i < nd; i++)
        out[i] = bad ? 0 : hi[i] - lo[i];
}

int rpy_get_blocks_at(int64_t rank, const redist_spec_t *spec, PyObject *src,
                      PyObject *dst, int preserve, rpy_blocks *b)
{
    memset(b, 0, sizeof *b);
    int64_t sl[REDIST_MAX_DIMS], dl[REDIST_MAX_DIMS];
    local_shape(spec, REDIST_SIDE_FROM, rank, sl);
    local_shape(spec, REDIST_SIDE_TO, rank, dl);
    uint64_t sb = redist_spec_device_bytes(spec, REDIST_SIDE_FROM, rank),
             db = redist_spec_device_bytes(spec, REDIST_SIDE_TO, rank);
    /* an empty block (uneven dims) may be None: NULL to the library */
    if (!(sb == 0 && src == Py_None)) {
        if (get_block(src, "src", !preserve, spec, sl, sb, &b->sv) < 0)
            return -1;
        b->have_src = 1;
        b->src = b->sv.buf;
    }
    if (!(db == 0 && dst == Py_None)) {
        if (get_block(dst, "dst", 1, spec, dl, db, &b->dv) < 0) {
            rpy_release_blocks(b);
            return -1;
        }
        b->have_dst = 1;
        b->dst = b->dv.buf;
    }
    if (b->have_src && b->have_dst && b->sv.len > 0 && b->dv.len > 0) {
        const char *s = b->sv.buf, *d = b->dv.buf;
        if (s < d + b->dv.len && d < s + b->sv.len) {
            rpy_release_blocks(b);
            PyErr_SetString(PyExc_ValueError, "src and dst overlap: they "
                            "must be distinct arrays");
            return -1;
        }
    }
    return 0;
}

void rpy_release_blocks(rpy_blocks *b)
{
    if (b->have_src)
        PyBuffer_Release(&b->sv);
    if (b->have_dst)
        PyBuffer_Release(&b->dv);
    memset(b, 0, sizeof *b);
}

