// The reference's caliper/ChannelController.h: a channel with its
// settings, created on the first start(). ConfigManager::get_all_channels
// hands out the controllers of its configs as ChannelControllers.
#pragma once

#include "cali_definitions.h"

#include <map>
#include <memory>
#include <string>

namespace cali
{

class Caliper;
class Channel;

typedef std::map<std::string, std::string> config_map_t;
typedef std::map<std::string, std::string> info_map_t;

class ChannelController
{
    struct ChannelControllerImpl;
    std::shared_ptr<ChannelControllerImpl> mP;

protected:
    /// Called after the channel was created.
    virtual void on_create(Caliper*, Channel&) {}

    config_map_t& config();

    info_map_t& metadata();

public:
    /// Creates the channel (the first time) and activates it.
    void start();

    /// Deactivates the channel.
    void stop();

    bool is_active() const;

    bool is_instantiated() const;

    std::string name() const;

    /// Writes the channel's output.
    virtual void flush();

    config_map_t copy_config() const;

    ChannelController(const char* name, int flags, const config_map_t& cfg);

    ChannelController(const char* name, int flags, const config_map_t& cfg, const info_map_t& metadata);

    virtual ~ChannelController();
};

} // namespace cali
