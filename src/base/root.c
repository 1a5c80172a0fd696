/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/root.h"

#include "base/archive-root.h"
#include "base/deadline.h"
#include "base/fileattr.h"
#include "base/parse.h"
#include "base/sandbox.h"
#include "base/test-hooks.h"
#include "base/topology-root.h"

#include <dirent.h>
#include <fnmatch.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

struct cached {
        char *path;
        char *data; /* NULL when err != 0 */
        size_t len;
        int err;
        struct cached *next;
};

#define CACHE_BUCKETS 1024
#define PDIR_SLOTS 4
#define DEV_SLOTS 8
/* openat2 attempts on EAGAIN before one lookup falls back to the component walk. */
#define OPENAT2_EAGAIN_TRIES 16

/* One recorded path (root_record_start); chained by hash, listed in order in recs. */
struct recd {
        struct root_rec rec;
        char *path;
        void *data;
        struct recd *next;
};

struct recorder {
        struct recd *buckets[CACHE_BUCKETS];
        struct root_rec *v; /* copies, rebuilt by root_recorded */
        struct recd **order;
        size_t n, cap;
};

/* Names gathered without content (root_mark_unread). */
struct unread {
        ino_t ino; /* found by inode: a name only is reached through links as often as not */
        int err;
        struct unread *next;
};

struct root {
        int fd;
        char *path;
        char *archive_dir; /* the private unpacked copy of an archive root, removed by root_free */
        bool topology;     /* archive_dir was written from an lstopo XML export */
        struct recorder *rec;
        struct unread *unread[CACHE_BUCKETS];
        bool live;
        bool host; /* the directory is the host's "/" (live, or gather's view of it as a tree) */
        bool runs_here; /* its proc/ and sys/ are this kernel's own (root_runs_here) */
        bool has_unread;
        bool no_openat2;
        unsigned opened;
        struct cached *cache[CACHE_BUCKETS];
        /* The directories open_parent opened last (O_PATH) and their normalized paths, the
         * least recently used replaced first: a probe reads the links or stats of one directory's entries in
         * a row (/sys/bus/pci/devices/X for every PCI function, /proc/N), or alternating with
         * one other (an InfiniBand device's link, then its PCI function's), and resolving the
         * same directory for each was 100 openat2 calls of an audit on a 384-CPU host.
         * Dropped by root_forget, which every write through the root handle calls, so a
         * directory replaced by a change is looked up again. */
        char *pdir_path[PDIR_SLOTS];
        int pdir_fd[PDIR_SLOTS];
        unsigned pdir_resolved;
        struct root_vet vet;
        /* Devices whose file system answers every read (fs_answers), and those that may not: a
         * statfs per device, not per file. */
        struct {
                dev_t dev;
                bool apart;
        } devs[DEV_SLOTS];
        unsigned ndevs;
};

int root_new(const char *path, struct root **ret)
{
        char *why = NULL;
        int rc = root_new_why(path, ret, &why);
        free(why);
        return rc;
}

/* DIR's NAME (no link followed) is a mount of the kernel's own file system of that TYPE. */
static bool kernel_fs(int dirfd, const char *name, unsigned long type)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct statfs sf;
        return fd >= 0 && fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == type;
}

int root_new_why(const char *path, struct root **ret, char **ret_why)
{
        *ret_why = NULL;
        _cleanup_free_ char *archive_dir = NULL;
        struct archive_unread unread = {0};
        struct stat lst;
        /* A regular file is an archive made by `llmtune gather`: vetted and unpacked by
         * archive-root.c into a private directory, which then serves as the root like any tree;
         * or an lstopo XML export, from which topology-root.c writes such a directory. */
        if (stat(path, &lst) == 0 && S_ISREG(lst.st_mode)) {
                int rc = topology_file_is_xml(path) ? topology_root_build(path, &archive_dir, ret_why)
                                                    : archive_root_unpack(path, &archive_dir, &unread, ret_why);
                if (rc < 0)
                        return rc;
        }
        bool topology = archive_dir && topology_file_is_xml(path);
        int fd = open(archive_dir ? archive_dir : path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int e = -errno;
                if (archive_dir)
                        archive_root_remove(archive_dir);
                archive_unread_done(&unread);
                return e;
        }
        struct root *r = xcalloc(1, sizeof(*r));
        r->fd = fd;
        r->path = xstrdup(path);
        r->archive_dir = archive_dir;
        r->topology = topology;
        for (size_t i = 0; i < PDIR_SLOTS; i++)
                r->pdir_fd[i] = -1;
        archive_dir = NULL;
        for (size_t i = 0; i < unread.paths.n; i++)
                root_mark_unread(r, unread.paths.v[i], unread.err[i]);
        archive_unread_done(&unread);
        /* The live system is the one whose "/" is this directory, however it was spelt. */
        struct stat a, b;
        r->live = fstat(fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        r->host = r->live;
        r->runs_here = r->live || (!r->archive_dir && kernel_fs(fd, "proc", PROC_SUPER_MAGIC) &&
                                   kernel_fs(fd, "sys", SYSFS_MAGIC));
        r->no_openat2 = getenv("LLMTUNE_NO_OPENAT2") != NULL;
        *ret = r;
        return 0;
}

static void pdir_drop(struct root *r)
{
        for (size_t i = 0; i < PDIR_SLOTS; i++) {
                if (r->pdir_fd[i] >= 0)
                        close(r->pdir_fd[i]);
                r->pdir_fd[i] = -1;
                free(r->pdir_path[i]);
                r->pdir_path[i] = NULL;
        }
}

struct root *root_free(struct root *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < CACHE_BUCKETS; i++)
                for (struct cached *c = r->cache[i], *n; c; c = n) {
                        n = c->next;
                        free(c->path);
                        free(c->data);
                        free(c);
                }
        for (size_t i = 0; i < CACHE_BUCKETS; i++)
                for (struct unread *u = r->unread[i], *n; u; u = n) {
                        n = u->next;
                        free(u);
                }
        if (r->rec) {
                for (size_t i = 0; i < r->rec->n; i++) {
                        free(r->rec->order[i]->path);
                        free(r->rec->order[i]->data);
                        free(r->rec->order[i]);
                }
                free(r->rec->order);
                free(r->rec->v);
                free(r->rec);
        }
        pdir_drop(r);
        free(r->vet.why);
        close(r->fd);
        if (r->archive_dir) {
                archive_root_remove(r->archive_dir);
                free(r->archive_dir);
        }
        free(r->path);
        free(r);
        return NULL;
}

