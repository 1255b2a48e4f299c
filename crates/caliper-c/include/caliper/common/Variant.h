// Caliper: cali::Variant, a typed value (drop-in for the reference's
// caliper/common/Variant.h), header-only over the C variant functions of
// cali_variant.h. A variant does not own string or blob data.
#ifndef CALI_COMMON_VARIANT_H
#define CALI_COMMON_VARIANT_H

#include "cali_types.h"
#include "cali_variant.h"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>

namespace cali
{

class Variant
{
    cali_variant_t m_v;

    enum Combine { SUM, MIN, MAX };

    template <typename T>
    static T combined(T a, T b, Combine how)
    {
        return how == SUM ? a + b : how == MIN ? (b < a ? b : a) : (b > a ? b : a);
    }

    void combine(const Variant& val, Combine how)
    {
        if (empty()) {
            m_v = val.m_v;
            return;
        }
        bool ok = false;
        switch (type()) {
        case CALI_TYPE_DOUBLE: {
            double d = val.to_double(&ok);
            if (ok)
                m_v = cali_make_variant_from_double(combined(to_double(), d, how));
            break;
        }
        case CALI_TYPE_INT: {
            int64_t i = val.to_int64(&ok);
            if (ok)
                m_v = cali_make_variant_from_int64(combined(to_int64(), i, how));
            break;
        }
        case CALI_TYPE_UINT: {
            uint64_t u = val.to_uint(&ok);
            if (ok)
                m_v = cali_make_variant_from_uint(combined(to_uint(), u, how));
            break;
        }
        default:
            break;
        }
    }

public:
    Variant() : m_v(cali_make_empty_variant()) {}
    Variant(const cali_variant_t& v) : m_v(v) {}
    Variant(bool val) : m_v(cali_make_variant_from_bool(val)) {}
    Variant(int val) : m_v(cali_make_variant_from_int(val)) {}
    Variant(long val) : m_v(cali_make_variant_from_int64(val)) {}
    Variant(long long val) : m_v(cali_make_variant_from_int64(val)) {}
    Variant(unsigned val) : m_v(cali_make_variant_from_uint(val)) {}
    Variant(unsigned long val) : m_v(cali_make_variant_from_uint(val)) {}
    Variant(unsigned long long val) : m_v(cali_make_variant_from_uint(val)) {}
    Variant(double val) : m_v(cali_make_variant_from_double(val)) {}
    Variant(cali_attr_type val) : m_v(cali_make_variant_from_type(val)) {}
    Variant(const char* val) : m_v(cali_make_variant(CALI_TYPE_STRING, val, val ? std::strlen(val) : 0)) {}
    Variant(cali_attr_type type, const void* data, std::size_t size) : m_v(cali_make_variant(type, data, size)) {}

    bool           empty() const { return cali_variant_is_empty(m_v); }
    /// Strings and blobs point to data the variant does not own.
    bool           has_unmanaged_data() const { return type() == CALI_TYPE_STRING || type() == CALI_TYPE_USR; }
    cali_attr_type type() const { return cali_variant_get_type(m_v); }
    std::size_t    size() const { return cali_variant_get_size(m_v); }
    const void*    data() const { return cali_variant_get_data(&m_v); }
    void*          get_ptr() const { return cali_variant_get_ptr(m_v); }
    cali_variant_t c_variant() const { return m_v; }

    /// The value as an id (attribute and node ids are unsigned), or
    /// CALI_INV_ID if it is not a number.
    cali_id_t to_id(bool* ok = 0) const
    {
        bool     is_num = false;
        uint64_t id     = cali_variant_to_uint(m_v, &is_num);
        if (ok)
            *ok = is_num;
        return is_num ? id : CALI_INV_ID;
    }

    int            to_int(bool* ok = 0) const { return cali_variant_to_int(m_v, ok); }
    int64_t        to_int64(bool* ok = 0) const { return cali_variant_to_int64(m_v, ok); }
    uint64_t       to_uint(bool* ok = 0) const { return cali_variant_to_uint(m_v, ok); }
    double         to_double(bool* ok = 0) const { return cali_variant_to_double(m_v, ok); }
    bool           to_bool(bool* ok = 0) const { return cali_variant_to_bool(m_v, ok); }
    cali_attr_type to_attr_type(bool* ok = 0) const { return cali_variant_to_type(m_v, ok); }

