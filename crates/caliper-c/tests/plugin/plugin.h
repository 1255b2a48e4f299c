// A shared library built against this library's own headers, in two
// halves: make.cpp at -O0, use.cpp optimized, as a build mixes debug and
// release objects. Its header-only objects are made in one half and used
// in the other.
#include <caliper/ConfigManager.h>
#include <caliper/cali.h>

cali::Annotation*                plugin_annotation(const char* name);
cali::Loop*                      plugin_loop(const char* name);
cali::ConfigManager::ChannelList plugin_channels(cali::ConfigManager& mgr);
void                             plugin_scope(const char* name, void (*body)());

extern "C" void plugin_run(void);
