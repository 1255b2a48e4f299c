/* A vfork child that calls a function for about a second before it execs,
 * its parent suspended all the while; then the parent calls it for another
 * second. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

__attribute__((noipa)) long tick(long x) { return x + 1; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    double start = now();
    pid_t p = vfork();
    if (p == 0) {
        long n = 0;
        while (now() - start < 1.0) n = tick(n);
        execl("/bin/echo", "echo", "child done", (char *)0);
        _exit(127);
    }
    int status;
    waitpid(p, &status, 0);
    long n = 0;
    while (now() - start < 2.0) n = tick(n);
    printf("parent %d %d\n", n > 0, WEXITSTATUS(status));
    return 0;
}
