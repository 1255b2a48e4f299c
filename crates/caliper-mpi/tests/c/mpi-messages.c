/* Messages of known counts and sizes, for the message tracing and
 * communication pattern tests; run on 4 ranks.
 *
 * In comm region "exchange", for each of MPI_Waitany, MPI_Waitsome,
 * MPI_Testany and MPI_Testsome: each rank posts two MPI_Irecv from the
 * previous rank (1 and 2 ints), sends the next rank the same two
 * messages, and completes the receives with that function. Per rank: 8
 * sends and 8 receives of 48 bytes in all, one destination and one
 * source rank.
 *
 * In comm region "spread": each rank sends one int to each other rank
 * and receives one from each (MPI_Recv from MPI_ANY_SOURCE, the source
 * known from the status): 3 sends and 3 receives, 3 destination and 3
 * source ranks.
 *
 * In comm region "colls": MPI_Gatherv (root 0, rank r sends r + 1 ints),
 * MPI_Scatterv (root 0, rank r receives r + 1 ints), MPI_Allgatherv (rank
 * r contributes r + 1 ints), MPI_Alltoallv (each rank sends j + 1 ints to
 * rank j: 10 ints) and MPI_Reduce_scatter (one int for each rank: 4 ints
 * per rank): 5 collectives. */

#include <caliper/cali.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { RANKS = 4 };

static void complete_waitany(MPI_Request *requests)
{
    for (int done = 0; done < 2; ++done) {
        int index;
        MPI_Status status;
        MPI_Waitany(2, requests, &index, &status);
    }
}

static void complete_waitsome(MPI_Request *requests)
{
    for (int done = 0; done < 2;) {
        int count, indices[2];
        MPI_Status statuses[2];
        MPI_Waitsome(2, requests, &count, indices, statuses);
        done += count;
    }
}

static void complete_testany(MPI_Request *requests)
{
    for (int done = 0; done < 2;) {
        int index, flag;
        MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index != MPI_UNDEFINED)
            ++done;
    }
}

static void complete_testsome(MPI_Request *requests)
{
    for (int done = 0; done < 2;) {
        int count, indices[2];
        MPI_Testsome(2, requests, &count, indices, MPI_STATUSES_IGNORE);
        done += count;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != RANKS) {
        fprintf(stderr, "mpi-messages: run on %d ranks\n", RANKS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int next = (rank + 1) % RANKS, prev = (rank + RANKS - 1) % RANKS;

    CALI_MARK_BEGIN("main");

    CALI_MARK_COMM_REGION_BEGIN("exchange");
    void (*complete[])(MPI_Request *) = { complete_waitany, complete_waitsome, complete_testany, complete_testsome };
    for (int k = 0; k < 4; ++k) {
        int in1, in2[2], out1 = rank, out2[2] = { rank, rank };
        MPI_Request requests[2];
        MPI_Irecv(&in1, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(in2, 2, MPI_INT, prev, 2, MPI_COMM_WORLD, &requests[1]);
        MPI_Send(&out1, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
        MPI_Send(out2, 2, MPI_INT, next, 2, MPI_COMM_WORLD);
        complete[k](requests);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CALI_MARK_COMM_REGION_END("exchange");

    CALI_MARK_COMM_REGION_BEGIN("spread");
    for (int j = 0; j < RANKS; ++j)
        if (j != rank)
            MPI_Send(&rank, 1, MPI_INT, j, 3, MPI_COMM_WORLD);
    for (int j = 1; j < RANKS; ++j) {
        int in;
        MPI_Status status;
        MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &status);
    }
    CALI_MARK_COMM_REGION_END("spread");

    CALI_MARK_COMM_REGION_BEGIN("colls");
    int send[16], recv[16], counts[RANKS], displs[RANKS], ones[RANKS];
    memset(send, 0, sizeof send);
    for (int j = 0; j < RANKS; ++j) {
        counts[j] = j + 1;
        displs[j] = j * (j + 1) / 2;
        ones[j] = 1;
    }
    MPI_Gatherv(send, rank + 1, MPI_INT, recv, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(send, counts, displs, MPI_INT, recv, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(send, rank + 1, MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
    int rcounts[RANKS], rdispls[RANKS];
    for (int j = 0; j < RANKS; ++j) {
        rcounts[j] = rank + 1;
        rdispls[j] = j * (rank + 1);
    }
    MPI_Alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce_scatter(send, recv, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CALI_MARK_COMM_REGION_END("colls");

    CALI_MARK_END("main");
    MPI_Finalize();
    return 0;
}
