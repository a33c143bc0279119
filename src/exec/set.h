/*
 * Plans of many arrays (internal; the algorithm is at the top of set.c,
 * the run at the top of set_run.c).
 */
#ifndef REDIST_EXEC_SET_H
#define REDIST_EXEC_SET_H

#include "redist/exec.h"

/* A round's figures are the public ones (redist_plan_set_round). */
typedef redist_round_stats_t rd_set_round;

struct redist_plan_set {
    char *name;
    int n, nrounds, is_set, memory_efficient;
    uint64_t budget;
    unsigned exec_flags;  /* the options the scratch figures are for */
    redist_plan_t **plan; /* per array */
    uint64_t *scratch;    /* per array: its program's scratch */
    int *round;           /* per array: its round */
    rd_set_round *rounds;
};

/* The scratch arena's alignment of every buffer in it. */
#define RD_SET_ALIGN 64
static inline uint64_t rd_set_align(uint64_t b)
{
    return (b + RD_SET_ALIGN - 1) / RD_SET_ALIGN * RD_SET_ALIGN;
}
/* Array `plan`'s scratch in a set (its program's two buffers, aligned). */
redist_status_t rd_set_array_scratch(const redist_plan_t *plan,
                                     unsigned flags, uint64_t *out,
                                     redist_error_t *err);

#endif
