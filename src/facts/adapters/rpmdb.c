/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/adapters/rpmdb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facts/facts.h"
#include "base/lazy-sqlite.h"

#define RPMDB_MAX (1ull << 30) /* a full desktop's database is a few hundred MB */
#define TAG_NAME 1000
#define TAG_VERSION 1001
#define TYPE_STRING 6

static uint32_t be32(const unsigned char *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int rpmdb_header_nv(const unsigned char *blob, size_t len, char **ret_name, char **ret_version)
{
        if (len < 8)
                return -EBADMSG;
        uint64_t il = be32(blob), dl = be32(blob + 4);
        /* rpm refuses more than 0xffff entries (hdrchkTags); the entries and data fill the blob */
        if (il == 0 || il > 0xffff || 8 + il * 16 + dl > len)
                return -EBADMSG;
        const unsigned char *data = blob + 8 + il * 16;
        char *name = NULL, *version = NULL;
        for (uint64_t i = 0; i < il; i++) {
                const unsigned char *e = blob + 8 + i * 16;
                uint32_t tag = be32(e), type = be32(e + 4), off = be32(e + 8);
                char **slot = tag == TAG_NAME ? &name : tag == TAG_VERSION ? &version : NULL;
                if (!slot || *slot || type != TYPE_STRING)
                        continue;
                const unsigned char *nul = off < dl ? memchr(data + off, '\0', dl - off) : NULL;
                if (!nul) {
                        free(name);
                        free(version);
                        return -EBADMSG;
                }
                *slot = xstrdup((const char *)data + off);
        }
        if (!name || !version || !*name || !*version) {
                free(name);
                free(version);
                return -EBADMSG;
        }
        *ret_name = name;
        *ret_version = version;
        return 0;
}

/* Write LEN bytes of DATA, or the rest of IN when DATA is NULL, to OUT. 0 or -errno. */
static int copy_bytes(int out, const char *data, size_t len, int in)
{
        if (data)
                return write_all(out, data, len);
        char buf[1 << 16];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                int rc = write_all(out, buf, (size_t)n);
                if (rc < 0)
                        return rc;
        }
}

/* Copy the file at PATH under the root into DIR/BASE. 0, or -errno (-ENOENT: not there). Read
 * whole through the root's cache when it is small enough (so that `gather` records it like any
 * file), else streamed from a descriptor opened in the root. */
static int copy_out(struct root *r, const char *path, const char *dir, const char *base)
{
        const char *data = NULL;
        size_t len = 0;
        _cleanup_close_ int in = -1;
        int rc = root_read(r, path, &data, &len);
        if (rc == -EFBIG) {
                struct stat st;
                in = root_open(r, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
                rc = in < 0 ? in : fstat(in, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -ENOTREG
                                 : (uint64_t)st.st_size > RPMDB_MAX ? -EFBIG : 0;
                data = NULL;
        }
        _cleanup_free_ char *dst = xasprintf("%s/%s", dir, base);
        _cleanup_close_ int out = rc < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (rc == 0 && out < 0)
                rc = -errno;
        if (rc == 0)
                rc = copy_bytes(out, data, len, in);
        return rc;
}

/* The first package of the database at PATH (a private copy) whose name MATCH accepts. */
static int query(const char *path, bool (*match)(const char *), char **ret_name, char **ret_version, char **ret_why)
{
        const char *why = NULL;
        if (!lazy_lib_open(LAZY_SQLITE, &why)) {
                *ret_why = xstrdup(why);
                return -ELIBACC;
        }
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        /* read-write on the private copy: a WAL is replayed only by a connection that may write */
        int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(db, "SELECT blob FROM Packages", -1, &st, NULL);
        int found = -ESRCH;
        while (rc == SQLITE_OK && found == -ESRCH) {
                int s = sqlite3_step(st);
                if (s == SQLITE_DONE)
                        break;
                if (s != SQLITE_ROW) {
                        rc = s;
                        break;
                }
                const void *b = sqlite3_column_blob(st, 0);
                int n = sqlite3_column_bytes(st, 0);
                char *name = NULL, *version = NULL;
                if (b && n > 0 && rpmdb_header_nv(b, (size_t)n, &name, &version) == 0 && match(name)) {
                        *ret_name = name;
                        *ret_version = version;
                        found = 0;
                        continue;
                }
                free(name);
                free(version);
        }
        if (rc != SQLITE_OK) {
                *ret_why = xasprintf("%s: %s", RPMDB_SQLITE, db ? sqlite3_errmsg(db) : "cannot be opened");
                found = -EBADMSG;
        }
        if (st)
                sqlite3_finalize(st);
        sqlite3_close(db);
        return found;
}

static void remove_copy(const char *dir)
{
        static const char *const names[] = {"rpmdb.sqlite", "rpmdb.sqlite-wal", "rpmdb.sqlite-shm",
                                            "rpmdb.sqlite-journal"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, names[i]);
                unlink(p);
        }
        rmdir(dir);
}

int rpmdb_package_version(struct root *r, bool (*match)(const char *name), char **ret_name, char **ret_version,
                          char **ret_why)
{
        *ret_why = NULL;
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *dir = xasprintf("%s/llmtune-rpmdb-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
                int err = -errno;
                *ret_why = xasprintf("cannot make a private directory for a copy of %s: %s", RPMDB_SQLITE, strerror(errno));
                return err;
        }
        int rc = copy_out(r, RPMDB_SQLITE, dir, "rpmdb.sqlite");
        int wrc = rc == 0 ? copy_out(r, RPMDB_SQLITE "-wal", dir, "rpmdb.sqlite-wal") : 0;
        if (rc == 0 && wrc < 0 && !root_gone(wrc)) {
                rc = wrc;
                *ret_why = xasprintf("%s-wal (rows not yet in the database file): %s", RPMDB_SQLITE, errno_name(wrc));
        } else if (root_gone(rc)) {
                struct stat st;
                *ret_why = xstrdup(root_stat(r, RPMDB_BDB, &st, true) == 0
                                           ? "only an rpm database in Berkeley DB form (" RPMDB_BDB
                                             ", rpm before 4.16: RHEL 8 and older), which is not read"
                                           : "no rpm database (" RPMDB_SQLITE ")");
        } else if (rc < 0)
                *ret_why = xasprintf("%s: %s", RPMDB_SQLITE, errno_name(rc));
        else {
                _cleanup_free_ char *copy = xasprintf("%s/rpmdb.sqlite", dir);
                rc = query(copy, match, ret_name, ret_version, ret_why);
                if (rc == -ESRCH)
                        *ret_why = xstrdup("no such package in the rpm database (" RPMDB_SQLITE ")");
        }
        remove_copy(dir);
        return rc;
}
