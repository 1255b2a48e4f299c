/* An annotated MPI program for the tests: each rank works (rank + 1) * 5
 * ms in "work", even ranks 4 ms more in "even", then the ranks pass a
 * token around a ring ITERATIONS times and meet at a barrier.
 *
 *   mpi-app [ITERATIONS] [EARLY_RANK]
 *
 * Then, outside "main", an annotated loop "steps" of 20 iterations.
 *
 * EARLY_RANK, if given, skips the ring and the barrier's region and goes
 * straight to MPI_Finalize (a rank that is done early). With
 * APP_NO_FINALIZE set the program ends without MPI_Finalize; with
 * APP_IRECV set it receives with MPI_Irecv and MPI_Wait. */

#include <caliper/cali.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void spin_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A receive: MPI_Recv, or with APP_IRECV set MPI_Irecv and MPI_Wait. */
static void receive(int *token, int from)
{
    if (getenv("APP_IRECV")) {
        MPI_Request request;
        MPI_Status status;
        MPI_Irecv(token, 1, MPI_INT, from, 0, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, &status);
    } else {
        MPI_Recv(token, 1, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    int early = argc > 2 ? atoi(argv[2]) : -1;
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CALI_MARK_BEGIN("main");
    CALI_MARK_BEGIN("work");
    spin_ms((rank + 1) * 5);
    CALI_MARK_END("work");
    if (rank % 2 == 0) {
        CALI_MARK_BEGIN("even");
        spin_ms(4);
        CALI_MARK_END("even");
    }
    if (rank != early) {
        CALI_MARK_BEGIN("ring");
        int ring = size - (early >= 0 ? 1 : 0);
        int me = early >= 0 && rank > early ? rank - 1 : rank;
        int next = (me + 1) % ring, prev = (me + ring - 1) % ring;
        int to = early >= 0 && next >= early ? next + 1 : next;
        int from = early >= 0 && prev >= early ? prev + 1 : prev;
        int token = rank;
        for (int i = 0; i < iterations && ring > 1; ++i) {
            if (me == 0) {
                MPI_Send(&token, 1, MPI_INT, to, 0, MPI_COMM_WORLD);
                receive(&token, from);
            } else {
                receive(&token, from);
                MPI_Send(&token, 1, MPI_INT, to, 0, MPI_COMM_WORLD);
            }
        }
        CALI_MARK_END("ring");
    }
    CALI_MARK_END("main");
    CALI_MARK_LOOP_BEGIN(steps, "steps");
    for (int i = 0; i < 20; ++i) {
        CALI_MARK_ITERATION_BEGIN(steps, i);
        CALI_MARK_ITERATION_END(steps);
    }
    CALI_MARK_LOOP_END(steps);
    if (getenv("APP_NO_FINALIZE"))
        return 0;
    MPI_Finalize();
    return 0;
}
