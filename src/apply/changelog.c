/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The change log (see changelog.h). One JSON object per line, keys in a fixed order:
 *
 *   seq time host run event ref profile profile_hash rule target type before after
 *   before_sha256 after_sha256 backup_before backup_after mode mkdirs argv undo aux reboot detail
 *   prev hash
 *
 * "hash" is always the last key, and a line ends in exactly `,"hash":"<64 hex digits>"}` and its
 * newline. The hash covers the bytes of the line as written: it is the SHA-256 (hex) of the bytes
 * before `,"hash":"` followed by one `}` -- the line with its hash field cut out. (When it was
 * written, that is the record serialized by json-c without "hash", so logs written before this
 * rule check the same.) No re-serialization takes part, so a changed space, an added CR or any
 * other byte fails the record's hash, and a script checks the chain with SHA-256 and byte slicing.
 * "prev" is the previous record's "hash" ("0" x 64 for the first), so an edited record fails its
 * own hash, and a removed or reordered one breaks the next record's "prev" and the seq sequence.
 *
 * The head file (CHANGELOG_HEAD) is "SEQ:HASH\n" of the last record, replaced atomically
 * (temporary file, fsync, rename, directory fsync) after each append. The log is fsynced before
 * the head is replaced, so the head is never ahead of an intact log: one record behind is a run
 * killed between the two writes, ahead (or naming a record the log holds with another hash) is a
 * log that was cut.
 *
 * What "ref" points at (changelog_in_force and verify rely on it):
 *   intent                   null (a new step)
 *   done, failed             the seq of the "intent" it concludes
 *   undo-intent              the seq of the "done" record it is about to reverse
 *   undone, undo-failed      the seq of the "done" record it reverses (not of its undo-intent)
 *
 * File contents are not inline: before/after are null for CHANGE_FILE and the contents live in
 * CHANGELOG_DIR/backups/<sha256>, written once per content (atomically, before the record that
 * names them), so a record never references a backup that is not on disk. A runtime value longer
 * than CHANGELOG_VALUE_INLINE is kept the same way (its before/after null, its *_sha256 and
 * backup_* set); shorter ones are inline.
 */
#include "changelog.h"

#include "deadline.h"

#include <dirent.h>
#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ack.h"
#include "actions.h"
#include "digest.h"
#include "facts.h"
#include "json-out.h"

#define BACKUP_DIR CHANGELOG_DIR "/backups"
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char zero_hash[65] = "0000000000000000000000000000000000000000000000000000000000000000";

struct changelog {
        struct root *root;
        int fd;
        long seq;       /* last seq written */
        char prev[65];  /* its hash */
        char *host;
        char *note;     /* what opening did to the head file (changelog_note) */
};

static bool is_hex64(const char *s)
{
        if (!s || strlen(s) != 64)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

/* ---- trust in the log's own files ---- */

/* Why the last file of the log was refused (changelog_strerror), with the code it was refused with. */
static char refusal[512];
static int refusal_code;

static int refuse(int code, const char *fmt, ...) _printf_(2, 3);
static int refuse(int code, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(refusal, sizeof(refusal), fmt, ap);
        va_end(ap);
        refusal_code = code;
        return code;
}

const char *changelog_strerror(int rc)
{
        if (rc == refusal_code && refusal[0])
                return refusal;
        if (rc == -EBADMSG)
                return "its last record is damaged (see `llmtune verify`)";
        if (rc == -ELOOP)
                return "a symbolic link is on its path (refused)";
        return strerror(-rc);
}

/* Who may own the log, its lock and backups: root, or the user running llmtune on a tree of their own. */
static bool owner_ok(uid_t uid) { return uid == 0 || uid == geteuid(); }

/*
 * The trust checks profiles get, for the log's files: the file must be a regular file (O_NONBLOCK
 * first, so a FIFO planted in its place cannot hang the open; read(2) then waits as usual), owned
 * by root (or the user running llmtune), writable by no group or other user, and have one link (a
 * hard link would make appends and reads reach a file outside the tree). STRICT false (the lock):
 * only the kind of file is checked.
 */
static int open_trusted(struct root *r, const char *path, int flags, mode_t mode, bool strict)
{
        int fd = root_open_nolinks(r, path, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode);
        if (fd < 0)
                return fd;
        struct stat st;
        int rc = 0;
        if (fstat(fd, &st) < 0)
                rc = -errno;
        else if (!S_ISREG(st.st_mode))
                rc = refuse(-EINVAL, "%s is not a regular file (a FIFO, device or socket is never used as the change log)",
                            path);
        else if (strict && !owner_ok(st.st_uid))
                rc = refuse(-EPERM, "%s is owned by uid %u, neither root nor the user running llmtune", path,
                            (unsigned)st.st_uid);
        else if (strict && (st.st_mode & (S_IWGRP | S_IWOTH)))
                rc = refuse(-EPERM, "%s is writable by its group or by others (mode %04o): anyone could forge records",
                            path, (unsigned)(st.st_mode & 07777));
        else if (strict && st.st_nlink != 1)
                rc = refuse(-EMLINK, "%s has %lu hard links: it may be a file outside the tree", path,
                            (unsigned long)st.st_nlink);
        else {
                int fl = fcntl(fd, F_GETFL);
                if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                        rc = -errno;
        }
        if (rc < 0) {
                close(fd);
                return rc;
        }
        return fd;
}

/* The log's directory and its backups directory: owned by root (or the user), not writable by others. */
static int check_dir(struct root *r, const char *path)
{
        int fd = root_open_nolinks(r, path, O_PATH | O_DIRECTORY, 0);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        struct stat st;
        int rc = fstat(fd, &st) < 0 ? -errno : 0;
        close(fd);
        if (rc == 0 && !owner_ok(st.st_uid))
                rc = refuse(-EPERM, "%s is owned by uid %u, neither root nor the user running llmtune", path,
                            (unsigned)st.st_uid);
        else if (rc == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)))
                rc = refuse(-EPERM, "%s is writable by its group or by others (mode %04o)", path,
                            (unsigned)(st.st_mode & 07777));
        return rc;
}

static int check_dirs(struct root *r)
{
        int rc = check_dir(r, CHANGELOG_DIR);
        return rc < 0 ? rc : check_dir(r, BACKUP_DIR);
}

char *changelog_run_id(void)
{
        time_t t = time(NULL);
        struct tm tm;
        char buf[32];
        gmtime_r(&t, &tm);
        strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
        return xasprintf("%s-%ld", buf, (long)getpid());
}

static int read_fd_all(int fd, char **ret, size_t *ret_len)
{
        /* Refuse an oversized log before reading any of it (memory stays bounded by what is read). */
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > CHANGELOG_READ_MAX)
                return -EFBIG;
        struct sbuf b = {0};
        char buf[65536];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = -errno;
                        free(b.s);
                        return e;
                }
                if (n == 0)
                        break;
                if (b.len + (size_t)n > CHANGELOG_READ_MAX) {
                        free(b.s);
                        return -EFBIG;
                }
                sbuf_addn(&b, buf, (size_t)n);
        }
        *ret_len = b.len;
        *ret = b.s ? sbuf_steal(&b) : xstrdup("");
        return 0;
}

