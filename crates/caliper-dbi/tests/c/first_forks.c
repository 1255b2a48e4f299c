/* Runs itself 30 times as "middle" (a process that is not the tool's
 * child, freshly exec'd: an image whose increments are not yet atomic);
 * each middle process calls 1,024 functions (1,024 trampolines, whose
 * increments the tool makes atomic at its first fork), then forks once, the
 * child exec'ing /bin/true at once. The tool sees such a child's first stop
 * before its parent's fork event, and must not let it run before its
 * copy of the trampolines is atomic: let go first, it could exec while the
 * tool wrote into the image it no longer had. Prints how many middle
 * processes failed. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define F(n) __attribute__((noipa)) int f##n(int x) { return x * 3 + n; }
#define F4(n) F(n##0) F(n##1) F(n##2) F(n##3)
#define F16(n) F4(n##0) F4(n##1) F4(n##2) F4(n##3)
#define F64(n) F16(n##0) F16(n##1) F16(n##2) F16(n##3)
#define F256(n) F64(n##0) F64(n##1) F64(n##2) F64(n##3)
F256(10) F256(11) F256(12) F256(13)

#define T(n) f##n,
#define T4(n) T(n##0) T(n##1) T(n##2) T(n##3)
#define T16(n) T4(n##0) T4(n##1) T4(n##2) T4(n##3)
#define T64(n) T16(n##0) T16(n##1) T16(n##2) T16(n##3)
#define T256(n) T64(n##0) T64(n##1) T64(n##2) T64(n##3)
static int (*const functions[])(int) = {T256(10) T256(11) T256(12) T256(13)};

static int call_all_then_fork(void) {
    int sum = 0;
    for (unsigned i = 0; i < sizeof functions / sizeof functions[0]; i++)
        sum += functions[i]((int)i);
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/true", "true", (char *)0);
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    return sum == 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        return call_all_then_fork();
    int failed = 0;
    for (int i = 0; i < 30; i++) {
        pid_t middle = fork();
        if (middle == 0) {
            execl("/proc/self/exe", argv[0], "middle", (char *)0);
            _exit(127);
        }
        int status;
        waitpid(middle, &status, 0);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    printf("%d failed\n", failed);
    return 0;
}
