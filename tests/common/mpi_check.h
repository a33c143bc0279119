/*
 * CHECK and all_fail for the MPI tests of prepared objects
 * (tests/mpi/test_prepared.c, test_window.c).  The including file defines
 * `static int rank, checks, failures`: CHECK counts a check, and a failed
 * one is printed with the rank and counted.
 */
#ifndef REDIST_TESTS_MPI_CHECK_H
#define REDIST_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>

#include "redist.h"

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL (rank %d): ", rank);                       \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* 1 when the status is an error on every rank */
static inline int all_fail(redist_status_t st)
{
    int bad = st != REDIST_OK, all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

#endif