/* Parse one line strictly: a JSON object and nothing after it. */
static json_object *parse_line(const char *s, size_t len)
{
        json_tokener *tok = json_tokener_new();
        json_object *o = json_tokener_parse_ex(tok, s, (int)len);
        bool ok = o && json_tokener_get_error(tok) == json_tokener_success &&
                  json_tokener_get_parse_end(tok) == len && json_object_is_type(o, json_type_object);
        json_tokener_free(tok);
        if (!ok) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

#define HASH_FIELD ",\"hash\":\""
#define HASH_TAIL_LEN (sizeof(HASH_FIELD) - 1 + 64 + 2) /* ,"hash":"<64 hex>"} */

/*
 * The hash LINE (without its newline) stores, in STORED ("" when the line does not end in a hash
 * field as changelog_append writes it), and whether the bytes of the line hash to it: the bytes
 * before `,"hash":"` followed by `}` (see the top of this file). Returns false for a line that is
 * not in that form (a CR or a space after the hash, a hash that is not lowercase hex).
 */
static bool line_hash_ok(const char *line, size_t n, char stored[65])
{
        stored[0] = '\0';
        if (n < HASH_TAIL_LEN + 1)
                return false;
        const char *tail = line + n - HASH_TAIL_LEN;
        if (memcmp(tail, HASH_FIELD, sizeof(HASH_FIELD) - 1) != 0 || memcmp(line + n - 2, "\"}", 2) != 0)
                return false;
        char h[65];
        memcpy(h, tail + sizeof(HASH_FIELD) - 1, 64);
        h[64] = '\0';
        if (!is_hex64(h))
                return false;
        memcpy(stored, h, sizeof(h));
        size_t body = (size_t)(tail - line);
        _cleanup_free_ char *buf = xmalloc(body + 1);
        memcpy(buf, line, body);
        buf[body] = '}';
        char actual[65];
        sha256_hex(buf, body + 1, actual);
        return streq(actual, stored);
}

static const char *get_str(json_object *o, const char *key)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* A record number ("seq", "ref"): 0 when missing or not in 1..LONG_MAX/2. No log comes near the
 * bound (each record is a line); it keeps "the next record", seq + 1, from overflowing on an edited
 * log that claims LONG_MAX (found by fuzz-changelog). */
static long get_long(json_object *o, const char *key)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return 0;
        int64_t x = json_object_get_int64(v);
        return x > 0 && x <= LONG_MAX / 2 ? (long)x : 0;
}

/* ---- the head file ---- */

/* Read the head file: 0 with SEQ and HASH, -ENOENT when there is none, -EBADMSG when it is not
 * exactly "SEQ:HASH\n", or the trust checks' refusal. */
static int read_head(struct root *r, long *ret_seq, char ret_hash[65])
{
        *ret_seq = 0;
        ret_hash[0] = '\0';
        int fd = open_trusted(r, CHANGELOG_HEAD, O_RDONLY, 0, true);
        if (fd < 0)
                return fd;
        char buf[128];
        ssize_t n;
        do
                n = read(fd, buf, sizeof(buf) - 1);
        while (n < 0 && errno == EINTR);
        int e = errno;
        close(fd);
        if (n < 0)
                return -e;
        buf[n] = '\0';
        char *colon = strchr(buf, ':'), *end;
        if (!colon || n != (colon - buf) + 1 + 64 + 1 || buf[n - 1] != '\n' || !isdigit((unsigned char)buf[0]))
                return -EBADMSG;
        errno = 0;
        long seq = strtol(buf, &end, 10);
        buf[n - 1] = '\0';
        if (errno || end != colon || seq <= 0 || !is_hex64(colon + 1))
                return -EBADMSG;
        *ret_seq = seq;
        memcpy(ret_hash, colon + 1, 65);
        return 0;
}

/* Replace the head file with SEQ:HASH: a temporary file, fsync, rename, fsync of the directory. */
static int write_head(struct root *r, long seq, const char *hash)
{
        _cleanup_free_ char *line = xasprintf("%ld:%s\n", seq, hash);
        return root_write_file(r, CHANGELOG_HEAD, line, strlen(line), 0644);
}

struct head_view {
        const char *state; /* see struct log_read */
        char *problem;     /* the log was cut (or the head is damaged): what is missing */
        char *note;        /* not a problem: what it means */
};

/*
 * Judge the log's end against the head file. HEAD_RC: read_head's result; LOG_EXISTS: the log file
 * is there; END_SEQ/END_HASH: its last record; AT_HEAD: the stored hash of the log's record
 * HEAD_SEQ (NULL: the log holds no such record); HAS_RUNS: the log has "run-begin" records, which
 * only an llmtune that keeps the head file writes.
 */
static void judge_head(int head_rc, long head_seq, const char *head_hash, bool log_exists, long end_seq,
                       const char *end_hash, const char *at_head, bool has_runs, struct head_view *v)
{
        *v = (struct head_view){.state = "ok"};
        if (head_rc == -ENOENT) {
                if (end_seq == 0 && !log_exists)
                        v->state = "none";
                else if (has_runs && end_seq == 1) {
                        /* The head file is first written after record 1: a run killed between the two. */
                        v->state = "behind";
                        v->note = xasprintf("the log holds one record and no head file %s yet: a run stopped "
                                            "between its first record and the head file; the next apply or "
                                            "rollback writes it",
                                            CHANGELOG_HEAD);
                } else if (has_runs) {
                        v->state = "missing";
                        v->problem = xasprintf("the head file %s is missing, but the log was written by an llmtune "
                                               "that keeps it (it has run-begin records): it was deleted, and "
                                               "records after record %ld may have been cut off",
                                               CHANGELOG_HEAD, end_seq);
                } else if (end_seq == 0) {
                        v->state = "none";
                } else {
                        v->state = "absent";
                        v->note = xasprintf("the log has no head file %s (it was written by an older llmtune): "
                                            "the next apply or rollback creates it; until then a cut at the "
                                            "log's end cannot be seen (verify --expect-head can)",
                                            CHANGELOG_HEAD);
                }
                return;
        }
        if (head_rc < 0) {
                v->state = "damaged";
                v->problem = xasprintf("the head file %s is damaged (not SEQ:HASH): the log's end cannot be checked",
                                       CHANGELOG_HEAD);
                return;
        }
        if (!log_exists) {
                v->state = "cut";
                v->problem = xasprintf("the change log %s is missing, but its head file names record %ld (hash "
                                       "%.16s...): the log was deleted",
                                       CHANGELOG_PATH, head_seq, head_hash);
        } else if (head_seq > end_seq) {
                v->state = "cut";
                v->problem = end_seq ? xasprintf("the log ends at record %ld, but its head file names record %ld: "
                                                 "records %ld to %ld were cut off (the log was truncated)",
                                                 end_seq, head_seq, end_seq + 1, head_seq)
                                     : xasprintf("the log is empty, but its head file names record %ld: records 1 "
                                                 "to %ld were cut off (the log was truncated)",
                                                 head_seq, head_seq);
        } else if (!at_head) {
                v->state = "cut";
                v->problem = xasprintf("the log holds no record %ld, the one its head file names: it was cut or "
                                       "rewritten",
                                       head_seq);
        } else if (!streq(at_head, head_hash)) {
                v->state = "replaced";
                v->problem = xasprintf("record %ld has hash %.16s..., but the head file names it with hash "
                                       "%.16s...: the log's end was rewritten",
                                       head_seq, at_head, head_hash);
        } else if (head_seq == end_seq - 1) {
                v->state = "behind";
                v->note = xasprintf("the head file names record %ld, one before the log's last (%.16s...): a run "
                                    "stopped between appending a record and updating the head; the next apply "
                                    "or rollback brings it up to date",
                                    head_seq, end_hash);
        } else if (head_seq < end_seq) {
                v->state = "appended";
                v->problem = xasprintf("records %ld to %ld follow the head file's record %ld: they were appended "
                                       "by something other than llmtune (which updates the head with each record)",
                                       head_seq + 1, end_seq, head_seq);
        }
}

/* The stored hash of record SEQ in the log DATA, looked for from the end. */
static bool find_hash(const char *data, size_t len, long seq, char out[65])
{
        size_t end = len;
        while (end > 0) {
                size_t stop = end - 1; /* the newline ending the line */
                size_t start = stop;
                while (start > 0 && data[start - 1] != '\n')
                        start--;
                json_object *o = parse_line(data + start, stop - start);
                long s = o ? get_long(o, "seq") : 0;
                json_object_put(o);
                if (s == seq)
                        return line_hash_ok(data + start, stop - start, out), out[0] != '\0';
                if (s > 0 && s < seq)
                        return false;
                end = start;
        }
        return false;
}

#define RUN_BEGIN_KEY "\"event\":\"run-begin\""

/* Whether the log exists (*EXISTED): a missing log beside a head file was deleted, not never
 * written. Returns 0 or -errno. */
static int log_exists(struct root *r, bool *existed)
{
        int probe = open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true);
        *existed = probe >= 0;
        if (probe >= 0)
                close(probe);
        else if (probe != -ENOENT)
                return probe;
        return 0;
}

/* The chain continues from the last record of DATA's WHOLE bytes, which must be whole and intact:
 * its seq and hash into L. Returns 0 or -EBADMSG. */
