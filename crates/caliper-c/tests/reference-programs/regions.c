/* A C program written for the reference Caliper, built against its
 * headers (tests/reference-headers): the C region and loop macros. */
#include <caliper/cali.h>

#include <stdio.h>

int main(void)
{
    CALI_MARK_FUNCTION_BEGIN;
    CALI_MARK_LOOP_BEGIN(loop, "c.loop");
    for (int i = 0; i < 3; ++i) {
        CALI_MARK_ITERATION_BEGIN(loop, i);
        CALI_WRAP_STATEMENT("c.body", printf("%d\n", i));
        CALI_MARK_ITERATION_END(loop);
    }
    CALI_MARK_LOOP_END(loop);
    CALI_MARK_BEGIN("c.after");
    CALI_MARK_END("c.after");
    CALI_MARK_FUNCTION_END;
    return 0;
}
