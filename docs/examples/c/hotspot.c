/* A program that never calls Caliper, with one hot call stack
 * (main > outer > inner > leaf), for sampling through LD_PRELOAD. */
#include <stdio.h>

__attribute__((noinline)) static double leaf(long n)
{
    double sum = 0.0;
    for (long i = 1; i <= n; ++i)
        sum += 1.0 / (double) i;
    return sum;
}

__attribute__((noinline)) static double inner(long n) { return leaf(n) + 1.0; }

__attribute__((noinline)) static double outer(long n) { return inner(n) + 1.0; }

int main(void)
{
    printf("%f\n", outer(400000000L));
    return 0;
}
