/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host-read vet, the fallback of the sandbox (host-vet.h). */
#include "base/host-vet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounded: a tree of more than VET_MAX entries is refused rather than walked for ever. */
#define VET_MAX 500000

struct vet {
        struct root *r;
        size_t seen;
        char *why;
};

static void vet_dir(int dfd, const char *rel, struct vet *v);

/* The entry's type from getdents' d_type; one fstatat only where the file system gives none. */
static unsigned entry_type(int dfd, const char *name, unsigned char d_type)
{
        struct stat st;
        if (d_type != DT_UNKNOWN)
                return d_type;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return DT_UNKNOWN;
        return S_ISDIR(st.st_mode)    ? DT_DIR
               : S_ISLNK(st.st_mode)  ? DT_LNK
               : S_ISREG(st.st_mode)  ? DT_REG
               : S_ISFIFO(st.st_mode) ? DT_FIFO
               : S_ISCHR(st.st_mode)  ? DT_CHR
               : S_ISBLK(st.st_mode)  ? DT_BLK
                                      : DT_SOCK;
}

static const char *special(mode_t m)
{
        return S_ISFIFO(m) ? "FIFO" : S_ISCHR(m) ? "character device" : S_ISBLK(m) ? "block device" : S_ISSOCK(m) ? "socket" : NULL;
}

/* A link is fit when the host kernel, following it as the library will (from its directory, by
 * the host's rules), reaches the very file the root handle reaches (RESOLVE_IN_ROOT), or nothing.
 * Not judged by its text: a relative link that stays in the tree by its words can still pass
 * through another link that does not (esc -> /host, cpumap -> ../../../../../esc/fifo). */
static void vet_link(int dfd, const char *rel, const char *name, struct vet *v)
{
        struct stat hs, rs;
        _cleanup_close_ int hfd = openat(dfd, name, O_PATH | O_CLOEXEC);
        if (hfd < 0 || fstat(hfd, &hs) < 0)
                return; /* leads nowhere on the host: the library finds nothing there either */
        _cleanup_free_ char *p = xasprintf("%s/%s", rel, name);
        _cleanup_close_ int rfd = root_open(v->r, p, O_PATH, 0);
        if (rfd < 0 || fstat(rfd, &rs) < 0 || hs.st_dev != rs.st_dev || hs.st_ino != rs.st_ino)
                v->why = xasprintf("%s is a link leading out of the tree", p);
        else if (special(hs.st_mode))
                v->why = xasprintf("%s is a link to a %s, not a regular file", p, special(hs.st_mode));
}

static void vet_entry(int dfd, const char *rel, const char *name, unsigned type, struct vet *v)
{
        if (type == DT_DIR) {
                int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) {
                        _cleanup_free_ char *p = xasprintf("%s/%s", rel, name);
                        vet_dir(sub, p, v);
                }
        } else if (type == DT_LNK)
                vet_link(dfd, rel, name, v);
        else if (type != DT_REG && type != DT_UNKNOWN)
                v->why = xasprintf("%s/%s is a %s, not a regular file", rel, name,
                                   type == DT_FIFO  ? "FIFO"
                                   : type == DT_CHR ? "character device"
                                   : type == DT_BLK ? "block device"
                                                    : "socket");
}

/* Takes DFD (closed here). getdents64 straight into a buffer, no DIR: a tree's walk is ~1,800
 * directories, and opendir's dup, fcntl and second close were a third of its system calls. */
static void vet_dir(int dfd, const char *rel, struct vet *v)
{
        /* 32 KiB: a directory of a few hundred entries in one call; a heap buffer, as the
         * recursion is as deep as the tree. */
        size_t cap = 32768;
        _cleanup_free_ char *buf = xmalloc(cap);
        while (!v->why) {
                ssize_t n = getdents64(dfd, buf, cap);
                if (n <= 0)
                        break; /* end, or unreadable: the library will not read it either */
                for (ssize_t off = 0; off < n && !v->why;) {
                        struct dirent64 *de = (struct dirent64 *)(buf + off);
                        off += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (++v->seen > VET_MAX) {
                                v->why = xasprintf("more than %d entries to vet", VET_MAX);
                                break;
                        }
                        vet_entry(dfd, rel, de->d_name, entry_type(dfd, de->d_name, de->d_type), v);
                }
        }
        close(dfd);
}

/* What hwloc (proc, sys) and libkmod (the modprobe.d directories, lib/modules) are given. Each is
 * opened as the library opens it, by host path, and must be the directory the root handle finds
 * there (a merged /usr's lib -> usr/lib is, an absolute lib -> /usr/lib is not). */
static char *vet_tree(struct root *r)
{
        struct vet v = {.r = r};
        static const char *const tops[] = {"proc", "sys", "etc/modprobe.d", "run/modprobe.d", "usr/local/lib/modprobe.d",
                                           "usr/lib/modprobe.d", "lib/modprobe.d", "lib/modules"};
        _cleanup_free_ char *host = root_host_path(r, "/");
        for (size_t i = 0; i < ARRAY_SIZE(tops) && !v.why; i++) {
                _cleanup_free_ char *hp = xasprintf("%s/%s", host, tops[i]);
                _cleanup_close_ int fd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* nothing there for the library to read either */
                struct stat hs, rs;
                _cleanup_close_ int rfd = root_open(r, tops[i], O_PATH | O_DIRECTORY, 0);
                if (rfd < 0 || fstat(rfd, &rs) < 0 || fstat(fd, &hs) < 0 || hs.st_dev != rs.st_dev ||
                    hs.st_ino != rs.st_ino) {
                        v.why = xasprintf("/%s leads out of the tree", tops[i]);
                        break;
                }
                _cleanup_free_ char *rel = xasprintf("/%s", tops[i]);
                vet_dir(TAKE_FD(fd), rel, &v);
        }
        return v.why;
}

const char *host_vet(struct root *r)
{
        struct root_vet *rv = root_vet_state(r);
        if (!rv->done) {
                rv->why = vet_tree(r);
                rv->done = true;
        }
        return rv->why;
}
