// The reference's annotation classes (Annotation.h): Function,
// ScopeAnnotation, Loop and Loop::Iteration over the C API, Annotation and
// its Guard over the header-only Annotation.

#include <caliper/cali.h>

#include "extensions.h"
#include "header_only.h"

#include <atomic>

namespace cali
{

Function::Function(const char* name)
{
    cali_begin_region(name);
}

Function::~Function()
{
    cali_end(cali_region_attr_id);
}

ScopeAnnotation::ScopeAnnotation(const char* name)
{
    cali_begin_region(name);
    m_attr_id = cali_region_attr_id;
}

ScopeAnnotation::~ScopeAnnotation()
{
    cali_end(m_attr_id);
}

/// A loop's state, shared by the copies of the Loop: the loop ends at
/// end() or with the last copy.
struct Loop::Impl {
    cali_id_t        iter_attr;
    bool             ended;
    std::atomic<int> refs;

    explicit Impl(const char* name) : ended(false), refs(1)
    {
        cali_init();
        cali_begin_string(cali_loop_attr_id, name);
        iter_attr = cali_make_loop_iteration_attribute(name);
    }
};

Loop::Loop(const char* name) : pI(new Impl(name)) {}

Loop::Loop(const Loop& loop) : pI(loop.pI)
{
    ++pI->refs;
}

Loop::~Loop()
{
    if (--pI->refs == 0) {
        end();
        delete pI;
    }
}

Loop::Iteration::Iteration(const Impl* p, int i) : pI(p), m_it(i)
{
    cali_begin_int(pI->iter_attr, m_it);
}

Loop::Iteration::~Iteration()
{
    cali_end(pI->iter_attr);
}

Loop::Iteration Loop::iteration(int i) const
{
    return Iteration(pI, i);
}

void Loop::end()
{
    if (!pI->ended) {
        cali_end(cali_loop_attr_id);
        pI->ended = true;
    }
}

/// The annotation, shared by the copies of an Annotation and its Guards
/// (counted, as the reference's: a Guard costs no allocation).
struct Annotation::Impl {
    header_only::cali::Annotation ann;
    std::atomic<int>              refs;

    explicit Impl(const header_only::cali::Annotation& a) : ann(a), refs(1) {}

    Impl* attach()
    {
        ++refs;
        return this;
    }

    void detach()
    {
        if (--refs == 0)
            delete this;
    }
};

namespace
{

header_only::cali::Variant header_only_variant(const Variant& v)
{
    return header_only::cali::Variant(v.c_variant());
}

} // namespace

Annotation::Annotation(const char* name, const MetadataListType& metadata, int opt)
{
    header_only::cali::Annotation::MetadataListType meta;
    for (MetadataListType::const_iterator it = metadata.begin(); it != metadata.end(); ++it)
        meta[it->first] = header_only_variant(it->second);
    pI = new Impl(header_only::cali::Annotation(name, meta, opt));
}

Annotation::Annotation(const char* name, int opt) : pI(new Impl(header_only::cali::Annotation(name, opt))) {}

Annotation::Annotation(const Annotation& other) : pI(other.pI->attach()) {}

Annotation::~Annotation()
{
    pI->detach();
}

Annotation& Annotation::operator=(const Annotation& other)
{
    Impl* previous = pI;
    pI             = other.pI->attach();
    previous->detach();
    return *this;
}

Annotation::Guard::Guard(Annotation& a) : pI(a.pI->attach()) {}

Annotation::Guard::~Guard()
{
    pI->ann.end();
    pI->detach();
}

Annotation& Annotation::begin()
{
    pI->ann.begin();
    return *this;
}

Annotation& Annotation::begin(int data)
{
    pI->ann.begin(data);
    return *this;
}

Annotation& Annotation::begin(double data)
{
    pI->ann.begin(data);
    return *this;
}

Annotation& Annotation::begin(const char* data)
{
    pI->ann.begin(data);
    return *this;
}

Annotation& Annotation::begin(cali_attr_type type, void* data, uint64_t size)
{
    pI->ann.begin(type, data, size);
    return *this;
}

Annotation& Annotation::begin(const Variant& data)
{
    pI->ann.begin(header_only_variant(data));
    return *this;
}

Annotation& Annotation::set(int data)
{
    pI->ann.set(data);
    return *this;
}

Annotation& Annotation::set(double data)
{
    pI->ann.set(data);
    return *this;
}

Annotation& Annotation::set(const char* data)
{
    pI->ann.set(data);
    return *this;
}

Annotation& Annotation::set(cali_attr_type type, void* data, uint64_t size)
{
    pI->ann.set(type, data, size);
    return *this;
}

Annotation& Annotation::set(const Variant& data)
{
    pI->ann.set(header_only_variant(data));
    return *this;
}

void Annotation::end()
{
    pI->ann.end();
}

} // namespace cali
