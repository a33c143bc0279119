/*
 * Rank maps (redist/topo.h: redist_placement_load_buffer and _file): a
 * JSON object that places the ranks on the hosts and PUs of a topology,
 * either one entry per rank ({"host": H, "core": C} or {"host": H,
 * "pu": P}) or a rule ("ranks_per_host" ranks on each host, by "map_by":
 * core, pu, numa or package, as mpirun --map-by places them).  Unknown
 * keys, wrong types and out-of-range indices are errors naming their
 * JSON path.  Cost: O(ranks + hosts^2) (duplicate host names); memory:
 * O(ranks) or O(ranks per host) for a rule.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"
#include "../spec/spec_internal.h"

typedef struct {
    const redist_topo_t *t;
    const char *src;
    redist_error_t *err;
} mapctx;

static redist_status_t bad(mapctx *c, const char *path, const char *fmt, ...)
    RD_PRINTF(3, 4);
static redist_status_t bad(mapctx *c, const char *path, const char *fmt, ...)
{
    char text[REDIST_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return rd_error(c->err, REDIST_ERR_INVALID, c->src, path, "%s", text);
}

static redist_status_t get_index(mapctx *c, json_t *v, const char *path,
                                 int64_t limit, const char *what,
                                 int64_t *out)
{
    if (!json_is_integer(v))
        return bad(c, path, "expected %s index (an integer), got %s", what,
                   rd_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= limit)
        return bad(c, path, "%s %lld is out of range (the topology has %lld "
                            "%ss: 0..%lld)",
                   what, (long long)x, (long long)limit, what,
                   (long long)limit - 1);
    *out = (int64_t)x;
    return REDIST_OK;
}

/* The PUs of the `ranks_per_host` slots of a host under `map_by`. */
static redist_status_t rule_slots(mapctx *c, const char *map_by,
                                  int64_t per_host, int *slot)
{
    const redist_topo_t *t = c->t;
    if (strcmp(map_by, "core") == 0 || strcmp(map_by, "pu") == 0) {
        int pu = map_by[0] == 'p';
        int64_t cap = pu ? t->npu : t->info.cores;
        if (per_host > cap)
            return bad(c, "ranks_per_host",
                       "%lld ranks per host do not fit on the %lld %ss of "
                       "a host (map_by %s)",
                       (long long)per_host, (long long)cap,
                       pu ? "PU" : "core", map_by);
        for (int64_t k = 0; k < per_host; k++)
            slot[k] = pu ? (int)k : t->core_pu[k];
        return REDIST_OK;
    }
    int numa = strcmp(map_by, "numa") == 0;
    if (!numa && strcmp(map_by, "package") != 0)
        return bad(c, "map_by", "unknown value \"%.60s\" (core, pu, numa, "
                                "package)",
                   map_by);
    int nobj = numa ? t->info.numa_nodes : t->info.packages;
    /* the objects' cores in logical order; objects without cores skipped */
    int *ncore = calloc((size_t)nobj, sizeof *ncore);
    int *objs = calloc((size_t)nobj, sizeof *objs);
    redist_status_t st = REDIST_OK;
    if (!ncore || !objs) {
        st = rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL,
                      "out of memory");
        goto out;
    }
    for (int k = 0; k < t->info.cores; k++) {
        const rd_puloc *l = &t->pu[t->core_pu[k]];
        ncore[numa ? l->numa : l->package]++;
    }
    int nuse = 0;
    for (int j = 0; j < nobj; j++)
        if (ncore[j])
            objs[nuse++] = j;
    for (int64_t k = 0; k < per_host && !st; k++) {
        int j = objs[k % nuse];
        int want = (int)(k / nuse), seen = 0, found = -1;
        for (int q = 0; q < t->info.cores && found < 0; q++) {
            const rd_puloc *l = &t->pu[t->core_pu[q]];
            if ((numa ? l->numa : l->package) == j && seen++ == want)
                found = q;
        }
        if (found < 0)
            st = bad(c, "ranks_per_host",
                     "%lld ranks per host do not fit: %s %d has %d cores, "
                     "the rule needs %lld (map_by %s)",
                     (long long)per_host, numa ? "NUMA node" : "package", j,
                     ncore[j], (long long)((per_host - k % nuse + nuse - 1) / nuse), map_by);
        else
            slot[k] = t->core_pu[found];
    }
