// A C++ MPI program with its own config managers:
//
//   mpi-app-cxx FILE   runtime-report across all ranks to FILE, and a
//                      second one per half of the ranks (even, odd), each
//                      flushed by an MpiChannelManager over its half's
//                      communicator to sub-<world rank of its rank 0>.txt;
//                      and a CollectiveOutputChannel's runtime-report
//                      flushed into a std::ostringstream, which each rank
//                      writes to stream-<rank>.txt (empty but on rank 0).

#include <caliper/CollectiveOutputChannel.h>
#include <caliper/MpiChannelManager.h>
#include <caliper/cali-mpi.h>
#include <caliper/cali.h>
#include <caliper/ConfigManager.h>
#include <mpi.h>

#include <fstream>
#include <sstream>
#include <string>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    cali_mpi_init();
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);

    cali::ConfigManager all;
    all.add((std::string("runtime-report(output=") + (argc > 1 ? argv[1] : "stderr") + ")").c_str());
    cali::ConfigManager sub("runtime-report(output=sub-%mpi.rank%.txt,region.count)");
    if (all.error() || sub.error())
        return 1;
    cali::MpiChannelManager halves(half);
    halves.add(sub);
    std::pair<std::shared_ptr<cali::CollectiveOutputChannel>, std::string> collective =
        cali::make_collective_output_channel("runtime-report(region.count)");
    if (!collective.first)
        return 1;
    all.start();
    halves.start();
    collective.first->start();
    {
        CALI_CXX_MARK_SCOPE("solve");
        int sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    all.flush();
    halves.collective_flush();
    std::ostringstream report;
    collective.first->collective_flush(report, MPI_COMM_WORLD);
    std::ofstream(("stream-" + std::to_string(rank) + ".txt").c_str()) << report.str();
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
