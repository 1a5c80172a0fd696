/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The change log: append-only JSON Lines at ROOT/var/lib/llmtune/changelog.jsonl, with the replaced
 * and written file contents kept by SHA-256 in ROOT/var/lib/llmtune/backups/. Every record carries
 * the previous record's hash and its own (SHA-256 over the record without its "hash"), so an edited,
 * removed or reordered record breaks the chain at that sequence number.
 *
 * Each change is logged twice: an "intent" record before it is made and an outcome ("done",
 * "failed") after; a rollback logs "undo-intent" and "undone". Records of one apply share a run id,
 * and an apply or rollback that changes anything opens with a "run-begin" record and closes with
 * a "run-end" (ref: its run-begin), so a run killed between two changes is seen as unfinished.
 *
 * The chain proves nothing about the log's end: cutting the last records (or deleting the log)
 * leaves a valid chain. The head file CHANGELOG_HEAD holds "SEQ:HASH\n" of the last record,
 * replaced atomically after each append; a log that ends before it, or whose record SEQ has
 * another hash, was cut. SEQ:HASH kept off the machine (verify --expect-head) proves the same
 * when both files were rewritten.
 */
#pragma once

#include <json-c/json.h>

#include "apply/plan.h"
#include "base/root.h"

#define CHANGELOG_DIR "/var/lib/llmtune"
#define CHANGELOG_PATH CHANGELOG_DIR "/changelog.jsonl"
#define CHANGELOG_HEAD CHANGELOG_DIR "/changelog.head"
/* What apply and rollback lock (flock, exclusive; verify shared): the directory itself, which
 * cannot be unlinked or swapped from under a holder the way a lock file can. */
#define CHANGELOG_LOCK CHANGELOG_DIR

/* Bound on the log read back in one piece (changelog_read refuses a bigger one). Appending stops
 * short of it: a new change ("intent") is refused once the log would pass the limit less
 * CHANGELOG_RESERVE, so the outcome and undo records of the changes in flight always fit and the
 * log can always be read back to roll them back. */
#define CHANGELOG_READ_MAX (256u << 20)
#define CHANGELOG_RESERVE (16u << 20)

/* Longest runtime value a record holds inline (before or after). A kernel attribute is at most a
 * page, so real values stay inline and readable in the log; a longer one (a hostile file, a tree
 * whose "sysfs" value is 700 KiB) is stored in the backup store like a file's content, the record
 * naming it by SHA-256 ("before_sha256"/"backup_before"), so no record is bigger than a few KiB
 * whatever the values hold: 256 such changes once made a 367 MB log that could no longer be read
 * back. (What a value can be at all is bounded by what root_read reads: 8 MiB.) */
#define CHANGELOG_VALUE_INLINE 4096u

struct changelog;

/* Open (creating the directory and file if needed) for appending; reads the last record to continue
 * the chain. Fails with -EBADMSG when the existing log's last line is not a valid record, and with
 * -ESTALE when the head file shows the log was cut (*RET_WHY says what is missing and how to
 * accept the loss). A log without a head file (written before there was one) gets one:
 * changelog_note then says so, as it does when a head one record behind was brought up to date.
 * Returns 0 (*ret open, changelog_close releases it) or -errno (nothing to release).
 *
 * The functions of the log that take RET_WHY (it may be NULL) give a refusal's reason there (a
 * file of the log that is not a regular file, owned by another user, writable by others,
 * hard-linked; a cut log): the caller frees it. Any other error leaves it as it was; what to say
 * then is changelog_strerror's. */
int changelog_open(struct root *r, struct changelog **ret, char **ret_why) __attribute__((warn_unused_result));
struct changelog *changelog_close(struct changelog *l);
/* What changelog_open refuses, found without writing or locking (plan, apply --dry-run): the
 * directories' and the log's trust, the last record intact, the head file not ahead of the log.
 * 0, or the -errno changelog_open would return, *RET_WHY (a refusal) or changelog_strerror saying
 * why in its words. */
int changelog_check(struct root *r, char **ret_why) __attribute__((warn_unused_result));
const char *changelog_note(const struct changelog *l);
/* The tree L was opened in. */
struct root *changelog_root(const struct changelog *l);

/* The last record written or read (seq 0 and "" when the log is empty). */
void changelog_head(const struct changelog *l, long *ret_seq, char ret_hash[65]);
/* {"seq": SEQ, "hash": HASH, "anchor": "SEQ:HASH"} for --json output (NULL when SEQ is 0): what
 * verify --expect-head takes. */
json_object *changelog_head_json(long seq, const char *hash);

/* Take the apply lock (flock on the directory CHANGELOG_LOCK): wait when WAIT, else fail with -EWOULDBLOCK.
 * Returns 0 (*ret_fd holds the lock until closed) or -errno. */
int changelog_lock(struct root *r, bool wait, int *ret_fd) __attribute__((warn_unused_result));

/* Shared lock for readers (verify): waits while an apply or rollback holds the lock, so what is
 * read is never a run in progress. No log directory (nothing ever applied): *ret_fd = -1, returns 0. Else
 * returns 0 (*ret_fd holds the lock until closed) or -errno. */
int changelog_lock_shared(struct root *r, bool wait, int *ret_fd) __attribute__((warn_unused_result));

/* What a record says happened. One table of names (changelog.c) is the only place they are
 * spelled; the log stores the name. */
