/* A program whose function calls are known exactly, for cali-run's
 * coverage and fcount tests. Built with -O2: every function here keeps its
 * own entry (noipa), as in a real optimised program. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))

int lib_fn(int x); /* in libshared.so */

volatile long sink;
volatile int twice = 2; /* a loop bound the compiler cannot unroll */

NOIPA void hot(long i) { sink += i; }
NOIPA void three(int x) { sink += x; }
NOIPA void never(void) { sink = -1; }
NOIPA void child_only(void) { sink += 2; }
NOIPA int leaf(int x) { return x * 3; }
/* Compiled as a jump to leaf (a tail call). */
NOIPA int tail(int x) { return leaf(x + 1); }
NOIPA int pointed(int x) { return x + 7; }
int (*volatile pointer)(int) = pointed;

/* Two real recursive calls per level: the call count is 2*fib(n+1)-1. */
__attribute__((noipa, optimize("no-optimize-sibling-calls"))) long fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* A switch compiled as a jump table. */
NOIPA long dispatch(int k) {
    switch (k) {
    case 0: return sink * 3;
    case 1: return sink + 11;
    case 2: return sink ^ 5;
    case 3: return sink - 17;
    case 4: return sink * 9;
    case 5: return sink + 23;
    case 6: return sink / 3;
    default: return 0;
    }
}

/* Called by two threads at once: exact only with atomic increments. */
NOIPA void shared_hot(long *count) { *count += 1; }

pthread_barrier_t start_together;

NOIPA void *racer(void *arg) {
    long local = 0;
    pthread_barrier_wait(&start_together);
    for (int i = 0; i < 5000000; i++) shared_hot(&local);
    return arg;
}

NOIPA void *thread_fn(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) hot(i);
    return NULL;
}

int main(int argc, char **argv) {
    for (long i = 0; i < 1000000; i++) hot(i);
    for (int i = 0; i < twice; i++) three(i); /* one call site, twice */
    if (argc > 5) never();
    three(3); /* another call site, once */
    sink += fib(15);
    for (int i = 0; i < 5; i++) sink += tail(i);
    for (int i = 0; i < 7; i++) sink += pointer(i);
    for (int i = 0; i < 16; i++) sink += dispatch(i % 8);
    for (int i = 0; i < 11; i++) sink += lib_fn(i);

    void *plugin = dlopen(argc > 1 ? argv[1] : "./libplugin.so", RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*plugin_fn)(int) = (int (*)(int))dlsym(plugin, "plugin_fn");
    for (int i = 0; i < 13; i++) sink += plugin_fn(i);

    /* Its trampoline is built while the program has one thread. */
    long once = 0;
    shared_hot(&once);
    pthread_t t, r1, r2;
    pthread_create(&t, NULL, thread_fn, NULL);
    pthread_join(t, NULL);
    pthread_barrier_init(&start_together, NULL, 2);
    pthread_create(&r1, NULL, racer, NULL);
    pthread_create(&r2, NULL, racer, NULL);
    pthread_join(r1, NULL);
    pthread_join(r2, NULL);

    pid_t child = fork();
    if (child == 0) {
        child_only();
        child_only();
        _exit(5);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child exit %d\n", WEXITSTATUS(status));
    printf("done\n");
    return 3;
}
