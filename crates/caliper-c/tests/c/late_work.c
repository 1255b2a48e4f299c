/* A program that never calls Caliper directly and keeps working after
 * measurement ends: it ends it early through cali_release (found at run
 * time, as libcaliper is preloaded), then spends CPU time. What the
 * measurement set up (timers, sampling events, signal handlers) must not
 * reach the program afterwards. Prints a line and exits with 3. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return (double) now.tv_sec + (double) now.tv_nsec * 1e-9;
}

/* CPU time, read every few milliseconds (see hotspot.c). */
__attribute__((noinline)) static void spin(double seconds)
{
    double start = cpu_seconds();
    do {
        for (unsigned long i = 0; i < 4000000; ++i)
            sink = sink * 31 + i;
    } while (cpu_seconds() - start < seconds);
}

int main(void)
{
    spin(0.1);
    void (*release)(void) = (void (*)(void)) dlsym(RTLD_DEFAULT, "cali_release");
    if (release)
        release();
    spin(0.2);
    printf("late work done\n");
    return 3;
}
