/*
 * bench_redist's one interface: a case (one redistribution at one size,
 * the buffers and the direct-exchange pieces every alternative shares),
 * and an implementation (one row of the registry, registry.c), which
 * the driver sets up, runs, times, checks and reports (main.c, case.c,
 * measure.c, report.c).  What the program does and how it measures:
 * main.c; each implementation: the top of its impl_*.c file.
 */
#ifndef BENCH_REDIST_H
#define BENCH_REDIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "redist.h"

/* ------------------------------------------------------------ world */

typedef struct bcase bcase_t;
typedef struct impl impl_t;

extern int g_rank, g_size;
extern int g_shmem;      /* shmem_init was called (--shmem) */
extern int g_thread_level; /* what MPI_Init_thread provided */
extern int g_keep_going; /* --keep-going */
extern int g_failures;   /* implementation rows with a wrong result */
extern int g_corrupt;    /* --corrupt IMPL: its index, else -1 */

/* util.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
int cmp_double(const void *a, const void *b);
uint64_t umax(uint64_t a, uint64_t b);
uint64_t umax_over_ranks(uint64_t v); /* max over MPI_COMM_WORLD */
int all_ok(int ok);                   /* min over MPI_COMM_WORLD */
/* "512 B", "1.5 MiB" (the library's format) */
void fmt_bytes(uint64_t b, char *buf, size_t n);
/* die with "WHAT: " and the library's message */
void die_err(const redist_error_t *err, const char *what)
    __attribute__((noreturn));
/* die with "CASE: IMPL failed: " and the library's message */
void die_run(const bcase_t *c, const impl_t *im, const redist_error_t *err)
    __attribute__((noreturn));

/* ------------------------------------------------------ geometry.c */

typedef struct rect {
    int64_t lo[REDIST_MAX_DIMS], ext[REDIST_MAX_DIMS];
} rect_t;

enum { OP_COPY = -1 }; /* rect_move: copy instead of reducing */

/* The global block of device `rank` under type t. */
void type_rect(const redist_spec_t *spec, const redist_type_t *t,
               int64_t rank, rect_t *r);
/* The same for rank `rank` of mesh m, with side's layout (uneven dims)
 * when side is REDIST_SIDE_FROM or REDIST_SIDE_TO and t that side's type,
 * even blocks when side is -1 (type_rect: the spec's first mesh, the side
 * t is). */
void mesh_type_rect(const redist_spec_t *spec, const redist_mesh_t *m,
                    int side, const redist_type_t *t, int64_t rank,
                    rect_t *r);
int64_t rect_elems(const rect_t *r, int nd);
/* a ∩ b into *o; 0 when empty. */
int rect_meet(const rect_t *a, const rect_t *b, int nd, rect_t *o);
/* Copy (op OP_COPY) or reduce (a redist_reduce_t; f32 and f64 only) the
 * global region `reg` from `s` (holding region sf) into `d` (holding df). */
void rect_move(char *d, const rect_t *df, const char *s, const rect_t *sf,
               const rect_t *reg, int nd, size_t elem, redist_dtype_t dt,
               int op);
/* n elements of f32/f64 set to the neutral value of reduction op. */
void fill_neutral(char *buf, int64_t n, redist_dtype_t dt, int op);
MPI_Op mpi_op(redist_reduce_t r);
uint32_t axes_of(const redist_type_t *t); /* mask of the axes it uses */
/* Linear index of `rank`'s coordinates on the axes of `mask` (the others
 * 0): a colour for MPI_Comm_split. */
int color_of(const redist_mesh_t *m, int64_t rank, uint32_t mask);
/* How many blocks type t cuts dim `dim` into. */
int64_t split_count(const redist_mesh_t *m, const redist_type_t *t, int dim);

/* ------------------------------------------------------------ case */

