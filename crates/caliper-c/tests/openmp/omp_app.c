/* An annotated OpenMP program: a region around a parallel for (whose
 * iterations open a region of their own on every thread), an explicit
 * barrier, and a serial region after. With argv[1] "late", OpenMP starts
 * before the program's ConfigManager starts openmp-report; with a number,
 * it runs that many empty parallel regions and barriers instead, and
 * prints their time. */
#include <caliper/cali.h>
#include <caliper/cali-manager.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double work(int i) {
    double x = i;
    for (int k = 0; k < 2000; ++k)
        x = x * 0.999 + 1.0;
    return x;
}

static void timing(long n) {
    static volatile int team; /* keeps the parallel regions from being optimized away */
    double t0 = omp_get_wtime();
    for (long i = 0; i < n; ++i) {
#pragma omp parallel
        team = omp_get_num_threads();
    }
    double t1 = omp_get_wtime();
#pragma omp parallel
    for (long i = 0; i < n; ++i) {
#pragma omp barrier
    }
    double t2 = omp_get_wtime();
    printf("parallel %.1f ns barrier %.1f ns\n", (t1 - t0) * 1e9 / n, (t2 - t1) * 1e9 / n);
}

static double compute(void) {
    double sum = 0.0;
    CALI_MARK_BEGIN("main");
    CALI_MARK_BEGIN("compute");
#pragma omp parallel num_threads(4) reduction(+ : sum)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < 4000; ++i) {
            CALI_MARK_BEGIN("iteration");
            sum += work(i);
            CALI_MARK_END("iteration");
        }
#pragma omp barrier
    }
    CALI_MARK_END("compute");
    CALI_MARK_BEGIN("serial");
    sum += work(1);
    CALI_MARK_END("serial");
    CALI_MARK_END("main");
    return sum;
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "late") == 0) {
        if (omp_get_max_threads() < 1)
            return 1;
        cali_ConfigManager mgr;
        cali_ConfigManager_new(&mgr);
        cali_ConfigManager_add(&mgr, "openmp-report");
        cali_ConfigManager_start(&mgr);
        printf("done %.0f\n", compute());
        cali_ConfigManager_flush(&mgr);
        cali_ConfigManager_delete(&mgr);
    } else if (argc > 1) {
        timing(atol(argv[1]));
    } else {
        printf("done %.0f\n", compute());
    }
    return 0;
}
