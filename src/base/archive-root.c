/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Vetting and unpacking a gathered archive into a private directory (archive-root.h). */
#include "base/archive-root.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/json-doc.h"
#include "base/lazy-archive.h"
#include "base/private-tmp.h"
#include "base/root.h"

/* One MANIFEST entry, sorted by path for lookup. */
struct mentry {
        const char *path; /* points into the parsed JSON */
        const char *type; /* "file", "dir", "link", "unread" */
        const char *sha256;
        const char *target;
        int64_t size;
        int err; /* "unread": errno reading it gave */
        bool seen;
};

struct unpack {
        struct archive *a;
        int dirfd;
        struct dcached **dcache; /* directories open, by path (open_parent) */
        size_t ndcached, dcache_max;
        EVP_MD_CTX *md;
        char *dir;
        json_object *manifest;
        struct mentry *v;
        size_t n;
        size_t members;
        unsigned long long total;
        char *why;
};

static int fail(struct unpack *u, int err, const char *fmt, ...) _printf_(3, 4);
static int fail(struct unpack *u, int err, const char *fmt, ...)
{
        if (!u->why) {
                va_list ap;
                va_start(ap, fmt);
                u->why = xvasprintf(fmt, ap);
                va_end(ap);
        }
        return err;
}

static int mentry_cmp(const void *a, const void *b)
{
        return strcmp(((const struct mentry *)a)->path, ((const struct mentry *)b)->path);
}

static struct mentry *mentry_find(struct unpack *u, const char *path)
{
        struct mentry key = {.path = path};
        return bsearch(&key, u->v, u->n, sizeof(*u->v), mentry_cmp);
}

static bool mentry_type_known(const char *type)
{
        static const char *const types[] = {"file", "dir", "link", "unread", "unlisted"};
        return STRING_TABLE_LOOKUP(types, type) >= 0;
}

/* Entry I of the MANIFEST's files, O, into M. */
static int parse_entry(struct unpack *u, json_object *o, size_t i, struct mentry *m)
{
        json_object *sz, *en;
        m->path = json_doc_str(o, "path");
        m->type = json_doc_str(o, "type");
        if (!m->path || !m->type)
                return fail(u, -EINVAL, "MANIFEST file entry %zu lacks \"path\" or \"type\"", i);
        if (!mentry_type_known(m->type))
                return fail(u, -EINVAL, "MANIFEST entry %s has unknown type \"%s\"", m->path, m->type);
        m->sha256 = json_doc_str(o, "sha256");
        m->target = json_doc_str(o, "target");
        m->size = json_object_object_get_ex(o, "size", &sz) ? json_object_get_int64(sz) : -1;
        m->err = json_object_object_get_ex(o, "errno", &en) ? json_object_get_int(en) : ENODATA;
        if (m->err <= 0 || m->err > 4095)
                m->err = ENODATA;
        /* An "unread" or "unlisted" entry is there by definition (gather records nothing it
         * found gone): an errno that means "not there" would make it read as absent. */
        if ((streq(m->type, "unread") || streq(m->type, "unlisted")) && (m->err == ENOENT || m->err == ENOTDIR))
                return fail(u, -EINVAL, "MANIFEST entry %s is \"%s\" with errno %d, which would read as absent",
                            m->path, m->type, m->err);
        if (streq(m->type, "file") && (!m->sha256 || m->size < 0))
                return fail(u, -EINVAL, "MANIFEST entry %s lacks size or sha256", m->path);
        if (streq(m->type, "link") && !m->target)
                return fail(u, -EINVAL, "MANIFEST entry %s lacks its link target", m->path);
        return 0;
}

/* A decompression bomb with an honest MANIFEST is refused before anything is unpacked; one
 * with a lying MANIFEST at the first member larger than it says (one_member). */
static int check_sizes(struct unpack *u)
{
        unsigned long long total = 0;
        for (size_t i = 0; i < u->n; i++)
                if (streq(u->v[i].type, "file")) {
                        if (u->v[i].size > (int64_t)ROOT_READ_MAX)
                                return fail(u, -EFBIG, "MANIFEST entry %s is %lld bytes, more than the %u a root file may have",
                                            u->v[i].path, (long long)u->v[i].size, ROOT_READ_MAX);
                        total += (unsigned long long)u->v[i].size;
                }
        if (total > ARCHIVE_MAX_TOTAL)
                return fail(u, -EFBIG, "the MANIFEST's files add up to %llu MiB, more than the %llu MiB an archive root may "
                            "unpack to (a decompression bomb?)", total >> 20, ARCHIVE_MAX_TOTAL >> 20);
        return 0;
}

