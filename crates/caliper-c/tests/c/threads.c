/* Regions on several pthreads at once: each thread enters "worker" and,
 * ITERATIONS times, "step" inside it. */
#include <caliper/cali.h>

#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERATIONS 100

static void* worker(void* arg)
{
    (void) arg;
    CALI_MARK_BEGIN("worker");
    for (int i = 0; i < ITERATIONS; ++i) {
        CALI_MARK_BEGIN("step");
        CALI_MARK_END("step");
    }
    CALI_MARK_END("worker");
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    CALI_MARK_BEGIN("main");
    for (int t = 0; t < THREADS; ++t)
        pthread_create(&threads[t], NULL, worker, NULL);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);
    CALI_MARK_END("main");
    printf("threads done\n");
    return 0;
}
