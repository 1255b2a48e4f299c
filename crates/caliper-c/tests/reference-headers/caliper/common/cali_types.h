/* The reference's caliper/common/cali_types.h: its C declarations are those of the
 * installed header. */
#include "../../../../include/caliper/common/cali_types.h"
