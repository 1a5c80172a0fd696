/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The change log: records and backups read back, the hash chain catching edited, removed and
 * reordered records, the head file catching a cut or deleted log, the hash over the line's bytes
 * (a CR or a space is an edit), run-begin/run-end, changes in force after a rollback, and the
 * apply lock. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/ack.h"
#include "apply/changelog.h"
#include "tmptree.h"
#include "base/trust.h"
#include "apply/txn.h"
#include "unit-main.h"

static void setup(void)
{
        tmptree_new("changelog");
        char *etc = xasprintf("%s/etc", tmptree_path());
        ck_assert_int_eq(mkdir(etc, 0755), 0);
        free(etc);
}

static char *log_path(void) { return xasprintf("%s%s", tmptree_path(), CHANGELOG_PATH); }
static char *head_path(void) { return xasprintf("%s%s", tmptree_path(), CHANGELOG_HEAD); }

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        struct sbuf b = {0};
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
                sbuf_addn(&b, buf, n);
        fclose(f);
        return sbuf_steal(&b);
}

static void spill(const char *path, const char *s)
{
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(s, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* Lines of the log as a strv (without their newlines). */
static void log_lines(struct strv *l)
{
        char *p = log_path(), *s = slurp(p);
        for (char *line = s, *nl; (nl = strchr(line, '\n')); line = nl + 1)
                strv_push(l, xstrndup(line, (size_t)(nl - line)));
        free(s);
        free(p);
}

static void write_lines(const struct strv *l)
{
        struct sbuf b = {0};
        for (size_t i = 0; i < l->n; i++)
                sbuf_addf(&b, "%s\n", l->v[i]);
        char *p = log_path();
        spill(p, b.s ? b.s : "");
        free(p);
        free(b.s);
}

static const struct log_context ctx = {.run = "run-1", .profile = "a100-8x", .profile_hash = "abc", .host = NULL};

/* Four records: intent+done of a file change (sysctl.d drop-in replaced), intent+done of a value. */
static void write_sample(struct root *r)
{
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        struct change f = {.rule = xstrdup("thp-enabled"), .type = CHANGE_FILE,
                           .target = xstrdup("/etc/sysctl.d/90-llmtune.conf"), .before = xstrdup("vm.swappiness = 60\n"),
                           .after = xstrdup("vm.swappiness = 1\n"), .mode = 0644};
        strv_add(&f.mkdirs, "/etc/sysctl.d");
        long s1 = changelog_append(l, &ctx, LOG_INTENT, &f, 0, NULL);
        ck_assert_int_eq(s1, 1);
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_DONE, &f, s1, NULL), 2);
        struct change v = {.rule = xstrdup("vm-swappiness"), .type = CHANGE_VALUE,
                           .target = xstrdup("/proc/sys/vm/swappiness"), .before = xstrdup("60"), .after = xstrdup("1")};
        long s3 = changelog_append(l, &ctx, LOG_INTENT, &v, 0, NULL);
        ck_assert_int_eq(s3, 3);
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_DONE, &v, s3, "written"), 4);
        changelog_close(l);
        change_done(&f);
        change_done(&v);
}

static struct root *open_root(void)
{
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        return r;
}

static bool has_problem_at(const struct log_read *lr, long seq)
{
        for (size_t i = 0; i < lr->n_problems; i++)
                if (lr->problems[i].seq == seq)
                        return true;
        return false;
}

START_TEST(append_and_read)
{
        struct root *r = open_root();
        char *hn = xasprintf("%s/etc/hostname", tmptree_path());
        spill(hn, "node17\n");
        free(hn);
        write_sample(r);

        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_uint_eq(lr.n, 4);
        ck_assert_int_eq(lr.v[0].seq, 1);
        ck_assert_int_eq(lr.v[0].ref, 0);
        ck_assert_int_eq(lr.v[1].ref, 1);
        ck_assert_int_eq(lr.v[1].event, LOG_DONE);
        ck_assert_str_eq(lr.v[1].host, "node17");
        ck_assert_str_eq(lr.v[1].run, "run-1");
        ck_assert_str_eq(lr.v[1].profile, "a100-8x");
        /* File contents come back from the backups. */
        const struct change *c = &lr.v[1].change;
        ck_assert_int_eq(c->type, CHANGE_FILE);
        ck_assert_str_eq(c->before, "vm.swappiness = 60\n");
        ck_assert_str_eq(c->after, "vm.swappiness = 1\n");
        ck_assert_uint_eq(c->mode, 0644);
        ck_assert_uint_eq(c->mkdirs.n, 1);
        ck_assert_str_eq(lr.v[3].change.before, "60");
        ck_assert_str_eq(lr.v[3].change.after, "1");
        ck_assert_str_eq(lr.v[3].detail, "written");
        /* ... and are not inline in the record. */
        json_object *b;
        ck_assert(json_object_object_get_ex(lr.v[1].json, "before", &b));
        ck_assert_ptr_null(b);
        size_t *idx;
        ck_assert_uint_eq(changelog_in_force(&lr, &idx), 2);
        ck_assert_uint_eq(idx[0], 1);
        ck_assert_uint_eq(idx[1], 3);
        free(idx);
        log_read_done(&lr);

        /* Reopening continues the chain. */
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        struct change n = {.rule = xstrdup("reboot"), .type = CHANGE_NOTE, .target = xstrdup("reboot"), .reboot = true};
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_INTENT, &n, 0, NULL), 5);
        changelog_close(l);
        change_done(&n);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_uint_eq(lr.n, 5);
        ck_assert(lr.v[4].change.reboot);
        log_read_done(&lr);
        root_free(r);
}
END_TEST
DEFINE_TEST(append_and_read, .description = "append and read", .root = "tmptree");