static int continue_chain(struct changelog *l, const char *data, size_t whole)
{
        if (whole == 0)
                return 0;
        size_t end = whole - 1, start = end;
        while (start > 0 && data[start - 1] != '\n')
                start--;
        json_object *o = parse_line(data + start, end - start);
        char h[65];
        int rc = 0;
        if (!o || !line_hash_ok(data + start, end - start, h) || get_long(o, "seq") <= 0)
                rc = -EBADMSG;
        else {
                l->seq = get_long(o, "seq");
                memcpy(l->prev, h, sizeof(h));
        }
        json_object_put(o);
        return rc;
}

/* The half record after the WHOLE bytes of a LEN-byte log goes (see changelog_read); appends
 * continue after the last whole line. Returns 0 or -errno. */
static int drop_torn_record(struct changelog *l, size_t whole, size_t len)
{
        if (ftruncate(l->fd, (off_t)whole) < 0 || fsync(l->fd) < 0)
                return -errno;
        char *note = xasprintf("removed half a record (%zu bytes) from the end of the change "
                               "log: a run was killed while appending it%s%s",
                               len - whole, l->note ? "; " : "", l->note ? l->note : "");
        free(l->note);
        l->note = note;
        return 0;
}

/* How the head file stands against the chain L ends with (DATA's WHOLE bytes): *V, and 0, or the
 * error reading the head; a cut log is V->problem, told by head_refusal in the words apply and
 * plan both use. */
static int judge_log_end(struct root *r, const struct changelog *l, const char *data, size_t whole, bool log_existed,
                         struct head_view *v)
{
        long head_seq = 0;
        char head_hash[65], at_head[65] = "";
        int hrc = read_head(r, &head_seq, head_hash);
        if (hrc < 0 && hrc != -ENOENT && hrc != -EBADMSG)
                return hrc;
        if (hrc == 0 && head_seq == l->seq)
                memcpy(at_head, l->prev, sizeof(at_head));
        else if (hrc == 0 && head_seq < l->seq)
                find_hash(data, whole, head_seq, at_head);
        judge_head(hrc, head_seq, head_hash, log_existed, l->seq, l->prev, at_head[0] ? at_head : NULL,
                   data && memmem(data, whole, RUN_BEGIN_KEY, strlen(RUN_BEGIN_KEY)), v);
        return 0;
}

static int head_refusal(struct root *r, const struct changelog *l, const char *problem)
{
        return refuse(-ESTALE,
                      "%s (see `llmtune verify`). To accept the loss and go on from the log as it is, "
                      "make its last record the head: echo %ld:%s > %s%s",
                      problem, l->seq, l->seq ? l->prev : zero_hash, streq(root_path(r), "/") ? "" : root_path(r),
                      CHANGELOG_HEAD);
}

/* The log's end (DATA: WHOLE bytes of whole lines, LEN in all) against the head file: a cut log is
 * not continued (the next record would take the place of the ones cut off, and the head would then
 * vouch for it); a missing or lagging head file is brought up to the log, and a half record the
 * head never vouched for goes. Returns 0 or -errno (-ESTALE: refused, the reason said). */
static int settle_head(struct root *r, struct changelog *l, const char *data, size_t whole, size_t len,
                       bool log_existed)
{
        struct head_view v;
        int jrc = judge_log_end(r, l, data, whole, log_existed, &v);
        if (jrc < 0)
                return jrc;
        bool drop_torn = !v.problem && whole < len;
        int rc = 0;
        if (v.problem)
                rc = head_refusal(r, l, v.problem);
        else if (streq(v.state, "absent") || streq(v.state, "behind")) {
                rc = write_head(r, l->seq, l->prev);
                if (rc == 0)
                        l->note = streq(v.state, "absent")
                                          ? xasprintf("the change log had no head file (written by an older "
                                                      "llmtune): created %s at record %ld; from now on a cut "
                                                      "log is detected",
                                                      CHANGELOG_HEAD, l->seq)
                                          : xasprintf("the head file %s was one record behind the log (a "
                                                      "run stopped between the two writes): brought up to "
                                                      "record %ld",
                                                      CHANGELOG_HEAD, l->seq);
        }
        free(v.problem);
        free(v.note);
        if (rc >= 0 && drop_torn)
                rc = drop_torn_record(l, whole, len);
        return rc;
}

/* The log open at FD read whole (*DATA, *LEN bytes) and L's chain continued from it. Half a
 * record at the end (a run killed inside write(2), see changelog_read): the chain continues from
 * the last whole line (*WHOLE bytes), and the half line goes once the head file shows it was
 * never vouched for. 0 or -errno. */
static int read_chain(int fd, struct changelog *l, char **data, size_t *len, size_t *whole)
{
        int rc = read_fd_all(fd, data, len);
        if (rc < 0)
                return rc;
        *whole = *len;
        while (*whole > 0 && (*data)[*whole - 1] != '\n')
                (*whole)--;
        return continue_chain(l, *data, *whole);
}

int changelog_open(struct root *r, struct changelog **ret)
{
        int rc = root_mkdirs(r, BACKUP_DIR, 0755);
        if (rc == 0)
                rc = check_dirs(r);
        bool log_existed = false;
        if (rc == 0)
                rc = log_exists(r, &log_existed);
        if (rc < 0)
                return rc;
        int fd = open_trusted(r, CHANGELOG_PATH, O_RDWR | O_APPEND | O_CREAT, 0644, true);
        if (fd < 0)
                return fd;
        struct changelog *l = xcalloc(1, sizeof(*l));
        l->root = r;
        l->fd = fd;
        memcpy(l->prev, zero_hash, sizeof(zero_hash));

        _cleanup_free_ char *data = NULL;
        size_t len = 0, whole = 0;
        rc = read_chain(fd, l, &data, &len, &whole);
        if (rc >= 0)
                rc = settle_head(r, l, data, whole, len, log_existed);
        if (rc < 0) {
                changelog_close(l);
                return rc;
        }
        l->host = root_hostname(r);
        if (!l->host)
                l->host = xstrdup("unknown");
        *ret = l;
        return 0;
}

int changelog_check(struct root *r)
{
        bool existed = false;
        int rc = check_dirs(r);
        if (rc == 0)
                rc = log_exists(r, &existed);
        if (rc < 0)
                return rc;
        struct changelog l = {.fd = -1};
        memcpy(l.prev, zero_hash, sizeof(zero_hash));
        _cleanup_free_ char *data = NULL;
        size_t len = 0, whole = 0;
        if (existed) {
                int fd = open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true);
                if (fd < 0)
                        return fd;
                rc = read_chain(fd, &l, &data, &len, &whole);
                close(fd);
                if (rc < 0)
                        return rc;
        }
        struct head_view v;
        rc = judge_log_end(r, &l, data, whole, existed, &v);
        if (rc == 0 && v.problem)
                rc = head_refusal(r, &l, v.problem);
        free(v.problem);
        free(v.note);
        return rc;
}

struct changelog *changelog_close(struct changelog *l)
{
        if (!l)
                return NULL;
        if (l->fd >= 0)
                close(l->fd);
        free(l->host);
        free(l->note);
        free(l);
        return NULL;
}

const char *changelog_note(const struct changelog *l) { return l->note; }

json_object *changelog_head_json(long seq, const char *hash)
{
        if (seq <= 0 || !is_hex64(hash))
                return NULL;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seq", json_object_new_int64(seq));
        json_object_object_add(o, "hash", json_object_new_string(hash));
        _cleanup_free_ char *anchor = xasprintf("%ld:%s", seq, hash);
        json_object_object_add(o, "anchor", json_object_new_string(anchor));
        return o;
}

void changelog_head(const struct changelog *l, long *ret_seq, char ret_hash[65])
{
        *ret_seq = l->seq;
        memcpy(ret_hash, l->seq ? l->prev : "", l->seq ? 65 : 1);
}

/*
 * The lock is flock(2) on the directory CHANGELOG_DIR itself, not on a file in it: a lock file can
 * be unlinked (or replaced) while an apply holds it, and the next apply then locks a new inode and
 * runs alongside. The directory holds the log and the backups, so it cannot go while they are
 * there, and whoever replaced it would replace the log with it. The lock belongs to the open file
 * description and goes away with it (a killed apply releases it).
 */
