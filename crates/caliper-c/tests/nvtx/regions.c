/* Nested regions, a loop with iterations, and (with the argument
 * "unbalanced") an end of a region that is not the innermost, for the
 * nvtx service. Prints "done" when it gets to its end. */
#include <caliper/cali.h>
#include <caliper/cali_macros.h>
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

int main(int argc, char** argv)
{
    cali_begin_region("main");
    cali_begin_region("init");
    cali_end_region("init");
    cali_begin_region("solve");
    solve();
    if (argc > 1 && strcmp(argv[1], "unbalanced") == 0)
        cali_end_region("main");
    cali_end_region("solve");
    cali_end_region("main");
    printf("done\n");
    return 0;
}
