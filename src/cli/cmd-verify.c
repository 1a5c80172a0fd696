/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune verify: is the change log intact, did every apply and rollback finish, and is every
 * change still in force still true on the machine? Like tuned's verify (re-read and compare each
 * tunable), but against the log on disk rather than a daemon's memory, and per target.
 */
#include <errno.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "actions.h"
#include "changelog.h"
#include "commands.h"
#include "diff.h"
#include "digest.h"
#include "facts.h"
#include "json-out.h"
#include "verify-state.h"

#define DIFF_LINES_SHOWN 20

enum check_status { CHECK_OK, CHECK_DRIFT, CHECK_UNCHECKABLE, CHECK_ERROR };
static const char *const check_names[] = {"ok", "drift", "not-checkable", "error"};

struct check {
        const struct log_record *rec;
        enum check_status status;
        char *found;   /* current state (NULL: absent) */
        char *message; /* one line */
        char *diff;    /* files: expected -> found */
};

static char *describe_file(const char *content)
{
        if (!content)
                return xstrdup("absent");
        char h[65];
        sha256_hex(content, strlen(content), h);
        return xasprintf("%zu bytes, sha256 %.12s", strlen(content), h);
}

static char *quote(const char *v) { return v ? xasprintf("'%s'", v) : xstrdup("absent"); }

static void check_one(struct root *root, const struct log_record *rec, struct check *ck)
{
        const struct change *c = &rec->change;
        ck->rec = rec;
        int rc = action_current(root, c, &ck->found);
        if (rc == -EOPNOTSUPP) {
                ck->status = CHECK_UNCHECKABLE;
                ck->message = xasprintf("not checkable (%s): %s", change_type_name(c->type), c->target);
                return;
        }
        if (rc < 0) {
                /* Something is there that cannot be read: not "absent", not "removed". */
                ck->status = CHECK_ERROR;
                ck->message = xasprintf("unreadable: %s is there but cannot be read (%s), so whether it is "
                                        "still as change %ld left it is not known",
                                        c->target, errno_name(-rc), rec->seq);
                return;
        }
        /* apply's own test (a mount's options compare as sets: the kernel orders them) */
        if (action_state_equal(c, ck->found, c->after)) {
                ck->status = CHECK_OK;
                ck->message = xasprintf("ok: %s", c->target);
                return;
        }
        ck->status = CHECK_DRIFT;
        if (c->type == CHANGE_FILE) {
                _cleanup_free_ char *e = describe_file(c->after), *f = describe_file(ck->found);
                ck->message = xasprintf("drift: %s: expected %s (written by change %ld), found %s", c->target, e,
                                        rec->seq, f);
                ck->diff = unified_diff(c->target, c->after, ck->found);
        } else {
                _cleanup_free_ char *e = quote(c->after), *f = quote(ck->found);
                ck->message = xasprintf("drift: %s: expected %s (set by change %ld), found %s", c->target, e, rec->seq, f);
        }
}

static char *unfinished_message(const struct log_record *rec)
{
        if (rec->event == LOG_RUN_BEGIN)
                return xasprintf("%s of run %s did not finish: it began at record %ld and has no run-end (killed "
                                 "or stopped, possibly between two changes)",
                                 rec->change.target ? rec->change.target : "run", rec->run ? rec->run : "?", rec->seq);
        bool undo = rec->event == LOG_UNDO_INTENT;
        return xasprintf("%s of run %s did not finish: change %ld (%s) is in an unknown state",
                         undo ? "rollback" : "apply", rec->run ? rec->run : "?", undo && rec->ref ? rec->ref : rec->seq,
                         rec->change.target ? rec->change.target : "?");
}

static void print_diff(const char *diff)
{
        size_t lines = 0;
        for (const char *p = diff; *p && lines < DIFF_LINES_SHOWN; lines++) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                printf("    %.*s\n", (int)n, p);
                p += n + (nl ? 1 : 0);
                if (lines + 1 == DIFF_LINES_SHOWN && *p)
                        printf("    ...\n");
        }
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static json_object *state_json(const struct change *c, const char *v)
{
        if (c->type != CHANGE_FILE || !v)
                return str_or_null(v);
        char h[65];
        sha256_hex(v, strlen(v), h);
        char buf[80];
        snprintf(buf, sizeof(buf), "sha256:%s", h);
        return json_object_new_string(buf);
}