/* What an implementation needs beyond this binary's MPI. */
enum {
    BENCH_MPI = 1u << 0,       /* every implementation */
    BENCH_SHMEM = 1u << 1,     /* --shmem, symmetric src and dst */
    BENCH_SCALAPACK = 1u << 2, /* built with ScaLAPACK */
};

/* Properties of an implementation the driver acts on. */
enum {
    BENCH_BYTES_PLAN = 1u << 0,  /* runs the bytes objective's plan, and
                                    only where it differs from the
                                    default (time) objective's */
    BENCH_WHOLE_TARGET = 1u << 1, /* cannot leave partial axes in the
                                     target (the hand-written ones) */
    BENCH_NO_CHECK = 1u << 2,    /* not a redistribution: never checked */
};

/*
 * One implementation: a row of the registry.  Every hook but `run` may
 * be NULL.  The driver, per case, for the implementations --impl
 * selected: `applies`, then `prepare` (collective) and the memory
 * budget; buffers; then for those that run: `setup` (collective),
 * `workspace(.., 1)`, warm-up, timed and checked calls of `run`,
 * `workspace(.., 0)`, the memory probe call (c->fresh set); `teardown`
 * for every one that has a state (set by `prepare` or `setup`).
 */
typedef struct bench_impl {
    const char *name;
    unsigned needs; /* BENCH_MPI | BENCH_SHMEM | BENCH_SCALAPACK */
    unsigned flags; /* BENCH_BYTES_PLAN | BENCH_WHOLE_TARGET | ... */
    /* once per program, when selected (BLACS); NULL when nothing */
    void (*start)(void);
    void (*finish)(void);
    /* 0 if it can run case c, else 1 with the reason in why; the same
     * on every rank (every rank asks in the same order, so it may agree
     * through a collective) */
    int (*applies)(const bcase_t *c, char *why, size_t n);
    /* collective, untimed, before the buffers exist: whatever the
     * estimate needs; returns the estimated extra bytes per rank beyond
     * src, dst and the pristine copy (the memory budget) */
    uint64_t (*prepare)(bcase_t *c, impl_t *im);
    /* collective, untimed, once src and dst exist */
    void (*setup)(bcase_t *c, impl_t *im);
    /* keep (1: allocate and touch) or drop (0) the persistent workspaces
     * (c->fresh: none; every call allocates its own) */
    void (*workspace)(bcase_t *c, impl_t *im, int keep);
    /* the timed call: c->src to c->dst; returns the bytes it allocated
     * or used as workspace (0 when none) */
    uint64_t (*run)(bcase_t *c, impl_t *im);
    void (*teardown)(bcase_t *c, impl_t *im);
} bench_impl_t;

/* registry.c */
extern const bench_impl_t *const bench_impls[];
extern const int bench_nimpls;
#define BENCH_MAX_IMPLS 16
/* --impl LIST: a mask of registry indices ("all": every one); dies on an
 * unknown name */
unsigned bench_parse_impls(const char *list);
/* 1 when this binary was built with what `needs` names */
int bench_built(unsigned needs);

/* One implementation in one case. */
struct impl {
    const bench_impl_t *impl;
    void *state;      /* the implementation's own (prepare/setup) */
    int on;           /* runs in this case */
    char why[160];    /* why not, when !on */
    uint64_t est;     /* estimated extra bytes per rank (memory check) */
    const redist_plan_t *plan; /* the plan a redist implementation runs */
    double *t;        /* times of the timed runs (max over ranks) */
    double *fl;       /* page faults of the timed runs (max over ranks) */
    uint64_t own;     /* own allocations, max over runs (this rank) */
    uint64_t faults;  /* page faults of the last run (this rank) */
    /* the memory probe (one run, fresh allocations): */
    uint64_t rss_extra, hwm, pss;
    int checked;      /* verified runs */
    int failed;
    int passes;       /* redist: executor passes, */
    long long exchanges; /* and exchanges (CSV columns; 0 otherwise) */
    /* buffers of its own (set by `setup`; NULL: the case's src and dst):
     * the driver restores, poisons and checks these for this row */
    char *src, *dst;
};

