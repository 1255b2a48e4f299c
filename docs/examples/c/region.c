/* Nested regions and a loop in C, measured with whatever CALI_CONFIG says. */
#include <caliper/cali.h>
#include <stdio.h>

int main(void)
{
    CALI_MARK_BEGIN("main");
    cali_set_global_int_byname("iterations", 4);
    double sum = 0;
    CALI_MARK_LOOP_BEGIN(mainloop, "mainloop");
    for (int i = 0; i < 4; ++i) {
        CALI_MARK_ITERATION_BEGIN(mainloop, i);
        CALI_MARK_BEGIN("work");
        for (int j = 0; j < 1000000; ++j)
            sum += j * 0.5;
        CALI_MARK_END("work");
        CALI_MARK_ITERATION_END(mainloop);
    }
    CALI_MARK_LOOP_END(mainloop);
    CALI_MARK_END("main");
    printf("sum %g\n", sum);
    return 0;
}
