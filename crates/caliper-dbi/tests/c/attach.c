/* A program that runs for a while calling one function, for cali-run's
 * attach test: it says "ready", calls tick until argv[1] seconds have
 * passed, prints how often, and exits with code 4. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile long sink;

__attribute__((noipa)) void tick(long i) { sink += i; }

int main(int argc, char **argv) {
    time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 3);
    printf("ready\n");
    fflush(stdout);
    long n = 0;
    while (time(NULL) < end) {
        for (int i = 0; i < 1000; i++) tick(i);
        n += 1000;
    }
    printf("%ld\n", n);
    return 4;
}
