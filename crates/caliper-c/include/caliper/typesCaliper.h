/* Caliper: the types of the C wrapper classes (drop-in for the
 * reference's Shroud-generated caliper/typesCaliper.h). Each wrapped C++
 * object lives in a capsule the caller owns (a C local, a Fortran derived
 * type): a _new function fills it, a _delete function empties it. The
 * library checks that a capsule holds the class a function expects, and
 * ignores (and reports) one that does not. */
#ifndef TYPESCALIPER_H
#define TYPESCALIPER_H

#ifdef __cplusplus
#include <cstddef>
#else
#include <stddef.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct s_cali_Annotation {
    void* addr;  /* the object */
    int   idtor; /* which class it is (0: empty) */
};
typedef struct s_cali_Annotation cali_Annotation;

struct s_cali_BufferedRegionProfile {
    void* addr;
    int   idtor;
};
typedef struct s_cali_BufferedRegionProfile cali_BufferedRegionProfile;

struct s_cali_ConfigManager {
    void* addr;
    int   idtor;
};
typedef struct s_cali_ConfigManager cali_ConfigManager;

struct s_cali_ScopeAnnotation {
    void* addr;
    int   idtor;
};
typedef struct s_cali_ScopeAnnotation cali_ScopeAnnotation;

struct s_cali_SHROUD_capsule_data {
    void* addr;
    int   idtor;
};
typedef struct s_cali_SHROUD_capsule_data cali_SHROUD_capsule_data;

/* A string result handed to C or Fortran (see
 * cali_ConfigManager_error_msg_bufferify). */
struct s_cali_SHROUD_array {
    cali_SHROUD_capsule_data cxx; /* owns the string */
    union {
        const void* base;
        const char* ccharp;
    } addr;
    int    type;
    size_t elem_len; /* the string's length */
    size_t size;
    int    rank;
    long   shape[7];
};
typedef struct s_cali_SHROUD_array cali_SHROUD_array;

/* Releases the string of a cali_SHROUD_array: pass &array.cxx. */
void cali_SHROUD_memory_destructor(cali_SHROUD_capsule_data* cap);

#ifdef __cplusplus
}
#endif

#endif
