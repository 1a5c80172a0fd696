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

#include "base/util.h"

/* NULL when the file or directory open at FD may be taken as input, else why not, NAME (how the
 * message names it: "the file itself", "its directory /etc", a path) as its subject: "NAME is owned
 * by uid 4242, neither root nor the user running llmtune", "NAME is writable by every user (mode
 * 0666)", "NAME is writable by group 10 (mode 0664)". Caller frees. */
char *trust_fd_problem(int fd, const char *name);

/* NULL when the file open at FD (any open mode, O_PATH too) may be taken as input, else why not;
 * checked only when llmtune runs as root. The file is judged on FD, and the directories from it up
 * to "/" on the path FD names now (/proc/self/fd), each opened one component at a time without
 * following links: a walk that does not reach FD's file again (it was moved or replaced meanwhile)
 * is a refusal. SHOWN is the path the messages give: "the file itself" when FD is reached by it
 * without a link, else "the file REAL". Caller frees. */
char *trust_opened_problem(int fd, const char *shown);

/* The same for PATH (a host path; symbolic links followed): NULL as well when it does not exist
 * (the loader says so). */
char *trust_problem(const char *path);
