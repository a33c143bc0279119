/*
 * The frame of the divergence tests of the backends (tests/mpi/
 * diverge_mpi.c, tests/shmem/diverge_shmem.c): cases in which one rank,
 * DV_ODD, fails a check or differs, each under a watchdog, and the checks
 * of the outcome: an error on every rank, DV_ODD's reason on DV_ODD, the
 * others' naming it ("<unit> 1 failed: <reason>", "<unit> 1 differs").
 * Also the cases of execute shared by both backends.  Header only: each
 * test includes it once.
 */
#ifndef REDIST_TESTS_DIVERGE_H
#define REDIST_TESTS_DIVERGE_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "redist.h"

#define DV_ODD 1
#define DV_CASE_SECONDS 10

static int dv_me, dv_failures, dv_ncases;
static const char *dv_case = "", *dv_unit = "device", *dv_prog = "";

static inline void dv_on_alarm(int sig)
{
    char buf[256];
    (void)sig;
    int n = snprintf(buf, sizeof buf,
                     "%s: HANG in case \"%s\" on %s %d (no answer in %d s)\n",
                     dv_prog, dv_case, dv_unit, dv_me, DV_CASE_SECONDS);
    if (write(2, buf, (size_t)n) < 0)
        _exit(3);
    _exit(3);
}

/* prog: the test's name; unit: "device" or "PE", as the messages say */
static inline void dv_init(const char *prog, const char *unit, int me)
{
    dv_prog = prog;
    dv_unit = unit;
    dv_me = me;
    signal(SIGALRM, dv_on_alarm);
}

/* A case starts on every rank (after `barrier`) under the watchdog. */
static inline void dv_begin(const char *name, void (*barrier)(void))
{
    dv_case = name;
    dv_ncases++;
    barrier();
    alarm(DV_CASE_SECONDS);
}

static inline void dv_end(void) { alarm(0); }

static inline void dv_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static inline void dv_fail(const char *fmt, ...)
{
    va_list ap;
    dv_failures++;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (%s %d, case \"%s\"): ", dv_unit, dv_me, dv_case);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* Every rank failed with `want` (0: any error); DV_ODD's text holds
 * `mine`, the others' "<unit> 1 failed" and `mine`, or `others` when
 * given.  With want REDIST_ERR_MISMATCH, both are "<unit> 1 differs". */
static inline void dv_expect(redist_status_t st, const redist_error_t *err,
                             redist_status_t want, const char *mine,
                             const char *others)
{
    char failed[48], differs[48];
    snprintf(failed, sizeof failed, "%s %d failed", dv_unit, DV_ODD);
    snprintf(differs, sizeof differs, "%s %d differs", dv_unit, DV_ODD);
    if (want == REDIST_ERR_MISMATCH)
        mine = others = differs;
    const char *need = dv_me == DV_ODD ? mine : others ? others : failed;
    if (st == REDIST_OK || (want && st != want))
        dv_fail("status %s, want %s (%s)", redist_status_string(st),
                want ? redist_status_string(want) : "an error", err->text);
    else if (need && !strstr(err->text, need))
        dv_fail("message \"%s\" lacks \"%s\"", err->text, need);
    else if (dv_me != DV_ODD && !others && mine && !strstr(err->text, mine))
        dv_fail("message \"%s\" lacks %s %d's reason \"%s\"", err->text,
                dv_unit, DV_ODD, mine);
}

/* A two-mesh plan on n devices (planned under `po`, may be NULL):
 * f32[4n, 3], rows over x = n to columns over y = n, which lists the
 * devices in reverse order. */
static inline redist_status_t dv_reversed_plan(int n,
                                               const redist_plan_options_t *po,
                                               redist_spec_t **s,
                                               redist_plan_t **p,
                                               redist_error_t *err)
{
    char fm[32], tm[32 + 12 * 64], sh[32];
    int at = snprintf(tm, sizeof tm, "y=%d@", n);
    for (int r = n - 1; r >= 0 && at < (int)sizeof tm - 12; r--)
        at += snprintf(tm + at, sizeof tm - (size_t)at, "%d%s", r,
                       r ? "," : "");
    snprintf(fm, sizeof fm, "x=%d", n);
    snprintf(sh, sizeof sh, "%dx3", 4 * n);
    redist_status_t st = redist_spec_from_strings_meshes(
        fm, tm, sh, "f32", "x|", NULL, "|y", NULL, NULL, NULL, 0, s, err);
    return st ? st : redist_plan_create(*s, po, p, err);
}

/* The cases of execute, each made on DV_ODD only: its reason there
 * (NULL: the caller's, for a plan on another mesh). */
typedef struct dv_exec_case {
    const char *name, *mine;
    redist_status_t want;
} dv_exec_case;

static const dv_exec_case dv_exec_cases[] = {
    {"execute: NULL src", "NULL buffer", REDIST_ERR_INVALID},
    {"execute: NULL dst", "NULL buffer", REDIST_ERR_INVALID},
    {"execute: src == dst", "distinct", REDIST_ERR_INVALID},
    {"execute: NULL plan", "NULL plan", REDIST_ERR_INVALID},
    {"execute: another plan", NULL, REDIST_ERR_MISMATCH},
    {"execute: a plan on another mesh", NULL, REDIST_ERR_INVALID},
    {"execute: PRESERVE_SRC", NULL, REDIST_ERR_MISMATCH},
    {"execute: unknown execution flags", "unknown execution flags",
     REDIST_ERR_INVALID},
};
#define DV_EXEC_CASES ((int)(sizeof dv_exec_cases / sizeof dv_exec_cases[0]))

/* The arguments of execute case k on DV_ODD: `other` another plan on the
 * same mesh, `elsewhere` a plan on another mesh. */
static inline void dv_exec_args(int k, const redist_plan_t **plan,
                                const redist_plan_t *other,
                                const redist_plan_t *elsewhere, void **src,
                                void **dst, redist_exec_options_t *eo)
{
    if (dv_me != DV_ODD)
        return;
    switch (k) {
    case 0: *src = NULL; break;
    case 1: *dst = NULL; break;
    case 2: *dst = *src; break;
    case 3: *plan = NULL; break;
    case 4: *plan = other; break;
    case 5: *plan = elsewhere; break;
    case 6: eo->flags = REDIST_EXEC_PRESERVE_SRC; break;
    default: eo->flags = 0x8000u; break;
    }
}

#endif
