// Caliper: cali::Attribute, a handle to an attribute (drop-in for the
// reference's caliper/common/Attribute.h). Its id is the id of the
// attribute's name node in the context tree; name, type, properties and
// metadata are read from the runtime, which never changes them.
#ifndef CALI_COMMON_ATTRIBUTE_H
#define CALI_COMMON_ATTRIBUTE_H

#include "Node.h"
#include "Variant.h"
#include "cali_types.h"
#include "../cali.h"

#include <string>

namespace cali
{

class Attribute;

namespace detail
{
Attribute attribute_for_id(cali_id_t id);
}

class Attribute
{
    cali_id_t m_id;

    explicit Attribute(cali_id_t id) : m_id(id) {}

    friend Attribute detail::attribute_for_id(cali_id_t id);

public:
    /// An invalid attribute (false in a condition).
    Attribute() : m_id(CALI_INV_ID) {}

    cali_id_t id() const { return m_id; }

    /// The name; "" for an invalid attribute.
    std::string name() const
    {
        const char* n = name_c_str();
        return n ? n : "";
    }
    /// The name (lives as long as the process), or a null pointer.
    const char* name_c_str() const { return m_id == CALI_INV_ID ? 0 : cali_attribute_name(m_id); }

    cali_attr_type type() const { return m_id == CALI_INV_ID ? CALI_TYPE_INV : cali_attribute_type(m_id); }
    int            properties() const { return m_id == CALI_INV_ID ? 0 : cali_attribute_properties(m_id); }

    /// The value of metadata attribute attr on this one, or empty.
    Variant get(const Attribute& attr) const { return Variant(cali_attribute_metadata(m_id, attr.m_id)); }

    bool store_as_value() const { return properties() & CALI_ATTR_ASVALUE; }
    bool is_autocombineable() const { return !store_as_value() && !(properties() & CALI_ATTR_NOMERGE); }
    bool skip_events() const { return properties() & CALI_ATTR_SKIP_EVENTS; }
    bool is_hidden() const { return properties() & CALI_ATTR_HIDDEN; }
    bool is_nested() const { return properties() & CALI_ATTR_NESTED; }
    bool is_global() const { return properties() & CALI_ATTR_GLOBAL; }
    bool is_unaligned() const { return properties() & CALI_ATTR_UNALIGNED; }
    bool is_aggregatable() const { return properties() & CALI_ATTR_AGGREGATABLE; }
    int  level() const { return (properties() & CALI_ATTR_LEVEL_MASK) >> 16; }

    /// The attribute's name node.
    Node* node() const { return detail::node_for_id(m_id); }

    bool operator!() const { return m_id == CALI_INV_ID; }
    explicit operator bool() const { return m_id != CALI_INV_ID; }

    /// The attribute whose name node is node (invalid if node is not one).
    static Attribute make_attribute(Node* node)
    {
        if (!node || node->attribute() != NAME_ATTR_ID)
            return Attribute();
        return Attribute(node->id());
    }

    /// Ids of the attributes that define attributes (bootstrap nodes).
    static const cali_id_t NAME_ATTR_ID = 8;
    static const cali_id_t TYPE_ATTR_ID = 9;
    static const cali_id_t PROP_ATTR_ID = 10;

    friend bool operator==(const Attribute& a, const Attribute& b) { return a.m_id == b.m_id; }
    friend bool operator!=(const Attribute& a, const Attribute& b) { return a.m_id != b.m_id; }
    friend bool operator<(const Attribute& a, const Attribute& b) { return a.m_id < b.m_id; }
};

namespace detail
{
/// The attribute with id id, unchecked (ids the runtime handed out).
inline Attribute attribute_for_id(cali_id_t id)
{
    return Attribute(id);
}
} // namespace detail

} // namespace cali

#endif
