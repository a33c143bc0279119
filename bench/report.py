#!/usr/bin/env python3
"""Tables, ratios and gnuplot plots from the CSVs of scripts/bench.sh.

usage: bench/report.py RESULTS_DIR

Reads RESULTS_DIR/redist.csv (bench_redist) and RESULTS_DIR/planner.csv
(bench_planner); writes RESULTS_DIR/table.md (results, ratios, memory) and
the PNG plots (through gnuplot), and prints the ratio tables.  Ratios are
redist-mpi's median time divided by the alternative's: above 1, redist is
slower.  Differences under ~20% are noise on this machine.
"""
import csv
import math
import os
import subprocess
import sys
from collections import OrderedDict, defaultdict

ALTS = ["gather", "alltoallv", "alltoallw", "pdgemr2d", "memcpy"]
REDIST = ["redist-mpi", "redist-mpi-packed", "redist-mpi-time",
          "redist-shmem", "redist-shmem-time"]
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
    for base in [b for b in REDIST if b in present]:
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
                mark = " **loses**" if x > NOISE and a != "memcpy" else ""
                cells.append("%.2f%s" % (x, mark))
            osub = "*" if b["oversub"] == "1" else ""
            lines.append("| %s | %d%s | %s | %s |" % (label, p, osub, shape,
                                                     " | ".join(cells)))
        lines.append("\n| %s vs | cases | geometric mean | best | worst | "
                     "redist slower by >20%% |" % base)
        lines.append("|---|---|---|---|---|---|")
        for a in alts:
            vals = per_alt.get(a, [])
            if not vals:
                continue
            lose = sum(1 for x in vals if x > NOISE)
            lines.append("| %s | %d | %.2f | %.2f | %.2f | %s |" % (
                a, len(vals), geomean(vals), min(vals), max(vals),
                "–" if a == "memcpy" else str(lose)))
    # the redist variants against redist-mpi
    variants = [v for v in REDIST[1:] if v in present]
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
        lines.append("\n| variant / redist-mpi | cases | geometric mean | "
                     "best | worst |")
        lines.append("|---|---|---|---|---|")
        for v in variants:
            vals = per_v.get(v, [])
            if vals:
                lines.append("| %s | %d | %.2f | %.2f | %.2f |" % (
                    v, len(vals), geomean(vals), min(vals), max(vals)))
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

    # planner
    ppath = os.path.join(out, "planner.csv")
    prows = load(ppath) if os.path.exists(ppath) else []
    if prows:
        md.append("\n## Planner (bench_planner)\n")
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

    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print("\n".join(lines))

    plots(out, cases, present, prows)


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
              "redist-mpi-time": "#e377c2", "redist-shmem": "#9467bd",
              "redist-shmem-time": "#c5b0d5", "gather": "#1f77b4",
              "alltoallv": "#2ca02c", "alltoallw": "#98df8a",
              "pdgemr2d": "#8c564b", "memcpy": "#7f7f7f"}
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
