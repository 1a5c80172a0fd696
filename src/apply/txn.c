/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The transaction of apply and rollback (txn.h): lock, log, recovery, carry out, undo. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "base/test-hooks.h"
#include "apply/txn.h"

static void set_error(struct txn *t, char *owned)
{
        free(t->error);
        t->error = owned;
}

/* Why taking the lock failed (RC < 0), into t->error; returns RC. */
static int lock_failed(struct txn *t, int rc)
{
        if (rc == -EWOULDBLOCK)
                set_error(t, xasprintf("another llmtune apply or rollback is running on %s (use --wait to wait for it)",
                                       root_path(t->root)));
        else
                set_error(t, xasprintf("cannot take the lock %s: %s", CHANGELOG_LOCK, changelog_strerror(rc)));
        return rc;
}

/* Why the change log could not be read (RC; WHY, taken: a refusal's reason), into t->error;
 * returns RC. */
static int read_failed(struct txn *t, int rc, char *why)
{
        _cleanup_free_ char *s = changelog_reason(rc, why);
        set_error(t, xasprintf("cannot read the change log %s: %s", CHANGELOG_PATH, s));
        return rc;
}

int txn_begin(struct txn *t, struct root *r, bool wait)
{
        *t = (struct txn){.root = r, .lock_fd = -1};
        int rc = changelog_lock(r, wait, &t->lock_fd);
        return rc < 0 ? lock_failed(t, rc) : 0;
}

int txn_begin_read(struct txn *t, struct root *r, bool wait)
{
        *t = (struct txn){.root = r, .lock_fd = -1};
        int rc = changelog_lock_shared(r, wait, &t->lock_fd);
        if (rc < 0)
                return lock_failed(t, rc);
        char *why = NULL;
        rc = changelog_read(r, &t->lr, &why);
        if (rc < 0)
                return read_failed(t, rc, why);
        _cleanup_free_ size_t *idx = NULL;
        size_t n = changelog_unfinished(&t->lr, &idx);
        if (n)
                strv_push(&t->notes, xasprintf("the change log has %zu unfinished step%s: a real run first reads %s "
                                               "again and records what it finds; this dry run leaves %s out",
                                               n, n == 1 ? "" : "s", n == 1 ? "its target" : "their targets",
                                               n == 1 ? "it" : "them"));
        return 0;
}

void txn_done(struct txn *t)
{
        t->log = changelog_close(t->log);
        closep(&t->lock_fd);
        t->lock_fd = -1;
        log_read_done(&t->lr);
        t->lr = (struct log_read){0};
        free(t->resume_run);
        t->resume_run = NULL;
        strv_done(&t->notes);
        free(t->error);
        t->error = NULL;
}

/* Why the change log could not be opened (RC; WHY, taken: a refusal's reason), in the words apply
 * and plan both use. */
static char *log_open_error(int rc, char *why)
{
        _cleanup_free_ char *s = changelog_reason(rc, why);
        return xasprintf("cannot open the change log %s: %s", CHANGELOG_PATH, s);
}

int txn_open_log(struct txn *t)
{
        if (t->log)
                return 0;
        char *why = NULL;
        int rc = changelog_open(t->root, &t->log, &why);
        if (rc < 0) {
                t->log = NULL;
                set_error(t, log_open_error(rc, why));
                return rc;
        }
        if (changelog_note(t->log))
                strv_add(&t->notes, changelog_note(t->log));
        return 0;
}

int txn_recover(struct txn *t)
{
        log_read_done(&t->lr);
        t->lr = (struct log_read){0};
        char *why = NULL;
        int rc = changelog_read(t->root, &t->lr, &why);
        if (rc < 0)
                return read_failed(t, rc, why);
        _cleanup_free_ size_t *idx = NULL;
        size_t n = changelog_unfinished(&t->lr, &idx);
        if (n == 0)
                return 0;
        if (t->lr.n_problems) {
                strv_add(&t->notes, "the change log has unfinished steps but its chain is broken: not recovering "
                                    "them (see `llmtune verify`)");
                return 0;
        }
        rc = txn_open_log(t);
        if (rc < 0)
                return rc;
        struct strv msgs = {0};
        free(t->resume_run);
        t->resume_run = NULL;
        rc = recover_unfinished(t->log, &t->lr, &msgs, &t->resume_run);
        for (size_t i = 0; i < msgs.n; i++)
                strv_push(&t->notes, xasprintf("recovered: %s", msgs.v[i]));
        strv_done(&msgs);
        if (rc < 0) {
                set_error(t, xasprintf("cannot record the recovery of an interrupted run: %s",
                                       changelog_error(t->log, rc)));
                return rc;
        }
        log_read_done(&t->lr);
        t->lr = (struct log_read){0};
        rc = changelog_read(t->root, &t->lr, &why);
        return rc < 0 ? read_failed(t, rc, why) : 0;
}

