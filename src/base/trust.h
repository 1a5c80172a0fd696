/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trust in rule and profile files. llmtune running as root turns them into writes under /etc, so,
 * like sudo with sudoers, it refuses a file that another user could have written: one that is
 * writable by its group or by others, owned by someone other than root or the invoking user
 * (SUDO_UID under sudo), or reached through a directory such a user could change (writable by
 * group or others without the sticky bit, or owned by someone else). Not running as root, a user
 * can only hurt themselves: nothing is checked.
 */
#pragma once

#include "ini-load.h"

/* 0 when PATH (a host path) may be used; else a diagnostic naming the file is added to D and
 * -EPERM returned. */
int trust_check_file(const char *path, struct diags *d);

/* The check itself, without diagnostics: NULL when trusted, else why not (caller frees). */
char *trust_problem(const char *path);
