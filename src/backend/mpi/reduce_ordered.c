/*
 * Reductions in member order (the default), bit-identical to the sim:
 *   reduce_scatter  rounds of MPI_Alltoall: member k receives, from every
 *                   member, the next `per` elements of chunk k, into a
 *                   work buffer of s * per elements, and reduces them in
 *                   member order with rd_reduce_n straight into its
 *                   output.  ~ rounds * alpha s + beta (s-1)/s L.
 *                   Work: s * per elements, per >= 1 (work.c).
 *   all_reduce      the same reduce-scatter on s equal parts of the
 *                   array, then an in-place MPI_Allgather of the parts;
 *                   the count % s trailing elements are all-gathered and
 *                   reduced by everyone first.  The work space of the
 *                   rounds is the part of the output that is not yet
 *                   written when it is large enough (s/2 parts), so
 *                   usually no memory at all.
 *                   ~ alpha (rounds + 1) s + beta 2 (s-1)/s L.
 * With less than s elements of work space both stream instead
 * (reduce_stream.c).  In place (out == in), the output of row p lands on
 * input already sent.
 */
#include "mpi_impl.h"
#include "../../core/internal.h"
#include "../../exec/kernels.h"

typedef struct strided_in {
    const char *base;
    uint64_t stride;
} strided_in;

static const void *strided_input(void *u, int64_t m)
{
    strided_in *si = u;
    return si->base + (uint64_t)m * si->stride;
}

/* The reduction over a group of one: the kernel's, not a memcpy (f16 and
 * bf16 go through f32 as in the sim: a signalling NaN comes out quiet). */
void rd_mpi_reduce_one(redist_dtype_t dtype, redist_reduce_t op, void *out,
                       const void *in, uint64_t count)
{
    strided_in si = {in, 0};
    rd_reduce_n(dtype, op, out, count, 1, strided_input, &si);
}

/* Exchanges of an ordered reduce-scatter of [pre][s][chunk] elements with
 * `per` elements per member per round. */
int64_t rd_mpi_rs_rounds(uint64_t pre, uint64_t chunk, uint64_t per)
{
    if (pre == 0 || chunk == 0)
        return 0;
    if (per >= chunk)
        return (int64_t)rd_div_up(pre, per / chunk);
    return (int64_t)(pre * rd_div_up(chunk, per));
}

/* One round: member k sends `rows` runs of `bytes` from in + k * cb (runs
 * `rowstride` apart); the s contributions land in work and are reduced,
 * in member order, to out (rows * bytes contiguous bytes).  `st`/`rt`
 * cache the datatypes of the last round shape. */
typedef struct rs_types {
    uint64_t rows, bytes;
    MPI_Datatype st, rt;
} rs_types;

static redist_status_t rs_round(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                const char *in, char *out, uint64_t rows,
                                uint64_t bytes, uint64_t rowstride,
                                uint64_t cb, char *work, size_t elem,
                                redist_dtype_t dtype, redist_reduce_t op,
                                rs_types *tc, redist_error_t *err)
{
    int rc = MPI_SUCCESS;
    if (tc->st == MPI_DATATYPE_NULL || tc->rows != rows ||
        tc->bytes != bytes) {
        rd_mpi_dt_free(&tc->st);
        rd_mpi_dt_free(&tc->rt);
        rc = rd_mpi_dt_blocks(x->limit, rows, bytes, rowstride, cb, &tc->st);
        if (rc == MPI_SUCCESS)
            rc = rd_mpi_dt_bytes(x->limit, rows * bytes, &tc->rt);
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "building a datatype");
        tc->rows = rows;
        tc->bytes = bytes;
    }
    rc = MPI_Alltoall(in, 1, tc->st, work, 1, tc->rt, comm);
    x->exchanges++;
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Alltoall (reduce_scatter)");
    strided_in si = {work, rows * bytes};
    rd_reduce_n(dtype, op, out, rows * bytes / elem, s, strided_input, &si);
    return REDIST_OK;
}

/* Ordered reduce-scatter: in is [pre][s][chunk] elements, member k gets
 * [pre][k][chunk] reduced over the members in member order, into out
 * ([pre][chunk]).  work holds s * per elements (per >= 1). */
