#!/usr/bin/env python3
"""Tables, ratios and gnuplot plots from the CSVs of scripts/bench.sh.

usage: bench/report.py RESULTS_DIR

Reads RESULTS_DIR/redist.csv (bench_redist) and RESULTS_DIR/planner.csv
(bench_planner); writes RESULTS_DIR/table.md (results, ratios, the issue
targets, uneven cases, memory) and the PNG plots (through gnuplot), and
prints the ratio and target tables.  Ratios are a redist row's median
time divided by the alternative's: above 1, redist is slower.  Noise: the
interquartile range of the timed runs (q1_s..q3_s); a ratio above 1 is
"within noise" when the redist row's q1 is at most the alternative's q3.
"""
import csv
import math
import os
import subprocess
import sys
from collections import OrderedDict, defaultdict

ALTS = ["gather", "alltoallv", "alltoallw", "pdgemr2d", "memcpy", "transport"]
REDIST = ["redist-mpi", "redist-mpi-prep", "redist-mpi-start",
          "redist-mpi-win",
          "redist-mpi-bytes", "redist-mpi-packed",
          "redist-shmem", "redist-shmem-prep", "redist-shmem-bytes"]
# the rows with a full ratio table each (the others: against redist-mpi)
BASES = ["redist-mpi", "redist-mpi-prep", "redist-shmem", "redist-shmem-prep"]
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "c64": 8,
               "c128": 16, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4,
               "u32": 4, "i64": 8, "u64": 8}
IMPLS = REDIST + ALTS
NOISE = 1.2


def mib(b):
    b = float(b)
    if b >= 1 << 30:
        return "%.3g GiB" % (b / (1 << 30))
    if b >= 1 << 20:
        return "%.3g MiB" % (b / (1 << 20))
    if b >= 1 << 10:
        return "%.3g KiB" % (b / (1 << 10))
    return "%d B" % b


def ms(s):
    s = float(s) * 1e3
    return "%.3g" % s if s < 100 else "%.0f" % s


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def extra_mem(r):
    """Extra memory of one call: peak RSS growth; for SHMEM the Pss growth
    (its symmetric heap is shared and stays mapped)."""
    if r["impl"].startswith("redist-shmem"):
        return int(r.get("pss_extra_bytes", 0) or 0)
    return int(r["rss_extra_bytes"])


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summary(name, vals, *extra):
    """A summary row: name, count, geometric mean, best, worst, extras."""
    return "| %s | %d | %.2f | %.2f | %.2f |" % (
        name, len(vals), geomean(vals), min(vals), max(vals)) + \
        "".join(" %s |" % e for e in extra)