static int lock_dir(struct root *r, int how, bool wait, int *ret_fd)
{
        /* No O_NOFOLLOW: with O_DIRECTORY it turns a planted link into ENOTDIR; the no-links
         * resolution refuses it (and any link above it) with ELOOP, which apply explains. */
        int fd = root_open_nolinks(r, CHANGELOG_LOCK, O_RDONLY | O_DIRECTORY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        while (flock(fd, how | (wait ? 0 : LOCK_NB)) < 0) {
                if (errno == EINTR)
                        continue;
                int rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
                close(fd);
                return rc;
        }
        /* A run that gives up on a read that never answers lets the lock go first (deadline.h). */
        deadline_release_on_expiry(fd);
        *ret_fd = fd;
        return 0;
}

/* Is NAME a temporary file of store_backup (".<sha256>.llmtune-<pid>")? */
static bool backup_temp_name(const char *name, const void *unused _unused_)
{
        if (name[0] != '.' || strlen(name) <= 1 + 64 + strlen(".llmtune-"))
                return false;
        _cleanup_free_ char *hex = xstrndup(name + 1, 64);
        return is_hex64(hex) && name_is_prefix_pid(name + 1 + 64, ".llmtune-");
}

/* Unlink the entries of DIR (under the root, no symbolic links on the way) that MATCH(name, ARG)
 * accepts, then fsync DIR. */
static void remove_debris(struct root *r, const char *dir, bool (*match)(const char *, const void *), const void *arg)
{
        int fd = root_open_nolinks(r, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd < 0)
                return;
        dir_remove_matching(fd, match, arg);
        close(fd);
}

int changelog_lock(struct root *r, bool wait, int *ret_fd)
{
        int rc = root_mkdirs(r, CHANGELOG_DIR, 0755);
        if (rc < 0)
                return rc;
        rc = lock_dir(r, LOCK_EX, wait, ret_fd);
        if (rc == 0) {
                /* A run killed while storing a backup or replacing the head file leaves its
                 * temporary file (no record names it, so recovery of unfinished steps never sees
                 * it): remove them, under the exclusive lock, where no run can be writing one. */
                remove_debris(r, BACKUP_DIR, backup_temp_name, NULL);
                /* write_head's ".changelog.head.llmtune-<pid>" */
                remove_debris(r, CHANGELOG_DIR, name_is_prefix_pid, ".changelog.head.llmtune-");
        }
        return rc;
}

int changelog_lock_shared(struct root *r, bool wait, int *ret_fd)
{
        *ret_fd = -1;
        /* No directory means no apply ever ran: nothing to wait for. */
        int rc = lock_dir(r, LOCK_SH, wait, ret_fd);
        if (rc == -ENOENT || rc == -EACCES) {
                *ret_fd = -1;
                return 0;
        }
        return rc;
}

/* Store CONTENT as backups/<sha256> unless it is there already; *ref = "backups/<sha256>". MODE:
 * 0644, or 0600 for the content of a file others may not read (a 0600 fstab with a password). */
static int store_backup(struct root *r, const char *content, mode_t mode, char sha[65], char **ref)
{
        size_t len = strlen(content);
        sha256_hex(content, len, sha);
        _cleanup_free_ char *path = xasprintf("%s/%s", BACKUP_DIR, sha);
        /* A backup is often the only copy of the original: one already there is reused only when
         * its content hashes to its name (a damaged or planted file of the right size is not the
         * original), else it is written again. */
        root_forget(r, path);
        const char *data;
        size_t have;
        char actual[65] = "";
        if (root_read(r, path, &data, &have) == 0)
                sha256_hex(data, have, actual);
        root_forget(r, path);
        if (!streq(actual, sha)) {
                int rc = root_write_file(r, path, content, len, mode);
                if (rc < 0)
                        return rc;
        }
        if (mode == 0600) {
                /* Written before as readable content (or replaced keeping the mode it had). */
                int fd = root_open_nolinks(r, path, O_RDONLY | O_NOFOLLOW | O_NOCTTY, 0);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0077) && fchmod(fd, 0600) < 0) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
                if (fd >= 0)
                        close(fd);
        }
        *ref = xasprintf("backups/%s", sha);
        return 0;
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static json_object *strv_json(const struct strv *l)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < l->n; i++)
                json_object_array_add(a, json_object_new_string(l->v[i]));
        return a;
}

