/* Names and values with the characters the .cali and JSON writers must
 * escape: '=', ',', '\', quotes, spaces and a newline. */
#include <caliper/cali.h>

int main(void)
{
    const char* name  = "weird name=a,b\\c \"q\" 's'\nnext";
    const char* value = "value=1,2\\3 \"x\"\nend";
    cali_set_global_string_byname(name, value);
    cali_begin_region(value);
    cali_end_region(value);
    return 0;
}
