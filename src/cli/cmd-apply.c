/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune apply / plan: fix what the audit found, show it first, log every change, undo on failure. */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "actions.h"
#include "changelog.h"
#include "cli-data.h"
#include "commands.h"
#include "diff.h"
#include "json-out.h"
#include "plan.h"
#include "site-config.h"
#include "test-hooks.h"

struct apply_opts {
        const char *profile;
        struct strv only;
        bool dry_run, json, wait, reapply, exit_code;
};

static void print_plan_human(const struct plan *p)
{
        /* Files: one diff per file from its first before to its last after. */
        struct strv seen = {0};
        for (size_t i = 0; i < p->n; i++) {
                const struct change *c = &p->v[i];
                if (c->type != CHANGE_FILE || strv_contains(&seen, c->target))
                        continue;
                strv_add(&seen, c->target);
                const char *last = c->after;
                for (size_t j = i + 1; j < p->n; j++)
                        if (p->v[j].type == CHANGE_FILE && streq(p->v[j].target, c->target))
                                last = p->v[j].after;
                _cleanup_free_ char *d = unified_diff(c->target, c->before, last);
                fputs(d, stdout);
        }
        strv_free(&seen);
        static const struct {
                enum change_type t;
                const char *title;
        } groups[] = {
                {CHANGE_SYMLINK, "Links"},   {CHANGE_VALUE, "Runtime values"}, {CHANGE_SWAP, "Swap"},
                {CHANGE_MOUNTOPT, "Remounts"}, {CHANGE_COMMAND, "Commands"},
        };
        for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
                bool head = false;
                for (size_t i = 0; i < p->n; i++) {
                        const struct change *c = &p->v[i];
                        if (c->type != groups[g].t)
                                continue;
                        if (!head)
                                printf("%s:\n", groups[g].title);
                        head = true;
                        /* Many values alike (a governor per CPU): one line with the first and last target. */
                        size_t same = 1;
                        while (c->type == CHANGE_VALUE && i + same < p->n && p->v[i + same].type == CHANGE_VALUE &&
                               streq(p->v[i + same].rule, c->rule) && streq(p->v[i + same].after, c->after) &&
                               ((!p->v[i + same].before && !c->before) ||
                                (p->v[i + same].before && c->before && streq(p->v[i + same].before, c->before))))
                                same++;
                        if (same > 3) {
                                printf("  %s ... %s (%zu files): %s -> %s   (%s)\n", c->target, p->v[i + same - 1].target, same,
                                       c->before ? c->before : "(none)", c->after, c->rule);
                                i += same - 1;
                                continue;
                        }
                        if (c->type == CHANGE_COMMAND) {
                                _cleanup_free_ char *cmd = strv_join(&c->argv, " ");
                                printf("  %s   (%s)\n", cmd, c->rule);
                        } else if (c->type == CHANGE_SWAP)
                                printf("  swapoff %s   (%s)\n", c->target, c->rule);
                        else
                                printf("  %s: %s -> %s   (%s)\n", c->target, c->before ? c->before : "(none)",
                                       c->after ? c->after : "(removed)", c->rule);
                }
        }
        for (int reboot = 1; reboot >= 0; reboot--) {
                bool head = false;
                for (size_t i = 0; i < p->n; i++) {
                        const struct change *c = &p->v[i];
                        if (c->type != CHANGE_NOTE || c->reboot != reboot)
                                continue;
                        if (!head)
                                printf("%s:\n", reboot ? "Reboot required" : "Manual steps");
                        head = true;
                        printf("  %s   (%s)\n", c->aux, c->rule);
                }
        }
}

