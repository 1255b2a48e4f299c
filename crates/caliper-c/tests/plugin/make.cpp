// Half of a shared library built against this library's own headers,
// compiled without optimization: the header-only members it uses are
// emitted out of line and called through the library's PLT.
#include "plugin.h"

cali::Annotation* plugin_annotation(const char* name)
{
    return new cali::Annotation(name);
}

cali::Loop* plugin_loop(const char* name)
{
    return new cali::Loop(name);
}

cali::ConfigManager::ChannelList plugin_channels(cali::ConfigManager& mgr)
{
    return mgr.get_all_channels();
}

void plugin_scope(const char* name, void (*body)())
{
    cali::ScopeAnnotation scope(name);
    body();
}
