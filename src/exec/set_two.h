/*
 * Two-mesh arrays in a plan set (internal; the algorithm is at the top
 * of set_two.c).
 */
#ifndef REDIST_EXEC_SET_TWO_H
#define REDIST_EXEC_SET_TWO_H

#include "exec_internal.h"
#include "meshes.h"
#include "set.h"
#include "set_stream.h"
#include "../core/internal.h"
#include "../spec/spec_internal.h"

/* One two-mesh array on this device: its phases' prepared programs
 * (has[side]: this device runs that phase), its rank in each mesh (-1:
 * not there), the transfer's pieces, the S and R blocks, and the sizes
 * of its arena parts. */
typedef struct rd_set_two {
    rd_exec_prep ph[2];
    int has[2];
    int64_t rank[2];
    int ep[2]; /* its endpoints (rd_set_eps) */
    rd_tlists t;
    /* a transfer that sums (nslab > 1): the lists as the exchange runs
     * them, every contribution into its sender's slab of C */
    int64_t nslab, *slab; /* slab[k]: receive k's slab */
    rd_tlists land;
    const redist_spec_t *s;
    void *S, *R, *C;
    uint64_t part[RD_TWO_NPARTS];
    /* run solo (rd_set_two_place_solo): where S lies (RD_SOLO_S_*, at
     * s_off of the symmetric part for RD_SOLO_S_SYM), the private bytes
     * it needs (RD_SOLO_S_PRIV), the parts (element-aligned; R 0 when
     * the R block is in the caller's buffer) */
    int s_at, r_at; /* r_at: RD_SOLO_R_* */
    uint64_t s_off, priv, solo[RD_TWO_NPARTS];
    /* RD_SOLO_R_STREAM: the streamed transfer (its window is C), R in
     * this device's source buffer (r_src) or in its private memory past
     * S (r_priv bytes) */
    rd_stream *stream;
    int r_src;
    uint64_t r_priv;
    /* lowered phases (a set of two or more arrays, RD_PROG_LOWER): the
     * phases' exchange passes join the round's combined exchanges on
     * the union's endpoint (rd_set_two_advance, rd_set_two_xpart): per
     * side, the mesh's devices (rank r is device dev[side][r]) and, on
     * a member, per pass of the program, the bound lists of an exchange
     * pass with every peer a device of the union, sorted by it (made
     * once at build) */
    int lower;
    int64_t *dev[2];
    rd_xfer **xl[2]; /* xl[side][2 * pass]: sends, [2 * pass + 1]: receives */
} rd_set_two;

/* Where a solo array's R block lies (set_two.c, SOLO): in the symmetric
 * part, or in the caller's destination or source buffer, which every
 * device passes as the same symmetric object (the backend agrees on it:
 * rd_set_two_r_usr says which buffer a plan allows); or the transfer
 * streams through a symmetric window and each device's R lies where it
 * alone writes it (set_stream.c), with any buffers. */
enum { RD_SOLO_R_ARENA, RD_SOLO_R_DST, RD_SOLO_R_SRC, RD_SOLO_R_STREAM };
/* A solo array's placement: RD_SOLO_R_* | RD_SOLO_A_SYM (phase A runs
 * on the backend's symmetric kind, rd_backend_ops.sym_kind: it reads
 * the caller's symmetric source in place and writes S at the same
 * address on every device). */
enum { RD_SOLO_A_SYM = 4 };
#define RD_SOLO_R(u) ((u) & 3)
/* Where a solo array's S block lies: nowhere (empty, or the source
 * itself), the caller's destination, the spare end of the symmetric
 * part, private memory of its own size. */
enum { RD_SOLO_S_NONE, RD_SOLO_S_DST, RD_SOLO_S_SYM, RD_SOLO_S_PRIV };
/* Where a solo array's R block lies: of the places the plan allows (the
 * arena; streamed; and when every device passes the same symmetric src
 * and dst objects, `sym`, the destination when the target phase is
 * empty, the source when phase A has steps, REDIST_EXEC_PRESERVE_SRC is
 * not set and every device that receives is on the source mesh with
 * R_d <= src_d), the one with the fewest devices over max(src_d, dst_d),
 * then the least excess (destination, source, arena, streamed on ties).
 * The same on every device (the plan's and kind's alone).  Cost: one
 * layout (the phases' programs) and O(devices) per place, one walk of
 * the transfer's pieces for the streamed one. */
int rd_set_two_r_usr(const redist_plan_t *plan, const rd_backend_ops *kind,
                     unsigned flags, int sym);
