/* Calls the Kokkos tools interface of a library the way Kokkos does:
 * dlopen of the library KOKKOS_TOOLS_LIBS names, dlsym of each kokkosp_*
 * function, then init_library, a profile region around a parallel_for,
 * a parallel_reduce, a parallel_scan, fences, two views with a deep copy
 * between them, and finalize_library.
 * Usage: kokkos_driver LIB [bench N | null]: with "bench N", times N
 * begin/end_parallel_for pairs and prints the nanoseconds per pair; with
 * "null", passes a NULL kernel name and region name, and a misspelled
 * config as the tool arguments, before the usual calls. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct SpaceHandle {
    char name[64];
};

typedef void (*init_fn)(int, uint64_t, uint32_t, void*);
typedef void (*void_fn)(void);
typedef void (*begin_fn)(const char*, uint32_t, uint64_t*);
typedef void (*end_fn)(uint64_t);
typedef void (*push_fn)(const char*);
typedef void (*data_fn)(struct SpaceHandle, const char*, const void*, uint64_t);
typedef void (*copy_fn)(struct SpaceHandle, const char*, const void*, struct SpaceHandle, const char*, const void*,
                        uint64_t);

static void* library;

static void* lookup(const char* name) {
    void* f = dlsym(library, name);
    if (!f) {
        fprintf(stderr, "kokkos_driver: %s not found\n", name);
        exit(2);
    }
    return f;
}

static struct SpaceHandle space(const char* name) {
    struct SpaceHandle h;
    memset(&h, 0, sizeof h);
    strncpy(h.name, name, sizeof h.name - 1);
    return h;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char** argv) {
    library = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!library) {
        fprintf(stderr, "kokkos_driver: %s\n", dlerror());
        return 2;
    }
    init_fn init = (init_fn)lookup("kokkosp_init_library");
    void_fn finalize = (void_fn)lookup("kokkosp_finalize_library");
    begin_fn begin_for = (begin_fn)lookup("kokkosp_begin_parallel_for");
    end_fn end_for = (end_fn)lookup("kokkosp_end_parallel_for");
    begin_fn begin_reduce = (begin_fn)lookup("kokkosp_begin_parallel_reduce");
    end_fn end_reduce = (end_fn)lookup("kokkosp_end_parallel_reduce");
    begin_fn begin_scan = (begin_fn)lookup("kokkosp_begin_parallel_scan");
    end_fn end_scan = (end_fn)lookup("kokkosp_end_parallel_scan");
    begin_fn begin_fence = (begin_fn)lookup("kokkosp_begin_fence");
    end_fn end_fence = (end_fn)lookup("kokkosp_end_fence");
    push_fn push = (push_fn)lookup("kokkosp_push_profile_region");
    void_fn pop = (void_fn)lookup("kokkosp_pop_profile_region");
    data_fn allocate = (data_fn)lookup("kokkosp_allocate_data");
    data_fn deallocate = (data_fn)lookup("kokkosp_deallocate_data");
    copy_fn begin_copy = (copy_fn)lookup("kokkosp_begin_deep_copy");
    void_fn end_copy = (void_fn)lookup("kokkosp_end_deep_copy");

    if (argc > 2 && strcmp(argv[2], "null") == 0) {
        void (*parse_args)(int, char**) = (void (*)(int, char**))lookup("kokkosp_parse_args");
        char* args[] = {argv[1], "runtime-reprot", NULL};
        parse_args(2, args);
    }
    init(0, 20210225, 0, NULL);
    uint64_t id = 0;
    if (argc > 3 && strcmp(argv[2], "bench") == 0) {
        long n = atol(argv[3]);
        double start = now();
        for (long i = 0; i < n; i++) {
            begin_for("bench.kernel", 0, &id);
            end_for(id);
        }
        printf("%.1f ns per begin/end_parallel_for pair\n", (now() - start) / n);
        finalize();
        return 0;
    }

    static double a[1000], b[1000];
    struct SpaceHandle host = space("Host");
    allocate(host, "a", a, sizeof a);
    allocate(host, "b", b, sizeof b);
    if (argc > 2 && strcmp(argv[2], "null") == 0) {
        push(NULL);
        begin_for(NULL, 0, &id);
        end_for(id);
        pop();
    }
    push("solve");
    for (int i = 0; i < 3; i++) {
        begin_for("fill", 0, &id);
        end_for(id);
    }
    begin_reduce("sum", 0, &id);
    end_reduce(id);
    begin_scan("prefix", 0, &id);
    end_scan(id);
    begin_copy(host, "b", b, host, "a", a, sizeof a);
    begin_fence("deep_copy.fence", 0, &id);
    end_fence(id);
    end_copy();
    pop();
    begin_fence("final.fence", 0, &id);
    end_fence(id);
    deallocate(host, "b", b, sizeof b);
    deallocate(host, "a", a, sizeof a);
    finalize();
    printf("kokkos_driver done\n");
    return 0;
}
