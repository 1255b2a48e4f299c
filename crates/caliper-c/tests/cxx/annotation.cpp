// cali::Annotation and the scope and loop macros in the shapes programs
// written for the reference use: begin and set return the annotation, so
// calls chain and a Guard takes one straight from a temporary; values of
// the common types (bool, int, double, C and C++ strings, Variant); the
// scope and loop macros more than once in one scope; the classes made from
// a name or an annotation by conversion.
#include <caliper/cali.h>

#include <iostream>
#include <string>

static void flagged()
{
    cali::Annotation::Guard g(cali::Annotation("ann.flag").set(true));
    CALI_CXX_MARK_SCOPE("flagged");
    CALI_CXX_MARK_SCOPE("flagged.inner");
}

static void loops()
{
    CALI_CXX_MARK_LOOP_BEGIN(first, "ann.first");
    for (int i = 0; i < 2; ++i) {
        CALI_CXX_MARK_LOOP_ITERATION(first, i);
    }
    CALI_CXX_MARK_LOOP_END(first);
    CALI_CXX_MARK_LOOP_BEGIN(second, "ann.second");
    for (unsigned i = 0; i < 1; ++i) {
        CALI_CXX_MARK_LOOP_ITERATION(second, i);
    }
    CALI_CXX_MARK_LOOP_END(second);
}

int main()
{
    CALI_CXX_MARK_FUNCTION;
    flagged();

    cali::Annotation phase("ann.phase");
    phase.begin("outer").begin("inner");
    phase.end();
    phase.end();

    cali::Annotation level("ann.level");
    {
        cali::Annotation::Guard g = level.begin(1);
        level.set(2).set(3);
    }

    std::string name = "text";
    cali::Annotation("ann.name").begin(name).end();
    cali::Annotation("ann.name").begin(name.c_str()).end();

    cali::Annotation ratio("ann.ratio");
    ratio.set(0.5).set(cali::Variant(0.25)).end();

    cali::Annotation::Guard on(cali::Annotation("ann.on").begin());

    loops();
    {
        cali::ScopeAnnotation scope = "converted.scope";
        cali::Function function = "converted.function";
        cali::Loop loop = "ann.converted";
        loop.end();
    }
    std::cout << "annotation: done" << std::endl;
    return 0;
}
