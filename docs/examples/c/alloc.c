/* Allocations under regions, for alloc.stats: 'phase' allocates 1 MB and
 * 0.5 MB, and 'inner', within it, 0.3 MB while they are still live. The
 * program itself never calls Caliper's allocation functions. */
#include <caliper/cali.h>

#include <stdlib.h>
#include <string.h>

static char *filled(size_t bytes)
{
    char *p = malloc(bytes);
    memset(p, 1, bytes);
    return p;
}

int main(void)
{
    CALI_MARK_BEGIN("phase");
    char *a = filled(1000000);
    char *b = filled(500000);
    CALI_MARK_BEGIN("inner");
    char *c = filled(300000);
    free(c);
    CALI_MARK_END("inner");
    free(b);
    free(a);
    CALI_MARK_END("phase");
    return 0;
}