/* --expect-head SEQ:HASH, parsed, and what the log says about it. */
struct expect_head {
        bool set;
        long seq;
        char hash[65];
        bool found;    /* the log holds record SEQ with hash HASH */
        char *message; /* why not */
};

static json_object *head_file_json(const struct log_read *lr)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(CHANGELOG_HEAD));
        json_object_object_add(o, "state", json_object_new_string(lr->head_state ? lr->head_state : "none"));
        json_object_object_add(o, "seq", lr->head_seq ? json_object_new_int64(lr->head_seq) : NULL);
        json_object_object_add(o, "hash", lr->head_seq ? json_object_new_string(lr->head_hash) : NULL);
        json_object_object_add(o, "note", str_or_null(lr->head_note));
        return o;
}

static void print_json(struct cli *cli, const struct log_read *lr, const struct check *ck, size_t n_ck,
                       const struct strv *unfinished, const size_t *unf_idx, const char *status,
                       const struct expect_head *eh)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "root", json_object_new_string(root_path(cli->root)));
        json_object_object_add(top, "status", json_object_new_string(status));
        json_object_object_add(top, "records", json_object_new_int64((int64_t)lr->n));
        json_object *chain = json_object_new_object(), *probs = json_object_new_array();
        for (size_t i = 0; i < lr->n_problems; i++) {
                json_object *p = json_object_new_object();
                json_object_object_add(p, "seq", json_object_new_int64(lr->problems[i].seq));
                json_object_object_add(p, "message", json_object_new_string(lr->problems[i].message));
                json_object_array_add(probs, p);
        }
        json_object_object_add(chain, "intact", json_object_new_boolean(lr->n_problems == 0));
        json_object_object_add(chain, "problems", probs);
        json_object_object_add(top, "chain", chain);
        /* The log's last record (keep its "anchor" off the machine: verify --expect-head) and
         * how it compares with the head file. */
        json_object_object_add(top, "head", changelog_head_json(lr->end_seq, lr->end_hash));
        json_object_object_add(top, "head_file", head_file_json(lr));
        if (eh->set) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "seq", json_object_new_int64(eh->seq));
                json_object_object_add(e, "hash", json_object_new_string(eh->hash));
                json_object_object_add(e, "found", json_object_new_boolean(eh->found));
                json_object_object_add(e, "message", str_or_null(eh->message));
                json_object_object_add(top, "expected_head", e);
        }
        json_object *unf = json_object_new_array();
        for (size_t i = 0; i < unfinished->n; i++) {
                const struct log_record *rec = &lr->v[unf_idx[i]];
                json_object *u = json_object_new_object();
                json_object_object_add(u, "seq", json_object_new_int64(rec->seq));
                json_object_object_add(u, "run", str_or_null(rec->run));
                json_object_object_add(u, "event", json_object_new_string(log_event_name(rec->event)));
                json_object_object_add(u, "target", str_or_null(rec->change.target));
                json_object_object_add(u, "message", json_object_new_string(unfinished->v[i]));
                json_object_array_add(unf, u);
        }
        json_object_object_add(top, "unfinished", unf);
        json_object *changes = json_object_new_array();
        for (size_t i = 0; i < n_ck; i++) {
                const struct change *c = &ck[i].rec->change;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "seq", json_object_new_int64(ck[i].rec->seq));
                json_object_object_add(o, "run", str_or_null(ck[i].rec->run));
                json_object_object_add(o, "rule", str_or_null(c->rule));
                json_object_object_add(o, "type", json_object_new_string(change_type_name(c->type)));
                json_object_object_add(o, "target", str_or_null(c->target));
                json_object_object_add(o, "status", json_object_new_string(check_names[ck[i].status]));
                bool checked = ck[i].status == CHECK_OK || ck[i].status == CHECK_DRIFT;
                json_object_object_add(o, "expected", checked ? state_json(c, c->after) : NULL);
                json_object_object_add(o, "found", checked ? state_json(c, ck[i].found) : NULL);
                json_object_object_add(o, "message", json_object_new_string(ck[i].message));
                json_object_object_add(o, "diff", str_or_null(ck[i].diff));
                json_object_array_add(changes, o);
        }
        json_object_object_add(top, "changes", changes);
        json_print(stdout, top);
        json_object_put(top);
}

