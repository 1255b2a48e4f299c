// Caliper: the C++ ConfigManager (drop-in for the reference's
// caliper/ConfigManager.h), header-only over the C functions of
// cali-manager.h.
#ifndef CALI_CONFIGMANAGER_H
#define CALI_CONFIGMANAGER_H

#include "ChannelController.h"
#include "cali-manager.h"
#include "cali_cxx_local.h"

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

// The callbacks through which the C functions hand strings back (C
// linkage, as their function pointer types require; they do not throw
// unless memory runs out).
extern "C" {
static inline void cali_cxx_collect_kv(void* map, const char* key, const char* value)
{
    (*static_cast<std::map<std::string, std::string>*>(map))[key] = value;
}
static inline void cali_cxx_collect_string(void* list, const char* s)
{
    static_cast<std::vector<std::string>*>(list)->push_back(s);
}
}

namespace cali
{

namespace detail
{
/// Owns a C ConfigManager; the manager and its controllers share it.
struct ConfigManagerHolder {
    cali_ConfigManager mgr;
    ConfigManagerHolder() { cali_ConfigManager_new(&mgr); }
    ~ConfigManagerHolder() { cali_ConfigManager_delete(&mgr); }

private:
    ConfigManagerHolder(const ConfigManagerHolder&);
    ConfigManagerHolder& operator=(const ConfigManagerHolder&);
};

/// The controller of a config's channel, as created by
/// ConfigManager::add: it keeps the manager alive.
class ConfigManagedChannel : public ManagedChannel
{
    std::shared_ptr<ConfigManagerHolder> m_h;
    std::size_t                          m_index;

public:
    ConfigManagedChannel(const std::shared_ptr<ConfigManagerHolder>& h, std::size_t index) : m_h(h), m_index(index) {}

    std::string name() const
    {
        const char* n = cali_ConfigManager_channel_name(&m_h->mgr, m_index);
        return n ? n : "";
    }

    void start() { cali_ConfigManager_channel_start(&m_h->mgr, m_index); }
    void stop() { cali_ConfigManager_channel_stop(&m_h->mgr, m_index); }
    void flush() { cali_ConfigManager_channel_flush(&m_h->mgr, m_index); }

    bool      is_active() const { return cali_ConfigManager_channel_is_active(&m_h->mgr, m_index); }
    bool      is_instantiated() const { return cali_ConfigManager_channel_is_instantiated(&m_h->mgr, m_index); }
    cali_id_t channel_id() const { return cali_ConfigManager_channel_id(&m_h->mgr, m_index); }

    config_map_t copy_config() const
    {
        config_map_t cfg;
        cali_ConfigManager_channel_config(&m_h->mgr, m_index, cali_cxx_collect_kv, &cfg);
        return cfg;
    }
};
} // namespace detail


/// Creates and controls measurement configs from config strings such as
/// "runtime-report,region.count". Copies share the manager.
class ConfigManager
{
    std::shared_ptr<detail::ConfigManagerHolder> m_h;

public:
    typedef std::map<std::string, std::string>     argmap_t;
    typedef std::shared_ptr<ChannelController>     ChannelPtr;
    typedef std::vector<ChannelPtr>                ChannelList;

private:
    /// The controller of the manager's channel index.
    CALI_CXX_LOCAL ChannelPtr make_controller(std::size_t index) const
    {
        std::shared_ptr<detail::ManagedChannel> managed(new detail::ConfigManagedChannel(m_h, index));
        return ChannelPtr(new ChannelController(managed));
    }

public:

    // Declared for their visibility (see cali_cxx_local.h).
    CALI_CXX_LOCAL ConfigManager(const ConfigManager&)            = default;
    CALI_CXX_LOCAL ConfigManager(ConfigManager&&)                 = default;
    CALI_CXX_LOCAL ConfigManager& operator=(const ConfigManager&) = default;
    CALI_CXX_LOCAL ConfigManager& operator=(ConfigManager&&)      = default;
    CALI_CXX_LOCAL ~ConfigManager()                               = default;

    CALI_CXX_LOCAL ConfigManager() : m_h(new detail::ConfigManagerHolder) {}
    CALI_CXX_LOCAL explicit ConfigManager(const char* config_string) : m_h(new detail::ConfigManagerHolder) { add(config_string); }

    /// Adds the configs of a config string; false on error (see error_msg()).
    CALI_CXX_LOCAL bool add(const char* config_string) { return cali_ConfigManager_add(&m_h->mgr, config_string); }