static void utc_now(char buf[32])
{
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *const event_names[] = {
        [LOG_INTENT] = "intent",           [LOG_DONE] = "done",           [LOG_FAILED] = "failed",
        [LOG_UNDO_INTENT] = "undo-intent", [LOG_UNDONE] = "undone",       [LOG_UNDO_FAILED] = "undo-failed",
        [LOG_RUN_BEGIN] = "run-begin",     [LOG_RUN_END] = "run-end",     [LOG_EVENT_UNKNOWN] = "unknown",
        [LOG_ACK] = "ack",                 [LOG_UNACK] = "unack",
};

const char *log_event_name(enum log_event e)
{
        return (unsigned)e < ARRAY_SIZE(event_names) ? event_names[e] : "unknown";
}

enum log_event log_event_parse(const char *s)
{
        for (size_t e = LOG_EVENT_UNKNOWN + 1; e < LOG_EVENT_MAX; e++)
                if (streq(s, event_names[e]))
                        return (enum log_event)e;
        return LOG_EVENT_UNKNOWN;
}

/* C's before and after states that go to the backup store rather than inline: a file's content
 * always (as private as the file: the target's mode now, else the mode apply gives a new one), a
 * value over CHANGELOG_VALUE_INLINE (0600: nobody else needs it). BK names each stored one
 * ("backups/<sha256>", NULL when inline) and SHA its hash. Returns 0 or -errno. */
static int store_change_backups(struct changelog *l, const struct change *c, char sha[2][65], char *bk[2])
{
        const char *state[2] = {c->before, c->after};
        mode_t bmode = 0600;
        if (c->type == CHANGE_FILE) {
                struct stat st;
                mode_t m = c->target && root_stat(l->root, c->target, &st, false) == 0 && S_ISREG(st.st_mode)
                                   ? st.st_mode
                                   : (c->mode ? c->mode : 0644);
                bmode = (m & 0004) ? 0644 : 0600;
        }
        for (int k = 0; k < 2; k++) {
                bool store = state[k] && (c->type == CHANGE_FILE || strlen(state[k]) > CHANGELOG_VALUE_INLINE);
                int rc = store ? store_backup(l->root, state[k], bmode, sha[k], &bk[k]) : 0;
                if (rc < 0)
                        return rc;
        }
        return 0;
}

/* The record of C as one line (with its newline, *RET_LEN bytes), chained to L's last record; its
 * hash into HASH. SHA and BK: what store_change_backups stored. Caller frees. */
static char *record_line(const struct changelog *l, const struct log_context *ctx, enum log_event event,
                         const struct change *c, long ref, const char *detail, json_object *fields, char sha[2][65],
                         char *bk[2], char hash[65], size_t *ret_len)
{
        bool file = c->type == CHANGE_FILE;
        char now[32];
        utc_now(now);
        _cleanup_free_ char *mode = file && c->mode ? xasprintf("%04o", (unsigned)(c->mode & 07777)) : NULL;
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object_object_add(o, "seq", json_object_new_int64(l->seq + 1));
        json_object_object_add(o, "time", json_object_new_string(now));
        json_object_object_add(o, "host", json_object_new_string(ctx->host ? ctx->host : l->host));
        json_object_object_add(o, "run", str_or_null(ctx->run));
        json_object_object_add(o, "event", json_object_new_string(log_event_name(event)));
        json_object_object_add(o, "ref", ref > 0 ? json_object_new_int64(ref) : NULL);
        json_object_object_add(o, "profile", str_or_null(ctx->profile));
        json_object_object_add(o, "profile_hash", str_or_null(ctx->profile_hash));
        json_object_object_add(o, "rule", str_or_null(c->rule));
        json_object_object_add(o, "target", str_or_null(c->target));
        json_object_object_add(o, "type", json_object_new_string(change_type_name(c->type)));
        json_object_object_add(o, "before", file || bk[0] ? NULL : str_or_null(c->before));
        json_object_object_add(o, "after", file || bk[1] ? NULL : str_or_null(c->after));
        json_object_object_add(o, "before_sha256", bk[0] ? json_object_new_string(sha[0]) : NULL);
        json_object_object_add(o, "after_sha256", bk[1] ? json_object_new_string(sha[1]) : NULL);
        json_object_object_add(o, "backup_before", str_or_null(bk[0]));
        json_object_object_add(o, "backup_after", str_or_null(bk[1]));
        json_object_object_add(o, "mode", str_or_null(mode));
        json_object_object_add(o, "mkdirs", strv_json(&c->mkdirs));
        json_object_object_add(o, "argv", strv_json(&c->argv));
        json_object_object_add(o, "undo", strv_json(&c->undo));
        json_object_object_add(o, "aux", str_or_null(c->aux));
        json_object_object_add(o, "reboot", json_object_new_boolean(c->reboot));
        json_object_object_add(o, "detail", str_or_null(detail));
        json_object_object_foreach(fields, key, val) json_object_object_add(o, key, json_object_get(val));
        json_object_object_add(o, "prev", json_object_new_string(l->prev));

        size_t len;
        const char *s = json_object_to_json_string_length(o, JSON_FLAGS, &len);
        sha256_hex(s, len, hash);
        json_object_object_add(o, "hash", json_object_new_string(hash));
        s = json_object_to_json_string_length(o, JSON_FLAGS, &len);
        char *line = xmalloc(len + 1);
        memcpy(line, s, len);
        line[len++] = '\n';
        *ret_len = len;
        return line;
}

/* LINE (LEN bytes) onto the end of the log in one write(2), then fsync; a short or failed write is
 * cut off again so the log never ends in half a record (O_APPEND: the line lands at the current
 * end). An intent, run-begin or ack leaves CHANGELOG_RESERVE for the records that finish a run. Returns 0
 * or -errno (-EFBIG: the log would outgrow CHANGELOG_READ_MAX). */
static int append_line(struct changelog *l, enum log_event event, const char *line, size_t len)
{
        struct stat st;
        if (fstat(l->fd, &st) < 0)
                return -errno;
        bool opens = event == LOG_INTENT || event == LOG_RUN_BEGIN || event == LOG_ACK;
        uint64_t limit = opens ? CHANGELOG_READ_MAX - CHANGELOG_RESERVE : CHANGELOG_READ_MAX;
        if ((uint64_t)st.st_size + len > limit)
                return -EFBIG;
        ssize_t n = write(l->fd, line, len);
        int rc = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
        if (rc == 0 && fsync(l->fd) < 0)
                rc = -errno;
        if (rc < 0 && ftruncate(l->fd, st.st_size) == 0)
                (void)fsync(l->fd);
        return rc;
}

long changelog_append(struct changelog *l, const struct log_context *ctx, enum log_event event, const struct change *c,
                      long ref, const char *detail)
{
        _cleanup_(json_object_putp) json_object *none = json_object_new_object();
        return changelog_append_fields(l, ctx, event, c, ref, detail, none);
}

long changelog_append_fields(struct changelog *l, const struct log_context *ctx, enum log_event event,
                             const struct change *c, long ref, const char *detail, json_object *fields)
{
        char sha[2][65] = {"", ""};
        char *bk[2] = {NULL, NULL};
        int rc = store_change_backups(l, c, sha, bk);
        char hash[65];
        size_t len = 0;
        _cleanup_free_ char *line = rc < 0 ? NULL : record_line(l, ctx, event, c, ref, detail, fields, sha, bk, hash, &len);
        free(bk[0]);
        free(bk[1]);
        if (rc == 0)
                rc = append_line(l, event, line, len);
        if (rc < 0)
                return rc;
        l->seq++;
        memcpy(l->prev, hash, sizeof(hash));
        /* Then the head. Failing here leaves it one record behind, as a kill between the two
         * writes does (verify says so, the next run brings it up to date); the caller stops as
         * for a failed append. */
        rc = write_head(l->root, l->seq, l->prev);
        return rc < 0 ? rc : l->seq;
}

long changelog_run_begin(struct changelog *l, const struct log_context *ctx, const char *kind)
{
        struct change c = {.type = CHANGE_NOTE, .target = (char *)kind};
        return changelog_append(l, ctx, LOG_RUN_BEGIN, &c, 0, NULL);
}

long changelog_run_end(struct changelog *l, const struct log_context *ctx, const char *kind, long begin,
                       const char *detail)
{
        struct change c = {.type = CHANGE_NOTE, .target = (char *)kind};
        return changelog_append(l, ctx, LOG_RUN_END, &c, begin, detail);
}

/* ---- reading back ---- */

static void add_problem(struct log_read *lr, long seq, const char *fmt, ...) _printf_(3, 4);
static void add_problem(struct log_read *lr, long seq, const char *fmt, ...)
{
        lr->problems = xrealloc(lr->problems, (lr->n_problems + 1) * sizeof(*lr->problems));
        va_list ap;
        va_start(ap, fmt);
        lr->problems[lr->n_problems++] = (struct log_problem){.seq = seq, .message = xvasprintf(fmt, ap)};
        va_end(ap);
}

static int json_strv(json_object *o, const char *key, struct strv *ret)
{
        json_object *a;
        if (!json_object_object_get_ex(o, key, &a) || !a)
                return 0;
        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *e = json_object_array_get_idx(a, i);
                if (!json_object_is_type(e, json_type_string))
                        return -EINVAL;
                strv_add(ret, json_object_get_string(e));
        }
        return 0;
}

/* Load a file content named by "backup_KEY" and check it against "KEY_sha256". */
static int load_backup(struct root *r, json_object *o, const char *which, char **ret, char **why)
{
        _cleanup_free_ char *bkey = xasprintf("backup_%s", which), *skey = xasprintf("%s_sha256", which);
        const char *ref = get_str(o, bkey), *sha = get_str(o, skey);
        *ret = NULL;
        if (!ref && !sha)
                return 0; /* absent */
        if (!ref || !sha || !startswith(ref, "backups/") || !is_hex64(ref + strlen("backups/")) ||
            !streq(ref + strlen("backups/"), sha)) {
                *why = xasprintf("its %s backup reference is malformed", which);
                return -EINVAL;
        }
        _cleanup_free_ char *path = xasprintf("%s/%s", CHANGELOG_DIR, ref);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int fd = open_trusted(r, path, O_RDONLY, 0, true);
        int rc = fd < 0 ? fd : read_fd_all(fd, &data, &len);
        if (fd >= 0)
                close(fd);
        if (rc < 0) {
                *why = xasprintf("backup %s of its %s content: %s", path, which, changelog_strerror(rc));
                return rc;
        }
        char actual[65];
        sha256_hex(data, len, actual);
        if (!streq(actual, sha) || memchr(data, '\0', len)) {
                *why = xasprintf("backup %s of its %s content was altered", path, which);
                return -EBADMSG;
        }
        *ret = xstrndup(data, len);
        return 0;
}

static char *dup_str(json_object *o, const char *key)
{
        const char *s = get_str(o, key);
        return s ? xstrdup(s) : NULL;
}

