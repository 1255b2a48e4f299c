// Caliper: cali::Node, a node of the context tree (drop-in for the
// reference's caliper/common/Node.h), read through cali_node_info.
//
// A node stands for attribute=value under its parent; the path up to the
// root is a set of values (a region stack, an attribute's definition).
// Nodes are never deleted, so a Node* stays valid for the whole run: the
// objects are made on first use and kept in a table per process.
#ifndef CALI_COMMON_NODE_H
#define CALI_COMMON_NODE_H

#include "Variant.h"
#include "../cali_cxx_runtime.h"

#include <map>
#include <mutex>

namespace cali
{

class Node;

namespace detail
{
Node* node_for_id(cali_id_t id);
}

class Node
{
    cali_id_t m_id;
    cali_id_t m_attribute;
    Variant   m_data;
    cali_id_t m_parent;

    Node(cali_id_t id, cali_id_t attribute, const Variant& data, cali_id_t parent)
        : m_id(id), m_attribute(attribute), m_data(data), m_parent(parent)
    {}
    Node(const Node&);
    Node& operator=(const Node&);

    friend Node* detail::node_for_id(cali_id_t id);

public:
    cali_id_t id() const { return m_id; }
    /// The id of the node's attribute.
    cali_id_t attribute() const { return m_attribute; }
    Variant   data() const { return m_data; }
    /// The parent, or a null pointer under the root.
    Node*     parent() const { return detail::node_for_id(m_parent); }

    bool equals(cali_id_t attribute, const Variant& v) const { return m_attribute == attribute && m_data == v; }

    // No first_child() or next_sibling(): the runtime's tree keeps parent
    // links only, and a null pointer would pass for "no child" (see the
    // README's list of differences).
};

namespace detail
{
/// The node with id id (a null pointer for CALI_INV_ID or an unknown id).
inline Node* node_for_id(cali_id_t id)
{
    if (id == CALI_INV_ID)
        return 0;
    static std::mutex                  lock;
    static std::map<cali_id_t, Node*>* nodes = new std::map<cali_id_t, Node*>; // never freed: nodes outlive static destructors
    std::lock_guard<std::mutex>        held(lock);
    std::map<cali_id_t, Node*>::iterator it = nodes->find(id);
    if (it != nodes->end())
        return it->second;
    cali_id_t      attr   = CALI_INV_ID;
    cali_id_t      parent = CALI_INV_ID;
    cali_variant_t value  = cali_make_empty_variant();
    if (!cali_node_info(id, &attr, &value, &parent))
        return 0;
    Node* node = new Node(id, attr, Variant(value), parent);
    (*nodes)[id] = node;
    return node;
}
} // namespace detail

} // namespace cali

#endif