/* ---- apply ---- */

void txn_apply_result_done(struct txn_apply_result *res)
{
        free(res->run);
        free(res->status);
        free(res->failure);
        *res = (struct txn_apply_result){0};
}

/* Why logging change C (its intent, or the run-begin before it) failed with RC. */
static char *append_failure(const struct change *c, long rc)
{
        return rc == -EFBIG ? xasprintf("%s (rule %s): refused: the change log would pass the size it can be read "
                                          "back at (%u MiB)",
                                          c->target, c->rule, CHANGELOG_READ_MAX >> 20)
                              : xasprintf("cannot write the change log: %s", strerror((int)-rc));
}

/* Undo the changes of this run that were done (DONE_SEQ > 0), newest first, each logged before
 * and after. A log that cannot take the undo-intent stops the undoing there: a change undone
 * without its record would be one the log still shows in force. */
static void undo_run(struct txn *t, const struct log_context *ctx, const struct plan *p, const long *done_seq,
                     size_t upto, const char **status)
{
        for (size_t k = upto; k-- > 0;) {
                const struct change *c = &p->v[k];
                if (done_seq[k] <= 0)
                        continue;
                if (changelog_append(t->log, ctx, LOG_UNDO_INTENT, c, done_seq[k], "undoing the failed run") < 0) {
                        strv_push(&t->notes, xasprintf("cannot write the change log: %s and the changes before it "
                                                       "stay as they are (see `llmtune verify`)", c->target));
                        return;
                }
                _cleanup_free_ char *err = NULL;
                int rc = action_undo(t->root, c, &err);
                if (rc < 0)
                        strv_push(&t->notes, xasprintf("could not undo %s: %s", c->target, err ? err : ""));
                else
                        status[k] = "undone";
                if (changelog_append(t->log, ctx, rc < 0 ? LOG_UNDO_FAILED : LOG_UNDONE, c, done_seq[k], err) < 0) {
                        strv_push(&t->notes, xasprintf("cannot write the change log after undoing %s: the changes "
                                                       "before it stay as they are", c->target));
                        return;
                }
        }
}

/* Make change C (its intent at INTENT logged) and confirm it by reading it back: 0 made, 1 not
 * run (a command under --root), -errno with *err. */
static int make_change(struct root *r, const struct change *c, char **err)
{
        test_points_in_action(1);
        int rc = action_apply(r, c, err);
        test_points_in_action(0);
        if (rc == 0 && change_has_states(c)) {
                _cleanup_free_ char *now = NULL;
                int st = action_current(r, c, &now);
                if (st < 0 || !action_state_equal(c, now, c->after)) {
                        free(*err);
                        *err = st < 0 ? xasprintf("%s cannot be read back after writing it (%s)", c->target,
                                                  errno_name(-st))
                                      : xasprintf("%s reads \"%s\" after writing \"%s\"", c->target,
                                                  now ? now : "(absent)", c->after ? c->after : "(absent)");
                        rc = -EIO;
                }
        }
        return rc;
}

/* One change of the run: check, intent, change, outcome. 0 (done_seq set, status set) or a
 * failure message (owned). */
static char *apply_one(struct txn *t, const struct log_context *ctx, const struct change *c, long *done_seq,
                       const char **status)
{
        /* A change its kind may not make (a remedy aimed outside its area, a value that is
         * syntax) is refused before it is logged: the log holds only changes rollback may undo. */
        _cleanup_free_ char *why = NULL;
        if (action_check(c, &why) < 0)
                return xasprintf("%s (rule %s): %s", c->target, c->rule, why);
        /* Intent first: a crash between here and the outcome leaves a record verify reports. */
        long intent = changelog_append(t->log, ctx, LOG_INTENT, c, 0, NULL);
        if (intent < 0)
                return append_failure(c, intent);
        test_point("intent-logged", c->target);
        _cleanup_free_ char *err = NULL;
        int rc = make_change(t->root, c, &err);
        test_point("changed", c->target);
        if (rc < 0) {
                char *failure = xasprintf("%s (rule %s): %s", c->target, c->rule, err ? err : strerror(-rc));
                if (changelog_append(t->log, ctx, LOG_FAILED, c, intent, err) < 0)
                        strv_push(&t->notes, xasprintf("cannot write the change log: the failure of %s is not "
                                                       "recorded (the next run closes it)", c->target));
                return failure;
        }
        const char *detail = rc == 1 ? "not run: under --root a command runs only on image files in the tree" : NULL;
        long done = changelog_append(t->log, ctx, LOG_DONE, c, intent, detail);
        /* Not recorded as done: not undone here either (its intent stays open; the next run reads
         * the target and closes it), but the run stops. */
        if (done < 0)
                return xasprintf("cannot write the change log after changing %s: %s", c->target, strerror((int)-done));
        *done_seq = done;
        *status = rc == 1 ? "skipped" : "changed";
        test_point("outcome-logged", c->target);
        return NULL;
}

