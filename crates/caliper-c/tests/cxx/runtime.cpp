// The low-level C++ runtime classes as programs written for the
// reference use them: cali::Caliper (attributes, begin/end/set/exchange/
// get, channels from a RuntimeConfig, push/pull snapshots, flush,
// flush_and_write, globals, async events), a ChannelController subclass,
// the ConfigManager's controllers through the ChannelController
// interface, Log, OutputStream and Variant. Checks what it can see
// itself; prints "runtime: all checks passed" and exits 0 if they pass.
// The Rust test checks the report, the .cali file and the log lines.
//
//   runtime SCRATCH_DIR
#include <caliper/Caliper.h>
#include <caliper/ChannelController.h>
#include <caliper/ConfigManager.h>
#include <caliper/SnapshotRecord.h>
#include <caliper/common/Log.h>
#include <caliper/common/OutputStream.h>
#include <caliper/common/RuntimeConfig.h>
#include <caliper/common/StringConverter.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static int failures = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            std::printf("runtime: check failed at line %d: %s\n", __LINE__, #cond); \
            ++failures;                                                             \
        }                                                                           \
    } while (0)

static bool has_attribute(const std::vector<cali::Attribute>& list, const char* name)
{
    for (std::size_t i = 0; i < list.size(); ++i)
        if (list[i].name() == name)
            return true;
    return false;
}

// The value of attr in a list of entries ("" if none).
static std::string value_in(const std::vector<cali::Entry>& rec, const cali::Attribute& attr)
{
    for (std::size_t i = 0; i < rec.size(); ++i) {
        cali::Variant v = rec[i].value(attr.id());
        if (!v.empty())
            return v.to_string();
    }
    return "";
}

static void variants()
{
    CHECK(cali::Variant(42).to_string() == "42");
    CHECK(cali::Variant(-7).type() == CALI_TYPE_INT);
    CHECK(cali::Variant(static_cast<uint64_t>(7)).type() == CALI_TYPE_UINT);
    CHECK(cali::Variant(0.5).to_string() == "0.500000");
    CHECK(cali::Variant(true).to_string() == "true");
    CHECK(cali::Variant(CALI_TYPE_DOUBLE).to_string() == "double");
    CHECK(cali::Variant("text").to_string() == "text");
    CHECK(cali::Variant::from_string(CALI_TYPE_INT, "-12").to_int() == -12);
    CHECK(cali::Variant::from_string(CALI_TYPE_INT, "twelve").empty());
    CHECK(cali::Variant::from_string(CALI_TYPE_BOOL, "T").to_bool());
    CHECK(cali::Variant::from_string(CALI_TYPE_ADDR, "ff").to_string() == "ff");
    CHECK(cali::Variant(1) < cali::Variant(2) && cali::Variant(2) == cali::Variant(2));
    std::ostringstream os;
    os << cali::Variant(3);
    CHECK(os.str() == "3");

    // Aggregation arithmetic: empty takes the other value, the other
    // value converts to this one's type, div by a count.
    cali::Variant sum;
    sum += cali::Variant(2.5);
    sum += cali::Variant(3);
    CHECK(sum.type() == CALI_TYPE_DOUBLE && sum.to_double() == 5.5);
    cali::Variant n(7);
    n += cali::Variant(1.9);
    CHECK(n.type() == CALI_TYPE_INT && n.to_int() == 8);
    CHECK(cali::Variant(5).min(cali::Variant(3)).to_int() == 3 && cali::Variant(5).max(cali::Variant(3)).to_int() == 5);
    CHECK(cali::Variant(static_cast<uint64_t>(9)).min(cali::Variant(12)).to_uint() == 9);
    CHECK(cali::Variant(7).div(2).to_int() == 3 && cali::Variant(7.0).div(2).to_double() == 3.5);
    CHECK(cali::Variant(7).div(0).empty() && cali::Variant("text").div(2).empty());
    cali::Variant text("text");
    text += cali::Variant(1);
    CHECK(text.to_string() == "text");
}

