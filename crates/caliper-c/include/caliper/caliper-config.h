/* Caliper: build configuration (drop-in for the reference's
 * caliper/caliper-config.h). The version macros give the version of the
 * reference's API this library implements, which programs test to decide
 * what they may call; cali_caliper_version() returns it too (the Makefile
 * reads CALIPER_VERSION for the package files and the soname). No
 * CALIPER_HAVE_* macro is defined: this build has none of the
 * optional libraries they announce (MPI, PAPI, libunwind, ...). */
#ifndef CALI_CALIPER_CONFIG_H
#define CALI_CALIPER_CONFIG_H

#define CALIPER_MAJOR_VERSION 2
#define CALIPER_MINOR_VERSION 15
#define CALIPER_PATCH_VERSION 0
#define CALIPER_VERSION "2.15.0"

#endif /* CALI_CALIPER_CONFIG_H */
