/* Faults a host program really has, for the fault tests of c_abi.rs.
 *
 *   faults exit-in-handler THREADS   SIGTERM's handler calls exit(7) while
 *                                    main (and THREADS more threads)
 *                                    annotate without end; prints "ready"
 *                                    once the handler is in place and a
 *                                    region "setup" measured
 *   faults fork                      forks inside a region; the child
 *                                    annotates "child_work" and exits 5
 */
#define _GNU_SOURCE
#include <caliper/cali.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(unsigned long n) {
    unsigned long a = 0;
    for (unsigned long i = 0; i < n; i++)
        a = a * 31 + i;
    sink = a;
}

static void on_term(int sig) {
    (void)sig;
    exit(7);
}

/* Every kind of update: regions by name, attributes by name (which look
 * their attribute up under the registry's lock), and values. */
static void annotate_forever(const char* name) {
    for (;;) {
        cali_begin_region(name);
        cali_begin_string_byname("phase", "x");
        cali_set_int_byname("iteration", 1);
        work(50);
        cali_end_byname("phase");
        cali_end_region(name);
    }
}

static void* annotating_thread(void* arg) {
    char name[32];
    snprintf(name, sizeof name, "thread%ld", (long)(size_t)arg);
    annotate_forever(name);
    return NULL;
}

static int exit_in_handler(long threads) {
    signal(SIGTERM, on_term);
    for (long i = 0; i < threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, annotating_thread, (void*)(size_t)i);
        pthread_detach(t);
    }
    /* Measured before the signal can come: a report without it has lost
     * data, which only an interrupted update excuses. */
    cali_begin_region("setup");
    cali_end_region("setup");
    /* Not stdio: a signal that came while fflush ran would make exit()
     * write the buffer a second time, a fault of this program's own. */
    if (write(1, "ready\n", 6) != 6)
        return 1;
    annotate_forever("main");
    return 0;
}

static int fork_in_region(void) {
    cali_begin_region("main");
    cali_begin_region("before_fork");
    work(1000);
    pid_t child = fork();
    if (child == 0) {
        cali_begin_region("child_work");
        work(1000);
        cali_end_region("child_work");
        cali_end_region("before_fork");
        cali_end_region("main");
        exit(5);
    }
    cali_begin_region("parent_work");
    work(1000);
    cali_end_region("parent_work");
    int status = 0;
    waitpid(child, &status, 0);
    printf("child exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    cali_end_region("before_fork");
    cali_end_region("main");
    return 0;
}

int main(int argc, char** argv) {
    if (argc >= 2 && strcmp(argv[1], "exit-in-handler") == 0)
        return exit_in_handler(argc > 2 ? atol(argv[2]) : 0);
    if (argc >= 2 && strcmp(argv[1], "fork") == 0)
        return fork_in_region();
    fprintf(stderr, "usage: faults exit-in-handler THREADS | fork\n");
    return 2;
}
