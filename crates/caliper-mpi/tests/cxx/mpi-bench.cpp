// Measurements of libcaliper-mpi (figures in the README):
//
//   mpi-bench pingpong N   2 ranks: N round trips of MPI_Send/MPI_Recv;
//                          rank 0 prints the nanoseconds per
//                          Send/Recv pair (half a round trip). Run it
//                          built with -DNO_CALIPER (plain MPI), linked
//                          with libcaliper-mpi, and under
//                          CALI_CONFIG=runtime-report,profile.mpi.
//   mpi-bench self N       each rank sends N messages to itself and
//                          receives them (a Send/Recv pair without
//                          waiting for another process), inside a region
//                          as in a program (built with Caliper); prints
//                          the nanoseconds per pair. Run with one rank.
//   mpi-bench marks N      N times two annotated regions (CALI_MARK_BEGIN/
//                          END) inside a region: the region updates a
//                          profiled Send/Recv pair makes, without MPI;
//                          nanoseconds per two.
//   mpi-bench reduce NODES each rank enters NODES distinct regions, then
//                          a runtime-report ConfigManager flushes across
//                          the ranks; rank 0 prints the flush's seconds.

#ifndef NO_CALIPER
#include <caliper/ConfigManager.h>
#include <caliper/cali.h>
#endif
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static void pingpong(long n)
{
    int rank = 0, value = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int warm = 0; warm < 2; ++warm) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; ++i) {
            if (rank == 0) {
                MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0 && warm == 1)
            std::printf("pingpong: %.1f ns per Send/Recv pair\n", t / n / 2 * 1e9);
    }
}

static void self_pairs(long n)
{
    int rank = 0, value = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#ifndef NO_CALIPER
    CALI_MARK_BEGIN("self");
#endif
    for (int warm = 0; warm < 2; ++warm) {
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; ++i) {
            MPI_Send(&value, 1, MPI_INT, rank, 0, MPI_COMM_WORLD);
            MPI_Recv(&value, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0 && warm == 1)
            std::printf("self: %.1f ns per Send/Recv pair\n", t / n * 1e9);
    }
#ifndef NO_CALIPER
    CALI_MARK_END("self");
#endif
}

#ifndef NO_CALIPER
static void marks(long n)
{
    CALI_MARK_BEGIN("marks");
    for (int warm = 0; warm < 2; ++warm) {
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; ++i) {
            CALI_MARK_BEGIN("send");
            CALI_MARK_END("send");
            CALI_MARK_BEGIN("recv");
            CALI_MARK_END("recv");
        }
        double t = MPI_Wtime() - t0;
        if (warm == 1)
            std::printf("marks: %.1f ns per two regions\n", t / n * 1e9);
    }
    CALI_MARK_END("marks");
}

static void reduce(long nodes)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    cali::ConfigManager mgr;
    mgr.add("runtime-report(output=/dev/null)");
    mgr.start();
    CALI_MARK_BEGIN("main");
    char name[32];
    for (long i = 0; i < nodes; ++i) {
        std::snprintf(name, sizeof name, "r%ld", i);
        CALI_MARK_BEGIN(name);
        CALI_MARK_END(name);
    }
    CALI_MARK_END("main");
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    mgr.flush();
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        std::printf("reduce: %d ranks, %ld nodes: %.3f s\n", size, nodes, t);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "pingpong";
    long n = argc > 2 ? std::atol(argv[2]) : 100000;
    if (std::strcmp(mode, "pingpong") == 0)
        pingpong(n);
    else if (std::strcmp(mode, "self") == 0)
        self_pairs(n);
#ifndef NO_CALIPER
    else if (std::strcmp(mode, "reduce") == 0)
        reduce(n);
    else if (std::strcmp(mode, "marks") == 0)
        marks(n);
#endif
    MPI_Finalize();
    return 0;
}
