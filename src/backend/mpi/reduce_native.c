/*
 * Native reductions (REDIST_MPI_NATIVE_REDUCE): MPI_Reduce_scatter_block
 * and MPI_Allreduce with predefined MPI ops where they compute the
 * kernels' function, user-defined ones on the kernels (rd_reduce_pair)
 * otherwise; MPI's algorithms, MPI's memory, MPI's order of combination
 * (redist/mpi.h, REDUCTIONS, says which results stay identical).  An
 * all_reduce of more than `limit` elements runs in chunks of `limit`; a
 * reduce_scatter of more than `limit` elements per member falls back to
 * the ordered one (MPI_Reduce_scatter_block takes an int count).
 */
#include "mpi_impl.h"
#include "../../exec/kernels.h"

#define RD_UOP(NAME, DTYPE, OP)                                              \
    static void NAME(void *in, void *io, int *len, MPI_Datatype *dt)         \
    {                                                                        \
        int d = (DTYPE);                                                     \
        (void)dt;                                                            \
        if (d >= 0)                                                          \
            rd_reduce_pair((redist_dtype_t)d, OP, io, in, (uint64_t)*len);   \
    }

static int generic_dtype(const MPI_Datatype *dt)
{
    if (*dt == MPI_FLOAT)
        return REDIST_F32;
    if (*dt == MPI_DOUBLE)
        return REDIST_F64;
    if (*dt == MPI_C_FLOAT_COMPLEX)
        return REDIST_C64;
    if (*dt == MPI_C_DOUBLE_COMPLEX)
        return REDIST_C128;
    if (*dt == MPI_INT8_T)
        return REDIST_I8;
    if (*dt == MPI_UINT8_T)
        return REDIST_U8;
    if (*dt == MPI_INT16_T)
        return REDIST_I16;
    if (*dt == MPI_UINT16_T)
        return REDIST_U16;
    return -1;
}

RD_UOP(uop_f16_sum, REDIST_F16, REDIST_REDUCE_SUM)
RD_UOP(uop_f16_max, REDIST_F16, REDIST_REDUCE_MAX)
RD_UOP(uop_f16_min, REDIST_F16, REDIST_REDUCE_MIN)
RD_UOP(uop_f16_prod, REDIST_F16, REDIST_REDUCE_PROD)
RD_UOP(uop_bf16_sum, REDIST_BF16, REDIST_REDUCE_SUM)
RD_UOP(uop_bf16_max, REDIST_BF16, REDIST_REDUCE_MAX)
RD_UOP(uop_bf16_min, REDIST_BF16, REDIST_REDUCE_MIN)
RD_UOP(uop_bf16_prod, REDIST_BF16, REDIST_REDUCE_PROD)
RD_UOP(uop_gen_sum, generic_dtype(dt), REDIST_REDUCE_SUM)
RD_UOP(uop_gen_max, generic_dtype(dt), REDIST_REDUCE_MAX)
RD_UOP(uop_gen_min, generic_dtype(dt), REDIST_REDUCE_MIN)
RD_UOP(uop_gen_prod, generic_dtype(dt), REDIST_REDUCE_PROD)

MPI_User_function *const rd_mpi_uop_fns[UOP_KINDS][REDIST_REDUCE_COUNT] = {
    {uop_f16_sum, uop_f16_max, uop_f16_min, uop_f16_prod},
    {uop_bf16_sum, uop_bf16_max, uop_bf16_min, uop_bf16_prod},
    {uop_gen_sum, uop_gen_max, uop_gen_min, uop_gen_prod},
};

