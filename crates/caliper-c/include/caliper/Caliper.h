// Caliper: the low-level runtime interface (drop-in for the reference's
// caliper/Caliper.h), header-only over the C API and the functions of
// cali_cxx_runtime.h: cali::Caliper (annotations by attribute, attributes,
// channels, snapshots, flushes) and cali::Channel.
//
//     cali::Caliper   c;  // or cali::Caliper::instance()
//     cali::Attribute a = c.create_attribute("solver", CALI_TYPE_STRING, CALI_ATTR_NESTED);
//     c.begin(a, cali::Variant("cg"));
//     c.end(a);
//
// What the reference has and this runtime cannot do is left out, so that
// a program that uses it fails to build rather than run wrong (the README
// lists it): channel event callbacks (Channel::events()), clearing a
// channel's buffers without a flush, per-channel begin/set/end, signal-safe
// instances.
#ifndef CALI_CALIPER_H
#define CALI_CALIPER_H

#include "SnapshotRecord.h"
#include "cali.h"
#include "cali_cxx_runtime.h"
#include "cali_datatracker.h"
#include "callback.hpp"
#include "common/Attribute.h"
#include "common/CaliperMetadataAccessInterface.h"
#include "common/Entry.h"
#include "common/Node.h"
#include "common/RuntimeConfig.h"
#include "common/Variant.h"

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cali
{

/// A channel's identity: one per channel id for the whole run, so that
/// ChannelBody pointers compare equal when the channels do.
struct ChannelBody {
    cali_id_t id;
};

namespace detail
{
/// The body of channel id (made on first use, never freed).
inline ChannelBody* channel_body(cali_id_t id)
{
    static std::mutex                         lock;
    static std::map<cali_id_t, ChannelBody*>* bodies = new std::map<cali_id_t, ChannelBody*>;
    std::lock_guard<std::mutex>               held(lock);
    ChannelBody*&                             body = (*bodies)[id];
    if (!body) {
        body     = new ChannelBody;
        body->id = id;
    }
    return body;
}
} // namespace detail

namespace detail
{
inline bool read_vl(const unsigned char* buf, std::size_t len, std::size_t& pos, uint64_t& out)
{
    out = 0;
    for (unsigned shift = 0; pos < len && shift < 64; shift += 7) {
        unsigned char b = buf[pos++];
        out |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/// Decodes a record as cali_channel_pull_snapshot encodes it: the count
/// and node ids of reference entries, then the count and the attribute
/// ids and packed values of immediate ones (LEB128 numbers).
inline void decode_record(const unsigned char* buf, std::size_t len, std::vector<Entry>& out)
{
    std::size_t pos = 0;
    if (pos >= len)
        return;
    for (unsigned n = buf[pos++]; n > 0; --n) {
        uint64_t id = 0;
        if (!read_vl(buf, len, pos, id))
            return;
        out.push_back(Entry(node_for_id(id)));
    }
    if (pos >= len)
        return;
    for (unsigned n = buf[pos++]; n > 0; --n) {
        uint64_t attr = 0;
        if (!read_vl(buf, len, pos, attr) || pos >= len)
            return;
        bool           ok  = false;
        std::size_t    inc = 0;
        cali_variant_t v   = cali_variant_unpack(buf + pos, &inc, &ok);
        if (!ok)
            return;
        pos += inc;
        out.push_back(Entry(attribute_for_id(attr), Variant(v)));
    }
}

/// What Caliper::flush hands cali_channel_flush_records.
struct FlushCall {
    CaliperMetadataAccessInterface*                                                         db;
    const std::function<void(CaliperMetadataAccessInterface&, const std::vector<Entry>&)>* proc_fn;
};
} // namespace detail

} // namespace cali

// The callbacks of the C functions (C linkage, as their function pointer
// types require).
extern "C" {
static inline void cali_cxx_flush_record(void* arg, const unsigned char* rec, size_t len)
{
    cali::detail::FlushCall*  call = static_cast<cali::detail::FlushCall*>(arg);
    std::vector<cali::Entry> entries;
    cali::detail::decode_record(rec, len, entries);
    try {
        (*call->proc_fn)(*call->db, entries);
    } catch (...) {
        // An exception must not unwind through the runtime.
        cali_log_write(0, "Caliper::flush(): the record callback threw an exception; record skipped");
    }
}

static inline void cali_cxx_collect_attribute(void* list, cali_id_t id)
{
    static_cast<std::vector<cali::Attribute>*>(list)->push_back(cali::detail::attribute_for_id(id));
}
}

namespace cali
{

/// A handle to a channel (false in a condition if there is none).
class Channel
{
    ChannelBody* mP;

    explicit Channel(cali_id_t id) : mP(id == CALI_INV_ID ? 0 : detail::channel_body(id)) {}

    friend class Caliper;

public:
    Channel() : mP(0) {}

    cali_id_t    id() const { return mP ? mP->id : CALI_INV_ID; }
    ChannelBody* body() const { return mP; }

    /// The name ("" if the channel was deleted).
    std::string name() const
    {
        const char* n = mP ? cali_channel_name(mP->id) : 0;
        return n ? n : "";
    }

    bool is_active() const { return mP && cali_channel_name(mP->id) && cali_channel_is_active(mP->id); }

    bool operator!() const { return !mP; }
    explicit operator bool() const { return mP != 0; }

    friend bool operator==(const Channel& a, const Channel& b) { return a.mP == b.mP; }
    friend bool operator!=(const Channel& a, const Channel& b) { return a.mP != b.mP; }
};

/// The runtime. Every instance is the same runtime: constructing one
/// initialises it on first use, as Caliper::instance() does.
class Caliper : public CaliperMetadataAccessInterface
{
public:
    /// Receives each record of a flush, with the runtime to read it.
    typedef std::function<void(CaliperMetadataAccessInterface&, const std::vector<Entry>&)> SnapshotFlushFn;

    Caliper() { cali_init(); }

    static Caliper instance() { return Caliper(); }
    static bool    is_initialized() { return cali_is_initialized(); }

    /// True while the runtime is there to use.
    explicit operator bool() const { return is_initialized(); }

    // --- Annotations (the calling thread's or the process's blackboard,
    // by the attribute's scope; events to every active channel) ---

    /// Begins value on attr; the value must have the attribute's type.
    void begin(const Attribute& attr, const Variant& value) { cali_begin_variant(attr.id(), value.c_variant()); }
    /// Ends the innermost value of attr.
    void end(const Attribute& attr) { cali_end(attr.id()); }
    /// Ends the innermost value of attr, which must be value (else a stack
    /// error, as for a mismatched region end).
    void end_with_value_check(const Attribute& attr, const Variant& value)
    {
        cali_safe_end_variant(attr.id(), value.c_variant());
    }
    /// Sets value on attr (replacing its innermost value).
    void set(const Attribute& attr, const Variant& value) { cali_set_variant(attr.id(), value.c_variant()); }
    /// Replaces the value of an as-value attribute; returns the old one.
    Variant exchange(const Attribute& attr, const Variant& value)
    {
        return Variant(cali_exchange(attr.id(), value.c_variant()));
    }
    /// The innermost value of attr, as an (immediate) entry; empty if none.
    Entry get(const Attribute& attr)
    {
        Variant v(cali_get(attr.id()));
        return v.empty() ? Entry() : Entry(attr, v);
    }
    /// The innermost value of attr on the calling thread's blackboard (or
    /// the process's); the same as get() here.
    Entry get_blackboard_entry(const Attribute& attr) { return get(attr); }
    /// The innermost node of the calling thread's region path (regions,
    /// phases, loops...), or else the process's; null if there is none.
    Node* get_path_node()
    {
        cali_id_t id = cali_path_node();
        return id == CALI_INV_ID ? 0 : detail::node_for_id(id);
    }

    /// An asynchronous event with the entries of info, for every active
    /// channel that takes them (the async_event service).
    void async_event(SnapshotView info)
    {
        std::vector<cali_id_t>      attrs;
        std::vector<cali_variant_t> vals;
        to_lists(info, attrs, vals);
        cali_async_event(static_cast<int>(attrs.size()), data_of(attrs), data_of(vals));
    }

    /// Memory-region tracking needs the alloc service, which this runtime
    /// does not have: logged once per process, and ignored.
    void memory_region_begin(const void* ptr, const char* label, std::size_t elem_size, std::size_t ndims,
                             const std::size_t dims[], std::size_t /* n */ = 0, const Attribute* /* extra_attrs */ = 0,
                             const Variant* /* extra_vals */ = 0)
    {
        cali_datatracker_track_dimensional(ptr, label, elem_size, dims, ndims);
    }
    void memory_region_end(const void* ptr) { cali_datatracker_untrack(ptr); }

    // --- Snapshots and flushes ---

    /// Takes a snapshot on chn (if active) with trigger_info added.
    void push_snapshot(ChannelBody* chn, SnapshotView trigger_info)
    {
        std::vector<cali_id_t>      attrs;
        std::vector<cali_variant_t> vals;
        to_lists(trigger_info, attrs, vals);
        cali_channel_push_snapshot(id_of(chn), CALI_SCOPE_THREAD, static_cast<int>(attrs.size()), data_of(attrs),
                                   data_of(vals));
    }
    void push_snapshot(Channel* chn, SnapshotView trigger_info) { push_snapshot(chn ? chn->body() : 0, trigger_info); }

    /// Appends trigger_info, then the snapshot chn would take now on this
    /// thread (its context and measurements, not processed), to rec.
    void pull_snapshot(ChannelBody* chn, SnapshotView trigger_info, SnapshotBuilder& rec)
    {
        rec.append(trigger_info);
        unsigned char buf[4096];
        std::size_t   len = cali_channel_pull_snapshot(id_of(chn), CALI_SCOPE_THREAD, sizeof(buf), buf);
        std::vector<unsigned char> big;
        if (len > sizeof(buf)) {
            big.resize(len);
            len = cali_channel_pull_snapshot(id_of(chn), CALI_SCOPE_THREAD, big.size(), &big[0]);
        }
        std::vector<Entry> entries;
        detail::decode_record(big.empty() ? buf : &big[0], len, entries);
        rec.append(entries.size(), data_of(entries));
    }
    void pull_snapshot(Channel* chn, SnapshotView trigger_info, SnapshotBuilder& rec)
    {
        pull_snapshot(chn ? chn->body() : 0, trigger_info, rec);
    }

    /// Hands every record chn gathered to proc_fn (its buffers are kept,
    /// nothing is written). proc_fn must not annotate: updates are stopped
    /// during a flush. flush_info is not used.
    void flush(ChannelBody* chn, SnapshotView /* flush_info */, const SnapshotFlushFn& proc_fn)
    {
        detail::FlushCall call = {this, &proc_fn};
        cali_channel_flush_records(id_of(chn), cali_cxx_flush_record, &call);
    }
    void flush(Channel* chn, SnapshotView flush_info, const SnapshotFlushFn& proc_fn)
    {
        flush(chn ? chn->body() : 0, flush_info, proc_fn);
    }

    /// Flushes chn and writes its outputs (report, recorder, ...), as at
    /// program exit. flush_info is not used.
    void flush_and_write(ChannelBody* chn, SnapshotView /* flush_info */ = SnapshotView())
    {
        cali_channel_flush(id_of(chn), 0);
    }
    void flush_and_write(Channel* chn, SnapshotView flush_info = SnapshotView())
    {
        flush_and_write(chn ? chn->body() : 0, flush_info);
    }

    /// Nothing to do here: a thread's data go to the channels when the
    /// thread exits, and a flush reads the data of live threads too.
    void release_thread() {}

    /// Ends measurement as at program exit: every channel that flushes on
    /// exit writes its output now; later annotations do nothing.
    static void release() { cali_release(); }

    // --- Attributes and metadata ---

    Attribute create_attribute(const std::string& name, cali_attr_type type, int prop = CALI_ATTR_DEFAULT,
                               int meta = 0, const Attribute* meta_attr = 0, const Variant* meta_data = 0)
    {
        std::vector<cali_id_t>      ids;
        std::vector<cali_variant_t> vals;
        for (int i = 0; i < meta && meta_attr && meta_data; ++i) {
            ids.push_back(meta_attr[i].id());
            vals.push_back(meta_data[i].c_variant());
        }
        cali_id_t id = cali_create_attribute_with_metadata(name.c_str(), type, prop, static_cast<int>(ids.size()),
                                                           data_of(ids), data_of(vals));
        return id == CALI_INV_ID ? Attribute() : detail::attribute_for_id(id);
    }

    Attribute get_attribute(const std::string& name) const
    {
        cali_id_t id = cali_find_attribute(name.c_str());
        return id == CALI_INV_ID ? Attribute() : detail::attribute_for_id(id);
    }

    Attribute get_attribute(cali_id_t id) const { return cali_attribute_name(id) ? detail::attribute_for_id(id) : Attribute(); }

    std::vector<Attribute> get_all_attributes() const
    {
        std::vector<Attribute> all;
        cali_all_attributes(cali_cxx_collect_attribute, &all);
        return all;
    }

    Node* node(cali_id_t id) const { return detail::node_for_id(id); }

    /// The process's run metadata: the values of global attributes.
    std::vector<Entry> get_globals()
    {
        std::vector<Entry>     globals;
        std::vector<Attribute> attrs = find_attributes_with_prop(CALI_ATTR_GLOBAL);
        for (std::size_t i = 0; i < attrs.size(); ++i) {
            Entry e = get(attrs[i]);
            if (!e.empty())
                globals.push_back(e);
        }
        return globals;
    }

    /// The run metadata a flush of chn writes: the process's and the
    /// channel's own (its name, start time, config options).
    std::vector<Entry> get_globals(const Channel& chn)
    {
        std::vector<unsigned char> buf(4096);
        std::size_t                len = cali_channel_pull_globals(chn.id(), buf.size(), &buf[0]);
        if (len > buf.size()) {
            buf.resize(len);
            len = cali_channel_pull_globals(chn.id(), buf.size(), &buf[0]);
        }
        std::vector<Entry> entries;
        detail::decode_record(&buf[0], len, entries);
        return entries;
    }

    // --- Channels ---

    /// A new channel with the settings of cfg, created inactive (see
    /// activate_channel).
    Channel create_channel(const char* name, const RuntimeConfig& cfg)
    {
        cali_configset_t set   = cfg.make_configset();
        int              flags = CALI_CHANNEL_LEAVE_INACTIVE | (cfg.allow_read_env() ? CALI_CHANNEL_ALLOW_READ_ENV : 0);
        cali_id_t        id    = cali_create_channel(name, flags, set);
        cali_delete_configset(set);
        return Channel(id);
    }

    /// Channel id, or an empty handle if there is none (or it was deleted).
    Channel get_channel(cali_id_t id) { return cali_channel_name(id) ? Channel(id) : Channel(); }

    std::vector<Channel> get_all_channels()
    {
        std::vector<Channel> all;
        for (std::size_t id = 0; id < cali_num_channels(); ++id)
            if (cali_channel_name(id))
                all.push_back(Channel(id));
        return all;
    }

    void activate_channel(const Channel& chn) { cali_activate_channel(chn.id()); }
    void deactivate_channel(const Channel& chn) { cali_deactivate_channel(chn.id()); }
    /// Deletes chn: it stops measuring and writes nothing at exit.
    void delete_channel(const Channel& chn) { cali_delete_channel(chn.id()); }

    void activate_channel(Channel* chn) { cali_activate_channel(chn ? chn->id() : CALI_INV_ID); }
    void deactivate_channel(Channel* chn) { cali_deactivate_channel(chn ? chn->id() : CALI_INV_ID); }
    void delete_channel(Channel* chn) { cali_delete_channel(chn ? chn->id() : CALI_INV_ID); }

private:
    static cali_id_t id_of(ChannelBody* chn) { return chn ? chn->id : CALI_INV_ID; }

    template <typename T>
    static T* data_of(std::vector<T>& v)
    {
        return v.empty() ? 0 : &v[0];
    }

    /// The entries of view as attribute and value lists: an immediate
    /// entry as itself, a reference entry as its path, root first.
    static void to_lists(SnapshotView view, std::vector<cali_id_t>& attrs, std::vector<cali_variant_t>& vals)
    {
        for (SnapshotView::iterator e = view.begin(); e != view.end(); ++e) {
            if (e->is_immediate()) {
                attrs.push_back(e->attribute());
                vals.push_back(e->value().c_variant());
                continue;
            }
            std::size_t first = attrs.size();
            for (Node* n = e->node(); e->is_reference() && n; n = n->parent()) {
                attrs.insert(attrs.begin() + first, n->attribute());
                vals.insert(vals.begin() + first, n->data().c_variant());
            }
        }
    }

};

} // namespace cali

#endif