/* Before the first change of an apply: is any change of P one that chattr flags forbid (an
 * immutable or append-only target)? Its message (rule named) with its status set (STATUS may be
 * NULL), else NULL. */
static char *apply_blocked(struct root *r, const struct plan *p, const char **status)
{
        for (size_t i = 0; i < p->n; i++) {
                _cleanup_free_ char *why = NULL;
                if (action_blocked(r, &p->v[i], &why) < 0) {
                        if (status)
                                status[i] = "failed";
                        return xasprintf("%s (rule %s)", why, p->v[i].rule);
                }
        }
        return NULL;
}

/* Does a change of P before the I-th change its target? */
static bool target_planned(const struct plan *p, size_t i)
{
        for (size_t k = 0; k < i; k++)
                if (!change_kind_of(&p->v[k])->reported_only && p->v[k].target && streq(p->v[k].target, p->v[i].target))
                        return true;
        return false;
}

char *txn_foresee(struct root *r, const struct plan *p)
{
        char *refused = NULL;
        int rc = changelog_check(r, &refused);
        if (rc < 0)
                return log_open_error(rc, refused);
        char *failure = apply_blocked(r, p, NULL);
        for (size_t i = 0; i < p->n && !failure; i++) {
                const struct change *c = &p->v[i];
                _cleanup_free_ char *why = NULL;
                if (!change_kind_of(c)->reported_only && action_foresee(r, c, target_planned(p, i), &why) < 0)
                        failure = xasprintf("%s (rule %s): %s", c->target, c->rule, why);
        }
        return failure;
}

int txn_apply(struct txn *t, const struct plan *p, const struct log_context *base, const char *resume,
              struct txn_apply_result *res)
{
        *res = (struct txn_apply_result){.run = resume ? xstrdup(resume) : changelog_run_id()};
        res->status = xcalloc(p->n + 1, sizeof(char *));
        res->failure = apply_blocked(t->root, p, res->status);
        if (res->failure) {
                res->refused = true;
                changelog_head(t->log, &res->head_seq, res->head_hash);
                return 1;
        }
        struct log_context ctx = *base;
        ctx.run = res->run;
        _cleanup_free_ long *done = xcalloc(p->n + 1, sizeof(long));
        long begin = 0; /* this run's run-begin record */
        for (size_t i = 0; i < p->n && !res->failure; i++) {
                const struct change *c = &p->v[i];
                if (change_kind_of(c)->reported_only) {
                        res->status[i] = change_plan_status(t->root, c);
                        continue;
                }
                /* Before the first change: a run-begin, so a run killed between two changes (no
                 * step left open) is still seen as unfinished until its run-end. */
                if (begin == 0 && (begin = changelog_run_begin(t->log, &ctx, "apply")) < 0) {
                        res->failure = append_failure(c, begin);
                        res->status[i] = "failed";
                        break;
                }
                res->failure = apply_one(t, &ctx, c, &done[i], &res->status[i]);
                if (res->failure) {
                        res->status[i] = "failed";
                        undo_run(t, &ctx, p, done, i, res->status);
                }
                res->changed += res->status[i] && streq(res->status[i], "changed");
        }
        if (begin > 0) {
                _cleanup_free_ char *how = res->failure ? xasprintf("failed (its changes were undone): %s", res->failure)
                                                        : xasprintf("%zu changed", res->changed);
                long e = changelog_run_end(t->log, &ctx, "apply", begin, how);
                if (e < 0 && !res->failure)
                        res->failure = xasprintf("cannot write the change log: %s", strerror((int)-e));
        }
        if (res->failure)
                res->changed = 0;
        changelog_head(t->log, &res->head_seq, res->head_hash);
        return res->failure ? 1 : 0;
}

