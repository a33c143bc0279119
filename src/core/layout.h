/*
 * Layouts of uneven dims (doc/spec-format.md section 7): which elements each block
 * index of a sharding type holds.  Internal to the library; the algorithm
 * and the rules are described at the top of layout.c.
 */
#ifndef REDIST_LAYOUT_H
#define REDIST_LAYOUT_H

#include "internal.h"

/* Most blocks a dim of a layout may have (the product of its axis sizes):
 * layouts store their boundaries. */
#define RD_LAYOUT_MAX_BLOCKS (1ll << 24)

/* For each dim i, k[i] blocks (the product of the sizes of the type's axes
 * on dim i) with boundaries b[i][0] = 0 <= b[i][1] <= ... <= b[i][k[i]] =
 * n_i; block j holds elements [b[i][j], b[i][j+1]).  b[i] points into one
 * allocation (mem).  A zeroed struct is an empty layout (free is a no-op). */
typedef struct rd_layout {
    int ndims;
    int64_t k[REDIST_MAX_DIMS];
    int64_t *b[REDIST_MAX_DIMS];
    int64_t *mem;
} rd_layout;

void rd_layout_free(rd_layout *l);
/* 0, or -1 out of memory (*dst untouched). */
int rd_layout_copy(rd_layout *dst, const rd_layout *src);
int rd_layout_equal(const rd_layout *a, const rd_layout *b);

/* The layout of `t` (valid for `mesh`) under `rule`; blocks[i] (blocks may
 * be NULL, and so may each entry) gives dim i's k lengths explicitly (the
 * caller checked them: rd_layout_check_blocks).  0, -1 out of memory, -2
 * more than RD_LAYOUT_MAX_BLOCKS blocks on a dim. */
int rd_layout_rule(rd_layout *out, const redist_type_t *t,
                   const redist_mesh_t *mesh, int ndims, const int64_t shape[],
                   redist_split_t rule, const int64_t *const blocks[]);
/* 1 when dim i of `l` is what `rule` gives for `t` (no allocation). */
int rd_layout_dim_is_rule(const rd_layout *l, int i, const redist_type_t *t,
                          const redist_mesh_t *mesh, const int64_t shape[],
                          redist_split_t rule);
/* The rule that gives exactly `l` for `t` (ceil first), or -1. */
int rd_layout_named(const rd_layout *l, const redist_type_t *t,
                    const redist_mesh_t *mesh, const int64_t shape[]);
/* 1 when every dim of `l` is the even split (every block n/k long). */
int rd_layout_is_even(const rd_layout *l, const int64_t shape[]);

/* The anchored layout of an intermediate type `t` (layout.c): for each dim
 * the blocks of the source (bit i of `src_first` set) or of the target
 * merged to the longest common prefix of axis lists, the other when that
 * prefix is empty, the whole dim when both are; the remaining axes of `t`
 * nested with `ceil`.  0, -1 out of memory, -2 too many blocks. */
int rd_layout_anchor(rd_layout *out, const redist_type_t *t,
                     const redist_mesh_t *mesh, const int64_t shape[],
                     const redist_type_t *src, const rd_layout *src_l,
                     const redist_type_t *dst, const rd_layout *dst_l,
                     unsigned src_first);
/* The bits of src_first that change the anchored layout of t (a dim where
 * both anchors exist and give different blocks). */
unsigned rd_layout_anchor_bits(const redist_type_t *t,
                               const redist_mesh_t *mesh,
                               const int64_t shape[], const redist_type_t *src,
                               const rd_layout *src_l,
                               const redist_type_t *dst,
                               const rd_layout *dst_l);

/* Block index along dim i of the device with coordinates `coord` (mixed
 * radix of its coordinates on the dim's axes, major first). */
int64_t rd_layout_block_index(const redist_type_t *t,
                              const redist_mesh_t *mesh, int i,
                              const int64_t coord[]);
/* The box [lo[i], hi[i]) of the device with coordinates `coord`. */
void rd_layout_box_coord(const rd_layout *l, const redist_type_t *t,
                         const redist_mesh_t *mesh, const int64_t coord[],
                         int64_t lo[], int64_t hi[]);
/* The same for device `rank` of the mesh; 0, or -1 for a rank out of
 * range.  This is what the executor consumes. */
int rd_layout_box(const rd_layout *l, const redist_type_t *t,
                  const redist_mesh_t *mesh, int64_t rank, int64_t lo[],
                  int64_t hi[]);
/* The longest block of each dim, and the product of those (the most
 * elements any device holds: a type's dims use disjoint axes). */
uint64_t rd_layout_max_elems(const rd_layout *l, int64_t longest[]);

/* Check explicit block lengths of dim `dim` (k of them expected for a dim
 * of size n): count, non-negative, sum n.  `path` names the list in the
 * error ("from.blocks[1]"). */
redist_status_t rd_layout_check_blocks(const int64_t *len, int64_t count,
                                       int64_t k, int64_t n, int dim,
                                       const char *source, const char *path,
                                       redist_error_t *err);

#endif