/* Does device dev's R block lie in its source buffer at usr (and so the
 * run writes the source)? */
int rd_set_two_solo_r_src(const redist_plan_t *plan, unsigned flags, int usr,
                          int64_t dev);
/* Does the array run phase A on the symmetric kind (RD_SOLO_A_SYM)? */
static inline int rd_set_two_a_sym(const rd_set_two *w)
{
    return (w->r_at & RD_SOLO_A_SYM) != 0;
}

/* Programs built and bound, transfer lists: before any collective. */
redist_status_t rd_set_two_build(rd_set_two *w, const redist_plan_t *plan,
                                 const rd_backend_ops *kind, unsigned flags,
                                 int usr, int64_t dev, void *src, void *dst,
                                 redist_error_t *err);
/* Its buffers in its part of the arena, which starts at `at`. */
void rd_set_two_place(rd_set_two *w, char *at);
/* A set of one two-mesh array (redist_plan_set_t.solo, R where
 * solo_r says): its buffers by lifetime (set_two.c, SOLO), the symmetric
 * ones at `sym` (the same offsets on every device), S where w->s_at
 * says (at `priv`: w->priv bytes, this device's own). */
void rd_set_two_place_solo(rd_set_two *w, char *sym, char *priv);
/* The symmetric part of a solo array (its parts rd_set_two_layout_of). */
uint64_t rd_set_two_solo_sym(const uint64_t part[RD_TWO_NPARTS]);
/* A solo array's symmetric bytes and, on device dev (-1: none), the
 * private ones, its R block where `usr` says (RD_SOLO_R_*). */
redist_status_t rd_set_two_solo_sizes(const redist_plan_t *plan,
                                      const rd_backend_ops *kind,
                                      unsigned flags, int usr, int64_t dev,
                                      uint64_t *sym, uint64_t *priv,
                                      redist_error_t *err);
/* Its transfer as a part of a combined exchange. */
rd_xpart rd_set_two_part(const rd_set_two *w);
/* Run phase `side` on its endpoint (nothing off that mesh); a failure
 * aborts the union's other ranks too.  Not lowered only. */
redist_status_t rd_set_two_phase(rd_set_two *w, int side,
                                 redist_backend_t *union_be,
                                 redist_exec_report_t *r, redist_error_t *err);
/* Lowered phases (w->lower): run phase `side` from pass *pc on and stop
 * at its next exchange pass (*pc names it) or at its end (*pc ==
 * npasses); `first`: the phase starts here (phase B: the landed slabs
 * reduced first; an empty one: R copied to the destination).  A device
 * off the mesh runs nothing but stops at the same passes, so every rank
 * joins the same combined exchanges.  A failure aborts the union's
 * other ranks too. */
redist_status_t rd_set_two_advance(rd_set_two *w, int side, int *pc,
                                   int first, redist_backend_t *union_be,
                                   redist_exec_report_t *r,
                                   redist_error_t *err);
/* Exchange pass pc of phase `side` as a part of a combined exchange on
 * the union's endpoint: its peers devices of the union; a device off the
 * mesh gives an empty part (every rank gives the same number of parts).
 * Its traffic is added to r. */
rd_xpart rd_set_two_xpart(const rd_set_two *w, int side, int pc,
                          redist_exec_report_t *r);
void rd_set_two_free(rd_set_two *w);

/* This device's endpoints on the distinct meshes of a set's two-mesh
 * arrays (as many as they use: one split of the union each, made in
 * the same order on every device): be NULL where it is not a member;
 * work: its work space. */
typedef struct rd_set_ep {
    redist_mesh_t mesh;
    int64_t n, *dev;
    redist_backend_t *be;
    uint64_t work;
    int began;
} rd_set_ep;
typedef struct rd_set_eps {
    int n, cap;
    rd_set_ep *e;
} rd_set_eps;

/* The slot of side's mesh of spec s in eps, added the first time
 * (local; -1: out of memory).  Then rd_set_eps_make makes every slot's
 * endpoint with the union's `sub`: collective over the union, one split
 * per slot in slot order, every slot even after a failure (the ranks
 * stay in step), so every rank must have added the same slots. */
int rd_set_eps_slot(rd_set_eps *eps, const redist_spec_t *s, int side);
redist_status_t rd_set_eps_make(rd_set_eps *eps, redist_backend_t *be,
                                redist_error_t *err);
void rd_set_eps_free(rd_set_eps *eps);
/* The distinct meshes of a set's two-mesh arrays (out of memory: an
 * upper bound, twice their count). */
int rd_set_distinct_meshes(const redist_plan_set_t *set);

#endif
