// Caliper: cali::Entry, one entry of a snapshot record (drop-in for the
// reference's caliper/common/Entry.h): a reference entry (a context-tree
// node, standing for every attribute=value on its path to the root) or
// an immediate entry (an attribute and a value).
#ifndef CALI_COMMON_ENTRY_H
#define CALI_COMMON_ENTRY_H

#include "Attribute.h"
#include "Node.h"
#include "Variant.h"

namespace cali
{

class Entry
{
    Node*     m_node; // reference entries
    cali_id_t m_attr; // immediate entries
    Variant   m_value;

public:
    /// An empty entry.
    Entry() : m_node(0), m_attr(CALI_INV_ID) {}
    /// A reference entry for node.
    explicit Entry(Node* node) : m_node(node), m_attr(CALI_INV_ID), m_value(node ? node->data() : Variant()) {}
    /// An immediate entry.
    Entry(const Attribute& attr, const Variant& value) : m_node(0), m_attr(attr.id()), m_value(value) {}

    bool empty() const { return !m_node && m_attr == CALI_INV_ID; }
    bool is_reference() const { return m_node != 0; }
    bool is_immediate() const { return !m_node && m_attr != CALI_INV_ID; }

    /// The node of a reference entry; for an immediate one, its
    /// attribute's name node, as in the reference.
    Node* node() const { return m_node ? m_node : detail::node_for_id(m_attr); }

    /// The attribute of the entry (of the innermost node for a reference).
    cali_id_t attribute() const { return m_node ? m_node->attribute() : m_attr; }

    /// The entry's value (the innermost node's for a reference).
    Variant value() const { return m_value; }

    /// The innermost value of attribute attr_id in the entry, or empty.
    Variant value(cali_id_t attr_id) const
    {
        if (!m_node)
            return m_attr == attr_id ? m_value : Variant();
        for (Node* n = m_node; n; n = n->parent())
            if (n->attribute() == attr_id)
                return n->data();
        return Variant();
    }

    /// The innermost value of attr as an entry (immediate), or empty.
    Entry get(const Attribute& attr) const
    {
        Variant v = value(attr.id());
        return v.empty() ? Entry() : Entry(attr, v);
    }

    /// How many values of attribute attr_id the entry holds (all values
    /// for CALI_INV_ID).
    int count(cali_id_t attr_id = CALI_INV_ID) const
    {
        if (!m_node)
            return m_attr != CALI_INV_ID && (attr_id == CALI_INV_ID || attr_id == m_attr) ? 1 : 0;
        int n = 0;
        for (Node* node = m_node; node; node = node->parent())
            if (attr_id == CALI_INV_ID || node->attribute() == attr_id)
                ++n;
        return n;
    }

    bool operator!() const { return empty(); }
    explicit operator bool() const { return !empty(); }

    friend bool operator==(const Entry& a, const Entry& b)
    {
        if (a.m_node || b.m_node)
            return a.m_node == b.m_node;
        return a.m_attr == b.m_attr && a.m_value == b.m_value;
    }
    friend bool operator!=(const Entry& a, const Entry& b) { return !(a == b); }
};

} // namespace cali

#endif
