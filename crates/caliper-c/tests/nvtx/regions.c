/* Nested regions, a loop with iterations, and (with the argument
 * "unbalanced") an end of a region that is not the innermost, or (with
 * "threads") regions on two more threads, for the nvtx service. Prints
 * "done" when it gets to its end. */
#include <caliper/cali.h>
#include <caliper/cali_macros.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void solve(void)
{
    CALI_MARK_LOOP_BEGIN(loop, "iterate");
    for (int i = 0; i < 2; ++i) {
        CALI_MARK_ITERATION_BEGIN(loop, i);
        cali_begin_region("step");
        cali_end_region("step");
        CALI_MARK_ITERATION_END(loop);
    }
    CALI_MARK_LOOP_END(loop);
}

static void* worker(void* name)
{
    cali_begin_region("worker");
    cali_begin_region(name);
    cali_end_region(name);
    cali_end_region("worker");
    return 0;
}

int main(int argc, char** argv)
{
    cali_begin_region("main");
    cali_begin_region("init");
    cali_end_region("init");
    cali_begin_region("solve");
    solve();
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        pthread_t threads[2];
        char* names[2] = { "task1", "task2" };
        for (int i = 0; i < 2; ++i)
            pthread_create(&threads[i], 0, worker, names[i]);
        for (int i = 0; i < 2; ++i)
            pthread_join(threads[i], 0);
    }
    if (argc > 1 && strcmp(argv[1], "unbalanced") == 0)
        cali_end_region("main");
    cali_end_region("solve");
    cali_end_region("main");
    printf("done\n");
    return 0;
}