    /// Like add, but keys that are neither configs nor options are put
    /// into extra_kv_pairs (value "" if they have none) instead of being
    /// errors.
    CALI_CXX_LOCAL bool add(const char* config_string, argmap_t& extra_kv_pairs)
    {
        return cali_ConfigManager_add_with_extra(&m_h->mgr, config_string, cali_cxx_collect_kv, &extra_kv_pairs);
    }

    CALI_CXX_LOCAL void add_config_spec(const char* json) { cali_ConfigManager_add_config_spec(&m_h->mgr, json); }
    CALI_CXX_LOCAL void add_option_spec(const char* json) { cali_ConfigManager_add_option_spec(&m_h->mgr, json); }

    /// Reads config and option specs from a JSON file; a failure sets error().
    CALI_CXX_LOCAL void load(const char* filename) { cali_ConfigManager_load(&m_h->mgr, filename); }

    CALI_CXX_LOCAL void set_default_parameter(const char* key, const char* value)
    {
        cali_ConfigManager_set_default_parameter(&m_h->mgr, key, value);
    }
    CALI_CXX_LOCAL void set_default_parameter_for_config(const char* config, const char* key, const char* value)
    {
        cali_ConfigManager_set_default_parameter_for_config(&m_h->mgr, config, key, value);
    }

    CALI_CXX_LOCAL bool        error() const { return cali_ConfigManager_error(&m_h->mgr); }
    CALI_CXX_LOCAL std::string error_msg() const { return cali_ConfigManager_error_msg(&m_h->mgr); }

    /// The controllers of the configs added so far.
    CALI_CXX_LOCAL ChannelList get_all_channels() const
    {
        ChannelList list;
        std::size_t n = cali_ConfigManager_channel_count(&m_h->mgr);
        for (std::size_t i = 0; i < n; ++i)
            list.push_back(make_controller(i));
        return list;
    }

    /// The controller of the config named name, or a null pointer.
    CALI_CXX_LOCAL ChannelPtr get_channel(const char* name) const
    {
        std::size_t n = cali_ConfigManager_channel_count(&m_h->mgr);
        for (std::size_t i = 0; i < n; ++i) {
            ChannelPtr channel = make_controller(i);
            if (channel->name() == name)
                return channel;
        }
        return ChannelPtr();
    }

    CALI_CXX_LOCAL void start() { cali_ConfigManager_start(&m_h->mgr); }
    CALI_CXX_LOCAL void stop() { cali_ConfigManager_stop(&m_h->mgr); }
    CALI_CXX_LOCAL void flush() { cali_ConfigManager_flush(&m_h->mgr); }

    /// The error message for a config string, or "" if it is valid.
    CALI_CXX_LOCAL std::string check(const char* config_string, bool allow_extra_kv_pairs = false) const
    {
        return cali_ConfigManager_check(&m_h->mgr, config_string, allow_extra_kv_pairs);
    }

    /// The names (and aliases) of the configs that can run here.
    CALI_CXX_LOCAL std::vector<std::string> available_config_specs() const
    {
        std::vector<std::string> names;
        cali_ConfigManager_available_config_specs(&m_h->mgr, cali_cxx_collect_string, &names);
        return names;
    }

    CALI_CXX_LOCAL std::string get_description_for_spec(const char* name) const
    {
        return cali_ConfigManager_get_description_for_spec(&m_h->mgr, name);
    }

    /// "<name>\n <description>\n  Options:\n   <option> <description>...",
    /// or "<name>: Not available".
    CALI_CXX_LOCAL std::string get_documentation_for_spec(const char* name) const
    {
        return cali_ConfigManager_get_documentation_for_spec(&m_h->mgr, name);
    }

    // The reference's older, manager-less forms (deprecated there).

    CALI_CXX_LOCAL static std::vector<std::string> available_configs() { return ConfigManager().available_config_specs(); }

    CALI_CXX_LOCAL static std::vector<std::string> get_config_docstrings()
    {
        ConfigManager            mgr;
        std::vector<std::string> names = mgr.available_config_specs();
        std::vector<std::string> docs;
        for (std::size_t i = 0; i < names.size(); ++i)
            docs.push_back(mgr.get_documentation_for_spec(names[i].c_str()));
        return docs;
    }

    CALI_CXX_LOCAL static std::string check_config_string(const char* config_string, bool allow_extra_kv_pairs = false)
    {
        return ConfigManager().check(config_string, allow_extra_kv_pairs);
    }
};

} // namespace cali

#endif
