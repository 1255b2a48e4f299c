/* c-annotation-perftest: the cost of CALI_MARK_BEGIN/END through the C
 * ABI, to compare with the Rust cali-annotation-perftest (same options).
 *
 *   c-annotation-perftest [-w WIDTH] [-d DEPTH] [-i ITERATIONS] [-x CHANNELS] [-P SERVICES]
 *
 * Each iteration opens DEPTH nested regions, their names taken from a
 * WIDTH x DEPTH table of C strings, and closes them again; the time per
 * update (one begin or one end) is printed. -P lists the services of the
 * measuring channels, e.g. aggregate,event,timer (runtime-report's
 * pipeline); without it nothing is measured. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include <caliper/cali.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char* argv[])
{
    long        width = 20, depth = 10, iterations = 100000, channels = 1;
    const char* services = "";
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "-w") == 0)
            width = atol(argv[a + 1]);
        else if (strcmp(argv[a], "-d") == 0)
            depth = atol(argv[a + 1]);
        else if (strcmp(argv[a], "-i") == 0)
            iterations = atol(argv[a + 1]);
        else if (strcmp(argv[a], "-x") == 0)
            channels = atol(argv[a + 1]);
        else if (strcmp(argv[a], "-P") == 0)
            services = argv[a + 1];
        else {
            fprintf(stderr, "usage: %s [-w WIDTH] [-d DEPTH] [-i ITERATIONS] [-x CHANNELS] [-P SERVICES]\n", argv[0]);
            return 255;
        }
    }
    if (width < 1 || depth < 1) {
        fprintf(stderr, "c-annotation-perftest: width and depth must be positive\n");
        return 255;
    }
    long measuring = services[0] ? channels : 0;
    for (long c = 0; c < measuring; ++c) {
        const char* kv[][2] = { { "CALI_SERVICES_ENABLE", services },
                                { "CALI_CHANNEL_FLUSH_ON_EXIT", "false" },
                                { NULL, NULL } };
        cali_configset_t cfg = cali_create_configset(kv);
        char name[32];
        snprintf(name, sizeof name, "perftest.%ld", c);
        cali_create_channel(name, 0, cfg);
        cali_delete_configset(cfg);
    }

    char** names = malloc(sizeof(char*) * depth * width);
    for (long d = 0; d < depth; ++d)
        for (long w = 0; w < width; ++w) {
            names[d * width + w] = malloc(32);
            snprintf(names[d * width + w], 32, "r%ld.%ld", d, w);
        }

    double start = now();
    for (long it = 0; it < iterations; ++it) {
        long w = it % width;
        for (long d = 0; d < depth; ++d)
            CALI_MARK_BEGIN(names[d * width + w]);
        for (long d = depth - 1; d >= 0; --d)
            CALI_MARK_END(names[d * width + w]);
    }
    double seconds = now() - start;
    long   updates = iterations * depth * 2;
    printf("c-annotation-perftest: %ld channel(s) [%s], %ld x %ld table, %ld iterations: %ld updates in %.3f s, "
           "%.1f ns per update\n",
           measuring, services[0] ? services : "none", depth, width, iterations, updates, seconds,
           seconds * 1e9 / updates);
    return 0;
}
