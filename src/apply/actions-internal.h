/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the change kinds (src/apply/change-*.c and their typed commands, command.c) share, from
 * actions.c: for them only. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "apply/plan.h"
#include "base/root.h"

/* PATH's directory, opened, and its last component in *RET_BASE (caller frees). The directory is
 * reached without following a symbolic link unless FOLLOW (runtime values: sysfs is made of links),
 * and then only when it is under /sys or /proc/sys of the root (-EXDEV otherwise). */
int act_open_dir(struct root *r, const char *path, char **ret_base, bool follow);
/* The same for carrying out a change of PATH: the test build's injected fault for PATH first. */
int act_open_target_dir(struct root *r, const char *path, char **ret_base, bool follow);
/* Replace PATH atomically with LEN bytes of DATA (a new file gets MODE_IF_NEW). EXPECT_SET: the
 * target must still hold EXPECT (NULL: be absent) at the rename, else -ESTALE and nothing is
 * replaced; *READ_ERR (may be NULL) is the errno when it could not be read then. */
int act_write_file_checked(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                           bool follow_dirs, bool expect_set, const char *expect, int *read_err);
int act_write_file(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                   bool follow_dirs);
/* Make DIRS, outermost first (0755 whatever the umask); remove those that are empty, innermost first. */
int act_make_dirs(struct root *r, const struct strv *dirs);
void act_remove_dirs(struct root *r, const struct strv *dirs);
/* PATH read afresh (NULL: absent or unreadable); the _rc form says -errno when it is there but
 * cannot be read (*RET NULL: absent). */
char *act_read_whole(struct root *r, const char *path);
int act_read_whole_rc(struct root *r, const char *path, char **ret);
/* Run ARGV (stdin /dev/null, stdout to stderr), KEEP_FD (or -1) left open in the child: 0, or -EIO
 * with *err saying how it ended. */
int act_run_argv(char *const *argv, int keep_fd, char **err);
/* Remove the ".BASE.llmtune-PID" temporary files an interrupted replacement left beside PATH. */
void act_remove_temp_of(struct root *r, const char *path, bool follow);
/* "WHAT TARGET: reason" for the failure RC of C, in the words every kind uses. */
char *act_errmsg(const struct change *c, const char *what, int rc);
/* An absolute path without empty, "." or ".." components, shorter than PATH_MAX. */
bool act_clean_path(const char *p);
/* A control character other than a tab (tabs separate the fields of kernel tables). */
bool act_has_control(const char *s);
/* C's mkdirs are clean parents of its target under /etc: 0, or -EPERM with *why. */
int act_check_mkdirs(const struct change *c, char **why);
/* What writing C's file or link would meet on its way: a link above it (-ELOOP), a non-directory
 * (-ENOTDIR), and when FILE_WRITTEN a link (-ELOOP) or no regular file (-ENOTREG, -EISDIR) at its
 * place, as replace_file_at refuses them. */
int act_path_foresee(struct root *r, const struct change *c, bool file_written);
/* The foresee of a file or a link: act_path_foresee unless TARGET_PLANNED, in WHAT's words. */
int act_foresee_path(struct root *r, const struct change *c, bool target_planned, bool file_written,
                     const char *what, char **why);