// RuntimeConfig::get: set values, then the environment (if read), then
// presets, then the default the service documents.
static void runtime_configs()
{
    setenv("CALI_EVENT_REGION_LEVEL", "3", 1);
    cali::RuntimeConfig cfg;
    cfg.set("CALI_SERVICES_ENABLE", "event, trace");
    cfg.preset("CALI_EVENT_REGION_LEVEL", "1");
    cfg.preset("CALI_EVENT_ENABLE_SNAPSHOT_INFO", "false");
    std::vector<std::string> services = cfg.get("services", "enable").to_stringlist(",:");
    CHECK(services.size() == 2 && services[0] == "event" && services[1] == "trace");
    CHECK(cfg.get("event", "region_level").to_int() == 3);
    bool ok = true;
    CHECK(!cfg.get("event", "enable_snapshot_info").to_bool(&ok) && ok);
    CHECK(cfg.get("libpfm", "sample_period").to_uint() == 20000000);
    CHECK(cfg.get("no_such", "setting").to_string().empty());
    cfg.allow_read_env(false);
    CHECK(cfg.get("event", "region_level").to_int() == 1);
    CHECK(cali::RuntimeConfig::get_default_config().get("event", "region_level").to_int() == 3);
    unsetenv("CALI_EVENT_REGION_LEVEL");

    std::ostringstream printed;
    cfg.print(printed);
    CHECK(printed.str().find("\nCALI_SERVICES_ENABLE=event, trace\n") != std::string::npos);
    CHECK(printed.str().find("# preset: CALI_EVENT_REGION_LEVEL=1\n") != std::string::npos);
    CHECK(cali::StringConverter(" 12 ").to_int() == 12 && cali::StringConverter("T").to_bool());
    CHECK(!cali::StringConverter("x").to_bool(&ok) && !ok);
}

// get_path_node: the innermost node of the region path.
static void path_nodes(cali::Caliper& c)
{
    cali::Attribute phase = c.get_attribute("cxx.phase");
    CHECK(!c.get_path_node());
    c.begin(phase, "outer.path");
    cali::Attribute tag = c.create_attribute("cxx.path.tag", CALI_TYPE_STRING, CALI_ATTR_DEFAULT);
    c.begin(tag, "not.nested");
    cali::Node* node = c.get_path_node();
    CHECK(node && node->attribute() == phase.id() && node->data().to_string() == "outer.path");
    CHECK(c.get_blackboard_entry(tag).value().to_string() == "not.nested");
    c.end(tag);
    c.end(phase);
    CHECK(!c.get_path_node());
}

static void attributes(cali::Caliper& c)
{
    cali::Attribute phase = c.create_attribute("cxx.phase", CALI_TYPE_STRING, CALI_ATTR_NESTED);
    CHECK(phase && phase.name() == "cxx.phase" && phase.type() == CALI_TYPE_STRING);
    CHECK(phase.properties() == (CALI_ATTR_NESTED | CALI_ATTR_SCOPE_THREAD) && phase.is_nested());
    CHECK(c.get_attribute("cxx.phase") == phase);
    CHECK(c.get_attribute(phase.id()).name() == "cxx.phase");
    CHECK(!c.get_attribute("cxx.no.such.attribute"));
    CHECK(cali::Attribute::make_attribute(phase.node()) == phase);
    CHECK(!cali::Attribute::make_attribute(0) && !c.node(CALI_INV_ID) && !c.node(1ULL << 40));
    CHECK(!c.get_channel(4242) && cali::Entry().empty() && !cali::Entry(phase.node()).empty());

    cali::Attribute meta  = c.create_attribute("cxx.meta", CALI_TYPE_INT, CALI_ATTR_SKIP_EVENTS);
    cali::Variant   value = 42;
    cali::Attribute with  = c.create_attribute("cxx.with.meta", CALI_TYPE_INT, CALI_ATTR_ASVALUE, 1, &meta, &value);
    CHECK(with.get(meta).to_int() == 42 && with.store_as_value());

    std::vector<cali::Attribute> all = c.get_all_attributes();
    CHECK(has_attribute(all, "cxx.phase") && has_attribute(all, "region") && has_attribute(all, "cxx.with.meta"));
    CHECK(has_attribute(c.find_attributes_with_prop(CALI_ATTR_GLOBAL), "cali.caliper.version"));
    CHECK(!has_attribute(c.find_attributes_with_prop(CALI_ATTR_GLOBAL), "cxx.phase"));
    CHECK(has_attribute(c.find_attributes_with(meta), "cxx.with.meta"));
    CHECK(value_in(c.get_globals(), c.get_attribute("cali.caliper.version")) == cali_caliper_version());
}

