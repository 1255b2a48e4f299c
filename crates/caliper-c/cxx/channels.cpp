// The C++ conveniences of the reference's cali.h: create_channel and
// write_report_for_query.

#include <caliper/cali.h>

#include "extensions.h"

#include <ostream>

// The cali_write_fn of write_report_for_query (it never throws: a failing
// stream sets its own error state).
extern "C" {
static void write_to_ostream(void* os, const char* text, size_t len)
{
    static_cast<std::ostream*>(os)->write(text, static_cast<std::streamsize>(len));
}
}

namespace cali
{

cali_id_t create_channel(const char* name, int flags, const config_map_t& cfg)
{
    cali_configset_t set = cali_create_configset(nullptr);
    for (config_map_t::const_iterator it = cfg.begin(); it != cfg.end(); ++it)
        cali_configset_set(set, it->first.c_str(), it->second.c_str());
    cali_id_t id = cali_create_channel(name, flags, set);
    cali_delete_configset(set);
    return id;
}

/// As in the reference, flush_opts is ignored: the channel's buffers are
/// kept.
void write_report_for_query(cali_id_t chn, const char* query, int /* flush_opts */, std::ostream& os)
{
    cali_write_report_for_query(chn, query, write_to_ostream, &os);
}

} // namespace cali
