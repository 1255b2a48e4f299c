/* Caliper's MPI support (drop-in for the reference's caliper/cali-mpi.h).
 * Link libcaliper-mpi (pkg-config caliper-mpi, or the CMake target
 * caliper-mpi): it wraps the MPI functions and reports to libcaliper's
 * runtime, which it links; linking libcaliper as well changes nothing.
 * Caliper may start before or after MPI_Init. */
#ifndef CALI_CALI_MPI_H
#define CALI_CALI_MPI_H

#ifdef __cplusplus
extern "C" {
#endif

/* Obsolete: MPI support starts by itself. Kept so that programs calling
 * it build; it does nothing. */
void cali_mpi_init(void);

#ifdef __cplusplus
}
#endif

#endif
