/*
 * The MPI backend's context (redist/mpi.h: redist_mpi_create, the options
 * and the accessors).  redist_mpi_create first agrees over the caller's
 * communicator on the mesh and the options (agree.c), then duplicates
 * the communicator and splits the duplicate once per mesh axis (color:
 * the rank with its coordinate on the axis set to 0, key: the
 * coordinate), so member k of a group is sub-rank k.  The communicators,
 * the user-defined MPI ops of the native reductions (reduce_native.c) and
 * 2 * size requests for exchange steps live as long as the context:
 * O(axes + size) of MPI objects and memory, nothing per plan.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "../../core/internal.h"

/* An MPI error code as REDIST_ERR_BACKEND with MPI's message. */
redist_status_t rd_mpi_fail(redist_error_t *err, int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error code %d", rc);
    return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL, "mpi: %s failed: %s",
                    call, msg);
}

redist_status_t rd_mpi_running(redist_error_t *err)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL,
                        "mpi: MPI is not initialised (or already "
                        "finalised)");
    return REDIST_OK;
}

static const unsigned known_mpi_flags =
    REDIST_MPI_PACKED | REDIST_MPI_NATIVE_REDUCE | REDIST_MPI_NO_ABORT;

static void free_comms(redist_mpi_t *x)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        if (x->axis[a] != MPI_COMM_NULL)
            MPI_Comm_free(&x->axis[a]);
    if (x->comm != MPI_COMM_NULL)
        MPI_Comm_free(&x->comm);
    x->comm = MPI_COMM_NULL;
    if (x->have_uops)
        for (int k = 0; k < UOP_KINDS; k++)
            for (int o = 0; o < REDIST_REDUCE_COUNT; o++)
                if (x->uop[k][o] != MPI_OP_NULL)
                    MPI_Op_free(&x->uop[k][o]);
}

redist_status_t redist_mpi_create(MPI_Comm comm, const redist_mesh_t *mesh,
                                  const redist_mpi_options_t *opts,
                                  redist_mpi_t **out, redist_error_t *err)
{
    int size = 0, rank = 0, rc;
    if (rd_mpi_running(err))
        return REDIST_ERR_INVALID;
    if (!out)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL output");
    if (comm == MPI_COMM_NULL)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "comm",
                        "MPI_COMM_NULL communicator");
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Comm_size");

    /* local checks, then agree over comm before any collective call */
    redist_status_t st = REDIST_OK;
    redist_mpi_options_t o = {0, 0};
    if (opts)
        o = *opts;
    uint64_t h = RD_FNV_BASIS;
    redist_mpi_t *x = rd_mpi_malloc(sizeof *x);
    if (x) {
        memset(x, 0, sizeof *x);
        x->reqs = rd_mpi_malloc(2 * (size_t)size * sizeof *x->reqs);
    }
    if (!x || !x->reqs)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (!mesh)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "mesh", "NULL mesh");
    else if (o.flags & ~known_mpi_flags)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                      "unknown MPI backend flags 0x%x",
                      o.flags & ~known_mpi_flags);
    else if (redist_mesh_num_devices(mesh) != size) {
        char m[256];
        rd_mesh_format(mesh, m, sizeof m);
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "comm",
                      "the communicator has %d rank%s but the mesh (%s) has "
                      "%lld devices: run with %lld ranks",
                      size, size == 1 ? "" : "s", m,
                      (long long)redist_mesh_num_devices(mesh),
                      (long long)redist_mesh_num_devices(mesh));
    }
    if (mesh) {
        h = rd_fnv_u64(h, (uint64_t)redist_mesh_num_axes(mesh));
        for (int a = 0; a < redist_mesh_num_axes(mesh); a++)
            h = rd_fnv_u64(h, (uint64_t)redist_mesh_axis_size(mesh, a));
    }
    h = rd_fnv_u64(h, o.flags);
    h = rd_fnv_u64(h, o.max_scratch);
    st =
        rd_mpi_agree_comm(comm, rank, st, h,
                          "the ranks passed different meshes or options", err);
    if (st) {
        if (x)
            free(x->reqs);
        free(x);
        return st;
    }

    x->comm = MPI_COMM_NULL;
    for (int a = 0; a < REDIST_MAX_AXES; a++)
        x->axis[a] = MPI_COMM_NULL;
    for (int k = 0; k < UOP_KINDS; k++)
        for (int p = 0; p < REDIST_REDUCE_COUNT; p++)
            x->uop[k][p] = MPI_OP_NULL;
    x->node = MPI_COMM_NULL;
    x->rank = rank;
    x->size = size;
    x->naxes = redist_mesh_num_axes(mesh);
    x->opts = o;
    x->limit = INT_MAX;
    x->ring_bytes = RD_MPI_RING_BYTES;
    const char *call = "MPI_Comm_dup";
    rc = MPI_Comm_dup(comm, &x->comm);
    if (rc == MPI_SUCCESS) {
        call = "MPI_Comm_set_errhandler";
        rc = MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
    }
    int64_t stride = size;
    for (int a = 0; a < x->naxes && rc == MPI_SUCCESS; a++) {
        int64_t n = redist_mesh_axis_size(mesh, a);
        stride /= n;
        int64_t coord = rank / stride % n;
        x->axis_size[a] = n;
        call = "MPI_Comm_split";
        rc = MPI_Comm_split(x->comm, (int)(rank - coord * stride),
                            (int)coord, &x->axis[a]);
    }
    for (int k = 0; k < UOP_KINDS && rc == MPI_SUCCESS; k++)
        for (int p = 0; p < REDIST_REDUCE_COUNT && rc == MPI_SUCCESS; p++) {
            call = "MPI_Op_create";
            rc = MPI_Op_create(rd_mpi_uop_fns[k][p], 1, &x->uop[k][p]);
        }
    x->have_uops = 1;
    if (rc != MPI_SUCCESS) {
        st = rd_mpi_fail(err, rc, call);
        free_comms(x);
        free(x->reqs);
        free(x);
        return st;
    }
    x->ops = rd_mpi_ops_template;
    x->ops.fused_ops = rd_mpi_fused_ops(o.flags);
    x->be.ops = &x->ops;
    x->be.ctx = x;
    x->be.rank = rank;
    x->be.size = size;
    *out = x;
    return REDIST_OK;
}

