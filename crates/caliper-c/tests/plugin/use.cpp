// The optimized half of the plugin (see plugin.h).
#include "plugin.h"

#include <cstdio>

static void body()
{
    cali::Annotation* a = plugin_annotation("plugin.value");
    a->begin(1);
    a->set(2);
    a->end();
    delete a;
}

extern "C" void plugin_run(void)
{
    cali::ConfigManager mgr("runtime-report,output=stdout");
    for (const cali::ConfigManager::ChannelPtr& chn : plugin_channels(mgr))
        std::printf("plugin: channel %s\n", chn->name().c_str());
    mgr.start();
    plugin_scope("plugin.scope", body);
    cali::Loop* loop = plugin_loop("plugin.loop");
    for (int i = 0; i < 2; ++i)
        cali::Loop::Iteration it(loop->iteration(i));
    loop->end();
    delete loop;
    mgr.flush();
}
