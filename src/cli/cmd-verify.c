/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune verify: is the change log intact, did every apply and rollback finish, and is every
 * change still in force still true on the machine? The judgement is verify_run's (apply/verify.c);
 * this file takes the options and prints what it found.
 */
#include <errno.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
#include "apply/changelog.h"
#include "cli/commands.h"
#include "apply/diff.h"
#include "base/digest.h"
#include "facts/facts.h"
#include "facts/json-out.h"
#include "apply/verify.h"

#define DIFF_LINES_SHOWN 20

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
        if (!change_kind_of(c)->content || !v)
                return str_or_null(v);
        char h[65];
        sha256_hex(v, strlen(v), h);
        char buf[80];
        snprintf(buf, sizeof(buf), "sha256:%s", h);
        return json_object_new_string(buf);
}

static json_object *link_json(const char *target)
{
        _cleanup_free_ char *s = xasprintf("link:%s", target);
        return json_object_new_string(s);
}

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

static void print_json(struct cli *cli, const struct verify_result *v)
{
        const struct log_read *lr = &v->lr;
        const struct verify_check *ck = v->ck;
        size_t n_ck = v->n_ck;
        const struct strv *unfinished = &v->unfinished;
        const size_t *unf_idx = v->unf_idx;
        const char *status = v->status;
        const struct expect_head *eh = &v->eh;
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
                json_object_object_add(o, "status", json_object_new_string(verify_check_name(ck[i].status)));
                bool checked = ck[i].status == CHECK_OK || ck[i].status == CHECK_DRIFT;
                json_object_object_add(o, "expected", checked ? state_json(c, c->after) : NULL);
                json_object_object_add(o, "found", !checked           ? NULL
                                                   : ck[i].found_link ? link_json(ck[i].found_link)
                                                                      : state_json(c, ck[i].found));
                json_object_object_add(o, "message", json_object_new_string(ck[i].message));
                json_object_object_add(o, "diff", str_or_null(ck[i].diff));
                json_object_array_add(changes, o);
        }
        json_object_object_add(top, "changes", changes);
        json_print(stdout, top);
        json_object_put(top);
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
                        if (!expect_head_parse(optarg, eh))
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
                const struct verify_check *ck = &v->ck[i];
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
        const char *what;
        rc = verify_run(root, &v, &what);
        if (rc < 0)
                return cli_error("cannot %s %s under %s: %s", streq(what, "lock") ? "take the lock" : "read",
                                 streq(what, "lock") ? CHANGELOG_LOCK : CHANGELOG_PATH, root_path(root),
                                 v.why ? v.why : changelog_strerror(rc));
        if (json)
                print_json(cli, &v);
        else
                print_text(cli, &v, verbose);
        bool findings = !streq(v.status, "clean") && !streq(v.status, "error");
        return findings ? EXIT_FINDINGS : v.count[CHECK_ERROR] ? EXIT_ERROR : EXIT_OK;
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
