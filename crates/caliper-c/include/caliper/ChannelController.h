// Caliper: cali::ChannelController (drop-in for the reference's
// caliper/ChannelController.h): a channel with its settings, created on
// the first start(). Programs derive their own controllers from it; the
// ConfigManager's controllers are ChannelControllers too.
//
//     class MyReport : public cali::ChannelController {
//     public:
//         explicit MyReport(const cali::config_map_t& cfg) : ChannelController("my-report", 0, cfg) {}
//     protected:
//         void on_create(cali::Caliper* c, cali::Channel& chn) { ... }
//     };
//
// Copies share the channel, which is deleted when the last copy goes.
#ifndef CALI_CHANNELCONTROLLER_H
#define CALI_CHANNELCONTROLLER_H

#include "Caliper.h"
#include "cali_cxx_local.h"
#include "common/Variant.h"

#include <map>
#include <memory>
#include <string>

namespace cali
{

typedef std::map<std::string, std::string> config_map_t;
typedef std::map<std::string, std::string> info_map_t;

class ConfigManager;

namespace detail
{
/// A channel a ConfigManager made and controls (the controllers of
/// ConfigManager::get_all_channels; implemented in ConfigManager.h).
struct ManagedChannel {
    virtual ~ManagedChannel() {}
    virtual std::string  name() const            = 0;
    virtual void         start()                 = 0;
    virtual void         stop()                  = 0;
    virtual void         flush()                 = 0;
    virtual bool         is_active() const       = 0;
    virtual bool         is_instantiated() const = 0;
    virtual cali_id_t    channel_id() const      = 0;
    virtual config_map_t copy_config() const     = 0;
};
} // namespace detail

class ChannelController
{
    struct Impl {
        std::string                             name;
        int                                     flags;
        config_map_t                            config;
        info_map_t                              metadata;
        Channel                                 channel;
        std::shared_ptr<detail::ManagedChannel> managed;

        Impl(const char* n, int f, const config_map_t& c, const info_map_t& m)
            : name(n ? n : ""), flags(f), config(c), metadata(m)
        {}
        ~Impl()
        {
            if (channel)
                Caliper().delete_channel(channel);
        }
    };

    std::shared_ptr<Impl> mP;

    CALI_CXX_LOCAL explicit ChannelController(const std::shared_ptr<detail::ManagedChannel>& managed)
        : mP(new Impl("", 0, config_map_t(), info_map_t()))
    {
        mP->managed = managed;
    }

    friend class ConfigManager;

protected:
    /// The settings; changes count until the channel is created.
    CALI_CXX_LOCAL config_map_t& config() { return mP->config; }
    /// Run metadata, set as globals of the channel when it is created.
    CALI_CXX_LOCAL info_map_t&   metadata() { return mP->metadata; }

    /// Creates the channel (inactive) with the settings, once; calls
    /// on_create. Returns it.
    CALI_CXX_LOCAL Channel create()
    {
        if (mP->managed || mP->channel)
            return channel();
        Caliper       c;
        RuntimeConfig cfg;
        cfg.allow_read_env(mP->flags & CALI_CHANNEL_ALLOW_READ_ENV);
        cfg.import(mP->config);
        mP->channel = c.create_channel(mP->name.c_str(), cfg);
        if (!mP->channel)
            return mP->channel;
        for (info_map_t::const_iterator it = mP->metadata.begin(); it != mP->metadata.end(); ++it)
            cali_channel_set_metadata(mP->channel.id(), it->first.c_str(), it->second.c_str());
        on_create(&c, mP->channel);
        return mP->channel;
    }

    /// Called once the channel is created, before it is activated.
    CALI_CXX_LOCAL virtual void on_create(Caliper* /* c */, Channel& /* chn */) {}

public:
    /// A controller of channel name with the flags of cali_create_channel
    /// (CALI_CHANNEL_ALLOW_READ_ENV) and the settings cfg.
    CALI_CXX_LOCAL ChannelController(const char* name, int flags, const config_map_t& cfg)
        : mP(new Impl(name, flags, cfg, info_map_t()))
    {}
    CALI_CXX_LOCAL ChannelController(const char* name, int flags, const config_map_t& cfg, const info_map_t& metadata)
        : mP(new Impl(name, flags, cfg, metadata))
    {}

    CALI_CXX_LOCAL virtual ~ChannelController() {}

    /// Creates the channel (the first time) and activates it.
    CALI_CXX_LOCAL void start()
    {
        if (mP->managed) {
            mP->managed->start();
            return;
        }
        Channel chn = create();
        if (chn)
            Caliper().activate_channel(chn);
    }

    /// Deactivates the channel; it keeps what it gathered.
    CALI_CXX_LOCAL void stop()
    {
        if (mP->managed)
            mP->managed->stop();
        else if (mP->channel)
            Caliper().deactivate_channel(mP->channel);
    }

    CALI_CXX_LOCAL bool is_active() const { return mP->managed ? mP->managed->is_active() : mP->channel.is_active(); }
    CALI_CXX_LOCAL bool is_instantiated() const { return mP->managed ? mP->managed->is_instantiated() : bool(mP->channel); }

    CALI_CXX_LOCAL std::string name() const { return mP->managed ? mP->managed->name() : mP->name; }

    /// The channel (an empty handle before it is created).
    CALI_CXX_LOCAL Channel channel()
    {
        if (mP->managed) {
            cali_id_t id = mP->managed->channel_id();
            return id == CALI_INV_ID ? Channel() : Caliper().get_channel(id);
        }
        return mP->channel;
    }

    /// Writes the channel's output (Caliper::flush_and_write; a
    /// ConfigManager's controller writes its config's output). Derived
    /// classes may process the data their own way.
    CALI_CXX_LOCAL virtual void flush()
    {
        if (mP->managed) {
            mP->managed->flush();
            return;
        }
        if (mP->channel)
            Caliper().flush_and_write(mP->channel.body());
    }

    CALI_CXX_LOCAL config_map_t copy_config() const { return mP->managed ? mP->managed->copy_config() : mP->config; }
};

} // namespace cali

#endif
