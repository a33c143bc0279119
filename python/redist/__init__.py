"""redist: plan and execute array redistributions (doc/python.md).

    import redist
    mesh = redist.Mesh({"data": 2, "model": 4})
    spec = redist.Spec(mesh, (4096, 16384), "bfloat16",
                       src=("data", "model"), dst=(("data", "model"), None))
    plan = redist.plan(spec)
    print(plan)                       # the table of `redistplan plan`
    redist.execute(plan, MPI.COMM_WORLD, src, dst)   # under mpirun

A thin layer over libredist's C API (include/redist/*.h): planning is a
pure function of the spec (every rank computes the same plan), execution
runs libredist_mpi on an mpi4py communicator with buffer-protocol arrays.
Failures raise redist.Error subclasses carrying the C status and the place
(SpecError, PlanError, ExecError).  Two meshes: Spec((train, infer), ...);
many arrays: Arrays / plan_set / state_dict_spec (redist._sets).
"""

from ._redist import (Error, SpecError, PlanError, ExecError, DTYPES, OPS,
                      REDUCE_OPS, LINKS, LIB_VERSION, HAVE_MPI, HAVE_SHMEM,
                      status_string,
                      OK, ERR_INVALID, ERR_NOMEM, ERR_OVERFLOW, ERR_INFEASIBLE,
                      ERR_IO, ERR_PARSE, ERR_LIMIT, ERR_PLAN, ERR_BACKEND,
                      ERR_MISMATCH)
from ._types import (Mesh, Type, Spec, Plan, Step, VerifyResult, load_spec,
                     plan, verify, from_named_sharding, from_dtensor,
                     dtype_name, numpy_dtype)
from ._sets import (Arrays, PlanSet, Round, load_arrays, plan_set,
                    state_dict_spec)
from ._exec import Executor, execute, prepare, free_contexts
from . import shmem

__version__ = LIB_VERSION

__all__ = ["Error", "SpecError", "PlanError", "ExecError", "Mesh", "Type",
           "Spec", "Plan", "Step", "VerifyResult", "load_spec", "plan",
           "verify", "from_named_sharding", "from_dtensor", "dtype_name",
           "numpy_dtype", "Arrays", "PlanSet", "Round", "load_arrays",
           "plan_set", "state_dict_spec", "Executor", "execute", "prepare",
           "free_contexts", "DTYPES",
           "OPS", "REDUCE_OPS", "LINKS", "HAVE_MPI", "HAVE_SHMEM", "shmem",
           "status_string"]
