/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Acknowledged findings: an operator's "I know, leave it" for a failing rule (or one item of it),
 * recorded in the change log so that it is hash-chained, verified and never deleted like any record.
 *
 * An "ack" record (changelog.h LOG_ACK) holds the rule ("rule"), the item it is limited to
 * ("target", or null for the whole rule), the reason ("detail"), and under "ack": who ("user",
 * "uid"), until when ("until", RFC 3339 UTC, or null), and what the finding was ("severity",
 * "observed", "expected", "evidence": the "NAME=VALUE" of every failing item and of the rule's
 * evidence facts beside it). An "unack" record withdraws one (ref: the ack's seq).
 *
 * An audit's failure is acked while every piece of its evidence is covered by an active ack (not
 * withdrawn, not expired) that recorded the same fact with the same value, or for numbers a value
 * at least as large: a counter that grew, an Xid event after the ack (its GPU's event count grew), a
 * new failing item or the expiry raise it again.
 */
#pragma once

#include <time.h>

#include "apply/changelog.h"
#include "engine/engine.h"

struct ack {
        long seq;             /* of the ack record */
        char *time, *user;    /* when and by whom (the record's "time", "ack.user") */
        char *rule, *item;    /* ITEM NULL: the whole rule */
        char *reason;
        char *until;          /* RFC 3339 UTC or NULL */
        time_t until_t;       /* 0 without */
        char *observed;       /* the finding as it was */
        struct strv evidence; /* "NAME=VALUE" */
        long withdrawn;       /* seq of the unack record, 0 while standing */
        char *withdrawn_by, *withdrawn_time, *withdrawn_why;
};

struct ack_list {
        struct ack *v;
        size_t n;
};

/* The acks of a log read with changelog_read, oldest first, with their withdrawals. */
void ack_list_from_log(const struct log_read *lr, struct ack_list *ret);
/* The same from ROOT's change log; a missing log has none. Returns 0, -EBADMSG when the log does not
 * verify (a broken chain: no ack in it is trusted), or -errno (a refusal's reason in *WHY, may be
 * NULL; else changelog_strerror). */
int ack_list_read(struct root *root, struct ack_list *ret, char **why);
void ack_list_done(struct ack_list *l);

/* "active", "expired" or "withdrawn" at NOW. */
const char *ack_state(const struct ack *a, time_t now);

/* Does fact NAME belong to ITEM ("mlx5_0", "0000:86:00", "mlx5_0.port.1"): ITEM's words are a run
 * of NAME's dot-separated parts? */
bool ack_item_matches(const char *name, const char *item);

/* The failures of A that active acks of ACKS cover become RES_ACKED (ack_seq, ack_note); a failure
 * an ack no longer covers keeps RES_FAIL and says why in ack_note. A's counts follow. */
void ack_judge(struct audit *a, const struct ack_list *acks, time_t now);

/* A new ack of RES (a failure), limited to ITEM when not NULL, appended to L. The evidence kept is
 * that of ITEM (all of RES's without). Returns the record's seq, -ENOENT when no failing item of RES
 * matches ITEM, or -errno. */
long ack_append(struct changelog *l, const struct log_context *ctx, const struct result *res, const char *item,
                const char *reason, const char *until);
/* An unack of A. Returns the record's seq or -errno. */
long ack_withdraw(struct changelog *l, const struct log_context *ctx, const struct ack *a, const char *reason);

/* Who runs this: the user name, with the sudo user when there is one ("root (sudo: alice)"). */
char *ack_who(void);

/* Why an ack or unack record read back is not one llmtune writes (NULL: it is). Caller frees. */
char *ack_record_invalid(const struct log_record *rec);

/* "2026-12-01", "2026-12-01T08:00", "2026-12-01T08:00:00Z" (UTC) -> *RET. -EINVAL otherwise. */
int ack_parse_date(const char *s, time_t *ret);
