/* A C program whose own output goes through stdio (fully buffered when
 * standard output is a pipe or a file): with output=stdout, Caliper's
 * report at exit must come after everything the program printed, as the
 * reference's (written through the C++ streams, which share stdio's
 * buffer) does. */
#include <caliper/cali.h>

#include <stdio.h>

int main(void)
{
    printf("order: before the region\n");
    CALI_MARK_BEGIN("order.work");
    printf("order: inside the region\n");
    CALI_MARK_END("order.work");
    printf("order: after the region\n");
    fprintf(stderr, "order: to standard error\n");
    return 0;
}