static MPI_Datatype native_type(redist_dtype_t d)
{
    switch (d) {
    case REDIST_F16:
    case REDIST_BF16: return MPI_UINT16_T;
    case REDIST_F32: return MPI_FLOAT;
    case REDIST_F64: return MPI_DOUBLE;
    case REDIST_I8: return MPI_INT8_T;
    case REDIST_I16: return MPI_INT16_T;
    case REDIST_I32: return MPI_INT32_T;
    case REDIST_I64: return MPI_INT64_T;
    case REDIST_U8: return MPI_UINT8_T;
    case REDIST_U16: return MPI_UINT16_T;
    case REDIST_U32: return MPI_UINT32_T;
    case REDIST_U64: return MPI_UINT64_T;
    case REDIST_C64: return MPI_C_FLOAT_COMPLEX;
    case REDIST_C128: return MPI_C_DOUBLE_COMPLEX;
    default: return MPI_DATATYPE_NULL;
    }
}

/* The MPI op computing the kernels' function: predefined where MPI's is
 * the same (floating sum and product, complex sum, integers), else
 * user-defined on the kernels.  Not MPI_SUM on 8- and 16-bit integers:
 * Open MPI 4.1's op/avx component saturates them on vector lengths
 * (int8 100 + 100 = 127) where C, the kernels and the sim wrap (-56). */
static MPI_Op native_op(const redist_mpi_t *x, redist_dtype_t d,
                        redist_reduce_t op)
{
    MPI_Op builtin = op == REDIST_REDUCE_SUM   ? MPI_SUM
                     : op == REDIST_REDUCE_MAX ? MPI_MAX
                     : op == REDIST_REDUCE_MIN ? MPI_MIN
                                               : MPI_PROD;
    switch (d) {
    case REDIST_F16: return x->uop[UOP_F16][op];
    case REDIST_BF16: return x->uop[UOP_BF16][op];
    case REDIST_F32:
    case REDIST_F64:
        return op == REDIST_REDUCE_SUM || op == REDIST_REDUCE_PROD
                   ? builtin
                   : x->uop[UOP_GEN][op];
    case REDIST_C64:
    case REDIST_C128:
        return op == REDIST_REDUCE_SUM ? builtin : x->uop[UOP_GEN][op];
    case REDIST_I8:
    case REDIST_U8:
    case REDIST_I16:
    case REDIST_U16:
        return op == REDIST_REDUCE_SUM ? x->uop[UOP_GEN][op] : builtin;
    default: return builtin;
    }
}

int rd_mpi_native_ok(const redist_mpi_t *x, uint64_t count)
{
    return (x->opts.flags & REDIST_MPI_NATIVE_REDUCE) && count <= x->limit;
}

redist_status_t
rd_mpi_native_reduce_scatter(redist_mpi_t *x, MPI_Comm c, const void *send,
                             void *recv, uint64_t count, redist_dtype_t dtype,
                             redist_reduce_t op, redist_error_t *err)
{
    int rc = MPI_Reduce_scatter_block(send == recv ? MPI_IN_PLACE : send,
                                      recv, (int)count, native_type(dtype),
                                      native_op(x, dtype, op), c);
    x->exchanges++;
    return rc == MPI_SUCCESS
               ? REDIST_OK
               : rd_mpi_fail(err, rc, "MPI_Reduce_scatter_block");
}

redist_status_t rd_mpi_native_all_reduce(redist_mpi_t *x, MPI_Comm c,
                                         const void *send, void *recv,
                                         uint64_t count, redist_dtype_t dtype,
                                         redist_reduce_t op,
                                         redist_error_t *err)
{
    size_t elem = redist_dtype_size(dtype);
    for (uint64_t off = 0; off < count; off += x->limit) {
        uint64_t n = count - off < x->limit ? count - off : x->limit;
        int rc = MPI_Allreduce(send == recv ? MPI_IN_PLACE
                                            : (const char *)send + off * elem,
                               (char *)recv + off * elem, (int)n,
                               native_type(dtype), native_op(x, dtype, op),
                               c);
        x->exchanges++;
        if (rc != MPI_SUCCESS)
            return rd_mpi_fail(err, rc, "MPI_Allreduce");
    }
    return REDIST_OK;
}
