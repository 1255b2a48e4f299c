/* The C wrappers of the reference's classes, through their own headers
 * (wrap*.h): Annotation, ScopeAnnotation, BufferedRegionProfile and
 * ConfigManager. Checks the region profile's times against what it ran
 * (sleeps: the measured time is at least the time slept) and prints
 * "wrappers: all checks passed"; the ConfigManager's runtime-report (on
 * stdout) is checked by the Rust test, and so are the messages the bad
 * calls at the end provoke. */
#include <caliper/cali.h>
#include <caliper/wrapAnnotation.h>
#include <caliper/wrapBufferedRegionProfile.h>
#include <caliper/wrapCaliper.h>
#include <caliper/wrapConfigManager.h>
#include <caliper/wrapScopeAnnotation.h>

#include <math.h>
#include <stdio.h>
#include <time.h>

static int failures = 0;

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("wrappers: check failed at line %d: %s\n", __LINE__, #cond); \
            ++failures;                                                         \
        }                                                                       \
    } while (0)

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static int    regions_seen = 0;
static double regions_sum  = 0.0;

static void count_region(void* arg, const char* region, double seconds)
{
    (void) arg;
    (void) region;
    ++regions_seen;
    regions_sum += seconds;
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-9 * (1.0 + fabs(a) + fabs(b)); }

int main(void)
{
    cali_ConfigManager mgr;
    cali_ConfigManager_new(&mgr);
    cali_ConfigManager_set_default_parameter(&mgr, "output", "stdout");
    CHECK(cali_ConfigManager_add(&mgr, "runtime-report"));
    cali_ConfigManager_start(&mgr);

    cali_BufferedRegionProfile rp;
    CHECK(cali_BufferedRegionProfile_new(&rp) == &rp);
    cali_BufferedRegionProfile_start(&rp);

    /* wrap.outer (10 ms of its own) > wrap.inner (30 ms) > kind=slow
     * (20 ms, a nested annotation) */
    cali_ScopeAnnotation outer;
    CHECK(cali_ScopeAnnotation_begin("wrap.outer", &outer) == &outer);
    sleep_ms(10);
    cali_begin_region("wrap.inner");
    sleep_ms(30);
    cali_Annotation kind;
    cali_Annotation_new_with_properties("wrap.kind", CALI_ATTR_NESTED, &kind);
    cali_Annotation_begin_string(&kind, "slow");
    sleep_ms(20);
    cali_Annotation_end(&kind);
    cali_end_region("wrap.inner");

    /* iteration: an int annotation, set three times (5 ms each); the
     * string value has the wrong type and is dropped */
    cali_Annotation iter;
    cali_Annotation_new("wrap.iter", &iter);
    cali_Annotation_begin_int(&iter, 0);
    sleep_ms(5);
    cali_Annotation_set_int(&iter, 1);
    sleep_ms(5);
    cali_Annotation_set_string(&iter, "not an int");
    cali_Annotation_set_int(&iter, 2);
    sleep_ms(5);
    cali_Annotation_end(&iter);
    cali_Annotation_delete(&iter);
    cali_ScopeAnnotation_end(&outer);

    cali_BufferedRegionProfile_stop(&rp);
    cali_begin_region("wrap.unmeasured");
    cali_end_region("wrap.unmeasured");

    /* exclusive: each region its own time */
    cali_BufferedRegionProfile_fetch_exclusive_region_times(&rp, "");
    double e_outer = cali_BufferedRegionProfile_region_time(&rp, "wrap.outer");
    double e_inner = cali_BufferedRegionProfile_region_time(&rp, "wrap.inner");
    double e_slow  = cali_BufferedRegionProfile_region_time(&rp, "slow");
    double total_r = cali_BufferedRegionProfile_total_region_time(&rp);
    double total_p = cali_BufferedRegionProfile_total_profiling_time(&rp);
    printf("exclusive: wrap.outer %.6f wrap.inner %.6f slow %.6f\n", e_outer, e_inner, e_slow);
    CHECK(e_outer >= 0.010);
    CHECK(e_inner >= 0.030);
    CHECK(e_slow >= 0.020);
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "wrap.unmeasured") == 0.0);
    /* wrap.iter is not a nested attribute: its time is wrap.outer's */
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "1") == 0.0);
    CHECK(total_r >= 0.075 && total_r <= total_p);
    cali_BufferedRegionProfile_region_times(&rp, count_region, NULL);
    CHECK(regions_seen == 3); /* wrap.outer, wrap.inner, slow */
    CHECK(close_to(regions_sum, total_r));

    /* inclusive: outer holds everything inside it */
    cali_BufferedRegionProfile_fetch_inclusive_region_times(&rp, NULL);
    double i_outer = cali_BufferedRegionProfile_region_time(&rp, "wrap.outer");
    double i_inner = cali_BufferedRegionProfile_region_time(&rp, "wrap.inner");
    printf("inclusive: wrap.outer %.6f wrap.inner %.6f\n", i_outer, i_inner);
    CHECK(close_to(i_inner, e_inner + e_slow));
    CHECK(i_outer >= i_inner + 0.025);
    CHECK(close_to(i_outer, total_r));

    /* one attribute's regions only */
    cali_BufferedRegionProfile_fetch_exclusive_region_times(&rp, "wrap.iter");
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "wrap.outer") == 0.0);
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "2") >= 0.005);
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "not an int") == 0.0);
    CHECK(cali_BufferedRegionProfile_total_region_time(&rp) >= 0.015);
    CHECK(close_to(cali_BufferedRegionProfile_total_profiling_time(&rp), total_p));
    cali_BufferedRegionProfile_fetch_exclusive_region_times(&rp, "no.such.attribute");
    CHECK(cali_BufferedRegionProfile_total_region_time(&rp) == 0.0);

    /* clear forgets; a restart measures again */
    cali_BufferedRegionProfile_clear(&rp);
    cali_BufferedRegionProfile_fetch_inclusive_region_times(&rp, "");
    CHECK(cali_BufferedRegionProfile_total_profiling_time(&rp) == 0.0);
    cali_BufferedRegionProfile_start(&rp);
    cali_begin_region("wrap.again");
    sleep_ms(2);
    cali_end_region("wrap.again");
    cali_BufferedRegionProfile_fetch_inclusive_region_times(&rp, "");
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "wrap.again") >= 0.002);
    CHECK(cali_BufferedRegionProfile_region_time(&rp, "wrap.outer") == 0.0);
    cali_BufferedRegionProfile_delete(&rp);

    cali_ConfigManager_flush(&mgr);
    cali_ConfigManager_delete(&mgr);

    /* bad calls: each logged once, none fatal */
    cali_ScopeAnnotation_end(&outer);                                /* ended already */
    CHECK(cali_BufferedRegionProfile_total_region_time(&rp) == 0.0); /* deleted */
    /* an Annotation is not a BufferedRegionProfile */
    CHECK(cali_BufferedRegionProfile_region_time((cali_BufferedRegionProfile*) &kind, "x") == 0.0);
    cali_Annotation_delete(&kind);
    cali_Annotation_set_int(&kind, 3); /* deleted */
    cali_Annotation_new(NULL, &kind);

    if (failures == 0)
        printf("wrappers: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