START_TEST(edited_record)
{
        struct root *r = open_root();
        write_sample(r);
        struct strv l = {0};
        log_lines(&l);
        char *p = strstr(l.v[1], "\"done\"");
        ck_assert_ptr_nonnull(p);
        p[1] = 'D'; /* one byte */
        write_lines(&l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        /* the edit, and the event name no llmtune writes (the record acts on nothing) */
        ck_assert_uint_eq(lr.n_problems, 2);
        ck_assert_int_eq(lr.problems[0].seq, 2);
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "edited"));
        ck_assert_int_eq(lr.problems[1].seq, 2);
        ck_assert_ptr_nonnull(strstr(lr.problems[1].message, "its event 'Done' is not one llmtune writes"));
        ck_assert_int_eq(lr.v[1].event, LOG_EVENT_UNKNOWN);
        log_read_done(&lr);
        /* An edit that breaks the JSON is reported at that record too. */
        l.v[1][0] = 'x';
        write_lines(&l);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_int_eq(lr.problems[0].seq, 2);
        log_read_done(&lr);
        /* Appending to a log whose last record is damaged is refused. */
        l.v[3][5] = '!';
        write_lines(&l);
        struct changelog *cl;
        ck_assert_int_eq(changelog_open(r, &cl, NULL), -EBADMSG);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(edited_record, .description = "edited record", .root = "tmptree");

START_TEST(removed_record)
{
        struct root *r = open_root();
        write_sample(r);
        struct strv l = {0};
        log_lines(&l);
        free(l.v[1]);
        memmove(l.v + 1, l.v + 2, (l.n - 2) * sizeof(char *));
        l.v[--l.n] = NULL;
        write_lines(&l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_int_eq(lr.problems[0].seq, 3);
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "removed"));
        log_read_done(&lr);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(removed_record, .description = "removed record", .root = "tmptree");

START_TEST(reordered_records)
{
        struct root *r = open_root();
        write_sample(r);
        struct strv l = {0};
        log_lines(&l);
        char *t = l.v[1];
        l.v[1] = l.v[2];
        l.v[2] = t;
        write_lines(&l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_ge(lr.n_problems, 1);
        ck_assert(has_problem_at(&lr, 3));
        ck_assert(has_problem_at(&lr, 2));
        log_read_done(&lr);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(reordered_records, .description = "reordered records", .root = "tmptree");

/* A run killed inside write(2) leaves half a line that the head file never named: not a cut log.
 * verify notes it, the next writer removes it and the chain goes on from the last whole record. */
START_TEST(torn_append_is_not_a_cut)
{
        struct root *r = open_root();
        write_sample(r);
        char *p = log_path(), *s = slurp(p);
        char *torn = xasprintf("%s{\"seq\":5,\"time\":\"2026-", s);
        spill(p, torn);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n, 4);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_str_eq(lr.head_state, "ok");
        ck_assert_ptr_nonnull(lr.head_note);
        ck_assert_ptr_nonnull(strstr(lr.head_note, "half a record"));
        log_read_done(&lr);

        struct changelog *l = NULL;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        changelog_close(l);
        char *after = slurp(p);
        ck_assert_str_eq(after, s); /* the half line is gone, nothing else */
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_ptr_null(lr.head_note);
        log_read_done(&lr);
        free(after);
        free(torn);
        free(s);
        free(p);
        root_free(r);
}
END_TEST
DEFINE_TEST(torn_append_is_not_a_cut, .description = "torn append is not a cut", .root = "tmptree");

START_TEST(truncated_and_missing_backup)
{
        struct root *r = open_root();
        write_sample(r);
        char *p = log_path(), *s = slurp(p);
        s[strlen(s) - 10] = '\0'; /* cut into the last record */
        spill(p, s);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n, 3);
        /* the incomplete line, and the head file naming record 4 */
        ck_assert_uint_eq(lr.n_problems, 2);
        ck_assert_int_eq(lr.problems[0].seq, 4);
        ck_assert_int_eq(lr.problems[1].seq, 4);
        ck_assert_str_eq(lr.head_state, "cut");
        log_read_done(&lr);
        free(s);
        free(p);
        /* A backup that is gone or altered is a problem of the records naming it. */
        root_free(r);
        r = open_root();
        struct strv l = {0};
        log_lines(&l);
        char *sha = strstr(l.v[1], "\"backup_after\":\"backups/");
        ck_assert_ptr_nonnull(sha);
        char *bk = xasprintf("%s%s/backups/%.64s", tmptree_path(), CHANGELOG_DIR, sha + strlen("\"backup_after\":\"backups/"));
        spill(bk, "vm.swappiness = 100\n");
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert(has_problem_at(&lr, 1));
        ck_assert(has_problem_at(&lr, 2));
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "altered"));
        log_read_done(&lr);
        free(bk);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(truncated_and_missing_backup, .description = "truncated and missing backup", .root = "tmptree");

