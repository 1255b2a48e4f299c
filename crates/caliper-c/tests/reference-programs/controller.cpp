// A C++ program written for the reference Caliper, built against its
// headers (tests/reference-headers): a cali::ChannelController of its own
// settings, a channel with a report of its regions.
#include <caliper/ChannelController.h>
#include <caliper/cali.h>

#include <iostream>

int main()
{
    cali::ChannelController ctl("own", 0,
                                { { "CALI_SERVICES_ENABLE", "event,trace,report" },
                                  { "CALI_REPORT_FILENAME", "stdout" },
                                  { "CALI_REPORT_CONFIG", "select region,count() group by region format expand" } });
    std::cout << ctl.name() << ": instantiated=" << ctl.is_instantiated() << std::endl;
    ctl.start();
    CALI_MARK_BEGIN("own.region");
    CALI_MARK_END("own.region");
    std::cout << "started: active=" << ctl.is_active() << " services=" << ctl.copy_config()["CALI_SERVICES_ENABLE"]
              << std::endl;
    ctl.stop();
    CALI_MARK_BEGIN("own.stopped");
    CALI_MARK_END("own.stopped");
    std::cout << "stopped: active=" << ctl.is_active() << std::endl;
    ctl.flush();
    return 0;
}
