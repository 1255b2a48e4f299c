/* The part of Adiak's public C API (adiak.h of Adiak 0.4, LLNL) that the
 * tests' programs call, with Adiak's names, enum values and structure
 * layouts. Adiak is not packaged by Debian nor published on PyPI, npm or
 * crates.io, so the tests build this stand-in (adiak.c) and link their
 * programs with it as real programs link libadiak; libcaliper finds it at
 * run time exactly as it finds a real Adiak. */
#ifndef ADIAK_H_
#define ADIAK_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
   adiak_type_unset = 0,
   adiak_long,
   adiak_ulong,
   adiak_int,
   adiak_uint,
   adiak_double,
   adiak_date,
   adiak_timeval,
   adiak_version,
   adiak_string,
   adiak_catstring,
   adiak_path,
   adiak_range,
   adiak_set,
   adiak_list,
   adiak_tuple,
   adiak_longlong,
   adiak_ulonglong
} adiak_type_t;

typedef enum {
   adiak_numerical_unset = 0,
   adiak_categorical,
   adiak_ordinal,
   adiak_interval,
   adiak_rational
} adiak_numerical_t;

typedef int adiak_category_t;
#define adiak_category_unset 0
#define adiak_category_all 1
#define adiak_general 2
#define adiak_performance 3
#define adiak_control 4

typedef struct adiak_datatype_t {
   adiak_type_t dtype;
   adiak_numerical_t numerical;
   int num_elements;
   int num_ref_elements;
   int num_subtypes;
   int is_reference;
   struct adiak_datatype_t **subtype;
} adiak_datatype_t;

typedef union adiak_value_t {
   signed short v_short;
   unsigned short v_ushort;
   signed int v_int;
   unsigned int v_uint;
   signed long v_long;
   unsigned long v_ulong;
   signed long long v_longlong;
   unsigned long long v_ulonglong;
   float v_float;
   double v_double;
   void *v_ptr;
   union adiak_value_t *v_subval;
} adiak_value_t;

void adiak_init(void *mpi_communicator_p);
void adiak_fini(void);

/* name = value of the type `typestr` names: "%d", "%u", "%ld", "%lu",
 * "%lld", "%llu", "%f", "%D" (date, seconds), "%v" (version), "%s",
 * "%r" (catstring), "%p" (path), or a list "[%d]", "[%s]", "[%f]" or
 * set "{%d}", "{%s}", "{%f}" (an array and its count). 0 on success. */
int adiak_namevalue(const char *name, int category, const char *subcategory, const char *typestr, ...);

int adiak_user(void);
int adiak_uid(void);
int adiak_launchdate(void);
int adiak_executable(void);
int adiak_executablepath(void);
int adiak_cmdline(void);
int adiak_hostname(void);
int adiak_collect_all(void);

#ifdef __cplusplus
}
#endif

#endif
