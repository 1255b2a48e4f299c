/* Forks 200 children at once, each calling in_child twice: under cali-run
 * every child is followed (or let go) while the others run. Prints how
 * many children did not exit cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noipa)) void in_child(int i) {
    if (i < 0) puts("never");
}

int main(void) {
    for (int i = 0; i < 200; i++) {
        if (fork() == 0) {
            in_child(i);
            in_child(i);
            _exit(0);
        }
    }
    int status, bad = 0;
    while (wait(&status) > 0) bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    printf("bad %d\n", bad);
    return 0;
}
