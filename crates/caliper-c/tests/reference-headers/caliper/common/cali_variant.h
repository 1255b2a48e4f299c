/* The reference's caliper/common/cali_variant.h: its C declarations are those of the
 * installed header. */
#include "../../../../include/caliper/common/cali_variant.h"
