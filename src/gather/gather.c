/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Packing the recorded evidence into an archive with a MANIFEST (gather.h). */
#include "gather/gather.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gather/anonymize.h"
#include "config.h"
#include "base/archive-root.h"
#include "base/digest.h"
#include "facts/json-out.h"
#include "base/lazy-archive.h"

/* OUT_UNLISTED: a directory that is there but could not be listed (EACCES, EIO): stored as an
 * empty directory the archive root refuses to list with the same error, so an audit of the archive
 * says "unreadable" where the machine did, never "empty" or "not there". */
enum out_type { OUT_FILE, OUT_DIR, OUT_LINK, OUT_UNREAD, OUT_UNLISTED };

struct out {
        char *path; /* root-relative, no leading "/" */
        enum out_type type;
        const char *data; /* OUT_FILE: borrowed from the root handle, or owned (anonymized) */
        char *owned;
        size_t len;
        char *target; /* OUT_LINK */
        int err;      /* OUT_UNREAD, OUT_UNLISTED: what reading or listing it gives (-errno) */
        struct out *next;
};

#define BUCKETS 4096

/* What lstat said about a real path, so that the thousands of paths sharing a prefix
 * (sys/devices/pci0000:00/...) stat each component once. */
struct known {
        char *path;
        int err;
        mode_t mode;
        char *target; /* links */
        struct known *next;
};

struct gctx {
        struct root *r;
        const struct gather_opts *o;
        struct out *b[BUCKETS];
        struct out **v;
        size_t n, cap;
        json_object *left_out;
        struct strv left_seen;
        struct known *kb[BUCKETS];
        char *private; /* the first file not every user could read on the machine (NULL: none) */
};

/*
 * What never leaves the machine, whatever asked for it. Patterns are fnmatch(3) on the absolute
 * path with '*' crossing '/'. Secrets by name (shadow files, private keys, keytabs), the home
 * directories (except NCCL's per-user ~/.nccl.conf, which probes read) and process environments
 * (they carry tokens).
 */
static const char *const deny[] = {
        "/etc/shadow*", "/etc/gshadow*", "/etc/security/opasswd", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private/*",
        "*.key", "*.pem", "*.keytab", "*/id_rsa*", "*/id_ed25519*", "*/id_ecdsa*", "/proc/*/environ",
        "/root", "/root/*", "/home/*",
};

const char *gather_denied(const char *path)
{
        _cleanup_free_ char *abs = xasprintf("/%s", path[0] == '/' ? path + 1 : path);
        for (size_t i = 0; i < ARRAY_SIZE(deny); i++)
                if (fnmatch(deny[i], abs, 0) == 0) {
                        /* NCCL reads ~/.nccl.conf (NCCL docs, "NCCL_CONF_FILE"): the one file kept */
                        const char *base = strrchr(abs, '/');
                        if ((startswith(abs, "/home/") || startswith(abs, "/root/")) && streq(base, "/.nccl.conf") &&
                            !strstr(abs, "/.."))
                                continue;
                        return deny[i];
                }
        return NULL;
}

static unsigned hash(const char *s) { return string_hash(s) % BUCKETS; }


/* lstat of PATH in the root, remembered; for a link also its target. */
static const struct known *look(struct gctx *g, const char *path)
{
        unsigned h = hash(path);
        for (struct known *k = g->kb[h]; k; k = k->next)
                if (streq(k->path, path))
                        return k;
        struct known *k = xcalloc(1, sizeof(*k));
        k->path = xstrdup(path);
        struct stat st;
        k->err = root_stat(g->r, path, &st, false);
        if (k->err == 0) {
                k->mode = st.st_mode;
                if (S_ISLNK(st.st_mode))
                        k->err = root_readlink(g->r, path, &k->target);
        }
        k->next = g->kb[h];
        g->kb[h] = k;
        return k;
}

static struct out *find(struct gctx *g, const char *path)
{
        for (struct out *e = g->b[hash(path)]; e; e = e->next)
                if (streq(e->path, path))
                        return e;
        return NULL;
}

static void leave_out(struct gctx *g, const char *path, const char *fmt, ...) _printf_(3, 4);
static void leave_out(struct gctx *g, const char *path, const char *fmt, ...)
{
        if (strv_contains(&g->left_seen, path))
                return;
        strv_add(&g->left_seen, path);
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *why = xvasprintf(fmt, ap);
        va_end(ap);
        json_object *o = json_object_new_object();
        _cleanup_free_ char *abs = xasprintf("/%s", path);
        json_object_object_add(o, "path", json_object_new_string(abs));
        json_object_object_add(o, "why", json_object_new_string(why));
        json_object_array_add(g->left_out, o);
}

