// The installed header-only Annotation and Variant (include/caliper/
// Annotation.h, common/Variant.h: what programs built against this
// implementation compile), in namespace header_only. The exported members
// of the reference's cali::Annotation and cali::Variant forward to them,
// so that both kinds of program get the same semantics from one
// implementation: the attribute an annotation creates and the conversions
// of its values, the text of a variant.
//
// Include after the reference's caliper/cali.h and extensions.h: the
// installed headers' C includes are then already in (their guards are
// set), so only the C++ classes land in the namespace, and the standard
// headers they include are included here first, outside it.
#ifndef CALIPER_CXX_HEADER_ONLY_H
#define CALIPER_CXX_HEADER_ONLY_H

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace header_only
{
#include "../include/caliper/Annotation.h"
} // namespace header_only

#endif