enum log_event {
        LOG_EVENT_UNKNOWN, /* read back only: a name no llmtune writes (a problem of the log) */
        LOG_INTENT,      /* a change is about to be made (ref 0) */
        LOG_DONE,        /* it was made (ref: its intent) */
        LOG_FAILED,      /* it was not (ref: its intent) */
        LOG_UNDO_INTENT, /* a "done" change is about to be reversed (ref: that done) */
        LOG_UNDONE,      /* it was (ref: the done, not the undo-intent) */
        LOG_UNDO_FAILED, /* it was not (ref: the done) */
        LOG_RUN_BEGIN,   /* an apply or rollback run starts (target: "apply" or "rollback") */
        LOG_RUN_END,     /* and ends (ref: its run-begin) */
        LOG_ACK,         /* an operator acknowledged a finding (apply/ack.h: rule, item, reason, until) */
        LOG_UNACK,       /* and withdrew it (ref: the ack) */
        LOG_EVENT_MAX,
};
/* The name as the log stores it ("intent", "undo-failed", ...); "unknown" for LOG_EVENT_UNKNOWN. */
const char *log_event_name(enum log_event e);
/* The event named S, LOG_EVENT_UNKNOWN for any other string or NULL. */
enum log_event log_event_parse(const char *s);

struct log_context {
        const char *run;          /* run id */
        const char *profile;      /* resolved profile name */
        const char *profile_hash;
        const char *host;
};

/* Append one record for change C (EVENT: not a run's begin or end, see below). File contents are stored as backups first. REF is the seq of the record this one
 * is about (0 for a new intent). Returns the new record's seq (>0) or -errno. */
long changelog_append(struct changelog *l, const struct log_context *ctx, enum log_event event,
                      const struct change *c, long ref, const char *detail) __attribute__((warn_unused_result));

/* The same with the keys of FIELDS (a JSON object, not taken) added to the record, covered by its hash:
 * a record type that says more than a change (an ack: apply/ack.c). */
long changelog_append_fields(struct changelog *l, const struct log_context *ctx, enum log_event event,
                             const struct change *c, long ref, const char *detail, json_object *fields)
        __attribute__((warn_unused_result));

/* A run's first and last record, around its changes: KIND "apply" or "rollback" (the record's
 * target); the run-end's ref is its run-begin's seq, DETAIL says how the run ended. */
long changelog_run_begin(struct changelog *l, const struct log_context *ctx, const char *kind)
        __attribute__((warn_unused_result));
long changelog_run_end(struct changelog *l, const struct log_context *ctx, const char *kind, long begin,
                       const char *detail) __attribute__((warn_unused_result));

/* One record read back. */
struct log_record {
        long seq, ref;
        char hash[65];        /* its stored "hash" ("" when it has none) */
        enum log_event event;
        char *time, *host, *run, *profile, *profile_hash, *detail;
        struct change change; /* with before/after contents loaded from backups for files */
        /* A file's backup could not be loaded (missing, unreadable, altered): change.before or
         * change.after is NULL for that reason, not because the file did not exist. */
        bool before_lost, after_lost;
        /* Worked out once for the whole log by changelog_read (one sorted pass, not a scan of the
         * log per record): a "done" record a later "undone" names by ref (reversed); an "intent"
         * or "undo-intent" a later outcome record concludes (finished; true for other events). */
        bool reversed, finished;
        json_object *json;    /* the parsed record */
};

struct log_problem {
        long seq;       /* the record where the chain breaks (or the line number's position) */
        char *message;
};

struct log_read {
        struct log_record *v;
        size_t n;
        struct log_problem *problems; /* chain breaks: edited, removed, reordered records */
        size_t n_problems;
        long end_seq;                 /* the log's last record (0: empty or missing) */
        char end_hash[65];
        /* The log's end against the head file: "ok", "none" (nothing logged, no head), "absent" (a
         * log from before the head file: the next apply or rollback writes it), "behind" (one record
         * behind: a run stopped between appending and updating the head), or a problem (also in
         * problems[]): "missing" (deleted head), "damaged", "cut", "replaced", "appended". */
        const char *head_state;
        long head_seq;                /* as the head file says (0: no head file) */
        char head_hash[65];
        char *head_note;              /* "absent" and "behind": what that means, else NULL */
};

/* Read and check the whole log (a missing log is an empty one). Returns 0 (*ret filled, problems
 * found in the log among its fields; log_read_done releases it) or -errno when the log or its head
 * file could not be read (*ret untouched; a refusal's reason in *RET_WHY). */
int changelog_read(struct root *r, struct log_read *ret, char **ret_why) __attribute__((warn_unused_result));
void log_read_done(struct log_read *lr);

/* Changes still in force: "done" records whose change was not undone later, latest per target,
 * in log order. Indexes into lr->v. O(n log n) in the log's length. */
size_t changelog_in_force(const struct log_read *lr, size_t **ret);

/* Is the step at index I (an "intent" or "undo-intent") concluded by an outcome record, the
 * "run-begin" at I by its "run-end"? (Other events: true.) And the indexes of every step that is
 * not: an apply or rollback that did not finish (killed, power lost) left its target in an unknown
 * state. Both read the record's "finished", worked out when the log was read. */
bool changelog_step_finished(const struct log_read *lr, size_t i);
size_t changelog_unfinished(const struct log_read *lr, size_t **ret);

/* What a -errno of the functions above means, by its code alone: a damaged last record, a link on
 * the path, else strerror. */
const char *changelog_strerror(int rc);
/* The words for an error RC whose refusal reason came back in WHY (taken: NULL when none): WHY, or
 * changelog_strerror(RC). Caller frees. */
char *changelog_reason(int rc, char *why);
/* Why L's last append failed (RC, its result): the refusal of a backup file, else
 * changelog_strerror(RC). */
const char *changelog_error(const struct changelog *l, long rc);

/* New run id: UTC time + pid. */
char *changelog_run_id(void);