/* May PATH go into the archive? Records why not. */
static bool allowed(struct gctx *g, const char *path)
{
        const char *d = gather_denied(path);
        if (d) {
                leave_out(g, path, "built-in deny list (%s)", d);
                return false;
        }
        _cleanup_free_ char *abs = xasprintf("/%s", path);
        for (size_t i = 0; i < g->o->exclude.n; i++)
                if (fnmatch(g->o->exclude.v[i], abs, 0) == 0) {
                        leave_out(g, path, "--exclude %s", g->o->exclude.v[i]);
                        return false;
                }
        return true;
}

/* Add or upgrade the entry at PATH: a file beats an unread name; other types are first come. */
static struct out *add(struct gctx *g, const char *path, enum out_type t)
{
        struct out *e = find(g, path);
        if (e) {
                if ((e->type == OUT_UNREAD && t == OUT_FILE) || (e->type == OUT_DIR && t == OUT_UNLISTED)) {
                        e->type = t;
                        return e;
                }
                return e->type == t ? e : NULL;
        }
        e = xcalloc(1, sizeof(*e));
        e->path = xstrdup(path);
        e->type = t;
        unsigned h = hash(path);
        e->next = g->b[h];
        g->b[h] = e;
        GREEDY_REALLOC(g->v, g->cap, g->n + 1, 1024);
        g->v[g->n++] = e;
        return e;
}

static void add_link(struct gctx *g, const char *path, const char *target)
{
        if (!allowed(g, path))
                return;
        struct out *e = add(g, path, OUT_LINK);
        if (e && !e->target)
                e->target = xstrdup(target);
}

static char *join(const struct strv *c, size_t n)
{
        struct sbuf b = {0};
        for (size_t i = 0; i < n; i++) {
                if (i)
                        sbuf_add(&b, "/");
                sbuf_add(&b, c->v[i]);
        }
        return b.len ? sbuf_steal(&b) : xstrdup("");
}

/*
 * Resolve PATH in the root component by component, storing every symbolic link met on the way
 * (and the last one too when FOLLOW_LAST). Returns the real path, or NULL when a component does
 * not exist, is not allowed, or the links loop.
 */
static char *resolve(struct gctx *g, const char *path, bool follow_last)
{
        struct strv todo = {0}, cur = {0};
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                strv_add(&todo, c);
        size_t pos = 0;
        int links = 0;
        char *ret = NULL;
        for (;;) {
                if (pos == todo.n) {
                        ret = join(&cur, cur.n);
                        break;
                }
                const char *c = todo.v[pos++];
                if (streq(c, "."))
                        continue;
                if (streq(c, "..")) {
                        strv_pop(&cur);
                        continue;
                }
                strv_add(&cur, c);
                _cleanup_free_ char *cand = join(&cur, cur.n);
                const struct known *k = look(g, cand);
                if (k->err < 0)
                        break;
                if (!S_ISLNK(k->mode) || (pos == todo.n && !follow_last))
                        continue;
                if (++links > 40)
                        break;
                char *target = xstrdup(k->target);
                add_link(g, cand, target);
                strv_pop(&cur);
                if (target[0] == '/')
                        strv_done(&cur);
                /* The rest becomes the target's components followed by what was left. */
                struct strv next = {0};
                char *s2 = NULL;
                for (char *t = strtok_r(target, "/", &s2); t; t = strtok_r(NULL, "/", &s2))
                        strv_add(&next, t);
                for (size_t i = pos; i < todo.n; i++)
                        strv_add(&next, todo.v[i]);
                free(target);
                strv_done(&todo);
                todo = next;
                pos = 0;
        }
        strv_done(&todo);
        strv_done(&cur);
        if (ret && !*ret) {
                free(ret);
                return NULL; /* the root itself */
        }
        return ret;
}

/* Store what exists at the real path REAL (not followed): directory, link or unread name. */
static void add_existing(struct gctx *g, const char *real)
{
        if (!allowed(g, real))
                return;
        const struct known *k = look(g, real);
        if (k->err < 0)
                return;
        mode_t m = k->mode;
        if (S_ISDIR(m))
                add(g, real, OUT_DIR);
        else if (S_ISLNK(m))
                add_link(g, real, k->target);
        else if (S_ISREG(m)) {
                struct out *e = add(g, real, OUT_UNREAD);
                if (e && e->type == OUT_UNREAD && !e->err)
                        e->err = -ENODATA;
        } else
                leave_out(g, real, "%s: only files, directories and links are gathered",
                          S_ISCHR(m) || S_ISBLK(m) ? "a device node" : "a FIFO or socket");
}