static int parse_manifest(struct unpack *u, const char *data, size_t len)
{
        const char *why;
        if (json_doc_parse(data, len, &u->manifest, &why) < 0)
                return fail(u, -EINVAL, "MANIFEST is not valid JSON (%s)", why);
        json_object *files;
        if (!json_object_is_type(u->manifest, json_type_object) ||
            !json_object_object_get_ex(u->manifest, "files", &files) || !json_object_is_type(files, json_type_array))
                return fail(u, -EINVAL, "MANIFEST has no \"files\" list");
        size_t n = json_object_array_length(files);
        if (n > ARCHIVE_MAX_MEMBERS)
                return fail(u, -EINVAL, "MANIFEST lists %zu files, more than the %u an archive root may have", n,
                            ARCHIVE_MAX_MEMBERS);
        u->v = xcalloc(n ? n : 1, sizeof(*u->v));
        for (size_t i = 0; i < n; i++) {
                int rc = parse_entry(u, json_object_array_get_idx(files, i), i, &u->v[u->n]);
                if (rc < 0)
                        return rc;
                u->n++;
        }
        int rc = check_sizes(u);
        if (rc < 0)
                return rc;
        qsort_safe(u->v, u->n, sizeof(*u->v), mentry_cmp);
        for (size_t i = 1; i < u->n; i++)
                if (streq(u->v[i - 1].path, u->v[i].path))
                        return fail(u, -EINVAL, "MANIFEST lists %s twice", u->v[i].path);
        return 0;
}

/* Split REL into components; refuses "..", empty names and too deep paths. */
static int check_name(struct unpack *u, const char *member, const char *rel, struct strv *comps)
{
        _cleanup_free_ char *copy = xstrdup(rel);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "."))
                        continue;
                if (streq(c, ".."))
                        return fail(u, -EINVAL, "member %s: a \"..\" component is not allowed", member);
                strv_add(comps, c);
        }
        if (comps->n == 0)
                return fail(u, -EINVAL, "member %s: empty name", member);
        if (comps->n > ARCHIVE_MAX_DEPTH)
                return fail(u, -EINVAL, "member %s: deeper than %d directories", member, ARCHIVE_MAX_DEPTH);
        return 0;
}

/*
 * Directories already opened while unpacking, by path under the private directory ("a/b"), so
 * that each is created and opened once rather than walked again from the top for every member
 * (members of one directory do not come together: "a", "a/b/x", "a/c"). Each was reached one
 * component at a time with O_NOFOLLOW | O_DIRECTORY, so a cached fd is a real directory with no
 * link on its way. At most DIR_CACHE_MAX fds are held, and no more than a quarter of the
 * process's RLIMIT_NOFILE: when full, the cache is emptied.
 */
#define DIR_CACHE_BUCKETS 1024
#define DIR_CACHE_MAX 256

struct dcached {
        char *path;
        int fd;
        struct dcached *next;
};

static unsigned dir_hash(const char *s, size_t len) { return string_hash_n(s, len) % DIR_CACHE_BUCKETS; }

static int dir_cache_get(struct unpack *u, const char *path, size_t len)
{
        for (struct dcached *d = u->dcache[dir_hash(path, len)]; d; d = d->next)
                if (strlen(d->path) == len && memcmp(d->path, path, len) == 0)
                        return d->fd;
        return -1;
}

static void dir_cache_flush(struct unpack *u)
{
        if (!u->dcache)
                return;
        for (size_t i = 0; i < DIR_CACHE_BUCKETS; i++) {
                for (struct dcached *d = u->dcache[i], *n; d; d = n) {
                        n = d->next;
                        close(d->fd);
                        free(d->path);
                        free(d);
                }
                u->dcache[i] = NULL;
        }
        u->ndcached = 0;
}

