/* The part of libcaliper-mpi that needs mpi.h: Caliper's own
 * communicator (a duplicate of MPI_COMM_WORLD made at MPI_Init, so that
 * its messages never meet the program's) and byte messages over it, all
 * through PMPI so that they are not measured. */

#include <mpi.h>

/* build.rs declares MPI's handles to Rust as pointers (Open MPI) or ints
 * (MPICH); a wrong guess must not compile. */
_Static_assert(sizeof(MPI_Comm) <= 8, "handles fit the 8 bytes the Rust side keeps");
#ifdef OPEN_MPI
_Static_assert(sizeof(MPI_Comm) == sizeof(void *), "Open MPI handles are pointers");
#else
_Static_assert(sizeof(MPI_Comm) == sizeof(int), "MPICH handles are ints");
#endif

/* The tag of Caliper's messages ("CA"). */
enum { CALI_MPI_TAG = 0x4341 };

static MPI_Comm cali_comm = MPI_COMM_NULL;

/* The communicator of a collective flush: the program's (given as a
 * pointer to its handle, so that callers need not know the handle's type)
 * or Caliper's own. */
static MPI_Comm current(const void *comm)
{
    if (comm)
        return *(const MPI_Comm *)comm;
    return cali_comm != MPI_COMM_NULL ? cali_comm : MPI_COMM_WORLD;
}

/* The size of a handle, for the Rust side to copy one. */
int cali_mpi_shim_handle_size(void)
{
    return (int)sizeof(MPI_Comm);
}

/* Whether *comm is MPI_COMM_NULL (a flush on it is local). */
int cali_mpi_shim_is_null(const void *comm)
{
    return *(const MPI_Comm *)comm == MPI_COMM_NULL;
}

/* 0: MPI not initialised, 1: running, 2: finalised. */
int cali_mpi_shim_state(void)
{
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    return finalized ? 2 : initialized ? 1 : 0;
}

/* After MPI_Init, on every rank (MPI_Comm_dup is collective). */
void cali_mpi_shim_open(void)
{
    if (cali_comm == MPI_COMM_NULL && cali_mpi_shim_state() == 1)
        PMPI_Comm_dup(MPI_COMM_WORLD, &cali_comm);
}

/* Before MPI_Finalize, on every rank. */
void cali_mpi_shim_close(void)
{
    if (cali_comm != MPI_COMM_NULL && cali_mpi_shim_state() == 1)
        PMPI_Comm_free(&cali_comm);
}

int cali_mpi_shim_rank(const void *comm)
{
    int rank = 0;
    PMPI_Comm_rank(current(comm), &rank);
    return rank;
}

int cali_mpi_shim_size(const void *comm)
{
    int size = 1;
    PMPI_Comm_size(current(comm), &size);
    return size;
}

int cali_mpi_shim_send(const void *comm, int dest, const void *buf, int len)
{
    return PMPI_Send(buf, len, MPI_BYTE, dest, CALI_MPI_TAG, current(comm));
}

int cali_mpi_shim_recv(const void *comm, int source, void *buf, int len)
{
    return PMPI_Recv(buf, len, MPI_BYTE, source, CALI_MPI_TAG, current(comm), MPI_STATUS_IGNORE);
}

/* The bytes of `count` elements of *datatype. */
long long cali_mpi_shim_bytes(int count, const void *datatype)
{
    int size = 0;
    PMPI_Type_size(*(const MPI_Datatype *)datatype, &size);
    return (long long)count * size;
}

/* The bytes of counts[r] elements of *datatype for each rank r of *comm
 * (a collective's per-rank counts). */
long long cali_mpi_shim_bytes_v(const int *counts, const void *datatype, const void *comm)
{
    int ranks = 0;
    long long elements = 0;
    PMPI_Comm_size(*(const MPI_Comm *)comm, &ranks);
    for (int r = 0; r < ranks; ++r)
        elements += counts[r];
    int size = 0;
    PMPI_Type_size(*(const MPI_Datatype *)datatype, &size);
    return elements * size;
}

/* MPI_UNDEFINED: the index a wait or test on inactive requests gives. */
int cali_mpi_shim_undefined(void)
{
    return MPI_UNDEFINED;
}

/* The source, tag and bytes of a completed receive: from its status, or
 * (MPI_STATUS_IGNORE) from the call's own source, tag and count. */
void cali_mpi_shim_received(const void *status, const void *datatype, int *source, int *tag, long long *bytes)
{
    const MPI_Status *s = (const MPI_Status *)status;
    if (s == MPI_STATUS_IGNORE)
        return;
    int count = 0;
    PMPI_Get_count(s, *(const MPI_Datatype *)datatype, &count);
    *source = s->MPI_SOURCE;
    *tag = s->MPI_TAG;
    if (count != MPI_UNDEFINED)
        *bytes = cali_mpi_shim_bytes(count, datatype);
}

/* The i-th status of an array of them, or MPI_STATUS_IGNORE for
 * MPI_STATUSES_IGNORE. */
const void *cali_mpi_shim_status_at(const void *statuses, int i)
{
    if (statuses == (const void *)MPI_STATUSES_IGNORE)
        return MPI_STATUS_IGNORE;
    return (const MPI_Status *)statuses + i;
}

/* Fortran's handles and statuses (MPI_Fint), converted for the Rust side,
 * which then reports a Fortran call's messages as a C call's. */

/* The integers of a Fortran status (Fortran's MPI_STATUS_SIZE): MPI 4
 * names it in C; Open MPI's is the C status's size in integers. */
#ifdef MPI_F_STATUS_SIZE
enum { CALI_F_STATUS_SIZE = MPI_F_STATUS_SIZE };
#else
enum { CALI_F_STATUS_SIZE = sizeof(MPI_Status) / sizeof(MPI_Fint) };
#endif

void cali_mpi_shim_f2c_datatype(const MPI_Fint *f, void *out)
{
    *(MPI_Datatype *)out = PMPI_Type_f2c(*f);
}

void cali_mpi_shim_f2c_comm(const MPI_Fint *f, void *out)
{
    *(MPI_Comm *)out = PMPI_Comm_f2c(*f);
}

/* n request handles. */
void cali_mpi_shim_f2c_requests(const MPI_Fint *f, int n, void *out)
{
    for (int i = 0; i < n; ++i)
        ((MPI_Request *)out)[i] = PMPI_Request_f2c(f[i]);
}

int cali_mpi_shim_status_size(void)
{
    return (int)sizeof(MPI_Status);
}

/* n Fortran statuses as C ones in `out` (n * sizeof(MPI_Status) bytes),
 * or MPI_STATUSES_IGNORE for MPI_F_STATUSES_IGNORE (and MPI_STATUS_IGNORE
 * for MPI_F_STATUS_IGNORE, when single is set). */
const void *cali_mpi_shim_f2c_statuses(const MPI_Fint *f, int n, int single, void *out)
{
    if (single && f == MPI_F_STATUS_IGNORE)
        return MPI_STATUS_IGNORE;
    if (!single && f == MPI_F_STATUSES_IGNORE)
        return MPI_STATUSES_IGNORE;
    for (int i = 0; i < n; ++i)
        PMPI_Status_f2c(f + (size_t)i * CALI_F_STATUS_SIZE, (MPI_Status *)out + i);
    return out;
}
