/* SPDX-License-Identifier: MIT */
/* llmtune rollback: put back the before state of logged changes, newest first, logging each. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <unistd.h>

#include "actions.h"
#include "changelog.h"
#include "cli-data.h"
#include "commands.h"
#include "test-hooks.h"

enum scope { SCOPE_NONE, SCOPE_ALL, SCOPE_LAST_RUN, SCOPE_TO };

static const char *show(const char *s) { return s ? s : "(absent)"; }

/* Short form of a state for messages: file contents are summarised. */
static char *brief(const struct change *c, const char *s)
{
        if (!s)
                return xstrdup("(absent)");
        if (c->type == CHANGE_FILE)
                return xasprintf("%zu bytes", strlen(s));
        return xstrdup(s);
}

static int rollback_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"to", required_argument, NULL, 't'},
                {"last-run", no_argument, NULL, 'l'},
                {"all", no_argument, NULL, 'a'},
                {"force", no_argument, NULL, 'f'},
                {"wait", no_argument, NULL, 'w'},
                {},
        };
        enum scope scope = SCOPE_NONE;
        char *run = NULL;
        long to = 0;
        bool force = false, wait = false;
        int c;
        while ((c = getopt_long(argc, argv, "t:lafw", opts, NULL)) != -1)
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
                case 'w': wait = true; break;
                default: return EXIT_ERROR;
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s'", argv[optind]);
        if (scope == SCOPE_NONE)
                return cli_error("say what to roll back: --last-run, --to SEQ or --all");
        struct root *r = cli_root(cli);
        if (!r || !cli_root_can_change(cli, r))
                return EXIT_ERROR;
        if (root_is_archive(r))
                return cli_error("%s is a gathered archive, which is read-only: rollback changes a machine or a "
                                 "directory tree", root_path(r));
        if (root_is_live(r) && geteuid() != 0)
                return cli_error("rollback changes the live system and needs root (or --root DIR for a tree)");
        int lock_fd = -1;
        int rc = changelog_lock(r, wait, &lock_fd);
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
                if (!streq(lr.v[i].event, "done") || lr.v[i].change.type == CHANGE_NOTE)
                        continue;
                bool undone = false;
                for (size_t j = i + 1; j < lr.n && !undone; j++)
                        undone = streq(lr.v[j].event, "undone") && lr.v[j].ref == lr.v[i].seq;
                if (!undone)
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
        size_t *force_idx = NULL;
        size_t nf = changelog_in_force(&lr, &force_idx);
        bool *skip = xcalloc(n + 1, sizeof(bool));
        for (size_t i = 0; i < n; i++) {
                bool newest = false;
                for (size_t k = 0; k < nf && !newest; k++)
                        newest = force_idx[k] == idx[i];
                if (!pick[i] || !newest)
                        continue;
                const struct change *ch = &lr.v[idx[i]].change;
                char *cur = NULL;
                if (action_current(r, ch, &cur) == -EOPNOTSUPP)
                        continue; /* commands: run their undo */
                if (action_state_equal(ch, cur, ch->before) && !action_state_equal(ch, cur, ch->after))
                        skip[i] = true; /* already back */
                else if (!action_state_equal(ch, cur, ch->after) && !force) {
                        _cleanup_free_ char *b = brief(ch, ch->before), *a = brief(ch, ch->after), *now = brief(ch, cur);
                        fprintf(stderr, "llmtune: %s changed since llmtune set it (seq %ld): now %s, llmtune wrote %s, before was %s\n",
                                ch->target, lr.v[idx[i]].seq, now, a, b);
                        exit_code = EXIT_ERROR;
                }
                free(cur);
        }
        free(force_idx);
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
                cli_error("refusing to roll back: targets were changed by someone else (--force to restore anyway)");
                goto out;
        }
        if (picked == 0) {
                printf("nothing to roll back\n");
                goto out;
        }
        struct changelog *log = NULL;
        rc = changelog_open(r, &log);
        if (rc < 0) {
                exit_code = cli_error("cannot open the change log: %s", changelog_strerror(rc));
                goto out;
        }
        run = changelog_run_id();
        size_t undone = 0;
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
                        printf("already  %-10s %s   (seq %ld)\n", change_type_name(ch->type), ch->target, rec->seq);
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
                        free(err);
                        break;
                }
                changelog_append(log, &ctx, "undone", ch, rec->seq,
                                 rc == 1 ? (ch->type == CHANGE_COMMAND && ch->undo.n == 0 ? "no undo command: reverse by hand"
                                                                                            : "not run under --root")
                                         : NULL);
                if (rc == 1 && ch->type == CHANGE_COMMAND && ch->undo.n == 0) {
                        _cleanup_free_ char *cmd = strv_join(&ch->argv, " ");
                        printf("manual   command    %s: reverse by hand   (seq %ld)\n", cmd, rec->seq);
                } else
                        printf("restored %-10s %s -> %s   (seq %ld)\n", change_type_name(ch->type), ch->target,
                               ch->type == CHANGE_FILE ? (ch->before ? "previous content" : "(removed)") : show(ch->before),
                               rec->seq);
                undone++;
                free(err);
        }
        changelog_close(log);
        printf("%zu rolled back\n", undone);
out:
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
        .usage = "Usage: llmtune [--root DIR] rollback (--last-run | --to SEQ | --all) [--force] [--wait]\n"
                 "\n"
                 "Restore the before state of the changes still in force, newest first: those of the last\n"
                 "apply run, those logged after sequence number SEQ, or all. Each restore is logged as\n"
                 "records of its own. If a target is neither in the state llmtune left it in nor in its\n"
                 "before state (someone changed it since), nothing is rolled back unless --force.\n"
                 "A broken change log chain (see `llmtune verify`) is refused unless --force.\n"
                 "\n"
                 "Exit status: 0 rolled back (or nothing to do), 1 refused or failed.\n",
        .run = rollback_cmd,
};
