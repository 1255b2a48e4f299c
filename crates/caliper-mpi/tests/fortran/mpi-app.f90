! A Fortran MPI program: its calls reach MPI through libcaliper-mpi's
! Fortran wrappers (mpi_bcast_, ...).
program mpi_app
  use mpi
  implicit none
  integer :: ierr, rank, nranks, token, length
  character(len=MPI_MAX_OBJECT_NAME) :: name
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  token = rank + 42
  call MPI_Bcast(token, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (token /= 42) stop 1
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  ! Strings: their hidden lengths pass through the wrappers.
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'everyone', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, length, ierr)
  if (name(1:length) /= 'everyone') stop 2
  call MPI_Finalize(ierr)
end program mpi_app
