/* Caliper: the ConfigManager for C (and, in C++, the cali::ConfigManager
 * class). The C interface follows the reference's Shroud-generated
 * wrapper: a cali_ConfigManager is a caller-owned capsule. */
#ifndef CALI_CALI_MANAGER_H
#define CALI_CALI_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

void cali_ConfigManager_start(cali_ConfigManager* self);
void cali_ConfigManager_stop(cali_ConfigManager* self);
void cali_ConfigManager_flush(cali_ConfigManager* self);

/* --- Extensions (not in the reference's C wrapper), under the C++
 * cali::ConfigManager. Strings handed to callbacks live for the call;
 * returned strings until the next call on self returning a string. --- */

typedef void (*cali_kv_fn)(void* user_arg, const char* key, const char* value);
typedef void (*cali_string_fn)(void* user_arg, const char* s);

/* The error message for a config string, or "" if it is valid (with
 * allow_extra_kv_pairs, unknown keys are valid). */
const char* cali_ConfigManager_check(cali_ConfigManager* self, const char* config_string, bool allow_extra_kv_pairs);

/* Like add, but keys that are neither configs nor options go to extra
 * (value "" if they have none) instead of being errors. */
bool cali_ConfigManager_add_with_extra(cali_ConfigManager* self, const char* config_string, cali_kv_fn extra,
                                       void* user_arg);
/* Reads config and option specs from a JSON file (errors: see error()). */
void cali_ConfigManager_load(cali_ConfigManager* self, const char* filename);

/* The configs (and aliases) that can run here, one call each. */
void        cali_ConfigManager_available_config_specs(cali_ConfigManager* self, cali_string_fn each, void* user_arg);
const char* cali_ConfigManager_get_description_for_spec(cali_ConfigManager* self, const char* name);
const char* cali_ConfigManager_get_documentation_for_spec(cali_ConfigManager* self, const char* name);

/* The channel controllers created by add, numbered from 0 in order. */
size_t      cali_ConfigManager_channel_count(cali_ConfigManager* self);
const char* cali_ConfigManager_channel_name(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_start(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_stop(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_flush(cali_ConfigManager* self, size_t index);
bool        cali_ConfigManager_channel_is_active(cali_ConfigManager* self, size_t index);
bool        cali_ConfigManager_channel_is_instantiated(cali_ConfigManager* self, size_t index);
/* The id of controller index's channel (CALI_INV_ID before its start),
 * and its channel settings (one call per key and value). */
uint64_t cali_ConfigManager_channel_id(cali_ConfigManager* self, size_t index);
void     cali_ConfigManager_channel_config(cali_ConfigManager* self, size_t index, cali_kv_fn each, void* user_arg);

#ifdef __cplusplus
} /* extern "C" */

#include "ConfigManager.h"
#endif

#endif
