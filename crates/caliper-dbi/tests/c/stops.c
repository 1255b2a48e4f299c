/* Stops itself with SIGSTOP (or SIGTSTP, with the argument TSTP), and
 * says so before and after: for cali-run's job control tests. Exits with
 * code 9. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

__attribute__((noipa)) void before(void) {
    printf("stopping\n");
    fflush(stdout);
}
__attribute__((noipa)) void after(void) { printf("resumed\n"); }

int main(int argc, char **argv) {
    before();
    raise(argc > 1 && strcmp(argv[1], "TSTP") == 0 ? SIGTSTP : SIGSTOP);
    after();
    return 9;
}
