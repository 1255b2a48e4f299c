/* A stand-in for Adiak (see include/adiak.h for why): keeps the program's
 * name/values as Adiak 0.4 does, in its structures, and hands them to
 * tools through adiak_list_namevals, adiak_get_nameval and
 * adiak_get_subval. Setting a name again replaces its value. */
#define _GNU_SOURCE
#include "adiak_tool.h"

#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct record {
   char *name;
   int category;
   char *subcategory;
   adiak_datatype_t *type;
   adiak_value_t value;
   struct record *next;
} record;

static record *first, *last;

static adiak_datatype_t *new_type(adiak_type_t dtype, int elements, adiak_datatype_t *subtype)
{
   adiak_datatype_t *t = calloc(1, sizeof *t);
   t->dtype = dtype;
   t->num_elements = elements;
   if (subtype) {
      t->num_subtypes = 1;
      t->subtype = malloc(sizeof *t->subtype);
      t->subtype[0] = subtype;
   }
   return t;
}

static void store(const char *name, int category, const char *subcategory, adiak_datatype_t *t, adiak_value_t v)
{
   record *r = first;
   while (r && strcmp(r->name, name) != 0)
      r = r->next;
   if (!r) {
      r = calloc(1, sizeof *r);
      r->name = strdup(name);
      if (last)
         last->next = r;
      else
         first = r;
      last = r;
   }
   r->category = category;
   r->subcategory = subcategory ? strdup(subcategory) : NULL;
   r->type = t;
   r->value = v;
}

/* The scalar type of a conversion ("d", "ld", "s", ...), or unset. */
static adiak_type_t scalar_type(const char *conv, size_t len)
{
   static const struct { const char *conv; adiak_type_t type; } table[] = {
      { "d", adiak_int },       { "u", adiak_uint },       { "ld", adiak_long },    { "lu", adiak_ulong },
      { "lld", adiak_longlong }, { "llu", adiak_ulonglong }, { "f", adiak_double },  { "D", adiak_date },
      { "v", adiak_version },   { "s", adiak_string },     { "r", adiak_catstring }, { "p", adiak_path },
   };
   for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
      if (strlen(table[i].conv) == len && strncmp(table[i].conv, conv, len) == 0)
         return table[i].type;
   return adiak_type_unset;
}

/* Element i of an array of the scalar type t, as a value. */
static adiak_value_t element(adiak_type_t t, const void *array, int i)
{
   adiak_value_t v;
   memset(&v, 0, sizeof v);
   switch (t) {
   case adiak_int: v.v_int = ((const int *)array)[i]; break;
   case adiak_double: v.v_double = ((const double *)array)[i]; break;
   case adiak_string: v.v_ptr = strdup(((const char *const *)array)[i]); break;
   default: break;
   }
   return v;
}

int adiak_namevalue(const char *name, int category, const char *subcategory, const char *typestr, ...)
{
   if (!name || !typestr || typestr[0] == '\0')
      return -1;
   size_t n = strlen(typestr);
   char open = typestr[0], close = typestr[n - 1];
   int container = (open == '[' && close == ']') || (open == '{' && close == '}');
   const char *conv = typestr + (container ? 2 : 1);
   size_t len = n - (container ? 3 : 1);
   if ((container ? typestr[1] : typestr[0]) != '%')
      return -1;
   adiak_type_t t = scalar_type(conv, len);
   if (t == adiak_type_unset)
      return -1;
   va_list args;
   va_start(args, typestr);
   adiak_value_t v;
   memset(&v, 0, sizeof v);
   adiak_datatype_t *type;
   if (container) {
      const void *array = va_arg(args, const void *);
      int count = va_arg(args, int);
      if (t != adiak_int && t != adiak_double && t != adiak_string) {
         va_end(args);
         return -1;
      }
      v.v_subval = calloc(count > 0 ? count : 1, sizeof(adiak_value_t));
      for (int i = 0; i < count; ++i)
         v.v_subval[i] = element(t, array, i);
      type = new_type(open == '[' ? adiak_list : adiak_set, count, new_type(t, 0, NULL));
   } else {
      switch (t) {
      case adiak_int: v.v_int = va_arg(args, int); break;
      case adiak_uint: v.v_uint = va_arg(args, unsigned int); break;
      case adiak_long: case adiak_date: v.v_long = va_arg(args, long); break;
      case adiak_ulong: v.v_ulong = va_arg(args, unsigned long); break;
      case adiak_longlong: v.v_longlong = va_arg(args, long long); break;
      case adiak_ulonglong: v.v_ulonglong = va_arg(args, unsigned long long); break;
      case adiak_double: v.v_double = va_arg(args, double); break;
      default: v.v_ptr = strdup(va_arg(args, const char *)); break;
      }
      type = new_type(t, 0, NULL);
   }
   va_end(args);
   store(name, category, subcategory, type, v);
   return 0;
}

