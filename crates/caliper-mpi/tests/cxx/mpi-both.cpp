// A C++ MPI program in the shape of an application that links both the
// caliper and caliper-mpi CMake targets: annotated phases around MPI
// collectives.
#include <caliper/cali.h>
#include <mpi.h>

static int exchange(int rank)
{
    CALI_CXX_MARK_FUNCTION;
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int total = 0;
    {
        CALI_CXX_MARK_SCOPE("solve");
        for (int i = 0; i < 3; ++i)
            total += exchange(rank);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return total > 0 ? 0 : 1;
}