START_TEST(in_force_after_undo)
{
        struct root *r = open_root();
        write_sample(r);
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        /* A second apply replaces the drop-in again (seq 5, 6) ... */
        struct change f = {.rule = xstrdup("thp-enabled"), .type = CHANGE_FILE,
                           .target = xstrdup("/etc/sysctl.d/90-llmtune.conf"), .before = xstrdup("vm.swappiness = 1\n"),
                           .after = xstrdup("vm.swappiness = 10\n")};
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_INTENT, &f, 0, NULL), 5);
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_DONE, &f, 5, NULL), 6);
        /* ... and is rolled back (undone refers to the done, seq 6): the first apply's file is in
         * force again. The value change of seq 4 is rolled back too. */
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_UNDO_INTENT, &f, 6, NULL), 7);
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_UNDONE, &f, 6, NULL), 8);
        struct change v = {.rule = xstrdup("vm-swappiness"), .type = CHANGE_VALUE,
                           .target = xstrdup("/proc/sys/vm/swappiness"), .before = xstrdup("60"), .after = xstrdup("1")};
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_UNDONE, &v, 4, NULL), 9);
        changelog_close(l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        size_t *idx;
        ck_assert_uint_eq(changelog_in_force(&lr, &idx), 1);
        ck_assert_int_eq(lr.v[idx[0]].seq, 2);
        free(idx);
        log_read_done(&lr);
        change_done(&f);
        change_done(&v);
        root_free(r);
}
END_TEST
DEFINE_TEST(in_force_after_undo, .description = "in force after undo", .root = "tmptree");

/* A write cut short (here by RLIMIT_FSIZE, as a full disk would) leaves no half record behind. */
START_TEST(short_write)
{
        struct root *r = open_root();
        write_sample(r);
        char *p = log_path(), *before = slurp(p);
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        struct change v = {.rule = xstrdup("vm-swappiness"), .type = CHANGE_VALUE,
                           .target = xstrdup("/proc/sys/vm/swappiness"), .before = xstrdup("1"), .after = xstrdup("10")};
        struct rlimit old, lim;
        ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
        lim = old;
        lim.rlim_cur = strlen(before) + 100;
        signal(SIGXFSZ, SIG_IGN);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        ck_assert_int_lt(changelog_append(l, &ctx, LOG_INTENT, &v, 0, NULL), 0);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
        char *after = slurp(p);
        ck_assert_str_eq(after, before);
        /* The chain continues where it was. */
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_INTENT, &v, 0, NULL), 5);
        changelog_close(l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_uint_eq(lr.n, 5);
        log_read_done(&lr);
        change_done(&v);
        free(after);
        free(before);
        free(p);
        root_free(r);
}
END_TEST
DEFINE_TEST(short_write, .description = "short write", .root = "tmptree");

/* Whole records cut off the end (the chain stays valid) and the log deleted: the head file names
 * the last record, so both are found, and apply does not continue a cut log. */