/* Remember the first stored file that not every user could read where it was gathered: a file
 * without the "others may read" bit, or content with no file behind it that the caller says is
 * private (the kernel log, which dmesg_restrict keeps from users). Other such content (hwloc's
 * export) is made from files that are stored, and judged, themselves. */
static void note_private(struct gctx *g, const char *real)
{
        if (g->private)
                return;
        const struct known *k = look(g, real);
        _cleanup_free_ char *abs = xasprintf("/%s", real);
        if (k->err < 0 ? strv_contains(&g->o->private, abs) : !(k->mode & S_IROTH))
                g->private = xstrdup(real);
}

static void one_record(struct gctx *g, const struct root_rec *rec)
{
        if (!*rec->path || !allowed(g, rec->path))
                return;
        bool follow = rec->kinds & (ROOT_REC_FILE | ROOT_REC_DIR | ROOT_REC_STAT);
        _cleanup_free_ char *real = resolve(g, rec->path, follow);
        /* A capture (content recorded with the path) need not exist on the machine. */
        if (!real && rec->data && rec->path[0] && !strstr(rec->path, ".."))
                real = xstrdup(rec->path);
        if (!real || !allowed(g, real))
                return;
        if (rec->kinds & ROOT_REC_FILE) {
                const char *data = rec->data;
                size_t len = rec->len;
                int rc = data ? 0 : root_read(g->r, rec->path, &data, &len);
                if (rc == 0) {
                        struct out *e = add(g, real, OUT_FILE);
                        if (e && !e->data) {
                                e->data = data;
                                e->len = len;
                                note_private(g, real);
                        }
                } else if (rc == -EISDIR)
                        add(g, real, OUT_DIR);
                else if (!root_gone(rc)) {
                        /* Reading it failed on the machine: the archive root fails the same way. */
                        struct out *e = add(g, real, OUT_UNREAD);
                        if (e && e->type == OUT_UNREAD)
                                e->err = rc;
                }
        }
        if (rec->kinds & (ROOT_REC_STAT | ROOT_REC_LINK))
                add_existing(g, real);
        if (rec->kinds & ROOT_REC_DIR) {
                struct strv names = {0};
                int rc = root_list(g->r, real, &names);
                if (rc == 0) {
                        add(g, real, OUT_DIR);
                        for (size_t i = 0; i < names.n; i++) {
                                _cleanup_free_ char *child = xasprintf("%s/%s", real, names.v[i]);
                                add_existing(g, child);
                        }
                } else if (!root_gone(rc)) {
                        /* There but not listable on the machine: the archive root fails the same way. */
                        struct out *e = add(g, real, OUT_UNLISTED);
                        if (e)
                                e->err = rc;
                }
                strv_done(&names);
        }
}

static int out_cmp(const void *a, const void *b)
{
        return strcmp((*(struct out *const *)a)->path, (*(struct out *const *)b)->path);
}

static const char *type_str(enum out_type t)
{
        static const char *const s[] = {"file", "dir", "link", "unread", "unlisted"};
        return s[t];
}

bool gather_have_zstd(void)
{
        struct archive *a = archive_write_new();
        bool ok = a && archive_write_add_filter_zstd(a) == ARCHIVE_OK;
        archive_write_free(a);
        return ok;
}

static int write_entry(struct archive *a, const char *name, mode_t type, mode_t perm, const void *data, size_t len,
                       const char *target, time_t now, char **why)
{
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, perm);
        archive_entry_set_uid(e, 0);
        archive_entry_set_gid(e, 0);
        archive_entry_set_mtime(e, now, 0);
        if (type == AE_IFREG)
                archive_entry_set_size(e, (la_int64_t)len);
        if (target)
                archive_entry_set_symlink(e, target);
        int rc = 0;
        if (archive_write_header(a, e) != ARCHIVE_OK ||
            (type == AE_IFREG && len && archive_write_data(a, data, len) != (la_ssize_t)len)) {
                *why = xasprintf("writing %s: %s", name, archive_error_string(a));
                rc = -EIO;
        }
        archive_entry_free(e);
        return rc;
}

/* Frees what the walk collected: the entries, the left-out list's names, the stat cache. */
static void gctx_done(struct gctx *g)
{
        for (size_t i = 0; i < g->n; i++) {
                free(g->v[i]->path);
                free(g->v[i]->owned);
                free(g->v[i]->target);
                free(g->v[i]);
        }
        free(g->v);
        strv_done(&g->left_seen);
        free(g->private);
        for (size_t i = 0; i < BUCKETS; i++)
                for (struct known *k = g->kb[i], *n; k; k = n) {
                        n = k->next;
                        free(k->path);
                        free(k->target);
                        free(k);
                }
}