/* Whether FD was taken (false: the cache is full, FD stays the caller's). */
static bool dir_cache_put(struct unpack *u, const char *path, size_t len, int fd)
{
        if (u->ndcached >= u->dcache_max)
                return false;
        struct dcached *d = xcalloc(1, sizeof(*d));
        d->path = xstrndup(path, len);
        d->fd = fd;
        unsigned h = dir_hash(path, len);
        d->next = u->dcache[h];
        u->dcache[h] = d;
        u->ndcached++;
        return true;
}

/* Create (when absent) and open directory NAME in CUR; no link or file may stand there. */
static int open_dir_in(struct unpack *u, const char *member, int cur, const char *name)
{
        if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
                return fail(u, -errno, "member %s: cannot create directory %s: %s", member, name, strerror(errno));
        int fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                return fail(u, e == ELOOP || e == ENOTDIR ? -EINVAL : -e, "member %s: lies under %s, which is %s",
                            member, name,
                            e == ELOOP || e == ENOTDIR ? "a symbolic link or a file, not a directory" : strerror(e));
        }
        return fd;
}

/* The directory holding the last component, opened (and created as needed) with no link on the
 * way. The fd belongs to the cache (or is u->dirfd), unless *ret_owned says the caller closes it
 * (the cache was full). */
static int open_parent(struct unpack *u, const char *member, const struct strv *comps, bool *ret_owned)
{
        *ret_owned = false;
        size_t depth = comps->n - 1; /* components of the parent */
        if (depth == 0)
                return u->dirfd;
        /* the parent's path, and where each of its prefixes ends in it */
        size_t ends[ARCHIVE_MAX_DEPTH + 1];
        struct sbuf b = {0};
        for (size_t i = 0; i < depth; i++) {
                if (i)
                        sbuf_add(&b, "/");
                sbuf_add(&b, comps->v[i]);
                ends[i] = b.len;
        }
        int fd = dir_cache_get(u, b.s, b.len);
        if (fd >= 0) {
                free(b.s);
                return fd;
        }
        if (u->ndcached + depth > u->dcache_max)
                dir_cache_flush(u);
        /* from the deepest directory already open: its first I components are */
        size_t i = depth - 1;
        int cur = -1;
        while (i > 0 && (cur = dir_cache_get(u, b.s, ends[i - 1])) < 0)
                i--;
        if (cur < 0)
                cur = u->dirfd;
        bool owned = false; /* cur is ours to close, not the cache's */
        for (; i < depth; i++) {
                fd = open_dir_in(u, member, cur, comps->v[i]);
                if (owned)
                        close(cur);
                if (fd < 0)
                        break;
                owned = !dir_cache_put(u, b.s, ends[i], fd);
                cur = fd;
        }
        free(b.s);
        if (fd < 0)
                return fd;
        *ret_owned = owned;
        return cur;
}

