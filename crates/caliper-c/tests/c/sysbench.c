/* The cost the system services add to the calls they wrap, in a program
 * that never calls Caliper (run it with and without a config and compare):
 *
 *   sysbench malloc N   N pairs of malloc(64) and free
 *   sysbench read N     N reads of 64 bytes from a file (the second argument
 *                       after N, or /proc/self/exe), rewound as needed
 *   sysbench hold N     N allocations of 64 bytes kept live, then freed
 *
 * Prints the nanoseconds per call (pair) and the peak RSS. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char* argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: sysbench malloc|read|hold N [FILE]\n");
        return 2;
    }
    long n = atol(argv[2]);
    double start = now();
    if (strcmp(argv[1], "malloc") == 0) {
        for (long i = 0; i < n; ++i) {
            void* p = malloc(64);
            __asm__ volatile("" : : "g"(p) : "memory");
            free(p);
        }
    } else if (strcmp(argv[1], "read") == 0) {
        int fd = open(argc > 3 ? argv[3] : "/proc/self/exe", O_RDONLY);
        char buffer[64];
        for (long i = 0; i < n; ++i) {
            if (read(fd, buffer, sizeof buffer) < (ssize_t) sizeof buffer)
                lseek(fd, 0, SEEK_SET);
        }
        close(fd);
    } else if (strcmp(argv[1], "hold") == 0) {
        void** blocks = malloc(n * sizeof *blocks);
        for (long i = 0; i < n; ++i)
            blocks[i] = malloc(64);
        for (long i = 0; i < n; ++i)
            free(blocks[i]);
        free(blocks);
    } else {
        fprintf(stderr, "sysbench: unknown mode %s\n", argv[1]);
        return 2;
    }
    double elapsed = now() - start;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("sysbench %s: %.1f ns per call, peak RSS %ld KB\n", argv[1], elapsed / n, usage.ru_maxrss);
    return 0;
}