static json_object *change_json(const struct change *c, const char *status, bool with_content)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "rule", json_object_new_string(c->rule));
        json_object_object_add(o, "type", json_object_new_string(change_type_name(c->type)));
        json_object_object_add(o, "target", json_object_new_string(c->target));
        if (c->type == CHANGE_FILE) {
                _cleanup_free_ char *d = unified_diff(c->target, c->before, c->after);
                json_object_object_add(o, "diff", json_object_new_string(d));
        }
        if (with_content || c->type != CHANGE_FILE) {
                json_object_object_add(o, "before", c->before ? json_object_new_string(c->before) : NULL);
                json_object_object_add(o, "after", c->after ? json_object_new_string(c->after) : NULL);
        }
        if (c->type == CHANGE_COMMAND) {
                _cleanup_free_ char *cmd = strv_join(&c->argv, " ");
                json_object_object_add(o, "command", json_object_new_string(cmd));
        }
        if (c->type == CHANGE_NOTE) {
                json_object_object_add(o, "text", json_object_new_string(c->aux));
                json_object_object_add(o, "reboot", json_object_new_boolean(c->reboot));
        }
        if (status)
                json_object_object_add(o, "status", json_object_new_string(status));
        return o;
}

static bool reboot_required(const struct plan *p)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->v[i].type == CHANGE_NOTE && p->v[i].reboot)
                        return true;
        return false;
}

/* Why logging change C (its intent, or the run-begin before it) failed with RC. */
static char *append_failure(const struct change *c, long rc)
{
        return rc == -EFBIG ? xasprintf("%s (rule %s): refused: the change log would pass the size it can be read "
                                          "back at (%u MiB)",
                                          c->target, c->rule, CHANGELOG_READ_MAX >> 20)
                              : xasprintf("cannot write the change log: %s", strerror((int)-rc));
}

/* Undo the changes of this run that were done, newest first, logging each. */
static void undo_run(struct root *r, struct changelog *log, const struct log_context *ctx, const struct plan *p,
                     const long *done_seq, size_t upto)
{
        for (size_t k = upto; k-- > 0;) {
                const struct change *c = &p->v[k];
                if (done_seq[k] <= 0)
                        continue;
                long s = changelog_append(log, ctx, "undo-intent", c, done_seq[k], "undoing the failed run");
                char *err = NULL;
                int rc = action_undo(r, c, &err);
                changelog_append(log, ctx, rc < 0 ? "undo-failed" : "undone", c, done_seq[k], err);
                if (rc < 0)
                        fprintf(stderr, "llmtune: could not undo %s: %s\n", c->target, err ? err : "");
                free(err);
                (void)s;
        }
}

/* Take the apply lock and open the change log; close what an interrupted apply or rollback left
 * unfinished (see changelog_recover) before anything is planned, so the plan starts from a known
 * state. *ret_run gets the interrupted run's id when it used PROFILE (this apply completes it). */
static int begin_run(struct root *r, bool wait, int *ret_lock, struct changelog **ret_log, char **ret_run)
{
        *ret_run = NULL;
        int lock_fd = -1;
        int rc = changelog_lock(r, wait, &lock_fd);
        if (rc == -EWOULDBLOCK)
                return cli_error("another llmtune apply or rollback is running on %s (use --wait to wait for it)",
                                 root_path(r));
        if (rc < 0)
                return cli_error("cannot take the lock %s: %s", CHANGELOG_LOCK, changelog_strerror(rc));
        struct changelog *log = NULL;
        rc = changelog_open(r, &log);
        if (rc < 0) {
                close(lock_fd);
                return cli_error("cannot open the change log %s: %s", CHANGELOG_PATH, changelog_strerror(rc));
        }
        if (changelog_note(log))
                fprintf(stderr, "llmtune: %s\n", changelog_note(log));
        struct log_read lr;
        rc = changelog_read(r, &lr);
        if (rc == 0) {
                size_t *idx;
                size_t n = changelog_unfinished(&lr, &idx);
                free(idx);
                if (n > 0 && lr.n_problems == 0) {
                        struct strv msgs = {0};
                        char *run = NULL;
                        int k = changelog_recover(log, &lr, &msgs, &run);
                        for (size_t i = 0; i < msgs.n; i++)
                                fprintf(stderr, "llmtune: recovered: %s\n", msgs.v[i]);
                        strv_free(&msgs);
                        if (k < 0) {
                                free(run);
                                log_read_free(&lr);
                                changelog_close(log);
                                close(lock_fd);
                                return cli_error("cannot record the recovery of an interrupted run: %s", strerror(-k));
                        }
                        *ret_run = run;
                } else if (n > 0)
                        fprintf(stderr, "llmtune: the change log has unfinished steps but its chain is broken: "
                                        "not recovering them (see `llmtune verify`)\n");
                log_read_free(&lr);
        }
        *ret_lock = lock_fd;
        *ret_log = log;
        return EXIT_OK;
}