def summary_table(out, first, extra_cols, items):
    """Append a summary table: one row per (name, values, extras)."""
    out.append("\n| %s | cases | geometric mean | best | worst |%s" % (
        first, "".join(" %s |" % c for c in extra_cols)))
    out.append("|---|---|---|---|---|" + "---|" * len(extra_cols))
    out += [summary(n, v, *e) for n, v, e in items if v]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    rows = load(os.path.join(out, "redist.csv"))
    # cases in order of appearance: (label, devices, shape)
    cases = OrderedDict()
    for r in rows:
        key = (r["case"], int(r["devices"]), r["shape"])
        cases.setdefault(key, {})[r["impl"]] = r
    present = [i for i in IMPLS if any(i in c and c[i]["status"] != "skip"
                                       for c in cases.values())]
    md = []
    md.append("## Results (median ms over the timed runs; max over ranks)\n")
    hdr = ["case", "P", "shape", "dtype", "bytes/rank", "lacks/rank",
           "plan", "plan recv/rank"]
    md.append("| " + " | ".join(hdr + present) + " |")
    md.append("|" + "---|" * (len(hdr) + len(present)))
    for (label, p, shape), c in cases.items():
        any_r = next(iter(c.values()))
        osub = "*" if any_r["oversub"] == "1" else ""
        size = max(int(any_r["src_bytes"]), int(any_r["dst_bytes"]))
        cells = [label, "%d%s" % (p, osub), shape, any_r["dtype"], mib(size),
                 mib(any_r["lack_bytes"]), any_r["plan_ops"],
                 mib(any_r["plan_recv_bytes"])]
        for i in present:
            r = c.get(i)
            if not r or r["status"] == "skip":
                cells.append("–")
            elif r["status"] == "FAIL":
                cells.append("WRONG")
            else:
                cells.append(ms(r["median_s"]))
        md.append("| " + " | ".join(cells) + " |")
    md.append("\n`*`: more ranks than cores (oversubscribed). `–`: not "
              "applicable or skipped (reason in redist.csv).\n")

    # ratios: each redist backend against the alternatives
    lines = []
    alts = [a for a in ALTS if a in present]
    for base in [b for b in BASES if b in present]:
        lines.append("\n## Ratios: %s median / alternative median "
                     "(> 1: redist slower; memcpy: distance to the "
                     "roofline)\n" % base)
        lines.append("| case | P | shape | " + " | ".join(alts) + " |")
        lines.append("|---|---|---|" + "---|" * len(alts))
        per_alt = defaultdict(list)
        for (label, p, shape), c in cases.items():
            b = c.get(base)
            if not b or b["status"] != "ok":
                continue
            cells = []
            for a in alts:
                r = c.get(a)
                if not r or r["status"] != "ok" or float(r["median_s"]) <= 0:
                    cells.append("–")
                    continue
                x = float(b["median_s"]) / float(r["median_s"])
                per_alt[a].append(x)
                mark = (" **loses**" if x > NOISE and
                        a not in ("memcpy", "transport") else "")
                cells.append("%.2f%s" % (x, mark))
            osub = "*" if b["oversub"] == "1" else ""
            lines.append("| %s | %d%s | %s | %s |" % (label, p, osub, shape,
                                                     " | ".join(cells)))
        summary_table(lines, "%s vs" % base, ["redist slower by >20%"], [
            (a, per_alt.get(a, []),
             ["–" if a in ("memcpy", "transport") else
              str(sum(1 for x in per_alt.get(a, []) if x > NOISE))])
            for a in alts])
    # the redist variants against redist-mpi
    variants = [v for v in REDIST[1:] if v in present]
    lines += targets(cases, present)
    if "redist-mpi" in present and variants:
        lines.append("\n## redist variants: median / redist-mpi median\n")
        lines.append("| case | P | shape | " + " | ".join(variants) + " |")
        lines.append("|---|---|---|" + "---|" * len(variants))
        per_v = defaultdict(list)
        for (label, p, shape), c in cases.items():
            b = c.get("redist-mpi")
            if not b or b["status"] != "ok":
                continue
            cells = []
            for v in variants:
                r = c.get(v)
                if not r or r["status"] != "ok":
                    cells.append("–")
                    continue
                x = float(r["median_s"]) / float(b["median_s"])
                per_v[v].append(x)
                cells.append("%.2f" % x)
            lines.append("| %s | %d | %s | %s |" % (label, p, shape,
                                                   " | ".join(cells)))
        summary_table(lines, "variant / redist-mpi", [],
                      [(v, per_v.get(v, []), []) for v in variants])
    md += lines

    # memory
    md.append("\n## Memory per rank (the memory probe run)\n")
    md.append("Extra = peak RSS during one call above the RSS before it "
              "(VmHWM reset through /proc/self/clear_refs; the call "
              "allocates everything it needs), as a multiple of the larger "
              "of the source and target blocks; own = the implementation's "
              "own allocations (redist: measured scratch high-water mark).  "
              "SHMEM: Pss after the call.\n")
    md.append("| case | P | shape | bytes/rank | " +
              " | ".join("%s extra (own)" % i for i in present) + " |")
    md.append("|---|---|---|---|" + "---|" * len(present))
    for (label, p, shape), c in cases.items():
        any_r = next(iter(c.values()))
        size = max(int(any_r["src_bytes"]), int(any_r["dst_bytes"]))
        cells = []
        for i in present:
            r = c.get(i)
            if not r or r["status"] == "skip":
                cells.append("–")
                continue
            cells.append("%.2fx (%s)" % (extra_mem(r) / size,
                                        mib(r["own_bytes"])))
        md.append("| %s | %d | %s | %s | %s |" % (label, p, shape, mib(size),
                                                  " | ".join(cells)))

    # planner: the bytes objective on even specs (planner.csv, also the
    # plot), the time objective on even specs (planner_time.csv), the time
    # objective on the uneven mix (planner_mixed.csv)
    ppath = os.path.join(out, "planner.csv")
    prows = load(ppath) if os.path.exists(ppath) else []
    for fn, title in (("planner.csv", "bytes objective, even specs"),
                      ("planner_time.csv", "default (time) objective, even specs"),
                      ("planner_mixed.csv", "default (time) objective, "
                       "even and uneven specs as drawn")):
        ppath = os.path.join(out, fn)
        if os.path.exists(ppath):
            planner_table(md, out, load(ppath), title)
    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print("\n".join(lines))

    plots(out, cases, present, prows)


