/* A function called from many sites of which few run: `target` has 300
 * direct call sites in a branch taken only with an argument, and 2 sites
 * that always run. An arc trampoline knows all 302 from the code; a run
 * without an argument takes 2 arcs. */
#include <stdio.h>

volatile long sink;

__attribute__((noipa)) void target(long i) { sink += i; }

#define TEN(t) target(t); target(t + 1); target(t + 2); target(t + 3); target(t + 4); \
    target(t + 5); target(t + 6); target(t + 7); target(t + 8); target(t + 9);
#define HUNDRED(h) TEN(h) TEN(h + 10) TEN(h + 20) TEN(h + 30) TEN(h + 40) \
    TEN(h + 50) TEN(h + 60) TEN(h + 70) TEN(h + 80) TEN(h + 90)

__attribute__((noipa)) void idle(void) { HUNDRED(0) HUNDRED(100) HUNDRED(200) }

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1)
        idle();
    target(1000);
    target(2000);
    printf("%ld\n", sink);
    return 0;
}
