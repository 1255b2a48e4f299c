/* Calls leaf() from two direct call sites and through a pointer, and
 * other() from a third site, round after round for at least 400 ms: long
 * enough for the tool to give the hot direct sites counters of their own.
 * Then it forks, and parent and child each call leaf ROUND more times
 * from the first site at the same moment (the sites' counters shared by
 * the two copies of the code). Prints the rounds of the first phase. */
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUND 1000000L
#define NOIPA __attribute__((noipa))

NOIPA void leaf(volatile long *n) { ++*n; }
NOIPA void other(volatile long *n) { --*n; }
void (*volatile pointed)(volatile long *) = leaf;

NOIPA static void first(long calls, volatile long *n) {
    for (long i = 0; i < calls; i++) leaf(n);
}

NOIPA static void second(long calls, volatile long *n) {
    for (long i = 0; i < calls; i++) {
        leaf(n);
        other(n);
    }
}

NOIPA static void through(long calls, volatile long *n) {
    for (long i = 0; i < calls; i++) pointed(n);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    volatile long n = 0;
    long rounds = 0;
    double start = now();
    while (now() - start < 0.4) {
        first(ROUND, &n);
        second(ROUND, &n);
        through(ROUND, &n);
        rounds++;
    }
    pid_t child = fork();
    first(ROUND, &n);
    if (child == 0) _exit(0);
    int status;
    waitpid(child, &status, 0);
    printf("%ld\n", rounds);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