def ok(c, i):
    r = c.get(i)
    return r if r and r["status"] == "ok" and float(r["median_s"]) > 0 else None


def spread(r):
    """The interquartile range over the median, in percent."""
    m = float(r["median_s"])
    return 100.0 * (float(r["q3_s"]) - float(r["q1_s"])) / m if m > 0 else 0


def targets(cases, present):
    """Issue #14 item 4 and #15 item 6: the prepared rows against the
    faster hand-written exchange, identity's fixed cost, the roofline at
    64 MiB/rank on 2 ranks, and the uneven cases."""
    L = []
    rows = [b for b in ("redist-mpi-prep", "redist-mpi-win",
                        "redist-shmem-prep", "redist-mpi-start", "redist-mpi",
                        "redist-shmem")
            if b in present]
    if rows and ("alltoallv" in present or "alltoallw" in present):
        L.append("\n## Targets: redist rows / the faster of alltoallv and "
                 "alltoallw (medians; noise = IQR / median of each row)\n")
        L.append("`ok` = ratio <= 1.0; `noise` = above 1.0 but the redist "
                 "row's q1 <= the hand-written row's q3 (IQRs overlap); "
                 "`MISS` otherwise.\n")
        L.append("| case | P | shape | best hand-written (ms, IQR%) | " +
                 " | ".join("%s (ms, IQR%%) ratio" % b for b in rows) + " |")
        L.append("|---|---|---|---|" + "---|" * len(rows))
        per = defaultdict(list)
        verdicts = defaultdict(lambda: defaultdict(int))
        for (label, p, shape), c in cases.items():
            hw = [r for r in (ok(c, "alltoallv"), ok(c, "alltoallw")) if r]
            if not hw:
                continue
            h = min(hw, key=lambda r: float(r["median_s"]))
            cells = []
            for b in rows:
                r = ok(c, b)
                if not r:
                    cells.append("–")
                    continue
                x = float(r["median_s"]) / float(h["median_s"])
                v = ("ok" if x <= 1.0 else "noise"
                     if float(r["q1_s"]) <= float(h["q3_s"]) else "MISS")
                per[b].append(x)
                verdicts[b][v] += 1
                cells.append("%s (%.0f%%) %.2f %s" % (ms(r["median_s"]),
                                                     spread(r), x, v))
            L.append("| %s | %d | %s | %s %s (%.0f%%) | %s |" % (
                label, p, shape, h["impl"], ms(h["median_s"]), spread(h),
                " | ".join(cells)))
        summary_table(L, "row / faster hand-written",
                      ["ok", "within noise", "MISS"],
                      [(b, per.get(b, []), [verdicts[b]["ok"],
                                            verdicts[b]["noise"],
                                            verdicts[b]["MISS"]])
                       for b in rows])
    # identity: nothing moves; the fixed cost of a call
    ids = [(k, c) for k, c in cases.items() if k[0] == "identity"]
    if ids and "alltoallw" in present:
        L.append("\n## Fixed cost: `identity` (nothing moves) / alltoallw "
                 "(target <= 2x for the prepared rows)\n")
        cols = [b for b in ("redist-mpi-prep", "redist-mpi-win",
                            "redist-shmem-prep", "redist-mpi-start",
                            "redist-mpi", "redist-shmem",
                            "alltoallv") if b in present]
        L.append("| P | shape | alltoallw ms (IQR%) | " +
                 " | ".join("%s ms (ratio)" % b for b in cols) + " |")
        L.append("|---|---|---|" + "---|" * len(cols))
        for (label, p, shape), c in ids:
            w = ok(c, "alltoallw")
            if not w:
                continue
            cells = []
            for b in cols:
                r = ok(c, b)
                cells.append("–" if not r else "%s (%.2fx)" % (
                    ms(r["median_s"]), float(r["median_s"]) /
                    float(w["median_s"])))
            L.append("| %d | %s | %s (%.0f%%) | %s |" % (
                p, shape, ms(w["median_s"]), spread(w), " | ".join(cells)))
    # the roofline: single-step plans at >= 64 MiB per rank on 2 ranks
    roof = [(k, c) for k, c in cases.items() if k[1] == 2 and ok(c, "memcpy")
            and "+" not in c["memcpy"]["plan_ops"]
            and c["memcpy"]["plan_ops"] != "none"
            and max(int(c["memcpy"]["src_bytes"]),
                    int(c["memcpy"]["dst_bytes"])) >= 64 << 20]
    if roof:
        cols = [b for b in ("redist-mpi-prep", "redist-mpi-win",
                            "redist-shmem-prep",
                            "redist-mpi", "redist-shmem", "alltoallw",
                            "alltoallv", "transport") if b in present]
        L.append("\n## Roofline: memcpy median / row median, single-exchange "
                 "cases of >= 64 MiB per rank on 2 ranks (target >= 50%)\n")
        L.append("| case | shape | memcpy ms | " +
                 " | ".join("%s" % b for b in cols) + " |")
        L.append("|---|---|---|" + "---|" * len(cols))
        for (label, p, shape), c in roof:
            m = float(c["memcpy"]["median_s"])
            cells = []
            for b in cols:
                r = ok(c, b)
                cells.append("–" if not r else "%.0f%% (%s ms)" % (
                    100 * m / float(r["median_s"]), ms(r["median_s"])))
            L.append("| %s | %s | %s | %s |" % (label, shape, ms(m),
                                                " | ".join(cells)))
    # uneven cases
    unev = [(k, c) for k, c in cases.items()
            if next(iter(c.values())).get("uneven") == "1"]
    if unev:
        cols = [b for b in ("redist-mpi", "redist-mpi-prep",
                            "redist-shmem-prep", "gather", "alltoallv",
                            "alltoallw") if b in present]
        L.append("\n## Uneven cases (median ms; every result checked)\n")
        L.append("| case | P | shape | plan | " + " | ".join(cols) +
                 " | prep MPI / alltoallv | prep MPI / gather |")
        L.append("|---|---|---|---|" + "---|" * (len(cols) + 2))
        for (label, p, shape), c in unev:
            any_r = next(iter(c.values()))
            cells = [ms(ok(c, b)["median_s"]) if ok(c, b) else "–"
                     for b in cols]
            rp, av, ga = (ok(c, "redist-mpi-prep"), ok(c, "alltoallv"),
                          ok(c, "gather"))
            rat = ["%.2f" % (float(rp["median_s"]) / float(x["median_s"]))
                   if rp and x else "–" for x in (av, ga)]
            L.append("| %s | %d | %s | %s | %s | %s |" % (
                label, p, shape, any_r["plan_ops"], " | ".join(cells),
                " | ".join(rat)))
        # per-byte cost of unevenness: NAME-uneven against NAME-even
        for (label, p, shape), c in unev:
            if not label.endswith("-uneven"):
                continue
            twin = [(k, d) for k, d in cases.items()
                    if k[0] == label[:-len("uneven")] + "even" and k[1] == p]
            if not twin:
                continue
            (tl, tp, tshape), d = twin[0]

            def nbytes(shp, r):
                return math.prod(int(x) for x in shp.split("x")) * \
                    DTYPE_BYTES.get(r["dtype"], 1)
            L.append("\nPer-byte cost, %s (%s) over %s (%s), array bytes "
                     "%.4fx:\n" % (label, shape, tl, tshape,
                                    nbytes(shape, next(iter(c.values()))) /
                                    nbytes(tshape, next(iter(d.values())))))
            L.append("| row | uneven ms (IQR%) | even ms (IQR%) | "
                     "per-byte ratio |")
            L.append("|---|---|---|---|")
            for b in present:
                u, e = ok(c, b), ok(d, b)
                if not u or not e or b == "memcpy":
                    continue
                pb = (float(u["median_s"]) / nbytes(shape, u)) / \
                    (float(e["median_s"]) / nbytes(tshape, e))
                L.append("| %s | %s (%.0f%%) | %s (%.0f%%) | %.2f |" % (
                    b, ms(u["median_s"]), spread(u), ms(e["median_s"]),
                    spread(e), pb))
    return L


