/* The C example: main > init, main > mainloop (a loop of 4 iterations)
 * > foo, with the globals `iterations` and `caliper.config`. The config
 * string (e.g. "runtime-report") is the first argument; CALI_CONFIG
 * works too. */
#include <caliper/cali.h>
#include <caliper/cali-manager.h>

#include <stdio.h>

static double work(int n)
{
    double x = 0.0;
    for (int i = 0; i < n; ++i)
        x += (double) i * 0.5;
    return x;
}

static double foo(void)
{
    CALI_MARK_FUNCTION_BEGIN;
    double r = work(100000);
    CALI_MARK_FUNCTION_END;
    return r;
}

int main(int argc, char* argv[])
{
    const char* config = argc > 1 ? argv[1] : "";
    const int iterations = 4;

    cali_ConfigManager mgr;
    cali_ConfigManager_new(&mgr);
    if (argc > 1)
        cali_ConfigManager_add(&mgr, config);
    if (cali_ConfigManager_error(&mgr))
        fprintf(stderr, "Caliper config error: %s\n", cali_ConfigManager_error_msg(&mgr));
    cali_ConfigManager_start(&mgr);

    cali_set_global_int_byname("iterations", iterations);
    cali_set_global_string_byname("caliper.config", config);

    CALI_MARK_FUNCTION_BEGIN;

    CALI_MARK_BEGIN("init");
    double sum = work(1000);
    CALI_MARK_END("init");

    CALI_MARK_LOOP_BEGIN(mainloop, "mainloop");
    for (int i = 0; i < iterations; ++i) {
        CALI_MARK_ITERATION_BEGIN(mainloop, i);
        sum += foo();
        CALI_MARK_ITERATION_END(mainloop);
    }
    CALI_MARK_LOOP_END(mainloop);

    CALI_MARK_FUNCTION_END;

    cali_ConfigManager_flush(&mgr);
    cali_ConfigManager_delete(&mgr);
    return sum > 0.0 ? 0 : 1;
}