    /// The value as the text formatters print it: %f for doubles, hex
    /// without 0x for addresses and pointers, hex bytes each followed by
    /// ':' for blobs, a string without its trailing NUL.
    std::string to_string() const
    {
        char buf[32];
        switch (type()) {
        case CALI_TYPE_STRING: {
            const char* p = static_cast<const char*>(data());
            std::size_t n = size();
            if (n > 0 && p[n - 1] == '\0')
                --n;
            return std::string(p, n);
        }
        case CALI_TYPE_USR: {
            std::string          s;
            const unsigned char* p = static_cast<const unsigned char*>(data());
            for (std::size_t i = 0; i < size(); ++i) {
                std::snprintf(buf, sizeof(buf), "%02x:", p[i]);
                s += buf;
            }
            return s;
        }
        case CALI_TYPE_INT:
            std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(to_int64()));
            return buf;
        case CALI_TYPE_UINT:
            std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(to_uint()));
            return buf;
        case CALI_TYPE_ADDR:
            std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(to_uint()));
            return buf;
        case CALI_TYPE_PTR:
            std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(get_ptr())));
            return buf;
        case CALI_TYPE_DOUBLE:
            std::snprintf(buf, sizeof(buf), "%f", to_double());
            return buf;
        case CALI_TYPE_BOOL:
            return to_bool() ? "true" : "false";
        case CALI_TYPE_TYPE: {
            const char* name = cali_type2string(to_attr_type());
            return name ? name : "";
        }
        default:
            return std::string();
        }
    }

    /// Packs the value into buf (at least 20 bytes); returns the bytes
    /// written. String data is not copied: only meaningful in this process.
    std::size_t pack(unsigned char* buf) const { return cali_variant_pack(m_v, buf); }

    static Variant unpack(const unsigned char* buf, std::size_t* inc, bool* ok = 0)
    {
        return Variant(cali_variant_unpack(buf, inc, ok));
    }

    /// The value of type type that str spells (as the .cali reader reads
    /// it), or an empty variant if it does not parse. A string variant
    /// points to str.
    static Variant from_string(cali_attr_type type, const char* str)
    {
        if (!str)
            return Variant();
        char* end = 0;
        switch (type) {
        case CALI_TYPE_STRING:
            return Variant(CALI_TYPE_STRING, str, std::strlen(str));
        case CALI_TYPE_INT: {
            long long v = std::strtoll(str, &end, 10);
            return end != str && *end == '\0' ? Variant(v) : Variant();
        }
        case CALI_TYPE_UINT: {
            unsigned long long v = std::strtoull(str, &end, 10);
            return end != str && *end == '\0' && *str != '-' ? Variant(v) : Variant();
        }
        case CALI_TYPE_DOUBLE: {
            double v = std::strtod(str, &end);
            return end != str ? Variant(v) : Variant();
        }
        case CALI_TYPE_ADDR: {
            unsigned long long v = std::strtoull(str, &end, 16);
            if (end == str || *end != '\0')
                return Variant();
            uint64_t u = v;
            return Variant(CALI_TYPE_ADDR, &u, sizeof(u));
        }
        case CALI_TYPE_BOOL: {
            std::string s(str);
            for (std::size_t i = 0; i < s.size(); ++i)
                s[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
            if (s == "true" || s == "t")
                return Variant(true);
            if (s == "false" || s == "f")
                return Variant(false);
            unsigned long long v = std::strtoull(str, &end, 10);
            return end != str && *end == '\0' ? Variant(v != 0) : Variant();
        }
        case CALI_TYPE_TYPE: {
            cali_attr_type t = cali_string2type(str);
            return t != CALI_TYPE_INV ? Variant(t) : Variant();
        }
        default:
            return Variant();
        }
    }

    // --- Arithmetic, as aggregation uses it: an empty variant takes the
    // other value; a double, int or uint combines with the other value
    // converted to its own type; other types (and values that do not
    // convert) are left alone.

    Variant& operator+=(const Variant& val)
    {
        combine(val, SUM);
        return *this;
    }
    /// Keeps the smaller of this and val.
    Variant& min(const Variant& val)
    {
        combine(val, MIN);
        return *this;
    }
    /// Keeps the larger of this and val.
    Variant& max(const Variant& val)
    {
        combine(val, MAX);
        return *this;
    }
    /// This divided by count: integer division for int and uint, a double
    /// for double; empty for other types or a count of 0.
    Variant div(int count) const
    {
        if (count == 0)
            return Variant();
        switch (type()) {
        case CALI_TYPE_DOUBLE:
            return Variant(to_double() / count);
        case CALI_TYPE_INT:
            return Variant(static_cast<long long>(to_int64() / count));
        case CALI_TYPE_UINT:
            return Variant(static_cast<unsigned long long>(to_uint() / static_cast<uint64_t>(count)));
        default:
            return Variant();
        }
    }

    friend bool operator==(const Variant& a, const Variant& b) { return cali_variant_eq(a.m_v, b.m_v); }
    friend bool operator!=(const Variant& a, const Variant& b) { return !cali_variant_eq(a.m_v, b.m_v); }
    friend bool operator<(const Variant& a, const Variant& b) { return cali_variant_compare(a.m_v, b.m_v) < 0; }
    friend bool operator>(const Variant& a, const Variant& b) { return cali_variant_compare(a.m_v, b.m_v) > 0; }
};

inline std::ostream& operator<<(std::ostream& os, const Variant& v)
{
    return os << v.to_string();
}

} // namespace cali

#endif
