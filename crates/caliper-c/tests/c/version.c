/* The versions a program sees: caliper-config.h's CALIPER_VERSION and
 * cali_caliper_version(), printed on one line; and one region, for a
 * recorded run's globals. */
#include <caliper/cali.h>
#include <caliper/caliper-config.h>
#include <stdio.h>

int main(void)
{
    printf("%s %s\n", CALIPER_VERSION, cali_caliper_version());
    CALI_MARK_BEGIN("version.main");
    CALI_MARK_END("version.main");
    return 0;
}
