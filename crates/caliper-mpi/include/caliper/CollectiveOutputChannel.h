// Caliper: a config whose output is made collectively over an MPI
// communicator (drop-in for the reference's
// caliper/CollectiveOutputChannel.h). Header-only over libcaliper-mpi's C
// API. Not provided: collective_flush to a program's std::ostream (the
// output goes where the config's `output` option says).
#ifndef CALI_COLLECTIVE_OUTPUT_CHANNEL_H
#define CALI_COLLECTIVE_OUTPUT_CHANNEL_H

#include <caliper/ConfigManager.h>

#include <mpi.h>

#include <memory>
#include <string>
#include <utility>

extern "C" void cali_mpi_flush_on(const void* comm, void (*flush)(void*), void* arg);

namespace cali
{

class CollectiveOutputChannel
{
    ConfigManager m_mgr;

    static void flush(void* mgr) { static_cast<ConfigManager*>(mgr)->flush(); }

public:

    explicit CollectiveOutputChannel(const ConfigManager& mgr) : m_mgr(mgr) {}

    void start() { m_mgr.start(); }
    void stop() { m_mgr.stop(); }

    /// Writes the output, reduced over `comm` (MPI_COMM_NULL: this rank
    /// alone); all ranks of `comm` must call it.
    void collective_flush(MPI_Comm comm) { cali_mpi_flush_on(&comm, flush, &m_mgr); }
};

/// A collective output channel for the first config of `config_string`,
/// or a null pointer and the error message.
inline std::pair<std::shared_ptr<CollectiveOutputChannel>, std::string>
make_collective_output_channel(const char* config_string)
{
    ConfigManager mgr;
    if (!mgr.add(config_string))
        return std::make_pair(std::shared_ptr<CollectiveOutputChannel>(), mgr.error_msg());
    return std::make_pair(std::make_shared<CollectiveOutputChannel>(mgr), std::string());
}

} // namespace cali

#endif