def planner_table(md, out, prows, title):
    md.append("\n## Planner (bench_planner, %s)\n" % title)
    if title.startswith("bytes"):
        for tag, what in (("6", "up to 6 axes"), ("8", "up to 8 axes")):
            tp = os.path.join(out, "planner_%s.txt" % tag)
            if os.path.exists(tp):
                for ln in open(tp):
                    if ln.startswith("max RSS"):
                        md.append("Planner memory, %s: %s\n" % (what,
                                                               ln.strip()))
    md.append("| axes | dims | plans | median | p90 | p99 | plans/s | "
              "types visited (median) |")
    md.append("|---|---|---|---|---|---|---|---|")
    for r in prows:
        def us(v):
            v = float(v)
            return ("%.1f µs" % v if v < 1000 else "%.1f ms" % (v / 1e3)
                    if v < 1e6 else "%.2f s" % (v / 1e6))
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["axes"], r["dims"], r["plans"], us(r["median_us"]),
            us(r["p90_us"]), us(r["p99_us"]), r["plans_per_s"],
            r["median_states"]))


def plots(out, cases, present, prows):
    # time vs size: one panel per (case label, P), x = bytes per rank
    groups = OrderedDict()
    for (label, p, shape), c in cases.items():
        groups.setdefault((label, p), []).append(c)
    data = os.path.join(out, "plotdata")
    os.makedirs(data, exist_ok=True)
    panels = []
    for gi, ((label, p), cs) in enumerate(groups.items()):
        series = []
        for i in present:
            pts = []
            for c in cs:
                r = c.get(i)
                if r and r["status"] == "ok":
                    size = max(int(r["src_bytes"]), int(r["dst_bytes"]))
                    pts.append((size, float(r["median_s"]) * 1e3,
                                float(r["min_s"]) * 1e3,
                                float(r["max_s"]) * 1e3))
            if pts:
                fn = os.path.join(data, "t_%d_%s.dat" % (gi, i))
                with open(fn, "w") as f:
                    for s, m, lo, hi in sorted(pts):
                        f.write("%d %g %g %g\n" % (s, m, lo, hi))
                series.append((i, fn))
        if series:
            xs = sorted({max(int(c[i]["src_bytes"]), int(c[i]["dst_bytes"]))
                         for c in cs for i in c})
            panels.append(("%s, P=%d%s" % (label, p, " (oversub.)" if p > 2
                                          else ""), series,
                           (xs[0] / 1.5, xs[-1] * 1.5)))
    colors = {"redist-mpi": "#d62728", "redist-mpi-packed": "#ff9896",
              "redist-mpi-prep": "#e377c2", "redist-mpi-start": "#bcbd22",
              "redist-mpi-win": "#000000",
              "redist-mpi-bytes": "#ffbb78", "redist-shmem": "#9467bd",
              "redist-shmem-prep": "#17becf",
              "redist-shmem-bytes": "#c5b0d5", "gather": "#1f77b4",
              "alltoallv": "#2ca02c", "alltoallw": "#98df8a",
              "pdgemr2d": "#8c564b", "memcpy": "#7f7f7f",
              "transport": "#c7c7c7"}
    gp = []
    ncol = 4
    nrow = (len(panels) + 1 + ncol - 1) // ncol
    gp.append("set terminal pngcairo size %d,%d font ',9'" %
              (ncol * 360, nrow * 270 + 40))
    gp.append("set output '%s'" % os.path.join(out, "time_vs_size.png"))
    gp.append("set multiplot layout %d,%d title 'median time (ms, max over "
              "ranks; bars: min..max) vs bytes per rank'" % (nrow, ncol))
    gp.append("set logscale x 4; set logscale y; set format x '%.0b%B'; "
              "set grid")
    gp.append("unset key")
    for title, series, (x0, x1) in panels:
        gp.append("set title '%s' noenhanced" % title.replace("'", ""))
        gp.append("set xrange [%g:%g]" % (x0, x1))
        parts = []
        for i, fn in series:
            parts.append("'%s' u 1:2:3:4 w yerrorlines lc rgb '%s' pt 7 ps 0.5"
                         " t '%s'" % (fn, colors.get(i, "black"), i))
        gp.append("plot " + ", ".join(parts))
    # a last panel with the legend only
    gp.append("unset title; unset border; unset tics; unset grid; "
              "unset logscale; set xrange [0:1]; set yrange [0:1]")
    gp.append("set key center center font ',11' samplen 3 spacing 1.3 "
              "title 'implementation'")
    gp.append("plot " + ", ".join(
        "NaN w lp lw 2 lc rgb '%s' pt 7 t '%s'" % (colors.get(i, "black"),
                                                      i) for i in present))
    gp.append("unset multiplot")

    # memory: extra RSS / max(src,dst), clustered bars at the largest size
    # of each (label, P)
    mem_fn = os.path.join(data, "memory.dat")
    with open(mem_fn, "w") as f:
        f.write("case " + " ".join(present) + "\n")
        for (label, p), cs in groups.items():
            c = max(cs, key=lambda c: max(int(next(iter(c.values()))["src_bytes"]),
                                          int(next(iter(c.values()))["dst_bytes"])))
            any_r = next(iter(c.values()))
            size = max(int(any_r["src_bytes"]), int(any_r["dst_bytes"]))
            vals = []
            for i in present:
                r = c.get(i)
                vals.append("%.4f" % (extra_mem(r) / size)
                            if r and r["status"] == "ok" else "NaN")
            f.write('"%s P=%d %s" %s\n' % (label, p, mib(size).replace(" ", ""),
                                            " ".join(vals)))
    gp.append("reset")
    gp.append("set terminal pngcairo size 1500,560 font ',9'")
    gp.append("set output '%s'" % os.path.join(out, "memory.png"))
    gp.append("set title 'extra peak RSS per rank during one call, in units "
              "of max(source, target block) (largest size of each case)'")
    gp.append("set style data histograms; set style histogram clustered gap 1")
    gp.append("set style fill solid 0.9 border -1; set boxwidth 0.9")
    gp.append("set xtics rotate by -40 font ',7' noenhanced; set grid y")
    gp.append("set key top left font ',8'; set ylabel 'extra / max(src,dst)'")
    gp.append("set yrange [0:*]")
    parts = []
    for j, i in enumerate(present):
        parts.append("'%s' u %d:xtic(1) t '%s' lc rgb '%s'" %
                     (mem_fn, j + 2, i, colors.get(i, "black")))
    gp.append("plot " + ", ".join(parts))

    if prows:
        byd = defaultdict(list)
        for r in prows:
            byd[int(r["dims"])].append((int(r["axes"]), float(r["median_us"]),
                                        float(r["p90_us"]), float(r["p99_us"])))
        gp.append("reset")
        gp.append("set terminal pngcairo size 900,520 font ',9'")
        gp.append("set output '%s'" % os.path.join(out, "planner.png"))
        gp.append("set title 'planner latency vs mesh axes (solid: median, "
                  "dashed: p99)'")
        gp.append("set logscale y; set format y '10^{%L}'; set grid; set xlabel 'mesh axes'; "
                  "set ylabel 'µs per plan'; set key top left; set xtics 1")
        parts = []
        for d in sorted(byd):
            fn = os.path.join(data, "planner_d%d.dat" % d)
            with open(fn, "w") as f:
                for a, m, p90, p99 in sorted(byd[d]):
                    f.write("%d %g %g %g\n" % (a, m, p90, p99))
            parts.append("'%s' u 1:2 w lp lw 2 pt 7 lc %d t '%d dims'" %
                         (fn, d, d))
            parts.append("'%s' u 1:4 w lp dt 2 pt 6 lc %d notitle" % (fn, d))
        gp.append("plot " + ", ".join(parts))

    gpfile = os.path.join(out, "plots.gp")
    with open(gpfile, "w") as f:
        f.write("\n".join(gp) + "\n")
    subprocess.run(["gnuplot", gpfile], check=True)


if __name__ == "__main__":
    main()