static int carry_out(struct cli *cli, const struct rule_env *env, const struct plan *p, const struct apply_opts *o,
                     int lock_fd, struct changelog *log, const char *resume_run)
{
        struct root *r = cli->root;
        int rc;
        _cleanup_free_ char *run = resume_run ? xstrdup(resume_run) : changelog_run_id();
        /* host NULL: the change log records the host of the root it was opened on */
        struct log_context ctx = {.run = run, .profile = env->profile.name, .profile_hash = env->profile.hash};
        long *done = xcalloc(p->n + 1, sizeof(long));
        const char **status = xcalloc(p->n + 1, sizeof(char *));
        size_t changed = 0;
        int exit_code = EXIT_OK;
        char *failure = NULL;
        long begin = 0; /* this run's run-begin record */
        for (size_t i = 0; i < p->n; i++) {
                const struct change *c = &p->v[i];
                if (c->type == CHANGE_NOTE) {
                        status[i] = c->reboot ? "reboot-required" : "manual";
                        continue;
                }
                /* Before the first change: a run-begin, so a run killed between two changes (no
                 * step left open) is still seen as unfinished until its run-end. */
                if (begin == 0) {
                        begin = changelog_run_begin(log, &ctx, "apply");
                        if (begin < 0) {
                                failure = append_failure(c, begin);
                                status[i] = "failed";
                                break;
                        }
                }
                /* A change its kind may not make (a remedy aimed outside its area, a value that is
                 * syntax) is refused before it is logged: the log holds only changes rollback may undo. */
                char *why = NULL;
                if (action_check(c, &why) < 0) {
                        failure = xasprintf("%s (rule %s): %s", c->target, c->rule, why);
                        free(why);
                        status[i] = "failed";
                        undo_run(r, log, &ctx, p, done, i);
                        break;
                }
                /* Intent first: a crash between here and the outcome leaves a record verify reports. */
                long intent = changelog_append(log, &ctx, "intent", c, 0, NULL);
                if (intent < 0) {
                        failure = append_failure(c, intent);
                        status[i] = "failed";
                        undo_run(r, log, &ctx, p, done, i);
                        break;
                }
                test_point("intent-logged", c->target);
                char *err = NULL;
                test_points_in_action(1);
                rc = action_apply(r, c, &err);
                test_points_in_action(0);
                if (rc == 0 && c->type != CHANGE_COMMAND) {
                        /* Re-read to confirm the change is what the machine now shows. */
                        char *now = NULL;
                        action_current(r, c, &now);
                        if (!action_state_equal(c, now, c->after)) {
                                err = xasprintf("%s reads \"%s\" after writing \"%s\"", c->target, now ? now : "(absent)",
                                                c->after ? c->after : "(absent)");
                                rc = -EIO;
                        }
                        free(now);
                }
                test_point("changed", c->target);
                if (rc < 0) {
                        changelog_append(log, &ctx, "failed", c, intent, err);
                        failure = xasprintf("%s (rule %s): %s", c->target, c->rule, err ? err : strerror(-rc));
                        free(err);
                        status[i] = "failed";
                        undo_run(r, log, &ctx, p, done, i);
                        break;
                }
                const char *detail = rc == 1 ? "not run: under --root a command runs only on image files in the tree" : NULL;
                done[i] = changelog_append(log, &ctx, "done", c, intent, detail);
                status[i] = rc == 1 ? "skipped" : "changed";
                changed += rc == 0;
                free(err);
                test_point("outcome-logged", c->target);
        }
        if (begin > 0) {
                _cleanup_free_ char *how = failure ? xasprintf("failed (its changes were undone): %s", failure)
                                                   : xasprintf("%zu changed", changed);
                long e = changelog_run_end(log, &ctx, "apply", begin, how);
                if (e < 0 && !failure)
                        failure = xasprintf("cannot write the change log: %s", strerror((int)-e));
        }
        long head_seq;
        char head_hash[65];
        changelog_head(log, &head_seq, head_hash);
        changelog_close(log);
        close(lock_fd);

        if (failure) {
                exit_code = cli_error("apply failed at %s; the changes of this run were undone", failure);
                for (size_t i = 0; i < p->n; i++)
                        if (status[i] && streq(status[i], "changed"))
                                status[i] = "undone";
                changed = 0;
        }
        if (o->json) {
                json_object *top = json_object_new_object();
                json_object_object_add(top, "format", json_object_new_int(1));
                json_object_object_add(top, "root", json_object_new_string(root_path(r)));
                json_object_object_add(top, "profile", json_object_new_string(env->profile.name));
                json_object_object_add(top, "run", json_object_new_string(run));
                json_object_object_add(top, "changed", json_object_new_int64((int64_t)changed));
                json_object_object_add(top, "failed", json_object_new_boolean(failure != NULL));
                if (failure)
                        json_object_object_add(top, "error", json_object_new_string(failure));
                json_object_object_add(top, "reboot_required", json_object_new_boolean(reboot_required(p)));
                json_object_object_add(top, "head", changelog_head_json(head_seq, head_hash));
                json_object *arr = json_object_new_array();
                for (size_t i = 0; i < p->n; i++)
                        json_object_array_add(arr, change_json(&p->v[i], status[i] ? status[i] : "not-run", false));
                json_object_object_add(top, "changes", arr);
                json_print(stdout, top);
                json_object_put(top);
        } else {
                for (size_t i = 0; i < p->n; i++) {
                        const struct change *c = &p->v[i];
                        if (!status[i] || c->type == CHANGE_NOTE)
                                continue;
                        _cleanup_free_ char *what = c->type == CHANGE_COMMAND ? strv_join(&c->argv, " ") : xstrdup(c->target);
                        printf("%-8s %-10s %s   (%s)\n", status[i], change_type_name(c->type), what, c->rule);
                }
                for (size_t i = 0; i < p->n; i++)
                        if (p->v[i].type == CHANGE_NOTE)
                                printf("%-8s %s   (%s)\n", p->v[i].reboot ? "REBOOT" : "MANUAL", p->v[i].aux, p->v[i].rule);
                printf("%zu changed%s\n", changed, reboot_required(p) ? ", reboot required" : "");
        }
        free(failure);
        free(done);
        free(status);
        return exit_code;
}

