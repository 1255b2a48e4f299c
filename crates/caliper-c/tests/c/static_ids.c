/* Linked statically against libcaliper.a: its first Caliper call begins a
 * region, after which the built-in attribute ids that C reads from global
 * variables must be published, whichever object files of the archive the
 * linker took. */
#include <caliper/cali.h>
#include <stdio.h>

int main(void) {
    cali_begin_region("main");
    int ok = cali_region_attr_id != CALI_INV_ID && cali_phase_attr_id != CALI_INV_ID
        && cali_loop_attr_id != CALI_INV_ID && cali_class_iteration_attr_id != CALI_INV_ID
        && cali_class_aggregatable_attr_id != CALI_INV_ID && cali_class_symboladdress_attr_id != CALI_INV_ID
        && cali_class_memoryaddress_attr_id != CALI_INV_ID;
    cali_end_region("main");
    printf("%s\n", ok ? "ids published" : "ids NOT published");
    return ok ? 0 : 1;
}
