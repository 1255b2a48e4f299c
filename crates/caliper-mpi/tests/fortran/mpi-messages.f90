! Messages of known counts and sizes sent from Fortran (through the MPI
! library's Fortran bindings, which libcaliper-mpi's Fortran wrappers
! report), for the message tracing test; run on 4 ranks. Per rank:
!   MPI_Send      7 messages to the next rank: 1 int, then three times
!                 1 and 2 ints (40 bytes)
!   MPI_Recv      1 int from the previous rank
!   MPI_Waitany   completes two MPI_Irecv of 1 and 2 ints (12 bytes)
!   MPI_Waitsome  the same
!   MPI_Waitall   the same, its statuses ignored
!   MPI_Gatherv   rank r sends r + 1 ints to rank 0
!   MPI_Allreduce one int
program mpi_messages
  use mpi
  implicit none
  integer :: ierr, rank, nranks, next, prev, k, idx, outcount
  integer :: in1, in2(2), out1, out2(2), buf(4), recvbuf(10)
  integer :: requests(2), indices(2), counts(4), displs(4)
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 4) stop 1
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  out1 = rank
  out2 = rank
  buf = rank

  call MPI_Send(out1, 1, MPI_INTEGER, next, 1, MPI_COMM_WORLD, ierr)
  call MPI_Recv(in1, 1, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, status, ierr)

  call post(2)
  do k = 1, 2
    call MPI_Waitany(2, requests, idx, status, ierr)
  end do

  call post(4)
  k = 0
  do while (k < 2)
    call MPI_Waitsome(2, requests, outcount, indices, statuses, ierr)
    k = k + outcount
  end do

  call post(6)
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)

  counts = (/ 1, 2, 3, 4 /)
  displs = (/ 0, 1, 3, 6 /)
  call MPI_Gatherv(buf, rank + 1, MPI_INTEGER, recvbuf, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(out1, in1, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)

contains

  ! Receives of 1 and 2 ints from the previous rank (tags tag, tag + 1),
  ! and the same sent to the next.
  subroutine post(tag)
    integer, intent(in) :: tag
    call MPI_Irecv(in1, 1, MPI_INTEGER, prev, tag, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Irecv(in2, 2, MPI_INTEGER, prev, tag + 1, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Send(out1, 1, MPI_INTEGER, next, tag, MPI_COMM_WORLD, ierr)
    call MPI_Send(out2, 2, MPI_INTEGER, next, tag + 1, MPI_COMM_WORLD, ierr)
  end subroutine post
end program mpi_messages
