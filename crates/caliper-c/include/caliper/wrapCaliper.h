/* Caliper: the library-level part of the C wrapper (drop-in for the
 * reference's caliper/wrapCaliper.h): the capsule types, and the C API of
 * cali.h, whose functions the Fortran module binds to directly. The
 * classes' wrappers are in wrapAnnotation.h, wrapScopeAnnotation.h,
 * wrapBufferedRegionProfile.h and wrapConfigManager.h. */
#ifndef WRAPCALIPER_H
#define WRAPCALIPER_H

#include "typesCaliper.h"
#include "cali.h"

#endif
