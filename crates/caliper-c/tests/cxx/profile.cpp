// cali::RegionProfile and cali::BufferedRegionProfile: region times read
// from inside the program. Checks them against what it ran (sleeps: a
// measured time is at least the time slept) and prints
// "profile: all checks passed".
#include <caliper/BufferedRegionProfile.h>
#include <caliper/RegionProfile.h>
#include <caliper/cali.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tuple>

static int failures = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            std::printf("profile: check failed at line %d: %s\n", __LINE__, #cond); \
            ++failures;                                                             \
        }                                                                           \
    } while (0)

static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

static bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-9 * (1.0 + std::fabs(a) + std::fabs(b)); }

int main()
{
    cali::RegionProfile rp;
    rp.start();
    {
        CALI_CXX_MARK_SCOPE("prof.outer");
        sleep_ms(10);
        {
            CALI_CXX_MARK_SCOPE("prof.inner");
            sleep_ms(20);
        }
        cali_begin_phase("prof.phase");
        sleep_ms(5);
        cali_end_phase("prof.phase");
    }
    rp.stop();

    std::map<std::string, double> times;
    double                        in_regions = 0, total = 0;
    std::tie(times, in_regions, total) = rp.exclusive_region_times();
    CHECK(times.size() == 3);
    CHECK(times["prof.outer"] >= 0.010 && times["prof.inner"] >= 0.020 && times["prof.phase"] >= 0.005);
    CHECK(close_to(times["prof.outer"] + times["prof.inner"] + times["prof.phase"], in_regions));
    CHECK(in_regions <= total);

    std::map<std::string, double> incl;
    std::tie(incl, in_regions, total) = rp.inclusive_region_times();
    CHECK(close_to(incl["prof.outer"], in_regions));
    CHECK(close_to(incl["prof.inner"], times["prof.inner"]));

    // Only the phase attribute's regions.
    std::map<std::string, double> phases;
    std::tie(phases, in_regions, total) = rp.exclusive_region_times("phase");
    CHECK(phases.size() == 1 && phases.count("prof.phase") == 1);
    CHECK(close_to(in_regions, phases["prof.phase"]));

    // Copies share the profile; clear forgets what it measured.
    cali::RegionProfile copy = rp;
    copy.clear();
    std::tie(times, in_regions, total) = rp.inclusive_region_times();
    CHECK(times.empty() && total == 0.0);

    cali::BufferedRegionProfile brp;
    brp.start();
    cali_begin_region("prof.buffered");
    sleep_ms(3);
    cali_end_region("prof.buffered");
    brp.stop();
    brp.fetch_inclusive_region_times();
    CHECK(brp.region_time("prof.buffered") >= 0.003);
    CHECK(brp.region_time("prof.outer") == 0.0);
    CHECK(close_to(brp.total_region_time(), brp.region_time("prof.buffered")));
    CHECK(brp.total_profiling_time() >= brp.total_region_time());

    if (failures == 0)
        std::printf("profile: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
