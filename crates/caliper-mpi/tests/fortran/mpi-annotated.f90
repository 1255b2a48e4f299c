! A Fortran MPI program annotated through caliper_mod: a region around a
! collective, as an application that links the caliper and caliper-mpi
! CMake targets writes it.
program mpi_annotated
  use mpi
  use caliper_mod
  implicit none
  integer :: ierr, rank, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call cali_begin_region('solve')
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call cali_end_region('solve')
  call MPI_Finalize(ierr)
end program mpi_annotated
