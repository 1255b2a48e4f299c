// Every member of the C++ cali::ConfigManager and its ChannelController
// handles, cali::create_channel and cali::write_report_for_query (their
// results checked here), and the data tracking macros. Prints
// "manager: all checks passed" and exits 0 when the checks pass. The
// Rust test checks the log lines and the runtime-report this prints.
//
//   manager SCRATCH_DIR
#include <caliper/cali.h>
#include <caliper/cali-manager.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            std::printf("manager: check failed at line %d: %s\n", __LINE__, #cond); \
            ++failures;                                                      \
        }                                                                    \
    } while (0)

static bool contains(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

static bool starts_with(const std::string& s, const std::string& prefix)
{
    return s.compare(0, prefix.size(), prefix) == 0;
}

static bool exists(const std::string& path)
{
    return std::ifstream(path.c_str()).good();
}

// The lines of a report, sorted (aggregated records come in no set order).
static std::vector<std::string> sorted_lines(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream       in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
}

static void write_report_for_query()
{
    cali::config_map_t cfg;
    cfg["CALI_SERVICES_ENABLE"]       = "aggregate,event";
    cfg["CALI_CHANNEL_FLUSH_ON_EXIT"] = "false";
    cfg["CALI_CHANNEL_CONFIG_CHECK"]  = "false"; // it would ask for an output service
    cali_id_t chn                     = cali::create_channel("report.channel", 0, cfg);
    CHECK(chn != CALI_INV_ID && cali_channel_is_active(chn));

    for (int i = 0; i < 3; ++i) {
        CALI_MARK_BEGIN("outer");
        for (int j = 0; j < 2; ++j) {
            CALI_MARK_BEGIN("inner");
            CALI_MARK_END("inner");
        }
        CALI_MARK_END("outer");
    }
    cali_deactivate_channel(chn);

    std::vector<std::string> expected;
    expected.push_back("region=outer,count=9"); // begin inner x2, end outer; x3
    expected.push_back("region=outer/inner,count=6");

    std::ostringstream expand;
    cali::write_report_for_query(chn, "select region,count() where region group by region format expand",
                                 CALI_FLUSH_CLEAR_BUFFERS, expand);
    CHECK(sorted_lines(expand.str()) == expected);
    // Without a FORMAT clause: expand too. The flush options are ignored,
    // as by the reference, so the data is still there.
    std::ostringstream again;
    cali::write_report_for_query(chn, "select region,count() where region group by region", 0, again);
    CHECK(again.str() == expand.str());

    std::ostringstream table;
    cali::write_report_for_query(chn, "select region,count() where region group by region order by count format table",
                                 0, table);
    std::printf("--- table report\n%s--- end\n", table.str().c_str());

    std::ostringstream none;
    cali::write_report_for_query(chn, "select bla,", 0, none); // logs a parse error
    cali::write_report_for_query(4242, "select *", 0, none);   // logs an invalid channel id
    CHECK(none.str().empty());
    cali_delete_channel(chn);
}

static void config_manager(const std::string& dir)
{
    cali::ConfigManager bad("runtime-report,blagarbl");
    CHECK(bad.error());
    CHECK(bad.error_msg() == "Unknown config or parameter: blagarbl");

    cali::ConfigManager mgr;
    CHECK(!mgr.error() && mgr.error_msg().empty());

    mgr.add_option_spec("[ { \"name\": \"test.metric\", \"type\": \"bool\", \"category\": \"test\","
                        "    \"description\": \"A test option\", \"config\": { \"CALI_TEST_METRIC\": \"on\" } } ]");
    mgr.add_config_spec("{ \"name\": \"test-trace\", \"description\": \"A test trace\","
                        "  \"services\": [ \"event\", \"trace\", \"recorder\" ], \"categories\": [ \"test\" ],"
                        "  \"config\": { \"CALI_CHANNEL_FLUSH_ON_EXIT\": \"false\" },"
                        "  \"options\": [ { \"name\": \"file\", \"type\": \"string\", \"description\": \"Output\","
                        "                   \"config\": { \"CALI_RECORDER_FILENAME\": \"{}\" } } ] }");
    CHECK(!mgr.error());

    const std::string specs = dir + "/specs.json";
    std::ofstream(specs.c_str()) << "{ \"name\": \"loaded-trace\", \"description\": \"Loaded from a file\","
                                    "  \"services\": [ \"event\", \"trace\", \"recorder\" ], \"categories\": [ \"output\" ] }";
    mgr.load(specs.c_str());
    CHECK(!mgr.error());

    std::vector<std::string> specs_here = mgr.available_config_specs();
    CHECK(contains(specs_here, "runtime-report") && contains(specs_here, "hatchet-region-profile"));
    CHECK(contains(specs_here, "test-trace") && contains(specs_here, "loaded-trace"));
    CHECK(mgr.get_description_for_spec("test-trace") == "A test trace");
    CHECK(mgr.get_description_for_spec("loaded-trace") == "Loaded from a file");
    CHECK(mgr.get_description_for_spec("no-such-config").empty());
    CHECK(mgr.get_documentation_for_spec("test-trace")
          == "test-trace\n A test trace\n  Options:\n   file        Output\n   test.metric A test option");
    CHECK(mgr.get_documentation_for_spec("no-such-config") == "no-such-config: Not available");

    CHECK(mgr.check("test-trace(test.metric)").empty());
    CHECK(mgr.check("test-trace,blagarbl") == "Unknown config or parameter: blagarbl");
    CHECK(mgr.check("test-trace,blagarbl", true).empty());

    const std::string trace_file  = dir + "/test-trace.cali";
    const std::string loaded_file = dir + "/loaded.cali";
    mgr.set_default_parameter("output", "stdout");
    mgr.set_default_parameter_for_config("test-trace", "file", trace_file.c_str());
    mgr.set_default_parameter_for_config("loaded-trace", "output", loaded_file.c_str());

    cali::ConfigManager::argmap_t extra;
    CHECK(mgr.add("runtime-report,test-trace,my.key=42,my.flag", extra));
    CHECK(extra.size() == 2 && extra["my.key"] == "42" && extra["my.flag"] == "");
    CHECK(mgr.add("loaded-trace"));
    CHECK(!mgr.error());

    cali::ConfigManager::ChannelList channels = mgr.get_all_channels();
    CHECK(channels.size() == 3);
    CHECK(channels.size() == 3 && channels[0]->name() == "runtime-report" && channels[1]->name() == "test-trace"
          && channels[2]->name() == "loaded-trace");
    CHECK(!mgr.get_channel("no-such-config"));

    // One config's channel on its own.
    cali::ConfigManager::ChannelPtr loaded = mgr.get_channel("loaded-trace");
    CHECK(loaded && !loaded->is_instantiated() && !loaded->is_active());
    loaded->start();
    CHECK(loaded->is_instantiated() && loaded->is_active());
    CALI_MARK_BEGIN("loaded.region");
    CALI_MARK_END("loaded.region");
    loaded->stop();
    CHECK(loaded->is_instantiated() && !loaded->is_active());
    loaded->flush();
    CHECK(exists(loaded_file));

    // All of them: runtime-report prints to stdout (the default parameter).
    mgr.start();
    CHECK(channels[0]->is_active() && channels[1]->is_active() && channels[2]->is_active());
    {
        CALI_CXX_MARK_SCOPE("managed");
        CALI_MARK_BEGIN("managed.inner");
        CALI_MARK_END("managed.inner");
    }
    mgr.stop();
    CHECK(!channels[0]->is_active() && !channels[1]->is_active());
    CHECK(!exists(trace_file));
    std::printf("--- runtime-report\n");
    std::fflush(stdout); // the report goes to the same file descriptor
    mgr.flush();
    std::printf("--- end\n");
    CHECK(exists(trace_file));

    // The handles keep the manager alive.
    cali::ConfigManager::ChannelPtr kept;
    {
        cali::ConfigManager scoped("runtime-report");
        kept = scoped.get_channel("runtime-report");
    }
    CHECK(kept && kept->name() == "runtime-report" && !kept->is_instantiated());

    mgr.load((dir + "/no-such-file.json").c_str());
    CHECK(mgr.error() && mgr.error_msg() == "Could not open file " + dir + "/no-such-file.json");

    // The manager-less forms.
    std::vector<std::string> configs = cali::ConfigManager::available_configs();
    CHECK(contains(configs, "runtime-report") && !contains(configs, "test-trace"));
    std::vector<std::string> docs = cali::ConfigManager::get_config_docstrings();
    CHECK(docs.size() == configs.size());
    bool documented = false;
    for (std::size_t i = 0; i < docs.size(); ++i)
        documented = documented || starts_with(docs[i], "runtime-report\n Print a time profile");
    CHECK(documented);
    CHECK(cali::ConfigManager::check_config_string("runtime-report").empty());
    CHECK(cali::ConfigManager::check_config_string("blagarbl") == "Unknown config or parameter: blagarbl");
    CHECK(cali::ConfigManager::check_config_string("runtime-report,blagarbl", true).empty());
}

static void data_tracking()
{
    double      data[64] = { 0 };
    std::size_t dims[2] = { 8, 8 };
    CALI_DATATRACKER_TRACK(data, sizeof data);
    CALI_DATATRACKER_TRACK_DIMENSIONAL(data, sizeof(double), dims, 2);
    CALI_DATATRACKER_UNTRACK(data);
}

int main(int argc, char* argv[])
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    write_report_for_query();
    config_manager(argv[1]);
    data_tracking();
    std::printf("manager: %s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
