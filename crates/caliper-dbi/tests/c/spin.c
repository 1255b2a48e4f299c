/* Spends about half a second of CPU time in spin, called from outer:
 * built with frame pointers, every sample's call chain should read
 * main > outer > spin. */
#include <stdio.h>
#include <time.h>

volatile double sink;

__attribute__((noipa)) void spin(double seconds) {
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    while (clock() < end)
        for (int i = 0; i < 1000; i++) sink += i * 0.5;
}

__attribute__((noipa)) int outer(void) {
    spin(0.5);
    return sink > 0 ? 6 : 7;
}

int main(void) {
    int code = outer();
    printf("spun\n");
    return code;
}