START_TEST(cut_log)
{
        struct root *r = open_root();
        write_sample(r);
        char *hp = head_path(), *head = slurp(hp);
        struct strv l = {0};
        log_lines(&l);
        ck_assert_uint_eq(l.n, 4);
        /* the head file is SEQ:HASH of the last record */
        char *want = xasprintf("4:%.64s\n", strstr(l.v[3], ",\"hash\":\"") + strlen(",\"hash\":\""));
        ck_assert_str_eq(head, want);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_str_eq(lr.head_state, "ok");
        ck_assert_int_eq(lr.end_seq, 4);
        log_read_done(&lr);

        free(l.v[3]);
        l.v[3] = NULL;
        l.n = 3;
        write_lines(&l);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_int_eq(lr.problems[0].seq, 4);
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "records 4 to 4 were cut off"));
        ck_assert_str_eq(lr.head_state, "cut");
        log_read_done(&lr);
        struct changelog *cl;
        _cleanup_free_ char *cut = NULL;
        ck_assert_int_eq(changelog_open(r, &cl, &cut), -ESTALE);
        ck_assert_ptr_nonnull(cut);
        ck_assert_ptr_nonnull(strstr(cut, "cut off"));

        /* The log deleted: not "nothing applied". */
        char *p = log_path();
        ck_assert_int_eq(unlink(p), 0);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n, 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "the log was deleted"));
        log_read_done(&lr);

        /* A head one record behind (killed between the two writes) is a note, and opening brings
         * it up to date. */
        strv_done(&l);
        unlink(p);
        unlink(hp);
        write_sample(r);
        log_lines(&l);
        char *h3 = xasprintf("3:%.64s\n", strstr(l.v[2], ",\"hash\":\"") + strlen(",\"hash\":\""));
        spill(hp, h3);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_str_eq(lr.head_state, "behind");
        ck_assert_ptr_nonnull(lr.head_note);
        log_read_done(&lr);
        ck_assert_int_eq(changelog_open(r, &cl, NULL), 0);
        ck_assert_ptr_nonnull(changelog_note(cl));
        changelog_close(cl);
        char *head2 = slurp(hp);
        /* the rewritten sample's own last record: its time (and so its hash) may differ from the first */
        char *want2 = xasprintf("4:%.64s\n", strstr(l.v[3], ",\"hash\":\"") + strlen(",\"hash\":\""));
        ck_assert_str_eq(head2, want2);
        free(want2);
        /* Two behind is not a crash: records appended without the head. */
        char *h2 = xasprintf("2:%.64s\n", strstr(l.v[1], ",\"hash\":\"") + strlen(",\"hash\":\""));
        spill(hp, h2);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_str_eq(lr.head_state, "appended");
        log_read_done(&lr);
        free(h2);
        /* A head naming a record the log holds with another hash: the end was rewritten. */
        spill(hp, "4:0000000000000000000000000000000000000000000000000000000000000000\n");
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_str_eq(lr.head_state, "replaced");
        log_read_done(&lr);
        ck_assert_int_eq(changelog_open(r, &cl, NULL), -ESTALE);
        free(head2);
        free(h3);
        free(p);
        free(want);
        free(head);
        free(hp);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(cut_log, .description = "cut log", .root = "tmptree");

/* Killed between the first record (run-begin) and the first head file: a run that stopped, not a
 * deleted head; the next writer writes it. */
START_TEST(killed_before_first_head)
{
        struct root *r = open_root();
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        ck_assert_int_eq(changelog_run_begin(l, &ctx, "apply"), 1);
        changelog_close(l);
        char *hp = head_path();
        ck_assert_int_eq(unlink(hp), 0);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_str_eq(lr.head_state, "behind");
        log_read_done(&lr);
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        changelog_close(l);
        ck_assert_int_eq(access(hp, F_OK), 0);
        free(hp);
        root_free(r);
}
END_TEST
DEFINE_TEST(killed_before_first_head, .description = "killed before first head", .root = "tmptree");

/* A log from before the head file: no problem; opening creates the head and says so. A log with
 * run-begin records (written by a version that keeps the head) without one: its head was deleted. */
START_TEST(old_log_without_head)
{
        struct root *r = open_root();
        write_sample(r);
        char *hp = head_path();
        ck_assert_int_eq(unlink(hp), 0);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        ck_assert_str_eq(lr.head_state, "absent");
        ck_assert_ptr_nonnull(lr.head_note);
        log_read_done(&lr);
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        ck_assert_ptr_nonnull(changelog_note(l));
        ck_assert_ptr_nonnull(strstr(changelog_note(l), "created"));
        long b = changelog_run_begin(l, &ctx, "apply");
        ck_assert_int_eq(b, 5);
        changelog_close(l);
        ck_assert_int_eq(access(hp, F_OK), 0);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_str_eq(lr.head_state, "ok");
        log_read_done(&lr);
        ck_assert_int_eq(unlink(hp), 0);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 1);
        ck_assert_str_eq(lr.head_state, "missing");
        log_read_done(&lr);
        ck_assert_int_eq(changelog_open(r, &l, NULL), -ESTALE);
        free(hp);
        root_free(r);
}
END_TEST
DEFINE_TEST(old_log_without_head, .description = "old log without head", .root = "tmptree");

/* The hash covers the line's bytes: a space added inside, a CR before the newline, a space after
 * the record are each an edit of that record, though the JSON still means the same. */
