/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode flags chattr(1) sets (FS_IOC_GETFLAGS / FS_IOC_SETFLAGS, ioctl_iflags(2)). A file that
 * llmtune replaces (a temporary file renamed over it) would otherwise lose them: the flags belong
 * to the inode, and the rename puts a new inode in its place. Those that say how the content is
 * kept (no atime updates, not dumped, synchronous, compressed, no copy-on-write...) go over to the
 * new file; immutable and append-only ones say the file must not be replaced at all.
 */
#pragma once

/* The flags of the open file FD into *FLAGS: 0, or -errno. A filesystem without them (ENOTTY,
 * EOPNOTSUPP, EINVAL: tmpfs before 6.0, procfs, sysfs) has none: 0 with *FLAGS 0. */
int fileattr_get(int fd, unsigned *flags);

/* What forbids replacing a file (or changing a directory's entries) with FLAGS: "immutable
 * (chattr +i)", "append-only (chattr +a)" (the flag's letter is always the text's last but one
 * character), or NULL. */
const char *fileattr_blocks(unsigned flags);

/* Give the new file FD (empty: some flags, such as no-copy-on-write, take only on an empty file)
 * the kept flags of OLD, and only those: 0 or -errno. */
int fileattr_keep(int fd, unsigned old);

/* The flags of NAME in the open directory DFD (not following a link; a file that is not a regular
 * file or directory has none): 0 or -errno, as fileattr_get. */
int fileattr_get_at(int dfd, const char *name, unsigned *flags);
