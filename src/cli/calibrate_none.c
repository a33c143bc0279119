/* `redistplan calibrate` in a build without MPI or hwloc: says so, once
 * under a launcher (through the agreement where the build has one, else
 * on rank 0 only). */
#include <stdio.h>

#include "cli.h"
#include "launch.h"

int cli_cmd_calibrate(const cli_command *self, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_launch_begin(self->name);
    if (cli_launched() || cli_launch_rank() <= 0)
        fprintf(stderr,
                "redistplan: calibrate: needs a redistplan built with MPI "
                "and hwloc (this one has %s; install libopenmpi-dev and "
                "libhwloc-dev and reconfigure)\n",
#if defined(REDIST_HAVE_MPI)
                "no hwloc"
#elif defined(REDIST_HAVE_HWLOC)
                "no MPI"
#else
                "neither"
#endif
        );
    return cli_launch_end(CLI_BAD_INPUT);
}
