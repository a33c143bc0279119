/*
 * redist.h - umbrella header of libredist.
 *
 * Layers (each depends only on those above it):
 *   redist/core.h  status, errors, dtypes, meshes, sharding types
 *   redist/spec.h  redistribution problems, JSON / inline loaders
 *   redist/plan.h  solver, step views, verifier, writers
 *   redist/exec.h  executor, backend endpoints, the sim backend
 * The planning layers need jansson only (exec adds POSIX threads); no MPI
 * or OpenSHMEM header is ever included from here.
 */
#ifndef REDIST_H
#define REDIST_H

#include "redist/core.h"
#include "redist/spec.h"
#include "redist/plan.h"
#include "redist/exec.h"

#endif
