/* Times N calls of an empty function (argv[1], default 100 million) in
 * each of T threads at once (argv[2], default 1) and prints the
 * nanoseconds per call: run plainly and under cali-run, the difference is
 * the cost of the instrumentation of one call (with threads, of a call
 * whose counter the threads share). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A bare `ret`: the jump to its trampoline covers its alignment padding. */
__attribute__((noipa)) void empty(void) {}
/* Defined after empty so that padding, not another section, follows it. */
__attribute__((noipa)) int after(int x) { return x + 1; }

static long n = 100000000L;

static void *calls(void *arg) {
    for (long i = 0; i < n; i++) empty();
    return arg;
}

int main(int argc, char **argv) {
    if (argc > 1) n = atol(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64) return 2;
    empty(); /* the first call instruments it */
    pthread_t t[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i < threads; i++) pthread_create(&t[i], NULL, calls, NULL);
    calls(NULL);
    for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.2f ns per call\n", ns / n);
    return after(0) - 1;
}
