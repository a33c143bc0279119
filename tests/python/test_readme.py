"""The README's Python examples, extracted by their markers
(<!-- python-example: NAME [np=N] --> before a ```python block), run as
written: in one process, or under mpirun with N ranks.  Each example
checks its own results (assert)."""
import os
import re
import subprocess
import sys

import pytest

MARK = re.compile(r"<!-- python-example: (\S+)(?: np=(\d+))? -->\s*```python\n(.*?)```", re.S)


def examples():
    with open(os.environ["README"]) as f:
        return MARK.findall(f.read())


def test_readme_has_examples():
    names = [e[0] for e in examples()]
    assert {"plan", "mpi", "sync"} <= set(names)


@pytest.mark.parametrize("name,np_,code", examples(), ids=lambda x: x if isinstance(x, str) and len(x) < 20 else "")
def test_readme_example(name, np_, code, tmp_path):
    script = tmp_path / f"{name}.py"
    script.write_text(code)
    root = os.path.dirname(os.environ["README"])
    cmd = [sys.executable, str(script)]
    if np_:
        mpirun = os.environ.get("MPIRUN")
        if not mpirun:
            pytest.fail("MPIRUN is not set: the build has no MPI execution")
        cmd = [mpirun, "--oversubscribe", "-q", "-np", np_]
        if os.environ.get("LD_PRELOAD"):
            cmd += ["-x", "LD_PRELOAD=" + os.environ["LD_PRELOAD"]]
        cmd += [sys.executable, str(script)]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    if name == "plan":
        assert "all_to_all" in r.stdout and "memory-efficient: yes" in r.stdout
    if name == "sync":  # rank 0 prints the set's table
        assert "plan set sync" in r.stdout and "6 arrays in 2 rounds" in r.stdout
