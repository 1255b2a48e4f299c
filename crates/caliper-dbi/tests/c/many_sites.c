/* One function called from 40 call sites, site i (in program order) i + 1
 * times: more sites than an arc trampoline lists (32), so the last 8 are
 * counted together as the other call sites. */
#include <stdio.h>

volatile long sink;
volatile int one = 1;

__attribute__((noipa)) void target(long i) { sink += i; }

#define SITE(i) for (int k = 0; k < (i) * one + one; k++) target(i);
#define TEN(t) SITE(t) SITE(t + 1) SITE(t + 2) SITE(t + 3) SITE(t + 4) SITE(t + 5) SITE(t + 6) SITE(t + 7) SITE(t + 8) SITE(t + 9)

int main(void) {
    TEN(0) TEN(10) TEN(20) TEN(30)
    printf("%ld\n", sink);
    return 0;
}
