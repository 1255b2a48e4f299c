// A C++ program written for the reference Caliper, built against its
// headers (tests/reference-headers): the annotation macros, cali::Annotation
// with its Guard, copies and metadata, cali::Variant, and a
// cali::ConfigManager for the config string of its first argument.
#include <caliper/ConfigManager.h>
#include <caliper/cali.h>

#include <cstdint>
#include <iostream>
#include <sstream>

static void work(int n)
{
    CALI_CXX_MARK_FUNCTION;
    CALI_CXX_MARK_LOOP_BEGIN(loop, "work.loop");
    for (int i = 0; i < n; ++i) {
        CALI_CXX_MARK_LOOP_ITERATION(loop, i);
        CALI_CXX_MARK_SCOPE("work.body");
    }
    CALI_CXX_MARK_LOOP_END(loop);
}

static void annotate()
{
    cali::Annotation phase("ref.phase");
    {
        cali::Annotation::Guard g(phase.begin("setup"));
        cali::Annotation copy(phase);
        copy.set("setup.more");
    }
    cali::Annotation::MetadataListType meta;
    meta["ref.meta"] = cali::Variant(42);
    cali::Annotation level("ref.level", meta);
    level.begin(1).set(2);
    cali::Annotation assigned("ref.unused");
    assigned = level;
    assigned.end();

    cali::Annotation ratio("ref.ratio");
    ratio.begin(0.5);
    ratio.set(cali::Variant(0.25));
    ratio.end();

    uint64_t             bytes = 9;
    cali::Annotation     size("ref.bytes");
    cali::Annotation::Guard g(size.begin(CALI_TYPE_UINT, &bytes, sizeof(bytes)));
    cali::Annotation("ref.flag").begin().end();
    cali::Loop loop("ref.loop");
    {
        cali::Loop copy(loop);
    }
    loop.end();
    work(3);
}

/// The out-of-line members of Variant.
static void variants()
{
    cali::Variant sum(40);
    sum += cali::Variant(2);
    std::ostringstream os;
    os << sum << ' ' << cali::Variant::from_string(CALI_TYPE_INT, "17").to_int() << ' '
       << cali::Variant(7.5).to_string() << ' ' << cali::Variant(3).to_id() << ' '
       << cali::Variant(3).min(cali::Variant(1)) << ' ' << cali::Variant(3).max(cali::Variant(9)) << ' '
       << cali::Variant(5).div(2);
    std::cout << "variants: " << os.str() << std::endl;
}

/// What a ConfigManager says about config strings and its configs.
static void inspect(cali::ConfigManager& mgr)
{
    std::cout << "check: [" << mgr.check("runtime-report") << "] ["
              << mgr.check("runtime-report,no-such-option") << "]" << std::endl;
    bool found = false;
    for (const std::string& name : mgr.available_config_specs())
        found = found || name == "runtime-report";
    std::cout << "runtime-report available: " << found << std::endl;
    std::string doc = mgr.get_documentation_for_spec("runtime-report");
    std::cout << "documentation: " << doc.substr(0, doc.find('\n')) << std::endl;
    cali::ConfigManager::argmap_t extra;
    cali::ConfigManager          other;
    other.add("runtime-report,answer=42", extra);
    std::cout << "extra: answer=" << extra["answer"] << " error=" << other.error() << std::endl;
    cali::ConfigManager bad("no-such-config");
    std::cout << "error: " << bad.error_msg() << std::endl;
    for (const cali::ConfigManager::ChannelPtr& chn : mgr.get_all_channels())
        std::cout << "channel: " << chn->name() << " active=" << chn->is_active() << std::endl;
}

int main(int argc, char* argv[])
{
    cali::ConfigManager mgr;
    if (argc > 1) {
        mgr.set_default_parameter("output", "stdout");
        mgr.add(argv[1]);
        if (mgr.error()) {
            std::cerr << "annotate: " << mgr.error_msg() << std::endl;
            return 1;
        }
        inspect(mgr);
    }
    mgr.start();
    {
        CALI_CXX_MARK_FUNCTION;
        annotate();
    }
    variants();
    if (argc > 1) {
        cali::ConfigManager::ChannelPtr chn = mgr.get_channel(mgr.get_all_channels().front()->name().c_str());
        std::cout << "started: " << chn->name() << " active=" << chn->is_active() << std::endl;
    }
    mgr.flush();
    return 0;
}
