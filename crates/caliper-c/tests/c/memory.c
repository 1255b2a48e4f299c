/* Memory and cost of many short-lived threads and of many region names.
 *
 *   memory threads N   N threads, started and joined 8 at a time, each
 *                      doing 100 updates (50 begins and ends of "step"
 *                      inside "worker")
 *   memory names N     N distinct region names, each begun and ended once
 *
 * Run under /usr/bin/time -f "%e s %M KB" with CALI_CONFIG or
 * CALI_SERVICES_ENABLE set: the peak RSS should not grow with the threads
 * that have exited, and should grow linearly (and the time too) with the
 * names. The tests run it with small N and check the counts. */
#include <caliper/cali.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8
#define STEPS 49

static void* worker(void* arg)
{
    (void) arg;
    CALI_MARK_BEGIN("worker");
    for (int i = 0; i < STEPS; ++i) {
        CALI_MARK_BEGIN("step");
        CALI_MARK_END("step");
    }
    CALI_MARK_END("worker");
    return NULL;
}

static void threads(long n)
{
    pthread_t batch[BATCH];
    for (long started = 0; started < n; started += BATCH) {
        int k = n - started < BATCH ? (int) (n - started) : BATCH;
        for (int t = 0; t < k; ++t)
            pthread_create(&batch[t], NULL, worker, NULL);
        for (int t = 0; t < k; ++t)
            pthread_join(batch[t], NULL);
    }
}

static void names(long n)
{
    char name[32];
    for (long i = 0; i < n; ++i) {
        snprintf(name, sizeof name, "name.%ld", i);
        cali_begin_region(name);
        cali_end_region(name);
    }
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: memory threads|names N\n");
        return 2;
    }
    long n = atol(argv[2]);
    if (strcmp(argv[1], "threads") == 0)
        threads(n);
    else if (strcmp(argv[1], "names") == 0)
        names(n);
    else {
        fprintf(stderr, "usage: memory threads|names N\n");
        return 2;
    }
    printf("memory: %s %ld done\n", argv[1], n);
    return 0;
}
