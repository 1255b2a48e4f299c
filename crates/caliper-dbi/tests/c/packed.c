/* Functions packed without alignment (-Os): one-byte `ret` functions
 * directly followed by the next function, too short for any jump, in the
 * program and in a library called through its PLT (bound at the first
 * call); each called N times directly, and the program's three times more
 * through a pointer. */
#include <stdio.h>
#include <stdlib.h>

#ifdef LIBRARY
__attribute__((noinline)) void lib_nothing(void) { __asm__ volatile(""); }
__attribute__((noinline)) int lib_one(int x) { return x + 1; }
#else
void lib_nothing(void);

__attribute__((noinline)) void nothing(void) { __asm__ volatile(""); }
__attribute__((noinline)) int one(int x) { return x + 1; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    void (*volatile pointer)(void) = nothing;
    long sum = 0;
    for (long i = 0; i < n; i++) {
        nothing();
        lib_nothing();
        sum += one((int)i);
    }
    for (int i = 0; i < 3; i++) pointer();
    printf("%ld\n", sum);
    return 0;
}
#endif