void redist_mpi_free(redist_mpi_t *x)
{
    if (!x)
        return;
    rd_mpi_windows_free(x);
    free_comms(x);
    free(x->work);
    free(x->reqs);
    free(x);
}

redist_status_t redist_mpi_set_options(redist_mpi_t *x,
                                       const redist_mpi_options_t *opts,
                                       redist_error_t *err)
{
    redist_mpi_options_t o = {0, 0};
    if (!x)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL context");
    if (opts)
        o = *opts;
    if (o.flags & ~known_mpi_flags)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "flags",
                        "unknown MPI backend flags 0x%x",
                        o.flags & ~known_mpi_flags);
    x->opts = o;
    x->ops.fused_ops = rd_mpi_fused_ops(o.flags);
    return REDIST_OK;
}

redist_mpi_options_t redist_mpi_get_options(const redist_mpi_t *x)
{
    redist_mpi_options_t o = {0, 0};
    return x ? x->opts : o;
}

redist_backend_t *redist_mpi_backend(redist_mpi_t *x)
{
    return x ? &x->be : NULL;
}

MPI_Comm redist_mpi_comm(const redist_mpi_t *x)
{
    return x ? x->comm : MPI_COMM_NULL;
}

MPI_Comm redist_mpi_axis_comm(const redist_mpi_t *x, int axis)
{
    return x && axis >= 0 && axis < x->naxes ? x->axis[axis] : MPI_COMM_NULL;
}

int redist_mpi_rank(const redist_mpi_t *x) { return x ? x->rank : -1; }
int redist_mpi_size(const redist_mpi_t *x) { return x ? x->size : 0; }

void rd_mpi_set_ring_bytes(redist_mpi_t *x, uint64_t bytes)
{
    if (x)
        x->ring_bytes = bytes;
}

void rd_mpi_set_count_limit(redist_mpi_t *x, uint64_t limit)
{
    if (x)
        x->limit = limit == 0 || limit > INT_MAX ? INT_MAX
                   : limit < 2                  ? 2
                                                : limit;
}

redist_mpi_stats_t redist_mpi_last_stats(const redist_mpi_t *x)
{
    redist_mpi_stats_t s = {0, 0, 0, 0, 0};
    if (x) {
        s.direct = x->direct;
        s.exchanges = x->exchanges;
        s.streamed = x->streamed;
        s.swaps = x->swaps;
        s.rings = x->rings;
    }
    return s;
}

int64_t rd_mpi_last_exchanges(const redist_mpi_t *x)
{
    return x ? x->exchanges : 0;
}

int64_t rd_mpi_last_streamed(const redist_mpi_t *x)
{
    return x ? x->streamed : 0;
}

int64_t rd_mpi_last_swaps(const redist_mpi_t *x) { return x ? x->swaps : 0; }

int64_t rd_mpi_last_rings(const redist_mpi_t *x) { return x ? x->rings : 0; }

/* A plan set's endpoint on one mesh of a two-mesh array (backend.h,
 * `sub`): the caller's ranks split by membership, ordered by mesh rank,
 * and a context with this one's options on them. */
redist_status_t rd_mpi_sub(redist_backend_t *be, const redist_mesh_t *mesh,
                           const int64_t devices[], redist_backend_t **out,
                           redist_error_t *err)
{
    redist_mpi_t *x = be->ctx;
    int64_t n = redist_mesh_num_devices(mesh), pos = -1;
    for (int64_t r = 0; r < n && pos < 0; r++)
        if (devices[r] == x->rank)
            pos = r;
    *out = NULL;
    MPI_Comm c = MPI_COMM_NULL;
    int rc = MPI_Comm_split(x->comm, pos >= 0 ? 0 : MPI_UNDEFINED,
                            pos >= 0 ? (int)pos : 0, &c);
    if (rc != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Comm_split (a mesh of a set)");
    if (pos < 0)
        return REDIST_OK;
    redist_mpi_t *sub = NULL;
    redist_status_t st = redist_mpi_create(c, mesh, &x->opts, &sub, err);
    MPI_Comm_free(&c); /* the context keeps its own duplicate */
    if (!st)
        *out = redist_mpi_backend(sub);
    return st;
}

void rd_mpi_sub_free(redist_backend_t *sub)
{
    if (sub)
        redist_mpi_free(sub->ctx);
}
