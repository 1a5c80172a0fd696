/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trust in the files llmtune takes as input: rule and profile files, and the change log, its head
 * file and its backups. llmtune running as root turns them into writes under /etc, so, like sudo with
 * sudoers, it refuses a file that another user could have changed. One policy, judged on the opened
 * file (fstat of its descriptor), never on a path that can name something else by the time it is read:
 *
 *  - the owner is root, the user llmtune runs as, or the user who started it (directly, or through
 *    sudo: SUDO_UID, so that `sudo llmtune --profile ~/site.ini` takes the user's own file);
 *  - neither its group nor other users may write it. No group is exempt: a group-writable file of
 *    group 0 is refused too, since members of group 0 need not be root (container images made to run
 *    under an arbitrary uid give group 0 write access on purpose);
 *  - a directory on the way is judged the same, except that a sticky one (/tmp) may be writable by
 *    others: they can add entries there but not replace or rename ours, and every file taken from it
 *    is judged by itself.
 *
 * Who is asked is each caller's: rule and profile files are checked only when llmtune runs as root
 * (not root, a user can only hurt themselves, and a umask of 002 makes a user's own files
 * group-writable); the change log whoever runs it. What kind of file may be used is the caller's too:
 * the change log takes only regular files with one name (a hard link would make appends reach a file
 * outside the tree), which is confinement, not trust: owner and mode belong to the file, not its name.
 */
#pragma once

#include "base/ini-load.h"

/* NULL when the file or directory open at FD may be taken as input, else why not, NAME (how the
 * message names it: "the file itself", "its directory /etc", a path) as its subject: "NAME is owned
 * by uid 4242, neither root nor the user running llmtune", "NAME is writable by every user (mode
 * 0666)", "NAME is writable by group 10 (mode 0664)". Caller frees. */
char *trust_fd_problem(int fd, const char *name);

/* 0 when PATH (a host path) may be used; else a diagnostic naming the file is added to D and
 * -EPERM returned. Checked only when llmtune runs as root. */
int trust_check_file(const char *path, struct diags *d);

/* The check of trust_check_file without diagnostics: NULL when trusted, else why not (caller
 * frees). The file (symbolic links resolved) and every directory from it up to "/" are opened one
 * component at a time without following links, and each is judged on its descriptor. */
char *trust_problem(const char *path);
