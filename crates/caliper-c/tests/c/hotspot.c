/* A program that never calls Caliper and spends nearly all its time in
 * one function, leaf (main -> outer -> inner -> leaf), for the sampler:
 * profiled only through LD_PRELOAD. Prints a line and exits with 3, which
 * must come through unchanged. */
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

/* CPU time: the program does the same work however busy the machine is.
 * Read every few milliseconds only: a signal due while the program is in
 * the system call is delivered on its way out, in the vDSO. */
static double seconds_since(const struct timespec* start)
{
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) * 1e-9;
}

__attribute__((noinline)) void leaf(double seconds)
{
    struct timespec start;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    do {
        for (unsigned long i = 0; i < 4000000; ++i)
            sink = sink * 31 + i;
    } while (seconds_since(&start) < seconds);
}

__attribute__((noinline)) void inner(double seconds) { leaf(seconds); }
__attribute__((noinline)) void outer(double seconds) { inner(seconds); }

int main(void)
{
    outer(0.5);
    printf("hotspot done\n");
    return 3;
}