/* Copy the member's data into FD (or into *ret_buf when FD < 0), bounded, hashing as it goes. */
static int copy_data(struct unpack *u, const char *member, int fd, size_t cap, char **ret_buf, size_t *ret_len,
                     char sha[65])
{
        /* one digest context for every member (allocating one each was measurable) */
        if (!u->md && !(u->md = EVP_MD_CTX_new()))
                return fail(u, -ENOMEM, "cannot set up SHA-256");
        EVP_MD_CTX *ctx = u->md;
        if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
                return fail(u, -ENOMEM, "cannot set up SHA-256");
        size_t len = 0;
        size_t bufcap = 65536;
        char *buf = ret_buf ? xmalloc(bufcap) : NULL;
        int rc = 0;
        char block[65536];
        for (;;) {
                la_ssize_t n = archive_read_data(u->a, block, sizeof(block));
                if (n == 0)
                        break;
                if (n < 0) {
                        rc = fail(u, -EINVAL, "member %s: %s", member, archive_error_string(u->a));
                        break;
                }
                len += (size_t)n;
                u->total += (unsigned long long)n;
                if (len > cap) {
                        rc = fail(u, -EFBIG, "member %s has more than the %zu bytes its MANIFEST entry allows", member,
                                  cap);
                        break;
                }
                if (u->total > ARCHIVE_MAX_TOTAL) {
                        rc = fail(u, -EFBIG,
                                  "the archive unpacks to more than %llu MiB (a decompression bomb?); refused",
                                  ARCHIVE_MAX_TOTAL >> 20);
                        break;
                }
                EVP_DigestUpdate(ctx, block, (size_t)n);
                if (buf) {
                        if (len + 1 > bufcap) { /* doubling: the MANIFEST of a big host is a megabyte */
                                while (len + 1 > bufcap)
                                        bufcap *= 2;
                                buf = xrealloc(buf, bufcap);
                        }
                        memcpy(buf + len - (size_t)n, block, (size_t)n);
                } else {
                        for (size_t off = 0; off < (size_t)n;) {
                                ssize_t w = write(fd, block + off, (size_t)n - off);
                                if (w < 0 && errno == EINTR)
                                        continue;
                                if (w < 0) {
                                        rc = fail(u, -errno, "member %s: write: %s", member, strerror(errno));
                                        break;
                                }
                                off += (size_t)w;
                        }
                        if (rc < 0)
                                break;
                }
        }
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        EVP_DigestFinal_ex(ctx, md, &mdlen);
        digest_hex(md, mdlen < 32 ? mdlen : 32, sha);
        if (rc < 0) {
                free(buf);
                return rc;
        }
        if (buf) {
                buf[len] = '\0';
                *ret_buf = buf;
        }
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* A relative TARGET already confined as written from a directory DEPTH deep: "../" at most DEPTH
 * times, then only downward names. */
static bool confined_as_written(const char *target, size_t depth)
{
        size_t ups = 0;
        const char *p = target;
        while (startswith(p, "../")) {
                ups++;
                p += 3;
        }
        static const char *const inner[] = {"/./", "/../", "//"};
        for (size_t i = 0; i < ARRAY_SIZE(inner); i++)
                if (strstr(p, inner[i]))
                        return false;
        return ups <= depth && !streq(p, "..") && !streq(p, ".") && !startswith(p, "./") && !endswith(p, "/..") &&
               !endswith(p, "/.");
}

/* TARGET's components applied to NORM (the directory it is resolved from); false when a relative
 * target climbs out of the root (an absolute target's ".." stays at "/", like RESOLVE_IN_ROOT). */
static bool resolve_lexically(const char *target, struct strv *norm)
{
        _cleanup_free_ char *tcopy = xstrdup(target);
        char *save = NULL;
        for (char *c = strtok_r(tcopy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "."))
                        continue;
                if (!streq(c, "..")) {
                        strv_add(norm, c);
                        continue;
                }
                if (norm->n == 0) {
                        if (target[0] != '/')
                                return false;
                        continue;
                }
                free(norm->v[--norm->n]);
                norm->v[norm->n] = NULL;
        }
        return true;
}