const char *root_path(const struct root *r) { return r->path; }
bool root_is_live(const struct root *r) { return r->live; }
bool root_is_host(const struct root *r) { return r->host; }
bool root_runs_here(const struct root *r) { return r->runs_here; }
int root_dirfd(const struct root *r) { return r->fd; }
struct root_vet *root_vet_state(struct root *r) { return &r->vet; }
bool root_is_archive(const struct root *r) { return r->archive_dir != NULL; }
bool root_is_topology(const struct root *r) { return r->topology; }
unsigned root_files_opened(const struct root *r) { return r->opened; }
unsigned root_dirs_resolved(const struct root *r) { return r->pdir_resolved; }

char *root_host_path(const struct root *r, const char *path)
{
        while (*path == '/')
                path++;
        if (r->live)
                return xasprintf("/%s", path);
        const char *dir = r->archive_dir ? r->archive_dir : r->path;
        const char *sep = endswith(dir, "/") ? "" : "/";
        return xasprintf("%s%s%s", dir, sep, path);
}

/*
 * Fallback for kernels without openat2 (before 5.6): walk the path one component at a time,
 * expanding symlinks ourselves with "/" and ".." clamped at the root, like RESOLVE_IN_ROOT.
 * It answers as openat2 does (tests/unit/test-root.c runs both): -ENAMETOOLONG for a path of
 * PATH_MAX bytes or more, -ELOOP after 40 links, and any depth a valid path can have (the stack of
 * directories that ".." returns to grows as needed).
 */
/* Where a walk stands: the directory reached (CUR), the ones above it that ".." returns to (a
 * stack that grows as needed), the path being walked and the links followed so far. */
struct walk {
        int cur;
        int *stack;
        size_t depth, room;
        char *todo;
        int links;
};

static void walk_done(struct walk *w)
{
        if (w->cur >= 0)
                close(w->cur);
        while (w->depth > 0)
                close(w->stack[--w->depth]);
        free(w->stack);
        free(w->todo);
}

/* One directory up, clamped at the root as RESOLVE_IN_ROOT clamps "..". */
static void walk_up(struct walk *w)
{
        if (w->depth > 0) {
                close(w->cur);
                w->cur = w->stack[--w->depth];
        }
}

