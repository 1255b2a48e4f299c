/* Regions that make page faults, counted through PAPI for the papi tests.
 *
 * The program counts its own events as PAPI software-defined events
 * (libsde), which PAPI reads like any other counter and which need no
 * hardware PMU:
 *   sde:::papi_work::PAGES_TOUCHED  pages of fresh memory written
 *                                   (process-wide; an instant value, as
 *                                   libsde keeps one start value per
 *                                   counter, not one per event set)
 *   sde:::papi_work::MINOR_FAULTS   the reading thread's minor page faults
 *                                   (getrusage RUSAGE_THREAD)
 *   sde:::papi_work::PAIRS          region begin/end pairs of "loop"
 *
 *   work [MB]   main > idle (arithmetic), main > work (touches MB MiB,
 *               default 64), main > threads > (a thread) thread_work
 *               (touches MB/4 MiB)
 *   loop N      N begin/end pairs of region "r" (the cost per snapshot)
 */
#define _GNU_SOURCE
#include <caliper/cali.h>
#include <pthread.h>
#include <sde_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long long pages;
static long long pairs;

static long long minor_faults(void* unused) {
    (void)unused;
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_minflt;
}

static void touch(size_t mib) {
    size_t n = mib << 20;
    char* p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) {
        p[i] = 1;
        pages++;
    }
    free(p);
}

static volatile unsigned long sink;

static void idle(void) {
    unsigned long a = 0;
    for (unsigned long i = 0; i < 2000000; i++)
        a = a * 31 + i;
    sink = a;
}

static size_t thread_mib;

static void* thread_work(void* unused) {
    (void)unused;
    cali_begin_region("thread_work");
    touch(thread_mib);
    cali_end_region("thread_work");
    return NULL;
}

int main(int argc, char** argv) {
    papi_handle_t sde = papi_sde_init("papi_work");
    papi_sde_register_counter(sde, "PAGES_TOUCHED", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long, &pages);
    papi_sde_register_counter(sde, "PAIRS", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long, &pairs);
    papi_sde_register_counter_cb(sde, "MINOR_FAULTS", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long,
                                 minor_faults, NULL);
    if (argc > 2 && strcmp(argv[1], "loop") == 0) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            cali_begin_region("r");
            pairs++;
            cali_end_region("r");
        }
        return 0;
    }
    size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 64;
    thread_mib = mib / 4;
    cali_begin_region("main");
    cali_begin_region("idle");
    idle();
    cali_end_region("idle");
    cali_begin_region("work");
    touch(mib);
    cali_end_region("work");
    cali_begin_region("threads");
    pthread_t thread;
    pthread_create(&thread, NULL, thread_work, NULL);
    pthread_join(thread, NULL);
    cali_end_region("threads");
    cali_end_region("main");
    printf("done\n");
    return 0;
}