static void anonymizer_freep(struct anonymizer **an)
{
        *an = anonymizer_free(*an);
}

/* Every recorded read of R becomes entries of G, sorted by path. */
static void collect(struct gctx *g, struct root *r)
{
        size_t nrec;
        const struct root_rec *recs = root_recorded(r, &nrec);
        /* A copy: resolving stats and lists through the same (recording) handle. */
        struct root_rec *snap = xmalloc((nrec ? nrec : 1) * sizeof(*snap));
        if (nrec)
                memcpy(snap, recs, nrec * sizeof(*snap));
        for (size_t i = 0; i < nrec; i++)
                one_record(g, &snap[i]);
        free(snap);
        qsort_safe(g->v, g->n, sizeof(*g->v), out_cmp);
}

/* The manifest's record of one entry, counted into ST; a file's content is anonymized here (the
 * archive then carries the same bytes the manifest hashed). */
static json_object *manifest_entry(struct anonymizer *an, struct out *e, struct gather_stats *st)
{
        json_object *f = json_object_new_object();
        if (an) { /* identifiers in names too (dev/disk/by-uuid/UUID): the same replacement as in content */
                char *p = anonymize_path(an, e->path);
                free(e->path);
                e->path = p;
                if (e->target) {
                        p = anonymize_path(an, e->target);
                        free(e->target);
                        e->target = p;
                }
        }
        json_object_object_add(f, "path", json_object_new_string(e->path));
        json_object_object_add(f, "type", json_object_new_string(type_str(e->type)));
        switch (e->type) {
        case OUT_FILE: {
                if (an && anonymize_content(an, e->path, e->data, e->len, &e->owned, &e->len))
                        e->data = e->owned;
                char sha[65];
                sha256_hex(e->data, e->len, sha);
                json_object_object_add(f, "size", json_object_new_int64((int64_t)e->len));
                json_object_object_add(f, "sha256", json_object_new_string(sha));
                st->files++;
                st->bytes += e->len;
                break;
        }
        case OUT_LINK:
                json_object_object_add(f, "target", json_object_new_string(e->target));
                st->links++;
                break;
        case OUT_UNREAD:
        case OUT_UNLISTED:
                json_object_object_add(f, "errno", json_object_new_int(-e->err));
                json_object_object_add(f, "why", json_object_new_string(strerror(-e->err)));
                st->unread++;
                break;
        case OUT_DIR: st->dirs++; break;
        }
        return f;
}

/* The manifest: who gathered what, when, from where, and every entry (anonymized when asked). */
static json_object *manifest_new(struct gctx *g, struct anonymizer *an, time_t now, struct gather_stats *st)
{
        const struct gather_opts *o = g->o;
        json_object *top = json_object_new_object(), *files = json_object_new_array();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "tool", json_object_new_string("llmtune gather"));
        json_object_object_add(top, "version", json_object_new_string(LLMTUNE_VERSION));
        _cleanup_free_ char *host = o->host ? (an ? anonymize_host(an, o->host) : xstrdup(o->host)) : NULL;
        json_object_object_add(top, "host", host ? json_object_new_string(host) : NULL);
        char ts[32];
        struct tm tm;
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        json_object_object_add(top, "time", json_object_new_string(ts));
        json_object_object_add(top, "kernel", o->kernel ? json_object_new_string(o->kernel) : NULL);
        _cleanup_free_ char *rootp = an ? anonymize_text(an, root_path(g->r)) : xstrdup(root_path(g->r));
        json_object_object_add(top, "root", json_object_new_string(rootp));
        json_object *cmd = json_object_new_array();
        for (int i = 0; i < o->argc; i++) {
                _cleanup_free_ char *arg = an ? anonymize_text(an, o->argv[i]) : xstrdup(o->argv[i]);
                json_object_array_add(cmd, json_object_new_string(arg));
        }
        json_object_object_add(top, "command_line", cmd);
        json_object_object_add(top, "anonymized", json_object_new_boolean(o->anonymize));
        for (size_t i = 0; i < g->n; i++)
                json_object_array_add(files, manifest_entry(an, g->v[i], st));
        json_object_object_add(top, "files", files);
        /* The manifest takes the left-out list over. */
        json_object_object_add(top, "left_out", g->left_out);
        st->left_out = json_object_array_length(g->left_out);
        return top;
}