char *archive_confine_link(const char *rel, const char *target)
{
        if (!*target)
                return NULL;
        _cleanup_(strv_done) struct strv dir = {0}, norm = {0};
        _cleanup_free_ char *rcopy = xstrdup(rel);
        char *save = NULL;
        for (char *c = strtok_r(rcopy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                strv_add(&dir, c);
        if (dir.n > 0) {
                free(dir.v[--dir.n]); /* the link's own name */
                dir.v[dir.n] = NULL;
        }
        /* Kept byte for byte when already confined (sysfs links are all of this form). */
        if (target[0] != '/' && confined_as_written(target, dir.n))
                return xstrdup(target);
        /* Otherwise: resolve lexically from the link's directory (or from the root for an
         * absolute target), then write it as "../" x depth + the path from the root. */
        if (target[0] != '/')
                for (size_t i = 0; i < dir.n; i++)
                        strv_add(&norm, dir.v[i]);
        if (!resolve_lexically(target, &norm))
                return NULL;
        struct sbuf b = {0};
        for (size_t i = 0; i < dir.n; i++)
                sbuf_add(&b, i ? "/.." : "..");
        for (size_t i = 0; i < norm.n; i++) {
                if (b.len)
                        sbuf_add(&b, "/");
                sbuf_add(&b, norm.v[i]);
        }
        return b.len ? sbuf_steal(&b) : xstrdup(".");
}

static const char *type_name(mode_t t)
{
        switch (t) {
        case AE_IFCHR: return "a character device";
        case AE_IFBLK: return "a block device";
        case AE_IFIFO: return "a FIFO";
        case AE_IFSOCK: return "a socket";
        default: return "of an unknown type";
        }
}

/* Member E's name checked (relative, under ARCHIVE_ROOT_DIR/, within the member count); *REL is
 * the rest of it. Returns 0, 1 for the root directory itself (nothing to unpack), or -errno. */
static int member_name(struct unpack *u, struct archive_entry *e, const char **rel)
{
        const char *name = archive_entry_pathname(e);
        if (!name)
                return fail(u, -EINVAL, "a member name cannot be decoded");
        if (name[0] == '/')
                return fail(u, -EINVAL, "member %s: absolute names are not allowed", name);
        const char *r = name;
        while (startswith(r, "./"))
                r += 2;
        if (!startswith(r, ARCHIVE_ROOT_DIR "/") && !streq(r, ARCHIVE_ROOT_DIR))
                return fail(u, -EINVAL, "member %s: not under %s/ (not an archive made by llmtune gather)", name,
                            ARCHIVE_ROOT_DIR);
        r += strlen(ARCHIVE_ROOT_DIR);
        if (++u->members > ARCHIVE_MAX_MEMBERS)
                return fail(u, -EFBIG, "more than %u members; refused", ARCHIVE_MAX_MEMBERS);
        *rel = r;
        /* "root/" itself: the directory we unpack into */
        if (archive_entry_filetype(e) == AE_IFDIR && strspn(r, "/.") == strlen(r) && !strstr(r, ".."))
                return 1;
        return 0;
}

/* Member E (NAME, at PATH under the root) against the MANIFEST: a file, directory or link, listed
 * once, of the listed type, not over the size a root file may have. *RET is its entry, marked seen.
 * Returns 0 or -errno. */
static int member_vet(struct unpack *u, struct archive_entry *e, const char *name, const char *path,
                      struct mentry **ret)
{
        mode_t t = archive_entry_filetype(e);
        if (archive_entry_hardlink(e))
                return fail(u, -EINVAL, "member %s: hard links are not allowed", name);
        if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)
                return fail(u, -EINVAL, "member %s is %s; only files, directories and symbolic links are allowed",
                            name, type_name(t));
        struct mentry *m = mentry_find(u, path);
        if (!m)
                return fail(u, -EINVAL, "member %s is not listed in the MANIFEST", name);
        if (m->seen)
                return fail(u, -EINVAL, "member %s appears twice", name);
        m->seen = true;
        const char *want = t == AE_IFREG ? (streq(m->type, "unread") ? "unread" : "file") : t == AE_IFDIR ? "dir" : "link";
        if (!streq(m->type, want) && !(t == AE_IFREG && streq(m->type, "file")) &&
            !(t == AE_IFDIR && streq(m->type, "unlisted")))
                return fail(u, -EINVAL, "member %s is a %s but the MANIFEST says %s", name,
                            t == AE_IFREG ? "file" : want, m->type);
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > (la_int64_t)ROOT_READ_MAX)
                return fail(u, -EFBIG, "member %s is %lld bytes, more than the %u a root file may have", name,
                            (long long)archive_entry_size(e), ROOT_READ_MAX);
        *ret = m;
        return 0;
}

/* Directory member NAME made as BASE in PFD, and kept open for the members under it. */
static int unpack_dir(struct unpack *u, int pfd, const char *base, const char *path, const char *name)
{
        /* opened (and kept for the members under it) rather than stat'ed: O_NOFOLLOW | O_DIRECTORY
         * fails the same way when a file or link of that name came first */
        if (dir_cache_get(u, path, strlen(path)) >= 0)
                return 0; /* made and opened on the way to a member under it */
        if (mkdirat(pfd, base, 0755) < 0 && errno != EEXIST)
                return fail(u, -errno, "member %s: %s", name, strerror(errno));
        _cleanup_close_ int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 && (errno == ELOOP || errno == ENOTDIR))
                return fail(u, -EINVAL, "member %s: a file or link of that name came first", name);
        if (dfd < 0)
                return fail(u, -errno, "member %s: %s", name, strerror(errno));
        if (dir_cache_put(u, path, strlen(path), dfd))
                TAKE_FD(dfd); /* the cache has it */
        return 0;
}

