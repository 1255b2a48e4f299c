/* Caliper: the C wrapper of cali::ConfigManager (drop-in for the
 * reference's caliper/wrapConfigManager.h), which C programs and the
 * Fortran module's ConfigManager type call. cali-manager.h includes it and
 * adds this implementation's extensions. */
#ifndef WRAPCONFIGMANAGER_H
#define WRAPCONFIGMANAGER_H

#include "typesCaliper.h"

#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Fill the caller's capsule SHC_rv with a new manager; return SHC_rv. */
cali_ConfigManager* cali_ConfigManager_new(cali_ConfigManager* SHC_rv);
void                cali_ConfigManager_delete(cali_ConfigManager* self);

void cali_ConfigManager_set_default_parameter(cali_ConfigManager* self, const char* option, const char* val);
void cali_ConfigManager_set_default_parameter_for_config(cali_ConfigManager* self, const char* config,
                                                         const char* option, const char* val);
void cali_ConfigManager_add_config_spec(cali_ConfigManager* self, const char* spec);
void cali_ConfigManager_add_option_spec(cali_ConfigManager* self, const char* spec);
bool cali_ConfigManager_add(cali_ConfigManager* self, const char* config_string);

bool cali_ConfigManager_error(cali_ConfigManager* self);
/* The error message in a Shroud array; release it with
 * cali_SHROUD_memory_destructor(&array.cxx). */
void cali_ConfigManager_error_msg_bufferify(cali_ConfigManager* self, cali_SHROUD_array* SHT_rv_cdesc);

void cali_ConfigManager_start(cali_ConfigManager* self);
void cali_ConfigManager_stop(cali_ConfigManager* self);
void cali_ConfigManager_flush(cali_ConfigManager* self);

#ifdef __cplusplus
}
#endif

#endif
