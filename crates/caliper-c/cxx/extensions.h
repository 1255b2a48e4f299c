// The C functions of libcaliper beyond the reference's C API that the
// exported C++ members call. Include after the reference's caliper/cali.h.
//
// The reference's cali.h and the installed one cannot meet in a
// translation unit (same guard, different C++ parts), so the extensions
// of the installed cali.h are declared again here; extensions_check.cpp
// compiles these declarations beside the installed ones, which keeps them
// the same.
#ifndef CALIPER_CXX_EXTENSIONS_H
#define CALIPER_CXX_EXTENSIONS_H

#include <stddef.h>

#include "../include/caliper/cali_cxx_runtime.h"
#include "../include/caliper/wrapConfigManager.h"

extern "C" {

void cali_begin_variant(cali_id_t attr, cali_variant_t val);
void cali_set_variant(cali_id_t attr, cali_variant_t val);

typedef void (*cali_write_fn)(void* user_arg, const char* text, size_t len);
void cali_write_report_for_query(cali_id_t chn_id, const char* calql, cali_write_fn write_fn, void* user_arg);

// The ConfigManager extensions of the installed cali-manager.h (which
// ends, in C++, with the header-only cali::ConfigManager).

const char* cali_ConfigManager_error_msg(cali_ConfigManager* self);

typedef void (*cali_kv_fn)(void* user_arg, const char* key, const char* value);
typedef void (*cali_string_fn)(void* user_arg, const char* s);

const char* cali_ConfigManager_check(cali_ConfigManager* self, const char* config_string, bool allow_extra_kv_pairs);
bool        cali_ConfigManager_add_with_extra(cali_ConfigManager* self, const char* config_string, cali_kv_fn extra,
                                              void* user_arg);
void        cali_ConfigManager_load(cali_ConfigManager* self, const char* filename);
void        cali_ConfigManager_available_config_specs(cali_ConfigManager* self, cali_string_fn each, void* user_arg);
const char* cali_ConfigManager_get_description_for_spec(cali_ConfigManager* self, const char* name);
const char* cali_ConfigManager_get_documentation_for_spec(cali_ConfigManager* self, const char* name);
size_t      cali_ConfigManager_channel_count(cali_ConfigManager* self);
const char* cali_ConfigManager_channel_name(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_start(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_stop(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_flush(cali_ConfigManager* self, size_t index);
bool        cali_ConfigManager_channel_is_active(cali_ConfigManager* self, size_t index);
bool        cali_ConfigManager_channel_is_instantiated(cali_ConfigManager* self, size_t index);
void        cali_ConfigManager_channel_config(cali_ConfigManager* self, size_t index, cali_kv_fn each, void* user_arg);
}

#endif