/* Into the directory P of the current one (never through a link). Returns 0 or -errno. */
static int walk_down(struct walk *w, const char *p)
{
        int next = openat(w->cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
                return -errno;
        if (w->depth == w->room) {
                w->room = w->room ? 2 * w->room : 32;
                w->stack = xrealloc(w->stack, w->room * sizeof(*w->stack));
        }
        w->stack[w->depth++] = w->cur;
        w->cur = next;
        return 0;
}

/* The link P of the current directory replaced in the path by its target, then REST (what
 * followed the link; NULL when the link was the last component: no "/" either, which would make
 * the target's last component a directory lookup, ENOTDIR for a file). An absolute target starts
 * again from the root. *POS is where the walk goes on. Returns 0, -ELOOP after 40 links, or -errno. */
static int walk_follow(struct walk *w, const char *p, const char *rest, char **pos)
{
        char target[4096];
        ssize_t n = readlinkat(w->cur, p, target, sizeof(target) - 1);
        if (n < 0 || ++w->links > 40)
                return n < 0 ? -errno : -ELOOP;
        target[n] = '\0';
        char *next = rest ? xasprintf("%s/%s", target, rest) : xstrdup(target);
        if (target[0] == '/')
                while (w->depth > 0)
                        walk_up(w);
        free(w->todo); /* P and REST pointed into it */
        w->todo = *pos = next;
        return 0;
}

/* The last component P of the walk opened in DIR (not through a link). Returns an fd or -errno. */
static int walk_open_last(int dir, const char *p, int flags, mode_t mode)
{
        int fd = openat(dir, p, flags | O_CLOEXEC | O_NOFOLLOW, mode);
        return fd < 0 ? -errno : fd;
}

static int walk_open(struct root *r, const char *path, int flags, mode_t mode, bool no_links)
{
        if (strlen(path) >= PATH_MAX)
                return -ENAMETOOLONG;
        _cleanup_(walk_done) struct walk w = {.cur = -1};
        w.todo = xstrdup(path);
        w.cur = dup(r->fd);
        if (w.cur < 0)
                return -errno;
        char *p = w.todo;
        for (;;) {
                while (*p == '/')
                        p++;
                if (!*p) {
                        /* Path named the root itself (or a directory chain ending in "/"). */
                        int fd = openat(w.cur, ".", flags | O_CLOEXEC, mode);
                        return fd < 0 ? -errno : fd;
                }
                char *slash = strchr(p, '/');
                bool last = !slash;
                if (slash)
                        *slash = '\0';
                if (streq(p, ".") || streq(p, "..")) {
                        if (streq(p, ".."))
                                walk_up(&w);
                        p = last ? (char *)"" : slash + 1;
                        continue;
                }
                struct stat st;
                if (fstatat(w.cur, p, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (last && errno == ENOENT && (flags & O_CREAT))
                                return walk_open_last(w.cur, p, flags, mode);
                        return -errno;
                }
                if (S_ISLNK(st.st_mode) && no_links)
                        return -ELOOP; /* RESOLVE_NO_SYMLINKS: no link anywhere on the way */
                if (S_ISLNK(st.st_mode) && (!last || !(flags & O_NOFOLLOW))) {
                        int rc = walk_follow(&w, p, last ? NULL : slash + 1, &p);
                        if (rc < 0)
                                return rc;
                        continue;
                }
                if (last)
                        return walk_open_last(w.cur, p, flags, mode);
                int rc = walk_down(&w, p);
                if (rc < 0)
                        return rc;
                p = slash + 1;
        }
}

static int open_in_root(struct root *r, const char *path, int flags, mode_t mode, bool no_links)
{
        while (*path == '/')
                path++;
        if (!*path)
                path = ".";
        if (!r->no_openat2) {
                struct open_how how = {
                        .flags = (uint64_t)(flags | O_CLOEXEC),
                        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (no_links ? RESOLVE_NO_SYMLINKS : 0),
                };
                /* EAGAIN: a rename or mount anywhere on the system raced a ".." of this lookup
                 * (sysfs links are full of them), and the kernel cannot prove the walk stayed in
                 * the root; openat2(2) says to retry. A busy host can keep that up, so after a
                 * bounded number of tries this one lookup takes the component walk, which no
                 * rename elsewhere disturbs. Never an error: the file is there all along. */
                for (unsigned attempt = 0; attempt < OPENAT2_EAGAIN_TRIES; attempt++) {
                        long fd = syscall(SYS_openat2, r->fd, path, &how, sizeof(how));
                        if (fd >= 0)
                                return (int)fd;
                        if (errno == EAGAIN)
                                continue;
                        if (errno != ENOSYS && errno != EPERM)
                                return -errno;
                        r->no_openat2 = true; /* old kernel or a seccomp filter: fall back for good */
                        break;
                }
        }
        return walk_open(r, path, flags, mode, no_links);
}

int root_open(struct root *r, const char *path, int flags, mode_t mode)
{
        deadline_enter(path);
        int fd = open_in_root(r, path, flags, mode, false);
        deadline_leave();
        return fd;
}

int root_open_nolinks(struct root *r, const char *path, int flags, mode_t mode)
{
        deadline_enter(path);
        int fd = open_in_root(r, path, flags, mode, true);
        deadline_leave();
        return fd;
}

static unsigned hash_path(const char *s) { return string_hash(s) % CACHE_BUCKETS; }

/* SIZE: the st_size of a regular file (0: unknown, as procfs says). A tree's files are read whole
 * by one read(2) with no second one to see the end; sysfs says 4096 for every attribute, so the
 * short first read there is followed by the read that returns 0, as for procfs. */
static int read_fd(int fd, size_t size, char **ret, size_t *ret_len)
{
        if (size >= ROOT_READ_MAX)
                size = 0; /* read to the end: -EFBIG as for any other oversized file */
        size_t cap = size ? size : 4096, len = 0;
        char *buf = xmalloc(cap + 1);
        for (;;) {
                if (size && len == size)
                        break;
                if (len == cap) {
                        if (cap >= ROOT_READ_MAX) {
                                free(buf);
                                return -EFBIG;
                        }
                        cap *= 2;
                        buf = xrealloc(buf, cap + 1);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = -errno;
                        free(buf);
                        return e;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        /* Cached for the run: most attributes are a few bytes, and 4 KiB each would make the
         * cache of a 384-CPU host's ~4000 files 16 MB. */
        if (len + 1 < cap / 2)
                buf = xrealloc(buf, len + 1);
        *ret = buf;
        *ret_len = len;
        return 0;
}

static char *normalize(const char *path)
{
        while (*path == '/')
                path++;
        return xstrdup(path);
}

static struct recd *rec_find(struct recorder *rc, const char *key, bool add)
{
        unsigned h = hash_path(key);
        for (struct recd *d = rc->buckets[h]; d; d = d->next)
                if (streq(d->path, key))
                        return d;
        if (!add)
                return NULL;
        struct recd *d = xcalloc(1, sizeof(*d));
        d->path = xstrdup(key);
        d->rec.path = d->path;
        d->next = rc->buckets[h];
        rc->buckets[h] = d;
        GREEDY_REALLOC(rc->order, rc->cap, rc->n + 1, 256);
        rc->order[rc->n++] = d;
        return d;
}

void root_view_as_tree(struct root *r) { r->live = false; }

void root_record_start(struct root *r)
{
        if (!r->rec)
                r->rec = xcalloc(1, sizeof(*r->rec));
}

void root_record(struct root *r, const char *path, unsigned kind, int err)
{
        if (!r->rec)
                return;
        _cleanup_free_ char *key = normalize(path);
        /* "a/b/" and "a/b" are one path */
        while (*key && endswith(key, "/"))
                key[strlen(key) - 1] = '\0';
        struct recd *d = rec_find(r->rec, key, true);
        d->rec.kinds |= kind;
        if (err && !d->rec.err)
                d->rec.err = err;
}

bool root_recording(const struct root *r) { return r->rec != NULL; }

void root_record_data(struct root *r, const char *path, const void *data, size_t len)
{
        if (!r->rec)
                return;
        root_record(r, path, ROOT_REC_FILE, 0);
        _cleanup_free_ char *key = normalize(path);
        struct recd *d = rec_find(r->rec, key, false);
        if (!d || d->data)
                return;
        d->data = xmalloc(len ? len : 1);
        memcpy(d->data, data, len);
        d->rec.data = d->data;
        d->rec.len = len;
}

const struct root_rec *root_recorded(const struct root *r, size_t *ret_n)
{
        *ret_n = 0;
        if (!r->rec)
                return NULL;
        struct recorder *rc = r->rec;
        rc->v = xrealloc(rc->v, (rc->n ? rc->n : 1) * sizeof(*rc->v));
        for (size_t i = 0; i < rc->n; i++)
                rc->v[i] = rc->order[i]->rec;
        *ret_n = rc->n;
        return rc->v;
}

void root_mark_unread(struct root *r, const char *path, int err)
{
        struct stat st;
        if (root_stat(r, path, &st, false) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
                return;
        struct unread *u = xcalloc(1, sizeof(*u));
        u->ino = st.st_ino;
        u->err = err < 0 ? err : -ENODATA;
        unsigned h = (unsigned)(st.st_ino % CACHE_BUCKETS);
        u->next = r->unread[h];
        r->unread[h] = u;
        r->has_unread = true;
}

/* 0, or the error reading the open file FD gave on the gathered machine. */
static int unread_err(const struct root *r, int fd)
{
        struct stat st;
        if (!r->has_unread || fstat(fd, &st) < 0)
                return 0;
        for (const struct unread *u = r->unread[st.st_ino % CACHE_BUCKETS]; u; u = u->next)
                if (u->ino == st.st_ino)
                        return u->err;
        return 0;
}

/* File systems whose reads come back: local disks and memory, and the kernel's own (statfs(2)
 * f_type, include/uapi/linux/magic.h). A file anywhere else (FUSE, NFS, CIFS, 9p, Ceph, or one
 * this list does not know) may sit on a server that never answers. */
static bool fs_answers(unsigned long type)
{
        static const unsigned long local[] = {
                EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, TMPFS_MAGIC, RAMFS_MAGIC, OVERLAYFS_SUPER_MAGIC,
                SQUASHFS_MAGIC,   F2FS_SUPER_MAGIC, MSDOS_SUPER_MAGIC, PROC_SUPER_MAGIC, SYSFS_MAGIC, ISOFS_SUPER_MAGIC,
                0x2fc12fc1 /* zfs */, 0xe0f5e1e2 /* erofs */, 0x2011bab0 /* exfat */, 0xca451a4e /* bcachefs */};
        for (size_t i = 0; i < ARRAY_SIZE(local); i++)
                if (type == local[i])
                        return true;
        return false;
}

/* Is FD (a regular file on device ST) to be read apart, under the deadline? */
static bool read_apart(struct root *r, int fd, const struct stat *st)
{
        for (unsigned i = 0; i < r->ndevs && i < DEV_SLOTS; i++)
                if (r->devs[i].dev == st->st_dev)
                        return r->devs[i].apart;
        struct statfs sf;
        bool apart = fstatfs(fd, &sf) < 0 || !fs_answers((unsigned long)sf.f_type);
        unsigned i = r->ndevs++ % DEV_SLOTS;
        r->devs[i].dev = st->st_dev;
        r->devs[i].apart = apart;
        return apart;
}

struct fd_read {
        int fd;
        size_t size;
};

/* sandbox_fn: the file read in the child, as read_fd reads it. */
static int read_in_child(void *arg, const char *root_path, struct sbuf *out)
{
        const struct fd_read *fr = arg;
        char *data;
        size_t len;
        int rc = read_fd(fr->fd, fr->size, &data, &len);
        if (rc < 0)
                return rc;
        sbuf_addn(out, data, len);
        free(data);
        return 0;
}

/* A file on a file system that may never answer (a hung FUSE or NFS server leaves its reader in a
 * wait that not even SIGKILL ends once the server has taken the request): read in a child, which
 * is left behind at the deadline instead of this process (-ETIMEDOUT). */
static int read_fd_apart(int fd, size_t size, char **ret, size_t *ret_len)
{
        struct fd_read fr = {.fd = fd, .size = size};
        _cleanup_free_ char *why = NULL;
        char *data = NULL;
        size_t len = 0;
        int rc = sandbox_apart(fd, read_in_child, &fr, &data, &len, &why);
        if (rc < 0)
                return rc;
        *ret = data;
        *ret_len = len;
        return 0;
}

/* KEY opened for reading without blocking and typed by fstat before anything is read: a FIFO
 * reads as empty or blocks, a device node is the host's device whatever tree it sits in; neither
 * is ever read as a file (-ENOTREG, "not a regular file"); an entry an archive holds only by name
 * gives the error reading it gave there. read(2) of a directory fails with EISDIR by itself.
 * Returns the descriptor (*ST its fstat, st_mode 0 when unknown) or -errno. */
static int open_for_read(struct root *r, const char *key, struct stat *st)
{
        _cleanup_close_ int fd = root_open(r, key, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
        int err = fd < 0 ? fd : unread_err(r, fd);
        if (err == -ENXIO && root_stat(r, key, st, true) == 0 && S_ISSOCK(st->st_mode))
                err = -ENOTREG; /* open(2) of a socket */
        if (err < 0)
                return err;
        r->opened++;
        if (fstat(fd, st) < 0)
                st->st_mode = 0;
        if (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
                return -ENOTREG;
        return TAKE_FD(fd);
}

int root_open_input(struct root *r, const char *path)
{
        _cleanup_free_ char *key = normalize(path);
        struct stat st;
        deadline_enter(key);
        int fd = open_for_read(r, key, &st);
        deadline_leave();
        root_record(r, key, ROOT_REC_FILE, fd < 0 ? fd : 0);
        return fd;
}

/* KEY's content into C (open_for_read). A file on a file system that may not answer is read
 * apart; any other operation that hangs is the guard's (deadline.h). */
static void read_guarded(struct root *r, const char *key, struct cached *c)
{
        struct stat st;
        _cleanup_close_ int fd = open_for_read(r, key, &st);
        if (fd < 0) {
                c->err = fd;
                return;
        }
        size_t size = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size : 0;
        if (S_ISREG(st.st_mode) && read_apart(r, fd, &st))
                c->err = read_fd_apart(fd, size, &c->data, &c->len);
        else
                c->err = read_fd(fd, size, &c->data, &c->len);
}

static void read_into(struct root *r, const char *key, struct cached *c)
{
        if (deadline_spent()) {
                c->err = -ETIME; /* not begun: the run's or the rule's time is over (never cached) */
                return;
        }
        deadline_enter(key);
        read_guarded(r, key, c); /* its descriptor closed inside the guard too */
        deadline_leave();
}

int root_read(struct root *r, const char *path, const char **ret, size_t *ret_len)
{
        _cleanup_free_ char *key = normalize(path);
        unsigned h = hash_path(key);
        struct cached *c;
        for (c = r->cache[h]; c; c = c->next)
                if (streq(c->path, key))
                        break;
        if (!c) {
                c = xcalloc(1, sizeof(*c));
                c->path = xstrdup(key);
                read_into(r, key, c);
                if (c->err == -ETIME) {
                        /* Not read for want of time: a later operation with time of its own may read it. */
                        free(c->path);
                        free(c);
                        return -ETIME;
                }
                c->next = r->cache[h];
                r->cache[h] = c;
                root_record(r, key, ROOT_REC_FILE, c->err);
        }
        if (c->err)
                return c->err;
        *ret = c->data;
        if (ret_len)
                *ret_len = c->len;
        return 0;
}

int root_read_text(struct root *r, const char *path, const char **ret, size_t *ret_len)
{
        const char *data;
        size_t len;
        int rc = root_read(r, path, &data, &len);
        if (rc < 0)
                return rc;
        if (memchr(data, '\0', len))
                return -EBADMSG;
        *ret = data;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int root_read_first(struct root *r, const char *const *paths, size_t n, size_t *ret_i, const char **ret)
{
        for (size_t i = 0; i < n; i++) {
                int rc = root_read(r, paths[i], ret, NULL);
                if (root_gone(rc))
                        continue;
                *ret_i = i;
                return rc;
        }
        return -ENOENT;
}

int root_read_line(struct root *r, const char *path, char **ret)
{
        const char *data;
        int rc = root_read_text(r, path, &data, NULL);
        if (rc < 0)
                return rc;
        char *s = xstrdup(data);
        strip_trailing(s);
        if (!*s) {
                free(s);
                return -ENODATA;
        }
        *ret = s;
        return 0;
}

int root_read_u64(struct root *r, const char *path, uint64_t *ret)
{
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(r, path, &line);
        return rc < 0 ? rc : parse_u64(line, ret);
}

int root_read_i64(struct root *r, const char *path, int64_t *ret)
{
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(r, path, &line);
        return rc < 0 ? rc : parse_i64(line, ret);
}

/* The path of a root_readf_* call: FMT and its arguments, formatted once (caller frees). */
#define READF_PATH(fmt)                                                                                   \
        ({                                                                                                \
                va_list _ap;                                                                              \
                va_start(_ap, fmt);                                                                       \
                char *_p = xvasprintf(fmt, _ap);                                                          \
                va_end(_ap);                                                                              \
                _p;                                                                                       \
        })

int root_readf_line(struct root *r, char **ret, const char *fmt, ...)
{
        _cleanup_free_ char *path = READF_PATH(fmt);
        return root_read_line(r, path, ret);
}

int root_readf_u64(struct root *r, uint64_t *ret, const char *fmt, ...)
{
        _cleanup_free_ char *path = READF_PATH(fmt);
        return root_read_u64(r, path, ret);
}

int root_readf_i64(struct root *r, int64_t *ret, const char *fmt, ...)
{
        _cleanup_free_ char *path = READF_PATH(fmt);
        return root_read_i64(r, path, ret);
}

int root_readf_str(struct root *r, const char **ret, const char *fmt, ...)
{
        _cleanup_free_ char *path = READF_PATH(fmt);
        return root_read(r, path, ret, NULL);
}

char *root_read_active(struct root *r, const char *path)
{
        _cleanup_free_ char *line = NULL;
        if (root_read_line(r, path, &line) < 0)
                return NULL;
        char *active = NULL;
        if (strchr(line, '[') && parse_bracketed(line, &active, NULL) == 0)
                return active;
        return xstrdup(line);
}

char *root_hostname(struct root *r)
{
        if (root_is_live(r)) {
                char buf[256] = "";
                if (gethostname(buf, sizeof(buf) - 1) == 0 && buf[0])
                        return xstrdup(buf);
        }
        char *line = NULL;
        if (root_read_line(r, "/etc/hostname", &line) < 0)
                return NULL;
        line[strcspn(line, "\n")] = '\0';
        strip_trailing(line);
        if (!*line || strlen(line) >= 256) {
                free(line);
                return NULL;
        }
        return line;
}

void root_forget(struct root *r, const char *path)
{
        pdir_drop(r);
        _cleanup_free_ char *key = normalize(path);
        for (struct cached **pp = &r->cache[hash_path(key)]; *pp; pp = &(*pp)->next)
                if (streq((*pp)->path, key)) {
                        struct cached *c = *pp;
                        *pp = c->next;
                        free(c->path);
                        free(c->data);
                        free(c);
                        return;
                }
}

void root_preload(struct root *r, const char *path, const void *data, size_t len)
{
        root_forget(r, path);
        _cleanup_free_ char *key = normalize(path);
        struct cached *c = xcalloc(1, sizeof(*c));
        c->path = xstrdup(key);
        if (len >= ROOT_READ_MAX)
                c->err = -EFBIG; /* as read_fd says of a file that size */
        else {
                c->data = xmalloc(len + 1);
                memcpy(c->data, data, len);
                c->data[len] = '\0';
                c->len = len;
        }
        unsigned h = hash_path(key);
        c->next = r->cache[h];
        r->cache[h] = c;
}

/* Split PATH into its parent directory (opened O_PATH) and last component. The descriptor is
 * the handle's (pdir_fd): borrowed, never closed by the caller. */
static int open_parent(struct root *r, const char *path, char **ret_base)
{
        _cleanup_free_ char *p = normalize(path);
        while (*p && endswith(p, "/"))
                p[strlen(p) - 1] = '\0';
        char *slash = strrchr(p, '/');
        const char *dir = ".";
        const char *base = p;
        if (slash) {
                *slash = '\0';
                dir = p;
                base = slash + 1;
        }
        if (!*base || streq(base, ".") || streq(base, ".."))
                return -EINVAL;
        /* Most recently used first: a hit moves to the front, a miss takes the last slot's place. */
        size_t i = 0;
        while (i < PDIR_SLOTS && !(r->pdir_fd[i] >= 0 && streq(r->pdir_path[i], dir)))
                i++;
        int fd;
        char *kept;
        if (i < PDIR_SLOTS) {
                fd = r->pdir_fd[i];
                kept = r->pdir_path[i];
        } else {
                fd = root_open(r, dir, O_PATH | O_DIRECTORY, 0);
                if (fd < 0)
                        return fd;
                r->pdir_resolved++;
                i = PDIR_SLOTS - 1;
                if (r->pdir_fd[i] >= 0)
                        close(r->pdir_fd[i]);
                free(r->pdir_path[i]);
                kept = xstrdup(dir);
        }
        memmove(&r->pdir_fd[1], &r->pdir_fd[0], i * sizeof(r->pdir_fd[0]));
        memmove(&r->pdir_path[1], &r->pdir_path[0], i * sizeof(r->pdir_path[0]));
        r->pdir_fd[0] = fd;
        r->pdir_path[0] = kept;
        *ret_base = xstrdup(base);
        return fd;
}

bool root_masked(struct root *r, const char *path)
{
        _cleanup_free_ char *target = NULL;
        return root_readlink(r, path, &target) == 0 && streq(target, "/dev/null");
}

int root_readlink(struct root *r, const char *path, char **ret)
{
        _cleanup_free_ char *base = NULL;
        deadline_enter(path);
        int dfd = open_parent(r, path, &base);
        root_record(r, path, ROOT_REC_LINK, dfd < 0 ? dfd : 0);
        char buf[4096];
        ssize_t n = dfd < 0 ? dfd : readlinkat(dfd, base, buf, sizeof(buf) - 1);
        int e = errno;
        deadline_leave();
        if (dfd < 0)
                return dfd;
        if (n < 0)
                return -e;
        buf[n] = '\0';
        *ret = xstrdup(buf);
        return 0;
}

static int stat_in_root(struct root *r, const char *path, struct stat *st, bool follow);

int root_stat(struct root *r, const char *path, struct stat *st, bool follow)
{
        deadline_enter(path);
        int rc = stat_in_root(r, path, st, follow);
        deadline_leave();
        return rc;
}

static int stat_in_root(struct root *r, const char *path, struct stat *st, bool follow)
{
        root_record(r, path, ROOT_REC_STAT, 0);
        if (follow) {
                _cleanup_close_ int fd = root_open(r, path, O_PATH, 0);
                if (fd < 0)
                        return fd;
                return fstat(fd, st) < 0 ? -errno : 0;
        }
        _cleanup_free_ char *base = NULL;
        int dfd = open_parent(r, path, &base);
        if (dfd < 0)
                return dfd == -EINVAL ? stat_in_root(r, path, st, true) : dfd;
        return fstatat(dfd, base, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int list_in_root(struct root *r, const char *dir, struct strv *ret);

int root_list(struct root *r, const char *dir, struct strv *ret)
{
        deadline_enter(dir);
        int rc = list_in_root(r, dir, ret);
        deadline_leave();
        return rc;
}

static int list_in_root(struct root *r, const char *dir, struct strv *ret)
{
        _cleanup_close_ int fd = root_open(r, dir, O_RDONLY | O_DIRECTORY, 0);
        int err = fd < 0 ? fd : unread_err(r, fd); /* a directory gather could not list */
        root_record(r, dir, ROOT_REC_DIR, err);
        if (err < 0)
                return err;
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd); /* the stream has it */
        _cleanup_strv_ struct strv out = {0};
        struct dirent *de;
        /* readdir() returns NULL at the end and on an error alike: errno tells them apart, and a
         * listing cut short (EIO) must not read as a shorter directory. */
        errno = 0;
        while ((de = readdir(d))) {
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        strv_add(&out, de->d_name);
                errno = 0;
        }
        if (errno)
                return -errno;
        strv_sort(&out);
        *ret = out;
        out = (struct strv){0};
        return 0;
}

static void glob_walk(struct root *r, const char *dir, const char *rest, struct strv *out)
{
        while (*rest == '/')
                rest++;
        if (!*rest) {
                strv_add(out, *dir ? dir : "/");
                return;
        }
        const char *slash = strchr(rest, '/');
        _cleanup_free_ char *comp = slash ? xstrndup(rest, (size_t)(slash - rest)) : xstrdup(rest);
        const char *next = slash ? slash : "";
        if (!strpbrk(comp, "*?[")) {
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, comp);
                struct stat st;
                if (root_stat(r, p, &st, !*next ? false : true) == 0)
                        glob_walk(r, p, next, out);
                return;
        }
        _cleanup_strv_ struct strv names = {0};
        if (root_list(r, *dir ? dir : "/", &names) < 0)
                return;
        for (size_t i = 0; i < names.n; i++)
                if (fnmatch(comp, names.v[i], FNM_PERIOD) == 0) {
                        _cleanup_free_ char *p = xasprintf("%s/%s", dir, names.v[i]);
                        glob_walk(r, p, next, out);
                }
}

int root_glob(struct root *r, const char *pattern, struct strv *ret)
{
        struct strv out = {0};
        glob_walk(r, "", pattern, &out);
        strv_sort(&out);
        *ret = out;
        return (int)out.n;
}

/* --- writing files under the root ------------------------------------------------------------ */

int write_all(int fd, const char *data, size_t len)
{
        while (len) {
                ssize_t n = write(fd, data, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

int file_at_holds(int dfd, const char *base, const char *expect)
{
        _cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return root_gone(-errno) ? !expect : -errno;
        if (!expect)
                return 0;
        size_t want = strlen(expect), got = 0;
        char buf[65536];
        int same = 1;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        same = -errno; /* there, and not readable (EISDIR: a directory in its place) */
                        break;
                }
                if (n == 0) {
                        same = got == want;
                        break;
                }
                if (got + (size_t)n > want || memcmp(expect + got, buf, (size_t)n) != 0) {
                        same = 0;
                        break;
                }
                got += (size_t)n;
        }
        return same;
}

/* Copy the extended attributes of BASE in DFD (SELinux label, POSIX ACLs, user.*) to FD, the file
 * about to replace it: a rename would otherwise drop them, and a relabel-less /etc/fstab breaks
 * services under SELinux. A filesystem without xattrs has none to keep. */
static int copy_xattrs(int dfd, const char *base, int fd)
{
        _cleanup_close_ int src = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (src < 0)
                return -errno;
        int rc = 0;
        ssize_t n = flistxattr(src, NULL, 0);
        char *names = NULL;
        if (n > 0) {
                names = xmalloc((size_t)n);
                n = flistxattr(src, names, (size_t)n);
        }
        if (n < 0)
                rc = errno == ENOTSUP ? 0 : -errno;
        for (ssize_t i = 0; rc == 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
                const char *name = names + i;
                ssize_t len = fgetxattr(src, name, NULL, 0);
                char *val = len > 0 ? xmalloc((size_t)len) : NULL;
                if (len > 0)
                        len = fgetxattr(src, name, val, (size_t)len);
                if (len < 0 || fsetxattr(fd, name, val, len > 0 ? (size_t)len : 0, 0) < 0)
                        rc = errno == ENOTSUP ? 0 : -errno;
                free(val);
        }
        free(names);
        return rc;
}

/* The temporary file ".BASE.llmtune-PID" in DFD, created afresh (0600). Returns its fd or -errno. */
static int open_temp_at(int dfd, const char *tmp)
{
        int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
                /* No live process but this one has our PID, and apply and rollback hold the lock:
                 * a temporary file of that name was left by a killed run whose PID was reused. */
                if (unlinkat(dfd, tmp, 0) == 0)
                        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                else
                        errno = EEXIST;
        }
        return fd < 0 ? -errno : fd;
}

/* The new content into the temporary file FD: chattr flags, the data, and the mode, owner and extended
 * attributes of the file it replaces (ST, when EXISTS), flushed to disk. */
static int fill_temp(int fd, int dfd, const char *base, const struct stat *st, bool exists, unsigned flags,
                     const char *data, size_t len, mode_t mode_if_new)
{
        int rc = flags ? fileattr_keep(fd, flags) : 0;
        if (rc == 0)
                rc = write_all(fd, data, len);
        /* keep the mode and owner of the file being replaced */
        if (rc == 0 && fchmod(fd, exists ? st->st_mode & 07777 : mode_if_new) < 0)
                rc = -errno;
        if (rc == 0 && exists && fchown(fd, st->st_uid, st->st_gid) < 0 && errno != EPERM)
                rc = -errno;
        if (rc == 0 && exists)
                rc = copy_xattrs(dfd, base, fd);
        if (rc == 0 && fsync(fd) < 0)
                rc = -errno;
        return rc;
}

/* Does BASE still hold EXPECT right before the rename? -ESTALE when not (a read error in *ret_read_err). */
static int still_holds(int dfd, const char *base, const char *expect, int *ret_read_err)
{
        int holds = file_at_holds(dfd, base, expect);
        if (holds < 0 && ret_read_err)
                *ret_read_err = -holds;
        return holds > 0 ? 0 : -ESTALE;
}

int replace_file_at(int dfd, const char *base, const char *path, const char *data, size_t len, mode_t mode_if_new,
                    bool expect_set, const char *expect, int *ret_read_err)
{
        struct stat st;
        bool exists = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
        /* Never write through a link planted at a managed path (it could point anywhere). */
        if (exists && !S_ISREG(st.st_mode))
                return S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : -ENOTREG;
        /* Its chattr flags: an immutable or append-only file is not replaced (nothing written);
         * the others go over to the new file (fileattr.h). */
        unsigned flags = 0;
        int rc = exists ? fileattr_get_at(dfd, base, &flags) : 0;
        if (rc < 0)
                return rc;
        if (fileattr_blocks(flags))
                return -EPERM;
        _cleanup_free_ char *tmp = xasprintf(".%s.llmtune-%d", base, (int)getpid());
        int fd = open_temp_at(dfd, tmp);
        if (fd < 0)
                return fd;
        rc = fill_temp(fd, dfd, base, &st, exists, flags, data, len, mode_if_new);
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc == 0 && test_points_active())
                test_point("before-rename", path); /* a crash here leaves the temporary file only */
        if (rc == 0 && expect_set)
                rc = still_holds(dfd, base, expect, ret_read_err);
        if (rc == 0 && renameat(dfd, tmp, dfd, base) < 0)
                rc = -errno;
        if (rc < 0)
                unlinkat(dfd, tmp, 0);
        else
                fsync(dfd);
        return rc;
}

int root_write_file(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new)
{
        int rc = test_fault(path);
        if (rc < 0)
                return rc;
        _cleanup_free_ char *dir = xstrdup(path);
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *slash = '\0';
        _cleanup_close_ int dfd = root_open_nolinks(r, *dir ? dir : "/", O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0)
                return dfd;
        rc = replace_file_at(dfd, slash + 1, path, data, len, mode_if_new, false, NULL, NULL);
        root_forget(r, path);
        return rc;
}

int mkdirat_exact(int dfd, const char *name, mode_t mode)
{
        if (mkdirat(dfd, name, mode) == 0)
                return fchmodat(dfd, name, mode, 0) < 0 ? -errno : 0;
        return errno == EEXIST ? 0 : -errno;
}

int root_mkdirs(struct root *r, const char *path, mode_t mode)
{
        _cleanup_free_ char *p = xstrdup(path);
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                bool last = *s == '\0';
                *s = '\0';
                char *slash = strrchr(p, '/');
                *slash = '\0';
                _cleanup_close_ int dfd = root_open_nolinks(r, *p ? p : "/", O_PATH | O_DIRECTORY, 0);
                *slash = '/';
                if (dfd < 0)
                        return dfd;
                int rc = mkdirat_exact(dfd, slash + 1, mode);
                if (rc < 0)
                        return rc;
                if (last)
                        return 0;
                *s = '/';
        }
}

/* The names in DFD that MATCH accepts, listed through a duplicate of it (DFD stays open). */
static int list_matching(int dfd, bool (*match)(const char *name, const void *arg), const void *arg,
                         struct strv *ret)
{
        _cleanup_close_ int lfd = dup(dfd);
        if (lfd < 0)
                return -errno;
        _cleanup_closedir_ DIR *d = fdopendir(lfd);
        if (!d)
                return -errno;
        TAKE_FD(lfd); /* the stream has it */
        struct dirent *de;
        while ((de = readdir(d)))
                if (match(de->d_name, arg))
                        strv_add(ret, de->d_name);
        return 0;
}

int dir_remove_matching(int dfd, bool (*match)(const char *name, const void *arg), const void *arg)
{
        _cleanup_strv_ struct strv victims = {0};
        int rc = list_matching(dfd, match, arg, &victims);
        if (rc < 0)
                return rc;
        int removed = 0;
        for (size_t i = 0; i < victims.n; i++)
                if (unlinkat(dfd, victims.v[i], 0) == 0)
                        removed++;
        if (victims.n)
                fsync(dfd);
        return removed;
}

bool name_is_prefix_pid(const char *name, const void *prefix)
{
        const char *p = prefix;
        size_t n = strlen(p);
        return strncmp(name, p, n) == 0 && name[n] && strspn(name + n, "0123456789") == strlen(name + n);
}
