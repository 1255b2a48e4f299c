/* A program for cdb's tests: a known call chain (main -> middle -> work),
 * a fault on request, and a line read from standard input on request.
 * Built with -O2 and without frame pointers, so that backtraces need the
 * unwind tables. */
#include <stdio.h>
#include <string.h>

#define NOIPA __attribute__((noipa))

volatile long sink;
volatile int rounds = 3; /* a loop bound the compiler cannot unroll: one call site */

NOIPA long work(long x) {
    sink += x;
    return x * 2;
}

NOIPA long middle(long x) { return work(x) + 1; }

NOIPA void crash(void) { *(volatile int *)16 = 1; }

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "crash") == 0) {
        crash();
    }
    if (strcmp(mode, "echo") == 0) {
        char line[128];
        if (fgets(line, sizeof line, stdin)) {
            printf("echo: %s", line);
        }
    }
    long total = 0;
    for (int i = 0; i < rounds; i++) {
        total += middle(i);
    }
    printf("total %ld\n", total);
    return 7;
}
