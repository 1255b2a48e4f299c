/* The offsets of the CUPTI record fields libcaliper's cuptitrace reads
 * (crates/caliper/src/services/cupti/activity.rs), in this toolkit's
 * headers. */
#include <cupti.h>
#include <stddef.h>
#include <stdio.h>
#define O(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))
int main(void)
{
    printf("CUPTI_API_VERSION %d\n", CUPTI_API_VERSION);
    O(CUpti_ActivityKernel9, start); O(CUpti_ActivityKernel9, deviceId); O(CUpti_ActivityKernel9, contextId);
    O(CUpti_ActivityKernel9, streamId); O(CUpti_ActivityKernel9, correlationId); O(CUpti_ActivityKernel9, name);
    O(CUpti_ActivityMemcpy6, copyKind); O(CUpti_ActivityMemcpy6, bytes); O(CUpti_ActivityMemcpy6, start);
    O(CUpti_ActivityMemcpy6, deviceId); O(CUpti_ActivityMemcpy6, correlationId);
    O(CUpti_ActivityExternalCorrelation, externalId); O(CUpti_ActivityExternalCorrelation, correlationId);
    O(CUpti_CallbackData, functionName); O(CUpti_CallbackData, symbolName); O(CUpti_CallbackData, correlationId);
    return 0;
}
