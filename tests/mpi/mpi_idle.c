/* An MPI program that starts MPI and then never joins a collective for
 * `argv[1]` seconds: the rank that never joins redistplan's agreement
 * (tests/mpi/launch_cli.sh). */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
    MPI_Finalize();
    return 0;
}