void adiak_init(void *mpi_communicator_p) { (void)mpi_communicator_p; }

/* Adiak keeps the values after adiak_fini: tools read them at exit. */
void adiak_fini(void) {}

int adiak_user(void)
{
   struct passwd *pw = getpwuid(getuid());
   return adiak_namevalue("user", adiak_general, "runinfo", "%s", pw ? pw->pw_name : "unknown");
}

int adiak_uid(void) { return adiak_namevalue("uid", adiak_general, "runinfo", "%s", "0"); }

int adiak_launchdate(void)
{
   return adiak_namevalue("launchdate", adiak_general, "runinfo", "%D", (long)time(NULL));
}

static char *executable_path(void)
{
   static char path[PATH_MAX];
   ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
   path[n > 0 ? n : 0] = '\0';
   return path;
}

int adiak_executablepath(void)
{
   return adiak_namevalue("executablepath", adiak_general, "binary", "%p", executable_path());
}

int adiak_executable(void)
{
   const char *path = executable_path(), *slash = strrchr(path, '/');
   return adiak_namevalue("executable", adiak_general, "binary", "%s", slash ? slash + 1 : path);
}

int adiak_cmdline(void)
{
   extern char *program_invocation_name;
   const char *argv[1] = { program_invocation_name };
   return adiak_namevalue("cmdline", adiak_general, "runinfo", "[%s]", argv, 1);
}

int adiak_hostname(void)
{
   char host[256] = "";
   gethostname(host, sizeof host - 1);
   return adiak_namevalue("hostname", adiak_general, "host", "%s", host);
}

int adiak_collect_all(void)
{
   return adiak_user() | adiak_uid() | adiak_launchdate() | adiak_executable() | adiak_executablepath()
          | adiak_cmdline() | adiak_hostname();
}

void adiak_list_namevals(int adiak_version, adiak_category_t category, adiak_nameval_cb_t nv, void *opaque_val)
{
   (void)adiak_version;
   for (record *r = first; r; r = r->next)
      if (category == adiak_category_all || r->category == category)
         nv(r->name, r->category, r->subcategory, &r->value, r->type, opaque_val);
}

int adiak_get_nameval(const char *name, adiak_datatype_t **t, adiak_value_t **value, adiak_category_t *cat,
                      const char **subcat)
{
   for (record *r = first; r; r = r->next)
      if (strcmp(r->name, name) == 0) {
         *t = r->type;
         *value = &r->value;
         *cat = r->category;
         *subcat = r->subcategory;
         return 0;
      }
   return -1;
}

int adiak_get_subval(adiak_datatype_t *t, adiak_value_t *val, int elem, adiak_datatype_t **subtype,
                     adiak_value_t *subval)
{
   if (!t || !val || t->num_subtypes < 1 || elem < 0 || elem >= t->num_elements)
      return -1;
   if (t->dtype != adiak_list && t->dtype != adiak_set && t->dtype != adiak_range)
      return -1;
   *subtype = t->subtype[0];
   *subval = val->v_subval[elem];
   return 0;
}
