/* The floor of benches/compare: what starting N jobs costs with nothing but vfork and exec.
 * floor AT N STAMP FILE: sleeps until the epoch second AT, then for each i vforks and execs
 * `sh -c 'STAMP FILE i'` as fast as it can (vfork, as busybox's crond does: no copy of the
 * parent's page tables), reaping whatever has exited between starts (never waiting for one),
 * and waits for the rest at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    long at = atol(argv[1]);
    int n = atoi(argv[2]);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double left = (double)at - ((double)now.tv_sec + now.tv_nsec / 1e9);
    if (left > 0) {
        struct timespec pause = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        nanosleep(&pause, NULL);
    }
    char cmd[4096];
    for (int i = 0; i < n; i++) {
        snprintf(cmd, sizeof cmd, "%s %s %d", argv[3], argv[4], i);
        pid_t pid = vfork();
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
    }
    while (wait(NULL) > 0) {
    }
    return 0;
}