/* Fill REC from O; returns a reason when a field is missing or of the wrong kind. */
static char *record_from_json(struct root *r, json_object *o, struct log_record *rec)
{
        rec->seq = get_long(o, "seq");
        rec->ref = get_long(o, "ref");
        rec->time = dup_str(o, "time");
        rec->host = dup_str(o, "host");
        rec->run = dup_str(o, "run");
        const char *event = get_str(o, "event");
        rec->event = log_event_parse(event);
        rec->profile = dup_str(o, "profile");
        rec->profile_hash = dup_str(o, "profile_hash");
        rec->detail = dup_str(o, "detail");
        struct change *c = &rec->change;
        c->rule = dup_str(o, "rule");
        c->target = dup_str(o, "target");
        c->aux = dup_str(o, "aux");
        json_object *b;
        c->reboot = json_object_object_get_ex(o, "reboot", &b) && json_object_get_boolean(b);
        if (!event || !rec->time)
                return xstrdup("it lacks its event or time");
        if (rec->event == LOG_EVENT_UNKNOWN)
                return xasprintf("its event '%s' is not one llmtune writes", event);
        const char *type = get_str(o, "type");
        if (!type || change_type_parse(type, &c->type) < 0)
                return xasprintf("its change type '%s' is unknown", type ? type : "(none)");
        const char *mode = get_str(o, "mode");
        if (mode) {
                char *end;
                unsigned long m = strtoul(mode, &end, 8);
                if (*end || !*mode || m > 07777)
                        return xasprintf("its mode '%s' is not an octal mode", mode);
                c->mode = (mode_t)m;
        }
        if (json_strv(o, "mkdirs", &c->mkdirs) < 0 || json_strv(o, "argv", &c->argv) < 0 ||
            json_strv(o, "undo", &c->undo) < 0)
                return xstrdup("its mkdirs, argv or undo is not a list of strings");
        char *why = NULL;
        if (c->type != CHANGE_FILE) {
                /* Inline, or (a long value) in the backup store; never both. */
                static const char *const which[] = {"before", "after"};
                for (int k = 0; k < 2; k++) {
                        char **dst = k ? &c->after : &c->before;
                        _cleanup_free_ char *bkey = xasprintf("backup_%s", which[k]),
                                            *skey = xasprintf("%s_sha256", which[k]);
                        if (!get_str(o, bkey) && !get_str(o, skey)) {
                                *dst = dup_str(o, which[k]);
                                continue;
                        }
                        if (get_str(o, which[k]))
                                return xasprintf("its %s value is both inline and in a backup", which[k]);
                        if (load_backup(r, o, which[k], dst, &why) < 0) {
                                *(k ? &rec->after_lost : &rec->before_lost) = true;
                                return why;
                        }
                }
                return NULL;
        }
        if (load_backup(r, o, "before", &c->before, &why) < 0) {
                rec->before_lost = true;
                return why;
        }
        if (load_backup(r, o, "after", &c->after, &why) < 0) {
                rec->after_lost = true;
                return why;
        }
        return NULL;
}

static void record_done(struct log_record *rec)
{
        free(rec->time);
        free(rec->host);
        free(rec->run);
        free(rec->profile);
        free(rec->profile_hash);
        free(rec->detail);
        change_done(&rec->change);
        json_object_put(rec->json);
}

static void log_analyse(struct log_read *lr);

/* Judge the end of the log read into LR against the head file (see judge_head). */
static int check_head(struct root *r, struct log_read *lr, bool log_exists, bool has_runs)
{
        int hrc = read_head(r, &lr->head_seq, lr->head_hash);
        if (hrc < 0 && hrc != -ENOENT && hrc != -EBADMSG)
                return hrc;
        const char *at_head = NULL;
        for (size_t i = lr->n; hrc == 0 && i-- > 0 && !at_head;)
                if (lr->v[i].seq == lr->head_seq)
                        at_head = lr->v[i].hash;
        struct head_view v;
        judge_head(hrc, lr->head_seq, lr->head_hash, log_exists, lr->end_seq, lr->end_hash, at_head, has_runs, &v);
        lr->head_state = v.state;
        lr->head_note = v.note;
        if (v.problem) {
                add_problem(lr, lr->head_seq > lr->end_seq ? lr->end_seq + 1 : lr->head_seq ? lr->head_seq : lr->end_seq,
                            "%s", v.problem);
                free(v.problem);
        }
        return 0;
}

/* The hash chain while the log is read: what the next record must name as its prev, and the seq
 * of the record before it. */
struct chain {
        char prev[65];
        bool prev_known; /* false after a line that could not be parsed */
        long last_seq;
};

/* One parsed record's place in the chain C: its hash over its own bytes (stored into HASH), its
 * seq against EXPECT, its prev against the record before. Problems go into LR; C moves on to it. */
static void chain_check(struct log_read *lr, struct chain *c, const char *line, size_t n, size_t lineno,
                        json_object *o, long seq, char hash[65])
{
        long expect = c->last_seq + 1;
        bool hash_ok = line_hash_ok(line, n, hash);
        const char *p = get_str(o, "prev");
        if (!hash[0])
                add_problem(lr, seq,
                            "record %ld (line %zu) was edited: it does not end in its hash field as llmtune "
                            "writes it (,\"hash\":\"<64 hex digits>\"} and the newline: a CR or other "
                            "bytes were added)",
                            seq, lineno);
        else if (!hash_ok)
                add_problem(lr, seq, "record %ld (line %zu) was edited: its hash does not match the bytes of its line",
                            seq, lineno);
        else if (seq > expect)
                add_problem(lr, seq, "record %ld (line %zu) follows record %ld: the records between were removed", seq,
                            lineno, c->last_seq);
        else if (seq < expect)
                add_problem(lr, seq, "record %ld (line %zu) is out of order (record %ld was expected)", seq, lineno,
                            expect);
        else if (c->prev_known && !streq(p, c->prev))
                add_problem(lr, seq,
                            "record %ld (line %zu) does not chain to the record before it "
                            "(records removed, replaced or reordered)",
                            seq, lineno);
        /* The next record must name this one's stored hash, even when this one was edited: a later
         * record replaced as well still shows. */
        c->prev_known = is_hex64(hash);
        memcpy(c->prev, c->prev_known ? hash : zero_hash, sizeof(c->prev));
        c->last_seq = seq;
}

/* One complete line of the log (without its newline): parsed, checked against the chain C and
 * appended to LR (CAP is LR's allocated length); a line that is no record only adds a problem. */
static void read_record_line(struct root *r, struct log_read *lr, size_t *cap, struct chain *c, const char *line,
                             size_t n, size_t lineno)
{
        long expect = c->last_seq + 1;
        json_object *o = parse_line(line, n);
        if (!o) {
                add_problem(lr, expect, "line %zu: record %ld is not valid JSON (edited or corrupted)", lineno, expect);
                c->last_seq = expect;
                c->prev_known = false;
                return;
        }
        long seq = get_long(o, "seq");
        if (seq <= 0) {
                add_problem(lr, expect, "line %zu: record has no valid seq (edited)", lineno);
                json_object_put(o);
                c->last_seq = expect;
                c->prev_known = false;
                return;
        }
        char hash[65];
        chain_check(lr, c, line, n, lineno, o, seq, hash);

        struct log_record rec = {.json = o};
        _cleanup_free_ char *why = record_from_json(r, o, &rec);
        rec.seq = seq;
        memcpy(rec.hash, hash, sizeof(rec.hash));
        lr->end_seq = seq;
        memcpy(lr->end_hash, hash, sizeof(lr->end_hash));
        /* A step that recovery or rollback would act on must be one llmtune could have made
         * (action_check): a forged command or a target outside its kind's area is reported where it
         * stands. */
        if (!why && (rec.event == LOG_ACK || rec.event == LOG_UNACK))
                why = ack_record_invalid(&rec);
        if (!why && (rec.event == LOG_INTENT || rec.event == LOG_DONE || rec.event == LOG_UNDO_INTENT) &&
            action_check(&rec.change, &why) < 0)
                add_problem(lr, seq, "record %ld (line %zu) fails validation: %s", seq, lineno, why);
        else if (why)
                add_problem(lr, seq, "record %ld (line %zu): %s", seq, lineno, why);
        if (lr->n == *cap) { /* geometric: one record at a time copied the array per record */
                *cap = *cap ? 2 * *cap : 64;
                lr->v = xrealloc(lr->v, *cap * sizeof(*lr->v));
        }
        lr->v[lr->n++] = rec;
}

/* The open log FD's bytes into *DATA, after checking the directories it lives in; closes FD.
 * Returns 0 or -errno. */
static int read_log_fd(struct root *r, int fd, char **data, size_t *len)
{
        int rc = check_dirs(r);
        if (rc == 0)
                rc = read_fd_all(fd, data, len);
        close(fd);
        return rc;
}

/* Every line of the log's DATA into LR. Returns the number of the last line when it is half a
 * record (no newline), else 0. */
static size_t read_records(struct root *r, struct log_read *lr, const char *data, size_t len)
{
        struct chain c = {.prev_known = true};
        memcpy(c.prev, zero_hash, sizeof(zero_hash));
        size_t lineno = 0, cap = 0;
        for (size_t pos = 0; pos < len;) {
                const char *nl = memchr(data + pos, '\n', len - pos);
                lineno++;
                if (!nl)
                        return lineno; /* judged against the head file by the caller */
                read_record_line(r, lr, &cap, &c, data + pos, (size_t)(nl - data) - pos, lineno);
                pos = (size_t)(nl - data) + 1;
        }
        return 0;
}

