/* Caliper: attribute types, properties and ids (drop-in for the
 * reference's caliper/common/cali_types.h). */
#ifndef CALI_CALI_TYPES_H
#define CALI_CALI_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t cali_id_t;

#define CALI_INV_ID 0xFFFFFFFFFFFFFFFFULL

typedef enum {
    CALI_TYPE_INV    = 0,
    CALI_TYPE_USR    = 1,
    CALI_TYPE_INT    = 2,
    CALI_TYPE_UINT   = 3,
    CALI_TYPE_STRING = 4,
    CALI_TYPE_ADDR   = 5,
    CALI_TYPE_DOUBLE = 6,
    CALI_TYPE_BOOL   = 7,
    CALI_TYPE_TYPE   = 8,
    CALI_TYPE_PTR    = 9
} cali_attr_type;

#define CALI_MAXTYPE CALI_TYPE_PTR

/* The name of a type ("int", ...). */
const char* cali_type2string(cali_attr_type type);
/* The type named by a string, or CALI_TYPE_INV. */
cali_attr_type cali_string2type(const char* str);

typedef enum {
    CALI_ATTR_DEFAULT       = 0,
    CALI_ATTR_ASVALUE       = 1,
    CALI_ATTR_NOMERGE       = 2,
    CALI_ATTR_SCOPE_PROCESS = 12,
    CALI_ATTR_SCOPE_THREAD  = 20,
    CALI_ATTR_SCOPE_TASK    = 24,
    CALI_ATTR_SKIP_EVENTS   = 64,
    CALI_ATTR_HIDDEN        = 128,
    CALI_ATTR_NESTED        = 256,
    CALI_ATTR_GLOBAL        = 512,
    CALI_ATTR_UNALIGNED     = 1024,
    CALI_ATTR_AGGREGATABLE  = 2048,
    CALI_ATTR_LEVEL_0       = 0,
    CALI_ATTR_LEVEL_1       = 0x10000,
    CALI_ATTR_LEVEL_2       = 0x20000,
    CALI_ATTR_LEVEL_3       = 0x30000,
    CALI_ATTR_LEVEL_4       = 0x40000,
    CALI_ATTR_LEVEL_5       = 0x50000,
    CALI_ATTR_LEVEL_6       = 0x60000,
    CALI_ATTR_LEVEL_7       = 0x70000
} cali_attr_properties;

#define CALI_ATTR_SCOPE_MASK 60
#define CALI_ATTR_LEVEL_MASK 0x70000

/* Writes the property names of prop, joined by ':', into buf; returns the
 * length, or -1 if buf (len bytes) is too small. */
int cali_prop2string(int prop, char* buf, size_t len);
/* The properties named (as whole words) in str. */
int cali_string2prop(const char* str);

typedef enum { CALI_OP_SUM = 1, CALI_OP_MIN = 2, CALI_OP_MAX = 3 } cali_op;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
