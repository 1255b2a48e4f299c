/* Caliper: data (memory region) tracking (drop-in for the reference's
 * caliper/cali_datatracker.h). The regions go to the channels' alloc and
 * allocstats services (CALI_SERVICES_ENABLE=alloc,...); without them the
 * calls do nothing. */
#ifndef CALI_CALI_DATATRACKER_H
#define CALI_CALI_DATATRACKER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void cali_datatracker_track(const void* ptr, const char* label, size_t size);
void cali_datatracker_track_dimensional(const void* ptr, const char* label, size_t elem_size, const size_t* dimensions,
                                        size_t num_dimensions);
void cali_datatracker_untrack(const void* ptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The label is the pointer variable's name. */
#define CALI_DATATRACKER_TRACK(ptr, size) cali_datatracker_track(ptr, #ptr, size)
#define CALI_DATATRACKER_TRACK_DIMENSIONAL(ptr, elem_size, dims, num_dims) \
    cali_datatracker_track_dimensional(ptr, #ptr, elem_size, dims, num_dims)
#define CALI_DATATRACKER_UNTRACK(ptr) cali_datatracker_untrack(ptr)

#endif
