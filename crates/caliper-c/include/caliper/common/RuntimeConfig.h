// Caliper: cali::RuntimeConfig (drop-in for the reference's
// caliper/common/RuntimeConfig.h): the settings of a channel to be
// created with Caliper::create_channel. Values set() win over the
// environment; preset() values are defaults that the environment and
// config files override. A new config reads CALI_* environment variables
// unless allow_read_env(false). Copies share the settings.
#ifndef CALI_COMMON_RUNTIMECONFIG_H
#define CALI_COMMON_RUNTIMECONFIG_H

#include "../cali_cxx_runtime.h"
#include "StringConverter.h"

#include <cctype>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

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

    /// The value of setting CALI_<SET>_<KEY> (e.g. get("services",
    /// "enable")) that a channel made from this config reads: set values,
    /// then the environment and config files (if allowed), then presets,
    /// then the default the service documents; empty if none.
    StringConverter get(const char* set, const char* key) const
    {
        std::string name = "CALI_";
        name += set ? set : "";
        name += "_";
        name += key ? key : "";
        for (std::size_t i = 0; i < name.size(); ++i)
            name[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[i])));
        cali_configset_t cfg = make_configset();
        std::size_t      len = cali_configset_get(cfg, mP->read_env, name.c_str(), 0, 0);
        std::vector<char> buf(len + 1);
        cali_configset_get(cfg, mP->read_env, name.c_str(), &buf[0], buf.size());
        cali_delete_configset(cfg);
        return StringConverter(std::string(&buf[0], len));
    }

    /// Writes the settings given to this config, presets first, as
    /// "# preset: KEY=value" and "KEY=value" lines.
    void print(std::ostream& os) const
    {
        std::map<std::string, std::string>::const_iterator it;
        for (it = mP->preset.begin(); it != mP->preset.end(); ++it)
            os << "# preset: " << it->first << "=" << it->second << "\n";
        for (it = mP->set.begin(); it != mP->set.end(); ++it)
            os << it->first << "=" << it->second << "\n";
    }

    /// The process's default configuration: nothing set, reading the
    /// environment and config files, as the default channel does.
    static RuntimeConfig get_default_config() { return RuntimeConfig(); }

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