/* Link member NAME made as BASE in PFD: its target as the MANIFEST says, confined to the root. */
static int unpack_link(struct unpack *u, struct archive_entry *e, const struct mentry *m, int pfd, const char *base,
                       const char *path, const char *name)
{
        const char *target = archive_entry_symlink(e);
        _cleanup_free_ char *confined = target ? archive_confine_link(path, target) : NULL;
        if (!target || !streq(target, m->target))
                return fail(u, -EINVAL, "member %s: link target differs from the MANIFEST", name);
        if (!confined)
                return fail(u, -EINVAL, "member %s: symbolic link to %s points outside the root", name, target);
        if (symlinkat(confined, pfd, base) < 0)
                return fail(u, errno == EEXIST ? -EINVAL : -errno, "member %s: %s", name,
                            errno == EEXIST ? "a directory or file of that name came first" : strerror(errno));
        return 0;
}

/* File member NAME written as BASE in PFD, its size and SHA-256 checked against the MANIFEST. */
static int unpack_file(struct unpack *u, const struct mentry *m, int pfd, const char *base, const char *name)
{
        _cleanup_close_ int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return fail(u, errno == EEXIST ? -EINVAL : -errno, "member %s: %s", name,
                            errno == EEXIST ? "a directory or link of that name came first" : strerror(errno));
        char sha[65];
        size_t len = 0;
        /* bounded by what the MANIFEST says, so a lying one cannot unpack more */
        size_t cap = streq(m->type, "file") ? (size_t)m->size : 0;
        int rc = copy_data(u, name, fd, cap, NULL, &len, sha);
        if (rc == 0 && streq(m->type, "unread") && len != 0)
                rc = fail(u, -EINVAL, "member %s: listed as not gathered but has content", name);
        if (rc == 0 && streq(m->type, "file") && ((int64_t)len != m->size || !streq(sha, m->sha256)))
                rc = fail(u, -EINVAL, "member %s: size or SHA-256 differs from the MANIFEST", name);
        return rc;
}

static int one_member(struct unpack *u, struct archive_entry *e)
{
        const char *rel = NULL;
        int rc = member_name(u, e, &rel);
        if (rc != 0)
                return rc < 0 ? rc : 0;
        const char *name = archive_entry_pathname(e);
        _cleanup_(strv_done) struct strv comps = {0};
        rc = check_name(u, name, rel, &comps);
        if (rc < 0)
                return rc;
        _cleanup_free_ char *path = strv_join(&comps, "/");
        struct mentry *m = NULL;
        rc = member_vet(u, e, name, path, &m);
        if (rc < 0)
                return rc;
        bool pfd_owned;
        int pfd = open_parent(u, name, &comps, &pfd_owned);
        if (pfd < 0)
                return pfd;
        const char *base = comps.v[comps.n - 1];
        mode_t t = archive_entry_filetype(e);
        if (t == AE_IFDIR)
                rc = unpack_dir(u, pfd, base, path, name);
        else if (t == AE_IFLNK)
                rc = unpack_link(u, e, m, pfd, base, path, name);
        else
                rc = unpack_file(u, m, pfd, base, name);
        if (pfd_owned)
                close(pfd);
        return rc;
}

static int unpack_all(struct unpack *u, struct archive_unread *ret_unread)
{
        struct archive_entry *e;
        int r = archive_read_next_header(u->a, &e);
        if (r == ARCHIVE_EOF)
                return fail(u, -EINVAL, "empty archive (no MANIFEST)");
        if (r != ARCHIVE_OK)
                return fail(u, -EINVAL, "%s", archive_error_string(u->a));
        const char *first = archive_entry_pathname(e);
        if (!first || !streq(first, ARCHIVE_MANIFEST) || archive_entry_filetype(e) != AE_IFREG)
                return fail(u, -EINVAL, "the first member is not %s (not an archive made by llmtune gather)",
                            ARCHIVE_MANIFEST);
        char *mdata = NULL;
        size_t mlen = 0;
        char sha[65];
        int rc = copy_data(u, ARCHIVE_MANIFEST, -1, ARCHIVE_MAX_MANIFEST, &mdata, &mlen, sha);
        if (rc == 0)
                rc = parse_manifest(u, mdata, mlen);
        free(mdata);
        if (rc < 0)
                return rc;
        for (;;) {
                r = archive_read_next_header(u->a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r != ARCHIVE_OK)
                        return fail(u, -EINVAL, "%s", archive_error_string(u->a));
                rc = one_member(u, e);
                if (rc < 0)
                        return rc;
        }
        for (size_t i = 0; i < u->n; i++) {
                if (!u->v[i].seen)
                        return fail(u, -EINVAL, "the MANIFEST lists %s but the archive lacks it (truncated?)",
                                    u->v[i].path);
                if (streq(u->v[i].type, "unread") || streq(u->v[i].type, "unlisted")) {
                        ret_unread->err = xrealloc(ret_unread->err, (ret_unread->paths.n + 1) * sizeof(int));
                        ret_unread->err[ret_unread->paths.n] = -u->v[i].err;
                        strv_add(&ret_unread->paths, u->v[i].path);
                }
        }
        return 0;
}

