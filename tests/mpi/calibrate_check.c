/*
 * Checks a cost model file written by `redistplan calibrate`
 * (tests/mpi/test_calibrate.sh):
 *
 *   calibrate_check COST.json NP [RANKMAP.json]
 *
 * - the file is a JSON object with a non-empty "machine" and "method", a
 *   "links" object and a "gamma" number, and redist_cost_model_load_file
 *   loads it;
 * - every level it names has both alpha and beta, with alpha in (0, 10 ms)
 *   and the bandwidth 1 / beta in (10 MB/s, 1 TB/s); gamma in (0, 1 us)
 *   per byte (above 1 MB/s);
 * - NP == 1: no level is named;  NP >= 2: at least one, and "method"
 *   names the pair of each ("LEVEL: ranks A-B", 0 <= A < B < NP) and no
 *   other level;
 * - with the rank map calibrate wrote (--rank-map-out: where the ranks
 *   ran), placed on this machine's topology: the levels named are exactly
 *   the levels some pair of the NP ranks spans, each pair spans its level
 *   and is the lowest pair at that level (preferring distinct PUs);
 *   without it, only levels a single host can have (never `network`).
 *
 * On success prints, for each measured level, the line `redistplan topo
 * --cost` prints for it (the test greps for them), then exits 0; any
 * failure prints why and exits 1.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist.h"
#include "redist/topo.h"

static int failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "calibrate_check: FAIL: " __VA_ARGS__);          \
            fprintf(stderr, "\n");                                           \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* The pair "LEVEL: ranks A-B" names in method; 0 when absent. */
