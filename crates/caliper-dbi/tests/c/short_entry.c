/* Entries that cannot take a 5-byte jump, each called N times (argv[1],
   default 100000): `inc4` is 4 bytes long and `add5` follows it at once;
   `shared_plus` jumps into the third byte of `shared`, as the C library's
   mempcpy enters memmove. Alignment padding follows `add5` and
   `shared_plus`. `count_down` loops back to its fourth byte, and the only
   padding near it is inside `pick`, after an indirect jump, before the
   label it jumps to (`big` and `big2` keep the padding between functions
   out of reach). Prints the sum of the results. */
#include <stdio.h>
#include <stdlib.h>

int inc4(int), add5(int), shared_plus(int), shared(int), pick(int), count_down(int), big(int), big2(int);

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
        ".p2align 4\n"
        ".globl big\n.type big,@function\n"
        "big:\n\tmov %edi,%eax\n\t.rept 61\n\tadd $1,%eax\n\t.endr\n\tret\n.size big,.-big\n"
        ".globl pick\n.type pick,@function\n"
        "pick:\n\tlea 2f(%rip),%rax\n\tjmp *%rax\n\t.p2align 4\n2:\tlea 7(%rdi),%eax\n\tret\n.size pick,.-pick\n"
        ".globl count_down\n.type count_down,@function\n"
        "count_down:\n\tpush %rbx\n\tmov %edi,%ebx\n3:\tsub $1,%ebx\n\tjg 3b\n\tmov %ebx,%eax\n\tpop %rbx\n\tret\n"
        ".size count_down,.-count_down\n"
        ".globl big2\n.type big2,@function\n"
        "big2:\n\tmov %edi,%eax\n\t.rept 60\n\tadd $2,%eax\n\t.endr\n\tret\n.size big2,.-big2\n");

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000, sum = 0;
    for (long i = 0; i < n; i++) {
        int x = (int)(i & 1023);
        sum += inc4(x) + add5(x) + shared_plus(x) + shared(x) + pick(x) + count_down(x + 1);
    }
    printf("%ld\n", sum + big(0) + big2(0));
    return 0;
}
