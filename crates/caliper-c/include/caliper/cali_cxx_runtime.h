/* Caliper: C functions under the header-only C++ runtime classes
 * (Caliper.h, ChannelController.h, common/Log.h, ...). Extensions, not in
 * the reference's C API; C programs may use them too. */
#ifndef CALI_CALI_CXX_RUNTIME_H
#define CALI_CALI_CXX_RUNTIME_H

#include "cali.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- Annotations --- */

/* Ends the innermost value of attr, which must be val (else a stack
 * error, as cali_end_region). */
void cali_safe_end_variant(cali_id_t attr, cali_variant_t val);
/* Sets val on the as-value attribute attr; returns its previous value
 * (empty if none). Other attributes are logged and left alone. */
cali_variant_t cali_exchange(cali_id_t attr, cali_variant_t val);
/* An asynchronous event with n information entries, for every active
 * channel that takes them (the async_event service). */
void cali_async_event(int n, const cali_id_t info_attr_list[], const cali_variant_t info_val_list[]);

/* --- Attributes and context-tree nodes --- */

/* The value of metadata attribute meta_attr on attr, or empty. */
cali_variant_t cali_attribute_metadata(cali_id_t attr, cali_id_t meta_attr);

typedef void (*cali_id_fn)(void* user_arg, cali_id_t id);
/* Every attribute's id, in creation order. */
void cali_all_attributes(cali_id_fn each, void* user_arg);

/* Node node's attribute, value and parent (CALI_INV_ID under the root);
 * 1, or 0 if there is no such node. NULL outputs are skipped. */
int cali_node_info(cali_id_t node, cali_id_t* attr, cali_variant_t* value, cali_id_t* parent);

/* The node of the calling thread's region path (the innermost node of a
 * nested attribute on its region stack, or else on the process's), or
 * CALI_INV_ID. */
cali_id_t cali_path_node(void);

/* --- Channels --- */

/* Channel ids handed out so far (0 .. n-1; deleted ones included). */
size_t cali_num_channels(void);
/* A channel's name, or NULL (no such channel, or deleted; not logged). */
const char* cali_channel_name(cali_id_t chn);
/* Sets the global entry key=value (a string) on the channel's own
 * blackboard: run metadata of this channel only. */
void cali_channel_set_metadata(cali_id_t chn, const char* key, const char* value);
/* A default in a config set that the environment (if the channel reads
 * it) and config files override. */
void cali_configset_preset(cali_configset_t cfg, const char* key, const char* value);

/* The value of setting key (e.g. "CALI_SERVICES_ENABLE") that a channel
 * made from cfg (may be NULL) would read, the environment included if
 * read_env; else the default a service documents; else empty. Written
 * NUL-terminated to buf if it fits in len bytes; returns its length. */
size_t cali_configset_get(cali_configset_t cfg, int read_env, const char* key, char* buf, size_t len);

/* The channel's globals, encoded as cali_channel_pull_snapshot encodes a
 * snapshot; returns the size needed (> len: nothing written). */
size_t cali_channel_pull_globals(cali_id_t chn, size_t len, unsigned char* buf);

/* Receives one record, encoded as a pulled snapshot, valid for the call. */
typedef void (*cali_record_fn)(void* user_arg, const unsigned char* rec, size_t len);
/* Hands every record the channel gathered to proc_fn (its buffers are
 * kept; nothing is written). proc_fn must not annotate: updates are
 * stopped during a flush. */
void cali_channel_flush_records(cali_id_t chn, cali_record_fn proc_fn, void* user_arg);

/* --- Log --- */

/* CALI_LOG_VERBOSITY. */
int cali_log_verbosity(void);
/* Writes message with the "== CALIPER: " prefix to the log's destination
 * if the verbosity is at least level (a trailing newline is dropped). */
void cali_log_write(int level, const char* message);
/* Sets the verbosity (as CALI_LOG_VERBOSITY does). */
void cali_log_set_verbosity(int level);
/* Appends text to what every message starts with after "== CALIPER: ". */
void cali_log_add_prefix(const char* text);

/* --- Life cycle --- */

/* Ends measurement as at program exit: channels that flush on exit write
 * their output now; later annotations do nothing. */
void cali_release(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
