/* A PAM module for crond's tests, built by the tests with `cc -shared -fPIC`. It declares what
 * it uses itself, so no -dev package is needed. Arguments (all optional):
 *   log=PATH    appends one line per call: "setcred establish", "setcred delete",
 *               "open_session", "close_session"
 *   open=PATH   pam_sm_open_session opens PATH (created if missing) without O_CLOEXEC and
 *               leaves it open, as a careless module would
 *   fail_open   pam_sm_open_session fails (PAM_SESSION_ERR)
 *   addgroup=GID  pam_sm_setcred(PAM_ESTABLISH_CRED) adds GID to the process's supplementary
 *               groups (getgroups, then setgroups with one more), as pam_group does
 * Built with -DTHREAD_IN_CONSTRUCTOR -pthread, its ELF constructor starts a thread that idles
 * for ever. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef THREAD_IN_CONSTRUCTOR
#include <pthread.h>
#endif

typedef struct pam_handle pam_handle_t;

#define PAM_SUCCESS 0
#define PAM_SESSION_ERR 14
#define PAM_CRED_ERR 17
#define PAM_ESTABLISH_CRED 0x0002
#define PAM_DELETE_CRED 0x0004

static const char *arg(int argc, const char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], name, n) == 0 && (argv[i][n] == '=' || argv[i][n] == '\0'))
            return argv[i][n] == '=' ? argv[i] + n + 1 : argv[i] + n;
    }
    return NULL;
}

static void note(int argc, const char **argv, const char *what)
{
    const char *path = arg(argc, argv, "log");
    if (path == NULL)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    (void)!write(fd, what, strlen(what));
    (void)!write(fd, "\n", 1);
    close(fd);
}

int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

/* Adds `gid` to this process's supplementary groups; 0 on success. */
static int add_group(gid_t gid)
{
    int n = getgroups(0, NULL);
    if (n < 0)
        return -1;
    gid_t *groups = malloc(((size_t)n + 1) * sizeof *groups);
    if (groups == NULL)
        return -1;
    n = getgroups(n, groups);
    int r = n < 0 ? -1 : 0;
    if (r == 0) {
        groups[n] = gid;
        r = setgroups((size_t)n + 1, groups);
    }
    free(groups);
    return r;
}

int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    if (flags & PAM_DELETE_CRED) {
        note(argc, argv, "setcred delete");
    } else if (flags & PAM_ESTABLISH_CRED) {
        note(argc, argv, "setcred establish");
        const char *gid = arg(argc, argv, "addgroup");
        if (gid != NULL && add_group((gid_t)strtoul(gid, NULL, 10)) != 0)
            return PAM_CRED_ERR;
    } else {
        note(argc, argv, "setcred other");
    }
    return PAM_SUCCESS;
}

int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags;
    note(argc, argv, "open_session");
    const char *path = arg(argc, argv, "open");
    if (path != NULL)
        (void)open(path, O_RDONLY | O_CREAT, 0644);
    return arg(argc, argv, "fail_open") != NULL ? PAM_SESSION_ERR : PAM_SUCCESS;
}

int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags;
    note(argc, argv, "close_session");
    return PAM_SUCCESS;
}

#ifdef THREAD_IN_CONSTRUCTOR
static void *idle(void *unused)
{
    (void)unused;
    for (;;)
        pause();
    return NULL;
}

__attribute__((constructor)) static void start_a_thread(void)
{
    pthread_t thread;
    if (pthread_create(&thread, NULL, idle, NULL) == 0)
        pthread_detach(thread);
}
#endif
