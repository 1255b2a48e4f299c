/* Calls libpltsites.so's leaf through this program's PLT entry, round
 * after round for at least 200 ms (long enough for the tool to give the
 * call site a counter of its own), then writes `other` into the GOT slot
 * that entry jumps through, as a program that hooks a library function
 * does, and makes 1000 more calls from the same site: they must reach
 * `other`. Prints the rounds and the sum the calls made (each leaf adds 1,
 * each other 2). Built as a position-dependent program, linked with the
 * library; the slot is found from the dynamic section's PLT relocations
 * (the entry's own code is the tool's jump by then). */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ROUND 1000000L

void leaf(volatile long *n);
void other(volatile long *n);

static void **slot;

/* The GOT slot of leaf's PLT entry in the program (the first object). */
static int find_slot(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    const ElfW(Dyn) *dyn = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Rela) *rel = 0;
    const ElfW(Sym) *sym = 0;
    const char *str = 0;
    size_t size_of_rel = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_JMPREL) rel = (const void *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_PLTRELSZ) size_of_rel = dyn->d_un.d_val;
        if (dyn->d_tag == DT_SYMTAB) sym = (const void *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_STRTAB) str = (const void *)dyn->d_un.d_ptr;
    }
    for (size_t i = 0; rel && sym && str && i < size_of_rel / sizeof *rel; i++)
        if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, "leaf") == 0)
            slot = (void **)(info->dlpi_addr + rel[i].r_offset);
    return 1;
}

__attribute__((noipa)) static void spin(long calls, volatile long *n) {
    for (long i = 0; i < calls; i++) leaf(n);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    dl_iterate_phdr(find_slot, 0);
    if (!slot) {
        puts("no GOT slot for leaf");
        return 2;
    }
    volatile long n = 0;
    long rounds = 0;
    double start = now();
    do {
        spin(ROUND, &n);
        rounds++;
    } while (now() - start < 0.2);
    long page = sysconf(_SC_PAGESIZE);
    mprotect((void *)((unsigned long)slot & -page), page, PROT_READ | PROT_WRITE);
    *slot = (void *)other;
    spin(1000, &n);
    printf("%ld %ld\n", rounds, (long)n);
    return 0;
}
