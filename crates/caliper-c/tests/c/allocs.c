/* Known allocations in known regions, for the sysalloc, alloc and
 * allocstats services:
 *
 *   phase        malloc 1,000,000 and calloc 1,000 x 500 (500,000),
 *                both live at once; then
 *     inner      malloc 300,000, freed in the region; then
 *   (phase)      both freed
 *   quiet        no allocation
 *   late         a function of a library loaded with dlopen after start-up
 *                allocates 40,000 bytes (argument: the library's path)
 *
 * With `track` as argument, the program also names one array itself
 * (cali_datatracker_track_dimensional) and points an address attribute of
 * class memoryaddress into it. The blocks are written, so that no compiler
 * removes the allocations. */
#include <caliper/cali.h>
#include <caliper/cali_datatracker.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes a block, and lets it escape, so that no compiler removes its
 * allocation. */
static void touch(void* p, size_t n) {
    memset(p, 1, n);
    __asm__ volatile("" : : "g"(p) : "memory");
}

int main(int argc, char* argv[]) {
    const char* library = argc > 1 ? argv[1] : NULL;
    int track = argc > 2 && strcmp(argv[2], "track") == 0;
    long sum = 0;

    CALI_MARK_BEGIN("phase");
    char* a = malloc(1000000);
    char* b = calloc(1000, 500);
    touch(a, 1000000);
    touch(b, 500000);
    CALI_MARK_BEGIN("inner");
    char* c = malloc(300000);
    touch(c, 300000);
    sum += c[299999];
    free(c);
    CALI_MARK_END("inner");
    sum += a[999999] + b[499999];
    free(a);
    free(b);
    CALI_MARK_END("phase");

    CALI_MARK_BEGIN("quiet");
    sum += 1;
    CALI_MARK_END("quiet");

    if (library) {
        void* handle = dlopen(library, RTLD_NOW);
        if (!handle) {
            fprintf(stderr, "allocs: %s\n", dlerror());
            return 1;
        }
        long (*allocate)(size_t) = (long (*)(size_t)) dlsym(handle, "allocate_and_free");
        CALI_MARK_BEGIN("late");
        sum += allocate(40000);
        CALI_MARK_END("late");
    }

    if (track) {
        double array[8][4];
        size_t dims[2] = { 8, 4 };
        cali_id_t class_attr = cali_find_attribute("class.memoryaddress");
        cali_variant_t yes = cali_make_variant_from_bool(true);
        cali_id_t addr = cali_create_attribute_with_metadata("array.address", CALI_TYPE_ADDR,
                                                             CALI_ATTR_ASVALUE | CALI_ATTR_SKIP_EVENTS, 1,
                                                             &class_attr, &yes);
        cali_datatracker_track_dimensional(array, "array", sizeof(double), dims, 2);
        CALI_MARK_BEGIN("lookup");
        unsigned long long where = (unsigned long long) &array[5][2];
        cali_set(addr, &where, sizeof where);
        cali_push_snapshot(CALI_SCOPE_THREAD, 0, NULL, NULL);
        CALI_MARK_END("lookup");
        cali_datatracker_untrack(array);
    }

    printf("allocs: %ld\n", sum);
    return 0;
}