/* The manifest, then every entry under ARCHIVE_ROOT_DIR, onto the open archive A. */
static int write_entries(struct archive *a, const struct gctx *g, const char *manifest, time_t now, char **why)
{
        int rc = write_entry(a, ARCHIVE_MANIFEST, AE_IFREG, 0644, manifest, strlen(manifest), NULL, now, why);
        for (size_t i = 0; rc == 0 && i < g->n; i++) {
                struct out *e = g->v[i];
                _cleanup_free_ char *name = xasprintf(ARCHIVE_ROOT_DIR "/%s%s", e->path, e->type == OUT_DIR || e->type == OUT_UNLISTED ? "/" : "");
                switch (e->type) {
                case OUT_FILE: rc = write_entry(a, name, AE_IFREG, 0644, e->data, e->len, NULL, now, why); break;
                case OUT_UNREAD: rc = write_entry(a, name, AE_IFREG, 0644, "", 0, NULL, now, why); break;
                case OUT_DIR:
                case OUT_UNLISTED: rc = write_entry(a, name, AE_IFDIR, 0755, NULL, 0, NULL, now, why); break;
                case OUT_LINK: rc = write_entry(a, name, AE_IFLNK, 0777, NULL, 0, e->target, now, why); break;
                }
        }
        if (rc == 0 && archive_write_close(a) != ARCHIVE_OK) {
                rc = -EIO;
                *why = xasprintf("libarchive: %s", archive_error_string(a));
        }
        return rc;
}

/* The archive onto FD (gzip, or zstd for a .zst/.tzst OUTPUT). */
static int write_archive_fd(int fd, const struct gctx *g, const char *output, const char *manifest, time_t now,
                            char **why)
{
        struct archive *a = archive_write_new();
        bool zst = endswith(output, ".zst") || endswith(output, ".tzst");
        int rc;
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            (zst ? archive_write_add_filter_zstd(a) : archive_write_add_filter_gzip(a)) != ARCHIVE_OK ||
            archive_write_open_fd(a, fd) != ARCHIVE_OK) {
                rc = -EIO;
                *why = xasprintf("libarchive: %s", archive_error_string(a));
        } else
                rc = write_entries(a, g, manifest, now, why);
        archive_write_free(a);
        return rc;
}

void gather_stats_done(struct gather_stats *st)
{
        free(st->private);
        st->private = NULL;
}

/* The archive's mode: what the umask lets a new file have (as for any file the user creates), and
 * only the owner's bits when it holds a file not every user could read there, so the archive is
 * never wider than its most private member. */
static mode_t archive_mode(const struct gctx *g)
{
        mode_t mask = umask(0);
        umask(mask);
        mode_t mode = 0666 & ~mask;
        return g->private ? mode & 0600 : mode;
}

int gather_write(struct root *r, const struct gather_opts *o, struct gather_stats *st, char **why)
{
        *why = NULL;
        *st = (struct gather_stats){0};
        _cleanup_(gctx_done) struct gctx g = {.r = r, .o = o, .left_out = json_object_new_array()};
        collect(&g, r);

        _cleanup_(anonymizer_freep) struct anonymizer *an = o->anonymize ? anonymizer_new(o->host) : NULL;
        time_t now = time(NULL);
        _cleanup_(json_object_putp) json_object *top = manifest_new(&g, an, now, st);
        const char *manifest = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                           JSON_C_TO_STRING_NOSLASHESCAPE);

        /* Written to a temporary name beside the output and renamed: no half archive under the
         * name asked for. */
        _cleanup_free_ char *tmp = xasprintf("%s.tmp-XXXXXX", o->output);
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                int rc = -errno;
                *why = xasprintf("cannot create %s: %s", tmp, strerror(errno));
                return rc;
        }
        fchmod(fd, 0600); /* evidence about a machine: readable by the owner only until moved */
        int rc = write_archive_fd(fd, &g, o->output, manifest, now, why);
        if (rc == 0 && fsync(fd) < 0) {
                rc = -errno;
                *why = xasprintf("%s: %s", tmp, strerror(errno));
        }
        st->mode = archive_mode(&g);
        st->private = g.private ? xasprintf("/%s", g.private) : NULL;
        if (rc == 0 && (fchmod(fd, st->mode) < 0 || rename(tmp, o->output) < 0)) {
                rc = -errno;
                *why = xasprintf("cannot rename %s to %s: %s", tmp, o->output, strerror(errno));
        }
        if (rc < 0)
                unlink(tmp);
        return rc;
}
