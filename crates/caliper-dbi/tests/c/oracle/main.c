#include "parts.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    struct shape shapes[64];
    for (int i = 0; i < 64; i++) shapes[i] = make_shape(i, i + 1, n % 7 + 1);
    double area = 0;
    for (int round = 0; round < n; round++) area += total_area(shapes, 64);
    int longest;
    int words = count_words("the quick brown fox, jumps over\nthe lazy dog, again and again", &longest);
    printf("%.1f %ld %d %d %ld\n", area, fib(18), words, longest, sort_and_sum(n * 10));
    return 0;
}
