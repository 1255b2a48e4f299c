/* Caliper: the C wrapper of cali::Annotation (drop-in for the reference's
 * caliper/wrapAnnotation.h), which the Fortran module's Annotation type
 * calls. The attribute is created on the first begin or set, with that
 * value's type; a later value of another type is dropped. */
#ifndef WRAPANNOTATION_H
#define WRAPANNOTATION_H

#include "typesCaliper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill the caller's capsule SHC_rv with an annotation of attribute name
 * (default properties, or the CALI_ATTR_* flags opt); return SHC_rv. */
cali_Annotation* cali_Annotation_new(const char* name, cali_Annotation* SHC_rv);
cali_Annotation* cali_Annotation_new_with_properties(const char* name, int opt, cali_Annotation* SHC_rv);
void             cali_Annotation_delete(cali_Annotation* self);

void cali_Annotation_begin_int(cali_Annotation* self, int data);
void cali_Annotation_begin_string(cali_Annotation* self, const char* data);
void cali_Annotation_set_int(cali_Annotation* self, int data);
void cali_Annotation_set_string(cali_Annotation* self, const char* data);
/* End the innermost value. */
void cali_Annotation_end(cali_Annotation* self);

#ifdef __cplusplus
}
#endif

#endif
