/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune rollback: put back the before state of logged changes, newest first, logging each. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <unistd.h>

#include "actions.h"
#include "changelog.h"
#include "cli-data.h"
#include "commands.h"
#include "json-out.h"
#include "site-config.h"
#include "test-hooks.h"

enum scope { SCOPE_NONE, SCOPE_ALL, SCOPE_LAST_RUN, SCOPE_TO };

/* A value for a line of the report: a long one (kept in the backup store, up to 8 MiB) by its
 * length, not spelled out (--json has it whole). */
static const char *show(const char *s)
{
        static char buf[2][48];
        static int k;
        if (!s)
                return "(absent)";
        size_t n = strlen(s);
        if (n <= 80)
                return s;
        k ^= 1;
        snprintf(buf[k], sizeof(buf[k]), "(%zu bytes)", n);
        return buf[k];
}

/* Short form of a state for messages: file contents are summarised. */
static char *brief(const struct change *c, const char *s)
{
        if (!s)
                return xstrdup("(absent)");
        if (c->type == CHANGE_FILE)
                return xasprintf("%zu bytes", strlen(s));
        return xstrdup(s);
}

/* One line of the report (a JSON record with --json, where a failed one is also kept). */
static void print_one(const struct log_record *rec, const char *status)
{
        const struct change *ch = &rec->change;
        if (streq(status, "would-restore"))
                printf("would restore %-10s %s -> %s   (seq %ld)\n", change_type_name(ch->type), ch->target,
                       ch->type == CHANGE_FILE ? (ch->before ? "previous content" : "(removed)") : show(ch->before), rec->seq);
        else if (streq(status, "already"))
                printf("already  %-10s %s   (seq %ld)\n", change_type_name(ch->type), ch->target, rec->seq);
        else if (streq(status, "manual")) {
                _cleanup_free_ char *cmd = strv_join(&ch->argv, " ");
                printf("manual   command    %s: reverse by hand   (seq %ld)\n", cmd, rec->seq);
        } else
                printf("restored %-10s %s -> %s   (seq %ld)\n", change_type_name(ch->type), ch->target,
                       ch->type == CHANGE_FILE ? (ch->before ? "previous content" : "(removed)") : show(ch->before), rec->seq);
}

/* Consecutive runtime values alike (a governor per CPU: same rule, status and before value) are
 * one line with the first and last target and a count, as `plan` shows them. */
struct pending {
        const struct log_record *v[8192];
        size_t n;
        const char *status;
};

static void flush(struct pending *p)
{
        if (p->n > 3) {
                const struct log_record *a = p->v[0], *b = p->v[p->n - 1];
                printf("%s %-10s %s ... %s (%zu files) -> %s   (seq %ld..%ld)\n",
                       streq(p->status, "would-restore") ? "would restore" : streq(p->status, "already") ? "already "
                                                                                                         : "restored",
                       change_type_name(a->change.type), a->change.target, b->change.target, p->n, show(a->change.before),
                       a->seq, b->seq);
        } else
                for (size_t i = 0; i < p->n; i++)
                        print_one(p->v[i], p->status);
        p->n = 0;
}

static bool alike(const struct log_record *a, const struct log_record *b)
{
        const struct change *x = &a->change, *y = &b->change;
        return x->type == CHANGE_VALUE && y->type == CHANGE_VALUE && streq(x->rule, y->rule) &&
               ((!x->before && !y->before) || (x->before && y->before && streq(x->before, y->before)));
}

/* One record of the report: JSON always (a failed one is kept there), a line (maybe grouped)
 * unless --json. REC NULL flushes what is pending. */
