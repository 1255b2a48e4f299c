/* Raises SIGUSR1 at itself argv[1] times (default 20000), each caught by
 * a handler: a signal event per raise for cali-run's event callbacks. */
#include <signal.h>
#include <stdlib.h>

static volatile sig_atomic_t caught;

static void on_usr1(int sig) { caught += sig > 0; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    signal(SIGUSR1, on_usr1);
    for (long i = 0; i < n; i++) raise(SIGUSR1);
    return caught == n ? 0 : 1;
}
