/* Caliper: option enumerations of the C API (drop-in for the reference's
 * caliper/cali_definitions.h). */
#ifndef CALI_CALI_DEFINITIONS_H
#define CALI_CALI_DEFINITIONS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CALI_SCOPE_PROCESS = 1,
    CALI_SCOPE_THREAD  = 2,
    CALI_SCOPE_TASK    = 4,
    CALI_SCOPE_CHANNEL = 8
} cali_context_scope_t;

typedef enum { CALI_FLUSH_CLEAR_BUFFERS = 1 } cali_flush_opt;

typedef enum {
    CALI_CHANNEL_LEAVE_INACTIVE = 1,
    CALI_CHANNEL_ALLOW_READ_ENV = 2
} cali_channel_opt;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