static void report(json_object *arr, const struct log_record *rec, const char *status, bool json)
{
        static struct pending p;
        if (!rec) {
                flush(&p);
                return;
        }
        const struct change *ch = &rec->change;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seq", json_object_new_int64(rec->seq));
        json_object_object_add(o, "rule", ch->rule ? json_object_new_string(ch->rule) : NULL);
        json_object_object_add(o, "type", json_object_new_string(change_type_name(ch->type)));
        json_object_object_add(o, "target", json_object_new_string(ch->target));
        json_object_object_add(o, "status", json_object_new_string(status));
        if (ch->type != CHANGE_FILE)
                json_object_object_add(o, "before", ch->before ? json_object_new_string(ch->before) : NULL);
        json_object_array_add(arr, o);
        if (json || streq(status, "failed"))
                return;
        if (p.n && (!streq(p.status, status) || !alike(p.v[0], rec) || p.n == ARRAY_SIZE(p.v)))
                flush(&p);
        p.status = status;
        p.v[p.n++] = rec;
}

static int rollback_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"to", required_argument, NULL, 't'},
                {"last-run", no_argument, NULL, 'l'},
                {"all", no_argument, NULL, 'a'},
                {"force", no_argument, NULL, 'f'},
                {"wait", no_argument, NULL, 'w'},
                {"no-wait", no_argument, NULL, 'W'},
                {"json", no_argument, NULL, 'j'},
                {"dry-run", no_argument, NULL, 'n'},
                {},
        };
        enum scope scope = SCOPE_NONE;
        char *run = NULL;
        long head_seq = 0; /* the log's last record after this rollback (--json "head") */
        char head_hash[65] = "";
        long to = 0;
        bool force = false, json = false, dry_run = false;
        int wait = -1;
        int c;
        while ((c = getopt_long(argc, argv, "t:lafwjn", opts, NULL)) != -1)
                switch (c) {
                case 't': {
                        char *end;
                        to = strtol(optarg, &end, 10);
                        if (*end || to < 0)
                                return cli_error("--to takes a sequence number, not '%s'", optarg);
                        scope = SCOPE_TO;
                        break;
                }
                case 'l': scope = SCOPE_LAST_RUN; break;
                case 'a': scope = SCOPE_ALL; break;
                case 'f': force = true; break;
                case 'w': wait = 1; break;
                case 'W': wait = 0; break;
                case 'j': json = true; break;
                case 'n': dry_run = true; break;
                default: return cli_usage_error("rollback");
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s'", argv[optind]);
        if (scope == SCOPE_NONE)
                return cli_error("say what to roll back: --last-run, --to SEQ or --all");
        struct root *r = cli_root(cli);
        if (!r || !cli_root_can_change(cli, r))
                return EXIT_ERROR;
        const struct site_config *conf = cli_config(cli);
        if (!conf)
                return EXIT_ERROR;
        if (root_is_archive(r))
                return cli_error("%s is a gathered archive, which is read-only: rollback changes a machine or a "
                                 "directory tree", root_path(r));
        if (wait < 0) /* [rollback] wait in the site configuration */
                wait = conf->rollback_wait == 1;
        if (root_is_live(r) && geteuid() != 0 && !dry_run)
                return cli_error("rollback changes the live system and needs root (or --root DIR for a tree)");
        int lock_fd = -1;
        int rc = changelog_lock(r, wait == 1, &lock_fd);
        if (rc == -EWOULDBLOCK)
                return cli_error("another llmtune apply or rollback is running (use --wait to wait for it)");
        if (rc < 0)
                return cli_error("cannot take the lock %s: %s", CHANGELOG_LOCK, changelog_strerror(rc));

        struct log_read lr = {0};
        rc = changelog_read(r, &lr);
        if (rc < 0) {
                close(lock_fd);
                return cli_error("cannot read the change log %s: %s", CHANGELOG_PATH, changelog_strerror(rc));
        }
        /* Steps an interrupted apply or rollback left open are closed first, after reading their
         * targets again, so what is rolled back is what the machine shows. */
        size_t *unf = NULL;
        if (changelog_unfinished(&lr, &unf) > 0 && lr.n_problems == 0) {
                struct changelog *rlog = NULL;
                struct strv msgs = {0};
                rc = changelog_open(r, &rlog);
                if (rc == 0 && changelog_note(rlog))
                        fprintf(stderr, "llmtune: %s\n", changelog_note(rlog));
                if (rc == 0)
                        rc = changelog_recover(rlog, &lr, &msgs, NULL);
                changelog_close(rlog);
                for (size_t i = 0; i < msgs.n; i++)
                        fprintf(stderr, "llmtune: recovered: %s\n", msgs.v[i]);
                strv_free(&msgs);
                log_read_free(&lr);
                if (rc >= 0)
                        rc = changelog_read(r, &lr);
                if (rc < 0) {
                        free(unf);
                        close(lock_fd);
                        return cli_error("cannot recover the interrupted run in the change log %s: %s", CHANGELOG_PATH,
                                         changelog_strerror(rc));
                }
        }
        free(unf);
        int exit_code = EXIT_OK;
        if (lr.n_problems && !force) {
                for (size_t i = 0; i < lr.n_problems; i++)
                        fprintf(stderr, "llmtune: change log: seq %ld: %s\n", lr.problems[i].seq, lr.problems[i].message);
                log_read_free(&lr);
                close(lock_fd);
                return cli_error("the change log's chain is broken: refusing to roll back from it (--force to try anyway)");
        }
        /* Every "done" change not undone yet, in log order: rollback reverses all of them, newest
         * first, so a file changed twice comes back through both changes. The changes in force
         * (the newest per target) are what the machine must still show. */
        size_t *idx = xcalloc(lr.n + 1, sizeof(size_t)), n = 0;
        for (size_t i = 0; i < lr.n; i++) {
                /* reversed: a later "undone" names it (worked out once when the log was read) */
                if (streq(lr.v[i].event, "done") && lr.v[i].change.type != CHANGE_NOTE && !lr.v[i].reversed)
                        idx[n++] = i;
        }
        const char *last_run = n ? lr.v[idx[n - 1]].run : NULL;
        bool *pick = xcalloc(n + 1, sizeof(bool));
        size_t picked = 0;
        for (size_t i = 0; i < n; i++) {
                const struct log_record *rec = &lr.v[idx[i]];
                pick[i] = scope == SCOPE_ALL || (scope == SCOPE_TO && rec->seq > to) ||
                          (scope == SCOPE_LAST_RUN && last_run && streq(rec->run, last_run));
                picked += pick[i];
        }
        /* Check the targets before changing anything, and refuse as a whole: only the newest
         * change of each target says what the machine should show now. */
        size_t *force_idx = NULL, undone = 0;
        size_t nf = changelog_in_force(&lr, &force_idx);
        bool *newest = xcalloc(lr.n + 1, sizeof(bool)); /* by record index: one lookup per change */
        for (size_t k = 0; k < nf; k++)
                newest[force_idx[k]] = true;
        json_object *conflicts = json_object_new_array(), *done = json_object_new_array();
        bool *skip = xcalloc(n + 1, sizeof(bool));
        for (size_t i = 0; i < n; i++) {
                if (!pick[i] || !newest[idx[i]])
                        continue;
                const struct change *ch = &lr.v[idx[i]].change;
                char *cur = NULL;
                if (action_current(r, ch, &cur) == -EOPNOTSUPP)
                        continue; /* commands: run their undo */
                if (action_state_equal(ch, cur, ch->before) && !action_state_equal(ch, cur, ch->after))
                        skip[i] = true; /* already back */
                else if (!action_state_equal(ch, cur, ch->after) && !force) {
                        _cleanup_free_ char *b = brief(ch, ch->before), *a = brief(ch, ch->after), *now = brief(ch, cur);
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "seq", json_object_new_int64(lr.v[idx[i]].seq));
                        json_object_object_add(o, "rule", ch->rule ? json_object_new_string(ch->rule) : NULL);
                        json_object_object_add(o, "target", json_object_new_string(ch->target));
                        json_object_object_add(o, "now", json_object_new_string(now));
                        json_object_object_add(o, "applied", json_object_new_string(a));
                        json_object_object_add(o, "before", json_object_new_string(b));
                        json_object_array_add(conflicts, o);
                        fprintf(stderr, "llmtune: %s changed since llmtune set it (seq %ld): now %s, llmtune wrote %s, before was %s\n",
                                ch->target, lr.v[idx[i]].seq, now, a, b);
                        exit_code = EXIT_ERROR;
                }
                free(cur);
        }
        free(force_idx);
        free(newest);
        /* A file whose before content cannot be loaded has nothing to be restored to: undoing it
         * would delete the target as if it had not existed. Refused even with --force. */
        for (size_t i = 0; i < n; i++) {
                const struct log_record *rec = &lr.v[idx[i]];
                if (!pick[i] || !rec->before_lost)
                        continue;
                fprintf(stderr, "llmtune: %s (seq %ld): its before content cannot be loaded from its backup "
                                "(missing, unreadable or altered; see `llmtune verify`)\n",
                        rec->change.target, rec->seq);
                exit_code = cli_error("refusing to roll back: the content to restore %s is lost (even with --force)",
                                      rec->change.target);
                goto out;
        }
        if (exit_code != EXIT_OK) {
                cli_error("%s: targets were changed by someone else (--force to restore anyway)",
                          dry_run ? "rollback would refuse" : "refusing to roll back");
                goto out;
        }
        if (dry_run) {
                /* What a real rollback would do, in its order; nothing is written or logged. */
                for (size_t i = n; i-- > 0;)
                        if (pick[i]) {
                                const struct log_record *rec = &lr.v[idx[i]];
                                const char *st = skip[i] ? "already"
                                                 : rec->change.type == CHANGE_COMMAND && rec->change.undo.n == 0 ? "manual"
                                                                                                                 : "would-restore";
                                report(done, rec, st, json);
                                undone += !skip[i];
                        }
                report(NULL, NULL, NULL, json);
                if (!json)
                        printf("%zu would be rolled back (dry run)\n", undone);
                goto out;
        }
        if (picked == 0) {
                if (!json)
                        printf("nothing to roll back\n");
                goto out;
        }
        struct changelog *log = NULL;
        rc = changelog_open(r, &log);
        if (rc < 0) {
                exit_code = cli_error("cannot open the change log: %s", changelog_strerror(rc));
                goto out;
        }
        if (changelog_note(log))
                fprintf(stderr, "llmtune: %s\n", changelog_note(log));
        run = changelog_run_id();
        struct log_context run_ctx = {.run = run};
        long begin = changelog_run_begin(log, &run_ctx, "rollback");
        if (begin < 0) {
                exit_code = cli_error("cannot write the change log: %s", strerror((int)-begin));
                changelog_head(log, &head_seq, head_hash);
                changelog_close(log);
                goto out;
        }
        for (size_t i = n; i-- > 0;) {
                if (!pick[i])
                        continue;
                const struct log_record *rec = &lr.v[idx[i]];
                const struct change *ch = &rec->change;
                struct log_context ctx = {.run = run, .profile = rec->profile, .profile_hash = rec->profile_hash};
                /* A record is undone only as llmtune would have made it: a target its kind may write,
                 * a command in the typed form llmtune runs (never an argv as the log spells it). The
                 * first one that is not stops the rollback there, --force or not. */
                char *why = NULL;
                if (action_check(ch, &why) < 0) {
                        exit_code = cli_error("change log record %ld fails validation: %s; rollback stops at seq %ld",
                                              rec->seq, why, rec->seq);
                        free(why);
                        break;
                }
                if (skip[i]) {
                        changelog_append(log, &ctx, "undone", ch, rec->seq, "already in the before state");
                        report(done, rec, "already", json);
                        continue;
                }
                changelog_append(log, &ctx, "undo-intent", ch, rec->seq, "rollback");
                test_point("undo-intent-logged", ch->target);
                char *err = NULL;
                test_points_in_action(1);
                rc = action_undo(r, ch, &err);
                test_points_in_action(0);
                test_point("undone", ch->target);
                if (rc < 0) {
                        changelog_append(log, &ctx, "undo-failed", ch, rec->seq, err);
                        exit_code = cli_error("cannot roll back %s: %s", ch->target, err ? err : strerror(-rc));
                        report(done, rec, "failed", true);
                        free(err);
                        break;
                }
                changelog_append(log, &ctx, "undone", ch, rec->seq,
                                 rc == 1 ? (ch->type == CHANGE_COMMAND && ch->undo.n == 0 ? "no undo command: reverse by hand"
                                                                                            : "not run under --root")
                                         : NULL);
                report(done, rec, rc == 1 && ch->type == CHANGE_COMMAND && ch->undo.n == 0 ? "manual" : "restored", json);
                undone++;
                free(err);
                test_point("outcome-logged", ch->target);
        }
        {
                _cleanup_free_ char *how = exit_code != EXIT_OK ? xasprintf("stopped: %zu rolled back", undone)
                                                                : xasprintf("%zu rolled back", undone);
                long e = changelog_run_end(log, &run_ctx, "rollback", begin, how);
                if (e < 0 && exit_code == EXIT_OK)
                        exit_code = cli_error("cannot write the change log: %s", strerror((int)-e));
        }
        changelog_head(log, &head_seq, head_hash);
        changelog_close(log);
        report(NULL, NULL, NULL, json);
        if (!json)
                printf("%zu rolled back\n", undone);