/* SEQ:HASH as the "anchor" of verify/apply/rollback --json prints it. */
static bool parse_anchor(const char *s, struct expect_head *eh)
{
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || strspn(s, "0123456789") != (size_t)(colon - s) || strlen(colon + 1) != 64)
                return false;
        errno = 0;
        eh->seq = strtol(s, NULL, 10);
        if (errno || eh->seq <= 0)
                return false;
        for (const char *p = colon + 1; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        memcpy(eh->hash, colon + 1, 65);
        eh->set = true;
        return true;
}

/* Does the log hold record SEQ with hash HASH? Its chain (checked apart) links every later record
 * to it, so a log that does was not cut before SEQ, whatever the files on the machine say. */
static void check_expected_head(const struct log_read *lr, struct expect_head *eh)
{
        const struct log_record *rec = NULL;
        for (size_t i = lr->n; i-- > 0 && !rec;)
                if (lr->v[i].seq == eh->seq)
                        rec = &lr->v[i];
        if (rec && streq(rec->hash, eh->hash)) {
                eh->found = true;
                return;
        }
        if (rec)
                eh->message = xasprintf("record %ld of the log has hash %.16s..., not the expected %.16s...: the "
                                        "log was rewritten from there on",
                                        eh->seq, rec->hash, eh->hash);
        else if (lr->n == 0)
                eh->message = xasprintf("the log holds no records, but record %ld (hash %.16s...) was expected: the "
                                        "log was deleted or emptied",
                                        eh->seq, eh->hash);
        else if (eh->seq > lr->end_seq)
                eh->message = xasprintf("the log ends at record %ld, but record %ld (hash %.16s...) was expected: "
                                        "records %ld to %ld were cut off",
                                        lr->end_seq, eh->seq, eh->hash, lr->end_seq + 1, eh->seq);
        else
                eh->message = xasprintf("the log holds no record %ld (hash %.16s...): it was cut or rewritten",
                                        eh->seq, eh->hash);
}

/* Everything verify found: the log read, the steps left unfinished, the check of each change in
 * force, and the --expect-head comparison. */
struct verify_result {
        struct log_read lr;
        struct strv unfinished; /* one message per unfinished step ... */
        size_t *unf_idx;        /* ... and its record's index in lr */
        size_t *idx;            /* the records in force, by index in lr */
        struct check *ck;       /* their checks */
        size_t n_ck;
        size_t count[4]; /* checks per enum check_status */
        struct expect_head eh;
        bool cut;         /* --expect-head names a record the log does not hold */
        const char *status; /* one of verify_state_names */
};

static void verify_result_done(struct verify_result *v)
{
        for (size_t i = 0; i < v->n_ck; i++) {
                free(v->ck[i].found);
                free(v->ck[i].message);
                free(v->ck[i].diff);
        }
        free(v->ck);
        free(v->idx);
        free(v->unf_idx);
        free(v->eh.message);
        strv_done(&v->unfinished);
        log_read_done(&v->lr);
}

/* The options into *JSON, *VERBOSE and EH. Returns -1 to go on, else the exit code. */
static int parse_verify_opts(int argc, char **argv, bool *json, bool *verbose, struct expect_head *eh)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"verbose", no_argument, NULL, 'v'},
                {"expect-head", required_argument, NULL, 'E'},
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "jv", opts, NULL)) != -1)
                switch (c) {
                case 'j': *json = true; break;
                case 'v': *verbose = true; break;
                case 'E':
                        if (!parse_anchor(optarg, eh))
                                return cli_error("--expect-head takes SEQ:HASH (the \"anchor\" of verify, apply "
                                                 "or rollback --json: a sequence number, ':', 64 lowercase hex "
                                                 "digits), not '%s'",
                                                 optarg);
                        break;
                default: return cli_usage_error("verify");
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune verify --help)", argv[optind]);
        return -1;
}

/* The log into LR under a shared lock: a running apply or rollback is waited for, so its steps in
 * progress are never reported as unfinished and the log is read whole. Returns -1 on success,
 * else the exit code (the error said). */
static int read_log_shared(struct root *root, struct log_read *lr)
{
        int lock_fd = -1;
        int rc = changelog_lock_shared(root, true, &lock_fd);
        if (rc < 0)
                return cli_error("cannot take the lock %s under %s: %s", CHANGELOG_LOCK, root_path(root), changelog_strerror(rc));
        rc = changelog_read(root, lr);
        if (lock_fd >= 0)
                close(lock_fd);
        if (rc < 0)
                return cli_error("cannot read %s under %s: %s", CHANGELOG_PATH, root_path(root), changelog_strerror(rc));
        return -1;
}