out:
    free(ncore);
    free(objs);
    return st;
}

/* The top-level keys: known ones only, "ranks" or a rule. */
static redist_status_t check_keys(mapctx *c, json_t *root)
{
    if (!json_is_object(root))
        return bad(c, NULL, "a rank map is a JSON object, not %s", rd_json_kind(root));
    static const char *const keys[] = {"hosts",  "ranks",   "ranks_per_host",
                                       "map_by", "comment", NULL};
    redist_status_t st = rd_json_check_keys(root, "", 80, keys, c->src, c->err);
    if (st)
        return st;
    json_t *ranks = json_object_get(root, "ranks");
    json_t *per = json_object_get(root, "ranks_per_host");
    json_t *map_by = json_object_get(root, "map_by");
    if (ranks && (per || map_by))
        return bad(c, per ? "ranks_per_host" : "map_by",
                   "give either \"ranks\" (one entry per rank) or "
                   "\"ranks_per_host\" with \"map_by\", not both");
    if (!ranks && !per)
        return bad(c, NULL, "expected \"ranks\" (one entry per rank) or "
                            "\"ranks_per_host\" (a rule)");
    return REDIST_OK;
}

/* "hosts": a count or a list of distinct names (NULL: 0, unbounded). */
static redist_status_t parse_hosts(mapctx *c, json_t *hosts,
                                   int64_t *nhosts)
{
    char path[96];
    *nhosts = 0;
    if (!hosts)
        return REDIST_OK;
    if (json_is_integer(hosts)) {
        if (json_integer_value(hosts) < 1 ||
            json_integer_value(hosts) > 1000000000)
            return bad(c, "hosts", "%lld is out of range: a host count "
                                   "from 1 to 10^9",
                       (long long)json_integer_value(hosts));
        *nhosts = json_integer_value(hosts);
    } else if (json_is_array(hosts)) {
        *nhosts = (int64_t)json_array_size(hosts);
        if (*nhosts == 0)
            return bad(c, "hosts", "the host list is empty");
        for (size_t i = 0; i < (size_t)*nhosts; i++) {
            json_t *h = json_array_get(hosts, i);
            snprintf(path, sizeof path, "hosts[%zu]", i);
            if (!json_is_string(h) || !json_string_length(h))
                return bad(c, path, "expected a host name, got %s",
                           json_is_string(h) ? "an empty string"
                                             : rd_json_kind(h));
            for (size_t j = 0; j < i; j++)
                if (strcmp(json_string_value(h),
                           json_string_value(json_array_get(hosts, j))) ==
                    0)
                    return bad(c, path, "host \"%.60s\" is listed twice "
                                        "(also hosts[%zu])",
                               json_string_value(h), j);
        }
    } else {
        return bad(c, "hosts", "expected a list of host names or a "
                               "count, got %s",
                   rd_json_kind(hosts));
    }
    return REDIST_OK;
}

