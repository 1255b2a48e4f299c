/* A C client of libcaliper-dbi: measures argv[1..] with fcount on the
 * module named by $DBI_INCLUDE, counts the events, prints each called
 * function's calls and the events seen, and exits with the program's code. */
#include <caliper/cali-dbi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seen {
    int exits, loads, sigchld;
};

static int on_event(void *user, const cali_dbi_event *event, const cali_dbi_live *live) {
    struct seen *seen = user;
    (void)live;
    if (event->kind == CALI_DBI_EVENT_EXIT) seen->exits++;
    if (event->kind == CALI_DBI_EVENT_LIBRARY_LOAD && strstr(event->path, "libplugin.so")) seen->loads++;
    if (event->kind == CALI_DBI_EVENT_SIGNAL && event->signal == SIGCHLD) seen->sigchld++;
    return CALI_DBI_CONTINUE;
}

int main(int argc, char **argv) {
    cali_dbi_process *p = cali_dbi_launch(argc - 1, (const char *const *)argv + 1);
    struct seen seen = {0, 0, 0};
    cali_dbi_results *r = NULL;
    if (!p || cali_dbi_collect(p, "fcount") || cali_dbi_include(p, getenv("DBI_INCLUDE")) ||
        cali_dbi_on_events(p, on_event, &seen, 0) || cali_dbi_run(p, &r)) {
        fprintf(stderr, "dbi_client: %s\n", cali_dbi_last_error());
        return 100;
    }
    size_t functions, arcs, stacks;
    uint64_t lost;
    int status, sig;
    cali_dbi_results_sizes(r, &functions, &arcs, &stacks, &lost);
    cali_dbi_results_exit(r, &status, &sig);
    for (size_t i = 0; i < functions; i++) {
        cali_dbi_function f;
        cali_dbi_results_function(r, i, &f);
        if (f.covered) fprintf(stderr, "%s %llu\n", f.name, (unsigned long long)f.count);
    }
    fprintf(stderr, "events: %d exits, %d plugin loads, %d SIGCHLD\n", seen.exits, seen.loads, seen.sigchld);
    cali_dbi_results_free(r);
    cali_dbi_process_free(p);
    return status;
}