// A trace channel made from a RuntimeConfig, measured and flushed both
// ways; its .cali file is checked by the Rust test.
static void trace_channel(cali::Caliper& c, const std::string& dir)
{
    cali::RuntimeConfig cfg;
    cfg.allow_read_env(false);
    cfg.set("CALI_SERVICES_ENABLE", "async_event,event,recorder,trace");
    cfg.set("CALI_RECORDER_FILENAME", dir + "/runtime.cali");
    cfg.set("CALI_CHANNEL_FLUSH_ON_EXIT", "false");
    cfg.preset("CALI_EVENT_ENABLE_SNAPSHOT_INFO", "true");

    cali::Channel chn = c.create_channel("cxx.trace", cfg);
    CHECK(chn && chn.name() == "cxx.trace" && !chn.is_active());
    c.activate_channel(chn);
    CHECK(chn.is_active());
    CHECK(c.get_channel(chn.id()) == chn);
    std::vector<cali::Channel> channels = c.get_all_channels();
    CHECK(std::find(channels.begin(), channels.end(), chn) != channels.end());

    cali::Attribute phase = c.get_attribute("cxx.phase");
    c.begin(phase, "outer");
    c.begin(phase, "inner");
    CHECK(c.get(phase).value().to_string() == "inner");
    c.end(phase);
    c.end_with_value_check(phase, "outer");
    CHECK(c.get(phase).empty());

    cali::Attribute iter = c.create_attribute("cxx.iter", CALI_TYPE_INT, CALI_ATTR_ASVALUE | CALI_ATTR_SKIP_EVENTS);
    c.set(iter, 1);
    CHECK(c.exchange(iter, 2).to_int() == 1);
    CHECK(c.get(iter).value().to_int() == 2);
    c.end(iter);

    cali::Attribute                 tag = c.create_attribute("cxx.tag", CALI_TYPE_STRING, CALI_ATTR_DEFAULT);
    cali::FixedSizeSnapshotRecord<4> trigger;
    trigger.builder().append(tag, "pushed");
    c.push_snapshot(&chn, trigger.view());

    c.begin(phase, "pulled");
    cali::FixedSizeSnapshotRecord<64> rec;
    c.pull_snapshot(&chn, trigger.view(), rec.builder());
    std::vector<cali::Entry> pulled(rec.view().begin(), rec.view().end());
    CHECK(value_in(pulled, phase) == "pulled" && value_in(pulled, tag) == "pushed");
    CHECK(rec.view().get(phase).value().to_string() == "pulled");
    c.end(phase);

    c.async_event(cali::SnapshotView(cali::Entry(tag, "async")));

    // flush: every record, none written; one of them ends "inner" under "outer".
    std::vector<std::vector<cali::Entry> > records;
    c.flush(&chn, cali::SnapshotView(), [&records](cali::CaliperMetadataAccessInterface&, const std::vector<cali::Entry>& r) {
        records.push_back(r);
    });
    cali::Attribute end_phase = c.get_attribute("event.end#cxx.phase");
    int             inner     = 0;
    for (std::size_t i = 0; i < records.size(); ++i)
        for (std::size_t k = 0; k < records[i].size(); ++k)
            if (value_in(records[i], end_phase) == "inner" && records[i][k].count(phase.id()) == 2)
                ++inner;
    CHECK(inner == 1);
    CHECK(records.size() == 8); // begin/end x2, pushed, begin/end pulled, async; the pulled one is not kept

    std::vector<cali::Entry> globals = c.get_globals(chn);
    CHECK(value_in(globals, c.get_attribute("cali.channel")) == "cxx.trace");

    // An OutputStream named from the channel's globals.
    cali::OutputStream out;
    out.set_filename((dir + "/out-%cali.channel%.txt").c_str(), c, globals);
    CHECK(out.type() == cali::OutputStream::File);
    *out.stream() << "written" << std::endl;

    c.flush_and_write(&chn);
    c.deactivate_channel(chn);
    CHECK(!chn.is_active());
    cali_id_t id = chn.id();
    c.delete_channel(chn);
    CHECK(!c.get_channel(id));
}

// A controller of the program's own: a tree report of counts on stdout.
class CountReport : public cali::ChannelController
{
public:
    bool created;

