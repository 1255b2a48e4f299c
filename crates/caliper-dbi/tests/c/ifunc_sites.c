/* A function chosen at load by an IFUNC resolver, as the C library's
 * string functions are: the program calls it through a PLT entry whose
 * GOT slot the dynamic linker fills with the implementation
 * (R_X86_64_IRELATIVE), from 6 sites, site i (in program order) i + 1
 * times. */
#include <stdio.h>

volatile long sink;
volatile int one = 1;

__attribute__((noipa)) static void chosen(long i) { sink += i; }

static void (*resolve(void))(long) { return chosen; }

void picked(long i) __attribute__((ifunc("resolve")));

#define SITE(i) for (int k = 0; k < (i) * one + one; k++) picked(i);

int main(void) {
    SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5)
    printf("%ld\n", sink);
    return 0;
}
