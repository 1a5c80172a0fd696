/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private directories for roots built from files, removed on exit, on signals, or by the next run
 * when their process is gone (private-tmp.h). */
#include "base/private-tmp.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

/* Deeper than any archive member may be (ARCHIVE_MAX_DEPTH, 64) or sysfs goes. */
#define REMOVE_MAX_DEPTH 72
/* Private directories one process holds at once (report audits its archives one after another). */
#define REGISTERED_MAX 64

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* What the signal handler removes. A slot is written with the signals blocked, then marked used. */
static char registered[REGISTERED_MAX][PATH_MAX];
static volatile sig_atomic_t registered_used[REGISTERED_MAX];

const char *private_tmp_base(void)
{
        const char *tmp = getenv("TMPDIR");
        if (!tmp || *tmp != '/')
                tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
        return tmp;
}

struct dirent64_raw {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

/*
 * Remove NAME in DFD and what is under it, never following a link. Only system calls that are
 * async-signal-safe (getdents64 rather than readdir, which allocates), so the signal handler uses
 * it too. TYPE is the entry's d_type (DT_UNKNOWN: find out): a file or link takes one unlinkat.
 * Entries removed while a directory is read may make the kernel skip others: the directory is read
 * again while rmdir says it is not empty yet.
 */
static void remove_tree_at(int dfd, const char *name, unsigned char type, int depth)
{
        if (type != DT_DIR) {
                if (unlinkat(dfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
                        return;
                struct stat st; /* unlink(2) of a directory: EISDIR on Linux, EPERM by POSIX */
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        return;
        }
        int fd = depth < REMOVE_MAX_DEPTH ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        for (int pass = 0; pass < 4; pass++) {
                if (fd >= 0) {
                        char buf[2048] __attribute__((aligned(8)));
                        long n;
                        lseek(fd, 0, SEEK_SET);
                        while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
                                for (long off = 0; off < n;) {
                                        struct dirent64_raw *de = (struct dirent64_raw *)(buf + off);
                                        off += de->d_reclen;
                                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                                remove_tree_at(fd, de->d_name, de->d_type, depth + 1);
                                }
                }
                if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY || fd < 0)
                        break;
        }
        if (fd >= 0)
                close(fd);
}

static void on_signal(int sig)
{
        int saved = errno;
        for (size_t i = 0; i < REGISTERED_MAX; i++)
                if (registered_used[i])
                        remove_tree_at(AT_FDCWD, registered[i], DT_UNKNOWN, 0);
        /* Then die of the signal as if no handler had been there (the exit status says which). */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(sig, &dfl, NULL);
        raise(sig);
        errno = saved;
}

/* The handler, for each signal the process does not ignore (nohup's SIGHUP stays ignored). */
static void install_handler(void)
{
        static bool done;
        if (done)
                return;
        done = true;
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ARRAY_SIZE(cleanup_signals); i++)
                sigaddset(&sa.sa_mask, cleanup_signals[i]);
        for (size_t i = 0; i < ARRAY_SIZE(cleanup_signals); i++) {
                struct sigaction old;
                if (sigaction(cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
                    !(old.sa_flags & SA_SIGINFO))
                        sigaction(cleanup_signals[i], &sa, NULL);
        }
}

/* Block or unblock the cleanup signals (OLD: the mask to go back to). */
static void block_signals(sigset_t *old)
{
        sigset_t set;
        sigemptyset(&set);
        for (size_t i = 0; i < ARRAY_SIZE(cleanup_signals); i++)
                sigaddset(&set, cleanup_signals[i]);
        sigprocmask(SIG_BLOCK, &set, old);
}

static void set_registered(const char *dir, bool on)
{
        if (strlen(dir) >= PATH_MAX)
                return;
        sigset_t old;
        block_signals(&old);
        for (size_t i = 0; i < REGISTERED_MAX; i++) {
                if (on && !registered_used[i]) {
                        memcpy(registered[i], dir, strlen(dir) + 1);
                        registered_used[i] = 1;
                        break;
                }
                if (!on && registered_used[i] && streq(registered[i], dir)) {
                        registered_used[i] = 0;
                        break;
                }
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The inode number of this process's PID namespace (0 when /proc cannot say: then no stale
 * directory can be judged, and none is removed). */
static unsigned long long pid_ns(void)
{
        struct stat st;
        return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The decimal number at *P (digits only, no sign), with *P moved past it; false when there is none
 * or it overflows. */
static bool take_number(const char **p, unsigned long long *ret)
{
        const char *s = *p;
        unsigned long long v = 0;
        if (!isdigit((unsigned char)*s))
                return false;
        for (; isdigit((unsigned char)*s); s++) {
                if (v > (ULLONG_MAX - 9) / 10)
                        return false;
                v = v * 10 + (unsigned)(*s - '0');
        }
        *p = s;
        *ret = v;
        return true;
}

/* Does NAME follow our naming (llmtune-KIND-NS-PID-XXXXXX), with its namespace and PID in *NS and
 * *PID? */
static bool our_name(const char *name, unsigned long long *ns, long *pid)
{
        static const char *const kinds[] = {"llmtune-archive-", "llmtune-topology-"};
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
                if (!startswith(name, kinds[i]))
                        continue;
                const char *p = name + strlen(kinds[i]);
                unsigned long long n;
                if (!take_number(&p, ns) || *p++ != '-' || !take_number(&p, &n) || *p++ != '-' || n == 0 ||
                    n > INT_MAX || strlen(p) != 6 || strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                            "0123456789") != 6)
                        return false;
                *pid = (long)n;
                return true;
        }
        return false;
}

int private_tmp_sweep(const char *base)
{
        unsigned long long ns = pid_ns();
        if (!ns)
                return 0;
        _cleanup_close_ int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = bfd >= 0 ? fdopendir(bfd) : NULL;
        if (!d)
                return 0;
        int dfd = TAKE_FD(bfd); /* the stream has it; openat and the removal use it too */
        int removed = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                unsigned long long their_ns;
                long pid;
                if (!our_name(de->d_name, &their_ns, &pid) || their_ns != ns || pid == (long)getpid())
                        continue;
                if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
                        continue; /* it runs (perhaps as another user: EPERM) */
                /* A directory of ours, not a link to one; owned by this user. */
                _cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid())
                        continue;
                remove_tree_at(dfd, de->d_name, DT_DIR, 0);
                removed++;
        }
        return removed;
}

int private_tmp_make(const char *kind, char **ret_dir)
{
        const char *base = private_tmp_base();
        private_tmp_sweep(base);
        char *dir = xasprintf("%s/llmtune-%s-%llu-%ld-XXXXXX", base, kind, pid_ns(), (long)getpid());
        install_handler();
        /* Registered before it exists: a signal between mkdtemp and the registration would leave it. */
        sigset_t old;
        block_signals(&old);
        if (!mkdtemp(dir)) {
                int rc = -errno;
                sigprocmask(SIG_SETMASK, &old, NULL);
                free(dir);
                return rc;
        }
        set_registered(dir, true);
        sigprocmask(SIG_SETMASK, &old, NULL);
        *ret_dir = dir;
        return 0;
}

void private_tmp_remove(const char *dir)
{
        remove_tree_at(AT_FDCWD, dir, DT_UNKNOWN, 0);
        set_registered(dir, false);
}
