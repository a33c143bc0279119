"""The figure of doc/python.md ("Symmetric arrays"): one all_to_all of a
f64 array, symmetric arrays (redist.shmem.empty) against private NumPy
arrays, one-shot (Executor.execute) and prepared (Prepared.run).  Run
under oshrun (not a test):

    OMPI_MCA_osc=^rdma PYTHONPATH=build/python oshrun -q --oversubscribe \\
        -np 2 python3 tests/python/shmem_symmetric_figure.py [MiB] [rounds] [runs] [no_ptr]

Each round times `runs` calls of every variant (variants alternate
within the round), each call after a synchronising exchange, as the
slowest PE's time; a round's figure is the median of its calls, and the
table gives the median of the rounds and their range."""
import statistics
import sys
import time

import numpy as np

import redist
import redist.shmem as sh

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 16
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
no_ptr = len(sys.argv) > 4 and sys.argv[4] == "no_ptr"  # REDIST_SHMEM_NO_PTR

pe, npes = sh.start()
rows = max(npes, (mib << 20) // 8 // 1024 // npes * npes)  # per PE: mib MiB
spec = redist.Spec({"x": npes}, (rows * npes, 1024), "f64", ("x", None),
                   (None, "x"))
plan = redist.plan(spec)
tspec = redist.Spec({"pe": npes}, (npes,), "f64", ("pe",), ())
tplan = redist.plan(tspec)
psrc = np.random.default_rng(pe).random(spec.src_block_shape(pe))
pdst = np.zeros(spec.dst_block_shape(pe))
ssrc = sh.empty(psrc.shape)
ssrc[...] = psrc
sdst = sh.zeros(pdst.shape)
ex = sh.Executor(spec.mesh, no_ptr=no_ptr)
times = np.zeros(npes)


def slowest(fn):
    ex.execute(tplan, np.zeros(1), times)          # line the PEs up
    t = time.perf_counter()
    fn()
    mine = np.array([time.perf_counter() - t])
    ex.execute(tplan, mine, times)
    return float(times.max())


variants = {
    "private, execute": lambda: ex.execute(plan, psrc, pdst),
    "symmetric, execute": lambda: ex.execute(plan, ssrc, sdst),
}
prep_p = ex.prepare(plan, psrc, pdst)
prep_s = ex.prepare(plan, ssrc, sdst)
variants["private, prepared run"] = prep_p.run
variants["symmetric, prepared run"] = prep_s.run
for fn in variants.values():
    for _ in range(3):
        fn()
per = {k: [] for k in variants}
for _ in range(rounds):
    got = {k: [] for k in variants}
    for _ in range(runs):
        for k, fn in variants.items():
            got[k].append(slowest(fn))
    for k in variants:
        per[k].append(statistics.median(got[k]))
assert np.array_equal(pdst, sdst)
scratch = {k: r["scratch_bytes"] for k, r in (
    ("private", ex.execute(plan, psrc, pdst, report=True)),
    ("symmetric", ex.execute(plan, ssrc, sdst, report=True)))}
if pe == 0:
    print(f"{npes} PEs, all_to_all of f64[{rows * npes},1024], "
          f"{psrc.nbytes / 2**20:.1f} MiB per PE; {rounds} rounds of {runs} "
          f"runs; no_ptr {no_ptr}; scratch bytes per PE {scratch}")
    print("| variant | median | range of the rounds |")
    print("|---|---|---|")
    for k, v in per.items():
        print(f"| {k} | {statistics.median(v) * 1e3:.2f} ms | "
              f"{min(v) * 1e3:.2f}-{max(v) * 1e3:.2f} ms |")
prep_p.free()
prep_s.free()
ex.free()
del ssrc, sdst
sh.stop()
