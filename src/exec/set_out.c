/*
 * A plan set as a table and as JSON (doc/spec-format.md section 10,
 * doc/arrays.md): the rounds with their figures, the totals, and every
 * array's plan as the one-array printer and writer give it.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

static const char *mib(uint64_t b, char *buf, size_t n)
{
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (double)(1ull << 20));
    else
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    return buf;
}

/* The ops of a plan, "exchange" or "all_gather+exchange" ("-" none). */
static void ops_line(const redist_plan_t *p, char *buf, size_t n)
{
    size_t pos = 0;
    int k, ns = redist_plan_num_steps(p);
    buf[0] = '\0';
    for (k = 0; k < ns && pos + 1 < n; k++) {
        redist_step_view_t v;
        if (redist_plan_step(p, k, &v))
            break;
        int w = snprintf(buf + pos, n - pos, "%s%s", k ? "+" : "",
                         redist_op_name(v.op));
        if (w < 0 || (size_t)w >= n - pos)
            break;
        pos += (size_t)w;
    }
    if (!ns)
        snprintf(buf, n, "-");
}

redist_status_t redist_plan_set_print(const redist_plan_set_t *s, FILE *out,
                                      int plans)
{
    if (!s || !out)
        return REDIST_ERR_INVALID;
    redist_plan_set_stats_t t;
    char b1[32], b2[32];
    redist_plan_set_stats(s, &t);
    fprintf(out, "plan set %s\n  %d array%s in %d round%s", s->name, s->n,
            s->n == 1 ? "" : "s", s->nrounds, s->nrounds == 1 ? "" : "s");
    if (s->budget == REDIST_NO_BUDGET)
        fprintf(out, ", no budget (one round)\n\n");
    else
        fprintf(out, ", budget %llu bytes of scratch per device (%s)\n\n",
                (unsigned long long)s->budget, mib(s->budget, b1, sizeof b1));
    fprintf(out, "  round  arrays  scratch bytes     recv bytes     peak bytes"
                 "     time (us)  arrays' (us)  collectives  exchanges\n");
    for (int r = 0; r < s->nrounds; r++) {
        const rd_set_round *x = &s->rounds[r];
        fprintf(out,
                "  %5d  %6d  %13llu  %13llu  %13llu  %12.2f  %12.2f  %11d  "
                "%9d\n",
                r + 1, x->narrays, (unsigned long long)x->scratch_bytes,
                (unsigned long long)x->recv_bytes,
                (unsigned long long)x->peak_bytes, x->time_s * 1e6,
                x->arrays_time_s * 1e6, x->collectives, x->exchanges);
    }
    fprintf(out, "\n  largest round: scratch %llu bytes (%s), peak %llu bytes "
                 "(%s) per device\n",
            (unsigned long long)t.scratch_bytes,
            mib(t.scratch_bytes, b1, sizeof b1),
            (unsigned long long)t.peak_bytes, mib(t.peak_bytes, b2, sizeof b2));
    fprintf(out, "  in all: received %llu bytes per device (%s), %d "
                 "collectives, %d combined exchanges, modelled %.2f us "
                 "(the arrays' %.2f us, messages combined per peer)\n",
            (unsigned long long)t.recv_bytes,
            mib(t.recv_bytes, b1, sizeof b1), t.collectives, t.exchanges,
            t.time_s * 1e6, t.arrays_time_s * 1e6);
    fprintf(out, "  memory-efficient: %s (each array's plan)\n\n",
            t.memory_efficient ? "yes" : "NO");
    fprintf(out, "  array                            round  steps                 "
                 "        recv bytes     peak bytes  scratch bytes\n");
    for (int i = 0; i < s->n; i++) {
        redist_plan_stats_t ps;
        char ops[64];
        redist_plan_stats(s->plan[i], &ps);
        ops_line(s->plan[i], ops, sizeof ops);
        fprintf(out, "  %-32s %5d  %-28s %13llu  %13llu  %13llu\n",
                redist_spec_name(redist_plan_spec(s->plan[i])),
                s->round[i] + 1, ops, (unsigned long long)ps.recv_bytes,
                (unsigned long long)ps.peak_bytes,
                (unsigned long long)s->scratch[i]);
    }
    for (int i = 0; plans && i < s->n; i++) {
        fprintf(out, "\n");
        if (redist_plan_print(s->plan[i], out, 0))
            return REDIST_ERR_IO;
    }
    return ferror(out) ? REDIST_ERR_IO : REDIST_OK;
}

