// Annotation macros and a ConfigManager in C++: the program chooses its
// own measurement, given as its first argument (default runtime-report).
#include <caliper/cali.h>
#include <caliper/cali-manager.h>
#include <iostream>

static double work(int n)
{
    CALI_CXX_MARK_FUNCTION;  // region=work until the function returns
    double sum = 0;
    for (int j = 0; j < n; ++j)
        sum += j * 0.5;
    return sum;
}

int main(int argc, char* argv[])
{
    cali::ConfigManager mgr;
    mgr.add(argc > 1 ? argv[1] : "runtime-report");
    if (mgr.error())
        std::cerr << "Caliper config error: " << mgr.error_msg() << std::endl;
    mgr.start();
    double sum = 0;
    {
        CALI_CXX_MARK_SCOPE("main");  // ends at the closing brace
        CALI_CXX_MARK_LOOP_BEGIN(mainloop, "mainloop");
        for (int i = 0; i < 4; ++i) {
            CALI_CXX_MARK_LOOP_ITERATION(mainloop, i);
            sum += work(1000000);
        }
        CALI_CXX_MARK_LOOP_END(mainloop);
    }
    std::cout << "sum " << sum << std::endl;
    mgr.flush();  // writes the report (else at exit)
}
