/* Calls a tiny function from a loop about three hundred million times: under
 * fcount much of its time is spent in the trampoline that counts tiny's
 * calls, where samples land too. */
#include <stdio.h>

__attribute__((noipa)) int tiny(int x) { return x * 3 + 1; }

__attribute__((noipa)) int loop(long n) {
    int sum = 0;
    for (long i = 0; i < n; i++) sum += tiny(i);
    return sum;
}

int main(void) {
    printf("%d\n", loop(300000000) != 0);
    return 0;
}