START_TEST(bytes_as_written)
{
        struct root *r = open_root();
        write_sample(r);
        struct strv l = {0};
        log_lines(&l);
        const char *edits[] = {"space", "cr", "trailing"};
        for (size_t k = 0; k < 3; k++) {
                struct strv e = {0};
                for (size_t i = 0; i < l.n; i++)
                        strv_add(&e, l.v[i]);
                char *line = e.v[1];
                char *ev = strstr(line, "\"event\":");
                ck_assert_ptr_nonnull(ev);
                e.v[1] = k == 0 ? xasprintf("%.*s\"event\": %s", (int)(ev - line), line, ev + strlen("\"event\":"))
                         : k == 1 ? xasprintf("%s\r", line)
                                  : xasprintf("%s ", line);
                free(line);
                write_lines(&e);
                struct log_read lr;
                ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
                ck_assert_msg(has_problem_at(&lr, 2), "%s edit of record 2 not found", edits[k]);
                ck_assert_msg(strstr(lr.problems[0].message, "edited"), "%s: %s", edits[k], lr.problems[0].message);
                log_read_done(&lr);
                strv_done(&e);
        }
        write_lines(&l);
        strv_done(&l);
        root_free(r);
}
END_TEST
DEFINE_TEST(bytes_as_written, .description = "bytes as written", .root = "tmptree");

/* A run-begin without its run-end is an unfinished run (killed between two changes: no open
 * step), and recovery closes it. */
START_TEST(run_records)
{
        struct root *r = open_root();
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        long b = changelog_run_begin(l, &ctx, "apply");
        ck_assert_int_eq(b, 1);
        struct change v = {.rule = xstrdup("vm-swappiness"), .type = CHANGE_VALUE,
                           .target = xstrdup("/proc/sys/vm/swappiness"), .before = xstrdup("60"), .after = xstrdup("1")};
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_INTENT, &v, 0, NULL), 2);
        ck_assert_int_eq(changelog_append(l, &ctx, LOG_DONE, &v, 2, NULL), 3);
        changelog_close(l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        size_t *idx;
        ck_assert_uint_eq(changelog_unfinished(&lr, &idx), 1);
        ck_assert_int_eq(lr.v[idx[0]].event, LOG_RUN_BEGIN);
        free(idx);
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        char *run = NULL;
        ck_assert_int_eq(recover_unfinished(l, &lr, NULL, &run), 1);
        ck_assert_str_eq(run, "run-1");
        free(run);
        changelog_close(l);
        log_read_done(&lr);
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n, 4);
        ck_assert_int_eq(lr.v[3].event, LOG_RUN_END);
        ck_assert_int_eq(lr.v[3].ref, 1);
        ck_assert_uint_eq(changelog_unfinished(&lr, &idx), 0);
        free(idx);
        log_read_done(&lr);
        change_done(&v);
        root_free(r);
}
END_TEST
DEFINE_TEST(run_records, .description = "run records", .root = "tmptree");

/* Every event has one name, and a name reads back as its event; anything else is unknown. */
START_TEST(event_names)
{
        for (int e = LOG_EVENT_UNKNOWN + 1; e < LOG_EVENT_MAX; e++) {
                ck_assert_int_eq(log_event_parse(log_event_name((enum log_event)e)), e);
                for (int f = e + 1; f < LOG_EVENT_MAX; f++)
                        ck_assert_str_ne(log_event_name((enum log_event)e), log_event_name((enum log_event)f));
        }
        ck_assert_str_eq(log_event_name(LOG_UNDO_FAILED), "undo-failed");
        ck_assert_str_eq(log_event_name(LOG_RUN_BEGIN), "run-begin");
        ck_assert_int_eq(log_event_parse("undo"), LOG_EVENT_UNKNOWN);
        ck_assert_int_eq(log_event_parse("unknown"), LOG_EVENT_UNKNOWN);
        ck_assert_int_eq(log_event_parse(NULL), LOG_EVENT_UNKNOWN);
        ck_assert_str_eq(log_event_name(LOG_EVENT_MAX), "unknown");
}
END_TEST
DEFINE_TEST(event_names, .description = "event names", .root = "tmptree");

START_TEST(missing_log)
{
        struct root *r = open_root();
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n, 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        log_read_done(&lr);
        root_free(r);
}
END_TEST
DEFINE_TEST(missing_log, .description = "missing log", .root = "tmptree");

START_TEST(lock)
{
        struct root *r = open_root();
        int fd1, fd2;
        ck_assert_int_eq(changelog_lock(r, false, &fd1), 0);
        /* flock belongs to the open file description: a second open of the lock conflicts. */
        ck_assert_int_eq(changelog_lock(r, false, &fd2), -EWOULDBLOCK);
        close(fd1);
        ck_assert_int_eq(changelog_lock(r, false, &fd2), 0);
        close(fd2);
        root_free(r);
}
END_TEST
DEFINE_TEST(lock, .description = "lock", .root = "tmptree");

