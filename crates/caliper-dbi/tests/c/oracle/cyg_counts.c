/* An independent count of calls, from the compiler's own instrumentation:
 * a program built with -finstrument-functions calls
 * __cyg_profile_func_enter(fn, call_site) at the start of every function,
 * with call_site the return address into its caller. The compiler does so
 * for a function expanded inline too, with the entry hook then called from
 * the function it was expanded into: the address the hook returns to tells
 * a real call (inside fn) from an inline expansion (inside another).
 *
 * Counted per (fn, where the hook was called, call site); written at exit
 * to the file named by $ORACLE_OUT, one line per triple, each address as
 * its module's file name and its offset from the module's load address:
 *     fn_module fn_offset where_module where_offset site_module site_offset count
 * Single-threaded programs only (the counts are plain increments). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINST __attribute__((no_instrument_function))
#define SLOTS (1u << 17)

struct entry {
    void *fn, *where, *site;
    unsigned long count;
};

static struct entry table[SLOTS];

NOINST void __cyg_profile_func_enter(void *fn, void *site) {
    void *where = __builtin_return_address(0);
    uintptr_t h = ((uintptr_t)fn * 0x9e3779b97f4a7c15u) ^ ((uintptr_t)where * 0xc2b2ae3d27d4eb4fu) ^
                  ((uintptr_t)site * 0x165667b19e3779f9u);
    for (unsigned i = 0; i < SLOTS; i++) {
        struct entry *e = &table[(h + i) & (SLOTS - 1)];
        if (e->count == 0) {
            e->fn = fn, e->where = where, e->site = site, e->count = 1;
            return;
        }
        if (e->fn == fn && e->where == where && e->site == site) {
            e->count++;
            return;
        }
    }
    fputs("cyg_counts: table full\n", stderr);
    abort();
}

NOINST void __cyg_profile_func_exit(void *fn, void *site) {
    (void)fn;
    (void)site;
}

/* "module offset" of a code address. */
NOINST static void oracle_place(FILE *out, void *address) {
    Dl_info info;
    if (!dladdr(address, &info) || !info.dli_fname) {
        fprintf(out, " ? %#lx", (unsigned long)(uintptr_t)address);
        return;
    }
    const char *name = strrchr(info.dli_fname, '/');
    fprintf(out, " %s %#lx", name ? name + 1 : info.dli_fname,
            (unsigned long)((uintptr_t)address - (uintptr_t)info.dli_fbase));
}

__attribute__((destructor)) NOINST static void oracle_write(void) {
    const char *path = getenv("ORACLE_OUT");
    FILE *out = path ? fopen(path, "w") : NULL;
    if (!out) return;
    for (unsigned i = 0; i < SLOTS; i++) {
        struct entry *e = &table[i];
        if (e->count == 0) continue;
        oracle_place(out, e->fn);
        oracle_place(out, e->where);
        oracle_place(out, e->site);
        fprintf(out, " %lu\n", e->count);
    }
    fclose(out);
}
