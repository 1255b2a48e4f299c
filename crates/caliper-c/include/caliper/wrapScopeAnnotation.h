/* Caliper: the C wrapper of cali::ScopeAnnotation (drop-in for the
 * reference's caliper/wrapScopeAnnotation.h), which the Fortran module's
 * ScopeAnnotation type calls: a region that stays open until its capsule
 * is ended. */
#ifndef WRAPSCOPEANNOTATION_H
#define WRAPSCOPEANNOTATION_H

#include "typesCaliper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Begin region name and fill the caller's capsule SHC_rv; return SHC_rv. */
cali_ScopeAnnotation* cali_ScopeAnnotation_begin(const char* name, cali_ScopeAnnotation* SHC_rv);
/* End the innermost region and empty the capsule. */
void cali_ScopeAnnotation_end(cali_ScopeAnnotation* self);

#ifdef __cplusplus
}
#endif

#endif