START_TEST(run_id)
{
        char *id = changelog_run_id();
        ck_assert_uint_ge(strlen(id), 18);
        ck_assert_int_eq(id[8], 'T');
        free(id);
}
END_TEST
DEFINE_TEST(run_id, .description = "run id", .root = "tmptree");

/* --- acknowledged findings (apply/ack.c) --------------------------------------------------------- */

static const struct rule xid_rule = {.id = "gpu-xid-critical", .title = "t", .area = "gpu"};

/* A failure of xid_rule on two GPUs, 86:00 with N86 critical events. */
static void xid_failure(struct result *res, const char *n86)
{
        *res = (struct result){.rule = &xid_rule, .status = RES_FAIL, .severity = SEV_CRITICAL};
        res->observed = xstrdup("xid.0000:86:00.critical = 79 (2 of 2 items)");
        strv_add(&res->evidence, "xid.0000:86:00.critical=79");
        strv_push(&res->evidence, xasprintf("xid.0000:86:00.critical_events=%s", n86));
        strv_add(&res->evidence, "xid.0000:3b:00.critical=48");
        strv_add(&res->evidence, "xid.0000:3b:00.critical_events=2");
}

static void result_release(struct result *res)
{
        free(res->observed);
        strv_done(&res->evidence);
}

/* RES judged against the acks of the log under R: its status, *NOTE (caller frees) its ack note. */
static enum result_status judged(struct root *r, const struct result *res, char **note)
{
        struct audit a = {.v = xcalloc(1, sizeof(*a.v)), .n = 1};
        a.v[0] = *res;
        a.v[0].observed = xstrdup(res->observed);
        a.v[0].evidence = (struct strv){0};
        for (size_t i = 0; i < res->evidence.n; i++)
                strv_add(&a.v[0].evidence, res->evidence.v[i]);
        a.count[RES_FAIL] = 1;
        struct ack_list acks;
        ck_assert_int_eq(ack_list_read(r, &acks, NULL), 0);
        ack_judge(&a, &acks, time(NULL));
        ack_list_done(&acks);
        enum result_status st = a.v[0].status;
        ck_assert_uint_eq(a.count[st], 1);
        *note = a.v[0].ack_note ? xstrdup(a.v[0].ack_note) : NULL;
        audit_done(&a);
        return st;
}

static long append_ack(struct root *r, const struct result *res, const char *item, const char *until)
{
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        long seq = ack_append(l, &ctx, res, item, "RMA 1234", until);
        changelog_close(l);
        return seq;
}

START_TEST(ack_judged)
{
        struct root *r = open_root();
        struct result res;
        xid_failure(&res, "1");
        ck_assert_int_eq(append_ack(r, &res, "mlx5_9", NULL), -ENOENT); /* no failing item of it */
        ck_assert_int_eq(append_ack(r, &res, "0000:86:00", NULL), 1);
        ck_assert_int_eq(append_ack(r, &res, NULL, "2000-01-01T00:00:00Z"), 2); /* expired */
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 0);
        struct ack_list acks;
        ack_list_from_log(&lr, &acks);
        ck_assert_uint_eq(acks.n, 2);
        ck_assert_str_eq(acks.v[0].item, "0000:86:00");
        ck_assert_uint_eq(acks.v[0].evidence.n, 2); /* the item's evidence only */
        ck_assert_str_eq(acks.v[0].user, "root");
        ck_assert_str_eq(ack_state(&acks.v[1], time(NULL)), "expired");
        ack_list_done(&acks);
        log_read_done(&lr);

        char *note;
        ck_assert_int_eq(judged(r, &res, &note), RES_FAIL); /* 3b:00: only the expired ack */
        ck_assert_ptr_nonnull(strstr(note, "raised again: ack 2 expired at 2000-01-01T00:00:00Z"));
        free(note);
        ck_assert_int_eq(append_ack(r, &res, NULL, NULL), 3);
        ck_assert_int_eq(judged(r, &res, &note), RES_ACKED);
        ck_assert_ptr_nonnull(strstr(note, "acknowledged by root at "));
        ck_assert_ptr_nonnull(strstr(note, "(change log record 3): RMA 1234"));
        free(note);

        struct result grown;
        xid_failure(&grown, "2"); /* one more Xid on 86:00 since the ack */
        ck_assert_int_eq(judged(r, &grown, &note), RES_FAIL);
        ck_assert_str_eq(note, "raised again: xid.0000:86:00.critical_events was 1 at ack 3, now 2");
        free(note);
        result_release(&grown);
        struct result fewer;
        xid_failure(&fewer, "0");
        ck_assert_int_eq(judged(r, &fewer, &note), RES_ACKED); /* less than acknowledged: still covered */
        free(note);
        strv_add(&fewer.evidence, "xid.0000:c6:00.critical=79");
        ck_assert_int_eq(judged(r, &fewer, &note), RES_FAIL);
        ck_assert_ptr_nonnull(strstr(note, "xid.0000:c6:00.critical is new since ack 3"));
        free(note);
        result_release(&fewer);

        /* withdrawn: the item ack still covers 86:00, nothing covers 3b:00 */
        ck_assert_int_eq(ack_list_read(r, &acks, NULL), 0);
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        ck_assert_int_eq(ack_withdraw(l, &ctx, &acks.v[2], "GPU replaced"), 4);
        changelog_close(l);
        ack_list_done(&acks);
        ck_assert_int_eq(ack_list_read(r, &acks, NULL), 0);
        ck_assert_int_eq(acks.v[2].withdrawn, 4);
        ck_assert_str_eq(ack_state(&acks.v[2], time(NULL)), "withdrawn");
        ck_assert_str_eq(acks.v[2].withdrawn_why, "GPU replaced");
        ack_list_done(&acks);
        ck_assert_int_eq(judged(r, &res, &note), RES_FAIL);
        free(note);
        result_release(&res);
        root_free(r);
}
END_TEST
DEFINE_TEST(ack_judged, .description = "ack judged", .root = "tmptree");

