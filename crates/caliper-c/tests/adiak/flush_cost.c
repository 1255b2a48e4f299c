/* The cost of importing Adiak values at a flush: registers N values
 * (argument 1) with Adiak, marks a region, then flushes Caliper's default
 * channel R times (argument 2) and prints the first flush's time and the
 * median of the others, in microseconds. Run with and without adiak_import among the services. */
#include <adiak.h>
#include <caliper/cali.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int by_value(const void *a, const void *b)
{
   double x = *(const double *)a, y = *(const double *)b;
   return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
   int values = argc > 1 ? atoi(argv[1]) : 100;
   int rounds = argc > 2 ? atoi(argv[2]) : 50;
   adiak_init(NULL);
   for (int i = 0; i < values; ++i) {
      char name[32], text[32];
      snprintf(name, sizeof name, "value.%d", i);
      snprintf(text, sizeof text, "text %d", i);
      if (i % 2)
         adiak_namevalue(name, adiak_general, "bench", "%d", i);
      else
         adiak_namevalue(name, adiak_general, "bench", "%s", text);
   }
   cali_begin_region("work");
   cali_end_region("work");
   double *us = malloc(sizeof(double) * (rounds > 0 ? rounds : 1));
   for (int r = 0; r < rounds; ++r) {
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      cali_flush(0);
      clock_gettime(CLOCK_MONOTONIC, &b);
      us[r] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) * 1e-3;
   }
   if (rounds < 2) {
      free(us);
      return 1;
   }
   qsort(us + 1, rounds - 1, sizeof(double), by_value);
   printf("%d values: first flush %.1f us, median flush %.1f us\n", values, us[0], us[1 + (rounds - 1) / 2]);
   free(us);
   adiak_fini();
   return 0;
}
