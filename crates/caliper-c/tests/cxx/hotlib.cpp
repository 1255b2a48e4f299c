// A C++ shared library whose one function takes the time, for the sampler:
// its samples must be named by the library and the demangled name.
#include <ctime>

namespace hot {

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(double seconds)
{
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (unsigned long i = 0; i < 200000; ++i)
            sink = sink * 31 + i;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (double(now.tv_sec - start.tv_sec) + double(now.tv_nsec - start.tv_nsec) * 1e-9 < seconds);
}

} // namespace hot
