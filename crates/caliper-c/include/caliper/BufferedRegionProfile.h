// Caliper: cali::BufferedRegionProfile (drop-in for the reference's
// BufferedRegionProfile.h), header-only over the C functions of
// wrapBufferedRegionProfile.h: a region profile read from inside the
// program, fetched into a buffer and then read one region at a time.
#ifndef CALI_BUFFEREDREGIONPROFILE_H
#define CALI_BUFFEREDREGIONPROFILE_H

#include "wrapBufferedRegionProfile.h"

#include <memory>

namespace cali
{

namespace detail
{
/// Owns a C BufferedRegionProfile (and its channel); copies share it.
struct RegionProfileHolder {
    cali_BufferedRegionProfile rp;
    RegionProfileHolder() { cali_BufferedRegionProfile_new(&rp); }
    ~RegionProfileHolder() { cali_BufferedRegionProfile_delete(&rp); }

private:
    RegionProfileHolder(const RegionProfileHolder&);
    RegionProfileHolder& operator=(const RegionProfileHolder&);
};
} // namespace detail

/// Measures the time spent in each region while started. fetch_*()
/// takes the times measured so far into the buffer; the other queries
/// read the buffer. Times are in seconds; regions of the same name are
/// merged. Copies share the profile.
class BufferedRegionProfile
{
protected:
    std::shared_ptr<detail::RegionProfileHolder> m_h;

public:
    BufferedRegionProfile() : m_h(new detail::RegionProfileHolder) {}

    void start() { cali_BufferedRegionProfile_start(&m_h->rp); }
    void stop() { cali_BufferedRegionProfile_stop(&m_h->rp); }
    /// Forgets the times measured so far.
    void clear() { cali_BufferedRegionProfile_clear(&m_h->rp); }

    /// Fetches the times per region of the attribute named region_type,
    /// or of every nested attribute (region, phase, loop, ...) if "".
    void fetch_exclusive_region_times(const char* region_type = "")
    {
        cali_BufferedRegionProfile_fetch_exclusive_region_times(&m_h->rp, region_type);
    }
    void fetch_inclusive_region_times(const char* region_type = "")
    {
        cali_BufferedRegionProfile_fetch_inclusive_region_times(&m_h->rp, region_type);
    }

    /// Of the last fetch: seconds measured, in the regions, in one region.
    double total_profiling_time() const { return cali_BufferedRegionProfile_total_profiling_time(&m_h->rp); }
    double total_region_time() const { return cali_BufferedRegionProfile_total_region_time(&m_h->rp); }
    double region_time(const char* region) const { return cali_BufferedRegionProfile_region_time(&m_h->rp, region); }
};

} // namespace cali

#endif
