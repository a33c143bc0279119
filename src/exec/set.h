/*
 * Plans of many arrays (internal; the algorithm is at the top of set.c,
 * the run at the top of set_run.c).
 */
#ifndef REDIST_EXEC_SET_H
#define REDIST_EXEC_SET_H

#include "exec_internal.h"

typedef struct rd_set_round {
    int narrays;
    uint64_t scratch_bytes, recv_bytes, peak_bytes;
    double time_s;
    int collectives, exchanges;
} rd_set_round;

struct redist_plan_set {
    char *name;
    int n, nrounds, is_set, memory_efficient;
    uint64_t budget;
    uint64_t reserve;     /* of every round: the backend's least work */
    unsigned exec_flags;  /* the options the scratch figures are for */
    /* the backend kind the programs are for (rd_set_program): has_kind 0
     * for the generic programs (no backend given) */
    int has_kind;
    rd_backend_ops kind;
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
/* The program a set runs a one-mesh array with on backends of kind `ops`
 * (NULL: the generic program): the backend's capabilities and fused
 * steps, but exchange steps as passes of their own wherever the backend
 * has an exchange op, so that a round can combine them. */
redist_status_t rd_set_program(const redist_plan_t *plan,
                               const rd_backend_ops *ops, unsigned flags,
                               rd_program *p, redist_error_t *err);
/* Array `plan`'s scratch in a set (its program's two buffers, aligned). */
redist_status_t rd_set_array_scratch(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, uint64_t *out,
                                     redist_error_t *err);

#endif