#define NOTHING_TO_DO (-1) /* run_apply's status while it skips to the end without an error */

static int run_apply(struct cli *cli, int argc, char **argv, bool plan_only)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {"rule", required_argument, NULL, 'r'},
                {"dry-run", no_argument, NULL, 'n'},
                {"json", no_argument, NULL, 'j'},
                {"wait", no_argument, NULL, 'w'},
                {"no-wait", no_argument, NULL, 'W'},
                {"reapply", no_argument, NULL, 'R'},
                {"exit-code", no_argument, NULL, 'E'},
                {},
        };
        struct apply_opts o = {.dry_run = plan_only};
        _cleanup_free_ char *reapply_profile = NULL;
        int c, wait = -1;
        while ((c = getopt_long(argc, argv, "p:r:njw", opts, NULL)) != -1)
                switch (c) {
                case 'p': o.profile = optarg; break;
                case 'r': strv_add(&o.only, optarg); break;
                case 'n': o.dry_run = true; break;
                case 'j': o.json = true; break;
                case 'w': wait = 1; break;
                case 'W': wait = 0; break;
                case 'R': o.reapply = true; break;
                case 'E': o.exit_code = true; break;
                default: strv_free(&o.only); return cli_usage_error(plan_only ? "plan" : "apply");
                }
        for (int i = optind; i < argc; i++)
                if (o.only.n)
                        strv_add(&o.only, argv[i]);
                else {
                        strv_free(&o.only);
                        return cli_error("unexpected argument '%s'", argv[i]);
                }
        if (o.exit_code && !o.dry_run) {
                strv_free(&o.only);
                return cli_error("--exit-code goes with plan (or apply --dry-run)");
        }
        struct root *root = cli_root(cli);
        const struct site_config *conf = root ? cli_config(cli) : NULL;
        if (!conf) {
                strv_free(&o.only);
                return EXIT_ERROR;
        }
        if (!o.dry_run && root_is_archive(root)) {
                strv_free(&o.only);
                return cli_error("%s is a %s, which is read-only: apply changes a machine or a "
                                 "directory tree (try --dry-run or `llmtune plan`)", root_path(root),
                                 root_is_topology(root) ? "topology export" : "gathered archive");
        }
        if (!o.dry_run && !cli_root_can_change(cli, root)) {
                strv_free(&o.only);
                return EXIT_ERROR;
        }
        /* --wait / --no-wait, else [apply] wait in the site configuration, else no waiting */
        o.wait = wait >= 0 ? wait == 1 : conf->apply_wait == 1;
        if (o.reapply && o.only.n) {
                strv_free(&o.only);
                return cli_error("--reapply chooses the rules itself: no --rule with it");
        }
        if (o.reapply) {
                /* The rules whose changes are in force in the change log, nothing else: at boot
                 * this puts back what apply did (a late cpufreq driver's governor) and changes
                 * nothing new. */
                struct log_read lr;
                int r = changelog_read(root, &lr);
                if (r < 0)
                        return cli_error("cannot read the change log %s: %s", CHANGELOG_PATH, strerror(-r));
                size_t *idx = NULL, n = changelog_in_force(&lr, &idx);
                const struct log_record *newest = NULL;
                for (size_t i = 0; i < n; i++) {
                        const char *rule = lr.v[idx[i]].change.rule;
                        if (rule && !strv_contains(&o.only, rule))
                                strv_add(&o.only, rule);
                        if (!newest || lr.v[idx[i]].seq > newest->seq)
                                newest = &lr.v[idx[i]];
                }
                /* Which profile: --profile, else the pin, else the one the newest change in force
                 * was applied with. Never detection: a boot must not choose a profile by itself. */
                if (!o.profile && !conf->profile && newest && newest->profile)
                        reapply_profile = xstrdup(newest->profile);
                o.profile = o.profile ? o.profile : reapply_profile;
                free(idx);
                log_read_free(&lr);
                if (o.only.n == 0) {
                        if (o.json)
                                printf("{\n  \"format\": 1,\n  \"changed\": 0,\n  \"reapply\": \"nothing to re-apply: no change made by llmtune is in force\"\n}\n");
                        else
                                printf("no change made by llmtune is in force; nothing to re-apply\n");
                        return EXIT_OK;
                }
        }
        if (!o.dry_run && root_is_live(root) && geteuid() != 0) {
                strv_free(&o.only);
                return cli_error("apply changes the live system and needs root (try --dry-run, or --root DIR for a tree)");
        }
        /* The lock is taken before anything is read, so the plan is made from the state this run
         * will change (a second apply that waited plans after the first one finished). */
        int lock_fd = -1;
        struct changelog *log = NULL;
        _cleanup_free_ char *resume = NULL;
        if (!o.dry_run) {
                int brc = begin_run(root, o.wait, &lock_fd, &log, &resume);
                if (brc != EXIT_OK) {
                        strv_free(&o.only);
                        return brc;
                }
        }
        struct rule_env env = {0};
        struct facts *f = cli_facts_new(cli);
        int rc = cli_load_env(cli, &env);
        if (rc == EXIT_OK)
                rc = cli_pick_profile(cli, &env, o.profile, f);
        if (rc == EXIT_OK && o.reapply) {
                /* a rule renamed or dropped by an upgrade is skipped, said on stderr */
                struct strv known = {0};
                for (size_t i = 0; i < o.only.n; i++)
                        if (rules_find(&env.rules, o.only.v[i]))
                                strv_add(&known, o.only.v[i]);
                        else
                                fprintf(stderr, "llmtune: rule '%s' is no longer known; not re-applied\n", o.only.v[i]);
                strv_free(&o.only);
                o.only = known;
                _cleanup_free_ char *list = known.n ? strv_join(&known, " ") : xstrdup("(none known)");
                fprintf(stderr, "llmtune: re-applying with profile %s (%s): %s\n", env.profile.name, env.picked_why, list);
                if (known.n == 0) {
                        printf("none of the rules in force is known; nothing to re-apply\n");
                        rc = NOTHING_TO_DO;
                }
        }
        struct audit a = {0};
        struct plan p = {0};
        if (rc == EXIT_OK) {
                const char *bad = NULL;
                if (engine_run(&env.rules, &env.profile, f, &o.only, &a, &bad) < 0)
                        rc = cli_error("unknown rule '%s' (see `llmtune explain --list`)", bad);
        }
        if (rc == EXIT_OK)
                plan_build(&p, &a, f, &env.profile);
        if (rc == EXIT_OK && o.dry_run) {
                if (o.json) {
                        json_object *top = json_object_new_object();
                        json_object_object_add(top, "format", json_object_new_int(1));
                        json_object_object_add(top, "root", json_object_new_string(root_path(root)));
                        json_object_object_add(top, "profile", json_object_new_string(env.profile.name));
                        /* The same record schema as apply's: status is what apply would report,
                         * "planned" for a change, "skipped" for a command that would not run here
                         * (under --root only image files in the tree are touched), "reboot-required"
                         * or "manual"; "changed" counts what apply would count as changed. */
                        size_t would = 0;
                        json_object *arr = json_object_new_array();
                        for (size_t i = 0; i < p.n; i++) {
                                const struct change *ch = &p.v[i];
                                const char *st = ch->type == CHANGE_NOTE ? (ch->reboot ? "reboot-required" : "manual")
                                                 : ch->type == CHANGE_COMMAND && !plan_command_runs(root, &ch->argv) ? "skipped"
                                                                                                                     : "planned";
                                would += streq(st, "planned");
                                json_object_array_add(arr, change_json(ch, st, true));
                        }
                        json_object_object_add(top, "changed", json_object_new_int64((int64_t)would));
                        json_object_object_add(top, "planned", json_object_new_int64((int64_t)plan_changes(&p)));
                        json_object_object_add(top, "reboot_required", json_object_new_boolean(reboot_required(&p)));
                        json_object_object_add(top, "changes", arr);
                        json_print(stdout, top);
                        json_object_put(top);
                } else {
                        print_plan_human(&p);
                        printf("%zu change%s planned (profile %s)%s\n", plan_changes(&p), plan_changes(&p) == 1 ? "" : "s",
                               env.profile.name, reboot_required(&p) ? ", reboot required" : "");
                }
                /* like `git diff --exit-code`: pending changes are what a gate wants to know */
                if (o.exit_code && plan_changes(&p) > 0)
                        rc = EXIT_FINDINGS;
        } else if (rc == EXIT_OK) {
                /* An interrupted run of the same profile is completed under its own run id. */
                bool same = false;
                if (resume) {
                        struct log_read lr;
                        if (changelog_read(root, &lr) == 0) {
                                for (size_t i = 0; i < lr.n && !same; i++)
                                        same = streq(lr.v[i].run, resume) && streq(lr.v[i].profile, env.profile.name);
                                log_read_free(&lr);
                        }
                        if (same)
                                fprintf(stderr, "llmtune: completing the interrupted run %s\n", resume);
                }
                rc = carry_out(cli, &env, &p, &o, lock_fd, log, same ? resume : NULL);
                lock_fd = -1;
                log = NULL;
        }
        changelog_close(log);
        if (lock_fd >= 0)
                close(lock_fd);
        plan_free(&p);
        audit_free(&a);
        facts_free(f);
        rule_env_free(&env);
        strv_free(&o.only);
        return rc == NOTHING_TO_DO ? EXIT_OK : rc;
}

