/* A program to attach to and detach from while it works: for each line
 * "N" on its standard input it computes N rounds (each a call of mix and
 * one of step, through a pointer) and prints the checksum; it says "ready"
 * first and exits with code 4 at the end of its input. Its output depends
 * only on its input, so a run with cali-run attached for a while must
 * print what a run without does. */
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))

NOIPA unsigned long mix(unsigned long h, unsigned long v) {
    h ^= v + 0x9e3779b97f4a7c15ul + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdul;
}

NOIPA unsigned long step(unsigned long h) { return (h >> 17) ^ (h << 11) ^ 0x5bd1e995ul; }

unsigned long (*volatile stepper)(unsigned long) = step;

int main(void) {
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        long rounds = atol(line);
        unsigned long h = (unsigned long)rounds;
        for (long i = 0; i < rounds; i++) h = stepper(mix(h, (unsigned long)i));
        printf("%lu\n", h);
        fflush(stdout);
    }
    return 4;
}
