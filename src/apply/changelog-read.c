/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the change log back (changelog_read): every line parsed and checked against the hash chain
 * (see the top of changelog.c), each record's contents loaded from the backup store, the log's end
 * judged against the head file, and in one sorted pass which steps are finished, which "done"
 * records were reversed and which changes are still in force.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "apply/ack.h"
#include "apply/actions.h"
#include "apply/backup-store.h"
#include "apply/change-kind.h"
#include "apply/changelog-internal.h"

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
/* Fill REC from O; returns a reason when a field is missing or of the wrong kind. */
static char *record_from_json(struct root *r, json_object *o, struct log_record *rec)
{
        rec->seq = log_field_seq(o, "seq");
        rec->ref = log_field_seq(o, "ref");
        rec->time = json_doc_strdup(o, "time");
        rec->host = json_doc_strdup(o, "host");
        rec->run = json_doc_strdup(o, "run");
        const char *event = json_doc_str(o, "event");
        rec->event = log_event_parse(event);
        rec->profile = json_doc_strdup(o, "profile");
        rec->profile_hash = json_doc_strdup(o, "profile_hash");
        rec->detail = json_doc_strdup(o, "detail");
        struct change *c = &rec->change;
        c->rule = json_doc_strdup(o, "rule");
        c->target = json_doc_strdup(o, "target");
        c->aux = json_doc_strdup(o, "aux");
        json_object *b;
        c->reboot = json_object_object_get_ex(o, "reboot", &b) && json_object_get_boolean(b);
        if (!event || !rec->time)
                return xstrdup("it lacks its event or time");
        if (rec->event == LOG_EVENT_UNKNOWN)
                return xasprintf("its event '%s' is not one llmtune writes", event);
        const char *type = json_doc_str(o, "type");
        if (!type || change_type_parse(type, &c->type) < 0)
                return xasprintf("its change type '%s' is unknown", type ? type : "(none)");
        const char *mode = json_doc_str(o, "mode");
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
        if (!change_kind_of(c)->content) {
                /* Inline, or (a long value) in the backup store; never both. */
                static const char *const which[] = {"before", "after"};
                for (int k = 0; k < 2; k++) {
                        char **dst = k ? &c->after : &c->before;
                        _cleanup_free_ char *bkey = xasprintf("backup_%s", which[k]),
                                            *skey = xasprintf("%s_sha256", which[k]);
                        if (!json_doc_str(o, bkey) && !json_doc_str(o, skey)) {
                                *dst = json_doc_strdup(o, which[k]);
                                continue;
                        }
                        if (json_doc_str(o, which[k]))
                                return xasprintf("its %s value is both inline and in a backup", which[k]);
                        if (backup_load(r, o, which[k], dst, &why) < 0) {
                                *(k ? &rec->after_lost : &rec->before_lost) = true;
                                return why;
                        }
                }
                return NULL;
        }
        if (backup_load(r, o, "before", &c->before, &why) < 0) {
                rec->before_lost = true;
                return why;
        }
        if (backup_load(r, o, "after", &c->after, &why) < 0) {
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
static int check_head(struct root *r, struct log_read *lr, bool log_exists, bool has_runs, char **why)
{
        int hrc = log_head_read(r, &lr->head_seq, lr->head_hash, why);
        if (hrc < 0 && hrc != -ENOENT && hrc != -EBADMSG)
                return hrc;
        const char *at_head = NULL;
        for (size_t i = lr->n; hrc == 0 && i-- > 0 && !at_head;)
                if (lr->v[i].seq == lr->head_seq)
                        at_head = lr->v[i].hash;
        struct head_view v;
        log_head_judge(hrc, lr->head_seq, lr->head_hash, log_exists, lr->end_seq, lr->end_hash, at_head, has_runs, &v);
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
        bool hash_ok = log_line_hash_ok(line, n, hash);
        const char *p = json_doc_str(o, "prev");
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
        c->prev_known = sha256_hex_valid(hash);
        memcpy(c->prev, c->prev_known ? hash : LOG_ZERO_HASH, sizeof(c->prev));
        c->last_seq = seq;
}

/* One complete line of the log (without its newline): parsed, checked against the chain C and
 * appended to LR (CAP is LR's allocated length); a line that is no record only adds a problem. */
static void read_record_line(struct root *r, struct log_read *lr, size_t *cap, struct chain *c, const char *line,
                             size_t n, size_t lineno)
{
        long expect = c->last_seq + 1;
        json_object *o = log_parse_line(line, n);
        if (!o) {
                add_problem(lr, expect, "line %zu: record %ld is not valid JSON (edited or corrupted)", lineno, expect);
                c->last_seq = expect;
                c->prev_known = false;
                return;
        }
        long seq = log_field_seq(o, "seq");
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

/* The open log FD's bytes into *DATA, after checking the directories it lives in. Returns 0 or
 * -errno. */
static int read_log_fd(struct root *r, int fd, char **data, size_t *len, char **why)
{
        int rc = log_check_dirs(r, why);
        return rc < 0 ? rc : log_read_whole(fd, data, len);
}

/* Every line of the log's DATA into LR. Returns the number of the last line when it is half a
 * record (no newline), else 0. */
static size_t read_records(struct root *r, struct log_read *lr, const char *data, size_t len)
{
        struct chain c = {.prev_known = true};
        memcpy(c.prev, LOG_ZERO_HASH, sizeof(LOG_ZERO_HASH));
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

int changelog_read(struct root *r, struct log_read *ret, char **ret_why)
{
        struct log_read lr = {.head_state = "none"};
        _cleanup_close_ int fd = log_open_trusted(r, CHANGELOG_PATH, O_RDONLY, 0, true, ret_why);
        if (fd == -ENOENT) {
                /* No log: nothing was ever applied, unless a head file says it was deleted. */
                int rc = check_head(r, &lr, false, false, ret_why);
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
        int rc = read_log_fd(r, fd, &data, &len, ret_why);
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
        rc = check_head(r, &lr, true, memmem(data, whole, RUN_BEGIN_KEY, strlen(RUN_BEGIN_KEY)) != NULL, ret_why);
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
 * (type, target) key. The kinds whose targets are paths in /etc (a file, a link) are one type here:
 * both are what one path holds, and a
 * mask that replaced a regular file (want_symlink: the file removed, then the link made) leaves
 * the link on top, the removal beneath it, undone after it.
 */
static long in_force_kind(const struct change *c) { return change_kind_of(c)->in_etc ? -1 : (long)c->type; }

size_t changelog_in_force(const struct log_read *lr, size_t **ret)
{
        struct key_index live;
        key_index_init(&live, lr->n);
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                if (rec->event == LOG_DONE && rec->change.target && !rec->reversed)
                        key_add(&live, in_force_kind(&rec->change), rec->change.target, i);
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

/* ---- unfinished steps ---- */

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