static int apply_cmd(struct cli *cli, int argc, char **argv) { return run_apply(cli, argc, argv, false); }
static int plan_cmd(struct cli *cli, int argc, char **argv) { return run_apply(cli, argc, argv, true); }

#define APPLY_OPTIONS                                                                                               \
        "  -p, --profile NAME|FILE  profile (default: the pinned one, else detected, as audit does)\n"                                 \
        "  -r, --rule ID...         only these rules\n"                                                           \
        "  -j, --json               machine-readable output: changed count, reboot_required, per-change records\n"

const struct command cmd_apply = {
        .name = "apply",
        .summary = "fix what the audit found, logged and undoable",
        .usage = "Usage: llmtune [--root DIR] apply [--profile NAME|FILE] [--rule ID...|--reapply] [--dry-run] [--json]\n"
                 "                                [--wait|--no-wait]\n"
                 "\n"
                 "Turn the failing audit findings into a plan and carry it out. Each change is logged to\n"
                 "ROOT/var/lib/llmtune/changelog.jsonl before it is made (intent) and after (outcome); files\n"
                 "are replaced atomically and their previous content kept by hash; each change is re-read to\n"
                 "confirm it. If a change fails, the changes of this run are undone in reverse order and apply\n"
                 "exits 1 naming the target and the reason. What cannot be changed safely at runtime (a loaded\n"
                 "nouveau, XFS alignment) is reported as \"reboot required\" or a manual step, never forced.\n"
                 "A second apply with the same profile changes nothing (\"0 changed\").\n"
                 "On the live system apply needs root; under --root DIR it works on that tree and never touches\n"
                 "the running kernel (runtime values are written to the tree's files; commands run only on\n"
                 "image files inside the tree).\n"
                 "\n" APPLY_OPTIONS
                 "  -n, --dry-run            show the plan (same as `llmtune plan`) and change nothing\n"
                 "  -w, --wait               wait for another apply or rollback instead of failing\n"
                 "      --no-wait            fail at once when another run holds the lock ([apply] wait\n"
                 "                           in " SITE_CONFIG_PATH " sets the default)\n"
                 "      --reapply            only the rules whose changes are in force in the change log,\n"
                 "                           with the pinned profile, else the one they were applied with\n"
                 "                           (never detection): what llmtune-apply.service runs at boot\n"
                 "\n"
                 "Exit status: 0 applied (or nothing to do), 1 error or a failed (and undone) run.\n",
        .run = apply_cmd,
};

const struct command cmd_plan = {
        .name = "plan",
        .summary = "show what apply would change (a dry run)",
        .usage = "Usage: llmtune [--root DIR] plan [--profile NAME|FILE] [--rule ID...] [--json] [--exit-code]\n"
                 "\n"
                 "Print a unified diff (a/ and b/ headers) for every file apply would create or change,\n"
                 "then the runtime changes, commands, reboots and manual steps. Writes nothing.\n"
                 "\n" APPLY_OPTIONS
                 "      --exit-code          exit 2 when changes are pending (like `git diff --exit-code`)\n"
                 "\n"
                 "Exit status: 0 shown, 1 error, 2 changes pending (only with --exit-code), 3 which\n"
                 "profile fits could not be told (an unreadable fact; give --profile).\n",
        .run = plan_cmd,
};
