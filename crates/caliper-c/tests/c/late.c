/* A library that allocates, loaded by dlopen after the program started
 * (see allocs.c). */
#include <stdlib.h>
#include <string.h>

long allocate_and_free(size_t n) {
    char* p = malloc(n);
    memset(p, 2, n);
    __asm__ volatile("" : : "g"(p) : "memory"); /* keeps the allocation */
    long value = p[n - 1];
    free(p);
    return value;
}
