/* Known I/O in known regions, for the io service: in "write_phase" the
 * program writes 3 x 4096 bytes with write and 1,000 with pwrite at
 * offset 20,000 (a 21,000-byte file); in "read_phase" it reads the whole
 * file back with stdio (fopen, fread, fclose). The file is the first
 * argument. */
#include <caliper/cali.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char* argv[]) {
    if (argc < 2) {
        fprintf(stderr, "usage: io FILE\n");
        return 2;
    }
    static char buffer[65536];
    memset(buffer, 'x', sizeof buffer);

    CALI_MARK_BEGIN("write_phase");
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) {
        perror("io: open");
        return 1;
    }
    for (int i = 0; i < 3; ++i) {
        if (write(fd, buffer, 4096) != 4096) {
            perror("io: write");
            return 1;
        }
    }
    if (pwrite(fd, buffer, 1000, 20000) != 1000) {
        perror("io: pwrite");
        return 1;
    }
    close(fd);
    CALI_MARK_END("write_phase");

    CALI_MARK_BEGIN("read_phase");
    FILE* file = fopen(argv[1], "r");
    size_t total = 0, n;
    while ((n = fread(buffer, 1, sizeof buffer, file)) > 0) {
        total += n;
    }
    fclose(file);
    CALI_MARK_END("read_phase");

    printf("io: read %zu bytes\n", total);
    return 0;
}
