/* A program that never calls Caliper and starts two threads, each
 * spending its time in a function of its own (worker_a, worker_b), while
 * main waits: profiled only through LD_PRELOAD. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static void spin(double seconds)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (unsigned long i = 0; i < 200000; ++i)
            sink = sink * 31 + i;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double) (now.tv_sec - start.tv_sec) + (double) (now.tv_nsec - start.tv_nsec) * 1e-9 < seconds);
}

__attribute__((noinline)) void* worker_a(void* arg) { (void) arg; spin(0.4); return NULL; }
__attribute__((noinline)) void* worker_b(void* arg) { (void) arg; spin(0.2); return NULL; }

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, worker_a, NULL);
    pthread_create(&b, NULL, worker_b, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("threads done\n");
    return 0;
}
