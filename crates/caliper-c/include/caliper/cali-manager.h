/* Caliper: the ConfigManager for C (and, in C++, the cali::ConfigManager
 * class). The C interface is the reference's Shroud-generated wrapper
 * (wrapConfigManager.h: a cali_ConfigManager is a caller-owned capsule),
 * plus the extensions below. */
#ifndef CALI_CALI_MANAGER_H
#define CALI_CALI_MANAGER_H

#include "wrapConfigManager.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- Extensions (not in the reference's C wrapper), under the C++
 * cali::ConfigManager. Strings handed to callbacks live for the call;
 * returned strings until the next call on self returning a string. --- */

/* The error message (the reference's C interface has only the _bufferify
 * form). */
const char* cali_ConfigManager_error_msg(cali_ConfigManager* self);

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
