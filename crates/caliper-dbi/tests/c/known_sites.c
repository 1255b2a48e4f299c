/* A function of the program called from 12 call sites, site i (in program
 * order) i + 1 times, and a function of a library (this file built with
 * -DLIBRARY) called through the PLT from 8 sites, likewise; each has one
 * more site that never runs; the library calls it too, 5 times. Each site
 * that runs is an arc of its own, counted without a stop. */
#include <stdio.h>

#ifdef LIBRARY
volatile long lib_sink;

__attribute__((noipa)) void shared_target(long i) { lib_sink += i; }

/* The library's own calls go through its PLT entry; the last is a tail
 * call, which returns to lib_calls' caller. */
__attribute__((noipa)) void lib_calls(void) {
    for (int k = 0; k < 2; k++) shared_target(k);
    for (int k = 0; k < 3; k++) shared_target(k);
}
#else
void lib_calls(void);
void shared_target(long i);

volatile long sink;
volatile int one = 1;

__attribute__((noipa)) void target(long i) { sink += i; }

#define LOCAL(i) for (int k = 0; k < (i) * one + one; k++) target(i);
#define SHARED(i) for (int k = 0; k < (i) * one + one; k++) shared_target(i);

int main(void) {
    LOCAL(0) LOCAL(1) LOCAL(2) LOCAL(3) LOCAL(4) LOCAL(5) LOCAL(6) LOCAL(7) LOCAL(8) LOCAL(9) LOCAL(10) LOCAL(11)
    SHARED(0) SHARED(1) SHARED(2) SHARED(3) SHARED(4) SHARED(5) SHARED(6) SHARED(7)
    lib_calls();
    if (one == 2) {
        target(99);
        shared_target(99);
    }
    printf("%ld\n", sink);
    return 0;
}
#endif
