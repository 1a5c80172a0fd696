/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Actions: carrying out one change, undoing it, and reading the current state of its target.
 * Files are replaced atomically (temporary file in the same directory, fsync, mode and owner of the
 * replaced file kept, rename, fsync of the directory). On the live system runtime changes are real
 * (sysfs writes, swapoff(2), remount, commands); under a foreign --root they are carried out on the
 * tree's files the way the kernel would show them (a fixture behaves like a machine) and commands
 * run only on image files inside the tree; the live kernel is never touched.
 */
#pragma once

#include "apply/plan.h"
#include "base/root.h"

/* May C's kind of change write its target? Files only where a remedy writes one (/etc/fstab,
 * /etc/nccl.conf, the affinity map, files named *llmtune* in drop-in directories, unit files a link
 * replaces), links only under /etc/systemd, runtime values only under /sys and /proc/sys (never one
 * naming a program the kernel runs), no "."/".." components. */
bool action_target_allowed(const struct change *c);

/* The whole check of a change before it is done or undone, whether it comes from the plan or from
 * a change log record: its target (action_target_allowed), the directories it creates (parents of
 * the target), link targets, values and options without control characters, a command and its
 * undo in the typed forms of command.h. 0, or -EPERM with *why (caller frees).
 * action_apply/undo refuse what fails it. */
int action_check(const struct change *c, char **why);

/* Do chattr(1) flags forbid C: its file (or link) target immutable or append-only, or the
 * directory it is written in? Asked for every change of a run before the first is made, so a run
 * that cannot be completed changes nothing. 0, or -EPERM with *why (caller frees). */
int action_blocked(struct root *r, const struct change *c, char **why);

/* What carrying out C would refuse, found without writing (plan, apply --dry-run): action_check,
 * and for a file, link or value the path a write would take: a symbolic link on the way or at a
 * file's place, something other than a file there, a value's directory led out of /sys and
 * /proc/sys. TARGET_PLANNED: an earlier change of the plan changes C's target, so what is there
 * now is not what C meets. 0, or -errno with *why in the words the write would use (caller frees). */
int action_foresee(struct root *r, const struct change *c, bool target_planned, char **why);

/* Do C. On failure returns -errno and *err says what went wrong with which target. */
int action_apply(struct root *r, const struct change *c, char **err);
/* Reverse C (restore its before state). */
int action_undo(struct root *r, const struct change *c, char **err);
/* RC, the failure of action_undo(C), says that C's runtime state is not set up in this boot (a
 * swap area whose device the boot makes from a source: a zram device). Made in an earlier boot, C's
 * runtime part ended with that boot; its source, restored by the same rollback, sets it up at the
 * next boot. */
bool action_undo_waits_for_boot(const struct change *c, int rc);
/* The target's current state in the terms of before/after (file content, link target, value,
 * "on"/"off", option list); *ret NULL when absent. -EOPNOTSUPP for commands and notes. */
int action_current(struct root *r, const struct change *c, char **ret);

/* Does a state read by action_current equal a before/after state of C? (NULL = absent.) */
bool action_state_equal(const struct change *c, const char *current, const char *want);

/* STATE (a before/after or current state of C's target) in a message: a file's content by its
 * length, "(absent)" for NULL, other states as they are. The caller frees. */
char *action_describe(const struct change *c, const char *state);

/* Remove the temporary files an interrupted replacement of C's target may have left beside it. */
void action_remove_leftovers(struct root *r, const struct change *c);

/* Remove the directories C would have created (its mkdirs), innermost first, if they are empty:
 * what an interrupted change that never reached its target leaves. */
void action_remove_created_dirs(struct root *r, const struct change *c);
