// The out-of-line members of the reference's cali::Variant
// (common/Variant.h), over the header-only Variant.

#include <caliper/cali.h>
#include <caliper/common/Variant.h>

#include "extensions.h"
#include "header_only.h"

#include <ostream>

namespace cali
{

namespace
{

header_only::cali::Variant header_only_variant(const Variant& v)
{
    return header_only::cali::Variant(v.c_variant());
}

} // namespace

cali_id_t Variant::to_id(bool* okptr) const
{
    return header_only_variant(*this).to_id(okptr);
}

std::string Variant::to_string() const
{
    return header_only_variant(*this).to_string();
}

Variant Variant::from_string(cali_attr_type type, const char* str)
{
    return Variant(header_only::cali::Variant::from_string(type, str).c_variant());
}

Variant& Variant::operator+=(const Variant& val)
{
    m_v = (header_only_variant(*this) += header_only_variant(val)).c_variant();
    return *this;
}

Variant& Variant::min(const Variant& val)
{
    m_v = header_only_variant(*this).min(header_only_variant(val)).c_variant();
    return *this;
}

Variant& Variant::max(const Variant& val)
{
    m_v = header_only_variant(*this).max(header_only_variant(val)).c_variant();
    return *this;
}

Variant Variant::div(int count) const
{
    return Variant(header_only_variant(*this).div(count).c_variant());
}

std::ostream& operator<<(std::ostream& os, const Variant& v)
{
    return os << v.to_string();
}

} // namespace cali
