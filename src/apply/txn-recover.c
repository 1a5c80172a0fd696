/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Recovery of an interrupted apply or rollback (recover_unfinished, txn.h): part of the
 * transaction, beside txn.c, which decides when to recover (txn_recover). Each step left open is
 * given the outcome its target shows now, so the log says again what the machine holds.
 */
#include <string.h>

#include "apply/actions.h"
#include "apply/txn.h"

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
        struct root *r = changelog_root(l);
        /* A crash inside a file replacement leaves only its temporary file: remove it. */
        action_remove_leftovers(r, c);
        char *cur = NULL;
        int st = action_current(r, c, &cur);
        /* -EOPNOTSUPP: a command, whose state cannot be read at all; another error: a
         * target that is there but unreadable now. */
        bool unknown = st < 0, unreadable = st < 0 && st != -EOPNOTSUPP,
             at_after = !unknown && action_state_equal(c, cur, c->after),
             at_before = !unknown && action_state_equal(c, cur, c->before);
        free(cur);
        const char *detail;
        enum log_event event = recovered_outcome(undo, unknown, unreadable, at_before, at_after, c->undo.n > 0, &detail);
        if (!unknown && at_before && !at_after)
                action_remove_created_dirs(r, c); /* made before the write that never came */
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

int recover_unfinished(struct changelog *l, const struct log_read *lr, struct strv *messages, char **ret_run)
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
