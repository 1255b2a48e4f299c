// Caliper: cali::RuntimeConfig (drop-in for the reference's
// caliper/common/RuntimeConfig.h): the settings of a channel to be
// created with Caliper::create_channel. Values set() win over the
// environment; preset() values are defaults that the environment and
// config files override. A new config reads CALI_* environment variables
// unless allow_read_env(false). Copies share the settings.
#ifndef CALI_COMMON_RUNTIMECONFIG_H
#define CALI_COMMON_RUNTIMECONFIG_H

#include "../cali_cxx_runtime.h"

#include <map>
#include <memory>
#include <string>

namespace cali
{

class RuntimeConfig
{
    struct Impl {
        std::map<std::string, std::string> set;
        std::map<std::string, std::string> preset;
        bool                               read_env;
        Impl() : read_env(true) {}
    };

    std::shared_ptr<Impl> mP;

public:
    RuntimeConfig() : mP(new Impl) {}

    void set(const char* key, const std::string& value) { mP->set[key] = value; }
    void preset(const char* key, const std::string& value) { mP->preset[key] = value; }

    bool allow_read_env() const { return mP->read_env; }
    void allow_read_env(bool allow) { mP->read_env = allow; }

    /// set() for every key and value of values.
    void import(const std::map<std::string, std::string>& values)
    {
        for (std::map<std::string, std::string>::const_iterator it = values.begin(); it != values.end(); ++it)
            mP->set[it->first] = it->second;
    }

    /// A new C config set with these settings, for cali_create_channel;
    /// the caller deletes it (cali_delete_configset).
    cali_configset_t make_configset() const
    {
        cali_configset_t cfg = cali_create_configset(0);
        std::map<std::string, std::string>::const_iterator it;
        for (it = mP->preset.begin(); it != mP->preset.end(); ++it)
            cali_configset_preset(cfg, it->first.c_str(), it->second.c_str());
        for (it = mP->set.begin(); it != mP->set.end(); ++it)
            cali_configset_set(cfg, it->first.c_str(), it->second.c_str());
        return cfg;
    }
};

} // namespace cali

#endif