/* An ack record without its fields is not one llmtune writes: a problem where it stands. */
START_TEST(ack_record_checked)
{
        struct root *r = open_root();
        struct changelog *l;
        ck_assert_int_eq(changelog_open(r, &l, NULL), 0);
        struct change c = {.type = CHANGE_NOTE, .rule = "gpu-xid-critical"};
        json_object *none = json_object_new_object();
        ck_assert_int_eq(changelog_append_fields(l, &ctx, LOG_ACK, &c, 0, "why", none), 1);
        json_object *bad = json_object_new_object(), *a = json_object_new_object();
        json_object_object_add(a, "user", json_object_new_string("root"));
        json_object_object_add(a, "until", json_object_new_string("next tuesday"));
        json_object_object_add(a, "evidence", json_object_new_array());
        json_object_object_add(bad, "ack", a);
        ck_assert_int_eq(changelog_append_fields(l, &ctx, LOG_ACK, &c, 0, "why", bad), 2);
        ck_assert_int_eq(changelog_append_fields(l, &ctx, LOG_UNACK, &c, 0, NULL, bad), 3);
        json_object_put(none);
        json_object_put(bad);
        changelog_close(l);
        struct log_read lr;
        ck_assert_int_eq(changelog_read(r, &lr, NULL), 0);
        ck_assert_uint_eq(lr.n_problems, 3);
        ck_assert_ptr_nonnull(strstr(lr.problems[0].message, "without its \"ack\" object"));
        ck_assert_ptr_nonnull(strstr(lr.problems[1].message, "\"until\" is not a date: 'next tuesday'"));
        ck_assert_ptr_nonnull(strstr(lr.problems[2].message, "names no ack"));
        struct ack_list acks;
        ack_list_from_log(&lr, &acks);
        ck_assert_uint_eq(acks.n, 0); /* none of them counts */
        ack_list_done(&acks);
        log_read_done(&lr);
        root_free(r);
}
END_TEST
DEFINE_TEST(ack_record_checked, .description = "ack record checked", .root = "tmptree");

START_TEST(ack_items_and_dates)
{
        ck_assert(ack_item_matches("ib.mlx5_0.port.1.link_downed", "mlx5_0"));
        ck_assert(ack_item_matches("ib.mlx5_0.port.1.link_downed", "mlx5_0.port.1"));
        ck_assert(!ack_item_matches("ib.mlx5_10.port.1.link_downed", "mlx5_1"));
        ck_assert(!ack_item_matches("ib.mlx5_0.port.10.link_downed", "mlx5_0.port.1"));
        ck_assert(ack_item_matches("xid.0000:86:00.critical", "0000:86:00"));
        ck_assert(!ack_item_matches("xid.0000:86:00.critical", "0000:86"));
        ck_assert(!ack_item_matches("xid.0000:86:00.critical", ""));
        time_t t;
        ck_assert_int_eq(ack_parse_date("2026-12-01", &t), 0);
        ck_assert_int_eq(t, 1796083200);
        ck_assert_int_eq(ack_parse_date("2026-12-01T08:00", &t), 0);
        ck_assert_int_eq(t, 1796083200 + 8 * 3600);
        ck_assert_int_eq(ack_parse_date("2026-12-01T08:00:30Z", &t), 0);
        ck_assert_int_eq(t, 1796083200 + 8 * 3600 + 30);
        ck_assert_int_eq(ack_parse_date("2026-12-01 08:00", &t), -EINVAL);
        ck_assert_int_eq(ack_parse_date("tomorrow", &t), -EINVAL);
}
END_TEST
DEFINE_TEST(ack_items_and_dates, .description = "ack items and dates", .root = "tmptree");

