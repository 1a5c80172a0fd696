/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rule engine: facts + rules + a resolved profile -> one result per enabled rule (data only). */
#pragma once

#include <stdint.h>

#include "facts/facts.h"
#include "engine/profiles.h"
#include "engine/rules.h"

/* RES_ACKED: a failure an operator acknowledged (llmtune ack) whose evidence has not changed since:
 * neither pass nor fail. The engine itself never gives it; the change log's acks do (apply/ack.h). */
enum result_status { RES_PASS, RES_FAIL, RES_NA, RES_ERROR, RES_ACKED, RES_STATUS_MAX };

struct result {
        const struct rule *rule;
        enum severity severity;     /* after the profile's overrides */
        enum result_status status;
        char *observed, *expected;  /* of the deciding condition */
        char *reason;               /* n/a or error: why; fail: a fix that waits for a reboot */
        char *note;                 /* a pass with a note: the check failed, but the rule's note_when
                                     * conditions say that is information here (an idle link) */
        char *remedy_summary;       /* one line, parameters filled in; NULL without remedy */
        struct strv remedy_keys, remedy_vals; /* parameters with profile values substituted */
        /* FAIL: "NAME=VALUE" of every item a failing check fails on, then of the rule's evidence
         * fields beside it (what an ack records, and what raises it again when it grows). */
        struct strv evidence;
        long ack_seq;  /* ACKED (or FAIL raised again): the ack record's seq in the change log */
        uint64_t us;    /* how long it took, reading the facts it was the first to ask for included */
        char *ack_note; /* ACKED: who acknowledged it, when, why, until; FAIL: why an ack no longer holds */
};

struct audit {
        struct result *v;
        size_t n;
        size_t count[RES_STATUS_MAX]; /* by result_status */
};

/* The time a run may take (audit and health-check --timeout, --rule-timeout), in ms; 0: no bound.
 * The run's end is the read deadline's budget (deadline.h), which the command sets when it starts;
 * RUN_MS only names it in the reasons. */
struct engine_limits {
        unsigned run_ms, rule_ms;
};

/* Evaluate the enabled rules (only those in ONLY when it is non-empty; unknown ids there are an
 * error returned as -ENOENT with *bad set). */
int engine_run(const struct ruleset *rules, const struct resolved *profile, struct facts *f, const struct strv *only,
               struct audit *ret, const char **bad);
/* The same, each rule given until the run's end or RULE_MS, whichever comes first: a rule that an
 * operation was refused or cut short for (a read begun after its time, a library stopped at its
 * end) is an error, "timed out", with how long it had. */
int engine_run_limited(const struct ruleset *rules, const struct resolved *profile, struct facts *f,
                       const struct strv *only, const struct engine_limits *lim, struct audit *ret, const char **bad);
void audit_done(struct audit *a);
const char *result_status_name(enum result_status s);