/* The unfinished steps, the check of every change in force against ROOT, and the status. */
static void verify_judge(struct root *root, struct verify_result *v)
{
        const struct log_read *lr = &v->lr;
        v->unf_idx = xcalloc(lr->n + 1, sizeof(size_t));
        for (size_t i = 0; i < lr->n; i++)
                if (!changelog_step_finished(lr, i)) {
                        v->unf_idx[v->unfinished.n] = i;
                        strv_push(&v->unfinished, unfinished_message(&lr->v[i]));
                }
        v->n_ck = changelog_in_force(lr, &v->idx);
        v->ck = xcalloc(v->n_ck + 1, sizeof(*v->ck));
        for (size_t i = 0; i < v->n_ck; i++) {
                check_one(root, &lr->v[v->idx[i]], &v->ck[i]);
                v->count[v->ck[i].status]++;
        }
        if (v->eh.set)
                check_expected_head(lr, &v->eh);
        v->cut = v->eh.set && !v->eh.found;
        bool findings = lr->n_problems || v->cut || v->unfinished.n || v->count[CHECK_DRIFT];
        v->status = findings ? (lr->n_problems || v->cut ? "tampered" : v->unfinished.n ? "unfinished" : "drift")
                             : v->count[CHECK_ERROR] ? "error" : "clean";
}

/* The chain, the expected head and the head file's note, as text. */
static void print_log_state(const struct verify_result *v, const char *red, const char *off)
{
        const struct log_read *lr = &v->lr;
        if (lr->n_problems) {
                printf("%schange log: the hash chain is broken (%zu problem%s)%s\n", red, lr->n_problems,
                       lr->n_problems == 1 ? "" : "s", off);
                for (size_t i = 0; i < lr->n_problems; i++)
                        printf("tampered: %s\n", lr->problems[i].message);
        } else
                printf("change log: %zu records, hash chain intact, ends at record %ld (%s)\n", lr->n, lr->end_seq,
                       lr->end_hash);
        if (v->cut)
                printf("%stampered: --expect-head %ld:%s: %s%s\n", red, v->eh.seq, v->eh.hash, v->eh.message, off);
        else if (v->eh.set)
                printf("expected head found: record %ld with hash %.16s... (nothing before it was cut)\n", v->eh.seq,
                       v->eh.hash);
        if (lr->head_note)
                printf("note: %s\n", lr->head_note);
}

static void print_text(struct cli *cli, const struct verify_result *v, bool verbose)
{
        const struct log_read *lr = &v->lr;
        if (lr->n == 0 && lr->n_problems == 0 && !v->cut) {
                printf("no changes recorded\n");
                if (lr->head_note)
                        printf("note: %s\n", lr->head_note);
                return;
        }
        const char *off = cli_color(cli, "\033[0m"), *red = cli_color(cli, "\033[31m"),
                   *green = cli_color(cli, "\033[32m");
        print_log_state(v, red, off);
        for (size_t i = 0; i < v->unfinished.n; i++)
                printf("%sunfinished%s: %s\n", red, off, v->unfinished.v[i]);
        for (size_t i = 0; i < v->n_ck; i++) {
                const struct check *ck = &v->ck[i];
                if (ck->status == CHECK_OK && !verbose)
                        continue;
                const char *col = ck->status == CHECK_OK ? green : ck->status == CHECK_DRIFT ? red : "";
                printf("%s%s%s\n", col, ck->message, *col ? off : "");
                if (ck->diff && *ck->diff)
                        print_diff(ck->diff);
        }
        printf("\n%zu changes in force: %zu as applied, %zu drifted, %zu not checkable, %zu could not be "
               "checked\n",
               v->n_ck, v->count[CHECK_OK], v->count[CHECK_DRIFT], v->count[CHECK_UNCHECKABLE], v->count[CHECK_ERROR]);
}

static int verify_cmd(struct cli *cli, int argc, char **argv)
{
        bool json = false, verbose = false;
        _cleanup_(verify_result_done) struct verify_result v = {0};
        int rc = parse_verify_opts(argc, argv, &json, &verbose, &v.eh);
        if (rc >= 0)
                return rc;
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        rc = read_log_shared(root, &v.lr);
        if (rc >= 0)
                return rc;
        verify_judge(root, &v);
        if (json)
                print_json(cli, &v.lr, v.ck, v.n_ck, &v.unfinished, v.unf_idx, v.status, &v.eh);
        else
                print_text(cli, &v, verbose);
        bool findings = !streq(v.status, "clean") && !streq(v.status, "error");
        return findings ? EXIT_FINDINGS : v.count[CHECK_ERROR] ? EXIT_ERROR : EXIT_OK;
}

