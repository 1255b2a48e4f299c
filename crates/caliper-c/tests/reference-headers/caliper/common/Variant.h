// The reference's caliper/common/Variant.h: cali::Variant, a typed value
// over cali_variant_t (the layout: one cali_variant_t). The accessors are
// inline; the conversions to and from text and the arithmetic are
// defined in libcaliper. A variant does not own string or blob data.
#pragma once

#include "cali_types.h"
#include "cali_variant.h"

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>

namespace cali
{

class Variant
{
    cali_variant_t m_v;

public:
    Variant() : m_v(cali_make_empty_variant()) {}

    Variant(const cali_variant_t& v) : m_v(v) {}

    explicit Variant(bool val) : m_v(cali_make_variant_from_bool(val)) {}
    explicit Variant(int val) : m_v(cali_make_variant_from_int(val)) {}
    explicit Variant(double val) : m_v(cali_make_variant_from_double(val)) {}
    explicit Variant(unsigned int val) : m_v(cali_make_variant_from_uint(val)) {}
    explicit Variant(unsigned long val) : m_v(cali_make_variant_from_uint(val)) {}
    explicit Variant(unsigned long long val) : m_v(cali_make_variant_from_uint(val)) {}
    explicit Variant(long val) : m_v(cali_make_variant_from_int64(val)) {}
    explicit Variant(long long val) : m_v(cali_make_variant_from_int64(val)) {}
    explicit Variant(const char* val) : m_v(cali_make_variant_from_string(val)) {}
    explicit Variant(cali_attr_type val) : m_v(cali_make_variant_from_type(val)) {}

    Variant(cali_attr_type type, const void* data, std::size_t size) : m_v(cali_make_variant(type, data, size)) {}

    bool empty() const { return cali_variant_is_empty(m_v); }

    bool has_unmanaged_data() const { return type() == CALI_TYPE_STRING || type() == CALI_TYPE_USR; }

    cali_attr_type type() const { return cali_variant_get_type(m_v); }
    const void*    data() const { return cali_variant_get_data(&m_v); }
    std::size_t    size() const { return cali_variant_get_size(m_v); }
    void*          get_ptr() const { return cali_variant_get_ptr(m_v); }

    cali_variant_t c_variant() const { return m_v; }

    cali_id_t      to_id(bool* okptr = nullptr) const;
    int            to_int(bool* okptr = nullptr) const { return cali_variant_to_int(m_v, okptr); }
    int64_t        to_int64(bool* okptr = nullptr) const { return cali_variant_to_int64(m_v, okptr); }
    uint64_t       to_uint(bool* okptr = nullptr) const { return cali_variant_to_uint(m_v, okptr); }
    bool           to_bool(bool* okptr = nullptr) const { return cali_variant_to_bool(m_v, okptr); }
    double         to_double(bool* okptr = nullptr) const { return cali_variant_to_double(m_v, okptr); }
    cali_attr_type to_attr_type(bool* okptr = nullptr) const { return cali_variant_to_type(m_v, okptr); }
    std::string    to_string() const;

    static Variant from_string(cali_attr_type type, const char* str);

    Variant& operator+=(const Variant& val);
    Variant& min(const Variant& val);
    Variant& max(const Variant& val);
    Variant  div(int count) const;

    std::size_t pack(unsigned char* buf) const { return cali_variant_pack(m_v, buf); }

    static Variant unpack(const unsigned char* buf, std::size_t* inc, bool* ok = nullptr)
    {
        return Variant(cali_variant_unpack(buf, inc, ok));
    }

    friend bool operator==(const Variant& lhs, const Variant& rhs);
    friend bool operator!=(const Variant& lhs, const Variant& rhs);
    friend bool operator<(const Variant& lhs, const Variant& rhs);
    friend bool operator>(const Variant& lhs, const Variant& rhs);
};

inline bool operator==(const Variant& lhs, const Variant& rhs)
{
    return cali_variant_eq(lhs.m_v, rhs.m_v);
}

inline bool operator!=(const Variant& lhs, const Variant& rhs)
{
    return !cali_variant_eq(lhs.m_v, rhs.m_v);
}

inline bool operator<(const Variant& lhs, const Variant& rhs)
{
    return cali_variant_compare(lhs.m_v, rhs.m_v) < 0;
}

inline bool operator>(const Variant& lhs, const Variant& rhs)
{
    return cali_variant_compare(lhs.m_v, rhs.m_v) > 0;
}

std::ostream& operator<<(std::ostream& os, const Variant& v);

} // namespace cali
