/* Times N calls of an empty function (argv[1], default 100 million) and
 * prints the nanoseconds per call: run plainly and under cali-run, the
 * difference is the cost of the instrumentation of one call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A bare `ret`: the jump to its trampoline covers its alignment padding. */
__attribute__((noipa)) void empty(void) {}
/* Defined after empty so that padding, not another section, follows it. */
__attribute__((noipa)) int after(int x) { return x + 1; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000L;
    empty(); /* the first call instruments it */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) empty();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.2f ns per call\n", ns / n);
    return after(0) - 1;
}
