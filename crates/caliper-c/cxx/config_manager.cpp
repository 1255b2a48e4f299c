// The reference's cali::ConfigManager (ConfigManager.h) over the C
// ConfigManager, and its ChannelController (ChannelController.h): the
// controllers get_all_channels hands out drive the manager's channels;
// a program's own controller drives a channel of its settings.
//
// Left out: custom configs (ConfigManager::add_config_spec(ConfigInfo),
// Options), and classes derived from ChannelController, whose on_create
// would get the reference's Caliper and Channel objects: the typeinfo a
// derived class needs is not exported, so such a program does not link.

#include <caliper/ConfigManager.h>
#include <caliper/cali.h>

#include "extensions.h"

#include <vector>

// The callbacks through which the C functions hand strings back.
extern "C" {
static void collect_kv(void* map, const char* key, const char* value)
{
    (*static_cast<std::map<std::string, std::string>*>(map))[key] = value;
}

static void collect_string(void* list, const char* s)
{
    static_cast<std::vector<std::string>*>(list)->push_back(s);
}
}

namespace cali
{

namespace
{

/// Owns a C ConfigManager; the manager's copies and its controllers
/// share it.
struct CManager {
    cali_ConfigManager mgr;

    CManager() { cali_ConfigManager_new(&mgr); }
    ~CManager() { cali_ConfigManager_delete(&mgr); }

    CManager(const CManager&)            = delete;
    CManager& operator=(const CManager&) = delete;
};

/// What a ChannelController controls: a channel of a ConfigManager, or
/// one of its own settings.
struct ChannelBackend {
    virtual ~ChannelBackend() {}
    virtual std::string  name() const            = 0;
    virtual void         start()                 = 0;
    virtual void         stop()                  = 0;
    virtual void         flush()                 = 0;
    virtual bool         is_active() const       = 0;
    virtual bool         is_instantiated() const = 0;
    virtual config_map_t copy_config() const     = 0;
};

/// Channel index of a ConfigManager; keeps the manager alive.
class ManagedChannel : public ChannelBackend
{
    std::shared_ptr<CManager> m_mgr;
    std::size_t               m_index;

    cali_ConfigManager* mgr() const { return &m_mgr->mgr; }

public:
    ManagedChannel(const std::shared_ptr<CManager>& mgr, std::size_t index) : m_mgr(mgr), m_index(index) {}

    std::string name() const override
    {
        const char* n = cali_ConfigManager_channel_name(mgr(), m_index);
        return n ? n : "";
    }

    void start() override { cali_ConfigManager_channel_start(mgr(), m_index); }
    void stop() override { cali_ConfigManager_channel_stop(mgr(), m_index); }
    void flush() override { cali_ConfigManager_channel_flush(mgr(), m_index); }
    bool is_active() const override { return cali_ConfigManager_channel_is_active(mgr(), m_index); }
    bool is_instantiated() const override { return cali_ConfigManager_channel_is_instantiated(mgr(), m_index); }

    config_map_t copy_config() const override
    {
        config_map_t cfg;
        cali_ConfigManager_channel_config(mgr(), m_index, collect_kv, &cfg);
        return cfg;
    }
};

/// A channel created on the first start with the controller's settings
/// and run metadata (which the controller owns and may change until
/// then); deleted with the last copy of its controller.
class OwnChannel : public ChannelBackend
{
    std::string         m_name;
    int                 m_flags;
    const config_map_t& m_config;
    const info_map_t&   m_metadata;
    cali_id_t           m_id;

public:
    OwnChannel(const char* name, int flags, const config_map_t& config, const info_map_t& metadata)
        : m_name(name ? name : ""), m_flags(flags), m_config(config), m_metadata(metadata), m_id(CALI_INV_ID)
    {}

    ~OwnChannel() override
    {
        if (m_id != CALI_INV_ID)
            cali_delete_channel(m_id);
    }

    std::string name() const override { return m_name; }

    void start() override
    {
        if (m_id == CALI_INV_ID) {
            m_id = create_channel(m_name.c_str(), m_flags | CALI_CHANNEL_LEAVE_INACTIVE, m_config);
            for (info_map_t::const_iterator it = m_metadata.begin(); it != m_metadata.end(); ++it)
                cali_channel_set_metadata(m_id, it->first.c_str(), it->second.c_str());
        }
        cali_activate_channel(m_id);
    }

    void stop() override
    {
        if (m_id != CALI_INV_ID)
            cali_deactivate_channel(m_id);
    }

    void flush() override
    {
        if (m_id != CALI_INV_ID)
            cali_channel_flush(m_id, 0);
    }

    bool is_active() const override { return m_id != CALI_INV_ID && cali_channel_is_active(m_id); }
    bool is_instantiated() const override { return m_id != CALI_INV_ID; }

    config_map_t copy_config() const override { return m_config; }
};

/// The backend of the ChannelController that make_controller is
/// constructing on this thread, if any: the reference's header gives the
/// controller no other way in than its public constructors.
thread_local const std::shared_ptr<ChannelBackend>* adopted_backend = nullptr;

/// The controller of channel index of a ConfigManager.
std::shared_ptr<ChannelController> make_controller(const std::shared_ptr<CManager>& mgr, std::size_t index)
{
    struct Adopting {
        explicit Adopting(const std::shared_ptr<ChannelBackend>& backend) { adopted_backend = &backend; }
        ~Adopting() { adopted_backend = nullptr; }
    };
    std::shared_ptr<ChannelBackend> backend = std::make_shared<ManagedChannel>(mgr, index);
    Adopting                        adopting(backend);
    return std::make_shared<ChannelController>(backend->name().c_str(), 0, backend->copy_config());
}

} // namespace

struct ChannelController::ChannelControllerImpl {
    /// The settings of the controller's own channel (those of a
    /// manager's controller change nothing).
    config_map_t                    config;
    info_map_t                      metadata;
    std::shared_ptr<ChannelBackend> backend;

