/* The part of Adiak's tool interface (adiak_tool.h of Adiak 0.4, LLNL)
 * that tools such as Caliper call to read a program's name/values; see
 * adiak.h for why the tests have their own copy. */
#ifndef ADIAK_TOOL_H_
#define ADIAK_TOOL_H_

#include "adiak.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*adiak_nameval_cb_t)(const char *name, adiak_category_t category, const char *subcategory,
                                   adiak_value_t *value, adiak_datatype_t *t, void *opaque_value);

/* Calls nv for every value of `category` (every value for
 * adiak_category_all), in the order they were first set. */
void adiak_list_namevals(int adiak_version, adiak_category_t category, adiak_nameval_cb_t nv, void *opaque_val);

/* The value called `name`: 0 if found. */
int adiak_get_nameval(const char *name, adiak_datatype_t **t, adiak_value_t **value, adiak_category_t *cat,
                      const char **subcat);

/* Element `elem` of the container value `val` of type `t`: 0 on success,
 * -1 for an element out of range or a type that is not a container. */
int adiak_get_subval(adiak_datatype_t *t, adiak_value_t *val, int elem, adiak_datatype_t **subtype,
                     adiak_value_t *subval);

#ifdef __cplusplus
}
#endif

#endif
