/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/mounts and /etc/fstab, read through the root handle (fstab(5), proc(5)). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/root.h"

struct mount_entry {
        char *source;  /* device or "tmpfs"; octal escapes decoded */
        char *target;  /* mount point */
        char *fstype;
        char *options;
        unsigned line; /* 1-based line in the file */
        char *raw;     /* the line as written (fstab edits keep it verbatim) */
};

/* The mount table of the root: /proc/mounts, or /proc/self/mounts in a foreign tree that has only
 * that (the path mounts_read reads, for sources). */
const char *mounts_source(struct root *r);
/* Entries of ROOT/proc/mounts (see mounts_source), in order. */
int mounts_read(struct root *r, struct mount_entry **ret, size_t *ret_n);
/* Entries of ROOT/etc/fstab (comments and blank lines skipped), in order. */
int fstab_read(struct root *r, struct mount_entry **ret, size_t *ret_n);
/* Frees the N entries of M and M itself; returns NULL: `m = mounts_free(m, n);`. */
struct mount_entry *mounts_free(struct mount_entry *m, size_t n);

/* One line of /etc/fstab as fstab_rewrite hands it to its editor: the text as written (no '\n')
 * and its first four fields as written (octal escapes kept); n == 0 for a comment or blank line. */
struct fstab_line {
        const char *text;
        const char *field[4];
        size_t n;
};

/* /etc/fstab rewritten in one place: EDIT sees every line and returns what to write instead
 * (owned; NULL keeps the line as it is). Line ends are kept as written; *ret_changed (may be NULL)
 * says whether EDIT replaced any line. Returns the new text. */
char *fstab_rewrite(const char *text, char *(*edit)(const struct fstab_line *l, void *data), void *data,
                    bool *ret_changed);

/* A mount table (proc(5) /proc/mounts) with the options of every mount at MP set to OPTIONS: what
 * a remount leaves in a fixture tree. */
char *mounts_with_options(const char *text, const char *mp, const char *options);

/* The comma list OPTIONS without option NAME (as a flag or NAME=VALUE); "" when nothing is left. */
char *mount_options_without(const char *options, const char *name);

/* Value of option NAME in a comma list ("size=64m" -> "64m"); "" for a flag; NULL if missing. */
char *mount_option(const char *options, const char *name);
