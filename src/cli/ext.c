/* Commands beyond the planner (none are built in this configuration). */
#include "cli.h"

void cli_register_extensions(void) {}

int cli_dispatch_extension(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return -1;
}
