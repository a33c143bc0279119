/*
 * Plans of many arrays (internal; the algorithm is at the top of set.c,
 * the run at the top of set_run.c).
 */
#ifndef REDIST_EXEC_SET_H
#define REDIST_EXEC_SET_H

#include "exec_internal.h"

/* A round's figures are the public ones (redist_plan_set_round). */
typedef redist_round_stats_t rd_set_round;

struct redist_plan_set {
    char *name;
    int n, nrounds, is_set, memory_efficient;
    int borrowed; /* the plans are the caller's (rd_plan_set_of_plan) */
    /* a two-mesh plan run alone (rd_plan_set_of_plan): its scratch[0] is
     * the symmetric part of rd_set_two_place_solo's layout */
    int solo;
    int solo_r; /* where its R block lies (RD_SOLO_R_*, set_two.h) */
    uint64_t budget;
    uint64_t reserve;     /* of every round: the backend's least work */
    unsigned exec_flags;  /* the options the scratch figures are for */
    /* a set of two or more arrays builds its one-mesh programs with
     * RD_PROG_LOWER (rd_set_flags): their data-moving collectives are
     * exchanges that a round combines; a set of one array runs its plan's
     * own collectives */
    int lower;
    /* per array (with lower): its reductions stay collectives, as the
     * budget cannot hold its program with them lowered (set.c) */
    unsigned char *keep;
    /* the backend kind the programs are for (rd_set_program): has_kind 0
     * for the generic programs (no backend given) */
    int has_kind;
    rd_backend_ops kind;
    redist_plan_t **plan; /* per array */
    uint64_t *scratch;    /* per array: its program's scratch */
    int *round;           /* per array: its round */
    rd_set_round *rounds;
};

/* A set of one array, `plan` (borrowed: it must outlive the set), with
 * no budget, for backends of kind `kind` (NULL: the generic programs)
 * and execution flags `flags`: how a backend runs a two-mesh plan alone
 * with the set's runner (OpenSHMEM), its R block where `usr` says
 * (RD_SOLO_R_*, agreed by the backend). */
redist_status_t rd_plan_set_of_plan(const redist_plan_t *plan,
                                    const rd_backend_ops *kind,
                                    unsigned flags, int usr,
                                    redist_plan_set_t **out,
                                    redist_error_t *err);

/* redist_plan_set_prepare with `pre`, a failure of the caller on this
 * rank before it (REDIST_OK: none; its message in *err), folded into the
 * preparation's agreements: every rank fails together, none waits. */
redist_status_t rd_set_prepare(const redist_plan_set_t *set,
                               redist_backend_t *be, void *const src[],
                               void *const dst[], redist_status_t pre,
                               redist_set_prepared_t **out,
                               redist_error_t *err);

/* The flags a set builds array i's one-mesh program with (scratch
 * figures, round times, runs): its execution flags, RD_PROG_LOWER when it
 * lowers collectives, RD_PROG_LOWER_RED when reductions too. */
static inline unsigned rd_set_flags(const redist_plan_set_t *s, int i)
{
    return s->exec_flags | (s->lower ? RD_PROG_LOWER : 0u) |
           (s->lower && !(s->keep && s->keep[i]) ? RD_PROG_LOWER_RED : 0u);
}

/* The scratch arena's alignment of every buffer in it. */
#define RD_SET_ALIGN 64
static inline uint64_t rd_set_align(uint64_t b)
{
    return (b + RD_SET_ALIGN - 1) / RD_SET_ALIGN * RD_SET_ALIGN;
}
/* The program a set runs a one-mesh array with on backends of kind `ops`
 * (NULL: the generic program): the backend's capabilities and whole
 * steps, but exchange steps as passes of their own wherever the backend
 * has an exchange op, so that a round can combine them. */
redist_status_t rd_set_program(const redist_plan_t *plan,
                               const rd_backend_ops *ops, unsigned flags,
                               rd_program *p, redist_error_t *err);
/* A two-mesh array's part of the arena, in this order: phase A's two
 * scratch buffers, the S block, the R block, phase B's two buffers
 * (part: bytes aligned, bytes: exact; an empty phase has none of its
 * buffers and its block is the caller's source or destination); the
 * programs of its phases (npasses 0 for an empty one), which the caller
 * frees. */
enum { RD_TWO_ASA, RD_TWO_ASB, RD_TWO_S, RD_TWO_R, RD_TWO_BSA, RD_TWO_BSB,
       RD_TWO_C, RD_TWO_NPARTS };
/* RD_TWO_C: a transfer that sums pending partial axes P lands each
 * contribution in a slab of its own, prod|P| slabs of the R block
 * (rd_two_slabs), reduced into R after the exchange (set_two.c). */
int64_t rd_two_slabs(const redist_plan_t *plan);
typedef struct rd_set_two_layout {
    uint64_t part[RD_TWO_NPARTS];
    uint64_t bytes[RD_TWO_NPARTS]; /* the same, not aligned */
    rd_program prog[2];
} rd_set_two_layout;
redist_status_t rd_set_two_layout_of(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, rd_set_two_layout *l,
                                     redist_error_t *err);
/* The same with phase A's program for backends of kind ops_a. */
redist_status_t rd_set_two_layout_ab(const redist_plan_t *plan,
                                     const rd_backend_ops *ops_a,
                                     const rd_backend_ops *ops,
                                     unsigned flags, rd_set_two_layout *l,
                                     redist_error_t *err);
/* Does `plan` run reductions as collectives in a set (lowered: whether
 * the set lowers, RD_PROG_LOWER)?  Those need the backend's work space
 * (RD_SET_WORK_LEAST); lowered ones (program.c) and a two-mesh array's
 * transfer do not, its phases' reductions do. */
int rd_set_collective_reductions(const redist_plan_t *plan, int lower);
/* Array `plan`'s scratch in a set (its program's two buffers, aligned;
 * a two-mesh array's parts of rd_set_two_layout). */
redist_status_t rd_set_array_scratch(const redist_plan_t *plan,
                                     const rd_backend_ops *ops,
                                     unsigned flags, uint64_t *out,
                                     redist_error_t *err);

/* The names a prepared set's start / test / wait give in their errors
 * (a wrapper's, e.g. redist_shmem_start_meshes); default: redist_set_*. */
struct rd_prepared_api;
void rd_set_prepared_names(redist_set_prepared_t *p,
                           const struct rd_prepared_api *api);

#endif
