// Compiles extensions.h after the installed headers that declare the same
// functions: a declaration that drifted from the installed one is a
// conflicting declaration of a C function, and the build fails. No code.
#include "../include/caliper/cali-manager.h"
#include "../include/caliper/cali.h"

#include "extensions.h"
