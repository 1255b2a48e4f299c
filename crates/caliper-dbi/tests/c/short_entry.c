/* Entries that cannot take a 5-byte jump, each called N times (argv[1],
   default 100000): `inc4` is 4 bytes long and `add5` follows it at once;
   `shared_plus` jumps into the third byte of `shared`, as the C library's
   mempcpy enters memmove. Alignment padding follows `add5` and
   `shared_plus`. Prints the sum of the results. */
#include <stdio.h>
#include <stdlib.h>

int inc4(int), add5(int), shared_plus(int), shared(int);

__asm__(".text\n"
        ".p2align 4\n"
        ".globl inc4\n.type inc4,@function\n"
        "inc4:\n\tlea 1(%rdi),%eax\n\tret\n.size inc4,.-inc4\n"
        ".globl add5\n.type add5,@function\n"
        "add5:\n\tmov %edi,%eax\n\tadd $5,%eax\n\tret\n.size add5,.-add5\n"
        ".p2align 4\n"
        ".globl shared_plus\n.type shared_plus,@function\n"
        "shared_plus:\n\tlea 2(%rdi),%eax\n\tjmp 1f\n.size shared_plus,.-shared_plus\n"
        ".p2align 4\n"
        ".globl shared\n.type shared,@function\n"
        "shared:\n\tmov %edi,%eax\n1:\tadd $3,%eax\n\tret\n.size shared,.-shared\n"
        ".p2align 4\n");

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000, sum = 0;
    for (long i = 0; i < n; i++) {
        int x = (int)(i & 1023);
        sum += inc4(x) + add5(x) + shared_plus(x) + shared(x);
    }
    printf("%ld\n", sum);
    return 0;
}
