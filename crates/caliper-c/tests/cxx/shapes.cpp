// Shapes of C++ programs written for the reference Caliper that must build
// and behave the same against this library, with only caliper/cali.h
// included: the standard streams come with it (the reference's cali.h
// includes <iostream>, <map> and <string> in C++), and the scope macros
// can be used more than once in one scope (their variable names expand
// __LINE__). A timed asynchronous event (caliper/AsyncEvent.h) is a plain
// value, begun in one place and ended in another.
#include <caliper/AsyncEvent.h>
#include <caliper/cali.h>
#include <caliper/caliper-config.h>

// Programs test the API version they build against.
#if !defined(CALIPER_MAJOR_VERSION) || CALIPER_MAJOR_VERSION < 2
#error "caliper-config.h: no version 2 API"
#endif

static void twice_in_one_scope()
{
    CALI_CXX_MARK_SCOPE("first");
    CALI_CXX_MARK_SCOPE("second");
    std::cerr << "shapes: two scopes" << std::endl;
}

static void loops()
{
    CALI_CXX_MARK_LOOP_BEGIN(outer, "outer.loop");
    for (int i = 0; i < 2; ++i) {
        CALI_CXX_MARK_LOOP_ITERATION(outer, i);
        CALI_CXX_MARK_SCOPE("body");
        CALI_CXX_MARK_SCOPE("body.inner");
    }
    CALI_CXX_MARK_LOOP_END(outer);
}

int main()
{
    CALI_CXX_MARK_FUNCTION;
    cali::TimedAsyncEvent event = cali::TimedAsyncEvent::begin("shapes.async");
    std::string name = "main.scope";
    std::map<std::string, int> counts;
    {
        CALI_CXX_MARK_SCOPE(name.c_str());
        twice_in_one_scope();
        loops();
        counts[name] += 1;
    }
    cali::TimedAsyncEvent copy = event;
    copy.end();
    std::cout << "shapes: done " << counts.size() << std::endl;
    return 0;
}
