/* A library whose code holds absolute addresses (non-PIC, large code
 * model, linked with -z notext): the dynamic linker writes them into its
 * code at load (DT_TEXTREL). With -DMAIN, a program that calls it N times
 * (N its argument) and prints the count the library kept. */
#ifdef MAIN
#include <stdio.h>
#include <stdlib.h>
int bump(void);
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int last = 0;
    for (int i = 0; i < n; i++)
        last = bump();
    printf("%d\n", last);
    return 0;
}
#else
static int counter;
__attribute__((noinline)) int *where(void) { return &counter; }
int bump(void) { return ++*where(); }
#endif
