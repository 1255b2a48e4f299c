// Caliper: C++ annotation classes (drop-in for the reference's
// caliper/Annotation.h), header-only over the C API. The signatures are the
// reference's: Annotation's begin and set return the annotation, so that
// calls chain and a Guard takes one from a temporary
// (`cali::Annotation::Guard g(cali::Annotation("x").set(true));`), and
// the constructors from a name or an annotation are not explicit
// (`cali::Annotation::Guard g = ann.begin(1);`).
#ifndef CALI_ANNOTATION_H
#define CALI_ANNOTATION_H

#include "cali.h"
#include "cali_cxx_local.h"
#include "common/Variant.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cali
{

/// Marks a function as a region (region=name) for its lifetime.
class Function
{
public:
    CALI_CXX_LOCAL Function(const char* name) { cali_begin_region(name); }
    CALI_CXX_LOCAL ~Function() { cali_end(cali_region_attr_id); }

private:
    Function(const Function&);
    Function& operator=(const Function&);
};

/// Marks a scope as a region (region=name) for its lifetime.
class ScopeAnnotation
{
public:
    CALI_CXX_LOCAL ScopeAnnotation(const char* name) { cali_begin_region(name); }
    CALI_CXX_LOCAL ~ScopeAnnotation() { cali_end(cali_region_attr_id); }

private:
    ScopeAnnotation(const ScopeAnnotation&);
    ScopeAnnotation& operator=(const ScopeAnnotation&);
};

/// A loop: loop=name while it lives, iteration#name for each iteration.
/// Copies share the loop; it ends at end() or with the last copy.
class Loop
{
    struct Impl {
        cali_id_t iter_attr;
        bool      ended;
        Impl() : iter_attr(CALI_INV_ID), ended(false) {}
        ~Impl()
        {
            if (!ended)
                cali_end(cali_loop_attr_id);
        }
    };
    std::shared_ptr<Impl> m_impl;

public:
    /// Begins iteration i of a loop; ends it when destroyed.
    class Iteration
    {
        cali_id_t m_attr;

    public:
        CALI_CXX_LOCAL Iteration(cali_id_t attr, int i) : m_attr(attr) { cali_begin_int(attr, i); }
        CALI_CXX_LOCAL Iteration(Iteration&& other) : m_attr(other.m_attr) { other.m_attr = CALI_INV_ID; }
        CALI_CXX_LOCAL ~Iteration()
        {
            if (m_attr != CALI_INV_ID)
                cali_end(m_attr);
        }

    private:
        Iteration(const Iteration&);
        Iteration& operator=(const Iteration&);
    };

    // Declared for their visibility (see cali_cxx_local.h).
    CALI_CXX_LOCAL Loop(const Loop&)            = default;
    CALI_CXX_LOCAL Loop(Loop&&)                 = default;
    CALI_CXX_LOCAL Loop& operator=(const Loop&) = default;
    CALI_CXX_LOCAL Loop& operator=(Loop&&)      = default;
    CALI_CXX_LOCAL ~Loop()                      = default;

    CALI_CXX_LOCAL Loop(const char* name) : m_impl(new Impl)
    {
        cali_init();
        cali_begin_string(cali_loop_attr_id, name);
        m_impl->iter_attr = cali_make_loop_iteration_attribute(name);
    }

    CALI_CXX_LOCAL Iteration iteration(int i) const { return Iteration(m_impl->iter_attr, i); }

    CALI_CXX_LOCAL void end()
    {
        if (!m_impl->ended) {
            cali_end(cali_loop_attr_id);
            m_impl->ended = true;
        }
    }
};

/// An attribute annotation: begin/set/end values of attribute name. The
/// attribute is created on the first begin or set, with the type of that
/// value (unless it exists). Copies share the attribute.
class Annotation
{
public:
    typedef std::map<const char*, Variant> MetadataListType;

    class Guard;
    typedef Guard AutoScope;

    // Declared for their visibility (see cali_cxx_local.h).
    CALI_CXX_LOCAL Annotation(const Annotation&)            = default;
    CALI_CXX_LOCAL Annotation(Annotation&&)                 = default;
    CALI_CXX_LOCAL Annotation& operator=(const Annotation&) = default;
    CALI_CXX_LOCAL Annotation& operator=(Annotation&&)      = default;
    CALI_CXX_LOCAL ~Annotation()                            = default;

    CALI_CXX_LOCAL Annotation(const char* name, int opt = 0) : m_impl(new Impl(name, opt)) {}
    CALI_CXX_LOCAL Annotation(const char* name, const MetadataListType& metadata, int opt = 0) : m_impl(new Impl(name, opt))
    {
        for (MetadataListType::const_iterator it = metadata.begin(); it != metadata.end(); ++it)
            m_impl->meta.push_back(std::make_pair(std::string(it->first), it->second));
    }

    CALI_CXX_LOCAL Annotation& begin() { return begin(Variant(true)); }
    CALI_CXX_LOCAL Annotation& begin(int data) { return begin(Variant(data)); }
    CALI_CXX_LOCAL Annotation& begin(double data) { return begin(Variant(data)); }
    CALI_CXX_LOCAL Annotation& begin(const char* data) { return begin(Variant(data)); }
    CALI_CXX_LOCAL Annotation& begin(const std::string& data) { return begin(data.c_str()); }
    CALI_CXX_LOCAL Annotation& begin(cali_attr_type type, void* data, uint64_t size) { return begin(Variant(type, data, size)); }
    CALI_CXX_LOCAL Annotation& begin(const Variant& data)
    {
        Variant v;
        cali_id_t attr = m_impl->attribute(data, v);
        if (attr != CALI_INV_ID)
            cali_begin_variant(attr, v.c_variant());
        return *this;
    }
    template <typename T>
    CALI_CXX_LOCAL Annotation& begin(T data)
    {
        return begin(Variant(data));
    }

    CALI_CXX_LOCAL Annotation& set(int data) { return set(Variant(data)); }
    CALI_CXX_LOCAL Annotation& set(double data) { return set(Variant(data)); }
    CALI_CXX_LOCAL Annotation& set(const char* data) { return set(Variant(data)); }
    CALI_CXX_LOCAL Annotation& set(const std::string& data) { return set(data.c_str()); }
    CALI_CXX_LOCAL Annotation& set(cali_attr_type type, void* data, uint64_t size) { return set(Variant(type, data, size)); }
    CALI_CXX_LOCAL Annotation& set(const Variant& data)
    {
        Variant v;
        cali_id_t attr = m_impl->attribute(data, v);
        if (attr != CALI_INV_ID)
            cali_set_variant(attr, v.c_variant());
        return *this;
    }
    template <typename T>
    CALI_CXX_LOCAL Annotation& set(T data)
    {
        return set(Variant(data));
    }

    CALI_CXX_LOCAL void end()
    {
        if (m_impl->attr != CALI_INV_ID)
            cali_end(m_impl->attr);
    }

private:
    struct Impl {
        std::string                                  name;
        int                                          opt;
        std::vector<std::pair<std::string, Variant> > meta;
        cali_id_t                                    attr;

        Impl(const char* n, int o) : name(n ? n : ""), opt(o), attr(CALI_INV_ID) {}

        /// The attribute (created with data's type on first use) and in
        /// out the value to store: an int converts to a double or uint
        /// attribute; any other type mismatch gives CALI_INV_ID.
        cali_id_t attribute(const Variant& data, Variant& out)
        {
            if (attr == CALI_INV_ID) {
                std::vector<cali_id_t>      ids;
                std::vector<cali_variant_t> vals;
                for (std::size_t i = 0; i < meta.size(); ++i) {
                    ids.push_back(cali_create_attribute(meta[i].first.c_str(), meta[i].second.type(), CALI_ATTR_DEFAULT));
                    vals.push_back(meta[i].second.c_variant());
                }
                attr = cali_create_attribute_with_metadata(
                    name.c_str(), data.type(), opt, static_cast<int>(ids.size()), ids.empty() ? 0 : &ids[0],
                    vals.empty() ? 0 : &vals[0]
                );
            }
            cali_attr_type type = cali_attribute_type(attr);
            out                 = data;
            if (data.type() == CALI_TYPE_INT && type == CALI_TYPE_DOUBLE)
                out = Variant(static_cast<double>(data.to_int64()));
            else if (data.type() == CALI_TYPE_INT && type == CALI_TYPE_UINT)
                out = Variant(static_cast<unsigned long long>(data.to_int64()));
            return out.type() == type ? attr : CALI_INV_ID;
        }
    };
    std::shared_ptr<Impl> m_impl;
};

/// Ends an annotation's value when destroyed:
/// `cali::Annotation::Guard g(ann.begin(x));`.
class Annotation::Guard
{
    Annotation m_ann;

public:
    CALI_CXX_LOCAL Guard(Annotation& a) : m_ann(a) {}
    CALI_CXX_LOCAL ~Guard() { m_ann.end(); }

private:
    Guard(const Guard&);
    Guard& operator=(const Guard&);
};

} // namespace cali

#endif
