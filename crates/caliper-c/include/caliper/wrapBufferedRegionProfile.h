/* Caliper: the C wrapper of BufferedRegionProfile (drop-in for the
 * reference's caliper/wrapBufferedRegionProfile.h): a region profile read
 * from inside the program. Start it, run the regions, fetch the exclusive
 * or inclusive times into the buffer, then read them one region at a
 * time. Times are in seconds; regions of the same name are merged. */
#ifndef WRAPBUFFEREDREGIONPROFILE_H
#define WRAPBUFFEREDREGIONPROFILE_H

#include "typesCaliper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill the caller's capsule SHC_rv with a profile that measures nothing
 * until started; return SHC_rv. */
cali_BufferedRegionProfile* cali_BufferedRegionProfile_new(cali_BufferedRegionProfile* SHC_rv);
/* Delete the profile and its measurement channel. */
void cali_BufferedRegionProfile_delete(cali_BufferedRegionProfile* self);

void cali_BufferedRegionProfile_start(cali_BufferedRegionProfile* self);
void cali_BufferedRegionProfile_stop(cali_BufferedRegionProfile* self);
/* Forget the times measured so far. */
void cali_BufferedRegionProfile_clear(cali_BufferedRegionProfile* self);

/* Fetch the times per region of the attribute named region_type, or of
 * every nested attribute (region, phase, loop, ...) if it is "" or NULL. */
void cali_BufferedRegionProfile_fetch_exclusive_region_times(cali_BufferedRegionProfile* self,
                                                             const char*                 region_type);
void cali_BufferedRegionProfile_fetch_inclusive_region_times(cali_BufferedRegionProfile* self,
                                                             const char*                 region_type);

/* Of the last fetch: the seconds measured, the seconds in the regions,
 * and the seconds in one region (0 if it was not entered). */
double cali_BufferedRegionProfile_total_profiling_time(cali_BufferedRegionProfile* self);
double cali_BufferedRegionProfile_total_region_time(cali_BufferedRegionProfile* self);
double cali_BufferedRegionProfile_region_time(cali_BufferedRegionProfile* self, const char* region);

/* --- Extension (not in the reference's C wrapper), under the C++
 * classes: every region of the last fetch, in name order, one call each;
 * the name lives for the call. --- */
typedef void (*cali_region_time_fn)(void* user_arg, const char* region, double seconds);
void cali_BufferedRegionProfile_region_times(cali_BufferedRegionProfile* self, cali_region_time_fn each,
                                             void* user_arg);

#ifdef __cplusplus
}
#endif

#endif