/* A rule: "ranks_per_host" ranks on each host, placed by "map_by". */
static redist_status_t parse_rule(mapctx *c, json_t *per, json_t *map_by,
                                  int64_t nhosts, redist_placement_t *p)
{
    if (!json_is_integer(per))
        return bad(c, "ranks_per_host", "expected a count from 1 to 10^6, "
                                        "got %s",
                   rd_json_kind(per));
    if (json_integer_value(per) < 1 || json_integer_value(per) > 1000000)
        return bad(c, "ranks_per_host", "%lld is out of range: a count "
                                        "from 1 to 10^6",
                   (long long)json_integer_value(per));
    if (map_by && !json_is_string(map_by))
        return bad(c, "map_by", "expected core, pu, numa or package, got "
                                "%s",
                   rd_json_kind(map_by));
    const char *mb = map_by ? json_string_value(map_by) : "core";
    p->mode = PL_RULE;
    p->per_host = json_integer_value(per);
    if (!(p->slot_pu = malloc((size_t)p->per_host * sizeof *p->slot_pu)))
        return rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL,
                        "out of memory");
    redist_status_t st = rule_slots(c, mb, p->per_host, p->slot_pu);
    if (st)
        return st;
    p->nhosts = nhosts;
    p->nranks = nhosts ? nhosts * p->per_host : INT64_MAX;
    char hs[48];
    if (nhosts)
        snprintf(hs, sizeof hs, "%lld host%s", (long long)nhosts,
                 nhosts == 1 ? "" : "s");
    else
        snprintf(hs, sizeof hs, "as many hosts as needed");
    snprintf(p->desc, sizeof p->desc,
             "rank map %.200s: %lld ranks per host by %s, %s", c->src,
             (long long)p->per_host, mb, hs);
    return REDIST_OK;
}

/* Entry r of "ranks": {"host": H, "core": C} or {"host": H, "pu": P}. */
static redist_status_t parse_rank(mapctx *c, json_t *e, int64_t r,
                                  json_t *hosts, int64_t nhosts,
                                  int64_t *host, int *pu_out)
{
    const redist_topo_t *t = c->t;
    char path[96];
    snprintf(path, sizeof path, "ranks[%lld]", (long long)r);
    if (!json_is_object(e))
        return bad(c, path, "expected {\"host\": H, \"core\": C} or "
                            "{\"host\": H, \"pu\": P}, got %s",
                   rd_json_kind(e));
    static const char *const keys[] = {"host", "core", "pu", NULL};
    redist_status_t st = rd_json_check_keys(e, path, 40, keys, c->src, c->err);
    if (st)
        return st;
    json_t *h = json_object_get(e, "host");
    json_t *co = json_object_get(e, "core");
    json_t *pu = json_object_get(e, "pu");
    int64_t hv = 0, x = 0;
    if (h) {
        snprintf(path, sizeof path, "ranks[%lld].host", (long long)r);
        if (json_is_string(h)) {
            hv = -1;
            if (json_is_array(hosts))
                for (size_t j = 0; j < json_array_size(hosts); j++)
                    if (strcmp(json_string_value(h),
                               json_string_value(
                                   json_array_get(hosts, j))) == 0)
                        hv = (int64_t)j;
            if (hv < 0)
                return bad(c, path, "host \"%.60s\" is not in \"hosts\"",
                           json_string_value(h));
        } else if (json_is_integer(h)) {
            hv = json_integer_value(h);
            int64_t lim = nhosts ? nhosts : 1000000000;
            if (hv < 0 || hv >= lim)
                return bad(c, path, "host %lld is out of range "
                                    "(0..%lld%s)",
                           (long long)hv, (long long)lim - 1,
                           nhosts ? ": the hosts listed" : "");
        } else {
            return bad(c, path, "expected a host index or name, got "
                                "%s",
                       rd_json_kind(h));
        }
    }
    if (!co == !pu) {
        snprintf(path, sizeof path, "ranks[%lld]", (long long)r);
        return bad(c, path, "give exactly one of \"core\" and \"pu\"");
    }
    snprintf(path, sizeof path, "ranks[%lld].%s", (long long)r,
             co ? "core" : "pu");
    st = get_index(c, co ? co : pu, path, co ? t->info.cores : t->npu,
                   co ? "core" : "PU", &x);
    if (st)
        return st;
    *host = hv;
    *pu_out = co ? t->core_pu[x] : (int)x;
    return REDIST_OK;
}