static json_t *round_json(const redist_plan_set_t *s, int r)
{
    const rd_set_round *x = &s->rounds[r];
    json_t *names = json_array();
    for (int i = 0; i < s->n && names; i++)
        if (s->round[i] == r)
            json_array_append_new(
                names, json_string(redist_spec_name(redist_plan_spec(s->plan[i]))));
    return json_pack("{s:i, s:o*, s:I, s:I, s:I, s:f, s:i, s:i, s:f}",
                     "round", r + 1, "arrays", names, "scratch_bytes",
                     (json_int_t)x->scratch_bytes, "recv_bytes",
                     (json_int_t)x->recv_bytes, "peak_bytes",
                     (json_int_t)x->peak_bytes, "time_s", x->time_s,
                     "collectives", x->collectives, "exchanges",
                     x->exchanges, "arrays_time_s", x->arrays_time_s);
}

char *redist_plan_set_to_json(const redist_plan_set_t *s)
{
    if (!s)
        return NULL;
    redist_plan_set_stats_t t;
    redist_plan_set_stats(s, &t);
    json_t *rounds = json_array(), *plans = json_array();
    json_t *root = json_object();
    int bad = !rounds || !plans || !root;
    for (int r = 0; r < s->nrounds && !bad; r++)
        bad = json_array_append_new(rounds, round_json(s, r)) != 0;
    for (int i = 0; i < s->n && !bad; i++) {
        char *txt = redist_plan_to_json(s->plan[i]);
        json_t *p = txt ? json_loads(txt, 0, NULL) : NULL;
        free(txt);
        bad = !p ||
              json_object_set_new(p, "array", json_string(redist_spec_name(
                                                  redist_plan_spec(s->plan[i])))) ||
              json_object_set_new(p, "round", json_integer(s->round[i] + 1)) ||
              json_object_set_new(p, "scratch_bytes",
                                  json_integer((json_int_t)s->scratch[i])) ||
              json_array_append_new(plans, p);
    }
    json_t *totals = bad ? NULL
                         : json_pack("{s:i, s:i, s:I, s:I, s:I, s:f, s:i, s:i, s:b, s:f}",
                                     "arrays", t.narrays, "rounds", t.nrounds,
                                     "scratch_bytes", (json_int_t)t.scratch_bytes,
                                     "peak_bytes", (json_int_t)t.peak_bytes,
                                     "recv_bytes", (json_int_t)t.recv_bytes,
                                     "time_s", t.time_s, "collectives",
                                     t.collectives, "exchanges", t.exchanges,
                                     "memory_efficient", t.memory_efficient,
                                     "arrays_time_s", t.arrays_time_s);
    bad = bad || !totals ||
          json_object_set_new(root, "name", json_string(s->name)) ||
          json_object_set_new(root, "budget_bytes",
                              s->budget == REDIST_NO_BUDGET
                                  ? json_null()
                                  : json_integer((json_int_t)s->budget)) ||
          json_object_set_new(root, "rounds", rounds) ||
          json_object_set_new(root, "totals", totals) ||
          json_object_set_new(root, "arrays", plans);
    if (bad) {
        if (!json_object_get(root, "rounds"))
            json_decref(rounds);
        if (!json_object_get(root, "arrays"))
            json_decref(plans);
        json_decref(root);
        return NULL;
    }
    char *txt = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return txt;
}
