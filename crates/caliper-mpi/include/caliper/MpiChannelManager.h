// Caliper: channels flushed collectively over an MPI communicator
// (drop-in for the reference's caliper/MpiChannelManager.h): their
// cross-rank outputs (runtime-report, spot, the profiles' one file per
// job) are reduced over the given communicator's ranks and written by its
// rank 0. Header-only over libcaliper's C API
// (caliper/cali-mpi-binding.h).
#ifndef CALI_MPI_CHANNEL_MANAGER_H
#define CALI_MPI_CHANNEL_MANAGER_H

#include <caliper/ConfigManager.h>

#include <mpi.h>

#include <caliper/cali-mpi-binding.h>

namespace cali
{

class MpiChannelManager
{
    MPI_Comm                 m_comm;
    ConfigManager::ChannelList m_channels;

    static void flush_all(void* self)
    {
        for (auto& channel : static_cast<MpiChannelManager*>(self)->m_channels)
            channel->flush();
    }

public:

    explicit MpiChannelManager(MPI_Comm comm) : m_comm(comm) {}

    /// Adds the channels of a config manager.
    void add(const ConfigManager& mgr)
    {
        ConfigManager::ChannelList list = mgr.get_all_channels();
        m_channels.insert(m_channels.end(), list.begin(), list.end());
    }

    void start()
    {
        for (auto& channel : m_channels)
            channel->start();
    }

    void stop()
    {
        for (auto& channel : m_channels)
            channel->stop();
    }

    /// Flushes every channel; all ranks of the communicator must call it.
    void collective_flush() { cali_mpi_flush_on(&m_comm, flush_all, this); }
};

} // namespace cali

#endif
