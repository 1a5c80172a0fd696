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
 * File contents (the states of a kind with .content) are not inline: before/after are null and the
 * contents live in CHANGELOG_DIR/backups/<sha256>, written once per content (atomically, before the
 * record that names them), so a record never references a backup that is not on disk. A runtime value longer
 * than CHANGELOG_VALUE_INLINE is kept the same way (its before/after null, its *_sha256 and
 * backup_* set); shorter ones are inline.
 *
 * This file opens, checks, appends to and locks the log. The head file is changelog-head.c, reading
 * the log back and checking its chain changelog-read.c, the backup store backup-store.c, and the
 * recovery of an interrupted run, which is part of the transaction, txn-recover.c.
 */
#include "apply/changelog.h"

#include "base/deadline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply/backup-store.h"
#include "apply/change-kind.h"
#include "apply/changelog-internal.h"
#include "base/digest.h"
#include "facts/json-out.h"
#include "base/trust.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct changelog {
        struct root *root;
        int fd;
        long seq;       /* last seq written */
        char prev[65];  /* its hash */
        char *host;
        char *note;     /* what opening did to the head file (changelog_note) */
        char *why;      /* why its last append was refused (changelog_error) */
};

/* ---- trust in the log's own files ---- */

int log_refuse(char **why, int code, const char *fmt, ...)
{
        if (!why)
                return code;
        va_list ap;
        va_start(ap, fmt);
        free(*why);
        *why = xvasprintf(fmt, ap);
        va_end(ap);
        return code;
}

char *changelog_reason(int rc, char *why)
{
        return why ? why : xstrdup(changelog_strerror(rc));
}

const char *changelog_strerror(int rc)
{
        if (rc == -EBADMSG)
                return "its last record is damaged (see `llmtune verify`)";
        if (rc == -ELOOP)
                return "a symbolic link is on its path (refused)";
        return strerror(-rc);
}

/*
 * The log's files are taken as input as rule and profile files are, under the one trust policy
 * (base/trust.h): owned by root or the user running llmtune, writable by no group or other user.
 * Unlike those, they are checked whoever runs llmtune. Before that, what the log can use: a regular
 * file (O_NONBLOCK first, so a FIFO planted in its place cannot hang the open; read(2) then waits as
 * usual) with one name (a hard link would make appends and reads reach a file outside the tree).
 * STRICT false (the lock): only the kind of file is checked.
 */
int log_open_trusted(struct root *r, const char *path, int flags, mode_t mode, bool strict, char **refused)
{
        _cleanup_close_ int fd = root_open_nolinks(r, path, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode);
        if (fd < 0)
                return fd;
        struct stat st;
        _cleanup_free_ char *why = NULL;
        int rc = 0;
        if (fstat(fd, &st) < 0)
                rc = -errno;
        else if (!S_ISREG(st.st_mode))
                rc = log_refuse(refused, -EINVAL,
                                "%s is not a regular file (a FIFO, device or socket is never used as the change log)",
                                path);
        else if (strict && (why = trust_fd_problem(fd, path)))
                rc = log_refuse(refused, -EPERM, "%s: anyone who can change it could forge records", why);
        else if (strict && st.st_nlink != 1)
                rc = log_refuse(refused, -EMLINK, "%s has %lu hard links: it may be a file outside the tree", path,
                                (unsigned long)st.st_nlink);
        else {
                int fl = fcntl(fd, F_GETFL);
                if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                        rc = -errno;
        }
        return rc < 0 ? rc : TAKE_FD(fd);
}

/* The log's directory and its backups directory, under the same policy (a missing one passes). */
static int check_dir(struct root *r, const char *path, char **refused)
{
        _cleanup_close_ int fd = root_open_nolinks(r, path, O_PATH | O_DIRECTORY, 0);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        _cleanup_free_ char *why = trust_fd_problem(fd, path);
        return why ? log_refuse(refused, -EPERM, "%s: anyone who can change it could forge records", why) : 0;
}

