#!/usr/bin/env python3
"""Per-call overhead of the Python package against the C API
(doc/python.md, "Overhead").

    python3 bench/bench_python.py [--build build] [--np 2] [--rounds 5]

runs, under mpirun, the same plan from C (build/bench/bench_call) and from
Python (this file with --worker): one mesh axis over all ranks, an f64
array dim 0 sharded -> dim 1 sharded (one all_to_all), at 64 elements per
rank (tiny) and 16 MiB per rank.  Each variant is timed call by call after
a barrier and 3 warm-up calls; a round's figure is the median of its
calls, and the table gives the median of the rounds and their range (the
noise).  The variants: C redist_mpi_execute; Python Executor.execute (a
context held by the caller); Python redist.execute (the one-call form,
context from the cache); C redist_mpi_run and Python Prepared.run (an
object prepared once), each Python row against its C counterpart.

    python3 bench/bench_python.py --set SPEC --np D [--reps 200] [--rounds 5]

times a plan set (a one-mesh spec with "arrays" on D devices) prepared
once and run: C with build/bench/bench_sets --impl redist-budget (its
median over --reps runs) against Python's redist.prepare(...).run() with
the same method (MPI_Barrier, the run, the slowest rank's time; 3
warm-up runs), alternated --rounds times.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

SIZES = [("tiny", 64, 2000), ("16 MiB", 2 * 1024 * 1024, 20)]


def shape_of(elems, n):
    """bench_call's shape: global [elems/cols*n, cols]."""
    cols = n
    while cols * cols < elems // n * n and elems % (cols * 2) == 0:
        cols *= 2
    return (elems // cols * n, cols)


def worker(rounds):
    import numpy as np
    from mpi4py import MPI
    import redist
    comm = MPI.COMM_WORLD
    n = comm.size
    for _, elems, reps in SIZES:
        spec = redist.Spec({"x": n}, shape_of(elems, n), "f64", ("x", None), (None, "x"))
        plan = redist.plan(spec)
        src = np.zeros(spec.src_local_shape)
        dst = np.zeros(spec.dst_local_shape)
        ex = redist.Executor(comm, spec.mesh)
        pr = ex.prepare(plan, src, dst)
        variants = {"executor": lambda: ex.execute(plan, src, dst),
                    "execute": lambda: redist.execute(plan, comm, src, dst),
                    "prepared": pr.run}
        out = {k: [] for k in variants}
        for _ in range(rounds):
            for name, fn in variants.items():
                for _ in range(3):
                    fn()
                comm.Barrier()
                t = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn()
                    t.append(time.perf_counter() - t0)
                out[name].append(statistics.median(t) * 1e6)
        pr.free()
        ex.free()
        if comm.rank == 0:
            for name, v in out.items():
                print(name, elems, " ".join(f"{x:.2f}" for x in v), flush=True)


def set_worker(path, reps):
    """Median over `reps` of the slowest rank's time of one prepared run
    of the plan set of `path` (preserve_src, as bench_sets)."""
    import numpy as np
    from mpi4py import MPI
    import redist
    comm = MPI.COMM_WORLD
    arrays = redist.load_arrays(path)
    ps = redist.plan_set(arrays, preserve_src=True)
    src = {n: np.zeros(s, arrays[n].np_dtype)
           for n, s in ps.src_block_shapes(comm.rank).items() if s is not None}
    dst = {n: np.zeros(s, arrays[n].np_dtype)
           for n, s in ps.dst_block_shapes(comm.rank).items() if s is not None}
    with redist.prepare(ps, comm, src, dst) as pr:
        for _ in range(3):
            pr.run()
        t = []
        for _ in range(reps):
            comm.Barrier()
            t0 = time.perf_counter()
            pr.run()
            t.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    redist.free_contexts()
    if comm.rank == 0:
        print("set", f"{statistics.median(t) * 1e6:.2f}", flush=True)


def bench_set(a, env, mpirun):
    import csv
    import tempfile
    c, py = [], []
    for _ in range(a.rounds):
        with tempfile.NamedTemporaryFile(suffix=".csv") as f:
            subprocess.run(mpirun + [os.path.join(a.build, "bench", "bench_sets"),
                                     a.set, "--impl", "redist-budget", "--reps",
                                     str(a.reps), "--warmup", "3", "--csv", f.name],
                           env=env, capture_output=True, text=True, check=True)
            rows = list(csv.DictReader(open(f.name)))
            c.append(float(rows[0]["median_s"]) * 1e6)
        out = subprocess.run(mpirun + [a.python, os.path.abspath(__file__),
                                       "--set-worker", a.set, "--reps", str(a.reps)],
                             env=env, capture_output=True, text=True, check=True)
        py += [float(line.split()[1]) for line in out.stdout.split("\n")
               if line.startswith("set ")]
    mc, mp = statistics.median(c), statistics.median(py)
    print(f"{a.set}: {a.np} ranks, {a.rounds} rounds of {a.reps} runs; median of "
          "the rounds' medians, microseconds [min-max of the rounds]")
    print(f"| C redist_set_run (bench_sets) | {mc:.1f} | {min(c):.1f}-{max(c):.1f} | |")
    print(f"| Python prepared set run() | {mp:.1f} | {min(py):.1f}-{max(py):.1f} "
          f"| {mp - mc:+.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--set", help="a one-mesh spec with arrays: time its set")
    ap.add_argument("--set-worker")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    if a.worker:
        worker(a.rounds)
        return
    if a.set_worker:
        set_worker(a.set_worker, a.reps)
        return
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mpirun = ["mpirun", "--oversubscribe", "-q", "--mca", "btl", "self,vader",
              "-np", str(a.np)]
    if a.set:
        bench_set(a, env, mpirun)
        return
    res = {}
    for _, elems, reps in SIZES:
        out = subprocess.run(mpirun + [os.path.join(a.build, "bench", "bench_call"),
                                       str(elems), str(reps), str(a.rounds)],
                             env=env, capture_output=True, text=True, check=True)
        cnames = {"c": "C redist_mpi_execute", "p": "C redist_mpi_run (prepared)"}
        for line in out.stdout.split("\n"):
            f = line.split()
            if f and f[0] in cnames:
                res[(cnames[f[0]], int(f[1]))] = [float(x) for x in f[2:]]
    out = subprocess.run(mpirun + [a.python, os.path.abspath(__file__), "--worker",
                                   "--rounds", str(a.rounds)],
                         env=env, capture_output=True, text=True, check=True)
    names = {"executor": "Python Executor.execute", "execute": "Python redist.execute",
             "prepared": "Python Prepared.run"}
    for line in out.stdout.split("\n"):
        f = line.split()
        if f and f[0] in names:
            res[(names[f[0]], int(f[1]))] = [float(x) for x in f[2:]]
    print(f"{a.np} ranks, {a.rounds} rounds; median per call, microseconds "
          "(median of the rounds' medians [min-max of the rounds])")
    print("| size per rank | variant | median us | rounds range | over C |")
    print("|---|---|---|---|---|")
    for label, elems, _ in SIZES:
        for variant, c in (("C redist_mpi_execute", "C redist_mpi_execute"),
                           ("Python Executor.execute", "C redist_mpi_execute"),
                           ("Python redist.execute", "C redist_mpi_execute"),
                           ("C redist_mpi_run (prepared)", None),
                           ("Python Prepared.run", "C redist_mpi_run (prepared)")):
            v = res[(variant, elems)]
            m = statistics.median(v)
            over = f"{m - statistics.median(res[(c, elems)]):+.1f}" if c and c != variant else ""
            print(f"| {label} | {variant} | {m:.1f} | {min(v):.1f}-{max(v):.1f} "
                  f"| {over} |")


if __name__ == "__main__":
    sys.exit(main())
