/* Forks N children (default 300) at once, all waiting on a pipe until the
 * last is made, each calling work() before and after; prints how many did
 * not exit cleanly and its own soft limit on open descriptors. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
__attribute__((noipa)) int work(int i) { return i * 7; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 300, pipefd[2], bad = 0;
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    if (pipe(pipefd)) return 2;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c < 0) { perror("fork"); return 3; }
        if (c == 0) { char b; close(pipefd[1]); work(i); if (read(pipefd[0], &b, 1) < 0) _exit(1); _exit(work(i) == i * 7 ? 0 : 1); }
    }
    close(pipefd[1]);
    close(pipefd[0]);
    for (int i = 0; i < n; i++) { int st; if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) bad++; }
    printf("bad %d, descriptors %llu\n", bad, (unsigned long long)limit.rlim_cur);
    return 0;
}
