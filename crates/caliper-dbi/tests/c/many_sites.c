/* Many call sites per function. `target` is called directly from 1000
 * sites, site i (in program order) i + 1 times; `pointed` through a
 * pointer from 40 sites, site i i + 1 times: each site is an arc of its
 * own, counted without a stop. */
#include <stdio.h>

volatile long sink;
volatile int one = 1;

__attribute__((noipa)) void target(long i) { sink += i; }
__attribute__((noipa)) void pointed(long i) { sink -= i; }
void (*volatile through)(long) = pointed;

#define SITE(f, i) for (int k = 0; k < (i) * one + one; k++) f(i);
#define TEN(f, t) SITE(f, t) SITE(f, t + 1) SITE(f, t + 2) SITE(f, t + 3) SITE(f, t + 4) \
    SITE(f, t + 5) SITE(f, t + 6) SITE(f, t + 7) SITE(f, t + 8) SITE(f, t + 9)
#define HUNDRED(f, h) TEN(f, h) TEN(f, h + 10) TEN(f, h + 20) TEN(f, h + 30) TEN(f, h + 40) \
    TEN(f, h + 50) TEN(f, h + 60) TEN(f, h + 70) TEN(f, h + 80) TEN(f, h + 90)

__attribute__((noipa)) void direct(void) {
    HUNDRED(target, 0) HUNDRED(target, 100) HUNDRED(target, 200) HUNDRED(target, 300) HUNDRED(target, 400)
    HUNDRED(target, 500) HUNDRED(target, 600) HUNDRED(target, 700) HUNDRED(target, 800) HUNDRED(target, 900)
}

__attribute__((noipa)) void indirect(void) { TEN(through, 0) TEN(through, 10) TEN(through, 20) TEN(through, 30) }

int main(void) {
    direct();
    indirect();
    printf("%ld\n", sink);
    return 0;
}