    ChannelControllerImpl(const char* name, int flags, const config_map_t& cfg, const info_map_t& meta)
        : config(cfg),
          metadata(meta),
          backend(adopted_backend ? *adopted_backend : std::make_shared<OwnChannel>(name, flags, config, metadata))
    {}
};

struct ConfigManager::ConfigManagerImpl : CManager {
};

ChannelController::ChannelController(const char* name, int flags, const config_map_t& cfg)
    : mP(std::make_shared<ChannelControllerImpl>(name, flags, cfg, info_map_t()))
{}

ChannelController::ChannelController(const char* name, int flags, const config_map_t& cfg, const info_map_t& metadata)
    : mP(std::make_shared<ChannelControllerImpl>(name, flags, cfg, metadata))
{}

ChannelController::~ChannelController() {}

config_map_t& ChannelController::config()
{
    return mP->config;
}

info_map_t& ChannelController::metadata()
{
    return mP->metadata;
}

void ChannelController::start()
{
    mP->backend->start();
}

void ChannelController::stop()
{
    mP->backend->stop();
}

bool ChannelController::is_active() const
{
    return mP->backend->is_active();
}

bool ChannelController::is_instantiated() const
{
    return mP->backend->is_instantiated();
}

std::string ChannelController::name() const
{
    return mP->backend->name();
}

void ChannelController::flush()
{
    mP->backend->flush();
}

config_map_t ChannelController::copy_config() const
{
    return mP->backend->copy_config();
}

ConfigManager::ConfigManager() : mP(std::make_shared<ConfigManagerImpl>()) {}

ConfigManager::ConfigManager(const char* config_string) : mP(std::make_shared<ConfigManagerImpl>())
{
    add(config_string);
}

ConfigManager::~ConfigManager() {}

void ConfigManager::add_config_spec(const char* json)
{
    cali_ConfigManager_add_config_spec(&mP->mgr, json);
}

void ConfigManager::add_option_spec(const char* json)
{
    cali_ConfigManager_add_option_spec(&mP->mgr, json);
}

void ConfigManager::load(const char* filename)
{
    cali_ConfigManager_load(&mP->mgr, filename);
}

bool ConfigManager::add(const char* config_string)
{
    return cali_ConfigManager_add(&mP->mgr, config_string);
}

bool ConfigManager::add(const char* config_string, argmap_t& extra_kv_pairs)
{
    return cali_ConfigManager_add_with_extra(&mP->mgr, config_string, collect_kv, &extra_kv_pairs);
}

void ConfigManager::set_default_parameter(const char* key, const char* value)
{
    cali_ConfigManager_set_default_parameter(&mP->mgr, key, value);
}

void ConfigManager::set_default_parameter_for_config(const char* config, const char* key, const char* value)
{
    cali_ConfigManager_set_default_parameter_for_config(&mP->mgr, config, key, value);
}

bool ConfigManager::error() const
{
    return cali_ConfigManager_error(&mP->mgr);
}

std::string ConfigManager::error_msg() const
{
    return cali_ConfigManager_error_msg(&mP->mgr);
}

ConfigManager::ChannelList ConfigManager::get_all_channels()
{
    ChannelList list;
    std::size_t n = cali_ConfigManager_channel_count(&mP->mgr);
    for (std::size_t i = 0; i < n; ++i)
        list.push_back(make_controller(mP, i));
    return list;
}

ConfigManager::ChannelPtr ConfigManager::get_channel(const char* name)
{
    std::size_t n = cali_ConfigManager_channel_count(&mP->mgr);
    for (std::size_t i = 0; i < n; ++i) {
        const char* channel = cali_ConfigManager_channel_name(&mP->mgr, i);
        if (name && channel && std::string(channel) == name)
            return make_controller(mP, i);
    }
    return ChannelPtr();
}

void ConfigManager::start()
{
    cali_ConfigManager_start(&mP->mgr);
}

void ConfigManager::stop()
{
    cali_ConfigManager_stop(&mP->mgr);
}

void ConfigManager::flush()
{
    cali_ConfigManager_flush(&mP->mgr);
}

std::string ConfigManager::check(const char* config_string, bool allow_extra_kv_pairs) const
{
    return cali_ConfigManager_check(&mP->mgr, config_string, allow_extra_kv_pairs);
}

std::vector<std::string> ConfigManager::available_config_specs() const
{
    std::vector<std::string> names;
    cali_ConfigManager_available_config_specs(&mP->mgr, collect_string, &names);
    return names;
}

std::string ConfigManager::get_description_for_spec(const char* name) const
{
    return cali_ConfigManager_get_description_for_spec(&mP->mgr, name);
}

std::string ConfigManager::get_documentation_for_spec(const char* name) const
{
    return cali_ConfigManager_get_documentation_for_spec(&mP->mgr, name);
}

std::vector<std::string> ConfigManager::available_configs()
{
    return ConfigManager().available_config_specs();
}

std::vector<std::string> ConfigManager::get_config_docstrings()
{
    ConfigManager            mgr;
    std::vector<std::string> docs;
    for (const std::string& name : mgr.available_config_specs())
        docs.push_back(mgr.get_documentation_for_spec(name.c_str()));
    return docs;
}

std::string ConfigManager::check_config_string(const char* config_string, bool allow_extra_kv_pairs)
{
    return ConfigManager().check(config_string, allow_extra_kv_pairs);
}

} // namespace cali
