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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        worker(a.rounds)
        return
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mpirun = ["mpirun", "--oversubscribe", "-q", "--mca", "btl", "self,vader",
              "-np", str(a.np)]
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
