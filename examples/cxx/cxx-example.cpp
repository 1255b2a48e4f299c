// The C++ example: main > init, main > mainloop (a loop of 4 iterations)
// > foo, with the globals `iterations` and `caliper.config`. Measure it
// with CALI_CONFIG=<config> or `-P <config>`.
#include <caliper/cali.h>
#include <caliper/cali-manager.h>

#include <iostream>
#include <string>

static double work(int n)
{
    double x = 0.0;
    for (int i = 0; i < n; ++i)
        x += i * 0.5;
    return x;
}

static double foo()
{
    CALI_CXX_MARK_FUNCTION;
    return work(100000);
}

int main(int argc, char* argv[])
{
    std::string config;
    for (int a = 1; a < argc; ++a)
        if (std::string(argv[a]) == "-P" && a + 1 < argc)
            config = argv[++a];

    cali::ConfigManager mgr;
    if (!config.empty()) {
        mgr.add(config.c_str());
        if (mgr.error())
            std::cerr << "Caliper config error: " << mgr.error_msg() << std::endl;
    }
    mgr.start();

    const int iterations = 4;
    cali_set_global_int_byname("iterations", iterations);
    cali_set_global_string_byname("caliper.config", config.c_str());

    double sum = 0.0;
    {
        CALI_CXX_MARK_FUNCTION;
        {
            CALI_CXX_MARK_SCOPE("init");
            sum += work(1000);
        }
        CALI_CXX_MARK_LOOP_BEGIN(mainloop, "mainloop");
        for (int i = 0; i < iterations; ++i) {
            CALI_CXX_MARK_LOOP_ITERATION(mainloop, i);
            sum += foo();
        }
        CALI_CXX_MARK_LOOP_END(mainloop);
    }

    mgr.flush();
    return sum > 0.0 ? 0 : 1;
}