int log_check_dirs(struct root *r, char **why)
{
        int rc = check_dir(r, CHANGELOG_DIR, why);
        return rc < 0 ? rc : check_dir(r, BACKUP_DIR, why);
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

int log_read_whole(int fd, char **ret, size_t *ret_len)
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
json_object *log_parse_line(const char *s, size_t len)
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
bool log_line_hash_ok(const char *line, size_t n, char stored[65])
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
        if (!sha256_hex_valid(h))
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

/* A record number ("seq", "ref"): 0 when missing or not in 1..LONG_MAX/2. No log comes near the
 * bound (each record is a line); it keeps "the next record", seq + 1, from overflowing on an edited
 * log that claims LONG_MAX (found by fuzz-changelog). */
long log_field_seq(json_object *o, const char *key)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return 0;
        int64_t x = json_object_get_int64(v);
        return x > 0 && x <= LONG_MAX / 2 ? (long)x : 0;
}

/* Whether the log exists (*EXISTED): a missing log beside a head file was deleted, not never
 * written. Returns 0 or -errno. */
static int log_exists(struct root *r, bool *existed, char **why)
{
        _cleanup_close_ int probe = log_open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true, why);
        *existed = probe >= 0;
        return probe >= 0 || probe == -ENOENT ? 0 : probe;
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
        json_object *o = log_parse_line(data + start, end - start);
        char h[65];
        int rc = 0;
        if (!o || !log_line_hash_ok(data + start, end - start, h) || log_field_seq(o, "seq") <= 0)
                rc = -EBADMSG;
        else {
                l->seq = log_field_seq(o, "seq");
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
                         struct head_view *v, char **why)
{
        long head_seq = 0;
        char head_hash[65], at_head[65] = "";
        int hrc = log_head_read(r, &head_seq, head_hash, why);
        if (hrc < 0 && hrc != -ENOENT && hrc != -EBADMSG)
                return hrc;
        if (hrc == 0 && head_seq == l->seq)
                memcpy(at_head, l->prev, sizeof(at_head));
        else if (hrc == 0 && head_seq < l->seq)
                log_head_find(data, whole, head_seq, at_head);
        log_head_judge(hrc, head_seq, head_hash, log_existed, l->seq, l->prev, at_head[0] ? at_head : NULL,
                   data && memmem(data, whole, RUN_BEGIN_KEY, strlen(RUN_BEGIN_KEY)), v);
        return 0;
}

static int head_refusal(struct root *r, const struct changelog *l, const char *problem, char **why)
{
        return log_refuse(why, -ESTALE,
                      "%s (see `llmtune verify`). To accept the loss and go on from the log as it is, "
                      "make its last record the head: echo %ld:%s > %s%s",
                      problem, l->seq, l->seq ? l->prev : LOG_ZERO_HASH, streq(root_path(r), "/") ? "" : root_path(r),
                      CHANGELOG_HEAD);
}

/* The log's end (DATA: WHOLE bytes of whole lines, LEN in all) against the head file: a cut log is
 * not continued (the next record would take the place of the ones cut off, and the head would then
 * vouch for it); a missing or lagging head file is brought up to the log, and a half record the
 * head never vouched for goes. Returns 0 or -errno (-ESTALE: refused, the reason said). */