/* ---- rollback ---- */

void txn_selection_done(struct txn_selection *s)
{
        for (size_t i = 0; i < s->n_conflicts; i++) {
                free(s->conflicts[i].now);
                free(s->conflicts[i].applied);
                free(s->conflicts[i].before);
        }
        free(s->conflicts);
        free(s->v);
        free(s->skip);
        *s = (struct txn_selection){0};
}

/* Every "done" change not undone yet, in log order, that SCOPE picks: rollback reverses all of
 * them, newest first, so a file changed twice comes back through both changes. */
static void pick(const struct log_read *lr, enum txn_scope scope, long to, struct txn_selection *s)
{
        const char *last_run = NULL;
        for (size_t i = 0; i < lr->n; i++)
                if (lr->v[i].event == LOG_DONE && !change_kind_of(&lr->v[i].change)->reported_only && !lr->v[i].reversed)
                        last_run = lr->v[i].run;
        s->v = xcalloc(lr->n + 1, sizeof(*s->v));
        s->skip = xcalloc(lr->n + 1, sizeof(bool));
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                /* reversed: a later "undone" names it (worked out once when the log was read) */
                if (rec->event != LOG_DONE || change_kind_of(&rec->change)->reported_only || rec->reversed)
                        continue;
                if (scope == TXN_ALL || (scope == TXN_TO && rec->seq > to) ||
                    (scope == TXN_LAST_RUN && last_run && streq(rec->run, last_run)))
                        s->v[s->n++] = rec;
        }
}

/* Is the target of the picked record K (the newest change of its target) still as llmtune left
 * it? Already back in its before state: skipped; elsewhere: a conflict (unless FORCE). */
/* Records change K as a conflict; NOW (taken) says what the target holds. */
static void add_conflict(struct txn_selection *s, size_t k, char *now)
{
        const struct change *ch = &s->v[k]->change;
        s->conflicts = xrealloc(s->conflicts, (s->n_conflicts + 1) * sizeof(*s->conflicts));
        s->conflicts[s->n_conflicts++] = (struct txn_conflict){
                .rec = s->v[k], .now = now, .applied = action_describe(ch, ch->after),
                .before = action_describe(ch, ch->before)};
}

static void judge(struct txn *t, struct txn_selection *s, size_t k, bool force)
{
        const struct change *ch = &s->v[k]->change;
        _cleanup_free_ char *cur = NULL;
        int rc = action_current(t->root, ch, &cur);
        if (rc == -EOPNOTSUPP)
                return; /* commands: run their undo */
        if (rc < 0) /* there but unreadable: neither "already back" (absent) nor as applied */
                add_conflict(s, k, xasprintf("(cannot be read: %s)", errno_name(-rc)));
        else if (action_state_equal(ch, cur, ch->before) && !action_state_equal(ch, cur, ch->after))
                s->skip[k] = true; /* already back */
        else if (!action_state_equal(ch, cur, ch->after) && !force)
                add_conflict(s, k, action_describe(ch, cur));
}

int txn_rollback_select(struct txn *t, enum txn_scope scope, long to, bool force, struct txn_selection *s)
{
        *s = (struct txn_selection){0};
        const struct log_read *lr = &t->lr;
        if (lr->n_problems && !force) {
                set_error(t, xstrdup("the change log's chain is broken: refusing to roll back from it (--force to "
                                     "try anyway)"));
                return -EBADMSG;
        }
        pick(lr, scope, to, s);
        /* Check the targets before changing anything, and refuse as a whole: only the newest
         * change of each target says what the machine should show now. */
        _cleanup_free_ size_t *force_idx = NULL;
        size_t nf = changelog_in_force(lr, &force_idx);
        _cleanup_free_ bool *newest = xcalloc(lr->n + 1, sizeof(bool)); /* by record index */
        for (size_t k = 0; k < nf; k++)
                newest[force_idx[k]] = true;
        for (size_t k = 0; k < s->n; k++)
                if (newest[s->v[k] - lr->v])
                        judge(t, s, k, force);
        /* A target chattr flags forbid changing (immutable, append-only): refused as a whole before
         * anything is written, even when forced. */
        for (size_t k = 0; k < s->n; k++) {
                _cleanup_free_ char *why = NULL;
                if (!s->skip[k] && action_blocked(t->root, &s->v[k]->change, &why) < 0) {
                        set_error(t, xasprintf("%s (seq %ld)", why, s->v[k]->seq));
                        return 1;
                }
        }
        /* A file whose before content cannot be loaded has nothing to be restored to: undoing it
         * would delete the target as if it had not existed. Refused even when forced. */
        for (size_t k = 0; k < s->n && !s->lost; k++)
                if (s->v[k]->before_lost)
                        s->lost = s->v[k];
        if (s->lost) {
                set_error(t, xasprintf("refusing to roll back: the content to restore %s is lost (even with --force)",
                                       s->lost->change.target));
                return 1;
        }
        if (s->n_conflicts && !force) {
                set_error(t, xstrdup("targets were changed by someone else (--force to restore anyway)"));
                return 1;
        }
        return 0;
}

