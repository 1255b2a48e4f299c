/* The reference's caliper/cali_datatracker.h: its C declarations are those of the
 * installed header. */
#include "../../../include/caliper/cali_datatracker.h"