/* An explicit map: one entry per rank. */
static redist_status_t parse_ranks(mapctx *c, json_t *ranks, json_t *hosts,
                                   int64_t nhosts, redist_placement_t *p)
{
    if (!json_is_array(ranks) || json_array_size(ranks) == 0)
        return bad(c, "ranks", "expected a non-empty list of {\"host\": H, "
                               "\"core\": C} or {\"host\": H, \"pu\": P}, "
                               "got %s",
                   json_is_array(ranks) ? "an empty list" : rd_json_kind(ranks));
    int64_t n = (int64_t)json_array_size(ranks), maxh = -1;
    p->mode = PL_EXPLICIT;
    p->host = malloc((size_t)n * sizeof *p->host);
    p->rank_pu = malloc((size_t)n * sizeof *p->rank_pu);
    if (!p->host || !p->rank_pu)
        return rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL,
                        "out of memory");
    for (int64_t r = 0; r < n; r++) {
        redist_status_t st =
            parse_rank(c, json_array_get(ranks, (size_t)r), r, hosts, nhosts,
                       &p->host[r], &p->rank_pu[r]);
        if (st)
            return st;
        if (p->host[r] > maxh)
            maxh = p->host[r];
    }
    p->nranks = n;
    p->nhosts = nhosts ? nhosts : maxh + 1;
    snprintf(p->desc, sizeof p->desc,
             "rank map %.200s: %lld rank%s on %lld host%s", c->src,
             (long long)n, n == 1 ? "" : "s", (long long)p->nhosts,
             p->nhosts == 1 ? "" : "s");
    return REDIST_OK;
}

static redist_status_t parse_map(mapctx *c, json_t *root,
                                 redist_placement_t **out)
{
    redist_status_t st = check_keys(c, root);
    if (st)
        return st;
    json_t *hosts = json_object_get(root, "hosts");
    json_t *ranks = json_object_get(root, "ranks");
    json_t *per = json_object_get(root, "ranks_per_host");
    json_t *map_by = json_object_get(root, "map_by");
    int64_t nhosts;
    if ((st = parse_hosts(c, hosts, &nhosts)))
        return st;
    redist_placement_t *p = rd_placement_new(c->t);
    if (!p)
        return rd_error(c->err, REDIST_ERR_NOMEM, c->src, NULL,
                        "out of memory");
    st = per ? parse_rule(c, per, map_by, nhosts, p)
             : parse_ranks(c, ranks, hosts, nhosts, p);
    if (!st && json_is_array(hosts)) {
        if (!(p->names = calloc((size_t)p->nhosts, sizeof *p->names)))
            st = REDIST_ERR_NOMEM;
        for (int64_t h = 0; !st && h < p->nhosts; h++) {
            const char *s = json_string_value(json_array_get(hosts, (size_t)h));
            if (!(p->names[h] = malloc(strlen(s) + 1)))
                st = REDIST_ERR_NOMEM;
            else
                memcpy(p->names[h], s, strlen(s) + 1);
        }
        if (st)
            rd_error(c->err, st, c->src, NULL, "out of memory");
    }
    if (st) {
        redist_placement_free(p);
        return st;
    }
    *out = p;
    return REDIST_OK;
}

redist_status_t redist_placement_load_buffer(const redist_topo_t *t,
                                             const char *text, size_t len,
                                             const char *source,
                                             redist_placement_t **out,
                                             redist_error_t *err)
{
    const char *src = source ? source : "<string>";
    json_t *root;
    if (!t || !out || (!text && len))
        return rd_error(err, REDIST_ERR_INVALID, src, NULL, "NULL argument");
    redist_status_t pst = rd_json_parse(text, len, src, &root, err);
    if (pst)
        return pst;
    mapctx c = {t, src, err};
    redist_status_t st = parse_map(&c, root, out);
    json_decref(root);
    return st;
}

#define RD_MAP_MAX_BYTES (64u << 20)

redist_status_t redist_placement_load_file(const redist_topo_t *t,
                                           const char *path,
                                           redist_placement_t **out,
                                           redist_error_t *err)
{
    char *buf;
    size_t len;
    if (!path)
        return rd_error(err, REDIST_ERR_INVALID, NULL, NULL, "NULL path");
    redist_status_t st =
        rd_read_file(path, RD_MAP_MAX_BYTES, "a rank map", &buf, &len, err);
    if (st)
        return st;
    st = redist_placement_load_buffer(t, buf, len, path, out, err);
    free(buf);
    return st;
}
