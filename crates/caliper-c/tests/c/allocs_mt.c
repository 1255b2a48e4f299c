/* Allocations on several threads and in a forked child, for sysalloc and
 * allocstats: 4 threads each allocate and free 1,000 blocks of 100 bytes in
 * "worker"; then the process forks, and the child allocates one block of
 * 5,000 bytes in "child" and exits (writing its own report), while the
 * parent waits. */
#include <caliper/cali.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define BLOCKS 1000

static void* worker(void* arg) {
    (void) arg;
    CALI_MARK_BEGIN("worker");
    for (int i = 0; i < BLOCKS; ++i) {
        char* p = malloc(100);
        memset(p, i, 100);
        __asm__ volatile("" : : "g"(p) : "memory");
        free(p);
    }
    CALI_MARK_END("worker");
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; ++t)
        pthread_create(&threads[t], NULL, worker, NULL);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);

    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        CALI_MARK_BEGIN("child");
        char* p = malloc(5000);
        memset(p, 1, 5000);
        __asm__ volatile("" : : "g"(p) : "memory");
        free(p);
        CALI_MARK_END("child");
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("allocs_mt: child exited %d\n", WEXITSTATUS(status));
    return 0;
}
