/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transaction of apply and rollback, in one place for both commands and for the unit tests:
 * the lock, the change log, closing what an interrupted run left open (one recovery path), carrying
 * out a plan with intent-before-change and undo on failure, and rollback's selection, refusal and
 * undo. The commands parse options and print; everything that writes the log is here.
 *
 * A struct txn owns its lock and its log from txn_begin to txn_done: nothing is handed over, and
 * txn_done (or _cleanup_txn_) releases both whatever happened in between.
 */
#pragma once

#include "apply/changelog.h"
#include "apply/plan.h"
#include "base/root.h"
#include "base/util.h"

struct txn {
        struct root *root;
        int lock_fd;            /* the apply lock (changelog_lock), -1 before txn_begin */
        struct changelog *log;  /* open for appending once txn_open_log succeeded, else NULL */
        struct log_read lr;     /* the log as txn_recover left it (after its recovery records) */
        char *resume_run;       /* run id of the interrupted apply txn_recover closed, else NULL */
        struct strv notes;      /* what the caller should tell the user (log notes, recovered steps) */
        char *error;            /* why the last call failed (NULL after a success) */
};

/* Take the apply lock on R (waiting when WAIT). 0, -EWOULDBLOCK when another run holds it, or
 * -errno; t->error says what failed. T is usable by txn_done either way. */
int txn_begin(struct txn *t, struct root *r, bool wait) _wur_;
/* For a dry run, which writes nothing: take the lock shared (as verify does: it waits for, or with
 * !WAIT refuses during, an apply or rollback, and creates nothing where no apply ran) and read the
 * log into t->lr without recovering it; open steps are left out of what it selects, and a note
 * says that a real run would recover them first. 0 or -errno with t->error. */
int txn_begin_read(struct txn *t, struct root *r, bool wait) _wur_;
/* Release the log and the lock and free what T holds (the root is the caller's). */
void txn_done(struct txn *t);
#define _cleanup_txn_ _cleanup_(txn_done)

/* Open the change log for appending (once; later calls return 0). 0 or -errno with t->error. */
int txn_open_log(struct txn *t) _wur_;

/* Read the log into t->lr; when steps of an interrupted apply or rollback are open and the chain
 * is intact, open the log, give each its outcome as the machine shows it (recover_unfinished) and
 * read the log again. A broken chain is not recovered from (a note says so). 0 or -errno with
 * t->error. */
int txn_recover(struct txn *t) _wur_;

/* ---- recovery (txn-recover.c) ---- */

/*
 * Close the unfinished steps of LR (read under the lock L's process holds): each target is read
 * again and the step gets the outcome the machine shows, with a detail starting "recovered after an
 * interrupted run: ". An apply step found in its after state becomes "done" (so rollback can undo
 * it), one found in its before state or elsewhere "failed"; a command, whose effect cannot be read,
 * is "done" when it has an undo command (its undo is safe to run either way) and "failed" otherwise.
 * A rollback step becomes "undone" when the target is back in its before state, else "undo-failed".
 * Leftover temporary files of an interrupted file replacement are removed. One line per step goes
 * to MESSAGES; *ret_run (may be NULL) gets the run id of the last interrupted apply step.
 * Returns the number of steps closed or -errno.
 */
int recover_unfinished(struct changelog *l, const struct log_read *lr, struct strv *messages, char **ret_run)
        _wur_;

/* ---- apply ---- */

struct txn_apply_result {
        char *run;             /* the run id used (a resumed one or a new one) */
        const char **status;   /* per plan change: "changed", "skipped", "failed", "undone",
                                * "reboot-required", "manual", or NULL (not reached) */
        size_t changed;        /* changes made and kept (0 after a failed run) */
        char *failure;         /* why the run failed and was undone, NULL when it did not */
        bool refused;          /* it failed before its first change (chattr flags): nothing was made */
        long head_seq;         /* the log's last record after the run */
        char head_hash[65];
};
void txn_apply_result_done(struct txn_apply_result *res);

/* Carry out plan P under T (txn_open_log done): a run-begin before the first change, for each
 * change its check, intent, the change, a re-read, and its outcome; on the first failure the
 * run's changes are undone newest first (each with its undo-intent; undoing stops when the log
 * cannot be written) and the run ends. CTX gives profile and hash; its run is ignored: the run is
 * RESUME when given (an interrupted run completed), else a new id. Returns 0 when every change was
 * made, 1 when the run failed (res->failure says why). */
int txn_apply(struct txn *t, const struct plan *p, const struct log_context *ctx, const char *resume,
              struct txn_apply_result *res) _wur_;

/* What txn_open_log and txn_apply would refuse for plan P on R, found without the lock and without
 * writing (plan, apply --dry-run): the change log's trust and end (changelog_check), chattr flags
 * (action_blocked) and each change (action_foresee). NULL, or the refusal (caller frees) in the
 * words apply's failure uses. */
char *txn_foresee(struct root *r, const struct plan *p) _wur_;

/* ---- rollback ---- */

enum txn_scope { TXN_ALL, TXN_LAST_RUN, TXN_TO };

struct txn_conflict {
        const struct log_record *rec;
        char *now, *applied, *before; /* brief forms: a file's content as its length */
};

struct txn_selection {
        /* The "done" records rolled back, in log order (undone newest first), skip[i] when the
         * target is in its before state already. */
        const struct log_record **v;
        bool *skip;
        size_t n;
        /* The targets changed by someone else since llmtune set them (newest change per target
         * only): the rollback is refused unless forced. */
        struct txn_conflict *conflicts;
        size_t n_conflicts;
        /* A picked file change whose before content cannot be loaded: refused even when forced. */
        const struct log_record *lost;
};
void txn_selection_done(struct txn_selection *s);

/* Which changes of t->lr (txn_recover done) SCOPE rolls back (TO: those after sequence number TO),
 * and whether the machine still shows what llmtune left (FORCE: conflicts are listed but do not
 * refuse). Returns 0 (go ahead), 1 (refused: conflicts, or the lost record), or -EBADMSG when the
 * log's chain is broken and not FORCE (t->lr.problems says where). */
int txn_rollback_select(struct txn *t, enum txn_scope scope, long to, bool force, struct txn_selection *ret) _wur_;

/* Called once per record as rollback handles it, with its status: "restored", "already",
 * "manual", "next-boot" (a runtime state of an earlier boot not set up in this one:
 * action_undo_waits_for_boot) or "failed". */
typedef void (*txn_report_fn)(const struct log_record *rec, const char *status, void *userdata);

/* Roll back S under T, newest first, in a run of its own: each undo logged as undo-intent before
 * and its outcome after. Stops at the first record that fails validation, fails to undo, or whose
 * record cannot be appended to the log. *ret_run gets the run id (NULL when nothing was picked),
 * *ret_undone the number rolled back. 0, or -errno with t->error. */
int txn_rollback(struct txn *t, const struct txn_selection *s, txn_report_fn report, void *userdata,
                 char **ret_run, size_t *ret_undone) _wur_;