static redist_status_t rs_ordered(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                  const char *in, char *out, uint64_t pre,
                                  uint64_t chunk, size_t elem,
                                  redist_dtype_t dtype, redist_reduce_t op,
                                  char *work, uint64_t per,
                                  redist_error_t *err)
{
    uint64_t cb = chunk * elem, rowstride = (uint64_t)s * cb;
    rs_types tc = {0, 0, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    redist_status_t st = REDIST_OK;
    if (per >= chunk) {
        uint64_t R = per / chunk;
        for (uint64_t p0 = 0; p0 < pre && !st; p0 += R) {
            uint64_t n = pre - p0 < R ? pre - p0 : R;
            st = rs_round(x, comm, s, in + p0 * rowstride, out + p0 * cb, n,
                          cb, rowstride, cb, work, elem, dtype, op, &tc, err);
        }
    } else {
        for (uint64_t p = 0; p < pre && !st; p++)
            for (uint64_t c0 = 0; c0 < chunk && !st; c0 += per) {
                uint64_t n = chunk - c0 < per ? chunk - c0 : per;
                st = rs_round(x, comm, s, in + p * rowstride + c0 * elem,
                              out + p * cb + c0 * elem, 1, n * elem,
                              rowstride, cb, work, elem, dtype, op, &tc, err);
            }
    }
    rd_mpi_dt_free(&tc.st);
    rd_mpi_dt_free(&tc.rt);
    return st;
}

/* Work (bytes) an ordered all-reduce of `count` elements over s members
 * needs besides its output: the trailing count % s elements when the
 * output cannot hold their s copies, and one element per member when the
 * free half of the output cannot hold a round. */
static uint64_t ar_free_elems(uint64_t s, uint64_t q) { return s / 2 * q; }

uint64_t rd_mpi_ar_min_work(uint64_t s, uint64_t count, size_t elem)
{
    if (s <= 1)
        return 0;
    uint64_t q = count / s, r = count % s, w = 0;
    if (r && q < r)
        w = s * r * elem;
    if (q && ar_free_elems(s, q) < s && w < s * elem)
        w = s * elem;
    return w;
}

/* Rounds of the ordered all-reduce with a work buffer of `work` bytes
 * (in place, the output has no free half to use). */
int64_t rd_mpi_ar_exchanges(uint64_t s, uint64_t count, size_t elem,
                            uint64_t work, int inplace)
{
    if (s <= 1)
        return 1;
    uint64_t q = count / s, r = count % s;
    int64_t n = r ? 1 : 0;
    if (q) {
        uint64_t per_out = inplace ? 0 : ar_free_elems(s, q) / s;
        uint64_t per_work = work / (s * elem);
        uint64_t per = per_out >= 1 && per_out >= per_work ? per_out
                                                           : per_work;
        n += rd_mpi_rs_rounds(1, q, per) + 1;
    }
    return n;
}

/* The work the ordered all-reduce needs (`good`) in place. */
uint64_t rd_mpi_ar_inplace_work(uint64_t s, uint64_t count, size_t elem)
{
    uint64_t q = count / s, r = count % s, w = q ? s * elem : 0;
    if (r && s * r * elem > w)
        w = s * r * elem;
    return w;
}

/* The most work (`good`) and the most useful work (`want`) the ordered
 * all-reduce of any count from 0 to `count` needs, in place or not
 * (uneven plans: every group reduces its own count).  Neither
 * rd_mpi_ar_min_work nor rd_mpi_ar_inplace_work is monotone in the count:
 * a count below s needs s * count elements (all of it is the tail), a
 * larger one may need none.  The maximum is at min(count, s - 1). */
void rd_mpi_ar_need_upto(uint64_t s, uint64_t count, size_t elem,
                         uint64_t *good, uint64_t *want)
{
    *good = *want = 0;
    if (s <= 1 || count == 0)
        return;
    uint64_t tail = count < s - 1 ? count : s - 1, q = count / s;
    *good = s * tail * elem;
    *want = s * (q > tail ? q : tail) * elem;
}

redist_status_t rd_mpi_ar_ordered(redist_mpi_t *x, MPI_Comm comm, int64_t s,
                                  int64_t idx, const char *in, char *out,
                                  uint64_t count, size_t elem,
                                  redist_dtype_t dtype, redist_reduce_t op,
                                  redist_error_t *err)
{
    uint64_t us = (uint64_t)s, q = count / us, r = count % us;
    int inplace = (const char *)out == in;
    redist_status_t st = REDIST_OK;
    work_ref w;
    int rc;
    /* the work buffer, if this all-reduce needs one; in place, the output
     * holds unsent input and cannot serve */
    uint64_t min = inplace ? rd_mpi_ar_inplace_work(us, count, elem)
                           : rd_mpi_ar_min_work(us, count, elem);
    st = rd_mpi_work_get(x, min, min ? elem : 0,
                         min ? us * (q > r ? q : r) * elem : 0, &w, err);
    if (st)
        return st;
    if (w.bytes < min) {
        st = rd_mpi_ar_stream(x, comm, s, idx, in, out, count, elem, dtype, op,
                              w.p, w.bytes / elem, err);
        rd_mpi_work_put(x, &w);
        return st;
    }
    if (r) { /* the tail: everybody reduces all of it */
        char *region = q >= r && !inplace ? out : w.p;
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = rd_mpi_dt_bytes(x->limit, r * elem, &t);
        if (rc == MPI_SUCCESS)
            rc = rd_mpi_allgather(x, comm, s, idx, in + us * q * elem, t,
                                  region, t, r * elem, r * elem);
        rd_mpi_dt_free(&t);
        if (rc != MPI_SUCCESS) {
            rd_mpi_work_put(x, &w);
            return rd_mpi_fail(err, rc, "MPI_Allgather (all_reduce)");
        }
        strided_in si = {region, r * elem};
        rd_reduce_n(dtype, op, out + us * q * elem, r, s, strided_input, &si);
    }
    if (q) {
        uint64_t per_out = inplace ? 0 : ar_free_elems(us, q) / us;
        uint64_t per_work = w.bytes / (us * elem);
        char *region;
        uint64_t per;
        if (per_out >= 1 && per_out >= per_work) {
            /* the larger unwritten part of the output, before or after
             * this member's part (tail excluded) */
            uint64_t before = (uint64_t)idx * q;
            uint64_t after = (us - 1 - (uint64_t)idx) * q;
            region = before >= after ? out : out + ((uint64_t)idx + 1) * q *
                                                       elem;
            per = per_out;
        } else {
            region = w.p;
            per = per_work;
        }
        /* in place, this member's part of the output is its own chunk of
         * the input, whose pieces are sent before they are overwritten */
        st = rs_ordered(x, comm, s, in, out + (uint64_t)idx * q * elem, 1, q,
                        elem, dtype, op, region, per, err);
        if (!st) {
            MPI_Datatype t = MPI_DATATYPE_NULL;
            rc = rd_mpi_dt_bytes(x->limit, q * elem, &t);
            if (rc == MPI_SUCCESS)
                rc = rd_mpi_allgather(x, comm, s, idx, NULL, MPI_DATATYPE_NULL,
                                      out, t, q * elem, q * elem);
            rd_mpi_dt_free(&t);
            if (rc != MPI_SUCCESS)
                st = rd_mpi_fail(err, rc, "MPI_Allgather (all_reduce)");
        }
    }
    rd_mpi_work_put(x, &w);
    return st;
}

/* Reduce-scatter of pre rows of s chunks: ordered with s elements of
 * work or more, else streamed.  In place (out == in) the output of row p
 * lands on input already sent: rows before p, or chunk 0 of row 0. */
redist_status_t rd_mpi_rs_with_work(redist_mpi_t *x, MPI_Comm c, int64_t s,
                                    int64_t idx, const char *in, char *out,
                                    uint64_t pre, uint64_t chunk, size_t elem,
                                    redist_dtype_t dtype, redist_reduce_t op,
                                    redist_error_t *err)
{
    work_ref w;
    uint64_t us = (uint64_t)s;
    redist_status_t st =
        rd_mpi_work_get(x, us * elem, elem, us * pre * chunk * elem, &w, err);
    if (st)
        return st;
    if (w.bytes >= us * elem)
        st = rs_ordered(x, c, s, in, out, pre, chunk, elem, dtype, op, w.p,
                        w.bytes / (us * elem), err);
    else
        st = rd_mpi_rs_stream(x, c, s, idx, in, out, pre, chunk, elem, dtype,
                              op, w.p, w.bytes / elem, err);
    rd_mpi_work_put(x, &w);
    return st;
}
