/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trust in the files llmtune takes as input: the one policy (trust.h). */
#include "base/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Who besides root may own what llmtune takes: the user it runs as, and the user who started it
 * (directly or through sudo). */
static bool trusted_owner(uid_t uid)
{
        if (uid == 0 || uid == geteuid() || uid == getuid())
                return true;
        const char *s = getenv("SUDO_UID");
        if (!s || !*s)
                return false;
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        return !*end && v == (unsigned long)uid;
}

static char *cannot_check(const char *name, int err)
{
        return xasprintf("who may change %s cannot be checked: %s", name, strerror(err));
}

char *trust_fd_problem(int fd, const char *name)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return cannot_check(name, errno);
        /* Only reached through O_PATH|O_NOFOLLOW on a path that changed while it was walked: a link
         * is never what is taken, its target is. */
        if (S_ISLNK(st.st_mode))
                return cannot_check(name, ELOOP);
        if (!trusted_owner(st.st_uid))
                return xasprintf("%s is owned by uid %u, neither root nor the user running llmtune", name,
                                 (unsigned)st.st_uid);
        mode_t m = st.st_mode;
        /* A sticky directory (/tmp) lets others add entries but not replace someone else's. */
        if (S_ISDIR(m) && (m & S_ISVTX))
                return NULL;
        if (m & S_IWOTH)
                return xasprintf("%s is writable by every user (mode %04o)", name, (unsigned)(m & 07777));
        if (m & S_IWGRP)
                return xasprintf("%s is writable by group %u (mode %04o)", name, (unsigned)st.st_gid,
                                 (unsigned)(m & 07777));
        return NULL;
}

/* The directories of REAL (a canonical path) from "/" down, and REAL itself, each opened below the
 * one before with O_PATH|O_NOFOLLOW, so what is judged is what the path names, not a link planted
 * after realpath looked. FDS gets N+1 descriptors (N: the number of components), ENDS the length of
 * the prefix of REAL each names (0 for "/"). Returns 0, -ENOENT (gone meanwhile) or -errno. */
static int open_components(const char *real, int *fds, size_t *ends, size_t *ret_n)
{
        size_t n = 0;
        fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ends[0] = 0;
        if (fds[0] < 0)
                return -errno;
        for (const char *p = real; *p;) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                const char *e = strchrnul(p, '/');
                _cleanup_free_ char *comp = xstrndup(p, (size_t)(e - p));
                int fd = openat(fds[n], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        *ret_n = n;
                        return -errno;
                }
                fds[++n] = fd;
                ends[n] = (size_t)(e - real);
                p = e;
        }
        *ret_n = n;
        return 0;
}

/* Judge REAL's components open at FDS (N+1 of them): the file first, then each directory from its
 * own up to "/", the order in which the problems have always been told. SAME: REAL is the path the
 * user gave. */
static char *judge_components(const char *real, bool same, const int *fds, const size_t *ends, size_t n)
{
        _cleanup_free_ char *file = same ? xstrdup("the file itself") : xasprintf("the file %s", real);
        char *why = trust_fd_problem(fds[n], file);
        for (size_t k = n; !why && k-- > 0;) {
                _cleanup_free_ char *dir = k ? xstrndup(real, ends[k]) : xstrdup("/");
                _cleanup_free_ char *name = xasprintf("its directory %s", dir);
                why = trust_fd_problem(fds[k], name);
        }
        return why;
}

/* The path the open descriptor FD names now (the kernel's /proc/self/fd link): what its
 * directories are judged by. NULL with errno when it cannot be told. */
static char *fd_path(int fd)
{
        char link[64], buf[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, sizeof(buf) - 1);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        if (buf[0] != '/') { /* "anon_inode:...", a pipe: no file of a directory */
                errno = ENOENT;
                return NULL;
        }
        return xstrdup(buf);
}

/* Is the descriptor A the same file as B? */
static bool same_file(int a, int b)
{
        struct stat sa, sb;
        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

char *trust_opened_problem(int fd, const char *shown)
{
        if (geteuid() != 0)
                return NULL;
        _cleanup_free_ char *real = fd_path(fd);
        if (!real)
                return cannot_check(shown, errno);
        size_t slots = 2;
        for (const char *p = real; *p; p++)
                slots += *p == '/';
        _cleanup_free_ int *fds = xcalloc(slots, sizeof(*fds));
        _cleanup_free_ size_t *ends = xcalloc(slots, sizeof(*ends));
        size_t n = 0;
        int rc = open_components(real, fds, ends, &n);
        /* What the walk reached must be the file that is open: a file moved, replaced or unlinked
         * (" (deleted)") since it was opened is not judged by the directories of another. */
        if (rc == 0 && !same_file(fds[n], fd))
                rc = -ESTALE;
        char *why = rc < 0 ? cannot_check(rc == -ESTALE ? shown : n ? real : "/", -rc)
                           : judge_components(real, streq(real, shown), fds, ends, n);
        for (size_t k = 0; k <= n && fds[k] >= 0; k++)
                close(fds[k]);
        return why;
}

char *trust_problem(const char *path)
{
        if (geteuid() != 0)
                return NULL;
        _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
        /* Missing: the loader reports it. Any other failure to check (a path over PATH_MAX, a
         * directory that cannot be searched) is a refusal, never "no problem". */
        if (fd < 0)
                return errno == ENOENT ? NULL : cannot_check(path, errno);
        return trust_opened_problem(fd, path);
}
