/* The reference's caliper/cali.h: the C annotation and control API (the
 * same declarations as the installed header, without its extensions), and
 * in C++ the conveniences create_channel and write_report_for_query,
 * defined in libcaliper. */
#ifndef CALI_CALI_H
#define CALI_CALI_H

#include "cali_definitions.h"

#include "common/cali_types.h"
#include "common/cali_variant.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern cali_id_t cali_class_aggregatable_attr_id;
extern cali_id_t cali_class_symboladdress_attr_id;
extern cali_id_t cali_class_memoryaddress_attr_id;
extern cali_id_t cali_class_iteration_attr_id;

extern cali_id_t cali_region_attr_id;
extern cali_id_t cali_phase_attr_id;
extern cali_id_t cali_loop_attr_id;

const char* cali_caliper_version(void);

cali_id_t cali_create_attribute(const char* name, cali_attr_type type, int properties);
cali_id_t cali_create_attribute_with_metadata(const char* name, cali_attr_type type, int properties, int n,
                                              const cali_id_t meta_attr_list[],
                                              const cali_variant_t meta_val_list[]);
cali_id_t      cali_find_attribute(const char* name);
const char*    cali_attribute_name(cali_id_t attr_id);
cali_attr_type cali_attribute_type(cali_id_t attr_id);
int            cali_attribute_properties(cali_id_t attr_id);

void cali_push_snapshot(int scope, int n, const cali_id_t trigger_info_attr_list[],
                        const cali_variant_t trigger_info_val_list[]);
void cali_channel_push_snapshot(cali_id_t chn_id, int scope, int n, const cali_id_t trigger_info_attr_list[],
                                const cali_variant_t trigger_info_val_list[]);
size_t cali_channel_pull_snapshot(cali_id_t chn_id, int scope, size_t len, unsigned char* buf);

typedef int (*cali_entry_proc_fn)(void* user_arg, cali_id_t attr_id, cali_variant_t val);

void           cali_unpack_snapshot(const unsigned char* buf, size_t* bytes_read, cali_entry_proc_fn proc_fn,
                                    void* user_arg);
cali_variant_t cali_find_first_in_snapshot(const unsigned char* buf, cali_id_t attr_id, size_t* bytes_read);
void           cali_find_all_in_snapshot(const unsigned char* buf, cali_id_t attr_id, size_t* bytes_read,
                                         cali_entry_proc_fn proc_fn, void* userdata);

cali_variant_t cali_get(cali_id_t attr_id);
cali_variant_t cali_channel_get(cali_id_t chn_id, cali_id_t attr_id);
const char*    cali_get_current_region_or(const char* alt);

void cali_begin_region(const char* name);
void cali_end_region(const char* name);
void cali_begin_phase(const char* name);
void cali_end_phase(const char* name);
void cali_begin_comm_region(const char* name);
void cali_end_comm_region(const char* name);

void cali_begin(cali_id_t attr);
void cali_begin_double(cali_id_t attr, double val);
void cali_begin_int(cali_id_t attr, int val);
void cali_begin_string(cali_id_t attr, const char* val);
void cali_end(cali_id_t attr);
void cali_set(cali_id_t attr, const void* value, size_t size);
void cali_set_double(cali_id_t attr, double val);
void cali_set_int(cali_id_t attr, int val);
void cali_set_string(cali_id_t attr, const char* val);

void cali_begin_byname(const char* attr_name);
void cali_begin_double_byname(const char* attr_name, double val);
void cali_begin_int_byname(const char* attr_name, int val);
void cali_begin_string_byname(const char* attr_name, const char* val);
void cali_set_double_byname(const char* attr_name, double val);
void cali_set_int_byname(const char* attr_name, int val);
void cali_set_string_byname(const char* attr_name, const char* val);
void cali_end_byname(const char* attr_name);

void cali_set_global_double_byname(const char* attr_name, double val);
void cali_set_global_int_byname(const char* attr_name, int val);
void cali_set_global_string_byname(const char* attr_name, const char* val);
void cali_set_global_uint_byname(const char* attr_name, uint64_t val);

void cali_config_preset(const char* key, const char* value);
void cali_config_set(const char* key, const char* value);
void cali_config_allow_read_env(int allow);

struct _cali_configset_t;
typedef struct _cali_configset_t* cali_configset_t;

cali_configset_t cali_create_configset(const char* keyvallist[][2]);
void             cali_delete_configset(cali_configset_t cfg);
void             cali_configset_set(cali_configset_t cfg, const char* key, const char* value);

cali_id_t cali_create_channel(const char* name, int flags, cali_configset_t cfg);
void      cali_delete_channel(cali_id_t chn_id);
void      cali_activate_channel(cali_id_t chn_id);
void      cali_deactivate_channel(cali_id_t chn_id);
int       cali_channel_is_active(cali_id_t chn_id);
void      cali_flush(int flush_opts);
void      cali_channel_flush(cali_id_t chn_id, int flush_opts);

void      cali_init(void);
int       cali_is_initialized(void);
cali_id_t cali_make_loop_iteration_attribute(const char* name);

#ifdef __cplusplus
} /* extern "C" */

#include <iostream>
#include <map>
#include <string>

namespace cali
{

typedef std::map<std::string, std::string> config_map_t;

cali_id_t create_channel(const char* name, int flags, const config_map_t& cfg);

void write_report_for_query(cali_id_t chn, const char* query, int flush_opts, std::ostream& os);

} // namespace cali
#endif

#include "cali_macros.h"

#endif