static int settle_head(struct root *r, struct changelog *l, const char *data, size_t whole, size_t len,
                       bool log_existed, char **why)
{
        struct head_view v;
        int jrc = judge_log_end(r, l, data, whole, log_existed, &v, why);
        if (jrc < 0)
                return jrc;
        bool drop_torn = !v.problem && whole < len;
        int rc = 0;
        if (v.problem)
                rc = head_refusal(r, l, v.problem, why);
        else if (streq(v.state, "absent") || streq(v.state, "behind")) {
                rc = log_head_write(r, l->seq, l->prev);
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
        int rc = log_read_whole(fd, data, len);
        if (rc < 0)
                return rc;
        *whole = *len;
        while (*whole > 0 && (*data)[*whole - 1] != '\n')
                (*whole)--;
        return continue_chain(l, *data, *whole);
}

int changelog_open(struct root *r, struct changelog **ret, char **ret_why)
{
        int rc = root_mkdirs(r, BACKUP_DIR, 0755);
        if (rc == 0)
                rc = log_check_dirs(r, ret_why);
        bool log_existed = false;
        if (rc == 0)
                rc = log_exists(r, &log_existed, ret_why);
        if (rc < 0)
                return rc;
        int fd = log_open_trusted(r, CHANGELOG_PATH, O_RDWR | O_APPEND | O_CREAT, 0644, true, ret_why);
        if (fd < 0)
                return fd;
        struct changelog *l = xcalloc(1, sizeof(*l));
        l->root = r;
        l->fd = fd;
        memcpy(l->prev, LOG_ZERO_HASH, sizeof(LOG_ZERO_HASH));

        _cleanup_free_ char *data = NULL;
        size_t len = 0, whole = 0;
        rc = read_chain(fd, l, &data, &len, &whole);
        if (rc >= 0)
                rc = settle_head(r, l, data, whole, len, log_existed, ret_why);
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

int changelog_check(struct root *r, char **ret_why)
{
        bool existed = false;
        int rc = log_check_dirs(r, ret_why);
        if (rc == 0)
                rc = log_exists(r, &existed, ret_why);
        if (rc < 0)
                return rc;
        struct changelog l = {.fd = -1};
        memcpy(l.prev, LOG_ZERO_HASH, sizeof(LOG_ZERO_HASH));
        _cleanup_free_ char *data = NULL;
        size_t len = 0, whole = 0;
        if (existed) {
                _cleanup_close_ int fd = log_open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true, ret_why);
                if (fd < 0)
                        return fd;
                rc = read_chain(fd, &l, &data, &len, &whole);
                if (rc < 0)
                        return rc;
        }
        struct head_view v;
        rc = judge_log_end(r, &l, data, whole, existed, &v, ret_why);
        if (rc == 0 && v.problem)
                rc = head_refusal(r, &l, v.problem, ret_why);
        free(v.problem);
        free(v.note);
        return rc;
}

struct changelog *changelog_close(struct changelog *l)
{
        if (!l)
                return NULL;
        closep(&l->fd);
        free(l->host);
        free(l->note);
        free(l->why);
        free(l);
        return NULL;
}

const char *changelog_note(const struct changelog *l) { return l->note; }

struct root *changelog_root(const struct changelog *l) { return l->root; }

json_object *changelog_head_json(long seq, const char *hash)
{
        if (seq <= 0 || !sha256_hex_valid(hash))
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
        _cleanup_close_ int fd = root_open_nolinks(r, CHANGELOG_LOCK, O_RDONLY | O_DIRECTORY | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        while (flock(fd, how | (wait ? 0 : LOCK_NB)) < 0)
                if (errno != EINTR)
                        return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        /* A run that gives up on a read that never answers lets the lock go first (deadline.h). */
        deadline_release_on_expiry(fd);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Is NAME a temporary file of backup_store (".<sha256>.llmtune-<pid>")? */
/* Unlink the entries of DIR (under the root, no symbolic links on the way) that MATCH(name, ARG)
 * accepts, then fsync DIR. */
static void remove_debris(struct root *r, const char *dir, bool (*match)(const char *, const void *), const void *arg)
{
        _cleanup_close_ int fd = root_open_nolinks(r, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd >= 0)
                dir_remove_matching(fd, match, arg);
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
                remove_debris(r, BACKUP_DIR, backup_is_temp_name, NULL);
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

static char *record_line(const struct changelog *l, const struct log_context *ctx, enum log_event event,
                         const struct change *c, long ref, const char *detail, json_object *fields, char sha[2][65],
                         char *bk[2], char hash[65], size_t *ret_len)
{
        bool file = change_kind_of(c)->content;
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

const char *changelog_error(const struct changelog *l, long rc)
{
        return l && l->why ? l->why : changelog_strerror((int)rc);
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
        free(l->why);
        l->why = NULL;
        int rc = backup_store_change(l->root, c, sha, bk, &l->why);
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
        rc = log_head_write(l->root, l->seq, l->prev);
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