out:
        if (json) {
                json_object *top = json_object_new_object();
                json_object_object_add(top, "format", json_object_new_int(1));
                json_object_object_add(top, "root", json_object_new_string(root_path(r)));
                json_object_object_add(top, "run", run ? json_object_new_string(run) : NULL);
                json_object_object_add(top, "dry_run", json_object_new_boolean(dry_run));
                json_object_object_add(top, "rolled_back", json_object_new_int64((int64_t)undone));
                json_object_object_add(top, "refused", json_object_new_boolean(json_object_array_length(conflicts) > 0));
                json_object_object_add(top, "conflicts", json_object_get(conflicts));
                json_object_object_add(top, "changes", json_object_get(done));
                if (head_seq == 0) {
                        head_seq = lr.end_seq;
                        memcpy(head_hash, lr.end_hash, sizeof(head_hash));
                }
                json_object_object_add(top, "head", changelog_head_json(head_seq, head_hash));
                json_print(stdout, top);
                json_object_put(top);
        }
        json_object_put(conflicts);
        json_object_put(done);
        free(run);
        free(pick);
        free(skip);
        free(idx);
        log_read_free(&lr);
        close(lock_fd);
        return exit_code;
}

const struct command cmd_rollback = {
        .name = "rollback",
        .summary = "restore the state before logged changes",
        .usage = "Usage: llmtune [--root DIR] rollback (--last-run | --to SEQ | --all) [--force] [--wait|--no-wait]\n"
                 "                                   [--dry-run] [--json]\n"
                 "\n"
                 "Restore the before state of the changes still in force, newest first: those of the last\n"
                 "apply run, those logged after sequence number SEQ, or all. Each restore is logged as\n"
                 "records of its own. If a target is neither in the state llmtune left it in nor in its\n"
                 "before state (someone changed it since), nothing is rolled back unless --force.\n"
                 "A broken change log chain (see `llmtune verify`) is refused unless --force.\n"
                 "\n"
                 "  -l, --last-run   the changes of the last apply run\n"
                 "  -t, --to SEQ     the changes logged after sequence number SEQ\n"
                 "  -a, --all        every change still in force\n"
                 "  -f, --force      restore over later changes, or from a broken chain\n"
                 "  -w, --wait       wait for another apply or rollback instead of failing\n"
                 "      --no-wait    fail at once ([rollback] wait in " SITE_CONFIG_PATH " sets the default)\n"
                 "  -n, --dry-run    say what would be restored (or refused); change and log nothing\n"
                 "  -j, --json       {run, dry_run, rolled_back, refused, conflicts: [{seq, rule, target, now, applied,\n"
                 "                   before}], changes: [{seq, rule, type, target, status, before}]} where\n"
                 "                   status is restored, already, manual, failed or (--dry-run) would-restore\n"
                 "\n"
                 "Exit status: 0 rolled back (or nothing to do), 1 refused or failed.\n",
        .run = rollback_cmd,
};