/*
 * One trust policy (base/trust.h) for every file llmtune takes as input: a file set up the same way
 * as a site profile (trust_problem, what the profile and rule loaders ask) and as the change log
 * (changelog_check, what plan, apply and rollback ask) gets the same verdict. Before the one policy,
 * trust.c accepted a file of group 0 that its group could write and a file of the user who ran
 * sudo, a change log so set was refused; and the log's directory could not be sticky.
 */
struct trust_case {
        const char *what;
        mode_t mode, dir_mode;
        uid_t uid;
        gid_t gid;
        const char *sudo_uid;
        bool trusted;
};

static void set_like(const char *rel, const char *dir, const struct trust_case *c)
{
        char *p = xasprintf("%s/%s", tmptree_path(), rel), *d = xasprintf("%s/%s", tmptree_path(), dir);
        ck_assert_int_eq(chown(p, c->uid, c->gid), 0);
        ck_assert_int_eq(chmod(p, c->mode), 0);
        ck_assert_int_eq(chmod(d, c->dir_mode), 0);
        free(p);
        free(d);
}

START_TEST(one_trust_policy)
{
        static const struct trust_case cases[] = {
                {"root's, 0644", 0644, 0755, 0, 0, NULL, true},
                {"writable by every user", 0666, 0755, 0, 0, NULL, false},
                {"writable by group 0", 0664, 0755, 0, 0, NULL, false},
                {"writable by group 4242", 0664, 0755, 0, 4242, NULL, false},
                {"another user's", 0644, 0755, 4242, 0, NULL, false},
                {"the user's who ran sudo (SUDO_UID)", 0644, 0755, 4242, 0, "4242", true},
                {"in a world-writable directory", 0644, 0777, 0, 0, NULL, false},
                {"in a sticky world-writable directory", 0644, 01777, 0, 0, NULL, true},
        };
        tmptree_put("site/p.ini", "[profile]\nname = p\n", 0644);
        tmptree_put("var/lib/llmtune/changelog.jsonl", "", 0644);
        char *profile = xasprintf("%s/site/p.ini", tmptree_path());
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                const struct trust_case *c = &cases[i];
                if (geteuid() != 0 && (c->uid || c->gid))
                        continue; /* chown needs root; the modes are judged for anyone's log */
                set_like("site/p.ini", "site", c);
                set_like("var/lib/llmtune/changelog.jsonl", "var/lib/llmtune", c);
                if (c->sudo_uid)
                        setenv("SUDO_UID", c->sudo_uid, 1);
                else
                        unsetenv("SUDO_UID");
                struct root *r;
                ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
                char *refused = NULL;
                int rc = changelog_check(r, &refused);
                root_free(r);
                ck_assert_msg((rc == 0) == c->trusted, "change log %s: %s", c->what,
                              rc ? (refused ? refused : changelog_strerror(rc)) : "trusted");
                free(refused);
                if (geteuid() != 0)
                        continue; /* not root: rule and profile files are not checked (trust.h) */
                char *why = trust_problem(profile);
                ck_assert_msg(!why == c->trusted, "profile %s: %s", c->what, why ? why : "trusted");
                free(why);
        }
        unsetenv("SUDO_UID");
        free(profile);
}
END_TEST
DEFINE_TEST(one_trust_policy, .description = "a file is trusted as a profile exactly when it is as the change log",
            .root = "tmptree");

/*
 * The reason a file of the log was refused comes back with the refusal, and only with it: it went
 * through a static buffer that changelog_strerror handed out for any later error of the same code,
 * so an -EPERM from elsewhere (an append, another root) was told as the earlier refusal.
 */
START_TEST(refusal_reasons_are_returned)
{
        tmptree_put("var/lib/llmtune/changelog.jsonl", "", 0666);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        _cleanup_free_ char *why = NULL;
        ck_assert_int_eq(changelog_check(r, &why), -EPERM);
        ck_assert_msg(why && strstr(why, "writable by every user"), "the refusal says why: %s", why ? why : "(none)");
        struct log_read lr;
        _cleanup_free_ char *again = NULL;
        ck_assert_int_eq(changelog_read(r, &lr, &again), -EPERM);
        ck_assert_msg(again && strstr(again, "anyone who can change it could forge records"), "%s",
                      again ? again : "(none)");
        root_free(r);
        /* an -EPERM that is no refusal of the log: strerror, not the reason above */
        ck_assert_str_eq(changelog_strerror(-EPERM), strerror(EPERM));
}
END_TEST
DEFINE_TEST(refusal_reasons_are_returned,
            .description = "a refused log file's reason is returned with the refusal, not kept for later errors",
            .root = "tmptree");

UNIT_MAIN(.name = "changelog", .setup = setup, .teardown = tmptree_drop)