/* A torn last line TORN_LINE of TORN_BYTES bytes: a truncated log when the head file names a later
 * record, else a run killed while appending (a note, not a problem). */
static void judge_torn_line(struct log_read *lr, size_t torn_line, size_t torn_bytes)
{
        if (lr->head_seq > lr->end_seq) {
                add_problem(lr, lr->end_seq + 1, "line %zu: the last record is incomplete (the log was truncated)",
                            torn_line);
                return;
        }
        char *note = xasprintf("line %zu is half a record (%zu bytes without their newline): a run was "
                               "killed while appending it, before the head file named it; the next apply "
                               "or rollback removes it%s%s",
                               torn_line, torn_bytes, lr->head_note ? ". Also: " : "",
                               lr->head_note ? lr->head_note : "");
        free(lr->head_note);
        lr->head_note = note;
}

int changelog_read(struct root *r, struct log_read *ret)
{
        struct log_read lr = {.head_state = "none"};
        int fd = open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true);
        if (fd == -ENOENT) {
                /* No log: nothing was ever applied, unless a head file says it was deleted. */
                int rc = check_head(r, &lr, false, false);
                if (rc < 0 && !root_gone(rc)) {
                        log_read_done(&lr);
                        return rc;
                }
                *ret = lr;
                return 0;
        }
        if (fd < 0)
                return fd;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int rc = read_log_fd(r, fd, &data, &len);
        if (rc < 0)
                return rc;

        /* A last line without its newline is half a record: write(2) of a line that spans two
         * pages can be cut by SIGKILL between them (the kernel checks for a fatal signal per page),
         * and a power loss can cut it too. The head file tells a run killed while appending (the
         * head names the record before: nothing it vouched for is lost, and the next apply or
         * rollback removes the half line) from a log someone cut (the head names a later record). */
        size_t whole = len;
        while (whole > 0 && data[whole - 1] != '\n')
                whole--;
        size_t torn_line = read_records(r, &lr, data, len);
        log_analyse(&lr);
        rc = check_head(r, &lr, true, memmem(data, whole, RUN_BEGIN_KEY, strlen(RUN_BEGIN_KEY)) != NULL);
        if (rc < 0) {
                log_read_done(&lr);
                return rc;
        }
        if (torn_line)
                judge_torn_line(&lr, torn_line, len - whole);
        *ret = lr;
        return 0;
}

void log_read_done(struct log_read *lr)
{
        for (size_t i = 0; i < lr->n; i++)
                record_done(&lr->v[i]);
        free(lr->v);
        for (size_t i = 0; i < lr->n_problems; i++)
                free(lr->problems[i].message);
        free(lr->problems);
        free(lr->head_note);
        *lr = (struct log_read){0};
}

/*
 * The log analyses below are sorted lookups, never a scan of the log per record: `rollback --all`
 * of a 108,000-record log used to spend minutes (holding the lock) comparing every record with
 * every later one. A key_index holds (number, string, record index) triples sorted by key, then
 * index; the first or last record of a key is a binary search.
 */
struct key_ix {
        long num;
        const char *str; /* NULL sorts first */
        size_t idx;
};

struct key_index {
        struct key_ix *v;
        size_t n;
};

static int key_cmp(long an, const char *as, long bn, const char *bs)
{
        if (an != bn)
                return an < bn ? -1 : 1;
        if (!as || !bs)
                return (as != NULL) - (bs != NULL);
        return strcmp(as, bs);
}

static int key_ix_cmp(const void *a, const void *b)
{
        const struct key_ix *x = a, *y = b;
        int c = key_cmp(x->num, x->str, y->num, y->str);
        return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void key_add(struct key_index *k, long num, const char *str, size_t idx)
{
        k->v[k->n++] = (struct key_ix){.num = num, .str = str, .idx = idx};
}

/* Entries with key (NUM, STR): [*lo, *hi). */
static void key_range(const struct key_index *k, long num, const char *str, size_t *lo, size_t *hi)
{
        size_t a = 0, b = k->n;
        while (a < b) { /* first entry >= key */
                size_t m = a + (b - a) / 2;
                if (key_cmp(k->v[m].num, k->v[m].str, num, str) < 0)
                        a = m + 1;
                else
                        b = m;
        }
        *lo = a;
        b = k->n;
        while (a < b) { /* first entry > key */
                size_t m = a + (b - a) / 2;
                if (key_cmp(k->v[m].num, k->v[m].str, num, str) <= 0)
                        a = m + 1;
                else
                        b = m;
        }
        *hi = a;
}

/* The highest record index with key (NUM, STR), or SIZE_MAX. */
static size_t key_last(const struct key_index *k, long num, const char *str)
{
        size_t lo, hi;
        key_range(k, num, str, &lo, &hi);
        return lo < hi ? k->v[hi - 1].idx : SIZE_MAX;
}

/* The lowest record index with key (NUM, STR), or SIZE_MAX. */
static size_t key_first(const struct key_index *k, long num, const char *str)
{
        size_t lo, hi;
        key_range(k, num, str, &lo, &hi);
        return lo < hi ? k->v[lo].idx : SIZE_MAX;
}

static void key_index_init(struct key_index *k, size_t cap) { *k = (struct key_index){.v = xcalloc(cap + 1, sizeof(*k->v))}; }
static void key_index_sort(struct key_index *k) { qsort_safe(k->v, k->n, sizeof(*k->v), key_ix_cmp); }

/*
 * Fill every record's "reversed" and "finished" (changelog.h), in O(n log n):
 *
 * - an "undone" names by ref the "done" it reverses: the first record with that seq (a healthy
 *   log has one), when it comes before the "undone" and is a "done";
 * - an "intent" is finished when a later "done" or "failed" names its seq;
 * - an "undo-intent" is finished when a later "undone" or "undo-failed" names the same ref (or,
 *   for one without a ref, which llmtune never writes, the same target);
 * - a "run-begin" is finished when a later "run-end" names its seq.
 */
static void log_analyse(struct log_read *lr)
{
        struct key_index by_seq, outcome, undo_ref, undo_target, run_end;
        key_index_init(&run_end, lr->n);
        key_index_init(&by_seq, lr->n);
        key_index_init(&outcome, lr->n);
        key_index_init(&undo_ref, lr->n);
        key_index_init(&undo_target, lr->n);
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                key_add(&by_seq, rec->seq, NULL, i);
                if (rec->event == LOG_DONE || rec->event == LOG_FAILED)
                        key_add(&outcome, rec->ref, NULL, i);
                else if (rec->event == LOG_RUN_END)
                        key_add(&run_end, rec->ref, NULL, i);
                else if (rec->event == LOG_UNDONE || rec->event == LOG_UNDO_FAILED) {
                        key_add(&undo_ref, rec->ref, NULL, i);
                        if (rec->change.target)
                                key_add(&undo_target, 0, rec->change.target, i);
                }
        }
        key_index_sort(&by_seq);
        key_index_sort(&outcome);
        key_index_sort(&undo_ref);
        key_index_sort(&undo_target);
        key_index_sort(&run_end);
        for (size_t i = 0; i < lr->n; i++) {
                struct log_record *rec = &lr->v[i];
                size_t j;
                rec->finished = true;
                if (rec->event == LOG_INTENT)
                        rec->finished = (j = key_last(&outcome, rec->seq, NULL)) != SIZE_MAX && j > i;
                else if (rec->event == LOG_RUN_BEGIN)
                        rec->finished = (j = key_last(&run_end, rec->seq, NULL)) != SIZE_MAX && j > i;
                else if (rec->event == LOG_UNDO_INTENT)
                        rec->finished = rec->ref ? (j = key_last(&undo_ref, rec->ref, NULL)) != SIZE_MAX && j > i
                                        : rec->change.target &&
                                                  (j = key_last(&undo_target, 0, rec->change.target)) != SIZE_MAX && j > i;
                else if (rec->event == LOG_UNDONE && (j = key_first(&by_seq, rec->ref, NULL)) < i &&
                         lr->v[j].event == LOG_DONE)
                        lr->v[j].reversed = true;
        }
        free(by_seq.v);
        free(run_end.v);
        free(outcome.v);
        free(undo_ref.v);
        free(undo_target.v);
}

