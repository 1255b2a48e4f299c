// Caliper: a config whose output is made collectively over an MPI
// communicator (drop-in for the reference's
// caliper/CollectiveOutputChannel.h). Header-only over libcaliper's C API
// (caliper/cali-mpi-binding.h).
#ifndef CALI_COLLECTIVE_OUTPUT_CHANNEL_H
#define CALI_COLLECTIVE_OUTPUT_CHANNEL_H

#include <caliper/ConfigManager.h>

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include <caliper/cali-mpi-binding.h>

extern "C" {
// The callback through which libcaliper-mpi hands the output's text to a
// std::ostream (C linkage, as the function pointer type requires).
static inline void cali_cxx_write_to_ostream(void* os, const char* text, std::size_t length)
{
    static_cast<std::ostream*>(os)->write(text, static_cast<std::streamsize>(length));
}
}

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

    /// Writes the output, reduced over `comm`, to `os` instead of where
    /// the config's `output` option says; on the ranks other than 0 of
    /// `comm`, which write nothing, `os` is left alone.
    void collective_flush(std::ostream& os, MPI_Comm comm)
    {
        cali_mpi_flush_to_stream(&comm, flush, &m_mgr, cali_cxx_write_to_ostream, &os);
    }
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
