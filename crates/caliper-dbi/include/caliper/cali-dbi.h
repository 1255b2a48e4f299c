/* cali-dbi.h: the C-callable API of the cali-run instrumentation engine
 * (libcaliper-dbi.so). A process is launched or attached to at its run,
 * measured by the collectors chosen before it, and its events reported to
 * one callback while it runs; the results are then read by index or
 * written as .cali records, flow data or a text report.
 *
 *     const char *argv[] = {"./a.out", "input", NULL};
 *     cali_dbi_process *p = cali_dbi_launch(2, argv);
 *     cali_dbi_collect(p, "fcount,arcs");
 *     cali_dbi_include(p, "a.out");
 *     cali_dbi_results *r = NULL;
 *     if (cali_dbi_run(p, &r) != CALI_DBI_OK)
 *         fprintf(stderr, "%s\n", cali_dbi_last_error());
 *     else
 *         cali_dbi_results_write(r, "flow.dat", "flow", NULL);
 *     cali_dbi_results_free(r);
 *     cali_dbi_process_free(p);
 *
 * Every call returns CALI_DBI_OK or a negative error code, with a one-line
 * message in cali_dbi_last_error(); none panics into the caller. The run
 * and its callbacks happen on the calling thread (ptrace ties a traced
 * program to the thread that started it), one run at a time in a process
 * (the engine waits for any child of the process: CALI_DBI_ESTATE if
 * another run is in progress). */
#ifndef CALI_DBI_H
#define CALI_DBI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CALI_DBI_OK 0
#define CALI_DBI_EINVAL (-1)    /* bad argument: NULL, unknown name, bad pattern or value */
#define CALI_DBI_ESTART (-2)    /* the program cannot start, or the process be attached to */
#define CALI_DBI_EIO (-3)       /* a file cannot be written */
#define CALI_DBI_ESTATE (-4)    /* configured after the run, run twice, or while another runs */
#define CALI_DBI_EINTERNAL (-5) /* an internal error, caught */

#define CALI_DBI_EVENT_EXIT 1         /* a traced process ended */
#define CALI_DBI_EVENT_LIBRARY_LOAD 2 /* a library was loaded (before its constructors) */
#define CALI_DBI_EVENT_TIMER 3        /* the timer's period passed */
#define CALI_DBI_EVENT_SIGNAL 4       /* a signal is delivered to the program */

#define CALI_DBI_CONTINUE 0 /* callback: go on */
#define CALI_DBI_STOP 1     /* callback: stop measuring, let the processes go */

typedef struct cali_dbi_process cali_dbi_process;
typedef struct cali_dbi_results cali_dbi_results;
typedef struct cali_dbi_live cali_dbi_live;

typedef struct cali_dbi_event {
    int kind;         /* CALI_DBI_EVENT_* */
    int pid;          /* the process (0 for a timer) */
    int tid;          /* the thread a signal is delivered to */
    int status;       /* the exit code (-1 if killed or let go) */
    int signal;       /* the signal delivered, or that killed the process */
    const char *path; /* the library loaded */
} cali_dbi_event;

typedef int (*cali_dbi_callback)(void *user, const cali_dbi_event *event, const cali_dbi_live *live);

typedef struct cali_dbi_function {
    const char *module; /* path */
    const char *name;
    uint64_t address; /* entry, in the module file */
    uint64_t count;   /* calls (fcount, arcs) */
    int covered;      /* called at all */
    const char *instrumentation;
} cali_dbi_function;

typedef struct cali_dbi_arc {
    const char *caller_module;
    const char *caller;
    uint64_t callsite; /* the call instruction, in the caller's file */
    const char *callee_module;
    const char *callee;
    uint64_t callee_address;
    uint64_t count;
} cali_dbi_arc;

typedef struct cali_dbi_stack {
    const char *frames; /* outermost first, separated by ';' */
    uint64_t samples;
} cali_dbi_stack;

const char *cali_dbi_last_error(void);

cali_dbi_process *cali_dbi_launch(int argc, const char *const *argv);
cali_dbi_process *cali_dbi_attach(int pid);
void cali_dbi_process_free(cali_dbi_process *process);

/* Before the run. */
int cali_dbi_collect(cali_dbi_process *process, const char *collectors); /* coverage,fcount,arcs,sample */
int cali_dbi_include(cali_dbi_process *process, const char *pattern);    /* module or function, '*' */
int cali_dbi_exclude(cali_dbi_process *process, const char *pattern);
/* Only functions whose entry (address in the file) is in [low, high) of a matching module. */
int cali_dbi_address_range(cali_dbi_process *process, const char *module, uint64_t low, uint64_t high);
int cali_dbi_follow(cali_dbi_process *process, const char *what); /* fork,exec,exec=PROGRAM or none */
int cali_dbi_window(cali_dbi_process *process, double start_seconds, double duration_seconds);
int cali_dbi_on_events(cali_dbi_process *process, cali_dbi_callback callback, void *user, unsigned timer_ms);

/* Measures to the end (fcount if no collector was chosen). */
int cali_dbi_run(cali_dbi_process *process, cali_dbi_results **results);
/* In a callback: the results so far. */
int cali_dbi_live_results(const cali_dbi_live *live, cali_dbi_results **results);

int cali_dbi_results_exit(cali_dbi_results *results, int *status, int *signal);
int cali_dbi_results_sizes(cali_dbi_results *results, size_t *functions, size_t *arcs, size_t *stacks,
                           uint64_t *samples_lost);
int cali_dbi_results_function(cali_dbi_results *results, size_t i, cali_dbi_function *out);
int cali_dbi_results_arc(cali_dbi_results *results, size_t i, cali_dbi_arc *out);
int cali_dbi_results_stack(cali_dbi_results *results, size_t i, cali_dbi_stack *out);
/* format: "cali", "flow" or "text"; collectors: NULL for the run's */
int cali_dbi_results_write(cali_dbi_results *results, const char *path, const char *format, const char *collectors);
void cali_dbi_results_free(cali_dbi_results *results);

#ifdef __cplusplus
}
#endif

#endif
