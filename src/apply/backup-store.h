/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The change log's backup store: CHANGELOG_DIR/backups/<sha256>, one file per content, written once
 * (atomically) before the record that names it, so a record never names a backup that is not on
 * disk. It holds what a record does not hold inline: a file's content before and after a change,
 * and a runtime value longer than CHANGELOG_VALUE_INLINE. A record names each by
 * "backup_before"/"backup_after" ("backups/<sha256>") and "before_sha256"/"after_sha256".
 */
#pragma once

#include <json-c/json.h>

#include "apply/plan.h"
#include "base/root.h"

/* C's before and after states that go to the store rather than inline: stored, BK naming each
 * ("backups/<sha256>", NULL when inline; caller frees) and SHA its hash. 0 or -errno. */
int backup_store_change(struct root *r, const struct change *c, char sha[2][65], char *bk[2], char **why);

/* The content record O names by "backup_WHICH" (WHICH: "before" or "after"), checked against
 * "WHICH_sha256": 0 with *RET (NULL when the record names none), or -errno with *WHY saying what
 * is wrong (caller frees). */
int backup_load(struct root *r, json_object *o, const char *which, char **ret, char **why);

/* Is NAME a temporary file of the store (".<sha256>.llmtune-<pid>"), left by a run killed while
 * storing it? (A dir_remove_matching predicate; ARG unused.) */
bool backup_is_temp_name(const char *name, const void *unused);
