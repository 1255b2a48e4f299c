// A benchmark suite's own ConfigManager option, in the shape suites write
// it: a "boolean" option of category "metric" whose queries add kernel
// information (a let, as-value columns, a group-by key) to a spot profile.
//
//   option_spec spec           prints the option spec (for a spec file)
//   option_spec api FILE       adds the spec with add_option_spec, enables
//                              it with set_default_parameter and writes
//                              spot(...,metadata(suite=demo)) to FILE
//   option_spec run            runs the kernels only (for CALI_CONFIG)
//
// Exits 0 when the ConfigManager took the spec and the config.
#include <caliper/cali.h>
#include <caliper/cali-manager.h>

#include <cstdio>
#include <cstring>
#include <string>

static const char* KERNEL_INFO_SPEC = R"json(
{
  "name": "kernel_info",
  "type": "boolean",
  "category": "metric",
  "description": "Problem size and complexity of each kernel",
  "query":
  [
    { "level": "local",
      "let": [ "ps.k=scale(max#ProblemSize,1e-3)" ],
      "select": [ { "expr": "any(max#ProblemSize)", "as": "ProblemSize" },
                  { "expr": "max(ps.k)", "as": "Problem size (k)" } ],
      "group by": [ "Complexity" ] },
    { "level": "cross",
      "select": [ { "expr": "any(any#max#ProblemSize)", "as": "ProblemSize" },
                  { "expr": "max(max#ps.k)", "as": "Problem size (k)" } ],
      "group by": [ "Complexity" ] }
  ]
}
)json";

static void kernel(const char* name, const char* complexity, double size)
{
    static cali_id_t size_attr = cali_create_attribute(
        "ProblemSize", CALI_TYPE_DOUBLE, CALI_ATTR_ASVALUE | CALI_ATTR_AGGREGATABLE | CALI_ATTR_SKIP_EVENTS);
    static cali_id_t complexity_attr = cali_create_attribute("Complexity", CALI_TYPE_STRING, CALI_ATTR_SKIP_EVENTS);

    cali_begin_string(complexity_attr, complexity);
    cali_set_double(size_attr, size);
    CALI_MARK_BEGIN(name);
    volatile double sum = 0;
    for (int i = 0; i < static_cast<int>(size); ++i)
        sum += i;
    CALI_MARK_END(name);
    cali_end(complexity_attr);
}

static void kernels()
{
    CALI_MARK_BEGIN("suite");
    kernel("stream", "N", 1000);
    kernel("sort", "N_logN", 2000);
    CALI_MARK_END("suite");
}

int main(int argc, char* argv[])
{
    if (argc == 2 && std::strcmp(argv[1], "spec") == 0) {
        std::fputs(KERNEL_INFO_SPEC, stdout);
        return 0;
    }
    if (argc == 2 && std::strcmp(argv[1], "run") == 0) {
        kernels();
        return 0;
    }
    if (argc != 3 || std::strcmp(argv[1], "api") != 0) {
        std::fprintf(stderr, "usage: option_spec spec | run | api FILE\n");
        return 2;
    }
    cali::ConfigManager mgr;
    mgr.add_option_spec(KERNEL_INFO_SPEC);
    mgr.set_default_parameter("kernel_info", "true");
    mgr.add((std::string("spot(output=") + argv[2] + ",metadata(suite=demo))").c_str());
    if (mgr.error()) {
        std::printf("option_spec: %s\n", mgr.error_msg().c_str());
        return 1;
    }
    mgr.start();
    kernels();
    mgr.flush();
    return 0;
}
