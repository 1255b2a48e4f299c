/* trace_threads THREADS ITERATIONS: each thread enters ten nested regions
 * and leaves them ITERATIONS times (20 snapshots an iteration under the
 * event service), all threads at once. */
#include <caliper/cali.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long iterations;
static const char* names[10] = { "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9" };

static void* run(void* arg)
{
    (void) arg;
    for (long i = 0; i < iterations; ++i) {
        for (int d = 0; d < 10; ++d)
            cali_begin_region(names[d]);
        for (int d = 9; d >= 0; --d)
            cali_end_region(names[d]);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    if (argc != 3)
        return 2;
    int threads = atoi(argv[1]);
    iterations = atol(argv[2]);
    pthread_t th[64];
    if (threads < 1 || threads > 64)
        return 2;
    cali_init();
    for (int t = 0; t < threads; ++t)
        pthread_create(&th[t], NULL, run, NULL);
    for (int t = 0; t < threads; ++t)
        pthread_join(th[t], NULL);
    printf("%ld snapshots\n", (long) threads * iterations * 20);
    return 0;
}
