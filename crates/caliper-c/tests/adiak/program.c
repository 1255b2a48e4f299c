/* A program that records its run metadata with Adiak, as LLNL codes do,
 * and marks regions with Caliper. With the argument "clash" it also
 * sets a Caliper context attribute of the name of one of its Adiak values.
 * With the argument "export" it flushes
 * Caliper's default channel and prints what Adiak then holds of the
 * Caliper globals `cali.caliper.version` and `build.mode`, and of its own
 * `problem`. With "query", it writes a report of channel 0 with its
 * globals through cali_write_report_for_query to its output. */
#include <adiak_tool.h>
#include <caliper/cali.h>

#include <stdio.h>
#include <string.h>

static void print_adiak_value(const char *name)
{
   adiak_datatype_t *t;
   adiak_value_t *v;
   adiak_category_t category;
   const char *subcategory;
   if (adiak_get_nameval(name, &t, &v, &category, &subcategory) != 0) {
      printf("%s: not in Adiak\n", name);
      return;
   }
   printf("%s: type %d category %d subcategory %s value ", name, t->dtype, category, subcategory ? subcategory : "");
   if (t->dtype == adiak_string)
      printf("%s\n", (const char *)v->v_ptr);
   else
      printf("%ld\n", v->v_long);
}

static void write_stdout(void *user_arg, const char *text, size_t len)
{
   (void)user_arg;
   fwrite(text, 1, len, stdout);
}

int main(int argc, char **argv)
{
   adiak_init(NULL);
   adiak_collect_all();
   adiak_namevalue("problem", adiak_general, "setup", "%s", "sedov");
   adiak_namevalue("iterations", adiak_general, NULL, "%d", 42);
   adiak_namevalue("tolerance", adiak_performance, "solver", "%f", 1e-6);
   adiak_namevalue("compiler", adiak_general, "build", "%v", "gcc-12.2");
   int grid[3] = { 8, 16, 32 };
   adiak_namevalue("grid", adiak_general, NULL, "[%d]", grid, 3);
   const char *tags[2] = { "fast", "mpi" };
   adiak_namevalue("tags", adiak_general, NULL, "{%s}", tags, 2);
   adiak_namevalue("secret", adiak_control, NULL, "%d", 7);

   cali_set_global_string_byname("build.mode", "release");
   /* With "clash", the program's own context attribute shares an Adiak name. */
   if (argc > 1 && strcmp(argv[1], "clash") == 0)
      cali_set_int_byname("iterations", 1);
   cali_begin_region("main");
   cali_begin_region("solve");
   cali_end_region("solve");
   cali_end_region("main");

   if (argc > 1 && strcmp(argv[1], "export") == 0) {
      cali_flush(0);
      print_adiak_value("cali.caliper.version");
      print_adiak_value("build.mode");
      print_adiak_value("problem");
   }
   if (argc > 1 && strcmp(argv[1], "query") == 0)
      cali_write_report_for_query(0, "select count() group by region format tree(print-globals)", write_stdout, NULL);
   adiak_fini();
   return 0;
}
