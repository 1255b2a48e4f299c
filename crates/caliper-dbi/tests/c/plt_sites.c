/* A shared library that calls its own exported function through its PLT
 * (as libsqlite3 and liblua do: an exported function may be interposed),
 * round after round for at least 200 ms, long enough for the tool to give
 * the call site a counter of its own; and the program that runs it, which
 * prints the rounds. Built twice: with -DLIBRARY as libpltsites.so, and
 * without as the program linked with it. (`other` is plt_got.c's.) */
#include <stdio.h>
#include <time.h>

#define ROUND 1000000L

long run(void);

#ifdef LIBRARY
__attribute__((noipa)) void leaf(volatile long *n) { ++*n; }
__attribute__((noipa)) void other(volatile long *n) { *n += 2; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noipa)) long run(void) {
    volatile long n = 0;
    long rounds = 0;
    double start = now();
    do {
        for (long i = 0; i < ROUND; i++) leaf(&n);
        rounds++;
    } while (now() - start < 0.2);
    return n == rounds * ROUND ? rounds : -1;
}
#else
int main(void) {
    printf("%ld\n", run());
    return 0;
}
#endif
