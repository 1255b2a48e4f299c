// The reference's caliper/Annotation.h: the C++ annotation classes, whose
// members libcaliper defines. The layouts are the reference's: a program
// allocates these objects itself.
#pragma once

#include "cali_definitions.h"

#include "common/Variant.h"

#include <map>

namespace cali
{

/// Marks a function as a region (region=name) for its lifetime.
class Function
{
public:
    Function(const char* name);

    ~Function();
};

/// Marks a scope as a region (region=name) for its lifetime.
class ScopeAnnotation
{
    cali_id_t m_attr_id;

public:
    ScopeAnnotation(const char* name);

    ~ScopeAnnotation();
};

/// A loop: loop=name while it lives, iteration#name for each iteration.
class Loop
{
    struct Impl;
    Impl* pI;

public:
    class Iteration
    {
        const Impl* pI;
        int         m_it;

        Iteration(const Impl*, int);

    public:
        ~Iteration();

        friend class Loop;
    };

    Loop(const char* name);
    Loop(const Loop& loop);

    ~Loop();

    Iteration iteration(int i) const;

    void end();
};

/// An attribute annotation: begin/set/end values of attribute name.
class Annotation
{
    struct Impl;
    Impl* pI;

public:
    typedef std::map<const char*, Variant> MetadataListType;

    Annotation(const char* name, const MetadataListType& metadata, int opt = 0);

    Annotation(const char* name, int opt = 0);

    Annotation(const Annotation&);

    ~Annotation();

    Annotation& operator=(const Annotation&);

    /// Ends the annotation's value at the end of the C++ scope.
    class Guard
    {
        Impl* pI;

        Guard(const Guard&);
        Guard& operator=(const Guard&);

    public:
        Guard(Annotation& a);

        ~Guard();
    };

    typedef Guard AutoScope;

    Annotation& begin();
    Annotation& begin(int data);
    Annotation& begin(double data);
    Annotation& begin(const char* data);
    Annotation& begin(cali_attr_type type, void* data, uint64_t size);
    Annotation& begin(const Variant& data);

    template <typename T>
    Annotation& begin(T data)
    {
        return begin(Variant(data));
    }

    Annotation& set(int data);
    Annotation& set(double data);
    Annotation& set(const char* data);
    Annotation& set(cali_attr_type type, void* data, uint64_t size);
    Annotation& set(const Variant& data);

    template <typename T>
    Annotation& set(T data)
    {
        return set(Variant(data));
    }

    void end();
};

} // namespace cali