/* Was REC written before the root's running kernel booted (its "time" earlier than /proc/stat's
 * btime, proc(5))? False where either cannot be read or they fall in the same second: then the
 * record counts as of this boot, and an undo that fails stops the rollback as any failure does. */
static bool from_earlier_boot(struct root *r, const struct log_record *rec)
{
        const char *stat, *b;
        struct tm tm = {0};
        uint64_t btime;
        if (!rec->time || root_read(r, "/proc/stat", &stat, NULL) < 0 || !(b = strstr(stat, "\nbtime ")))
                return false;
        b += strlen("\nbtime ");
        _cleanup_free_ char *line = xstrndup(b, strcspn(b, "\n"));
        if (parse_u64(line, &btime) < 0)
                return false;
        const char *end = strptime(rec->time, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return end && !*end && (uint64_t)timegm(&tm) < btime;
}

/* The undo of REC failed with RC because its runtime state is not set up in this boot, and REC is
 * from an earlier boot: that state ended with its boot, and the source that sets it up at boot (a
 * zram generator's configuration) is restored by this rollback too. Logged as undone with the reason,
 * reported as "next-boot", and the rollback goes on; found by the boot lab, where the zram device of
 * a masked generator was not there to swap on and the rollback stopped. */
static int undo_at_next_boot(struct txn *t, const struct log_record *rec, const struct log_context *ctx, int rc,
                             const char *err, txn_report_fn report, void *userdata)
{
        const struct change *ch = &rec->change;
        _cleanup_free_ char *why = xasprintf("not set up in this boot (%s): its source sets it up at the next boot",
                                             err ? err : strerror(-rc));
        long s = changelog_append(t->log, ctx, LOG_UNDONE, ch, rec->seq, why);
        if (s < 0) {
                set_error(t, xasprintf("cannot write the change log: %s; rollback stops at seq %ld", strerror((int)-s),
                                       rec->seq));
                return (int)s;
        }
        strv_push(&t->notes, xasprintf("%s (seq %ld) is %s", ch->target, rec->seq, why));
        report(rec, "next-boot", userdata);
        return 1;
}

/* Roll back one record under the run context CTX: validation, undo-intent, undo, outcome. Returns
 * 1 when it was undone (or was already), 0 when it needs no count, -errno to stop (t->error). */
static int rollback_one(struct txn *t, const struct log_record *rec, bool skip, const char *run,
                        txn_report_fn report, void *userdata)
{
        const struct change *ch = &rec->change;
        struct log_context ctx = {.run = run, .profile = rec->profile, .profile_hash = rec->profile_hash};
        /* A record is undone only as llmtune would have made it: a target its kind may write, a
         * command in the typed form llmtune runs (never an argv as the log spells it). The first
         * one that is not stops the rollback there, forced or not. */
        _cleanup_free_ char *why = NULL, *err = NULL; /* before the first goto: cleanup runs at log_failed */
        if (action_check(ch, &why) < 0) {
                set_error(t, xasprintf("change log record %ld fails validation: %s; rollback stops at seq %ld",
                                       rec->seq, why, rec->seq));
                return -EPERM;
        }
        long s;
        if (skip) {
                if ((s = changelog_append(t->log, &ctx, LOG_UNDONE, ch, rec->seq, "already in the before state")) < 0)
                        goto log_failed;
                report(rec, "already", userdata);
                return 0;
        }
        /* The intent before the undo, as apply does: a rollback killed inside the undo leaves a
         * step the next run closes. No intent written, no undo. */
        if ((s = changelog_append(t->log, &ctx, LOG_UNDO_INTENT, ch, rec->seq, "rollback")) < 0)
                goto log_failed;
        test_point("undo-intent-logged", ch->target);
        test_points_in_action(1);
        int rc = action_undo(t->root, ch, &err);
        test_points_in_action(0);
        test_point("undone", ch->target);
        if (rc < 0 && action_undo_waits_for_boot(ch, rc) && from_earlier_boot(t->root, rec))
                return undo_at_next_boot(t, rec, &ctx, rc, err, report, userdata);
        if (rc < 0) {
                set_error(t, xasprintf("cannot roll back %s: %s", ch->target, err ? err : strerror(-rc)));
                report(rec, "failed", userdata);
                if (changelog_append(t->log, &ctx, LOG_UNDO_FAILED, ch, rec->seq, err) < 0)
                        strv_push(&t->notes, xasprintf("cannot write the change log: the failed undo of %s is not "
                                                       "recorded (the next run closes it)", ch->target));
                return rc;
        }
        bool manual = rc == 1 && !change_undoable(ch);
        s = changelog_append(t->log, &ctx, LOG_UNDONE, ch, rec->seq,
                             rc == 1 ? (manual ? "no undo command: reverse by hand" : "not run under --root") : NULL);
        if (s < 0)
                goto log_failed;
        report(rec, manual ? "manual" : "restored", userdata);
        test_point("outcome-logged", ch->target);
        return 1;
log_failed:
        set_error(t, xasprintf("cannot write the change log: %s; rollback stops at seq %ld", strerror((int)-s), rec->seq));
        return (int)s;
}

/* A command whose undo is the command itself rebuilds something from the files as they are
 * (update-initramfs -u, systemctl daemon-reload): its undo must come after the files of its run are
 * back, though it is newer than they are. */
static bool regenerates(const struct change *ch)
{
        if (ch->type != CHANGE_COMMAND || ch->undo.n == 0 || ch->undo.n != ch->argv.n)
                return false;
        for (size_t i = 0; i < ch->argv.n; i++)
                if (!streq(ch->argv.v[i], ch->undo.v[i]))
                        return false;
        return true;
}

/* Newest first, but each run's regenerating commands after the rest of that run: rolling back a
 * blacklist ran update-initramfs while the blacklist file was still there, and the initramfs kept
 * it (found by the boot lab, tests/bootlab). Stops at the first failure. */
static int rollback_records(struct txn *t, const struct txn_selection *s, const char *run, txn_report_fn report,
                            void *userdata, size_t *ret_undone)
{
        _cleanup_free_ size_t *later = xcalloc(s->n + 1, sizeof(size_t));
        size_t n_later = 0;
        int rc = 0;
        for (size_t i = s->n; i-- > 0 && rc >= 0;) {
                if (regenerates(&s->v[i]->change) && !s->skip[i])
                        later[n_later++] = i;
                else {
                        rc = rollback_one(t, s->v[i], s->skip[i], run, report, userdata);
                        *ret_undone += rc > 0;
                }
                /* the end of a run (records of one run are contiguous: one apply at a time) */
                const char *r0 = i ? s->v[i - 1]->run : NULL, *r1 = s->v[i]->run;
                bool run_ends = i == 0 || !(r0 == r1 || streq(r0, r1));
                for (size_t k = 0; run_ends && k < n_later && rc >= 0; k++) {
                        rc = rollback_one(t, s->v[later[k]], false, run, report, userdata);
                        *ret_undone += rc > 0;
                }
                if (run_ends)
                        n_later = 0;
        }
        return rc;
}

int txn_rollback(struct txn *t, const struct txn_selection *s, txn_report_fn report, void *userdata, char **ret_run,
                 size_t *ret_undone)
{
        *ret_run = NULL;
        *ret_undone = 0;
        if (s->n == 0)
                return 0;
        int rc = txn_open_log(t);
        if (rc < 0)
                return rc;
        char *run = changelog_run_id();
        *ret_run = run;
        struct log_context run_ctx = {.run = run};
        long begin = changelog_run_begin(t->log, &run_ctx, "rollback");
        if (begin < 0) {
                set_error(t, xasprintf("cannot write the change log: %s", strerror((int)-begin)));
                return (int)begin;
        }
        rc = rollback_records(t, s, run, report, userdata, ret_undone);
        _cleanup_free_ char *how = rc < 0 ? xasprintf("stopped: %zu rolled back", *ret_undone)
                                          : xasprintf("%zu rolled back", *ret_undone);
        long e = changelog_run_end(t->log, &run_ctx, "rollback", begin, how);
        if (e < 0 && rc >= 0) {
                set_error(t, xasprintf("cannot write the change log: %s", strerror((int)-e)));
                rc = (int)e;
        }
        return rc < 0 ? rc : 0;
}
