/* The job every daemon runs in benches/compare: appends "SECONDS.NANOSECONDS INDEX\n" to the
 * file argv[1] with one write(2) on an O_APPEND descriptor (lines never interleave). Built
 * static, so its own start costs no dynamic loading. */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct timespec now;
    char line[64];
    if (argc < 3) return 2;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(line, sizeof line, "%lld.%09ld %s\n", (long long)now.tv_sec, now.tv_nsec, argv[2]);
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return 1;
    return write(fd, line, (size_t)n) == n ? 0 : 1;
}
