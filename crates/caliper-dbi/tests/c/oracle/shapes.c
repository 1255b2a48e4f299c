#include "parts.h"
#include <stdlib.h>

static double rectangle(const struct shape *s) { return s->a * s->b; }
static double triangle(const struct shape *s) { return s->a * s->b / 2; }
static double circle(const struct shape *s) { return 3.14159 * s->a * s->a; }

struct shape make_shape(int kind, double a, double b) {
    static double (*const areas[])(const struct shape *) = {rectangle, triangle, circle};
    static const char *const names[] = {"rectangle", "triangle", "circle"};
    struct shape s = {names[kind % 3], areas[kind % 3], a, b};
    return s;
}

double total_area(const struct shape *shapes, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += shapes[i].area(&shapes[i]);
    return sum;
}

/* Two real recursive calls per level. */
long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

/* Called by the C library's qsort: its call site is in libc. */
static int by_value(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

long sort_and_sum(int n) {
    long *values = malloc(n * sizeof *values);
    for (int i = 0; i < n; i++) values[i] = (i * 7919L) % 1009;
    qsort(values, n, sizeof *values, by_value);
    long sum = 0;
    for (int i = 0; i < n; i++) sum += values[i] * i;
    free(values);
    return sum;
}
