/*
 * Which host each rank of a communicator runs on, discovered at run time
 * (redist_mpi_discover_hosts, redist/mpi.h; doc/multihost.md).
 *
 * A host is a set of ranks that share memory: MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED, the group MPI itself would use shared memory
 * within.  Each rank learns its group's lowest rank (an MPI_Allreduce MIN
 * over the group) and the hash of its processor name
 * (MPI_Get_processor_name, FNV-1a); one MPI_Allgather of these two words
 * gives every rank the same table, from which every rank numbers the
 * hosts 0, 1, ... in the order of their lowest ranks.  The two sources
 * must tell the same story: two ranks of one group with different names,
 * or two groups with the same name, is an error on every rank (the table
 * is the same everywhere, so is the verdict).  The map is then agreed
 * like a plan (rd_mpi_agree_comm over its hash), so a rank that saw
 * another table fails with every other.
 *
 * Cost: one MPI_Comm_dup, one split, an allreduce over the group, an
 * allgather of 16 bytes a rank, the agreement's allreduce: O(P) words of
 * memory and traffic per rank (P the communicator's size), O(P log P)
 * time (the names of the hosts sorted to find a name used twice).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"
#include "mpi_internal.h"
#include "../../core/internal.h"

/* (name hash, lowest rank) of a host, sorted to find two with one name */
typedef struct host_key {
    uint64_t name, lead;
} host_key;

static int key_cmp(const void *a, const void *b)
{
    const host_key *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->lead < y->lead ? -1 : x->lead > y->lead;
}

/* The hosts from the gathered (lowest rank of the group, name hash) of
 * every rank into out[]: REDIST_OK, or the first inconsistency.  keys:
 * room for `size` entries.  O(size log size). */
static redist_status_t number_hosts(const uint64_t *tab, int size,
                                    int64_t *out, host_key *keys,
                                    redist_error_t *err)
{
    int64_t nhosts = 0;
    for (int r = 0; r < size; r++) {
        uint64_t lead = tab[2 * r], name = tab[2 * r + 1];
        if (lead > (uint64_t)r || tab[2 * lead] != lead)
            return rd_error(err, REDIST_ERR_BACKEND, NULL, NULL,
                            "mpi: rank %d names rank %llu as the lowest "
                            "rank sharing its memory, which it is not",
                            r, (unsigned long long)lead);
        if (lead == (uint64_t)r) {
            keys[nhosts].name = name;
            keys[nhosts].lead = lead;
            out[r] = nhosts++;
        } else if (tab[2 * lead + 1] != name) {
            return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                            "mpi: ranks %llu and %d share memory "
                            "(MPI_COMM_TYPE_SHARED) but report different "
                            "processor names",
                            (unsigned long long)lead, r);
        } else {
            out[r] = out[lead];
        }
    }
    qsort(keys, (size_t)nhosts, sizeof *keys, key_cmp);
    for (int64_t k = 1; k < nhosts; k++)
        if (keys[k].name == keys[k - 1].name)
            return rd_error(err, REDIST_ERR_MISMATCH, NULL, NULL,
                            "mpi: ranks %llu and %llu report the same "
                            "processor name but share no memory "
                            "(MPI_COMM_TYPE_SHARED): two hosts with one "
                            "name",
                            (unsigned long long)keys[k - 1].lead,
                            (unsigned long long)keys[k].lead);
    return REDIST_OK;
}

redist_status_t rd_mpi_number_hosts(const uint64_t *tab, int size,
                                    int64_t *out, redist_error_t *err)
{
    host_key *keys = malloc((size_t)(size > 0 ? size : 1) * sizeof *keys);
    if (!keys)
        return rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    redist_status_t st = number_hosts(tab, size, out, keys, err);
    free(keys);
    return st;
}

redist_status_t redist_mpi_discover_hosts(MPI_Comm comm, int64_t nranks,
                                          int64_t hosts[],
                                          redist_error_t *err)
{
    int size = 0, rank = 0, rc;
    if (comm == MPI_COMM_NULL)
        return rd_error(err, REDIST_ERR_INVALID, NULL, "comm",
                        "MPI_COMM_NULL communicator");
    if (rd_mpi_running(err))
        return REDIST_ERR_INVALID;
    MPI_Comm c = MPI_COMM_NULL, shm = MPI_COMM_NULL;
    if ((rc = MPI_Comm_dup(comm, &c)) != MPI_SUCCESS)
        return rd_mpi_fail(err, rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &rank);

    /* local checks, agreed before the collectives that follow */
    redist_status_t st = REDIST_OK;
    uint64_t *tab = rd_mpi_malloc(2 * (size_t)size * sizeof *tab);
    int64_t *map = rd_mpi_malloc((size_t)size * sizeof *map);
    host_key *keys = rd_mpi_malloc((size_t)size * sizeof *keys);
    if (!tab || !map || !keys)
        st = rd_error(err, REDIST_ERR_NOMEM, NULL, NULL, "out of memory");
    else if (!hosts)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "hosts",
                      "NULL hosts array");
    else if (nranks != size)
        st = rd_error(err, REDIST_ERR_INVALID, NULL, "nranks",
                      "nranks is %lld but the communicator has %d rank%s",
                      (long long)nranks, size, size == 1 ? "" : "s");
    st = rd_mpi_agree_comm(c, rank, st, RD_FNV_BASIS,
                           "the ranks differ", err);

    char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0, lead = rank;
    uint64_t me[2];
    if (!st && (rc = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, rank,
                                         MPI_INFO_NULL, &shm)) !=
                   MPI_SUCCESS)
        st = rd_mpi_fail(err, rc, "MPI_Comm_split_type");
    if (!st && (rc = MPI_Allreduce(&rank, &lead, 1, MPI_INT, MPI_MIN,
                                   shm)) != MPI_SUCCESS)
        st = rd_mpi_fail(err, rc, "MPI_Allreduce (hosts)");
    if (!st) {
        memset(name, 0, sizeof name);
        if ((rc = MPI_Get_processor_name(name, &len)) != MPI_SUCCESS)
            st = rd_mpi_fail(err, rc, "MPI_Get_processor_name");
        me[0] = (uint64_t)lead;
        me[1] = rd_fnv(RD_FNV_BASIS, name, strlen(name));
    }
    if (!st && (rc = MPI_Allgather(me, 2, MPI_UINT64_T, tab, 2,
                                   MPI_UINT64_T, c)) != MPI_SUCCESS)
        st = rd_mpi_fail(err, rc, "MPI_Allgather (hosts)");
    /* the same table everywhere, so the same verdict and map */
    if (!st)
        st = number_hosts(tab, size, map, keys, err);
    if (!st) {
        uint64_t h = RD_FNV_BASIS;
        for (int r = 0; r < size; r++)
            h = rd_fnv_u64(h, (uint64_t)map[r]);
        st = rd_mpi_agree_comm(c, rank, REDIST_OK, h,
                               "the ranks discovered different host maps",
                               err);
    }
    if (!st)
        memcpy(hosts, map, (size_t)size * sizeof *map);
    if (shm != MPI_COMM_NULL)
        MPI_Comm_free(&shm);
    MPI_Comm_free(&c);
    free(tab);
    free(map);
    free(keys);
    return st;
}