static int method_pair(const char *method, const char *level, int *a, int *b)
{
    char key[64];
    snprintf(key, sizeof key, "%s: ranks ", level);
    const char *p = strstr(method, key);
    if (!p)
        return 0;
    return sscanf(p + strlen(key), "%d-%d", a, b) == 2;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: calibrate_check COST.json NP [RANKMAP]\n");
        return 2;
    }
    const char *path = argv[1], *map = argc > 3 ? argv[3] : NULL;
    int np = atoi(argv[2]);

    /* the document itself */
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        fprintf(stderr, "calibrate_check: FAIL: %s:%d:%d: %s\n", path,
                jerr.line, jerr.column, jerr.text);
        return 1;
    }
    const char *machine = json_string_value(json_object_get(root, "machine"));
    const char *method = json_string_value(json_object_get(root, "method"));
    CHECK(json_is_object(root), "%s: not an object", path);
    CHECK(machine && machine[0], "%s: no \"machine\" string", path);
    CHECK(method && method[0], "%s: no \"method\" string", path);
    CHECK(json_is_object(json_object_get(root, "links")),
          "%s: no \"links\" object", path);
    CHECK(json_is_number(json_object_get(root, "gamma")),
          "%s: no \"gamma\" number", path);
    if (!method)
        method = "";

    /* loaded by the library; sentinels show which levels it names */
    redist_cost_model_t m;
    redist_error_t err;
    redist_cost_model_default(&m);
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        m.alpha[l] = m.beta[l] = -1;
    m.gamma = -1;
    if (redist_cost_model_load_file(path, &m, &err)) {
        char buf[512];
        fprintf(stderr, "calibrate_check: FAIL: does not load: %s\n",
                redist_error_format(&err, buf, sizeof buf));
        json_decref(root);
        return 1;
    }
    int measured[REDIST_LINK_COUNT], nmeasured = 0;
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        const char *name = redist_link_name((redist_link_t)l);
        measured[l] = m.alpha[l] != -1 || m.beta[l] != -1;
        if (!measured[l])
            continue;
        nmeasured++;
        CHECK(m.alpha[l] != -1 && m.beta[l] != -1,
              "%s: level %s lacks alpha or beta", path, name);
        /* unit sanity, not speed: the ranges hold on a loaded,
           oversubscribed machine (a busy 2-core host measured 6 MB/s) and
           still catch a figure written in the wrong unit */
        CHECK(m.alpha[l] > 0 && m.alpha[l] < 1e-1,
              "%s: %s alpha %g s is not in (0, 1e-1)", path, name,
              m.alpha[l]);
        CHECK(m.beta[l] > 0 && 1 / m.beta[l] > 1e5 && 1 / m.beta[l] < 1e12,
              "%s: %s bandwidth 1/beta = %g B/s is not in (1e5, 1e12)", path,
              name, m.beta[l] > 0 ? 1 / m.beta[l] : 0.0);
    }
    CHECK(m.gamma > 0 && m.gamma < 1e-6,
          "%s: gamma %g s/B is not in (0, 1e-6)", path, m.gamma);

    /* the levels and their pairs */
    int pa[REDIST_LINK_COUNT], pb[REDIST_LINK_COUNT];
    for (int l = 0; l < REDIST_LINK_COUNT; l++) {
        const char *name = redist_link_name((redist_link_t)l);
        int named = method_pair(method, name, &pa[l], &pb[l]);
        CHECK(named == measured[l],
              "%s: level %s is %smeasured but method %s a pair for it "
              "(method: %s)",
              path, name, measured[l] ? "" : "not ",
              named ? "names" : "does not name", method);
        if (named)
            CHECK(0 <= pa[l] && pa[l] < pb[l] && pb[l] < np,
                  "%s: %s: pair %d-%d out of range for %d ranks", path, name,
                  pa[l], pb[l], np);
        else
            pa[l] = pb[l] = -1;
    }
    if (np == 1)
        CHECK(nmeasured == 0, "%s: one rank, yet %d levels named", path,
              nmeasured);
    else
        CHECK(nmeasured >= 1, "%s: %d ranks, yet no level measured", path,
              np);

    redist_topo_t *topo = NULL;
    redist_placement_t *pl = NULL;
    if (redist_topo_load_local(&topo, &err)) {
        char buf[512];
        fprintf(stderr, "calibrate_check: FAIL: %s\n",
                redist_error_format(&err, buf, sizeof buf));
        failures++;
    } else if (!map) {
        CHECK(!measured[REDIST_LINK_NETWORK],
              "%s: network measured on one host", path);
    } else if (redist_placement_load_file(topo, map, &pl, &err)) {
        char buf[512];
        fprintf(stderr, "calibrate_check: FAIL: rank map: %s\n",
                redist_error_format(&err, buf, sizeof buf));
        failures++;
    } else {
        CHECK(redist_placement_num_ranks(pl) == np,
              "%s: %lld ranks, expected %d", map,
              (long long)redist_placement_num_ranks(pl), np);
        /* the lowest pair at each level, one on distinct PUs if any */
        int first[REDIST_LINK_COUNT][2], distinct[REDIST_LINK_COUNT][2];
        for (int l = 0; l < REDIST_LINK_COUNT; l++)
            first[l][0] = distinct[l][0] = first[l][1] = distinct[l][1] = -1;
        for (int a = 0; a < np; a++)
            for (int b = a + 1; b < np; b++) {
                redist_topo_location_t la, lb;
                int l = (int)redist_placement_link(pl, a, b);
                redist_placement_location(pl, a, &la);
                redist_placement_location(pl, b, &lb);
                if (first[l][0] < 0) {
                    first[l][0] = a;
                    first[l][1] = b;
                }
                if (distinct[l][0] < 0 &&
                    (la.host != lb.host || la.pu != lb.pu)) {
                    distinct[l][0] = a;
                    distinct[l][1] = b;
                }
            }
        for (int l = 0; l < REDIST_LINK_COUNT; l++) {
            const char *name = redist_link_name((redist_link_t)l);
            int present = first[l][0] >= 0;
            CHECK(present == measured[l],
                  "%s: level %s is %sspanned by the placement of %s but "
                  "%smeasured",
                  path, name, present ? "" : "not ", map,
                  measured[l] ? "" : "not ");
            if (!present || pa[l] < 0)
                continue;
            int ea = distinct[l][0] >= 0 ? distinct[l][0] : first[l][0];
            int eb = distinct[l][0] >= 0 ? distinct[l][1] : first[l][1];
            CHECK((int)redist_placement_link(pl, pa[l], pb[l]) == l,
                  "%s: pair %d-%d does not span %s", path, pa[l], pb[l],
                  name);
            CHECK(pa[l] == ea && pb[l] == eb,
                  "%s: %s measured by ranks %d-%d, expected %d-%d", path,
                  name, pa[l], pb[l], ea, eb);
        }
    }
    redist_placement_free(pl);
    redist_topo_free(topo);
    json_decref(root);
    if (failures)
        return 1;
    /* what `redistplan topo --cost` prints for them (src/cli/topo.c) */
    for (int l = 0; l < REDIST_LINK_COUNT; l++)
        if (measured[l])
            printf("  %-8s %11.2f %17.2f\n",
                   redist_link_name((redist_link_t)l), m.alpha[l] * 1e6,
                   1e-9 / m.beta[l]);
    printf("  reductions %.2f GB/s\n", 1e-9 / m.gamma);
    return 0;
}