/* The direct exchange: each rank receives what it lacks from the one
 * holder that agrees with it on the source's replicated axes (the pieces
 * of alltoallv, alltoallw and memcpy, and the `lack` figures). */
typedef struct xchg {
    int *has_send, *has_recv;       /* per peer */
    rect_t *send_piece, *recv_piece;
    int *scount, *sdispl, *rcount, *rdispl; /* in elements, self 0 */
    uint64_t send_elems, recv_elems;        /* to / from others */
    uint64_t lack_bytes; /* bytes this rank receives from others */
    uint64_t lack_max;   /* max over ranks */
} xchg_t;

struct bcase {
    char name[512];            /* label@shape */
    redist_spec_t *spec;
    redist_plan_t *plan;       /* the default (time) objective's plan */
    redist_plan_t *plan_bytes; /* the bytes objective's plan (or NULL) */
    char bytes_why[160];       /* why there is no different bytes plan */
    double plan_us;
    const redist_mesh_t *mesh;
    int nd, naxes;
    size_t elem;
    redist_dtype_t dt;
    redist_reduce_t red;
    uint32_t src_axes, red_axes, rep_axes; /* source sharding / reduced
                                              partial / replicated */
    int partial;               /* the source has axes to reduce */
    rect_t srect, drect;       /* this rank's blocks */
    uint64_t src_bytes, dst_bytes; /* the largest block of any rank */
    uint64_t my_src_bytes, my_dst_bytes; /* this rank's (uneven dims) */
    char *src, *dst, *pristine;
    int symmetric;             /* src and dst come from shmem_malloc */
    xchg_t x;
    MPI_Datatype et;           /* one element */
    int fresh;                 /* allocate per call (memory probe, --fresh) */
    uint64_t pss_base;         /* Pss once the buffers are set up */
    impl_t im[BENCH_MAX_IMPLS];
};

/* geometry.c: c->x for this rank (collective-free: every rank computes
 * every rank's pieces). */
void xchg_setup(bcase_t *c);
void xchg_free(xchg_t *x);
/* The hand-written reductions (rect_move, fill_neutral) are f32 and f64
 * only: 1 with the reason when case c needs another one. */
int reduction_unwritten(const bcase_t *c, char *why, size_t n);

/* ------------------------------------------------------------ driver */

typedef struct opts {
    int reps, warmup;
    uint64_t sizes[32];
    int nsizes;
    unsigned impl_mask;
    const char *csv;
    uint64_t mem_budget;
    int fresh;
} opts_t;

/* case.c: run one case (spec already sized); takes ownership of spec. */
void run_case(redist_spec_t *spec, const char *label, const char *specname,
              const opts_t *o, FILE *csv);
/* scale.c: the spec at about `target` bytes per rank, same plan shape */
redist_status_t scale_spec(const redist_spec_t *spec, uint64_t target,
                           redist_spec_t **out, redist_error_t *err);

/* measure.c */
uint64_t proc_kb(const char *path, const char *key);
int hwm_reset(void);
void machine_probe(void);
/* One run of implementation k: restore src, poison dst, the timed call,
 * a check when `verify` (the phase names it).  `probe`: the memory probe
 * run (peak RSS from a reset high-water mark).  Returns its seconds. */
double run_once(bcase_t *c, int k, int verify, const char *phase, int probe);
/* warm-up and timed rounds, then the memory probe; returns seconds */
double run_rounds(bcase_t *c, const opts_t *o);

/* report.c */
void csv_header(FILE *f);
void plan_ops(const redist_plan_t *plan, char *buf, size_t n);
void shape_str(const redist_spec_t *s, char *buf, size_t n);
void report_case(bcase_t *c, const char *label, const char *specname,
                 const opts_t *o, FILE *csv);

#endif