static int unpack(struct unpack *u, char **ret_dir, struct archive_unread *ret_unread, char **ret_why)
{
        struct archive_unread unread = {0};
        *ret_why = NULL;
        u->dcache = xcalloc(DIR_CACHE_BUCKETS, sizeof(*u->dcache));
        struct rlimit rl;
        u->dcache_max = DIR_CACHE_MAX;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 < u->dcache_max)
                u->dcache_max = rl.rlim_cur / 4;
        int rc = private_tmp_make("archive", &u->dir);
        if (rc < 0)
                rc = fail(u, rc, "cannot create a private directory in %s: %s", private_tmp_base(), strerror(-rc));
        else if ((u->dirfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                rc = fail(u, -errno, "%s: %s", u->dir, strerror(errno));
        else
                rc = unpack_all(u, &unread);
        if (u->dirfd >= 0)
                close(u->dirfd);
        dir_cache_flush(u);
        free(u->dcache);
        EVP_MD_CTX_free(u->md);
        archive_read_free(u->a);
        json_object_put(u->manifest);
        free(u->v);
        if (rc < 0) {
                if (u->dir)
                        archive_root_remove(u->dir);
                free(u->dir);
                archive_unread_done(&unread);
                *ret_why = u->why ? u->why : xstrdup(strerror(-rc));
                return rc;
        }
        free(u->why);
        *ret_dir = u->dir;
        *ret_unread = unread;
        return 0;
}

static struct archive *reader(void)
{
        struct archive *a = archive_read_new();
        if (!a)
                return NULL;
        /* Only what gather writes: tar (pax) compressed with gzip or zstd, or not at all. The other
         * formats and filters are attack surface we do not need. */
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_format_tar(a);
        return a;
}

int archive_root_unpack(const char *file, char **ret_dir, struct archive_unread *ret_unread, char **ret_why)
{
        struct unpack u = {.dirfd = -1};
        u.a = reader();
        if (!u.a) {
                *ret_why = xstrdup("libarchive: out of memory");
                return -ENOMEM;
        }
        if (archive_read_open_filename(u.a, file, 65536) != ARCHIVE_OK) {
                int e = archive_errno(u.a);
                *ret_why = xasprintf("%s", archive_error_string(u.a));
                archive_read_free(u.a);
                return e > 0 ? -e : -EINVAL;
        }
        return unpack(&u, ret_dir, ret_unread, ret_why);
}

int archive_root_unpack_mem(const void *data, size_t size, char **ret_dir, struct archive_unread *ret_unread, char **ret_why)
{
        struct unpack u = {.dirfd = -1};
        u.a = reader();
        if (!u.a) {
                *ret_why = xstrdup("libarchive: out of memory");
                return -ENOMEM;
        }
        if (archive_read_open_memory(u.a, data, size) != ARCHIVE_OK) {
                *ret_why = xasprintf("%s", archive_error_string(u.a));
                archive_read_free(u.a);
                return -EINVAL;
        }
        return unpack(&u, ret_dir, ret_unread, ret_why);
}

void archive_unread_done(struct archive_unread *u)
{
        strv_done(&u->paths);
        free(u->err);
        u->err = NULL;
}

void archive_root_remove(const char *dir)
{
        private_tmp_remove(dir);
}
