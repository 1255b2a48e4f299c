// The reference's caliper/ConfigManager.h: creates and controls
// measurement configs from config strings such as
// "runtime-report,region.count". Copies share the manager.
#pragma once

#include "ChannelController.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cali
{

class ConfigManager
{
    struct ConfigManagerImpl;
    std::shared_ptr<ConfigManagerImpl> mP;

public:
    typedef std::map<std::string, std::string> argmap_t;

    typedef std::shared_ptr<ChannelController> ChannelPtr;
    typedef std::vector<ChannelPtr>            ChannelList;

    ConfigManager();

    explicit ConfigManager(const char* config_string);

    ~ConfigManager();

    void add_config_spec(const char* json);

    void add_option_spec(const char* json);

    void load(const char* filename);

    bool add(const char* config_string);

    bool add(const char* config_string, argmap_t& extra_kv_pairs);

    void set_default_parameter(const char* key, const char* value);

    void set_default_parameter_for_config(const char* config, const char* key, const char* value);

    bool error() const;

    std::string error_msg() const;

    ChannelList get_all_channels();

    ChannelPtr get_channel(const char* name);

    void start();

    void stop();

    void flush();

    std::string check(const char* config_string, bool allow_extra_kv_pairs = false) const;

    std::vector<std::string> available_config_specs() const;

    std::string get_description_for_spec(const char* name) const;

    std::string get_documentation_for_spec(const char* name) const;

    static std::vector<std::string> available_configs();

    static std::vector<std::string> get_config_docstrings();

    static std::string check_config_string(const char* config_string, bool allow_extra_kv_pairs = false);
};

} // namespace cali