/*
 * Per (type, target), the "done" records not reversed yet form a stack: an "undone" removes the
 * "done" it names by ref, wherever it stands, and the top of the stack is the state the target
 * should be in. Rolling back the latest of two applies to one file puts the earlier one back in
 * force, which is what restoring its "before" did. The top is the last live record of its
 * (type, target) key. A file and a link are one type here: both are what one path holds, and a
 * mask that replaced a regular file (want_symlink: the file removed, then the link made) leaves
 * the link on top, the removal beneath it, undone after it.
 */
static long in_force_kind(enum change_type t) { return (long)(t == CHANGE_SYMLINK ? CHANGE_FILE : t); }

size_t changelog_in_force(const struct log_read *lr, size_t **ret)
{
        struct key_index live;
        key_index_init(&live, lr->n);
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                if (rec->event == LOG_DONE && rec->change.target && !rec->reversed)
                        key_add(&live, in_force_kind(rec->change.type), rec->change.target, i);
        }
        key_index_sort(&live);
        bool *top = xcalloc(lr->n + 1, sizeof(bool));
        for (size_t k = 0; k < live.n; k++)
                if (k + 1 == live.n || key_cmp(live.v[k].num, live.v[k].str, live.v[k + 1].num, live.v[k + 1].str) != 0)
                        top[live.v[k].idx] = true;
        size_t *out = xcalloc(lr->n + 1, sizeof(size_t)), n = 0;
        for (size_t i = 0; i < lr->n; i++)
                if (top[i])
                        out[n++] = i;
        free(top);
        free(live.v);
        *ret = out;
        return n;
}

/* ---- interrupted runs ---- */

bool changelog_step_finished(const struct log_read *lr, size_t i)
{
        return lr->v[i].finished;
}

size_t changelog_unfinished(const struct log_read *lr, size_t **ret)
{
        size_t *out = xcalloc(lr->n + 1, sizeof(size_t)), n = 0;
        for (size_t i = 0; i < lr->n; i++)
                if (!lr->v[i].finished)
                        out[n++] = i;
        *ret = out;
        return n;
}

#define RECOVERED "recovered after an interrupted run: "

/* The outcome an open step gets from the state its target shows: an apply step (UNDO false) found
 * in its after state is done, else failed (a command, whose effect cannot be read (UNKNOWN), is
 * done when it has an undo command, HAS_UNDO); a rollback step is undone when the target is back
 * in its before state, else undo-failed. *detail says why. */
static enum log_event recovered_outcome(bool undo, bool unknown, bool unreadable, bool at_before, bool at_after,
                                        bool has_undo, const char **detail)
{
        enum log_event event;
        if (unreadable) {
                /* A file, link or value that is there but cannot be read: its state is unknown, and
                 * so is whether the step was made. Not the wording of a command's unknown outcome. */
                event = undo ? LOG_UNDO_FAILED : LOG_FAILED;
                *detail = undo ? RECOVERED "the target cannot be read, so whether it was undone is unknown; the "
                                           "change stays in force"
                               : RECOVERED "the target cannot be read, so whether the change was made is unknown; "
                                           "apply plans it again if it is still needed";
        } else if (!undo) {
                if (unknown && has_undo) {
                        event = LOG_DONE;
                        *detail = RECOVERED "whether the command ran is unknown; kept as done so that "
                                           "rollback runs its undo (which is safe either way)";
                } else if (unknown) {
                        event = LOG_FAILED;
                        *detail = RECOVERED "whether the command ran is unknown; apply plans it again if "
                                           "it is still needed";
                } else if (at_after) {
                        event = LOG_DONE;
                        *detail = RECOVERED "the target was found in its after state";
                } else if (at_before) {
                        event = LOG_FAILED;
                        *detail = RECOVERED "the change was not made (the target is in its before state)";
                } else {
                        event = LOG_FAILED;
                        *detail = RECOVERED "the target is in neither its before nor its after state "
                                           "(changed by someone else?)";
                }
        } else {
                if (!unknown && at_before && !at_after) {
                        event = LOG_UNDONE;
                        *detail = RECOVERED "the target was found in its before state";
                } else {
                        event = LOG_UNDO_FAILED;
                        *detail = unknown ? RECOVERED "whether the undo command ran is unknown; the change "
                                                     "stays in force (rolling back again is safe)"
                                 : at_after ? RECOVERED "not undone (the target is still in its after state)"
                                            : RECOVERED "the target is in neither its before nor its after "
                                                        "state (changed by someone else?)";
                }
        }
        return event;
}

static struct log_context record_context(const struct log_record *rec)
{
        return (struct log_context){.run = rec->run, .profile = rec->profile, .profile_hash = rec->profile_hash,
                                    .host = rec->host};
}

static void set_run(char **ret_run, const char *run)
{
        if (!ret_run || !run)
                return;
        free(*ret_run);
        *ret_run = xstrdup(run);
}

/* Close the unfinished step REC by the state its target is in now. Returns 1 or -errno. */
static int recover_step(struct changelog *l, const struct log_record *rec, struct strv *messages, char **ret_run)
{
        const struct change *c = &rec->change;
        bool undo = rec->event == LOG_UNDO_INTENT;
        struct log_context ctx = record_context(rec);
        /* A crash inside a file replacement leaves only its temporary file: remove it. */
        action_remove_leftovers(l->root, c);
        char *cur = NULL;
        int st = action_current(l->root, c, &cur);
        /* -EOPNOTSUPP: a command, whose state cannot be read at all; another error: a
         * target that is there but unreadable now. */
        bool unknown = st < 0, unreadable = st < 0 && st != -EOPNOTSUPP,
             at_after = !unknown && action_state_equal(c, cur, c->after),
             at_before = !unknown && action_state_equal(c, cur, c->before);
        free(cur);
        const char *detail;
        enum log_event event = recovered_outcome(undo, unknown, unreadable, at_before, at_after, c->undo.n > 0, &detail);
        if (!unknown && at_before && !at_after)
                action_remove_created_dirs(l->root, c); /* made before the write that never came */
        long s = changelog_append(l, &ctx, event, c, undo ? rec->ref : rec->seq, detail);
        if (s < 0)
                return (int)s;
        if (messages)
                strv_push(messages, xasprintf("%s of run %s, change %ld (%s): %s -> %s", undo ? "rollback" : "apply",
                                              rec->run ? rec->run : "?", undo && rec->ref ? rec->ref : rec->seq,
                                              c->target ? c->target : "?", detail + strlen(RECOVERED),
                                              log_event_name(event)));
        if (!undo)
                set_run(ret_run, rec->run);
        return 1;
}

/* A run killed between two changes has no open step, only a run-begin (REC) without its run-end.
 * Its steps are closed first; the run gets its end. An apply's run id goes to *ret_run, so the
 * apply that recovers it completes that run. Returns 1 or -errno. */
static int recover_run(struct changelog *l, const struct log_record *rec, struct strv *messages, char **ret_run)
{
        const char *kind = rec->change.target ? rec->change.target : "run";
        struct log_context ctx = record_context(rec);
        const char *detail = RECOVERED "the run stopped before its end (its changes are each done, failed "
                                       "or closed above)";
        long s = changelog_run_end(l, &ctx, kind, rec->seq, detail);
        if (s < 0)
                return (int)s;
        if (messages)
                strv_push(messages, xasprintf("%s of run %s (run-begin %ld): %s -> run-end", kind,
                                              rec->run ? rec->run : "?", rec->seq, detail + strlen(RECOVERED)));
        if (streq(kind, "apply"))
                set_run(ret_run, rec->run);
        return 1;
}

int changelog_recover(struct changelog *l, const struct log_read *lr, struct strv *messages, char **ret_run)
{
        size_t *idx;
        size_t n = changelog_unfinished(lr, &idx);
        if (ret_run)
                *ret_run = NULL;
        int rc = 0;
        /* The steps first, then the runs they belong to. */
        for (int runs = 0; runs <= 1; runs++)
                for (size_t k = 0; k < n && rc >= 0; k++) {
                        const struct log_record *rec = &lr->v[idx[k]];
                        if ((rec->event == LOG_RUN_BEGIN) != runs)
                                continue;
                        int r = runs ? recover_run(l, rec, messages, ret_run) : recover_step(l, rec, messages, ret_run);
                        rc = r < 0 ? r : rc + r;
                }
        free(idx);
        return rc;
}
