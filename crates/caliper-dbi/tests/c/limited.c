/* A program that lowers its own address-space limit to just above what it
 * uses, then loads liblimited.so and calls into it: cali-run cannot map a
 * trampoline region for that library, which is an instrumentation failure
 * (the function stays uncounted), and the program runs on. */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/resource.h>

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
    /* Found through the program's run path ($ORIGIN). */
    void *library = dlopen("liblimited.so", RTLD_NOW);
    long (*lib_step)(long) = library ? (long (*)(long))dlsym(library, "lib_step") : NULL;
    if (!lib_step) {
        return 2;
    }
    printf("lib_step %ld\n", lib_step(41));
    return 0;
}
