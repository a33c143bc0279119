/*
 * Two-mesh plans on one device (internal; the algorithm is at the top of
 * meshes.c): the transfer's lists, the sim backend's run.
 */
#ifndef REDIST_EXEC_MESHES_H
#define REDIST_EXEC_MESHES_H

#include "redist/exec.h"
#include "redist/plan.h"

/* One piece of the transfer on this device: the box `box` (shape) goes to
 * (comes from) global device `peer`; `off` is its origin in this device's
 * S block (a send) or R block (a receive); `poff` its origin in the
 * peer's R block (a send) or S block (a receive), whose shape is
 * `pshape` (one-sided writes and reads need them).  bytes = its size. */
typedef struct rd_tpiece {
    int64_t peer;
    int64_t box[REDIST_MAX_DIMS];
    int64_t off[REDIST_MAX_DIMS];
    int64_t poff[REDIST_MAX_DIMS], pshape[REDIST_MAX_DIMS];
    uint64_t bytes;
} rd_tpiece;

/* This device's part of a plan's transfer: its S block (origin s_lo,
 * shape s_shape; in_src: it is on the source mesh), its R block, and its
 * pieces sorted by peer (a piece with peer == this device is a local
 * copy, in both lists); a transfer that sums has its receives sorted by
 * place, then peer (rd_tpiece_first). */
typedef struct rd_tlists {
    int ndims;
    uint64_t elem;
    int in_src, in_dst;
    int64_t s_lo[REDIST_MAX_DIMS], s_shape[REDIST_MAX_DIMS];
    int64_t r_lo[REDIST_MAX_DIMS], r_shape[REDIST_MAX_DIMS];
    int64_t nsend, nrecv, cap_send, cap_recv;
    rd_tpiece *send, *recv;
} rd_tlists;

/* The lists of global device `dev` for a two-mesh plan.  REDIST_ERR_NOMEM
 * (nothing to free then). */
redist_status_t rd_transfer_lists(const redist_plan_t *plan, int64_t dev,
                                  rd_tlists *t);
void rd_tlists_free(rd_tlists *t);
/* The lists' heads only (the blocks, no pieces: nothing to free). */
void rd_tlists_head(const redist_plan_t *plan, int64_t dev, rd_tlists *t);
/* A transfer that sums (the plan's S keeps pending axes): the receives
 * come by place in the R block, then by sender; piece k is the first
 * contribution to its place (1: copy it) or not (0: reduce it in). */
int rd_tpiece_first(const rd_tlists *t, int64_t k);
/* The box [soff, soff + box) of a src_shape block into [doff, doff +
 * box) of a dst_shape block (row-major): copied when `first`, else
 * reduced in with the spec's op (dst = dst op src, row by row). */
void rd_meshes_place(const redist_spec_t *s, int first, void *dst,
                     const int64_t dst_shape[], const int64_t doff[],
                     const void *src, const int64_t src_shape[],
                     const int64_t soff[], const int64_t box[]);
/* Bytes of the S (side 0) or R (side 1) block; 0 off that mesh. */
uint64_t rd_tlists_bytes(const rd_tlists *t, int side);

/* The scratch a device holds at most over a two-mesh run: phase A's
 * (phase_a) beside its S block, then the S and R blocks, then R beside
 * phase B's (0 for what the device or the run does not hold). */
uint64_t rd_meshes_scratch(uint64_t phase_a, uint64_t S, uint64_t R,
                           uint64_t phase_b);
/* Where device `dev`'s blocks live when the backend places them in the
 * caller's buffers (RD_BUILD_MESH_USR): *s_in_dst, the S block in its
 * destination buffer (both phases have steps, the device is on both
 * meshes, S fits that buffer); *r_in_src, the R block in its source
 * buffer (the same, R fits, and not REDIST_EXEC_PRESERVE_SRC).  Both 0
 * when `usr` is 0. */
void rd_meshes_usr_blocks(const redist_plan_t *plan, const rd_tlists *t,
                          int64_t dev, int usr, unsigned flags,
                          int *s_in_dst, int *r_in_src);
/* Does phase A end in place in the source buffer, S being the source
 * buffer (a backend that can: MPI's RD_BUILD_END_IN_SRC)?  When the
 * source may be written, the target phase is empty (R is the
 * destination, so the source buffer is free for S) and phase A is
 *  - all-reduces only, even: S's blocks are the source's, each
 *    all-reduce in place with the block's size as its spare;
 *  - or one uneven reduce_scatter whose every box after it is empty or
 *    the first elements of the device's block (rd_boxed_prefix): run
 *    whole, it reduces into that prefix in place.
 * A device of the source mesh then holds the phase's work space, within
 * its bound, instead of S beside it.  The plan and the flags only: the
 * same on every device. */
int rd_meshes_s_in_src(const redist_plan_t *plan, unsigned flags);
/* The room a phase (side 0: A, 1: B) has on its mesh under the
 * contract's bound: the least over the mesh's devices d of
 * max(src_d, dst_d) less the block d holds beside that phase (its S or R
 * block, unless rd_meshes_usr_blocks places it in the caller's buffer).
 * A backend may bound the phase's scratch by it (MPI's max_scratch). */
uint64_t rd_meshes_phase_room(const redist_plan_t *plan, int side,
                              unsigned flags);
/* A transfer that sums, on a device whose S and R blocks of its own
 * (scratch, not the caller's buffers) take `held` bytes: the most bytes
 * of remote contributions an executor receives at once.  It receives
 * them in rounds, in the order of its receive list, each round as many
 * pieces as fit this cap: the room max(src_d, dst_d) (`bound`) leaves
 * beside those blocks, and at least the largest remote piece (`maxp`).
 * A device's work area is the least of this and all it receives. */
uint64_t rd_meshes_sum_cap(uint64_t bound, uint64_t held, uint64_t maxp);
/* redist_plan_exec_info for a two-mesh plan (the largest device); be
 * (may be NULL) is the backend kind the phases run on (its ops decide the
 * phases' programs; its rank and size do not matter). */
redist_status_t rd_meshes_exec_info(const redist_plan_t *plan,
                                    const redist_backend_t *be,
                                    const redist_exec_options_t *opts,
                                    redist_exec_info_t *out,
                                    redist_error_t *err);

/* The arguments of redist_exec_sim_run (redist/sim.h). */
typedef struct rd_sim_args {
    const redist_plan_t *plan;
    void *const *src, *const *dst; /* by global device */
    unsigned flags;                /* REDIST_SIM_* */
    const redist_exec_options_t *opts;
    redist_exec_report_t *report, *per_device;
} rd_sim_args;

/* redist_exec_sim_run for a two-mesh plan: src[d], dst[d] by global
 * device (NULL for a device outside that side's mesh). */
redist_status_t rd_meshes_sim_run(const rd_sim_args *a, redist_error_t *err);

#endif
