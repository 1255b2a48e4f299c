// Caliper: the C++ ConfigManager (drop-in for the reference's
// caliper/ConfigManager.h), header-only over the C wrapper of
// cali-manager.h.
#ifndef CALI_CONFIGMANAGER_H
#define CALI_CONFIGMANAGER_H

#include "cali-manager.h"

#include <map>
#include <memory>
#include <string>

namespace cali
{

/// Creates and controls measurement configs from config strings such as
/// "runtime-report,region.count". Copies share the manager.
class ConfigManager
{
    struct Holder {
        cali_ConfigManager mgr;
        Holder() { cali_ConfigManager_new(&mgr); }
        ~Holder() { cali_ConfigManager_delete(&mgr); }
    };
    std::shared_ptr<Holder> m_h;

public:
    typedef std::map<std::string, std::string> argmap_t;

    ConfigManager() : m_h(new Holder) {}
    explicit ConfigManager(const char* config_string) : m_h(new Holder) { add(config_string); }

    bool add(const char* config_string) { return cali_ConfigManager_add(&m_h->mgr, config_string); }
    void add_config_spec(const char* json) { cali_ConfigManager_add_config_spec(&m_h->mgr, json); }
    void add_option_spec(const char* json) { cali_ConfigManager_add_option_spec(&m_h->mgr, json); }

    void set_default_parameter(const char* key, const char* value)
    {
        cali_ConfigManager_set_default_parameter(&m_h->mgr, key, value);
    }
    void set_default_parameter_for_config(const char* config, const char* key, const char* value)
    {
        cali_ConfigManager_set_default_parameter_for_config(&m_h->mgr, config, key, value);
    }

    bool        error() { return cali_ConfigManager_error(&m_h->mgr); }
    std::string error_msg() { return cali_ConfigManager_error_msg(&m_h->mgr); }

    /// The error message for a config string, or "" if it is valid.
    std::string check(const char* config_string) { return cali_ConfigManager_check(&m_h->mgr, config_string); }

    void start() { cali_ConfigManager_start(&m_h->mgr); }
    void stop() { cali_ConfigManager_stop(&m_h->mgr); }
    void flush() { cali_ConfigManager_flush(&m_h->mgr); }
};

} // namespace cali

#endif
