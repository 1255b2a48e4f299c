/* Caliper: the ConfigManager for C (and, in C++, the cali::ConfigManager
 * class). The C interface follows the reference's Shroud-generated
 * wrapper: a cali_ConfigManager is a caller-owned capsule. */
#ifndef CALI_CALI_MANAGER_H
#define CALI_CALI_MANAGER_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct s_cali_SHROUD_capsule_data {
    void* addr;
    int   idtor;
};
typedef struct s_cali_SHROUD_capsule_data cali_SHROUD_capsule_data;
typedef struct s_cali_SHROUD_capsule_data cali_ConfigManager;

struct s_cali_SHROUD_array {
    cali_SHROUD_capsule_data cxx;
    union {
        const void* base;
        const char* ccharp;
    } addr;
    int    type;
    size_t elem_len;
    size_t size;
    int    rank;
    long   shape[7];
};
typedef struct s_cali_SHROUD_array cali_SHROUD_array;

/* Fills the capsule with a new manager; returns it. */
cali_ConfigManager* cali_ConfigManager_new(cali_ConfigManager* SHC_rv);
void                cali_ConfigManager_delete(cali_ConfigManager* self);

bool cali_ConfigManager_add(cali_ConfigManager* self, const char* config_string);
void cali_ConfigManager_add_config_spec(cali_ConfigManager* self, const char* spec);
void cali_ConfigManager_add_option_spec(cali_ConfigManager* self, const char* spec);
void cali_ConfigManager_set_default_parameter(cali_ConfigManager* self, const char* option, const char* val);
void cali_ConfigManager_set_default_parameter_for_config(cali_ConfigManager* self, const char* config,
                                                         const char* option, const char* val);

bool cali_ConfigManager_error(cali_ConfigManager* self);
/* The error message; valid until the next call on self returning a string. */
const char* cali_ConfigManager_error_msg(cali_ConfigManager* self);
/* The error message in a Shroud array; release with
 * cali_SHROUD_memory_destructor(&array.cxx). */
void cali_ConfigManager_error_msg_bufferify(cali_ConfigManager* self, cali_SHROUD_array* SHT_rv_cdesc);
void cali_SHROUD_memory_destructor(cali_SHROUD_capsule_data* cap);

/* The error message for a config string, or "" if it is valid. */
const char* cali_ConfigManager_check(cali_ConfigManager* self, const char* config_string);

void cali_ConfigManager_start(cali_ConfigManager* self);
void cali_ConfigManager_stop(cali_ConfigManager* self);
void cali_ConfigManager_flush(cali_ConfigManager* self);

#ifdef __cplusplus
} /* extern "C" */

#include "ConfigManager.h"
#endif

#endif
