/* Spends about half a second of CPU time in hot, reached through
 * main > descend > descend > descend > hot. Built with -DTEXT_IN_RBP
 * (and -fomit-frame-pointer), the hot loop runs with RBP pointing into a
 * buffer of text, as code without frame pointers may use it for data: a
 * frame-pointer walk from there reads the text as return addresses. */
#include <stdio.h>
#include <time.h>

volatile double sink;
static char text[256] = "the service journal keeps every record of the archive";

__attribute__((noipa)) void hot(void) {
    clock_t end = clock() + CLOCKS_PER_SEC / 2;
    while (clock() < end) {
#ifdef TEXT_IN_RBP
        asm volatile("mov %%rbp, %%rdx\n\t"
                     "mov %0, %%rbp\n\t"
                     "mov $200000, %%ecx\n"
                     "1:\n\t"
                     "add (%%rbp), %%rax\n\t"
                     "dec %%ecx\n\t"
                     "jnz 1b\n\t"
                     "mov %%rdx, %%rbp"
                     :
                     : "r"(text + 8)
                     : "rax", "rcx", "rdx", "memory", "cc");
#else
        for (int i = 0; i < 200000; i++) sink += i * 0.5;
#endif
    }
}

__attribute__((noipa)) int descend(int depth) {
    if (depth > 0) descend(depth - 1);
    else hot();
    return depth;
}

int main(void) {
    descend(2);
    printf("spun\n");
    return 0;
}