const char *const verify_state_names[] = {"clean", "drift", "unfinished", "tampered", "error", NULL};

/* "2026-11-30T07:47:32Z" (the log's time format) as seconds since the epoch; 0 when malformed. */
static time_t log_time(const char *s)
{
        struct tm tm = {0};
        const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
        if (!end || *end)
                return 0;
        time_t t = timegm(&tm);
        return t < 0 ? 0 : t;
}

int verify_state_read(struct root *root, struct verify_state *ret)
{
        *ret = (struct verify_state){.status = "error"};
        int lock_fd = -1;
        int rc = changelog_lock_shared(root, true, &lock_fd);
        if (rc < 0)
                return rc;
        struct log_read lr;
        rc = changelog_read(root, &lr);
        if (lock_fd >= 0)
                close(lock_fd);
        if (rc < 0)
                return rc;
        ret->records = lr.n;
        ret->chain_problems = lr.n_problems;
        for (size_t i = 0; i < lr.n; i++) {
                if (!changelog_step_finished(&lr, i))
                        ret->unfinished++;
                if (lr.v[i].event == LOG_DONE) {
                        time_t t = log_time(lr.v[i].time);
                        if (t > ret->last_apply)
                                ret->last_apply = t;
                }
        }
        size_t *idx;
        size_t n_ck = changelog_in_force(&lr, &idx);
        ret->in_force = n_ck;
        for (size_t i = 0; i < n_ck; i++) {
                struct check ck = {0};
                check_one(root, &lr.v[idx[i]], &ck);
                ret->drifted += ck.status == CHECK_DRIFT;
                ret->uncheckable += ck.status == CHECK_UNCHECKABLE;
                ret->check_errors += ck.status == CHECK_ERROR;
                free(ck.found);
                free(ck.message);
                free(ck.diff);
        }
        free(idx);
        log_read_done(&lr);
        /* The same precedence as verify's "status". */
        ret->status = ret->chain_problems ? "tampered"
                      : ret->unfinished   ? "unfinished"
                      : ret->drifted      ? "drift"
                      : ret->check_errors ? "error"
                                          : "clean";
        return 0;
}

const struct command cmd_verify = {
        .name = "verify",
        .summary = "check the change log's integrity and that applied changes are still in force",
        .usage = "Usage: llmtune [--root DIR] verify [--verbose] [--json] [--expect-head SEQ:HASH]\n"
                 "\n"
                 "Check the change log (" CHANGELOG_PATH "): every record's SHA-256 hash and its link to\n"
                 "the record before it, so an edited, removed or reordered record is reported with its\n"
                 "sequence number; every apply and rollback step that started and has no outcome (the\n"
                 "target is in an unknown state); and every change still in force (applied and not rolled\n"
                 "back): its target is read again and compared with what apply left there. Drift is\n"
                 "reported per target, with a diff for files. Commands and notes cannot be checked.\n"
                 "A running apply or rollback is waited for (a shared lock), so the log read is never a\n"
                 "run in progress. The next apply or rollback closes unfinished steps after reading\n"
                 "their targets again (records with \"recovered after an interrupted run\").\n"
                 "The log's end is checked against its head file (" CHANGELOG_HEAD ", SEQ:HASH of the\n"
                 "last record, replaced with each record): a truncated or deleted log is reported as\n"
                 "tampered, naming the records cut off. An apply or rollback writes run-begin and run-end\n"
                 "records around its changes; a run-begin without its run-end is an unfinished run.\n"
                 "\n"
                 "  -v, --verbose            also list every change found as applied\n"
                 "  -j, --json               machine-readable output (every change, with its status; \"head\":\n"
                 "                           the last record's seq, hash and anchor SEQ:HASH)\n"
                 "      --expect-head SEQ:HASH\n"
                 "                           the log must hold record SEQ with hash HASH (an anchor kept\n"
                 "                           off the machine): proves nothing was cut even if the log and\n"
                 "                           its head file were both rewritten; if not, status tampered\n"
                 "\n"
                 "Exit status: 0 clean (also when nothing was recorded), 2 drift, a broken chain, a cut log\n"
                 "(head file or --expect-head) or an unfinished step, 1 the log cannot be read or a target\n"
                 "could not be checked.\n",
        .run = verify_cmd,
};
