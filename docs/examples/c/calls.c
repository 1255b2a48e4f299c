/* A measuring tool in C over cali-run's engine (libcaliper-dbi): runs a
 * program, counts the calls of its functions and the arcs between them,
 * says how many libraries it loaded, and writes the counts as .cali
 * records.
 *
 *     calls PROGRAM ARGS...
 */
#include <caliper/cali-dbi.h>
#include <stdio.h>

struct state {
    int libraries;
};

static int on_event(void *user, const cali_dbi_event *event, const cali_dbi_live *live)
{
    struct state *state = user;
    (void)live;
    if (event->kind == CALI_DBI_EVENT_LIBRARY_LOAD)
        ++state->libraries;
    return CALI_DBI_CONTINUE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROGRAM ARGS...\n", argv[0]);
        return 2;
    }
    struct state state = { 0 };
    cali_dbi_process *p = cali_dbi_launch(argc - 1, (const char *const *)argv + 1);
    cali_dbi_collect(p, "fcount,arcs");
    cali_dbi_include(p, "hotspot");
    cali_dbi_on_events(p, on_event, &state, 100 /* ms timer; 0 for none */);
    cali_dbi_results *r;
    if (cali_dbi_run(p, &r) != CALI_DBI_OK) {
        fprintf(stderr, "%s\n", cali_dbi_last_error());
        cali_dbi_process_free(p);
        return 1;
    }
    cali_dbi_results_write(r, "calls.cali", "cali", NULL);
    printf("%d libraries loaded\n", state.libraries);
    cali_dbi_results_free(r);
    cali_dbi_process_free(p);
    return 0;
}
