/* A program that loads libcaliper at run time with dlopen (as a tool
 * loader or a plugin host does) rather than linking it, and annotates
 * from its main thread and from a thread it starts. Usage: loaded LIB */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static void (*begin_region)(const char*);
static void (*end_region)(const char*);

static void* thread_work(void* arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) {
        begin_region("loaded.thread");
        end_region("loaded.thread");
    }
    return NULL;
}

int main(int argc, char** argv) {
    void* caliper = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!caliper) {
        fprintf(stderr, "loaded: %s\n", dlerror());
        return 2;
    }
    begin_region = (void (*)(const char*))dlsym(caliper, "cali_begin_region");
    end_region = (void (*)(const char*))dlsym(caliper, "cali_end_region");
    if (!begin_region || !end_region) {
        fprintf(stderr, "loaded: %s\n", dlerror());
        return 2;
    }
    begin_region("loaded.main");
    for (int i = 0; i < 100; i++) {
        begin_region("loaded.work");
        end_region("loaded.work");
    }
    pthread_t thread;
    pthread_create(&thread, NULL, thread_work, NULL);
    pthread_join(thread, NULL);
    end_region("loaded.main");
    printf("loaded done\n");
    return 0;
}
