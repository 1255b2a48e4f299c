// Caliper: cali::RegionProfile (drop-in for the reference's
// caliper/RegionProfile.h), header-only over the C functions of
// wrapBufferedRegionProfile.h: the time spent in each region while the
// profile is started, read from inside the program.
#ifndef CALI_REGIONPROFILE_H
#define CALI_REGIONPROFILE_H

#include "BufferedRegionProfile.h"

#include <map>
#include <string>
#include <tuple>

// Collects the regions of a fetch into a std::map (C linkage, as the
// function pointer type requires; it does not throw unless memory runs
// out).
extern "C" {
static inline void cali_cxx_collect_region_time(void* map, const char* region, double seconds)
{
    (*static_cast<std::map<std::string, double>*>(map))[region] = seconds;
}
}

namespace cali
{

/// Measures the time spent in each region while started (start(),
/// stop()). The queries return (seconds per region name, seconds in those
/// regions, seconds measured in all); regions of the same name are
/// merged. Copies share the profile.
class RegionProfile : private BufferedRegionProfile
{
    std::tuple<std::map<std::string, double>, double, double> fetched()
    {
        std::map<std::string, double> times;
        cali_BufferedRegionProfile_region_times(&m_h->rp, cali_cxx_collect_region_time, &times);
        return std::make_tuple(times, total_region_time(), total_profiling_time());
    }

public:
    using BufferedRegionProfile::clear;
    using BufferedRegionProfile::start;
    using BufferedRegionProfile::stop;

    /// Exclusive times: a region's own time, without the regions inside
    /// it. region_type names the attribute whose regions count ("": every
    /// nested attribute: region, phase, loop, ...).
    std::tuple<std::map<std::string, double>, double, double>
    exclusive_region_times(const std::string& region_type = "")
    {
        fetch_exclusive_region_times(region_type.c_str());
        return fetched();
    }

    /// Inclusive times: a region's time with the regions inside it.
    std::tuple<std::map<std::string, double>, double, double>
    inclusive_region_times(const std::string& region_type = "")
    {
        fetch_inclusive_region_times(region_type.c_str());
        return fetched();
    }
};

} // namespace cali

#endif
