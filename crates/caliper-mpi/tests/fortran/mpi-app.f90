! A Fortran MPI program: its calls reach MPI through libcaliper-mpi's
! Fortran wrappers (mpi_bcast_, ...).
program mpi_app
  use mpi
  implicit none
  integer :: ierr, rank, nranks, token
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  token = rank + 42
  call MPI_Bcast(token, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (token /= 42) stop 1
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program mpi_app
