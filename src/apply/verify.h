/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * verify as a library: is the change log intact, did every apply and rollback finish, and is every
 * change still in force still true on the machine? The judgement of one change and the one status
 * precedence live here; `llmtune verify` prints what verify_run found, and the exporters
 * (audit --format prometheus) report verify_state_read's summary of the same judgement.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "apply/changelog.h"
#include "base/root.h"

/* What one change in force is found to be. */
enum verify_check_status { CHECK_OK, CHECK_DRIFT, CHECK_UNCHECKABLE, CHECK_ERROR, CHECK_STATUS_MAX };
/* "ok", "drift", "not-checkable", "error": verify --json's names. */
const char *verify_check_name(enum verify_check_status s);

struct verify_check {
        const struct log_record *rec;
        enum verify_check_status status;
        char *found;   /* current state (NULL: absent) */
        char *found_link; /* a file change found a symbolic link in the file's place: its target */
        char *message; /* one line */
        char *diff;    /* files: expected -> found */
};

/* Judge REC (a "done" record in force) against ROOT into CK; verify_check_done releases it. */
void verify_check_one(struct root *root, const struct log_record *rec, struct verify_check *ck);
void verify_check_done(struct verify_check *ck);

/* --expect-head SEQ:HASH, parsed, and what the log says about it. */
struct expect_head {
        bool set;
        long seq;
        char hash[65];
        bool found;    /* the log holds record SEQ with hash HASH */
        char *message; /* why not */
};

/* SEQ:HASH as the "anchor" of verify/apply/rollback --json prints it, into EH (set). False when S
 * is not one. */
bool expect_head_parse(const char *s, struct expect_head *eh);

/* Everything verify found: the log read, the steps left unfinished, the check of each change in
 * force, and the --expect-head comparison. */
struct verify_result {
        struct log_read lr;
        struct strv unfinished; /* one message per unfinished step ... */
        size_t *unf_idx;        /* ... and its record's index in lr */
        size_t *idx;            /* the records in force, by index in lr */
        struct verify_check *ck; /* their checks */
        size_t n_ck;
        size_t count[CHECK_STATUS_MAX]; /* checks per status */
        struct expect_head eh;  /* set by the caller before verify_run */
        bool cut;               /* --expect-head names a record the log does not hold */
        const char *status;     /* one of verify_state_names */
        char *why;              /* verify_run's error, when a file of the log was refused: why */
};

/* Read the log under ROOT under a shared lock (a running apply or rollback is waited for, so its
 * steps in progress are never reported as unfinished) and judge it into V. Returns 0, or -errno
 * when the lock or the log cannot be read (V->why, else changelog_strerror, says why; *what "lock"
 * or "log"). */
int verify_run(struct root *root, struct verify_result *v, const char **what) __attribute__((warn_unused_result));
void verify_result_done(struct verify_result *v);

/* The one precedence of verify's status: a broken chain or a cut log ("tampered"), then unfinished
 * steps, then drift, then targets that could not be checked ("error"), else "clean". */
const char *verify_status(bool tampered, size_t unfinished, size_t drifted, size_t errors);

/* The statuses in the order exporters list them (a stateset), NULL-terminated. */
extern const char *const verify_state_names[];

/* The change log's state in one struct, as verify judges it: for exporters that report it without
 * printing verify's output. */
struct verify_state {
        const char *status;    /* "clean", "drift", "unfinished", "tampered", "error" (verify --json's) */
        size_t records;        /* records in the log (0: never applied) */
        size_t chain_problems; /* hash chain breaks */
        size_t unfinished;     /* steps without an outcome */
        size_t in_force;       /* changes still in force */
        size_t drifted;        /* of those, no longer as applied */
        size_t uncheckable;    /* commands and notes */
        size_t check_errors;   /* targets that could not be read */
        time_t last_apply;     /* time of the newest "done" record; 0 when there is none */
};

/* Read and check the log under ROOT as verify does. Returns 0, or -errno when the log or its lock
 * cannot be read (*ret then says "error"). */
int verify_state_read(struct root *root, struct verify_state *ret);
