/* Caliper: the C variant type (drop-in for the reference's
 * caliper/common/cali_variant.h). A variant does not own string or blob
 * data. */
#ifndef CALI_CALI_VARIANT_H
#define CALI_CALI_VARIANT_H

#include "cali_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* low byte: the type; for strings and blobs bits 8-31 hold a small
     * hash and the top 32 bits the size */
    uint64_t type_and_size;
    union {
        bool           v_bool;
        double         v_double;
        int64_t        v_int;
        uint64_t       v_uint;
        cali_attr_type v_type;
        void*          unmanaged_ptr;
        const void*    unmanaged_const_ptr;
    } value;
} cali_variant_t;

cali_variant_t cali_make_empty_variant(void);
bool           cali_variant_is_empty(cali_variant_t v);
cali_attr_type cali_variant_get_type(cali_variant_t v);
size_t         cali_variant_get_size(cali_variant_t v);
const void*    cali_variant_get_data(const cali_variant_t* v);
void*          cali_variant_get_ptr(cali_variant_t v);

cali_variant_t cali_make_variant(cali_attr_type type, const void* ptr, size_t size);
cali_variant_t cali_make_variant_from_bool(bool value);
cali_variant_t cali_make_variant_from_int(int value);
cali_variant_t cali_make_variant_from_int64(int64_t value);
cali_variant_t cali_make_variant_from_uint(uint64_t value);
cali_variant_t cali_make_variant_from_double(double value);
cali_variant_t cali_make_variant_from_string(const char* value);
cali_variant_t cali_make_variant_from_type(cali_attr_type value);
cali_variant_t cali_make_variant_from_ptr(void* value);

int            cali_variant_to_int(cali_variant_t v, bool* okptr);
int64_t        cali_variant_to_int64(cali_variant_t v, bool* okptr);
uint64_t       cali_variant_to_uint(cali_variant_t v, bool* okptr);
double         cali_variant_to_double(cali_variant_t v, bool* okptr);
cali_attr_type cali_variant_to_type(cali_variant_t v, bool* okptr);
bool           cali_variant_to_bool(cali_variant_t v, bool* okptr);

/* <0, 0, >0: types order by type code, values of a type by value. */
int  cali_variant_compare(cali_variant_t lhs, cali_variant_t rhs);
bool cali_variant_eq(cali_variant_t lhs, cali_variant_t rhs);

/* Packs v into buf (at least 20 bytes); returns the bytes written. */
size_t         cali_variant_pack(cali_variant_t v, unsigned char* buf);
/* Unpacks a packed variant; adds the bytes read to *inc. */
cali_variant_t cali_variant_unpack(const unsigned char* buf, size_t* inc, bool* okptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
