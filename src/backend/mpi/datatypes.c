/*
 * COUNTS.  Every message is described as one derived datatype of bytes
 * built from counts of at most `limit` (INT_MAX; tests lower it): a
 * longer run is a vector of limit-sized blocks plus a remainder (a
 * struct), recursively, so any 64-bit size is one MPI call with count 1.
 * The blocks of a collective are resized to their slot's extent
 * (rd_mpi_dt_blocks), so one datatype places member k's block at slot k;
 * the boxes of an exchange step are nested hvectors of their rows
 * (rd_mpi_dt_box).  Cost: O(log_limit size) datatype constructors per
 * call; memory: MPI's descriptors only.
 */
#include <limits.h>

#include "mpi_impl.h"

void rd_mpi_dt_free(MPI_Datatype *t)
{
    if (*t != MPI_DATATYPE_NULL)
        MPI_Type_free(t);
    *t = MPI_DATATYPE_NULL;
}

/* n copies of t (extent text), copy k at byte k * stride; n may exceed
 * `lim`: then limit-sized vectors of vectors plus a remainder. */
static int t_rep(uint64_t lim, uint64_t n, MPI_Aint stride, MPI_Datatype t,
                 MPI_Aint text, MPI_Datatype *out)
{
    *out = MPI_DATATYPE_NULL;
    if (lim < 2) /* the recursion below needs q < n */
        lim = 2;
    if (n <= lim)
        return stride == text
                   ? MPI_Type_contiguous((int)n, t, out)
                   : MPI_Type_create_hvector((int)n, 1, stride, t, out);
    uint64_t q = n / lim, r = n % lim;
    MPI_Datatype blk = MPI_DATATYPE_NULL, outer = MPI_DATATYPE_NULL,
                 rem = MPI_DATATYPE_NULL;
    MPI_Aint bstride = stride * (MPI_Aint)lim;
    int rc = t_rep(lim, lim, stride, t, text, &blk);
    if (rc == MPI_SUCCESS)
        rc = t_rep(lim, q, bstride, blk, (MPI_Aint)(lim - 1) * stride + text,
                   &outer);
    if (rc == MPI_SUCCESS && r) {
        rc = t_rep(lim, r, stride, t, text, &rem);
        if (rc == MPI_SUCCESS) {
            int bl[2] = {1, 1};
            MPI_Aint disp[2] = {0, bstride * (MPI_Aint)q};
            MPI_Datatype ts[2] = {outer, rem};
            rc = MPI_Type_create_struct(2, bl, disp, ts, out);
        }
    } else if (rc == MPI_SUCCESS) {
        *out = outer;
        outer = MPI_DATATYPE_NULL;
    }
    rd_mpi_dt_free(&blk);
    rd_mpi_dt_free(&outer);
    rd_mpi_dt_free(&rem);
    return rc;
}

/* n contiguous bytes, committed. */
int rd_mpi_dt_bytes(uint64_t lim, uint64_t n, MPI_Datatype *out)
{
    int rc = t_rep(lim, n, 1, MPI_BYTE, 1, out);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(out);
    if (rc != MPI_SUCCESS)
        rd_mpi_dt_free(out);
    return rc;
}

/* `rows` runs of `row` bytes, `stride` bytes apart, with extent `extent`
 * (so that in a collective, member k's block starts at k * extent);
 * committed. */
int rd_mpi_dt_blocks(uint64_t lim, uint64_t rows, uint64_t row,
                     uint64_t stride, uint64_t extent, MPI_Datatype *out)
{
    if (rows == 1 && row == extent)
        return rd_mpi_dt_bytes(lim, row, out);
    MPI_Datatype r = MPI_DATATYPE_NULL, v = MPI_DATATYPE_NULL;
    *out = MPI_DATATYPE_NULL;
    int rc = t_rep(lim, row, 1, MPI_BYTE, 1, &r);
    if (rc == MPI_SUCCESS)
        rc = t_rep(lim, rows, (MPI_Aint)stride, r, (MPI_Aint)row, &v);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_create_resized(v, 0, (MPI_Aint)extent, out);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(out);
    if (rc != MPI_SUCCESS)
        rd_mpi_dt_free(out);
    rd_mpi_dt_free(&r);
    rd_mpi_dt_free(&v);
    return rc;
}

int rd_mpi_type_bytes(uint64_t limit, uint64_t n, MPI_Datatype *out)
{
    return rd_mpi_dt_bytes(limit ? limit : INT_MAX, n, out);
}

int rd_mpi_type_blocks(uint64_t limit, uint64_t rows, uint64_t row_bytes,
                       uint64_t stride, uint64_t extent, MPI_Datatype *out)
{
    return rd_mpi_dt_blocks(limit ? limit : INT_MAX, rows, row_bytes, stride,
                            extent, out);
}

uint64_t rd_mpi_prod(const int64_t *shape, int lo, int hi)
{
    uint64_t p = 1;
    for (int d = lo; d < hi; d++)
        p *= (uint64_t)shape[d];
    return p;
}

/* The box `box` (elements) at the start of a row-major block of shape
 * `shape`: nested (h)vectors of its rows; committed. */
int rd_mpi_dt_box(uint64_t lim, int nd, const int64_t shape[],
                  const int64_t box[], size_t elem, MPI_Datatype *out)
{
    MPI_Datatype cur = MPI_DATATYPE_NULL;
    *out = MPI_DATATYPE_NULL;
    if (nd == 0) /* a 0-dim block: one element */
        return rd_mpi_dt_bytes(lim, elem, out);
    uint64_t run = (uint64_t)box[nd - 1] * elem;
    int rc = t_rep(lim, run, 1, MPI_BYTE, 1, &cur);
    MPI_Aint ext = (MPI_Aint)run, stride = (MPI_Aint)((uint64_t)shape[nd - 1] *
                                                     elem);
    for (int d = nd - 2; d >= 0 && rc == MPI_SUCCESS; d--) {
        MPI_Datatype next = MPI_DATATYPE_NULL;
        rc = t_rep(lim, (uint64_t)box[d], stride, cur, ext, &next);
        rd_mpi_dt_free(&cur);
        cur = next;
        ext = (MPI_Aint)(box[d] - 1) * stride + ext;
        stride *= (MPI_Aint)shape[d];
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&cur);
    if (rc != MPI_SUCCESS)
        rd_mpi_dt_free(&cur);
    else
        *out = cur;
    return rc;
}

uint64_t rd_mpi_box_offset(int nd, const int64_t shape[], const int64_t off[],
                           size_t elem)
{
    uint64_t o = 0;
    for (int d = 0; d < nd; d++)
        o = o * (uint64_t)shape[d] + (uint64_t)off[d];
    return o * elem;
}
