/* A program that lowers its own address-space limit to just above what it
 * uses, then calls into liblimited.so for the first time: cali-run cannot
 * map a trampoline region for that library, which is an instrumentation
 * failure (the function stays uncounted), and the program runs on. */
#include <stdio.h>
#include <sys/resource.h>

long lib_step(long x); /* in liblimited.so */

int main(void) {
    printf("start\n");
    fflush(stdout);
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (!statm || fscanf(statm, "%ld", &pages) != 1) {
        return 1;
    }
    fclose(statm);
    rlim_t room = (rlim_t)pages * 4096 + (1 << 20);
    struct rlimit limit = {room, room};
    if (setrlimit(RLIMIT_AS, &limit) != 0) {
        return 1;
    }
    printf("lib_step %ld\n", lib_step(41));
    return 0;
}
