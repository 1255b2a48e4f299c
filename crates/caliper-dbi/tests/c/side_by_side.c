/* A program and the copy of itself it spawns (posix_spawn: vfork, then
 * exec) call tick() at the same moment, each CALLS times from one call
 * site, and a forked child of the copy does too. The spawned copy is an
 * image of its own, which may count unlocked; the forked child runs a copy
 * of its parent's trampolines beside it. Under cali-run tick is counted
 * exactly 3 * CALLS times whatever runs beside what. Prints "ok".
 * With the argument "once", calls tick 1,000 times and exits. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define CALLS 5000000L

__attribute__((noipa)) void tick(volatile long *n) { ++*n; }

/* Calls tick CALLS times from one site. */
__attribute__((noipa)) static long run(void) {
    volatile long n = 0;
    for (long i = 0; i < CALLS; i++) tick(&n);
    return n;
}

/* Waits for one byte on fd: the other side is ready. */
static void await(int fd) {
    char c;
    if (read(fd, &c, 1) != 1) exit(2);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "once") == 0) {
        volatile long n = 0;
        for (int i = 0; i < 1000; i++) tick(&n);
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "copy") == 0) {
        /* The spawned copy: fork a child, then the three start together. */
        int ready = atoi(argv[2]);
        int pair[2];
        if (pipe(pair) != 0) return 2;
        pid_t child = fork();
        if (child == 0) {
            await(pair[0]);
            _exit(run() == CALLS ? 0 : 1);
        }
        if (write(ready, "r", 1) != 1 || write(pair[1], "g", 1) != 1) return 2;
        long n = run();
        int status;
        waitpid(child, &status, 0);
        return n == CALLS && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
    int ready[2];
    if (pipe(ready) != 0) return 2;
    char fd[16];
    snprintf(fd, sizeof fd, "%d", ready[1]);
    char *args[] = {argv[0], "copy", fd, 0};
    pid_t copy;
    if (posix_spawn(&copy, "/proc/self/exe", 0, 0, args, environ) != 0) return 2;
    await(ready[0]);
    long n = run();
    int status;
    waitpid(copy, &status, 0);
    puts(n == CALLS && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "bad");
    return 0;
}
