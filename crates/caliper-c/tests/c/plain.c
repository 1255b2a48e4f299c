/* A program that never calls Caliper: profiled only through LD_PRELOAD and
 * CALI_CONFIG. With "close" it closes stderr (stdio), with "close2" file
 * descriptor 2, before it exits. */
#include <stdio.h>
#include <unistd.h>
#include <string.h>
int main(int argc, char** argv) {
    printf("plain program\n");
    if (argc > 1 && strcmp(argv[1], "close") == 0) { fclose(stderr); }
    if (argc > 1 && strcmp(argv[1], "close2") == 0) { close(2); }
    return 0;
}
