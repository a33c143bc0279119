/*
 * bench_sets' parts (what the program does: the top of bench_sets.c):
 * the arrays of the set on this rank, the set's two meshes (or its one
 * mesh twice), and the hand-written per-tensor alternatives
 * (bench_sets_hand.c).
 */
#ifndef BENCH_SETS_H
#define BENCH_SETS_H

#include <mpi.h>

#include "redist.h"
#include "redist/bench.h" /* bench/redist/bench.h: rects, helpers */

/* One array on this rank.  A rank outside the source mesh has no source
 * block (srect empty, sbytes 0), outside the target mesh no target
 * block. */
typedef struct arr {
    const redist_spec_t *spec;
    int nd;
    size_t elem;
    rect_t srect, drect;
    uint64_t sbytes, dbytes;
    char *src, *dst;
    /* gather + broadcast */
    MPI_Comm gcomm;        /* borrowed from the cache; MPI_COMM_NULL off
                              the source mesh */
    int gsize;             /* blocks in the gathered tensor (0: none) */
    rect_t *grect;         /* the gathered blocks, in gather order */
    int *gcount, *gdispl;  /* bytes */
    uint64_t gbytes;       /* the whole tensor */
    /* alltoallv */
    rect_t *spiece, *rpiece; /* per peer */
    char *has_s, *has_r;
    int *scount, *sdispl, *rcount, *rdispl; /* bytes */
    uint64_t stot, rtot;
    int nsend;               /* peers sent to (not self) */
} arr_t;

extern int na;
extern arr_t *A;

/* The set's meshes: side REDIST_SIDE_FROM / REDIST_SIDE_TO (one mesh:
 * the same mesh twice, device = rank). */
typedef struct sides {
    const redist_mesh_t *m[2];
    int64_t *rank[2]; /* device -> its rank on the side's mesh, or -1 */
    int two;          /* two meshes */
} sides_t;
extern sides_t S;

/* bench_sets_hand.c */
void sides_init(const redist_spec_t *s0);
void sides_free(void);
/* Device dev's block of `side` of spec (that side's layout); 0 with an
 * empty block when dev is not on that side's mesh. */
int side_rect(const redist_spec_t *spec, int side, int64_t dev, rect_t *r);

enum { HAND_GATHER = 1, HAND_ALLTOALLV = 2 };
/* Collective: every array's pieces and communicators, then the
 * workspaces of the selected implementations (HAND_*), touched. */
void hand_setup(unsigned which);
void run_gather(void);
void run_alltoallv(void);
/* This rank's figures per run of one implementation (HAND_*): extra
 * bytes (its workspace), messages it sends, MPI calls. */
void hand_figures(unsigned which, uint64_t *extra, uint64_t *msgs,
                  long *calls);
/* 1 when gather broadcasts to ranks off the source mesh. */
int hand_broadcasts(void);
void hand_free(void);

#endif