    explicit CountReport(const cali::config_map_t& cfg, const cali::info_map_t& metadata)
        : ChannelController("cxx.report", 0, cfg, metadata), created(false)
    {}

protected:
    void on_create(cali::Caliper* c, cali::Channel& chn)
    {
        created = *c && chn.name() == "cxx.report" && !chn.is_active();
    }
};

static void controllers(cali::Caliper& c)
{
    cali::config_map_t cfg;
    cfg["CALI_SERVICES_ENABLE"]       = "aggregate,event,report";
    cfg["CALI_REPORT_FILENAME"]       = "stdout";
    cfg["CALI_REPORT_CONFIG"]         = "select count() group by prop:nested format tree";
    cfg["CALI_CHANNEL_FLUSH_ON_EXIT"] = "false";
    cali::info_map_t metadata;
    metadata["cxx.run"] = "seven";

    CountReport report(cfg, metadata);
    CHECK(!report.is_instantiated() && report.name() == "cxx.report");
    CHECK(report.copy_config()["CALI_REPORT_FILENAME"] == "stdout");
    report.start();
    CHECK(report.created && report.is_active() && report.channel());
    CHECK(value_in(c.get_globals(report.channel()), c.get_attribute("cxx.run")) == "seven");

    cali::Attribute phase = c.get_attribute("cxx.phase");
    for (int i = 0; i < 3; ++i) {
        c.begin(phase, "counted");
        c.begin(phase, "nested");
        c.end(phase);
        c.end(phase);
    }
    report.stop();
    c.begin(phase, "after.stop");
    c.end(phase);
    std::printf("--- count report\n");
    std::fflush(stdout);
    report.flush();
    std::fflush(stdout);
    std::printf("--- end\n");

    // The ConfigManager's controllers are ChannelControllers too.
    cali::ConfigManager mgr;
    mgr.add("runtime-report(output=stdout)");
    cali::ConfigManager::ChannelPtr rr = mgr.get_channel("runtime-report");
    CHECK(rr && !rr->channel() && rr->copy_config()["CALI_SERVICES_ENABLE"].find("aggregate") != std::string::npos);
    rr->start();
    CHECK(rr->is_active() && rr->channel().name() == "runtime-report");
    c.begin(phase, "reported");
    c.end(phase);
    rr->stop();
    std::printf("--- runtime-report\n");
    std::fflush(stdout);
    rr->flush();
    std::fflush(stdout);
    std::printf("--- end\n");
}

static void logging()
{
    CHECK(cali::Log::verbosity() == 0);
    cali::Log(0).stream() << "runtime: an error line " << 42 << std::endl;
    cali::Log(1).stream() << "runtime: an info line, not shown" << std::endl;
    errno = 0;
    cali::Log(0).perror(ENOENT, "runtime: open: ");
    cali::Log::set_verbosity(2);
    CHECK(cali::Log::verbosity() == 2 && cali::Log::is_verbose(2) && !cali::Log::is_verbose(3));
    cali::Log(2).stream() << "runtime: a debug line, shown" << std::endl;
    cali::Log::set_verbosity(0);
    cali::Log::add_prefix("[cxx] ");
    cali::Log(0).stream() << "runtime: a prefixed line" << std::endl;
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::printf("usage: runtime SCRATCH_DIR\n");
        return 2;
    }
    std::string dir = argv[1];

    CHECK(!cali::Caliper::is_initialized());
    cali::Caliper c = cali::Caliper::instance();
    CHECK(c && cali::Caliper::is_initialized());

    variants();
    attributes(c);
    trace_channel(c, dir);
    controllers(c);
    logging();

    std::size_t dims[] = {4};
    double      data[4];
    c.memory_region_begin(data, "data", sizeof(double), 1, dims);
    c.memory_region_end(data);
    c.release_thread();
    runtime_configs();
    path_nodes(c);

    std::ifstream written((dir + "/out-cxx.trace.txt").c_str());
    std::string   line;
    CHECK(std::getline(written, line) && line == "written");

    // release(): measurement ends here; later annotations do nothing.
    cali::Attribute phase = c.get_attribute("cxx.phase");
    cali::Caliper::release();
    c.begin(phase, "after.release");
    CHECK(c.get(phase).empty());

    if (failures == 0)
        std::printf("runtime: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
