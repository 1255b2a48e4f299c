/* Calls the first N of 40 functions (N its argument), once each, through
 * a table, and prints the sum of what they return: runs that call more of
 * them than earlier runs did. */
#include <stdio.h>
#include <stdlib.h>

#define F(n) __attribute__((noinline)) int f##n(int x) { return x * n + 1; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9)
F(10) F(11) F(12) F(13) F(14) F(15) F(16) F(17) F(18) F(19)
F(20) F(21) F(22) F(23) F(24) F(25) F(26) F(27) F(28) F(29)
F(30) F(31) F(32) F(33) F(34) F(35) F(36) F(37) F(38) F(39)

static int (*const table[40])(int) = {
    f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
    f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37, f38, f39,
};

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 40;
    int sum = 0;
    for (int i = 0; i < n && i < 40; i++)
        sum += table[i](i);
    printf("%d\n", sum);
    return 0;
}
