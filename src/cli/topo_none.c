/* `redistplan topo` in a build without hwloc: says so. */
#include <stdio.h>

#include "cli.h"

int cli_cmd_topo(const cli_command *self, int argc, char **argv)
{
    (void)self;
    (void)argc;
    (void)argv;
    fprintf(stderr, "redistplan: topo: built without hwloc (install "
                    "libhwloc-dev and reconfigure)\n");
    return CLI_BAD_INPUT;
}
