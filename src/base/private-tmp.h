/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The private directories a root is built in (an unpacked `gather` archive, the tree written from
 * an lstopo export): $TMPDIR, else /dev/shm, else /tmp, named
 *
 *     llmtune-KIND-NS-PID-XXXXXX      (KIND archive or topology, NS the PID namespace's inode)
 *
 * so that what a process left can be told from what a running one uses. A directory made here is
 * removed when the root is freed, when SIGINT, SIGTERM or SIGHUP ends the process (the handler
 * removes it, then the signal takes its default course), and otherwise (SIGKILL, a crash) by the
 * next llmtune that makes one: it removes those of its own naming, in the same base, of its own PID
 * namespace and user, whose PID no longer runs. Nothing is ever followed through a link.
 */
#pragma once

/* The base directory: $TMPDIR (an absolute path), else /dev/shm when writable, else /tmp. */
const char *private_tmp_base(void);

/* Make a new private directory of KIND ("archive", "topology") under private_tmp_base(), mode
 * 0700, registered for removal on those signals; stale ones are swept first. Returns 0 with
 * *RET_DIR (caller frees, and removes with private_tmp_remove) or -errno. */
int private_tmp_make(const char *kind, char **ret_dir);

/* Remove DIR and everything under it, never following a link, and forget it. */
void private_tmp_remove(const char *dir);

/* Remove what processes that are gone left in BASE: directories named as above, of this PID
 * namespace, owned by this user, whose PID does not run. Returns how many were removed. */
int private_tmp_sweep(const char *base);
